//! The `subagent.*` commands (docs/protocol.md §10.3). Every one first checks that the
//! connection is the authenticated Runtime of `parent_agent_id` (`runtime.auth`);
//! anything else is `PERMISSION_DENIED`. Responses never carry task text.

use std::sync::Arc;
use std::time::Duration;

use shard_protocol::ErrorCode;
use shard_protocol::command::kind;
use shard_protocol::command::{
    Command, SubagentCreate, SubagentRelaunch, SubagentStatus, SubagentStop, SubagentWait, WaitMode,
};
use shard_protocol::ids;
use shard_protocol::jobs::{JobStrategy, RunActor, RunState};
use shard_protocol::responses::{
    AggregateState, CancelledRun, CreatedRun, MixedTag, SubagentAgentStatus, SubagentCreated,
    SubagentRelaunched, SubagentStatusData, SubagentStopData, SubagentWaitData,
};

use super::Jobs;
use super::catalog::{Catalog, Resolved};
use super::record::{JOB_VERSION, JobRecord, RunRecord, states_add_up};
use crate::core::{ConnId, Shared};
use crate::principal::Principal;
use crate::reply::{ProtocolError, Reply};

fn invalid(msg: impl Into<String>) -> ProtocolError {
    ProtocolError::new(ErrorCode::InvalidRequest, msg)
}

/// Only the Runtime of `parent` (proven with its token) may act for it.
fn authorize(shared: &Shared, conn: ConnId, parent: &str) -> Result<(), ProtocolError> {
    match shared.principal_of(conn) {
        Some(Principal::Runtime { agent_id }) if agent_id == parent => Ok(()),
        Some(Principal::Runtime { .. }) => Err(ProtocolError::new(
            ErrorCode::PermissionDenied,
            "a runtime may act only as its own parent_agent_id",
        )),
        _ => Err(ProtocolError::new(
            ErrorCode::PermissionDenied,
            "subagent commands are accepted only from an authenticated runtime (runtime.auth)",
        )),
    }
}

/// Dispatches one `subagent.*` command; slow ones come back as futures.
pub(crate) fn handle(
    jobs: &Arc<Jobs>,
    conn: ConnId,
    command: Command,
) -> futures::future::BoxFuture<'static, Result<Reply, ProtocolError>> {
    let jobs = Arc::clone(jobs);
    let shared = Arc::clone(&jobs.core);
    Box::pin(async move {
        match command {
            Command::SubagentCreate(c) => {
                authorize(&shared, conn, &c.parent_agent_id)?;
                create(&jobs, c).await
            }
            Command::SubagentStatus(s) => {
                authorize(&shared, conn, &s.parent_agent_id)?;
                status(&jobs, s)
            }
            Command::SubagentWait(w) => {
                authorize(&shared, conn, &w.parent_agent_id)?;
                wait(&jobs, conn, w).await
            }
            Command::SubagentStop(s) => {
                authorize(&shared, conn, &s.parent_agent_id)?;
                stop(&jobs, s).await
            }
            Command::SubagentSteer(s) => {
                authorize(&shared, conn, &s.parent_agent_id)?;
                super::intervene::subagent_steer(&jobs, s).await
            }
            Command::SubagentRelaunch(r) => {
                authorize(&shared, conn, &r.parent_agent_id)?;
                relaunch(&jobs, r).await
            }
            other => Err(invalid(format!(
                "`{}` is not a subagent command",
                other.type_name()
            ))),
        }
    })
}

/// A checked task name: a definition's name, or any short label for a `general` child
/// (1-64 characters, no control characters). Only a plain file-name stem is ever looked
/// up as a definition, so a label cannot name a path.
fn check_name(name: &str) -> Result<(), ProtocolError> {
    let len = name.chars().count();
    if len == 0 || len > 64 || name.chars().any(char::is_control) || name.trim().is_empty() {
        return Err(invalid(format!(
            "task name {name:?} must be 1-64 characters without control characters: an agent \
             definition's name, or a label for a general child"
        )));
    }
    Ok(())
}

