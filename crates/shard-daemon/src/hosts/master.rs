//! The processes of a host's link: an `ssh` host's shared connections (ControlMasters
//! the daemon starts and owns, their control sockets under `SHARD_HOME/hosts/`), the
//! commands run on a host through one of them or through a `command` prefix, and the
//! check that the host's `shard` speaks this protocol.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shard_gate::hosts::{HostConfig, HostKind};
use tokio::io::{AsyncBufReadExt, BufReader};

/// What the master's remote command prints once the connection is up.
const READY_MARKER: &str = "shard-host-ready";
/// Longest wait for a connection or a version check.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest control socket path (`sun_path` holds 108 bytes, ssh adds a suffix while binding).
const MAX_SOCKET_PATH: usize = 90;

/// One shared connection's ssh process.
pub(crate) struct Master {
    pub child: tokio::process::Child,
    /// Held open: the remote side ends when the daemon does (end of input).
    _stdin: tokio::process::ChildStdin,
}

/// Starts the ControlMaster and waits until its remote command runs (the connection is
/// authenticated and the control socket listens).
pub(crate) async fn start_master(
    ctl: &Path,
    logs: &Path,
    name: &str,
    dest: &str,
    options: &[String],
) -> Result<Master, String> {
    let dir = ctl.parent().unwrap_or(Path::new("."));
    let (d1, d2) = (dir.to_path_buf(), logs.to_path_buf());
    tokio::task::spawn_blocking(move || {
        crate::fsutil::ensure_private_dir(&d1)?;
        crate::fsutil::ensure_private_dir(&d2)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("cannot prepare {}: {e}", dir.display()))?;
    if ctl.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(format!(
            "the control socket path {} is too long for a unix socket: use a shorter SHARD_HOME",
            ctl.display()
        ));
    }
    // A socket left by a daemon that died: ssh would refuse to listen on it and run
    // without sharing the connection.
    let _ = std::fs::remove_file(ctl);
    let mut cmd = super::env::host_child("ssh");
    cmd.arg("-M")
        .arg("-S")
        .arg(ctl)
        .args(["-o", "ControlPersist=no", "-o", "BatchMode=yes", "-T"])
        .args(options)
        .args([
            "-o",
            "ServerAliveInterval=15",
            "-o",
            "ServerAliveCountMax=3",
            "-o",
            "ConnectTimeout=15",
            "--",
            dest,
        ])
        .arg(format!(
            "printf '%s\\n' {READY_MARKER}; exec cat >/dev/null"
        ));
    all_piped(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run ssh: {e} (install the OpenSSH client)"))?;
    let stdin = child.stdin.take().ok_or("ssh has no stdin")?;
    let stdout = child.stdout.take().ok_or("ssh has no stdout")?;
    let stderr = child.stderr.take().ok_or("ssh has no stderr")?;
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let drained = tokio::spawn(drain_stderr(
        stderr,
        Arc::clone(&tail),
        logs.join(format!("host-{name}.log")),
    ));
    let mut lines = BufReader::new(stdout).lines();
    let wait = async {
        loop {
            match lines.next_line().await {
                Ok(Some(l)) if l.trim() == READY_MARKER => return true,
                Ok(Some(_)) => continue,
                _ => return false,
            }
        }
    };
    let up = tokio::time::timeout(CONNECT_TIMEOUT, wait)
        .await
        .unwrap_or(false);
    if !up {
        let _ = child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        // The stderr reader finishes once ssh is gone (its last words are the reason;
        // on a busy machine they may come well after the exit).
        let _ = tokio::time::timeout(Duration::from_secs(2), drained).await;
        return Err(explain(&tail, "could not connect over ssh"));
    }
    // Nothing more comes on stdout; keep it drained so ssh never blocks on it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(Master {
        child,
        _stdin: stdin,
    })
}

/// Pipes for stdin, stdout and stderr, its own process group, killed when dropped: a
/// helper process of the link, never a Runtime.
pub(crate) fn all_piped(cmd: &mut tokio::process::Command) {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
}

/// The last lines ssh wrote, as one line.
pub(crate) fn explain(tail: &Mutex<VecDeque<String>>, fallback: &str) -> String {
    let lines: Vec<String> = tail
        .lock()
        .map(|t| t.iter().cloned().collect())
        .unwrap_or_default();
    let said = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if said.is_empty() {
        fallback.to_string()
    } else {
        said
    }
}

