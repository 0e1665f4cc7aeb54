//! The Coordinator (docs/subagents.md): runs a committed job — all runs at once
//! (`single`, `parallel`) or one after the other (`chain`, each step given the previous
//! final text) — by materializing each run's durable child Agent, prompting it with the
//! private task, and watching its events until the turn ends. Every run end is persisted
//! and then reported to the parent (`steer` while its turn is active, else `prompt`).

use std::sync::Arc;

use futures::future::join_all;
use shard_protocol::command::{AgentTarget, Command, Prompt, Steer};
use shard_protocol::event::{Event, Response};
use shard_protocol::ids;
use shard_protocol::jobs::{JobStrategy, RunState, RunUsage};
use shard_protocol::responses::{SteerData, SteerOutcome};
use shard_protocol::types::{ContentBlock, Role};

use super::Jobs;
use super::catalog::{Catalog, StartClaim};
use crate::core::subscribe::Topic;
use crate::manifest::{AgentManifest, MANIFEST_VERSION};

/// Longest final text kept in a record and a report (bytes).
const FINAL_TEXT_MAX: usize = 16 * 1024;

/// Starting the Coordinator's work is the service's, but lives here: the service below
/// never names the Coordinator.
impl Jobs {
    /// Delivers the completion reports a previous daemon did not (runs that ended, or
    /// were interrupted, before their parent took the report): a report is never lost.
    pub(crate) fn resume_reports(self: &Arc<Self>) {
        for (job_id, index) in self.read(Catalog::unreported) {
            let jobs = Arc::clone(self);
            tokio::spawn(async move { report(&jobs, &job_id, index).await });
        }
    }

    /// Starts the coordinator's work for a committed job.
    pub(super) fn spawn_job(self: &Arc<Self>, job_id: String) {
        let jobs = Arc::clone(self);
        tokio::spawn(async move { run_job(jobs, job_id).await });
    }
}

/// Runs job `job_id` to its end.
pub(crate) async fn run_job(jobs: Arc<Jobs>, job_id: String) {
    let Some((strategy, n)) = jobs.read(|c| c.job(&job_id).map(|j| (j.strategy, j.runs.len())))
    else {
        return;
    };
    match strategy {
        JobStrategy::Single | JobStrategy::Parallel => {
            join_all((0..n).map(|i| run_one(&jobs, &job_id, i, None))).await;
        }
        JobStrategy::Chain => {
            let mut previous: Option<String> = None;
            for i in 0..n {
                let (state, text) = run_one(&jobs, &job_id, i, previous.take()).await;
                if state != RunState::Completed {
                    cancel_rest(&jobs, &job_id, i + 1).await;
                    break;
                }
                previous = text;
            }
        }
    }
}

/// Cancels the queued runs of a chain from `from` on (a step failed or was stopped).
async fn cancel_rest(jobs: &Arc<Jobs>, job_id: &str, from: usize) {
    let n = jobs.read(|c| c.job(job_id).map_or(0, |j| j.runs.len()));
    for i in from..n {
        jobs.transition(job_id, i, |r| {
            if r.state == RunState::Queued {
                r.state = RunState::Cancelled;
                r.error = Some("an earlier step of the chain did not complete".into());
                r.ended_at = Some(ids::now_millis());
            }
        })
        .await;
        let sh = Arc::clone(jobs);
        let job = job_id.to_string();
        tokio::spawn(async move { report(&sh, &job, i).await });
    }
}

/// How one run ended, as the coordinator saw it.
struct Outcome {
    state: RunState,
    final_text: Option<String>,
    usage: Option<RunUsage>,
    error: Option<String>,
}

fn failed(error: impl Into<String>) -> Outcome {
    Outcome {
        state: RunState::Failed,
        final_text: None,
        usage: None,
        error: Some(error.into()),
    }
}

