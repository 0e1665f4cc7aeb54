//! The registry's state: agent entries, live Runtimes, attachments, pending requests and
//! connections. Its fields are private to `core`: the connection layer and
//! the handlers go through the methods of `core::api`, which never `.await` while holding
//! it and do only bounded, non-blocking work under it (queue pushes). See
//! docs/decisions.md "Daemon core".

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use bytes::Bytes;
use shard_protocol::command::AttachRole;
use shard_protocol::event::ActivityPhase;
use shard_protocol::types::{AgentInfo, AgentStatus, PermissionDecision, RuntimeState, Usage};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use crate::config::DaemonConfig;
use crate::launcher::RuntimeLauncher;
use crate::manifest::{AgentManifest, ManifestStore};
use crate::outbox::Outbox;
use crate::principal::Principal;
use crate::reply::Responder;

/// A client connection's id.
pub type ConnId = u64;

/// What a rewritten command id stands for (§16 item 6).
#[derive(Debug)]
pub(crate) enum Inflight {
    /// A client's command: the response goes back to it with its own id.
    Client(Responder),
    /// A `request_sync` the daemon sent; its response is swallowed.
    Sync,
    /// A `request_sync` a client asked for; its response goes back to it.
    ClientSync(Responder),
    /// A command of the daemon's own (`abort` of a kill, headless answers).
    Internal,
}

impl Inflight {
    /// Answers the client behind this record (if any) with a failure.
    pub(super) fn fail(self, code: shard_protocol::ErrorCode, message: impl Into<String>) {
        match self {
            Inflight::Client(r) | Inflight::ClientSync(r) => {
                r.fail(crate::reply::ProtocolError::new(code, message));
            }
            Inflight::Sync | Inflight::Internal => {}
        }
    }
}

