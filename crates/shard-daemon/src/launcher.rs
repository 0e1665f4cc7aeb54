//! Starting a Runtime generation. The supervisor asks a [`RuntimeLauncher`] for a
//! process speaking the per-agent protocol on a pair of pipes; the real one spawns
//! `shard agent`, and tests can play the Runtime themselves.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite};

/// Everything a Runtime generation is started with. Its `Debug` leaves the per-Runtime
/// token out, so a spec in a log or a panic message carries no secret.
#[derive(Clone)]
pub struct LaunchSpec {
    /// Durable agent id.
    pub agent_id: String,
    /// Parent, for a subagent.
    pub parent_agent_id: Option<String>,
    /// Session to open (created by the Runtime when new).
    pub session_id: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// Provider, passed at first start (and every start of a scripted agent, whose
    /// recorded provider is the same).
    pub provider: Option<String>,
    /// Model, passed only at first start (§16 item 13).
    pub model: Option<String>,
    /// Mode, passed only at first start.
    pub mode: Option<String>,
    /// Script file of the `scripted` provider.
    pub script: Option<String>,
    /// Tool allow-list.
    pub tools: Option<Vec<String>>,
    /// A file whose text replaces the base system prompt (every start).
    pub system_prompt_file: Option<PathBuf>,
    /// The client's MCP servers (every start), passed in the environment: they hold
    /// secrets, and a command line is readable by every user.
    pub mcp_servers: Vec<shard_protocol::mcp::ClientMcpServer>,
    /// `SHARD_HOME`.
    pub home: PathBuf,
    /// The daemon socket, for the Runtime's own calls back.
    pub daemon_sock: PathBuf,
    /// Per-Runtime secret (§16 item 13); never logged.
    pub token: String,
    /// Runtime generation.
    pub epoch: u64,
    /// The `[hosts.NAME]` the Runtime runs on; `None`: this machine.
    pub host: Option<String>,
}

impl std::fmt::Debug for LaunchSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaunchSpec")
            .field("agent_id", &self.agent_id)
            .field("parent_agent_id", &self.parent_agent_id)
            .field("session_id", &self.session_id)
            .field("cwd", &self.cwd)
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("mode", &self.mode)
            .field("script", &self.script)
            .field("tools", &self.tools)
            .field("system_prompt_file", &self.system_prompt_file)
            .field("mcp_servers", &self.mcp_servers)
            .field("home", &self.home)
            .field("daemon_sock", &self.daemon_sock)
            .field("token", &"<redacted>")
            .field("epoch", &self.epoch)
            .field("host", &self.host)
            .finish()
    }
}

/// How a Runtime process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExitInfo {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal, when it was killed by one.
    pub signal: Option<i32>,
    /// What the launcher knows the end meant (a remote Runtime's connection was lost).
    pub cause: Option<&'static str>,
}

impl ExitInfo {
    /// A clean exit (code 0).
    pub fn is_clean(&self) -> bool {
        self.code == Some(0)
    }

    /// One line for `agent_exited.reason`.
    pub fn describe(&self) -> String {
        let how = match (self.code, self.signal) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            _ => "exited".into(),
        };
        match self.cause {
            Some(cause) => format!("{cause} ({how})"),
            None => how,
        }
    }
}

/// A started Runtime: its pipes, its pid and a future for its end.
pub struct LaunchedRuntime {
    /// Process id, for signals.
    pub pid: Option<u32>,
    /// The Runtime's stdin.
    pub stdin: Pin<Box<dyn AsyncWrite + Send>>,
    /// The Runtime's stdout.
    pub stdout: Pin<Box<dyn AsyncRead + Send>>,
    /// Resolves when the process has ended.
    pub exit: BoxFuture<'static, ExitInfo>,
}

/// Starts Runtime generations.
#[async_trait]
pub trait RuntimeLauncher: Send + Sync {
    /// Starts one generation.
    async fn launch(&self, spec: &LaunchSpec) -> std::io::Result<LaunchedRuntime>;