/// Runs run `index` (unless it was cancelled while queued); returns its end state and
/// final text.
async fn run_one(
    jobs: &Arc<Jobs>,
    job_id: &str,
    index: usize,
    previous: Option<String>,
) -> (RunState, Option<String>) {
    let at = (job_id.to_string(), index);
    let cancel = match jobs.update(|c| c.claim_start(&at)) {
        None => return (RunState::Failed, None),
        Some(StartClaim::Settled(state, text)) => return (state, text),
        Some(StartClaim::Queued(cancel)) => cancel,
    };
    // Only a run still queued starts: a stop may have cancelled it since the check above.
    let now = jobs
        .transition(job_id, index, |r| {
            if r.state == RunState::Queued {
                r.state = RunState::Starting;
                r.started_at = Some(ids::now_millis());
            }
        })
        .await;
    if now != Some(RunState::Starting) {
        return (now.unwrap_or(RunState::Failed), None);
    }
    let outcome = execute(jobs, job_id, index, previous, &cancel).await;
    let text = outcome.final_text.clone();
    let state = jobs
        .transition(job_id, index, |r| {
            r.state = outcome.state;
            r.final_text = outcome.final_text;
            r.usage = outcome.usage;
            r.error = outcome.error;
            r.ended_at = Some(ids::now_millis());
        })
        .await
        .unwrap_or(RunState::Failed);
    // The report waits for the parent's Runtime; the job (a chain's next step) does not.
    let sh = Arc::clone(jobs);
    let job = job_id.to_string();
    tokio::spawn(async move { report(&sh, &job, index).await });
    (state, text)
}

/// The child's durable manifest for run `index`, built from the parent and the job.
fn child_manifest(jobs: &Jobs, job_id: &str, index: usize) -> Result<AgentManifest, String> {
    let (parent, agent_id, alias, model, provider, mode, tools) = jobs.read(|c| {
        let job = c.job(job_id).ok_or("the job is gone")?;
        let run = job.runs.get(index).ok_or("the run is gone")?;
        Ok::<_, &str>((
            job.parent_agent_id.clone(),
            run.agent_id.clone(),
            run.alias.clone(),
            run.model.clone().or(job.model.clone()),
            job.provider.clone(),
            run.mode.clone().or(job.mode.clone()),
            run.tools.clone(),
        ))
    })?;
    let view = jobs
        .core
        .agent_view(&parent)
        .ok_or("the parent agent no longer exists")?;
    let pm = &view.manifest;
    // Checked again as the child materializes: the parent may have switched mode since
    // the job was accepted (a chain's later step, a relaunch), and its tools narrow the
    // child's whatever the record says.
    let mode = super::definitions::child_mode(view.mode.as_deref(), mode.as_deref())
        .map_err(|e| e.message)?;
    let tools = super::definitions::child_tools(tools, pm.tools.as_deref());
    // A scripted parent's "model" is its script; children name their own (or inherit it).
    Ok(AgentManifest {
        version: MANIFEST_VERSION,
        agent_id,
        session_id: ids::new_id(ids::SESSION),
        cwd: pm.cwd.clone(),
        name: Some(alias),
        model: model.or_else(|| pm.model.clone()),
        provider: provider.or_else(|| pm.provider.clone()),
        mode,
        tools,
        skills: pm.skills.clone(),
        headless_policy: view.headless_policy,
        parent_agent_id: Some(parent),
        created_at: ids::now_millis(),
        adopted: false,
        started: false,
        system_prompt_file: None,
        host: None,
        mcp_servers: Vec::new(),
        archived: false,
    })
}

