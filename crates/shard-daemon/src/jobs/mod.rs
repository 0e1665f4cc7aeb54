//! Subagent jobs (PROTOCOL §10.3, §11.2; ARCHITECTURE §9): the JobCatalog (durable job
//! records, handle and alias resolution, transitions) and the Coordinator (`coordinator`)
//! that runs each job's children and reports their ends to the parent. Handlers for the
//! `subagent.*` commands live in `handlers`.
//!
//! The catalog's lock guards in-memory records only; a transition changes memory, then
//! persists the whole record (writes serialized, each the latest copy), then tells the
//! owner's connections and wakes waiters — so nothing is announced before it is durable.

mod client;
mod coordinator;
mod definitions;
pub(crate) mod handlers;
pub(crate) mod intervene;
mod record;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use shard_protocol::ErrorCode;
use shard_protocol::event::Event;
use shard_protocol::ids;
use shard_protocol::jobs::{JobStrategy, RunState};
use shard_protocol::orchestrator::SubagentRunChanged;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::LaunchLimits;
use crate::core::Shared;
use crate::reply::ProtocolError;
pub(crate) use client::InternalClient;
use record::{JobRecord, JobStore, RunRecord};

/// Live control of a run the coordinator is executing (not durable).
#[derive(Debug, Default)]
pub(crate) struct RunControl {
    /// Cancelled by `subagent.stop`.
    pub cancel: CancellationToken,
    /// The child's current turn, once it started.
    pub turn_id: Option<String>,
    /// Why the run is being cancelled (its error text): the first canceller's reason.
    pub stop_reason: Option<String>,
}

/// Records in memory.
#[derive(Default)]
pub(crate) struct Catalog {
    pub jobs: HashMap<String, JobRecord>,
    /// Keyed by run id.
    pub live: HashMap<String, RunControl>,
    /// Runs whose completion report is being delivered: one delivery at a time, so two
    /// paths that end a run (a stop and a chain's cancel, say) never report it twice.
    pub reporting: std::collections::HashSet<String>,
}

impl Catalog {
    /// The parent's jobs, oldest first.
    pub fn owned<'a>(&'a self, parent: &'a str) -> impl Iterator<Item = &'a JobRecord> + 'a {
        let mut v: Vec<_> = self
            .jobs
            .values()
            .filter(|j| j.parent_agent_id == parent)
            .collect();
        v.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then(a.job_id.cmp(&b.job_id))
        });
        v.into_iter()
    }

    /// Where run `run_id` is: (job id, index).
    pub fn find_run(&self, run_id: &str) -> Option<(String, usize)> {
        self.jobs.values().find_map(|j| {
            j.runs
                .iter()
                .position(|r| r.run_id == run_id)
                .map(|i| (j.job_id.clone(), i))
        })
    }

    /// True when `agent_id` has a queued or executing run (the lease of §10.3).
    pub fn leased(&self, agent_id: &str) -> bool {
        self.jobs
            .values()
            .flat_map(|j| &j.runs)
            .any(|r| r.agent_id == agent_id && !r.state.is_terminal())
    }
}

/// What a handle resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// A whole job.
    Job(String),
    /// One run: (job id, index).
    Run(String, usize),
    /// A child Agent of the parent.
    Agent(String),
}

/// Folds a handle or alias for comparison: NFKC, then lower case.
pub(crate) fn fold(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    s.nfkc().collect::<String>().to_lowercase()
}

/// The job subsystem of one daemon.
pub(crate) struct Jobs {
    store: JobStore,
    cat: Mutex<Catalog>,
    /// Serializes record writes (each writes the latest in-memory copy).
    writes: tokio::sync::Mutex<()>,
    /// Bumped after every persisted change; waiters watch it.
    changed: watch::Sender<u64>,
    /// Launch limits.
    pub limits: LaunchLimits,
    client: OnceLock<InternalClient>,
}

impl Jobs {
    /// The subsystem over `SHARD_HOME/jobs`.
    pub fn new(home: &std::path::Path, limits: LaunchLimits) -> Self {
        Jobs {
            store: JobStore::new(home),
            cat: Mutex::new(Catalog::default()),
            writes: tokio::sync::Mutex::new(()),
            changed: watch::Sender::new(0),
            limits,
            client: OnceLock::new(),
        }
    }

