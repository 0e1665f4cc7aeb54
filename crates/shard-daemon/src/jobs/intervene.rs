//! Acting on a running child from outside the coordinator (docs/protocol.md §10.3): the parent's
//! `subagent.steer` and `subagent.stop`, and — through the lease guard — a person's
//! direct `steer` or `abort` to a leased child. Every steer is strict (into the run's
//! current turn or nowhere) and every cancellation takes the coordinator's path
//! (token → abort → graceful → kill); both are recorded against the run.

use std::sync::Arc;

use shard_protocol::ErrorCode;
use shard_protocol::command::{Command, Steer, SubagentSteer, kind};
use shard_protocol::ids;
use shard_protocol::jobs::{RunAction, RunActionKind, RunActor, RunState};
use shard_protocol::responses::{SteerOutcome, SubagentSteerData};
use shard_protocol::types::Image;

use super::Jobs;
use super::catalog::Resolved;
use crate::core::ConnId;
use crate::reply::{ProtocolError, Reply};

/// `subagent.steer`.
pub(crate) async fn subagent_steer(
    jobs: &Arc<Jobs>,
    s: SubagentSteer,
) -> Result<Reply, ProtocolError> {
    let at = jobs.read(|c| {
        let r = c.resolve(&s.parent_agent_id, &s.target)?;
        if matches!(r, Resolved::Job(_)) {
            return Err(ProtocolError::new(
                ErrorCode::InvalidRequest,
                "steer targets a run, a child agent or an alias, not a job",
            ));
        }
        c.runs_of(&s.parent_agent_id, &r)
            .into_iter()
            .next()
            .ok_or_else(|| ProtocolError::new(ErrorCode::NotFound, "no run for that target"))
    })?;
    let data = steer_run(jobs, &at.0, at.1, s.message, None, RunActor::Parent).await?;
    Reply::data::<kind::SubagentSteer>(&data)
}

/// Steers run `index` of `job_id` strictly into its current turn and records the outcome.
/// A run that is not executing a turn is `CONFLICT`.
async fn steer_run(
    jobs: &Arc<Jobs>,
    job_id: &str,
    index: usize,
    message: String,
    images: Option<Vec<Image>>,
    by: RunActor,
) -> Result<SubagentSteerData, ProtocolError> {
    let at = (job_id.to_string(), index);
    let (run_id, agent_id, state, turn_id) = jobs
        .read(|c| {
            let run = c.run_at(&at)?;
            Some((
                run.run_id.clone(),
                run.agent_id.clone(),
                run.state,
                c.turn_of(&at),
            ))
        })
        .ok_or_else(|| ProtocolError::new(ErrorCode::NotFound, "no run for that target"))?;
    let Some(turn_id) = turn_id.filter(|_| state == RunState::Active) else {
        return Err(ProtocolError::new(
            ErrorCode::Conflict,
            format!("the run is {state:?}, not executing a turn; steer only reaches an active run")
                .to_lowercase(),
        ));
    };
    let correlation_id = format!("steer-{}", ids::new_id(ids::REQUEST));
    // The child's Runtime takes the message into this very turn at its next provider
    // boundary, or drops it and says so; it never waits for a later turn.
    let rx = jobs.client().send(
        &jobs.core,
        &agent_id,
        Command::Steer(Steer {
            agent_id: None,
            message,
            images,
            strict: Some(true),
            turn_id: Some(turn_id.clone()),
        }),
    )?;
    let status = super::coordinator::steer_outcome(rx.await.ok());
    let action = RunAction {
        action: RunActionKind::Steer,
        by,
        status: Some(status),
        at: ids::now_millis(),
    };
    jobs.transition(job_id, index, |r| {
        if status == SteerOutcome::Injected {
            r.steers += 1;
        }
        r.last_action = Some(action);
    })
    .await;
    Ok(SubagentSteerData {
        status,
        run_id,
        turn_id: Some(turn_id),
        correlation_id,
    })
}

/// Cancels run `index` of `job_id` unless it has ended, and records who did. The token
/// first, whatever the state: a run that leaves the queue meanwhile starts already
/// cancelled. A queued run is cancelled (and reported) now; an active one is aborted by
/// its coordinator (abort → graceful → kill). Returns the state cancellation found, or
/// `None` when the run had ended.
pub(crate) async fn cancel_run(
    jobs: &Arc<Jobs>,
    job_id: &str,
    index: usize,
    reason: &str,
    by: RunActor,
) -> Option<RunState> {
    let state = jobs.update(|c| c.cancel(&(job_id.to_string(), index), reason))?;
    let action = RunAction {
        action: RunActionKind::Abort,
        by,
        status: None,
        at: ids::now_millis(),
    };
    let now = jobs
        .transition(job_id, index, |r| {
            r.last_action = Some(action);
            if r.state == RunState::Queued {
                r.state = RunState::Cancelled;
                r.error = Some(reason.to_string());
                r.ended_at = Some(ids::now_millis());
            }
        })
        .await;
    if state != RunState::Queued {
        return Some(state);
    }
    if now == Some(RunState::Cancelled) {
        let sh = Arc::clone(jobs);
        let job = job_id.to_string();
        tokio::spawn(async move { super::coordinator::report(&sh, &job, index).await });
    }
    now
}

/// A person's `steer` to a leased child (the lease guard): strict, into the run's turn,
/// recorded against the run; answered with the `subagent.steer` data when injected, and
/// `CONFLICT` when the turn ended first.
pub(crate) fn person_steer(
    jobs: &Arc<Jobs>,
    conn: ConnId,
    agent_id: String,
    s: Steer,
) -> futures::future::BoxFuture<'static, Result<Reply, ProtocolError>> {
    let jobs = Arc::clone(jobs);
    Box::pin(async move {
        jobs.core.check_may_drive(conn, &agent_id)?;
        let (job_id, index) = jobs.read(|c| c.leasing_run(&agent_id)).ok_or_else(|| {
            ProtocolError::new(
                ErrorCode::Conflict,
                "the child's run ended; nothing to steer",
            )
        })?;
        let data = steer_run(&jobs, &job_id, index, s.message, s.images, RunActor::Client).await?;
        // A person's client knows `steer` as succeeded or failed: a dropped steer is a
        // failure it shows, not a success with a status it may not read.
        if data.status == SteerOutcome::Conflict {
            return Err(ProtocolError::new(
                ErrorCode::Conflict,
                "the child's turn ended before it took the steer; the message was dropped",
            ));
        }
        // Answered with the `subagent.steer` data (a superset of a steer's), as before
        // the command table: typed as that command's response.
        Reply::data::<kind::SubagentSteer>(&data)
    })
}

/// A person's `abort` to a leased child (the lease guard): the run is cancelled on the
/// coordinator's path, so the job, a chain's later steps and the parent's report follow.
pub(crate) fn person_abort(
    jobs: &Arc<Jobs>,
    conn: ConnId,
    agent_id: String,
) -> futures::future::BoxFuture<'static, Result<Reply, ProtocolError>> {
    let jobs = Arc::clone(jobs);
    Box::pin(async move {
        jobs.core.check_may_drive(conn, &agent_id)?;
        if let Some((job_id, index)) = jobs.read(|c| c.leasing_run(&agent_id)) {
            let reason = "aborted by a person attached to the child";
            cancel_run(&jobs, &job_id, index, reason, RunActor::Client).await;
        }
        Ok(Reply::empty::<kind::Abort>())
    })
}