/// Materializes the child (first run of its Agent), prompts it and follows the turn.
async fn execute(
    jobs: &Arc<Jobs>,
    job_id: &str,
    index: usize,
    previous: Option<String>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Outcome {
    let shared = &jobs.core;
    let at = (job_id.to_string(), index);
    let Some((agent_id, task, prompt)) = jobs.read(|c| {
        c.run_at(&at)
            .map(|r| (r.agent_id.clone(), r.task.clone(), r.system_prompt.clone()))
    }) else {
        return failed("the run is gone");
    };
    if shared.agent_view(&agent_id).is_none() {
        let mut manifest = match child_manifest(jobs, job_id, index) {
            Ok(m) => m,
            Err(e) => return failed(e),
        };
        if let Some(prompt) = prompt {
            match write_prompt(&shared.cfg.home, &agent_id, prompt).await {
                Ok(path) => manifest.system_prompt_file = Some(path),
                Err(e) => {
                    return failed(format!("could not record the child's system prompt: {e}"));
                }
            }
        }
        // A child that is never recorded leaves no prompt file behind.
        let drop_prompt = |file: &Option<String>| {
            if let Some(f) = file {
                let f = f.clone();
                tokio::task::spawn_blocking(move || std::fs::remove_file(f));
            }
        };
        if let Err(e) = shared.reserve_agent(&manifest) {
            drop_prompt(&manifest.system_prompt_file);
            return failed(e.message);
        }
        if let Err(e) = shared.store.save(&manifest).await {
            shared.forget_agent(&agent_id);
            drop_prompt(&manifest.system_prompt_file);
            return failed(format!("could not record the child agent: {e}"));
        }
    }
    let mut sub = match shared.subscribe(Topic::Agent(agent_id.clone())) {
        Ok(s) => s,
        Err(e) => return failed(e.message),
    };
    let message = match previous {
        Some(prev) => format!("{task}\n\nResult of the previous step:\n{prev}"),
        None => task,
    };
    let prompt = Command::Prompt(Prompt {
        agent_id: None,
        message,
        images: None,
        streaming_behavior: None,
    });
    let client = jobs.client();
    let mut accepted = match client.send(shared, &agent_id, prompt) {
        Ok(rx) => rx,
        Err(e) => return failed(e.message),
    };
    let mut exited = shared.exit_waiter(&agent_id);
    let mut accepted_done = false;
    let mut stopping = false;
    let mut last_text: Option<String> = None;
    let mut fatal: Option<String> = None;
    let mut turn_started = false;
    let usage = loop {
        tokio::select! {
            _ = cancel.cancelled(), if !stopping => {
                stopping = true;
                let _ = client.send(shared, &agent_id, Command::Abort(AgentTarget { agent_id: None }));
                escalate(jobs, &agent_id);
            }
            r = &mut accepted, if !accepted_done => {
                accepted_done = true;
                match r {
                    Ok(resp) if resp.success => {
                        jobs.transition(job_id, index, |r| {
                            if r.state == RunState::Starting {
                                r.state = RunState::Active;
                            }
                        }).await;
                        if exited.is_none() {
                            exited = shared.exit_waiter(&agent_id);
                        }
                    }
                    Ok(resp) => {
                        let why = resp.error.map(|e| e.message).unwrap_or_else(|| "refused".into());
                        return if stopping { cancelled(jobs, job_id, index) } else { failed(format!("the child refused the task: {why}")) };
                    }
                    Err(_) => return failed("the daemon lost the child's answer"),
                }
            }
            _ = async { match exited.as_mut() { Some(rx) => { let _ = rx.await; } None => std::future::pending().await } } => {
                return if stopping { cancelled(jobs, job_id, index) } else { failed("the child's runtime exited before the task ended") };
            }
            ev = sub.recv() => {
                let Some(ev) = ev else {
                    return failed("lost the child's event stream");
                };
                match ev {
                    Event::TurnStart(t) => {
                        turn_started = true;
                        jobs.update(|c| c.set_turn(&at, Some(t.turn_id)));
                        // The turn can start (and end) before the prompt's answer is read
                        // here: a run always passes through `active`.
                        jobs.transition(job_id, index, |r| {
                            if r.state == RunState::Starting {
                                r.state = RunState::Active;
                            }
                        }).await;
                    }
                    Event::MessageComplete(m) if m.message.role == Role::Assistant => {
                        let text: String = m.message.content.iter().filter_map(|b| match b {
                            ContentBlock::Text { text } => Some(text.as_str()),
                            _ => None,
                        }).collect::<Vec<_>>().join("");
                        if !text.is_empty() {
                            last_text = Some(text);
                        }
                    }
                    Event::Error(e) if e.fatal == Some(true) => fatal = Some(e.message),
                    Event::TurnEnd(t) if turn_started => {
                        jobs.update(|c| c.set_turn(&at, None));
                        break t.usage.map(|u| RunUsage { input: u.input, output: u.output });
                    }
                    _ => {}
                }
            }
        }
    };
    if stopping {
        return Outcome {
            usage,
            final_text: last_text.map(bound),
            ..cancelled(jobs, job_id, index)
        };
    }
    match fatal {
        Some(e) => Outcome {
            state: RunState::Failed,
            final_text: last_text.map(bound),
            usage,
            error: Some(e),
        },
        None => Outcome {
            state: RunState::Completed,
            final_text: last_text.map(bound),
            usage,
            error: None,
        },
    }
}

/// Writes a definition body to `SHARD_HOME/jobs/prompts/<agent_id>.md` (owner-only).
async fn write_prompt(
    home: &std::path::Path,
    agent_id: &str,
    prompt: String,
) -> std::io::Result<String> {
    if !ids::is_valid(ids::AGENT, agent_id) {
        return Err(std::io::Error::other("invalid agent id"));
    }
    let dir = home.join("jobs").join("prompts");
    let path = dir.join(format!("{agent_id}.md"));
    crate::fsutil::save_record(dir, path.clone(), prompt.into_bytes()).await?;
    Ok(path.display().to_string())
}

/// A cancelled run's outcome, with the canceller's reason (the parent's stop, a
/// person's abort).
fn cancelled(jobs: &Jobs, job_id: &str, index: usize) -> Outcome {
    let reason = jobs.read(|c| c.stop_reason(&(job_id.to_string(), index)));
    Outcome {
        state: RunState::Cancelled,
        final_text: None,
        usage: None,
        error: Some(reason.unwrap_or_else(|| "stopped by the parent".into())),
    }
}

/// Cuts a final text to [`FINAL_TEXT_MAX`] bytes at a character boundary.
fn bound(mut s: String) -> String {
    if s.len() > FINAL_TEXT_MAX {
        let mut end = FINAL_TEXT_MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("\n[cut]");
    }
    s
}

/// abort → graceful → kill: when the turn has not ended after the kill grace, the
/// Runtime is killed (which itself escalates SIGTERM → SIGKILL).
fn escalate(jobs: &Arc<Jobs>, agent_id: &str) {
    let jobs = Arc::clone(jobs);
    let agent_id = agent_id.to_string();
    tokio::spawn(async move {
        tokio::time::sleep(jobs.core.cfg.kill_grace).await;
        if jobs.leased(&agent_id)
            && let Ok(Some(rx)) = jobs.core.kill(&agent_id, false)
        {
            let _ = rx.await;
        }
    });
}

/// Delivers the completion report of run `index` to its parent: `steer` while the
/// parent's turn is active, else `prompt`; a steer the turn did not take becomes a prompt.
/// Marked `reported` once a Runtime accepted it.
pub(crate) async fn report(jobs: &Arc<Jobs>, job_id: &str, index: usize) {
    let shared = &jobs.core;
    let Some((parent, run)) = jobs.update(|c| c.claim_report(&(job_id.to_string(), index))) else {
        return;
    };
    let (text, run_id) = (report_text(job_id, &run), run.run_id);
    let client = jobs.client();
    let active = shared.agent_view(&parent).is_some_and(|v| v.active);
    let mut delivered = false;
    if active {
        // Strict: a report the turn did not take is dropped by the Runtime and comes
        // back `conflict`, and then becomes the next prompt (never lost, never twice).
        let steer = Command::Steer(Steer {
            agent_id: None,
            message: text.clone(),
            images: None,
            strict: Some(true),
            turn_id: None,
        });
        if let Ok(rx) = client.send(shared, &parent, steer) {
            delivered = steer_outcome(rx.await.ok()) == SteerOutcome::Injected;
        }
    }
    if !delivered {
        let prompt = Command::Prompt(Prompt {
            agent_id: None,
            message: text,
            images: None,
            streaming_behavior: Some(shard_protocol::command::StreamingBehavior::FollowUp),
        });
        if let Ok(rx) = client.send(shared, &parent, prompt) {
            delivered = rx.await.is_ok_and(|r| r.success);
        }
    }
    if delivered {
        jobs.transition(job_id, index, |r| r.reported = true).await;
    } else {
        tracing::warn!(job_id, index, "the parent did not take a completion report");
    }
    jobs.update(|c| c.end_report(&run_id));
}

/// What a strict steer's answer says; anything but `injected` (a refusal, a Runtime that
/// died first) means the message is not in the turn.
pub(crate) fn steer_outcome(resp: Option<Response>) -> SteerOutcome {
    resp.filter(|r| r.success)
        .and_then(|r| r.data)
        .and_then(|d| serde_json::from_value::<SteerData>(d).ok())
        .map_or(SteerOutcome::Conflict, |d| d.status)
}

/// The structured report a parent model reads (never the task text).
fn report_text(job_id: &str, r: &super::RunRecord) -> String {
    let report = serde_json::json!({
        "subagent_report": {
            "job_id": job_id,
            "run_id": r.run_id,
            "agent_id": r.agent_id,
            "alias": r.alias,
            "state": r.state,
            "final_text": r.final_text,
            "usage": r.usage,
            "error": r.error,
        }
    });
    format!("[subagent report]\n{report}")
}
