//! The daemon's settings.

use std::path::PathBuf;
use std::time::Duration;

use crate::outbox::QueueCaps;

/// Settings of a daemon.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// `SHARD_HOME`.
    pub home: PathBuf,
    /// Inactive Runtimes are reaped after this long.
    pub idle_runtime_timeout: Duration,
    /// An inactive Runtime that an interactive client is attached to is reaped only after
    /// this long (never sooner than `idle_runtime_timeout`): a person with a client open
    /// expects the agent warm, its MCP servers and sandbox started.
    pub attached_idle_timeout: Duration,
    /// A Runtime must send `hello` and `sync` within this long.
    pub ready_timeout: Duration,
    /// A queued request with no responder is denied after this long (§16 item 7).
    pub headless_timeout: Duration,
    /// `agent.kill` waits this long after `abort` before SIGTERM, and again before SIGKILL.
    pub kill_grace: Duration,
    /// Per-client outbound queue caps.
    pub queue: QueueCaps,
    /// Most bytes queued for all clients together; past it the clients with the longest
    /// backlogs are disconnected first (`CLIENT_TOO_SLOW`).
    pub queue_budget: usize,
    /// Longest accepted line, on every connection and from every Runtime (one limit for
    /// the whole path).
    pub max_line: usize,
    /// Most partial-line bytes buffered across all connections at once.
    pub max_inbound_buffered: usize,
    /// Most connections held at once, per transport.
    pub max_connections: usize,
    /// The `shard` executable that runs `shard agent` (default: the current executable).
    pub agent_exe: Option<PathBuf>,
    /// The `[[headless.allow]]` rules of `config.toml`, for `allow_if_rule_matches`.
    pub headless_allow: Vec<shard_gate::rules::Rule>,
    /// Subagent launch limits (tasks per job, depth).
    pub launch_limits: LaunchLimits,
    /// `[workspaces] root` of `config.toml`; None: `SHARD_HOME/workspaces`.
    pub workspaces_root: Option<PathBuf>,
    /// Most Runtime generations starting at once (spawned and not yet ready); more wait
    /// for a slot. Starting is CPU-bound (exec of a large binary, configuration, session),
    /// so on a small machine a burst of starts at once is not faster than a few at a time,
    /// and it starves the daemon's own threads of CPU (docs/performance.md).
    pub max_concurrent_starts: usize,
    /// `[hosts.NAME]` of `config.toml`: where agents created with `host` run.
    pub hosts: std::collections::BTreeMap<String, shard_gate::hosts::HostConfig>,
}

impl DaemonConfig {
    /// Defaults for `home`.
    pub fn new(home: PathBuf) -> Self {
        DaemonConfig {
            home,
            idle_runtime_timeout: Duration::from_secs(600),
            attached_idle_timeout: Duration::from_secs(3600),
            ready_timeout: Duration::from_secs(20),
            headless_timeout: Duration::from_secs(600),
            kill_grace: Duration::from_secs(5),
            queue: QueueCaps::default(),
            queue_budget: 512 * 1024 * 1024,
            max_line: shard_protocol::codec::DEFAULT_MAX_LINE,
            max_inbound_buffered: 256 * 1024 * 1024,
            max_connections: 4096,
            agent_exe: None,
            headless_allow: Vec::new(),
            launch_limits: LaunchLimits::default(),
            workspaces_root: None,
            max_concurrent_starts: default_concurrent_starts(),
            hosts: Default::default(),
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

/// One per CPU (at least 2): a start is CPU-bound, so more at once finish no sooner and
/// only push the daemon's own threads down the run queue (docs/decisions.md, "Bounded
/// Runtime starts").
fn default_concurrent_starts() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

/// Launch limits (docs/subagents.md `launch_policy`).
#[derive(Debug, Clone, Copy)]
pub struct LaunchLimits {
    /// Most tasks in one job.
    pub max_tasks: usize,
    /// Deepest a child may be (a top-level agent is depth 0).
    pub max_depth: u32,
}

impl Default for LaunchLimits {
    fn default() -> Self {
        LaunchLimits {
            max_tasks: 8,
            max_depth: 2,
        }
    }
}
