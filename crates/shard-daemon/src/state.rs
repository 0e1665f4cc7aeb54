//! The daemon's shared state: registry entries, live Runtimes, attachments, pending
//! requests and connections. One `std::sync::Mutex` guards it; it is never held across
//! an `.await`, and everything done under it is bounded, non-blocking work (queue pushes).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use shard_protocol::command::AttachRole;
use shard_protocol::event::ActivityPhase;
use shard_protocol::types::{AgentInfo, AgentStatus, PermissionDecision, RuntimeState, Usage};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use crate::launcher::RuntimeLauncher;
use crate::manifest::{AgentManifest, ManifestStore};
use crate::outbox::{Outbox, QueueCaps};

/// A client connection's id.
pub type ConnId = u64;

/// Settings of a daemon.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// `SHARD_HOME`.
    pub home: PathBuf,
    /// Inactive Runtimes are reaped after this long.
    pub idle_runtime_timeout: Duration,
    /// A Runtime must send `hello` and `sync` within this long.
    pub ready_timeout: Duration,
    /// A queued request with no responder is denied after this long (§16 item 7).
    pub headless_timeout: Duration,
    /// `agent.kill` waits this long after `abort` before SIGTERM, and again before SIGKILL.
    pub kill_grace: Duration,
    /// Per-client outbound queue caps.
    pub queue: QueueCaps,
    /// Longest accepted inbound line.
    pub max_line: usize,
    /// The `shard` executable that runs `shard agent` (default: the current executable).
    pub agent_exe: Option<PathBuf>,
    /// The `[[headless.allow]]` rules of `config.toml`, for `allow_if_rule_matches`.
    pub headless_allow: Vec<shard_gate::rules::Rule>,
}

impl DaemonConfig {
    /// Defaults for `home`.
    pub fn new(home: PathBuf) -> Self {
        DaemonConfig {
            home,
            idle_runtime_timeout: Duration::from_secs(600),
            ready_timeout: Duration::from_secs(20),
            headless_timeout: Duration::from_secs(600),
            kill_grace: Duration::from_secs(5),
            queue: QueueCaps::default(),
            max_line: 128 * 1024 * 1024,
            agent_exe: None,
            headless_allow: Vec::new(),
        }
    }

    /// Reads the `[headless]` section of `SHARD_HOME/config.toml` (allow rules and the
    /// queue timeout); a config that cannot be read is an error, so the daemon never
    /// starts with a policy other than the one the user wrote.
    pub fn load_headless(&mut self) -> Result<(), String> {
        let config = shard_gate::config::GateSections::load(&self.home)?;
        self.headless_allow = shard_gate::rules::compile_all(&config.headless.allow)
            .map_err(|e| format!("config.toml [headless]: {e}"))?;
        self.headless_timeout = Duration::from_secs(config.headless.timeout_secs);
        Ok(())
    }

    /// The socket path.
    pub fn socket_path(&self) -> PathBuf {
        self.home.join("daemon.sock")
    }
}

/// What a rewritten command id stands for (§16 item 6).
#[derive(Debug)]
pub(crate) enum Inflight {
    /// A client's command: the response goes back to it with its own id.
    Client {
        conn: ConnId,
        client_id: Option<String>,
        command: &'static str,
    },
    /// A `request_sync` the daemon sent; its response is swallowed.
    Sync,
    /// A `request_sync` a client asked for; its response goes back to it.
    ClientSync {
        conn: ConnId,
        client_id: Option<String>,
    },
    /// A command of the daemon's own (`abort` of a kill, headless answers).
    Internal,
}

/// A live (or starting) Runtime generation.
pub(crate) struct LiveRuntime {
    pub epoch: u64,
    pub pid: Option<u32>,
    /// Lines to the Runtime's stdin; `None` once stdin is closed (terminate/reap).
    pub stdin: Option<mpsc::UnboundedSender<Bytes>>,
    pub ready: bool,
    pub capabilities: Vec<String>,
    pub inflight: HashMap<String, Inflight>,
    /// `request_sync`s sent and not yet answered: a `sync` meanwhile is a reply.
    pub sync_requests: u32,
    pub idle_since: Option<Instant>,
    pub terminate_when_idle: bool,
    pub stopping: bool,
    pub killed: bool,
    pub start_failure: Option<String>,
    pub start_waiters: Vec<oneshot::Sender<Result<(), String>>>,
    pub exit_waiters: Vec<oneshot::Sender<()>>,
    /// New work that arrived while this generation was stopping: start the next one.
    pub restart_waiters: Vec<oneshot::Sender<Result<(), String>>>,
}