/// A live (or starting) Runtime generation.
pub(crate) struct LiveRuntime {
    pub(super) epoch: u64,
    pub(super) pid: Option<u32>,
    /// Lines to the Runtime's stdin; `None` once stdin is closed (terminate/reap).
    pub(super) stdin: Option<mpsc::UnboundedSender<Bytes>>,
    pub(super) ready: bool,
    pub(super) capabilities: Vec<String>,
    pub(super) inflight: HashMap<String, Inflight>,
    /// `request_sync`s sent and not yet answered: a `sync` meanwhile is a reply.
    pub(super) sync_requests: u32,
    pub(super) idle_since: Option<Instant>,
    pub(super) terminate_when_idle: bool,
    pub(super) stopping: bool,
    pub(super) killed: bool,
    pub(super) start_failure: Option<String>,
    pub(super) start_waiters: Vec<oneshot::Sender<Result<(), String>>>,
    pub(super) exit_waiters: Vec<oneshot::Sender<()>>,
    /// New work that arrived while this generation was stopping: start the next one.
    pub(super) restart_waiters: Vec<oneshot::Sender<Result<(), String>>>,
    /// Client commands that arrived before this generation was ready, sent in arrival
    /// order at its first `sync` (per-agent ordering without blocking a connection).
    pub(super) queued: Vec<(shard_protocol::Command, Inflight)>,
    /// Commands that arrived while this generation was stopping: the next one's.
    pub(super) queued_next: Vec<(shard_protocol::Command, Inflight)>,
    /// SHA-256 of the `SHARD_AGENT_TOKEN` this generation was started with; the token
    /// itself is never kept.
    pub(super) token_hash: [u8; 32],
    /// The start slot this generation holds from its spawn until it is ready (or gone).
    pub(super) start_slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// One client watching an agent.
pub(crate) struct Attachment {
    pub(super) role: AttachRole,
    /// Events are held back until a `sync` reaches this client (the attach handshake).
    pub(super) awaiting_sync: bool,
    /// The `agent.attach` response still owed, sent right before the sync.
    pub(super) attach_reply: Option<Responder>,
    /// The client's queue, so the agent's [`Fanout`] can be rebuilt without the
    /// connection table.
    pub(super) outbox: Arc<Outbox>,
}

/// What a Runtime's reader needs for every streamed line: which generation is live, the
/// activity phase last broadcast, and the queues of the attachments past their handshake.
/// The registry (under its lock) is its only writer and keeps it in step with
/// `AgentEntry::attachments`, `rt` and `phase`; a reader delivering a line that changes
/// nothing else takes only this agent's lock, so the readers of different agents push to
/// their clients in parallel on the runtime's worker threads. Lock order: registry, then
/// a fan-out, never the other way round.
pub(crate) struct Fanout {
    /// The Runtime generation whose lines are delivered (`None`: none is live).
    pub(super) epoch: Option<u64>,
    /// The activity phase last broadcast for the agent.
    pub(super) phase: ActivityPhase,
    /// The queues of the attachments that have had their `sync`.
    targets: Vec<Arc<Outbox>>,
}

impl Default for Fanout {
    fn default() -> Self {
        Fanout {
            epoch: None,
            phase: ActivityPhase::Idle,
            targets: Vec::new(),
        }
    }
}

impl Fanout {
    /// Queues `frame` for every attachment past its handshake.
    pub(super) fn deliver(&self, frame: &Bytes) {
        for o in &self.targets {
            o.push(frame.clone());
        }
    }
}

/// What a pending request accepts as an answer.
#[derive(Debug, Clone)]
pub(crate) enum PendingKind {
    Permission {
        choices: Vec<String>,
        options: Vec<PermissionDecision>,
    },
    Ui,
}

/// A permission or UI request the Runtime is waiting on.
pub(crate) struct Pending {
    pub(super) request_id: String,
    /// The request event, tagged with the requesting agent's id.
    pub(super) value: serde_json::Value,
    pub(super) kind: PendingKind,
    /// A winner was forwarded; later answers are dropped silently.
    pub(super) answered: bool,
    /// Connections (also of ancestors) that were shown it: they get the `*_resolved`.
    pub(super) delivered_to: HashSet<ConnId>,
    pub(super) headless_timer: Option<AbortHandle>,
}

/// One durable agent and whatever is live of it.
pub(crate) struct AgentEntry {
    pub(super) manifest: AgentManifest,
    pub(super) status: AgentStatus,
    pub(super) runtime_state: RuntimeState,
    pub(super) mode: Option<String>,
    pub(super) usage: Option<Usage>,
    /// Shared with the Runtime's reader task (see [`Fanout`]).
    pub(super) fanout: Arc<Mutex<Fanout>>,
    pub(super) last_epoch: Option<u64>,
    pub(super) rt: Option<LiveRuntime>,
    pub(super) attachments: HashMap<ConnId, Attachment>,
    pub(super) pending: Vec<Pending>,
    /// This agent's `AgentInfo` as `agent.list` encodes it, with the fingerprint of the
    /// fields it was encoded from: re-encoded only when one of them changed.
    pub(super) list_cache: Option<(u64, Bytes)>,
}

impl AgentEntry {
    pub fn new(manifest: AgentManifest) -> Self {
        AgentEntry {
            manifest,
            status: AgentStatus::Idle,
            runtime_state: RuntimeState::Stopped,
            mode: None,
            usage: None,
            fanout: Arc::default(),
            last_epoch: None,
            rt: None,
            attachments: HashMap::new(),
            pending: Vec::new(),
            list_cache: None,
        }
    }

    /// A hash of every field [`AgentEntry::info`] reads: cheap to compute (no copies),
    /// and a change of any of them changes it. Both structs are taken apart without `..`,
    /// so a field added to either does not compile until it is hashed or named as unlisted.
    pub fn info_fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let AgentEntry {
            manifest,
            status,
            runtime_state,
            mode,
            usage,
            fanout: _,
            last_epoch: _,
            rt: _,
            attachments: _,
            pending: _,
            list_cache: _,
        } = self;
        let AgentManifest {
            version: _,
            agent_id,
            session_id,
            cwd,
            name,
            model,
            provider,
            mode: first_mode,
            tools: _,
            skills: _,
            headless_policy: _,
            parent_agent_id,
            created_at,
            adopted: _,
            started: _,
            system_prompt_file: _,
            mcp_servers: _,
            archived,
            host,
        } = manifest;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (agent_id, name, cwd, model, provider, first_mode, host).hash(&mut h);
        (created_at, parent_agent_id, session_id, archived).hash(&mut h);
        (mode, status, runtime_state).hash(&mut h);
        if let Some(u) = usage {
            (u.input, u.output, u.cache_read, u.cache_write).hash(&mut h);
            (u.cost.map(f64::to_bits), u.context_tokens, &u.model).hash(&mut h);
        }
        h.finish()
    }

