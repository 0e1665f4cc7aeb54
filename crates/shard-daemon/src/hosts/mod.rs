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

mod install;
mod link;
mod quote;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use shard_gate::hosts::HostConfig;
use tokio::io::AsyncWriteExt;

pub use install::{InstallReport, install};

use crate::launcher::{
    LaunchSpec, LaunchedRuntime, ProcessLauncher, RuntimeLauncher, SettingsCheck,
};

/// Longest wait for a host's answer to the settings check.
const CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Starts Runtimes on the daemon's machine or, for a spec naming a host, on that host.
pub struct HostsLauncher {
    local: Arc<dyn RuntimeLauncher>,
    hosts: BTreeMap<String, HostConfig>,
    home: PathBuf,
    settings: Arc<dyn SettingsCheck>,
    /// One link per host, started at its first use.
    links: Mutex<HashMap<String, link::Link>>,
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

    /// The host's config, a ready link, the settings line and the `shard agent --remote`
    /// command for `spec` (`extra` appended to its arguments).
    async fn prepare(
        &self,
        name: &str,
        spec: &LaunchSpec,
        extra: &[&str],
    ) -> Result<(tokio::process::Command, Vec<u8>), String> {
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
        let cmd = link::remote_command(&cfg, ready.ctl.as_deref(), &args)?;
        Ok((cmd, settings.to_line()))
    }

    /// The Runtime's own start check, run on the host with the forwarded settings: an
    /// unknown mode, provider or model, or a cwd the host lacks, is one error and nothing
    /// is created.
    async fn check_remote(&self, name: &str, spec: &LaunchSpec) -> Result<Option<String>, String> {
        let (mut cmd, line) = self.prepare(name, spec, &["--check"]).await?;
        link::all_piped(&mut cmd);
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
        let said = link::last_line(&out.stderr);
        let said = said
            .strip_prefix("shard agent: ")
            .unwrap_or(&said)
            .to_string();
        if out.status.success() {
            return Ok((!said.is_empty()).then_some(said));
        }
        // The Runtime's fatal `error` event is the reason, in its own words.
        let fatal = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["type"] == "error")
            .and_then(|v| v["message"].as_str().map(str::to_string));
        Err(format!("on host {name}: {}", fatal.unwrap_or(said)))
    }

    async fn launch_remote(
        &self,
        name: &str,
        spec: &LaunchSpec,
    ) -> Result<LaunchedRuntime, String> {
        let (mut cmd, line) = self.prepare(name, spec, &[]).await?;
        let ssh = self.host(name)?.ssh.is_some();
        let log = crate::launcher::open_agent_log(&self.home, &spec.agent_id)
            .await
            .map_err(|e| format!("cannot open the agent's log: {e}"))?;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .process_group(0)
            .kill_on_drop(false);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run the host's command: {e}"))?;
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
        let pid = child.id();
        let host = name.to_string();
        let exit = Box::pin(async move {
            let mut info = crate::launcher::wait_exit(child).await;
            // 255 is ssh's own failure: the channel, not the Runtime, ended.
            if info.code == Some(255) && ssh {
                tracing::warn!(host, "the connection to the Runtime's host was lost");
                info.cause = Some("the connection to its host was lost");
            }
            info
        });
        Ok(LaunchedRuntime {
            pid,
            stdin: Box::pin(stdin),
            stdout: Box::pin(stdout),
            exit,
        })
    }
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