/// One client watching an agent.
pub(crate) struct Attachment {
    pub role: AttachRole,
    /// Events are held back until a `sync` reaches this client (the attach handshake).
    pub awaiting_sync: bool,
    /// The `agent.attach` response still owed (the client's id), sent right before the sync.
    pub attach_reply: Option<Option<String>>,
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
    pub request_id: String,
    /// The request event, tagged with the requesting agent's id.
    pub value: serde_json::Value,
    pub kind: PendingKind,
    /// A winner was forwarded; later answers are dropped silently.
    pub answered: bool,
    /// Connections (also of ancestors) that were shown it: they get the `*_resolved`.
    pub delivered_to: HashSet<ConnId>,
    pub headless_timer: Option<AbortHandle>,
}

/// One durable agent and whatever is live of it.
pub(crate) struct AgentEntry {
    pub manifest: AgentManifest,
    pub status: AgentStatus,
    pub runtime_state: RuntimeState,
    pub mode: Option<String>,
    pub usage: Option<Usage>,
    pub phase: ActivityPhase,
    pub last_epoch: Option<u64>,
    pub rt: Option<LiveRuntime>,
    pub attachments: HashMap<ConnId, Attachment>,
    pub pending: Vec<Pending>,
}

impl AgentEntry {
    pub fn new(manifest: AgentManifest) -> Self {
        AgentEntry {
            manifest,
            status: AgentStatus::Idle,
            runtime_state: RuntimeState::Stopped,
            mode: None,
            usage: None,
            phase: ActivityPhase::Idle,
            last_epoch: None,
            rt: None,
            attachments: HashMap::new(),
            pending: Vec::new(),
        }
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
        }
    }

    pub fn interactive_conns(&self) -> Vec<ConnId> {
        self.attachments
            .iter()
            .filter(|(_, a)| a.role == AttachRole::Interactive)
            .map(|(c, _)| *c)
            .collect()
    }
}

/// One client connection.
pub(crate) struct ConnEntry {
    pub outbox: Arc<Outbox>,
}

/// Everything under the lock.
#[derive(Default)]
pub(crate) struct State {
    pub agents: HashMap<String, AgentEntry>,
    pub conns: HashMap<ConnId, ConnEntry>,
    pub shutting_down: bool,
}

impl State {
    /// Answers a client's command with a failed `response`.
    pub fn reply_err(
        &self,
        conn: ConnId,
        id: Option<String>,
        command: Option<&str>,
        code: shard_protocol::ErrorCode,
        message: impl Into<String>,
    ) {
        let event = shard_protocol::Event::err(id, command, code, message);
        self.send_to(conn, &crate::broker::frame(&event));
    }

    /// Sends a frame to one connection (dropped when it is gone or closed).
    pub fn send_to(&self, conn: ConnId, frame: &Bytes) {
        if let Some(c) = self.conns.get(&conn) {
            c.outbox.push(frame.clone());
        }
    }

    /// Sends an orchestrator event to every connection.
    pub fn broadcast(&self, frame: &Bytes) {
        for c in self.conns.values() {
            c.outbox.push(frame.clone());
        }
    }

    /// The nearest agent on the parent chain of `agent_id` (itself included) that has an
    /// interactive attachment, with those connections (ARCHITECTURE §6.3).
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
    pub cfg: DaemonConfig,
    pub launcher: Arc<dyn RuntimeLauncher>,
    pub store: ManifestStore,
    state: Mutex<State>,
    next_id: AtomicU64,
    pub shutdown: CancellationToken,
    /// Fired whenever a Runtime exits, so shutdown can wait for the last one.
    pub runtime_exited: tokio::sync::Notify,
}

impl Shared {
    pub fn new(cfg: DaemonConfig, launcher: Arc<dyn RuntimeLauncher>) -> Self {
        let store = ManifestStore::new(&cfg.home);
        Shared {
            cfg,
            launcher,
            store,
            state: Mutex::new(State::default()),
            next_id: AtomicU64::new(1),
            shutdown: CancellationToken::new(),
            runtime_exited: tokio::sync::Notify::new(),
        }
    }

    /// Locks the state; a poisoned lock (a panic elsewhere) is taken over, since every
    /// mutation under it leaves the maps consistent.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn next(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}
