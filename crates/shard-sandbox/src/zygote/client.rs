//! The Runtime's side of the zygote: starting it (on a thread of its own, which the
//! zygote's parent-death signal is tied to) and sending it calls.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use super::{Call, CallRequest, SUBCOMMAND, wire};
use crate::sys::zygote as z;
use crate::sys::{Plan, Stage};

/// How long the zygote may take to answer its setup.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// A running zygote.
#[derive(Debug)]
pub(crate) struct Client {
    control: OwnedFd,
    tmpdir: PathBuf,
}

impl Client {
    /// Starts `program` as the zygote of `plan` and waits for its setup's answer.
    fn start(program: &Path, plan: &Plan, tmpdir: PathBuf) -> std::io::Result<(Client, Child)> {
        let (ours, theirs) = z::seqpacket_pair()?;
        let mut cmd = Command::new(program);
        cmd.arg(SUBCOMMAND)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        z::install_zygote(&mut cmd, theirs.as_raw_fd());
        let mut child = cmd.spawn()?;
        drop(cmd);
        drop(theirs);
        let answer = setup(&ours, plan);
        match answer {
            Ok(()) => Ok((
                Client {
                    control: ours,
                    tmpdir,
                },
                child,
            )),
            Err(err) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(err)
            }
        }
    }

    /// Sends one call; the zygote forks it at once.
    pub(crate) fn spawn(&self, req: CallRequest) -> std::io::Result<Call> {
        let (ours, theirs) = UnixStream::pair()?;
        let mut env: Vec<Vec<u8>> = req
            .env
            .iter()
            .filter(|(k, _)| {
                let k = k.as_bytes();
                !k.is_empty() && !k.contains(&b'=') && k != b"TMPDIR"
            })
            .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes()].concat())
            .collect();
        env.push([b"TMPDIR=" as &[u8], self.tmpdir.as_os_str().as_bytes()].concat());
        let argv: Vec<&[u8]> = req.argv.iter().map(|a| a.as_bytes()).collect();
        let msg = wire::encode_call(req.cwd.as_os_str().as_bytes(), &argv, &env);
        if msg.len() > super::server::MAX_MESSAGE {
            return Err(std::io::Error::from_raw_os_error(libc::E2BIG));
        }
        z::send_with_fds(
            self.control.as_raw_fd(),
            &msg,
            &[
                req.stdin.as_raw_fd(),
                req.stdout.as_raw_fd(),
                req.stderr.as_raw_fd(),
                theirs.as_raw_fd(),
            ],
        )?;
        Ok(Call { channel: ours })
    }
}

/// Sends the plan and reads the zygote's answer.
fn setup(control: &OwnedFd, plan: &Plan) -> std::io::Result<()> {
    let fds: Vec<i32> = plan.landlock.iter().map(|fd| fd.as_raw_fd()).collect();
    let msg = wire::encode_plan(std::process::id(), plan);
    z::send_with_fds(control.as_raw_fd(), &msg, &fds)?;
    let timeout = nix::sys::time::TimeVal::new(SETUP_TIMEOUT.as_secs() as i64, 0);
    nix::sys::socket::setsockopt(control, nix::sys::socket::sockopt::ReceiveTimeout, &timeout)?;
    let mut rec = [0u8; z::RECORD];
    let (n, _) = z::recv_with_fds(control.as_raw_fd(), &mut rec)?;
    let none = nix::sys::time::TimeVal::new(0, 0);
    nix::sys::socket::setsockopt(control, nix::sys::socket::sockopt::ReceiveTimeout, &none)?;
    match (n, rec[0]) {
        (z::RECORD, b'R') => Ok(()),
        (z::RECORD, b'E') => {
            let stage = Stage::from_u8(rec[1]).unwrap_or(Stage::Namespaces);
            let errno = i32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]);
            Err(std::io::Error::other(format!(
                "the zygote's {stage:?} step failed: {}",
                std::io::Error::from_raw_os_error(errno)
            )))
        }
        _ => Err(std::io::Error::other("the zygote ended during its setup")),
    }
}

#[derive(Debug)]
enum State {
    Idle,
    Starting,
    Ready(Arc<Client>),
    Unavailable,
}

/// The zygote of one sandbox: started once, on demand or ahead of the first call.
#[derive(Debug)]
pub(crate) struct Slot {
    state: Mutex<State>,
    changed: Condvar,
}

impl Slot {
    pub(crate) fn new() -> Arc<Slot> {
        Arc::new(Slot {
            state: Mutex::new(State::Idle),
            changed: Condvar::new(),
        })
    }

    fn set(&self, state: State) {
        if let Ok(mut s) = self.state.lock() {
            *s = state;
        }
        self.changed.notify_all();
    }

    /// Starts the zygote in the background unless it was started already.
    pub(crate) fn prewarm(self: &Arc<Self>, program: &Path, plan: &Arc<Plan>, tmpdir: &Path) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if !matches!(*state, State::Idle) {
            return;
        }
        *state = State::Starting;
        drop(state);
        let weak: Weak<Slot> = Arc::downgrade(self);
        let (program, plan, tmpdir) = (program.to_path_buf(), plan.clone(), tmpdir.to_path_buf());
        // The zygote's parent-death signal fires when this thread ends, so the thread
        // lives as long as the zygote: it waits for it.
        let spawned = std::thread::Builder::new()
            .name("shard-sandbox-zygote".into())
            .spawn(move || {
                let started = Client::start(&program, &plan, tmpdir);
                let Some(slot) = weak.upgrade() else { return };
                match started {
                    Ok((client, mut child)) => {
                        tracing::debug!(pid = child.id(), "sandbox zygote ready");
                        slot.set(State::Ready(Arc::new(client)));
                        drop(slot);
                        let status = child.wait();
                        tracing::debug!(?status, "sandbox zygote ended");
                        if let Some(slot) = weak.upgrade() {
                            slot.set(State::Unavailable);
                        }
                    }
                    Err(err) => {
                        tracing::debug!(%err, "no sandbox zygote; calls enter the sandbox one by one");
                        slot.set(State::Unavailable);
                    }
                }
            });
        if let Err(err) = spawned {
            tracing::debug!(%err, "cannot start the sandbox zygote thread");
            self.set(State::Unavailable);
        }
    }

    /// The zygote, waiting at most `wait` for one being started; None when it cannot
    /// serve (calls then use the per-call path).
    pub(crate) fn get(
        self: &Arc<Self>,
        program: &Path,
        plan: &Arc<Plan>,
        tmpdir: &Path,
        wait: Duration,
    ) -> Option<Arc<Client>> {
        self.prewarm(program, plan, tmpdir);
        let deadline = Instant::now() + wait;
        let mut state = self.state.lock().ok()?;
        loop {
            match &*state {
                State::Ready(c) => return Some(c.clone()),
                State::Unavailable | State::Idle => return None,
                State::Starting => {
                    let left = deadline.checked_duration_since(Instant::now())?;
                    state = self.changed.wait_timeout(state, left).ok()?.0;
                }
            }
        }
    }

    /// Forgets a zygote that stopped answering.
    pub(crate) fn lost(&self) {
        self.set(State::Unavailable);
    }
}
