//! Subagent jobs (docs/protocol.md §10.3, §11.2; docs/subagents.md), a service on top of the
//! daemon's core: [`Jobs`] owns the job catalog (`catalog`: records in memory, handle
//! and alias resolution) and its durable records (`record`); the Coordinator
//! (`coordinator`) runs each job's children and reports their ends to the parent;
//! `intervene` steers and stops runs. Handlers for the `subagent.*` commands live in
//! `handlers`. Nothing here is imported by the core.
//!
//! The catalog's lock guards in-memory records only; a transition changes memory, then
//! persists the whole record (writes serialized, each the latest copy), then tells the
//! owner's connections and wakes waiters — so nothing is announced before it is durable.

mod catalog;
mod client;
mod coordinator;
mod definitions;
pub(crate) mod handlers;
pub(crate) mod intervene;
mod record;

use std::sync::{Arc, Mutex, OnceLock};

use shard_protocol::ErrorCode;
use shard_protocol::event::Event;
use shard_protocol::ids;
use shard_protocol::jobs::{JobStrategy, RunState};
use tokio::sync::watch;

use crate::config::LaunchLimits;
use crate::core::Shared;
use crate::reply::ProtocolError;
use catalog::{Catalog, RunAt};
pub(crate) use client::InternalClient;
use record::{JobStore, RunRecord};

/// The job service of one daemon: it runs on the core (the registry it creates children
/// in and prompts them through) and owns the job catalog, which nothing outside this
/// module touches.
pub(crate) struct Jobs {
    /// The registry below.
    core: Arc<Shared>,
    store: JobStore,
    /// Read and changed only through [`Jobs::read`] and [`Jobs::update`], whose closures
    /// cannot await: the lock is never held across an `.await`.
    cat: Mutex<Catalog>,
    /// Serializes record writes (each writes the latest in-memory copy).
    writes: tokio::sync::Mutex<()>,
    /// Bumped after every persisted change; waiters watch it.
    changed: watch::Sender<u64>,
    /// Launch limits.
    limits: LaunchLimits,
    client: OnceLock<InternalClient>,
}

impl Jobs {
    /// The service over `SHARD_HOME/jobs`, on top of `core`.
    pub fn new(core: Arc<Shared>) -> Self {
        let limits = core.cfg.launch_limits;
        Jobs {
            store: JobStore::new(&core.cfg.home),
            core,
            cat: Mutex::new(Catalog::default()),
            writes: tokio::sync::Mutex::new(()),
            changed: watch::Sender::new(0),
            limits,
            client: OnceLock::new(),
        }
    }

    /// Reads the catalog (a poisoned lock is taken over: every change leaves it whole).
    fn read<R>(&self, f: impl FnOnce(&Catalog) -> R) -> R {
        f(&self.cat.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Changes the catalog in memory; [`Jobs::persist`] makes it durable.
    fn update<R>(&self, f: impl FnOnce(&mut Catalog) -> R) -> R {
        f(&mut self.cat.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// A receiver that sees every persisted change.
    fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The daemon's own client for commands to agents.
    fn client(&self) -> &InternalClient {
        self.client
            .get_or_init(|| InternalClient::new(self.core.cfg.queue))
    }

    /// True when a job leases `agent_id` (a direct `prompt` to it is refused).
    pub(crate) fn leased(&self, agent_id: &str) -> bool {
        self.read(|c| c.leased(agent_id))
    }

    /// Writes the latest in-memory copy of `job_id` (writes serialized).
    async fn persist(&self, job_id: &str) -> Result<(), ProtocolError> {
        let _writing = self.writes.lock().await;
        let Some(job) = self.read(|c| c.job(job_id).cloned()) else {
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
    async fn transition(
        &self,
        job_id: &str,
        index: usize,
        f: impl FnOnce(&mut RunRecord),
    ) -> Option<RunState> {
        let at: RunAt = (job_id.to_string(), index);
        let changed = self.update(|c| c.change_run(&at, f))?;
        if self.persist(job_id).await.is_err() {
            // Memory moved on; the next write carries it. Announce only what is durable,
            // but wake the waiters: they read memory, and a run that ended must not leave
            // a `subagent.wait` sleeping until its timeout.
            self.changed.send_modify(|v| *v += 1);
            return Some(changed.state);
        }
        if let Some(ev) = changed.event {
            let parent = ev.parent_agent_id.clone();
            let frame = crate::wire::frame(&Event::SubagentRunChanged(ev));
            self.core.send_to_owner(&parent, &frame);
        }
        self.changed.send_modify(|v| *v += 1);
        Some(changed.state)
    }

    /// Loads the records at daemon start: nonterminal runs become `interrupted` (never
    /// replayed, docs/protocol.md §10.3 restart rules) — a chain's later steps `cancelled` — and
    /// are written back.
    pub(crate) async fn load(&self) -> std::io::Result<()> {
        let store = self.store.clone();
        let records = tokio::task::spawn_blocking(move || store.load_all_blocking())
            .await
            .map_err(std::io::Error::other)??;
        let now = ids::now_millis();
        let mut touched = Vec::new();
        let mut loaded = Vec::new();
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
            loaded.push(job);
        }
        self.update(|c| loaded.into_iter().for_each(|job| c.insert(job)));
        for id in touched {
            if let Err(e) = self.persist(&id).await {
                tracing::warn!(job_id = %id, error = %e.message, "could not record an interrupted job");
            }
        }
        Ok(())
    }
}
