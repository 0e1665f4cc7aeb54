//! Runtimes on other hosts (docs/hosts.md): `[hosts.NAME]` of `config.toml` names a
//! machine reached with OpenSSH or a container reached with a command prefix, and an
//! agent created with `host` runs its Runtime there, at the end of a longer pipe. The
//! supervisor cannot tell the difference: a generation is one process with stdio — here
//! the local `ssh` (or `podman exec -i …`) whose far end is `shard agent --remote`.
//!
//! [`HostsLauncher`] sends a spec naming a host through that host's [`link::Link`] and
//! every other spec to the local launcher. The first line a remote Runtime reads is
//! `runtime.settings`: the keys go over the pipe, never on a command line, in an
//! environment variable or in a file on the host.

mod env;
mod install;
mod link;
mod master;
mod quote;
mod run;

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use shard_gate::hosts::HostConfig;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

pub use install::{InstallReport, install};
pub(crate) use master::last_line;

use crate::launcher::{
    HostOutput, HostRunError, LaunchSpec, LaunchedRuntime, ProcessLauncher, RuntimeLauncher,
    SettingsCheck,
};

/// Longest wait for a host's answer to the settings check.
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);
/// How many times one start moves to another connection after a refused session.
const MAX_REFUSED: usize = 3;
/// What OpenSSH's mux client says when the server refuses a session on a connection
/// (sshd's `MaxSessions`), and what a direct client says.
const REFUSALS: [&str; 2] = ["Session open refused", "open failed"];

/// Starts Runtimes on the daemon's machine or, for a spec naming a host, on that host.
pub struct HostsLauncher {
    local: Arc<dyn RuntimeLauncher>,
    hosts: BTreeMap<String, HostConfig>,
    home: PathBuf,
    settings: Arc<dyn SettingsCheck>,
    /// One link per host, started at its first use.
    links: Mutex<HashMap<String, link::Link>>,
    /// Settings checks that passed, per host: the link generation they hold for and,
    /// by digest of the checked flags and settings, the notice each gave.
    checked: Mutex<HashMap<String, Passed>>,
}

/// The settings checks that passed on one host within one link generation: the
/// generation and, by digest of what was checked, the notice each gave.
type Passed = (u64, HashMap<[u8; 32], Option<String>>);

/// A command for the host, the settings line it reads first, and its session's place.
struct Prepared {
    cmd: tokio::process::Command,
    line: Vec<u8>,
    ready: link::Ready,
    /// What a settings check depends on: the flags but the session, the settings but
    /// the agent id.
    digest: [u8; 32],
}

/// What came of starting a Runtime on a host.
enum Started {
    Runtime(LaunchedRuntime),
    /// The host refused the session on that connection.
    Refused(Option<link::Lease>),
}

impl HostsLauncher {
    /// Wraps `local` with the hosts of `config.toml`; `settings` gives the provider
    /// settings forwarded to remote Runtimes.
    pub fn new(
        local: Arc<dyn RuntimeLauncher>,
        hosts: BTreeMap<String, HostConfig>,
        home: PathBuf,
        settings: Arc<dyn SettingsCheck>,
    ) -> Self {
        HostsLauncher {
            local,
            hosts,
            home,
            settings,
            links: Mutex::new(HashMap::new()),
            checked: Mutex::new(HashMap::new()),
        }
    }

    fn host(&self, name: &str) -> Result<&HostConfig, String> {
        self.hosts
            .get(name)
            .ok_or_else(|| unknown_host(name, &self.hosts))
    }

    fn link(&self, name: &str, cfg: &HostConfig) -> link::Link {
        let mut links = self
            .links
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        links
            .entry(name.to_string())
            .or_insert_with(|| link::Link::spawn(name.to_string(), cfg.clone(), &self.home))
            .clone()
    }

    /// A session's place on a ready link, the settings line and the
    /// `shard agent --remote` command for `spec` (`extra` appended to its arguments).
    async fn prepare(
        &self,
        name: &str,
        spec: &LaunchSpec,
        extra: &[&str],
    ) -> Result<Prepared, String> {
        let cfg = self.host(name)?.clone();
        let ready = self.link(name, &cfg).ready().await?;
        let source = Arc::clone(&self.settings);
        let spec2 = spec.clone();
        let mut settings = tokio::task::spawn_blocking(move || source.forwarded(&spec2))
            .await
            .map_err(|e| e.to_string())??;
        settings.home = cfg.home.clone();
        let mut args = ProcessLauncher::args(spec);
        args.insert(1, "--remote".into());
        args.extend(extra.iter().map(|a| a.to_string()));
        let mut digest = Sha256::new();
        for (i, a) in args.iter().enumerate() {
            // `agent --remote --cwd C --session S`: the session is not checked.
            if i != 5 {
                digest.update(a.as_bytes());
                digest.update([0]);
            }
        }
        let mut anonymous = settings.clone();
        anonymous.agent_id = String::new();
        digest.update(anonymous.to_line());
        let cmd = master::remote_command(&cfg, ready.ctl.as_deref(), &args)?;
        Ok(Prepared {
            cmd,
            line: settings.to_line(),
            ready,
            digest: digest.finalize().into(),
        })
    }