async fn create(jobs: &Arc<Jobs>, c: SubagentCreate) -> Result<Reply, ProtocolError> {
    let parent = jobs
        .core
        .agent_view(&c.parent_agent_id)
        .ok_or_else(|| ProtocolError::new(ErrorCode::NotFound, "parent_agent_id names no agent"))?;
    if c.tasks.is_some() && (c.name.is_some() || c.task.is_some()) {
        return Err(invalid("send either name/task or tasks, not both"));
    }
    let (strategy, tasks) = match (&c.tasks, &c.task) {
        (Some(tasks), _) => {
            let strategy = c
                .strategy
                .ok_or_else(|| invalid("a batch needs a strategy (parallel or chain)"))?;
            if tasks.is_empty() {
                return Err(invalid("tasks must hold at least one task"));
            }
            if strategy == JobStrategy::Single && tasks.len() != 1 {
                return Err(invalid("strategy single takes exactly one task"));
            }
            let v: Vec<(String, String)> = tasks
                .iter()
                .map(|t| (t.name.clone(), t.task.clone()))
                .collect();
            (strategy, v)
        }
        (None, Some(task)) => {
            if c.strategy.is_some_and(|s| s != JobStrategy::Single) {
                return Err(invalid("the single form takes strategy single"));
            }
            let name = c.name.clone().unwrap_or_else(|| "general".into());
            (JobStrategy::Single, vec![(name, task.clone())])
        }
        (None, None) => return Err(invalid("subagent.create needs task or tasks")),
    };
    let limits = jobs.limits;
    if tasks.len() > limits.max_tasks {
        return Err(invalid(format!(
            "launch_policy allows at most {} tasks per job",
            limits.max_tasks
        )));
    }
    for (name, task) in &tasks {
        check_name(name)?;
        if task.trim().is_empty() {
            return Err(invalid("every task needs text"));
        }
    }
    if parent.depth + 1 > limits.max_depth {
        return Err(ProtocolError::new(
            ErrorCode::PermissionDenied,
            format!(
                "launch_policy allows subagents {} levels deep; this parent is at depth {}",
                limits.max_depth, parent.depth
            ),
        ));
    }
    let cwd = std::path::PathBuf::from(&parent.manifest.cwd);
    let mut defs = Vec::new();
    for (name, _) in &tasks {
        let def = super::definitions::find(&jobs.core.cfg.home, &cwd, name).await?;
        // A name that matches no definition is a `general` child under that name.
        let (def, definition_name) = match def {
            Some(d) => (d, Some(name.clone())),
            None => (super::definitions::general(), None),
        };
        let mode = super::definitions::child_mode(
            parent.mode.as_deref(),
            c.mode.as_deref().or(def.mode.as_deref()),
        )?;
        defs.push((def, mode, definition_name));
    }
    let mode = super::definitions::child_mode(parent.mode.as_deref(), c.mode.as_deref())?;
    let job_id = ids::new_id(ids::JOB);
    let created_at = ids::now_millis();
    let data = {
        let runs: Vec<RunRecord> = tasks
            .into_iter()
            .zip(defs)
            .enumerate()
            .map(
                |(i, ((name, task), (def, run_mode, definition_name)))| RunRecord {
                    model: c.model.clone().or(def.model.clone()),
                    mode: run_mode,
                    tools: super::definitions::child_tools(
                        def.tools.clone(),
                        parent.manifest.tools.as_deref(),
                    ),
                    system_prompt: (!def.prompt.is_empty()).then(|| def.prompt.clone()),
                    run_id: ids::new_id(ids::RUN),
                    index: i as u32,
                    // The catalog gives each run its alias as it adds the job.
                    alias: String::new(),
                    definition_name,
                    display_name: def.description.clone(),
                    name,
                    task,
                    agent_id: ids::new_id(ids::AGENT),
                    state: RunState::Queued,
                    final_text: None,
                    usage: None,
                    error: None,
                    started_at: None,
                    ended_at: None,
                    reported: false,
                    steers: 0,
                    last_action: None,
                },
            )
            .collect();
        let job = JobRecord {
            version: JOB_VERSION,
            job_id: job_id.clone(),
            parent_agent_id: c.parent_agent_id.clone(),
            strategy,
            runs,
            model: c.model.clone(),
            provider: c.provider.clone(),
            mode,
            stopped_at: None,
            created_at,
            ended_at: None,
            relaunch: false,
        };
        jobs.update(|c| {
            let job = c.add(job);
            SubagentCreated {
                job_id: job_id.clone(),
                strategy,
                runs: job.runs.iter().map(created_run).collect(),
            }
        })
    };
    if let Err(e) = jobs.persist(&job_id).await {
        jobs.update(|c| c.remove(&job_id));
        return Err(e);
    }
    jobs.spawn_job(job_id);
    Reply::data::<kind::SubagentCreate>(&data)
}