/// Copies the master's stderr to its log and keeps its last lines for errors.
async fn drain_stderr(
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
    log: PathBuf,
) {
    use tokio::io::AsyncWriteExt;
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log)
        .await
        .ok();
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(l)) = lines.next_line().await {
        if let Some(f) = file.as_mut() {
            let _ = f.write_all(format!("{l}\n").as_bytes()).await;
        }
        if let Ok(mut t) = tail.lock() {
            if t.len() >= 4 {
                t.pop_front();
            }
            t.push_back(l);
        }
    }
}

/// A command run on the host: through the shared connection (`ctl`) or the host's
/// command prefix. `args` follow the host's `shard` program.
pub(crate) fn remote_command(
    cfg: &HostConfig,
    ctl: Option<&Path>,
    args: &[String],
) -> Result<tokio::process::Command, String> {
    program_command(cfg, ctl, cfg.shard_program(), args)
}

/// `argv` run on the host as it is (its first word the program); see
/// [`program_command`].
pub(crate) fn argv_command(
    cfg: &HostConfig,
    ctl: Option<&Path>,
    argv: &[String],
) -> Result<tokio::process::Command, String> {
    let (program, args) = argv.split_first().ok_or("nothing to run on the host")?;
    program_command(cfg, ctl, program, args)
}

/// `program args…` on the host: through the shared connection (`ctl`) with every word
/// quoted for the host's shell (a `~/` program expanded there), or after the host's
/// command prefix, which passes words on without a shell.
fn program_command(
    cfg: &HostConfig,
    ctl: Option<&Path>,
    program: &str,
    args: &[String],
) -> Result<tokio::process::Command, String> {
    match cfg.kind() {
        Some(HostKind::Ssh { dest, options }) => Ok(ssh_command(
            ctl,
            dest,
            options,
            super::quote::command_line(program, args),
        )),
        Some(HostKind::Command(prefix)) => {
            let (first, rest) = prefix.split_first().ok_or("the host command is empty")?;
            let mut cmd = super::env::host_child(first);
            cmd.args(rest).arg(program).args(args);
            Ok(cmd)
        }
        None => Err("the host has neither `ssh` nor `command`".into()),
    }
}

/// `ssh` running `line` on the host: through the shared connection when `ctl` names its
/// socket (and only through it), else directly; never prompting.
pub(crate) fn ssh_command(
    ctl: Option<&Path>,
    dest: &str,
    options: &[String],
    line: String,
) -> tokio::process::Command {
    let mut cmd = super::env::host_child("ssh");
    if let Some(ctl) = ctl {
        // A mux client whose session the server refuses (sshd's MaxSessions) would
        // quietly open a connection of its own; a proxy that fails makes that fallback
        // fail, so the refusal is seen and the link places the session elsewhere. Given
        // first, it wins over a ProxyCommand or ProxyJump of the user's ssh_config,
        // which only a direct connection would use.
        cmd.arg("-S")
            .arg(ctl)
            .args(["-o", "ControlMaster=no", "-o", "ProxyCommand=false"]);
    }
    cmd.args(["-o", "BatchMode=yes", "-T"])
        .args(options)
        .args(["--", dest])
        .arg(line);
    cmd
}

/// The last non-empty line a process wrote to stderr.
pub(crate) fn last_line(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// Checks that the host's `shard` exists and speaks this protocol; the error is one
/// line saying what to do.
pub(crate) async fn check_version(
    name: &str,
    cfg: &HostConfig,
    ctl: Option<&Path>,
) -> Result<(), String> {
    let mut cmd = remote_command(cfg, ctl, &["protocol".into(), "version".into()])?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let out = match tokio::time::timeout(CONNECT_TIMEOUT, cmd.output()).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return Err(format!("cannot run the host's command: {e}")),
        Err(_) => return Err("checking the host's shard timed out".into()),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let said = last_line(&out.stderr);
    let program = cfg.shard_program();
    match out.status.code() {
        Some(0) if stdout == shard_protocol::PROTOCOL_VERSION => Ok(()),
        Some(0) => Err(format!(
            "host {name} runs a shard speaking protocol {stdout:?}, this daemon speaks {}: run `shard hosts install {name}`",
            shard_protocol::PROTOCOL_VERSION
        )),
        Some(126 | 127) => Err(format!(
            "no shard at `{program}` on host {name} ({said}): run `shard hosts install {name}`, or set [hosts.{name}] shard to its path"
        )),
        Some(255) if cfg.ssh.is_some() => Err(if said.is_empty() {
            "the ssh connection failed".into()
        } else {
            said
        }),
        code => Err(format!(
            "`{program} protocol version` failed on host {name} (exit {}: {said}): run `shard hosts install {name}`",
            code.map_or_else(|| "by a signal".to_string(), |c| c.to_string())
        )),
    }
}