    /// Checks, before an agent is created, that `spec` names a mode, provider and model
    /// a Runtime would accept; `Err` says what is wrong and what would work, `Ok` holds
    /// a notice for the client (a model the catalog lacks). The default accepts
    /// everything (launchers that cannot check).
    async fn check(&self, _spec: &LaunchSpec) -> Result<Option<String>, String> {
        Ok(None)
    }

    /// Runs the program and arguments `argv` on host `host` through the link its
    /// Runtimes use (an `ssh` host's shared connection, a `command` host's prefix), each
    /// word arriving there as one literal argument, and waits for it. Workspaces on a host
    /// run their git this way (docs/hosts.md). The default knows no host.
    async fn run_on_host(&self, host: &str, _argv: &[String]) -> Result<HostOutput, HostRunError> {
        Err(HostRunError::NotStarted(format!(
            "host {host}: this daemon cannot run commands on hosts"
        )))
    }
}

/// What a command run on a host with [`RuntimeLauncher::run_on_host`] produced.
#[derive(Debug, Clone, Default)]
pub struct HostOutput {
    /// Exit code on the host (`None`: ended by a signal).
    pub code: Option<i32>,
    /// Its stdout.
    pub stdout: Vec<u8>,
    /// Its stderr.
    pub stderr: Vec<u8>,
}

/// Why a command could not be run on a host. The two cases differ in what the caller
/// may assume: [`NotStarted`](HostRunError::NotStarted) ran nothing there, so there is
/// nothing to undo; after [`Lost`](HostRunError::Lost) the command may have run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HostRunError {
    /// The host could not be reached (or is not configured): nothing ran there.
    #[error("{0}")]
    NotStarted(String),
    /// The connection ended while the command ran: it may have run, whole or in part.
    #[error("{0}")]
    Lost(String),
}

/// Validates an agent's settings (mode, provider, model, credentials, configuration)
/// the way a Runtime started with them would, without starting one. The daemon cannot
/// link the Runtime, so the binary that builds both injects it; running the
/// Runtime's own check in-process spares `agent.create` a second process start, which
/// on a busy machine was what stalled every other client (docs/performance.md).
pub trait SettingsCheck: Send + Sync {
    /// Blocking (it reads configuration files): the daemon calls it on the blocking pool.
    /// `Err` says what is wrong and what would work, in the Runtime's own words; `Ok`
    /// holds the notice owed for a model the catalog lacks.
    fn check(&self, spec: &LaunchSpec) -> Result<Option<String>, String>;

    /// What a Runtime on another host is sent before anything else (`runtime.settings`):
    /// provider keys and base URLs, the daemon's policy tables. Blocking, like
    /// [`check`](Self::check). The default forwards nothing.
    fn forwarded(
        &self,
        spec: &LaunchSpec,
    ) -> Result<shard_protocol::remote::RuntimeSettings, String> {
        Ok(shard_protocol::remote::RuntimeSettings::new(
            spec.agent_id.clone(),
        ))
    }
}

/// Spawns `<exe> agent …` as a child process in its own process group, stderr to
/// `SHARD_HOME/logs/<agent_id>.log`; settings are checked in-process by a
/// [`SettingsCheck`].
#[derive(Clone)]
pub struct ProcessLauncher {
    exe: PathBuf,
    settings: Arc<dyn SettingsCheck>,
    reaper: Arc<Reaper>,
}

impl std::fmt::Debug for ProcessLauncher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessLauncher")
            .field("exe", &self.exe)
            .finish_non_exhaustive()
    }
}

impl ProcessLauncher {
    /// A launcher running `exe agent`, checking settings with `settings`.
    pub fn new(exe: PathBuf, settings: Arc<dyn SettingsCheck>) -> Self {
        ProcessLauncher {
            exe,
            settings,
            reaper: Arc::default(),
        }
    }