    /// The notice of a settings check that passed on this link generation.
    fn checked(&self, name: &str, generation: u64, digest: &[u8; 32]) -> Option<Option<String>> {
        let checked = self
            .checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match checked.get(name) {
            Some((g, passed)) if *g == generation => passed.get(digest).cloned(),
            _ => None,
        }
    }

    fn remember(&self, name: &str, generation: u64, digest: [u8; 32], notice: Option<String>) {
        let mut checked = self
            .checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = checked
            .entry(name.to_string())
            .or_insert_with(|| (generation, HashMap::new()));
        if entry.0 != generation {
            *entry = (generation, HashMap::new());
        }
        entry.1.insert(digest, notice);
    }

    /// The Runtime's own start check, run on the host with the forwarded settings: an
    /// unknown mode, provider or model, or a cwd the host lacks, is one error and nothing
    /// is created. A check that passed holds until the host's link reconnects.
    async fn check_remote(&self, name: &str, spec: &LaunchSpec) -> Result<Option<String>, String> {
        for _ in 0..=MAX_REFUSED {
            let Prepared {
                mut cmd,
                line,
                ready,
                digest,
            } = self.prepare(name, spec, &["--check"]).await?;
            if let Some(notice) = self.checked(name, ready.generation, &digest) {
                return Ok(notice);
            }
            master::all_piped(&mut cmd);
            let mut child = cmd
                .spawn()
                .map_err(|e| format!("cannot run the host's command: {e}"))?;
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(&line).await;
            }
            let out = tokio::time::timeout(CHECK_TIMEOUT, child.wait_with_output())
                .await
                .map_err(|_| format!("host {name} did not answer the settings check in time"))?
                .map_err(|e| e.to_string())?;
            if refused(out.status.code(), &out.stdout, &out.stderr) {
                if let Some(lease) = ready.lease {
                    lease.refused();
                }
                continue;
            }
            let said = master::last_line(&out.stderr);
            let said = said
                .strip_prefix("shard agent: ")
                .unwrap_or(&said)
                .to_string();
            if out.status.success() {
                let notice = (!said.is_empty()).then_some(said);
                self.remember(name, ready.generation, digest, notice.clone());
                return Ok(notice);
            }
            // The Runtime's fatal `error` event is the reason, in its own words.
            let fatal = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|v| v["type"] == "error")
                .and_then(|v| v["message"].as_str().map(str::to_string));
            return Err(format!("on host {name}: {}", fatal.unwrap_or(said)));
        }
        Err(refused_everywhere(name))
    }

    async fn launch_remote(
        &self,
        name: &str,
        spec: &LaunchSpec,
    ) -> Result<LaunchedRuntime, String> {
        for _ in 0..=MAX_REFUSED {
            let prepared = self.prepare(name, spec, &[]).await?;
            match self.start(name, spec, prepared).await? {
                Started::Runtime(rt) => return Ok(rt),
                Started::Refused(lease) => {
                    if let Some(lease) = lease {
                        lease.refused();
                    }
                }
            }
        }
        Err(refused_everywhere(name))
    }

    /// Starts the Runtime and waits for its first output: a session the host refused
    /// ends before any, with ssh's word for it in the agent's log.
    async fn start(
        &self,
        name: &str,
        spec: &LaunchSpec,
        prepared: Prepared,
    ) -> Result<Started, String> {
        let Prepared {
            mut cmd,
            line,
            ready,
            ..
        } = prepared;
        let ssh = self.host(name)?.ssh.is_some();
        let mut log = crate::launcher::open_agent_log(&self.home, &spec.agent_id)
            .await
            .map_err(|e| format!("cannot open the agent's log: {e}"))?;
        let log_start = log.seek(SeekFrom::End(0)).unwrap_or(0);
        let log_path = self
            .home
            .join("logs")
            .join(format!("{}.log", spec.agent_id));
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .process_group(0)
            .kill_on_drop(false);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run the host's command: {e}"))?;
        // Until the supervisor has it, an abandoned start (the launch timed out, the
        // settings could not be sent) must not leave its ssh running.
        let mut abandoned = Abandoned(child.id());
        let mut stdin = child.stdin.take().ok_or("the host command has no stdin")?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the host command has no stdout")?;
        // The keys travel first, over the pipe; nothing else reaches the host with them.
        stdin
            .write_all(&line)
            .await
            .map_err(|e| format!("cannot send the settings to host {name}: {e}"))?;
        let mut stdout = tokio::io::BufReader::new(stdout);
        let spoke = tokio::select! {
            r = stdout.fill_buf() => matches!(r, Ok(b) if !b.is_empty()),
            _ = child.wait() => {
                // Reaped: its pid may be another process's now.
                abandoned.0 = None;
                false
            }
        };
        if !spoke && ssh {
            // Ended before a word: the output it did write is still in the pipe.
            let late = tokio::time::timeout(Duration::from_secs(2), stdout.fill_buf()).await;
            let spoke_late = matches!(late, Ok(Ok(b)) if !b.is_empty());
            let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            let code = match status {
                Ok(Ok(s)) => {
                    abandoned.0 = None;
                    s.code()
                }
                _ => None,
            };
            if !spoke_late && code == Some(255) {
                let said = tokio::task::spawn_blocking(move || read_from(&log_path, log_start))
                    .await
                    .unwrap_or_default();
                if refused(code, &[], said.as_bytes()) {
                    tracing::warn!(
                        host = name,
                        "the host refused a session: trying another connection"
                    );
                    return Ok(Started::Refused(ready.lease));
                }
            }
        }
        abandoned.0 = None;
        let pid = child.id();
        let host = name.to_string();
        let lease = ready.lease;
        let exit = Box::pin(async move {
            let mut info = crate::launcher::wait_exit(child).await;
            // The session's place on its connection is free again.
            drop(lease);
            // 255 is ssh's own failure: the channel, not the Runtime, ended.
            if info.code == Some(255) && ssh {
                tracing::warn!(host, "the connection to the Runtime's host was lost");
                info.cause = Some("the connection to its host was lost");
            }
            info
        });
        Ok(Started::Runtime(LaunchedRuntime {
            pid,
            stdin: Box::pin(stdin),
            stdout: Box::pin(stdout),
            exit,
        }))
    }
}