    /// This agent's `AgentInfo` encoded as JSON, from the cache when still current.
    pub fn encoded_info(&mut self) -> Bytes {
        let fp = self.info_fingerprint();
        if let Some((f, b)) = &self.list_cache
            && *f == fp
        {
            return b.clone();
        }
        let b = Bytes::from(serde_json::to_vec(&self.info()).unwrap_or_else(|_| b"{}".to_vec()));
        self.list_cache = Some((fp, b.clone()));
        b
    }

    pub fn info(&self) -> AgentInfo {
        let m = &self.manifest;
        AgentInfo {
            agent_id: m.agent_id.clone(),
            name: m.name.clone(),
            cwd: m.cwd.clone(),
            model: m.model.clone(),
            provider: m.provider.clone(),
            mode: self.mode.clone().or_else(|| m.mode.clone()),
            status: self.status,
            runtime_state: self.runtime_state,
            created_at: m.created_at,
            usage: self.usage.clone(),
            parent_agent_id: m.parent_agent_id.clone(),
            alias: None,
            definition_name: None,
            display_name: None,
            session_id: Some(m.session_id.clone()),
            host: m.host.clone(),
            archived: m.archived.then_some(true),
        }
    }

    /// This agent's fan-out, locked (registry lock held first, or by its reader alone).
    pub(super) fn fanout(&self) -> MutexGuard<'_, Fanout> {
        lock_fanout(&self.fanout)
    }

    /// Adds (or replaces) an attachment, keeping the fan-out in step.
    pub(super) fn insert_attachment(&mut self, conn: ConnId, att: Attachment) {
        self.attachments.insert(conn, att);
        self.refresh_fanout();
    }

    /// Removes an attachment, keeping the fan-out in step.
    pub(super) fn remove_attachment(&mut self, conn: ConnId) -> Option<Attachment> {
        let att = self.attachments.remove(&conn);
        if att.is_some() {
            self.refresh_fanout();
        }
        att
    }

    /// Rebuilds the fan-out's targets from the attachments; called after every change of
    /// an attachment's handshake state.
    pub(super) fn refresh_fanout(&self) {
        let targets = self
            .attachments
            .values()
            .filter(|a| !a.awaiting_sync)
            .map(|a| Arc::clone(&a.outbox))
            .collect();
        self.fanout().targets = targets;
    }

    pub fn interactive_conns(&self) -> Vec<ConnId> {
        self.attachments
            .iter()
            .filter(|(_, a)| a.role == AttachRole::Interactive)
            .map(|(c, _)| *c)
            .collect()
    }
}

/// Locks a fan-out; a poisoned lock is taken over (every write leaves it consistent).
pub(super) fn lock_fanout(f: &Mutex<Fanout>) -> MutexGuard<'_, Fanout> {
    f.lock().unwrap_or_else(|p| p.into_inner())
}

/// One client connection (or in-process subscriber).
pub(crate) struct ConnEntry {
    pub(super) outbox: Arc<Outbox>,
    /// Who is on the other end.
    pub(super) principal: Principal,
    /// Receives orchestrator events (every connection; an in-process subscriber of one
    /// agent only does not).
    pub(super) broadcasts: bool,
}

/// Everything under the lock.
#[derive(Default)]
pub(crate) struct State {
    pub(super) agents: HashMap<String, AgentEntry>,
    /// Every agent that may have open requests: added when one is recorded, dropped by the
    /// next `sync` that finds it has none, so a `sync` need not walk every agent.
    pub(super) requesting: std::collections::BTreeSet<String>,
    pub(super) conns: HashMap<ConnId, ConnEntry>,
    pub(super) shutting_down: bool,
}

impl State {
    /// Sends a frame to one connection (dropped when it is gone or closed).
    pub fn send_to(&self, conn: ConnId, frame: &Bytes) {
        if let Some(c) = self.conns.get(&conn) {
            c.outbox.push(frame.clone());
        }
    }

    /// Sends an orchestrator event to every connection.
    pub fn broadcast(&self, frame: &Bytes) {
        for c in self.conns.values().filter(|c| c.broadcasts) {
            c.outbox.push(frame.clone());
        }
    }