    /// The arguments after the executable.
    pub fn args(spec: &LaunchSpec) -> Vec<String> {
        let mut a = vec![
            "agent".to_string(),
            "--cwd".into(),
            spec.cwd.display().to_string(),
            "--session".into(),
            spec.session_id.clone(),
        ];
        let mut opt = |flag: &str, v: &Option<String>| {
            if let Some(v) = v {
                a.push(flag.into());
                a.push(v.clone());
            }
        };
        opt("--provider", &spec.provider);
        opt("--model", &spec.model);
        opt("--mode", &spec.mode);
        opt("--script", &spec.script);
        if let Some(f) = &spec.system_prompt_file {
            a.push("--system-prompt-file".into());
            a.push(f.display().to_string());
        }
        if let Some(tools) = &spec.tools {
            a.push("--tools".into());
            a.push(tools.join(","));
        }
        a
    }
}

/// Spawns `cmd` on a blocking-pool thread. The spawning thread is suspended until the
/// child has exec'd (`vfork` semantics of `posix_spawn`), and with many processes
/// starting on a busy machine the child may wait for a CPU for tens of milliseconds:
/// on an executor thread that stalled every connection (`agent.list` p99 of 34 ms while
/// 20 agents were created, docs/performance.md).
async fn spawn_off_executor(
    mut cmd: std::process::Command,
) -> std::io::Result<std::process::Child> {
    tokio::task::spawn_blocking(move || cmd.spawn())
        .await
        .map_err(std::io::Error::other)?
}

/// Learns when Runtime processes end without holding a descriptor per process: one
/// `SIGCHLD` listener for the whole daemon checks (`waitpid(pid, WNOHANG)`) each
/// Runtime still running. A tokio `Child` would keep a pidfd open per process, a third
/// of a live Runtime's descriptors (docs/decisions.md "Daemon at
/// thousands of agents").
#[derive(Default)]
struct Reaper {
    waiting:
        std::sync::Mutex<std::collections::HashMap<i32, tokio::sync::oneshot::Sender<ExitInfo>>>,
    listening: std::sync::OnceLock<()>,
}

impl Reaper {
    /// Starts the `SIGCHLD` listener (once, on the calling runtime) before any child is
    /// spawned, so no exit can go unnoticed.
    fn listen(self: &Arc<Self>) -> std::io::Result<()> {
        if self.listening.get().is_some() {
            return Ok(());
        }
        let mut sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())?;
        if self.listening.set(()).is_err() {
            return Ok(());
        }
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            while sigchld.recv().await.is_some() {
                let Some(reaper) = weak.upgrade() else { break };
                reaper.reap();
            }
        });
        Ok(())
    }

    /// Registers a spawned child; the receiver resolves with how it ended.
    fn watch(&self, pid: u32) -> tokio::sync::oneshot::Receiver<ExitInfo> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Ok(pid) = i32::try_from(pid) {
            self.lock().insert(pid, tx);
        }
        // It may have ended before it was registered.
        self.reap();
        rx
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        std::collections::HashMap<i32, tokio::sync::oneshot::Sender<ExitInfo>>,
    > {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Collects every watched child that has ended. `SIGCHLD`s coalesce, so each one
    /// checks them all: one cheap syscall per live Runtime.
    fn reap(&self) {
        use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
        let mut waiting = self.lock();
        let mut ended = Vec::new();
        for &pid in waiting.keys() {
            let info = match waitpid(nix::unistd::Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(_, code)) => ExitInfo {
                    code: Some(code),
                    signal: None,
                    cause: None,
                },
                Ok(WaitStatus::Signaled(_, sig, _)) => ExitInfo {
                    code: None,
                    signal: Some(sig as i32),
                    cause: None,
                },
                Ok(_) => continue,
                Err(e) => {
                    // ECHILD: someone else reaped it; it has ended all the same.
                    tracing::warn!(pid, error = %e, "waiting for a runtime failed");
                    ExitInfo::default()
                }
            };
            ended.push((pid, info));
        }
        for (pid, info) in ended {
            if let Some(tx) = waiting.remove(&pid) {
                let _ = tx.send(info);
            }
        }
    }
}

#[async_trait]
impl RuntimeLauncher for ProcessLauncher {
    async fn check(&self, spec: &LaunchSpec) -> Result<Option<String>, String> {
        let settings = Arc::clone(&self.settings);
        let spec = spec.clone();
        tokio::task::spawn_blocking(move || settings.check(&spec))
            .await
            .map_err(|e| format!("the settings check failed: {e}"))?
    }

