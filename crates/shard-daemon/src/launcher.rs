//! Starting a Runtime generation. The supervisor asks a [`RuntimeLauncher`] for a
//! process speaking the per-agent protocol on a pair of pipes; the real one spawns
//! `shard agent`, and tests can play the Runtime themselves.

use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite};

/// Everything a Runtime generation is started with.
#[derive(Debug, Clone)]
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
}

/// Validates an agent's settings (mode, provider, model, credentials, configuration)
/// the way a Runtime started with them would, without starting one. The daemon cannot
/// link the Runtime (issue 11 §4), so the binary that builds both injects it; running the
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
        ProcessLauncher { exe, settings }
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
/// 20 agents were created, docs/performance.md). The blocking pool's threads carry the
/// runtime's context, so the child is still reaped by tokio.
async fn spawn_off_executor(
    mut cmd: tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    tokio::task::spawn_blocking(move || cmd.spawn())
        .await
        .map_err(std::io::Error::other)?
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
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.args(Self::args(spec))
            .current_dir(&spec.cwd)
            .env("SHARD_HOME", &spec.home)
            .env("SHARD_AGENT_ID", &spec.agent_id)
            .env("SHARD_DAEMON_SOCK", &spec.daemon_sock)
            .env("SHARD_AGENT_TOKEN", &spec.token)
            .env_remove("SHARD_PARENT_AGENT_ID")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .process_group(0)
            .kill_on_drop(false);
        if let Some(p) = &spec.parent_agent_id {
            cmd.env("SHARD_PARENT_AGENT_ID", p);
        }
        cmd.env_remove(shard_protocol::mcp::CLIENT_MCP_ENV);
        if !spec.mcp_servers.is_empty() {
            let servers =
                serde_json::to_string(&spec.mcp_servers).map_err(std::io::Error::other)?;
            cmd.env(shard_protocol::mcp::CLIENT_MCP_ENV, servers);
        }
        let mut child = spawn_off_executor(cmd).await?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("child has no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("child has no stdout"))?;
        let pid = child.id();
        let exit = Box::pin(wait_exit(child));
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
