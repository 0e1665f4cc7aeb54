//! The link to one host: for an `ssh` host, the one OpenSSH connection its agents share
//! (a ControlMaster the daemon starts and owns, its control socket under
//! `SHARD_HOME/hosts/`), and for every host the check that its `shard` speaks this
//! protocol. One task per host owns that state; launches ask it whether the host is
//! ready and, while it is unreachable, get the last error at once until the backoff
//! has passed (docs/hosts.md).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shard_gate::hosts::{HostConfig, HostKind};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// What the master's remote command prints once the connection is up.
const READY_MARKER: &str = "shard-host-ready";
/// Longest wait for a connection or a version check.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// First and longest wait before reconnecting to a host that failed.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Longest control socket path (`sun_path` holds 108 bytes, ssh adds a suffix while binding).
const MAX_SOCKET_PATH: usize = 90;

/// A host ready for launches.
#[derive(Debug, Clone)]
pub(crate) struct Ready {
    /// The control socket of an `ssh` host's shared connection.
    pub ctl: Option<PathBuf>,
}

type Request = oneshot::Sender<Result<Ready, String>>;

/// Handle on the task that owns one host's link.
#[derive(Clone)]
pub(crate) struct Link {
    tx: mpsc::UnboundedSender<Request>,
}

impl Link {
    /// Starts the owner task of host `name`.
    pub fn spawn(name: String, cfg: HostConfig, home: &Path) -> Link {
        let (tx, rx) = mpsc::unbounded_channel();
        let ctl = home.join("hosts").join(format!("{name}.sock"));
        let state = LinkState {
            name,
            cfg,
            logs: home.join("logs"),
            ctl,
            master: None,
            verified: false,
            failures: 0,
            retry_at: None,
            last_error: String::new(),
        };
        tokio::spawn(state.run(rx));
        Link { tx }
    }

    /// Connects (or reuses the connection) and checks the host's `shard`.
    pub async fn ready(&self) -> Result<Ready, String> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(tx)
            .map_err(|_| "the host link has stopped".to_string())?;
        rx.await
            .map_err(|_| "the host link has stopped".to_string())?
    }
}

/// The shared connection's ssh process and the tail of what it said.
struct Master {
    child: tokio::process::Child,
    /// Held open: the remote side ends when the daemon does (end of input).
    _stdin: tokio::process::ChildStdin,
}

struct LinkState {
    name: String,
    cfg: HostConfig,
    logs: PathBuf,
    ctl: PathBuf,
    master: Option<Master>,
    verified: bool,
    failures: u32,
    retry_at: Option<Instant>,
    last_error: String,
}

impl LinkState {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Request>) {
        while let Some(reply) = rx.recv().await {
            let r = self.ensure().await;
            let _ = reply.send(r);
        }
        if let Some(mut m) = self.master.take() {
            let _ = m.child.start_kill();
        }
        let _ = std::fs::remove_file(&self.ctl);
    }

    fn ready(&self) -> Ready {
        Ready {
            ctl: self.master.as_ref().map(|_| self.ctl.clone()),
        }
    }

    async fn ensure(&mut self) -> Result<Ready, String> {
        if let Some(m) = &mut self.master {
            if matches!(m.child.try_wait(), Ok(None)) {
                return Ok(self.ready());
            }
            tracing::warn!(host = %self.name, "the connection to the host was lost");
            self.master = None;
            self.verified = false;
        }
        if self.verified && self.cfg.ssh.is_none() {
            return Ok(self.ready());
        }
        if let Some(at) = self.retry_at {
            let now = Instant::now();
            if now < at {
                return Err(format!(
                    "host {} is unreachable: {} (next attempt in {:.1} s)",
                    self.name,
                    self.last_error,
                    (at - now).as_secs_f64()
                ));
            }
        }
        match self.connect().await {
            Ok(()) => {
                self.failures = 0;
                self.retry_at = None;
                self.verified = true;
                Ok(self.ready())
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let wait = BACKOFF_FIRST
                    .saturating_mul(1 << self.failures.saturating_sub(1).min(8))
                    .min(BACKOFF_MAX);
                self.retry_at = Some(Instant::now() + wait);
                self.last_error = e.clone();
                if let Some(mut m) = self.master.take() {
                    let _ = m.child.start_kill();
                }
                Err(format!("host {}: {e}", self.name))
            }
        }
    }

    async fn connect(&mut self) -> Result<(), String> {
        if let Some(HostKind::Ssh { dest, options }) = self.cfg.kind() {
            let master = start_master(&self.ctl, &self.logs, &self.name, dest, options).await?;
            self.master = Some(master);
        }
        let ctl = self.master.as_ref().map(|_| self.ctl.as_path());
        check_version(&self.name, &self.cfg, ctl).await
    }
}

/// Starts the ControlMaster and waits until its remote command runs (the connection is
/// authenticated and the control socket listens).
async fn start_master(
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
    let mut cmd = tokio::process::Command::new("ssh");
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
    tokio::spawn(drain_stderr(
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
        // The stderr reader finishes once ssh is gone.
        tokio::time::sleep(Duration::from_millis(20)).await;
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
fn explain(tail: &Mutex<VecDeque<String>>, fallback: &str) -> String {
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
    match cfg.kind() {
        Some(HostKind::Ssh { dest, options }) => Ok(ssh_command(
            ctl,
            dest,
            options,
            super::quote::command_line(cfg.shard_program(), args),
        )),
        Some(HostKind::Command(prefix)) => {
            let (program, rest) = prefix.split_first().ok_or("the host command is empty")?;
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(rest).arg(cfg.shard_program()).args(args);
            Ok(cmd)
        }
        None => Err("the host has neither `ssh` nor `command`".into()),
    }
}

/// `ssh` running `line` on the host: through the shared connection when `ctl` names its
/// socket (a direct connection when that is gone), never prompting.
pub(crate) fn ssh_command(
    ctl: Option<&Path>,
    dest: &str,
    options: &[String],
    line: String,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("ssh");
    if let Some(ctl) = ctl {
        cmd.arg("-S").arg(ctl).args(["-o", "ControlMaster=no"]);
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