fn created_run(r: &RunRecord) -> CreatedRun {
    CreatedRun {
        run_id: r.run_id.clone(),
        index: r.index,
        name: r.name.clone(),
        state: RunState::Queued,
        agent_id: r.agent_id.clone(),
        alias: r.alias.clone(),
        definition_name: r.definition_name.clone(),
        display_name: r.display_name.clone(),
    }
}

fn agent_entry(job_id: &str, parent: &str, r: &RunRecord) -> SubagentAgentStatus {
    SubagentAgentStatus {
        agent_id: r.agent_id.clone(),
        alias: Some(r.alias.clone()),
        definition_name: r.definition_name.clone(),
        display_name: r.display_name.clone(),
        parent_agent_id: Some(parent.to_string()),
        run: Some(r.snapshot(job_id)),
    }
}

fn status(jobs: &Jobs, s: SubagentStatus) -> Result<Reply, ProtocolError> {
    jobs.read(|cat| status_in(cat, &s))
}

fn status_in(cat: &Catalog, s: &SubagentStatus) -> Result<Reply, ProtocolError> {
    let parent = &s.parent_agent_id;
    match &s.targets {
        Some(targets) => {
            let mut agents = Vec::new();
            for t in targets {
                let r = cat.resolve(parent, t)?;
                for at in cat.runs_of(parent, &r) {
                    if let Some(run) = cat.run_at(&at) {
                        agents.push(agent_entry(&at.0, parent, run));
                    }
                }
            }
            Reply::data::<kind::SubagentStatus>(&SubagentStatusData { agents, jobs: None })
        }
        None => {
            let mut owned: Vec<&JobRecord> = cat.owned(parent).collect();
            owned.reverse();
            owned.truncate(50);
            let mut seen = std::collections::HashSet::new();
            let mut agents = Vec::new();
            for j in &owned {
                for r in &j.runs {
                    if seen.insert(r.agent_id.clone()) {
                        let at = cat.run_of_agent(parent, &r.agent_id);
                        if let Some(run) = at.as_ref().and_then(|at| cat.run_at(at)) {
                            let job = at.map(|a| a.0).unwrap_or_default();
                            agents.push(agent_entry(&job, parent, run));
                        }
                    }
                }
            }
            let jobs: Vec<_> = owned.iter().map(|j| j.snapshot()).collect();
            Reply::data::<kind::SubagentStatus>(&SubagentStatusData {
                agents,
                jobs: Some(jobs),
            })
        }
    }
}