/// Kills (SIGKILL) the process it names when dropped, unless cleared first.
struct Abandoned(Option<u32>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// True when ssh ended (255) before any output because the host refused the session.
fn refused(code: Option<i32>, stdout: &[u8], stderr: &[u8]) -> bool {
    let said = String::from_utf8_lossy(stderr);
    code == Some(255) && stdout.is_empty() && REFUSALS.iter().any(|r| said.contains(r))
}

/// The error when a host keeps refusing new sessions.
fn refused_everywhere(name: &str) -> String {
    format!(
        "host {name} refused a new session on every connection tried: its sshd allows fewer sessions per connection (MaxSessions) than [hosts.{name}] max_sessions says"
    )
}

/// At most 4 KiB a log gained from `start` on.
fn read_from(path: &std::path::Path, start: u64) -> String {
    let mut out = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path)
        && f.seek(SeekFrom::Start(start)).is_ok()
    {
        let _ = f.take(4096).read_to_end(&mut out);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The error for a host `config.toml` does not define.
pub(crate) fn unknown_host(name: &str, hosts: &BTreeMap<String, HostConfig>) -> String {
    let known: Vec<&str> = hosts.keys().map(String::as_str).collect();
    format!(
        "unknown host {name:?}: add [hosts.{name}] to SHARD_HOME/config.toml{}",
        if known.is_empty() {
            String::new()
        } else {
            format!(" (configured: {})", known.join(", "))
        }
    )
}

#[async_trait]
impl RuntimeLauncher for HostsLauncher {
    async fn launch(&self, spec: &LaunchSpec) -> std::io::Result<LaunchedRuntime> {
        match &spec.host {
            None => self.local.launch(spec).await,
            Some(name) => self
                .launch_remote(name, spec)
                .await
                .map_err(std::io::Error::other),
        }
    }

    /// A remote agent's settings are judged on its host, with its configuration: the
    /// host must answer, run a `shard` of this protocol and accept the mode, provider,
    /// model and cwd, else the create makes nothing.
    async fn check(&self, spec: &LaunchSpec) -> Result<Option<String>, String> {
        match &spec.host {
            None => self.local.check(spec).await,
            Some(name) => self.check_remote(name, spec).await,
        }
    }

    async fn run_on_host(&self, host: &str, argv: &[String]) -> Result<HostOutput, HostRunError> {
        self.run_argv(host, argv).await
    }
}

/// The checks `agent.create` makes of a remote agent before anything else: the host is
/// configured and the cwd is an absolute path (it is a path on the host).
pub(crate) fn check_create(
    cfg: &crate::config::DaemonConfig,
    host: &str,
    cwd: &str,
) -> Result<PathBuf, String> {
    if !cfg.hosts.contains_key(host) {
        return Err(unknown_host(host, &cfg.hosts));
    }
    if !cwd.starts_with('/') || cwd.contains('\n') {
        return Err(format!(
            "cwd {cwd:?} must be an absolute path on host {host}"
        ));
    }
    Ok(PathBuf::from(cwd))
}