    /// Locks the catalog (a poisoned lock is taken over: every change leaves it whole).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Catalog> {
        self.cat.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A receiver that sees every persisted change.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The daemon's own client for commands to agents.
    pub(crate) fn client(&self, shared: &Shared) -> &InternalClient {
        self.client
            .get_or_init(|| InternalClient::new(shared.cfg.queue))
    }

    /// True when a job leases `agent_id` (a direct `prompt` to it is refused).
    pub(crate) fn leased(&self, agent_id: &str) -> bool {
        self.lock().leased(agent_id)
    }

    /// Writes the latest in-memory copy of `job_id` (writes serialized).
    pub(crate) async fn persist(&self, job_id: &str) -> Result<(), ProtocolError> {
        let _writing = self.writes.lock().await;
        let Some(job) = self.lock().jobs.get(job_id).cloned() else {
            return Ok(());
        };
        self.store.save(&job).await.map_err(|e| {
            tracing::error!(job_id, error = %e, "could not write a job record");
            ProtocolError::new(
                ErrorCode::InternalError,
                format!("could not record the job: {e}"),
            )
        })
    }

    /// Changes run `index` of `job_id` with `f`, persists, then tells the owner and
    /// waiters. Returns the run's new state (`None`: no such run).
    pub(crate) async fn transition(
        &self,
        shared: &Shared,
        job_id: &str,
        index: usize,
        f: impl FnOnce(&mut RunRecord),
    ) -> Option<RunState> {
        let (event, state) = {
            let mut cat = self.lock();
            let job = cat.jobs.get_mut(job_id)?;
            let run = job.runs.get_mut(index)?;
            let previous = run.state;
            f(run);
            let run = &job.runs[index];
            let state = run.state;
            let event = (previous != state).then(|| SubagentRunChanged {
                parent_agent_id: job.parent_agent_id.clone(),
                job_id: job.job_id.clone(),
                run_id: run.run_id.clone(),
                agent_id: Some(run.agent_id.clone()),
                alias: Some(run.alias.clone()),
                definition_name: run.definition_name.clone(),
                display_name: run.display_name.clone(),
                state,
                previous_state: Some(previous),
                error: run.error.clone(),
                ended_at: run.ended_at,
            });
            if job.runs.iter().all(|r| r.state.is_terminal()) && job.ended_at.is_none() {
                job.ended_at = Some(ids::now_millis());
            }
            let run_id = job.runs[index].run_id.clone();
            if state.is_terminal() {
                cat.live.remove(&run_id);
            }
            (event, state)
        };
        if self.persist(job_id).await.is_err() {
            // Memory moved on; the next write carries it. Announce only what is durable,
            // but wake the waiters: they read memory, and a run that ended must not leave
            // a `subagent.wait` sleeping until its timeout.
            self.changed.send_modify(|v| *v += 1);
            return Some(state);
        }
        if let Some(ev) = event {
            let parent = ev.parent_agent_id.clone();
            let frame = crate::wire::frame(&Event::SubagentRunChanged(ev));
            shared.send_to_owner(&parent, &frame);
        }
        self.changed.send_modify(|v| *v += 1);
        Some(state)
    }

    /// Loads the records at daemon start: nonterminal runs become `interrupted` (never
    /// replayed, PROTOCOL §10.3 restart rules) — a chain's later steps `cancelled` — and
    /// are written back.
    pub(crate) async fn load(&self) -> std::io::Result<()> {
        let store = self.store.clone();
        let records = tokio::task::spawn_blocking(move || store.load_all_blocking())
            .await
            .map_err(std::io::Error::other)??;
        let now = ids::now_millis();
        let mut touched = Vec::new();
        {
            let mut cat = self.lock();
            for mut job in records {
                let mut changed = false;
                // A chain's steps after the interrupted one depend on its result: they
                // are cancelled, never run on a guess.
                let mut chain_broken = false;
                for run in &mut job.runs {
                    if !run.state.is_terminal() {
                        if chain_broken {
                            run.state = RunState::Cancelled;
                            run.error = Some(
                                "an earlier step of the chain was interrupted by a daemon restart"
                                    .into(),
                            );
                        } else {
                            run.state = RunState::Interrupted;
                            run.error =
                                Some("the daemon restarted while the run was in progress".into());
                        }
                        run.ended_at = Some(now);
                        changed = true;
                        chain_broken = job.strategy == JobStrategy::Chain;
                    }
                }
                if changed {
                    job.ended_at.get_or_insert(now);
                    touched.push(job.job_id.clone());
                }
                cat.jobs.insert(job.job_id.clone(), job);
            }
        }
        for id in touched {
            if let Err(e) = self.persist(&id).await {
                tracing::warn!(job_id = %id, error = %e.message, "could not record an interrupted job");
            }
        }
        Ok(())
    }
}