    /// The nearest agent on the parent chain of `agent_id` (itself included) that has an
    /// interactive attachment, with those connections (docs/architecture.md#attachment-roles-and-hierarchical-routing).
    pub fn responders(&self, agent_id: &str) -> Option<(String, Vec<ConnId>)> {
        let mut cur = Some(agent_id.to_string());
        for _ in 0..64 {
            let id = cur?;
            let entry = self.agents.get(&id)?;
            let conns = entry.interactive_conns();
            if !conns.is_empty() {
                return Some((id, conns));
            }
            cur = entry.manifest.parent_agent_id.clone();
        }
        None
    }

    /// True when `conn` is interactively attached to `agent_id` or one of its ancestors.
    pub fn may_answer(&self, conn: ConnId, agent_id: &str) -> bool {
        let mut cur = Some(agent_id.to_string());
        for _ in 0..64 {
            let Some(id) = cur else { return false };
            let Some(entry) = self.agents.get(&id) else {
                return false;
            };
            if entry
                .attachments
                .get(&conn)
                .is_some_and(|a| a.role == AttachRole::Interactive)
            {
                return true;
            }
            cur = entry.manifest.parent_agent_id.clone();
        }
        false
    }
}

/// State shared by every task of one daemon.
pub(crate) struct Shared {
    /// Settings (not registry state: readable by every module).
    pub(crate) cfg: DaemonConfig,
    pub(crate) launcher: Arc<dyn RuntimeLauncher>,
    pub(crate) store: ManifestStore,
    state: Mutex<State>,
    /// Serializes manifest writes (each writes the latest in-memory copy).
    pub(super) manifest_writes: tokio::sync::Mutex<()>,
    next_id: AtomicU64,
    /// Cancelled when the daemon stops serving.
    pub(crate) shutdown: CancellationToken,
    /// Fired whenever a Runtime exits, so shutdown can wait for the last one.
    pub(super) runtime_exited: tokio::sync::Notify,
    /// Every task that serves a client or does slow work for one; shutdown awaits them.
    pub(crate) tasks: tokio_util::task::TaskTracker,
    /// Bounds the Runtime generations starting at once (`max_concurrent_starts`).
    pub(super) start_slots: Arc<tokio::sync::Semaphore>,
    /// The bytes queued for all client connections together.
    pub(crate) queue_budget: Arc<crate::outbox::QueueBudget>,
}

impl Shared {
    pub fn new(cfg: DaemonConfig, launcher: Arc<dyn RuntimeLauncher>) -> Self {
        let store = ManifestStore::new(&cfg.home);
        let start_slots = Arc::new(tokio::sync::Semaphore::new(
            cfg.max_concurrent_starts.max(1),
        ));
        Shared {
            start_slots,
            queue_budget: crate::outbox::QueueBudget::new(cfg.queue_budget),
            cfg,
            launcher,
            store,
            state: Mutex::new(State::default()),
            manifest_writes: tokio::sync::Mutex::new(()),
            next_id: AtomicU64::new(1),
            shutdown: CancellationToken::new(),
            runtime_exited: tokio::sync::Notify::new(),
            tasks: tokio_util::task::TaskTracker::new(),
        }
    }

    /// Locks the state; a poisoned lock (a panic elsewhere) is taken over, since every
    /// mutation under it leaves the maps consistent.
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A daemon-unique number (connection ids, rewritten command ids).
    pub fn next(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_field_changed_is_encoded_again() {
        let m: AgentManifest = serde_json::from_value(serde_json::json!({
            "version": 1, "agent_id": "agent-01M8YYBZM9BECKC3F60QJZNNDQ",
            "session_id": "sess-01M8YYBZM99MCJ2JP4A2YDJ9PN", "cwd": "/w", "created_at": 1
        }))
        .unwrap();
        let mut e = AgentEntry::new(m);
        let first = e.encoded_info();
        assert_eq!(e.encoded_info(), first, "unchanged: the cached bytes");
        let info = |b: &Bytes| serde_json::from_slice::<AgentInfo>(b).unwrap();
        e.status = AgentStatus::Streaming;
        assert_eq!(info(&e.encoded_info()), e.info());
        e.usage = Some(Usage {
            input: 5,
            ..Default::default()
        });
        assert_eq!(info(&e.encoded_info()), e.info());
        e.manifest.archived = true;
        assert_eq!(info(&e.encoded_info()), e.info());
        e.mode = Some("plan".into());
        assert_eq!(info(&e.encoded_info()), e.info());
        assert_ne!(e.encoded_info(), first);
    }
}