async fn wait(jobs: &Jobs, conn: ConnId, w: SubagentWait) -> Result<Reply, ProtocolError> {
    if w.handles.is_empty() {
        return Err(invalid(
            "handles must name at least one job, run, agent or alias",
        ));
    }
    let timeout = match w.timeout {
        Some(t) if !t.is_finite() || t < 0.0 => {
            return Err(invalid("timeout is a number of seconds, 0 or more"));
        }
        Some(t) => Some(Duration::from_secs_f64(t.min(1e9))),
        None => None,
    };
    let mode = w.mode.unwrap_or_default();
    let mut watch = jobs.watch();
    let targets: Vec<(String, usize)> = jobs.read(|cat| {
        let mut v = Vec::new();
        for h in &w.handles {
            let r = cat.resolve(&w.parent_agent_id, h)?;
            for at in cat.runs_of(&w.parent_agent_id, &r) {
                if !v.contains(&at) {
                    v.push(at);
                }
            }
        }
        Ok::<_, ProtocolError>(v)
    })?;
    let gone = || ProtocolError::new(ErrorCode::Conflict, "the waiter's connection closed");
    let outbox = jobs.core.conn_outbox(conn).ok_or_else(gone)?;
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    loop {
        // A wake reads states only; the answer (snapshots) is built once, when it is due.
        let answer = jobs.read(|cat| {
            let states: Vec<RunState> = targets
                .iter()
                .filter_map(|at| cat.run_at(at).map(|r| r.state))
                .collect();
            let terminal = states.iter().filter(|s| s.is_terminal()).count();
            let finished = match mode {
                WaitMode::Any => terminal > 0 || states.is_empty(),
                WaitMode::All => terminal == states.len(),
            };
            let timed_out = !finished && deadline.is_some_and(|d| d <= tokio::time::Instant::now());
            (finished || timed_out).then(|| {
                let snaps: Vec<_> = targets
                    .iter()
                    .filter_map(|at| cat.run_at(at).map(|r| r.snapshot(&at.0)))
                    .collect();
                let per_run: Vec<_> = states
                    .iter()
                    .map(|s| states_add_up(std::iter::once(*s)))
                    .collect();
                let aggregate_state = match per_run.first() {
                    Some(first) if per_run.iter().all(|s| s == first) => {
                        AggregateState::State(*first)
                    }
                    _ => AggregateState::Mixed(MixedTag::Mixed),
                };
                SubagentWaitData {
                    aggregate_state,
                    runs: snaps,
                    timed_out,
                }
            })
        });
        if let Some(data) = answer {
            return Reply::data::<kind::SubagentWait>(&data);
        }
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = watch.changed() => {}
            _ = sleep => {}
            // The waiter ends with its connection (a parent abort or disconnect never
            // touches the runs).
            _ = outbox.ended() => return Err(gone()),
        }
    }
}

async fn stop(jobs: &Arc<Jobs>, s: SubagentStop) -> Result<Reply, ProtocolError> {
    let (job_of_handle, targets) = jobs.read(|cat| {
        let r = cat.resolve(&s.parent_agent_id, &s.handle)?;
        let job = match &r {
            Resolved::Job(j) | Resolved::Run(j, _) => Some(j.clone()),
            Resolved::Agent(_) => None,
        };
        Ok::<_, ProtocolError>((job, cat.runs_of(&s.parent_agent_id, &r)))
    })?;
    if let Some(j) = &job_of_handle
        && s.handle.starts_with("job-")
    {
        jobs.update(|c| c.mark_stopped(j));
    }
    let mut cancelled = Vec::new();
    let mut job_id = job_of_handle;
    for (j, i) in targets {
        let reason = "stopped by the parent";
        let state = super::intervene::cancel_run(jobs, &j, i, reason, RunActor::Parent).await;
        let Some(state) = state else { continue };
        let at = (j.clone(), i);
        let Some((run_id, agent_id)) = jobs.read(|c| {
            c.run_at(&at)
                .map(|r| (r.run_id.clone(), r.agent_id.clone()))
        }) else {
            continue;
        };
        job_id.get_or_insert(j.clone());
        cancelled.push(CancelledRun {
            run_id,
            agent_id: Some(agent_id),
            state,
        });
    }
    // A persisted stopped_at even when every run had already ended.
    if let Some(j) = &job_id {
        jobs.persist(j).await?;
    }
    Reply::data::<kind::SubagentStop>(&SubagentStopData { cancelled, job_id })
}

async fn relaunch(jobs: &Arc<Jobs>, r: SubagentRelaunch) -> Result<Reply, ProtocolError> {
    if r.task.trim().is_empty() {
        return Err(invalid("relaunch needs a task"));
    }
    let job_id = ids::new_id(ids::JOB);
    let data = jobs.update(|c| {
        let job = c.relaunch(&r.parent_agent_id, &r.target, r.task, &job_id)?;
        let run = job.runs.first().ok_or_else(|| {
            ProtocolError::new(ErrorCode::InternalError, "a relaunch without a run")
        })?;
        Ok::<_, ProtocolError>(SubagentRelaunched {
            job_id: job_id.clone(),
            run_id: run.run_id.clone(),
            agent_id: run.agent_id.clone(),
            alias: run.alias.clone(),
            definition_name: run.definition_name.clone(),
            display_name: run.display_name.clone(),
            state: RunState::Queued,
        })
    })?;
    if let Err(e) = jobs.persist(&job_id).await {
        jobs.update(|c| c.remove(&job_id));
        return Err(e);
    }
    jobs.spawn_job(job_id);
    Reply::data::<kind::SubagentRelaunch>(&data)
}