    async fn launch(&self, spec: &LaunchSpec) -> std::io::Result<LaunchedRuntime> {
        let log = open_agent_log(&spec.home, &spec.agent_id).await?;
        // One socket carries both directions (the Runtime's stdin and stdout): a live
        // Runtime costs the daemon one descriptor instead of two pipes and a pidfd.
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
        let theirs_out = theirs.try_clone()?;
        let mut cmd = std::process::Command::new(&self.exe);
        cmd.args(Self::args(spec))
            .current_dir(&spec.cwd)
            .env("SHARD_HOME", &spec.home)
            .env("SHARD_AGENT_ID", &spec.agent_id)
            .env("SHARD_DAEMON_SOCK", &spec.daemon_sock)
            .env("SHARD_AGENT_TOKEN", &spec.token)
            .env_remove("SHARD_PARENT_AGENT_ID")
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
            .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs_out)))
            .stderr(Stdio::from(log))
            .process_group(0);
        if let Some(p) = &spec.parent_agent_id {
            cmd.env("SHARD_PARENT_AGENT_ID", p);
        }
        cmd.env_remove(shard_protocol::mcp::CLIENT_MCP_ENV);
        if !spec.mcp_servers.is_empty() {
            let servers =
                serde_json::to_string(&spec.mcp_servers).map_err(std::io::Error::other)?;
            cmd.env(shard_protocol::mcp::CLIENT_MCP_ENV, servers);
        }
        self.reaper.listen()?;
        // The command (and with it the child's ends of the socket) is dropped once spawned.
        let child = spawn_off_executor(cmd).await?;
        let pid = child.id();
        let exited = self.reaper.watch(pid);
        drop(child);
        ours.set_nonblocking(true)?;
        let (stdout, stdin) = tokio::net::UnixStream::from_std(ours)?.into_split();
        let exit = Box::pin(async move { exited.await.unwrap_or_default() });
        let pid = Some(pid);
        Ok(LaunchedRuntime {
            pid,
            stdin: Box::pin(stdin),
            stdout: Box::pin(stdout),
            exit,
        })
    }
}

/// Opens `SHARD_HOME/logs/<agent_id>.log` (owner-only) for a Runtime's stderr.
pub(crate) async fn open_agent_log(
    home: &std::path::Path,
    agent_id: &str,
) -> std::io::Result<std::fs::File> {
    let logs = home.join("logs");
    let logs2 = logs.clone();
    tokio::task::spawn_blocking(move || crate::fsutil::ensure_private_dir(&logs2))
        .await
        .map_err(std::io::Error::other)??;
    Ok(tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(logs.join(format!("{agent_id}.log")))
        .await?
        .into_std()
        .await)
}

/// How a Runtime's process ended, once it has.
pub(crate) async fn wait_exit(mut child: tokio::process::Child) -> ExitInfo {
    use std::os::unix::process::ExitStatusExt;
    match child.wait().await {
        Ok(st) => ExitInfo {
            code: st.code(),
            signal: st.signal(),
            cause: None,
        },
        Err(e) => {
            tracing::warn!(error = %e, "waiting for a runtime failed");
            ExitInfo::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_in_a_log_never_shows_its_token() {
        let spec = LaunchSpec {
            agent_id: "agt_1".into(),
            parent_agent_id: None,
            session_id: "ses_1".into(),
            cwd: PathBuf::from("/w"),
            provider: None,
            model: None,
            mode: None,
            script: None,
            tools: None,
            system_prompt_file: None,
            mcp_servers: Vec::new(),
            home: PathBuf::from("/h"),
            daemon_sock: PathBuf::from("/h/daemon.sock"),
            token: "tok-5ecret-value".into(),
            epoch: 3,
            host: None,
        };
        let shown = format!("{spec:?}");
        assert!(!shown.contains("tok-5ecret-value"), "{shown}");
        assert!(
            shown.contains("agt_1") && shown.contains("<redacted>"),
            "{shown}"
        );
    }
}