/// [`Jobs::resolve`] on a locked catalog.
pub(crate) fn resolve_in(
    cat: &Catalog,
    parent: &str,
    handle: &str,
) -> Result<Resolved, ProtocolError> {
    let not_found = || ProtocolError::new(ErrorCode::NotFound, "no such job, run or child agent");
    if ids::is_valid(ids::JOB, handle) {
        return match cat.jobs.get(handle) {
            Some(j) if j.parent_agent_id == parent => Ok(Resolved::Job(handle.to_string())),
            _ => Err(not_found()),
        };
    }
    if ids::is_valid(ids::RUN, handle) {
        return match cat.find_run(handle) {
            Some((job, i))
                if cat
                    .jobs
                    .get(&job)
                    .is_some_and(|j| j.parent_agent_id == parent) =>
            {
                Ok(Resolved::Run(job, i))
            }
            _ => Err(not_found()),
        };
    }
    if ids::is_valid(ids::AGENT, handle) {
        let owned = cat
            .owned(parent)
            .any(|j| j.runs.iter().any(|r| r.agent_id == handle));
        return if owned {
            Ok(Resolved::Agent(handle.to_string()))
        } else {
            Err(not_found())
        };
    }
    let wanted = fold(handle);
    cat.owned(parent)
        .flat_map(|j| &j.runs)
        .find(|r| fold(&r.alias) == wanted)
        .map(|r| Resolved::Agent(r.agent_id.clone()))
        .ok_or_else(not_found)
}

/// The run an agent handle stands for: its queued/executing run, else its latest one.
pub(crate) fn run_of_agent(cat: &Catalog, parent: &str, agent_id: &str) -> Option<(String, usize)> {
    let mut latest = None;
    for j in cat.owned(parent) {
        for (i, r) in j.runs.iter().enumerate() {
            if r.agent_id == agent_id {
                if !r.state.is_terminal() {
                    return Some((j.job_id.clone(), i));
                }
                latest = Some((j.job_id.clone(), i));
            }
        }
    }
    latest
}

/// A fresh alias for `name` among `taken` (folded): `name`, `name-2`, `name-3`, …
pub(crate) fn fresh_alias(name: &str, taken: &mut Vec<String>) -> String {
    let base: String = fold(name)
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    let base = if base.trim_matches('-').is_empty() {
        "agent".to_string()
    } else {
        base
    };
    let mut n = 1;
    loop {
        let candidate = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        if !taken.contains(&candidate) {
            taken.push(candidate.clone());
            return candidate;
        }
        n += 1;
    }
}

/// Delivers the completion reports a previous daemon did not (runs that ended, or were
/// interrupted, before their parent took the report): a report is never lost.
pub(crate) fn resume_reports(shared: &Arc<Shared>) {
    let due: Vec<(String, usize)> = {
        let cat = shared.jobs.lock();
        cat.jobs
            .values()
            .flat_map(|j| {
                j.runs
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.state.is_terminal() && !r.reported)
                    .map(|(i, _)| (j.job_id.clone(), i))
            })
            .collect()
    };
    for (job_id, index) in due {
        let shared = Arc::clone(shared);
        tokio::spawn(async move { coordinator::report(&shared, &job_id, index).await });
    }
}

/// Starts the coordinator's work for a committed job.
pub(crate) fn spawn_job(shared: &Arc<Shared>, job_id: String) {
    let shared = Arc::clone(shared);
    tokio::spawn(async move { coordinator::run_job(shared, job_id).await });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_unique_and_folded() {
        let mut taken = vec![];
        assert_eq!(fresh_alias("Review", &mut taken), "review");
        assert_eq!(fresh_alias("REVIEW", &mut taken), "review-2");
        assert_eq!(fresh_alias("a b", &mut taken), "a-b");
        assert_eq!(fold("ＲＥＶＩＥＷ"), "review");
    }
}
