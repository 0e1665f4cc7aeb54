//! The sandbox zygote (docs/sandbox.md, "The zygote"): a helper process, the Shard
//! binary started again with a hidden subcommand, that enters the sandbox's user, mount
//! (and network) namespaces and sets up its mounts once per Runtime, then forks every
//! `bash` call into a mount and PID namespace of its own. A call costs the Runtime one
//! message instead of three forks of itself and the namespace setup.

pub(crate) mod client;
mod server;
mod wire;

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::sys::Stage;

/// The hidden subcommand that makes a process the zygote.
pub const SUBCOMMAND: &str = "__shard-sandbox-zygote";

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Declares the program that serves as the zygote when started with [`SUBCOMMAND`]
/// (its `main` calls [`main_if_asked`] first). Without it every call enters the sandbox
/// on its own (the per-call path).
pub fn set_program(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

pub(crate) fn program() -> Option<&'static PathBuf> {
    PROGRAM.get()
}

/// To be called first in `main`: when this process was started as a zygote, serves
/// and returns its exit code; otherwise returns None at once.
///
/// # Safety
/// The process must still be single-threaded (nothing has started a thread yet): a
/// zygote enters namespaces and starts each call with a raw `clone` whose child runs
/// ordinary code, which another thread holding a lock would make unsound.
///
/// Calling it without `unsafe` does not compile:
///
/// ```compile_fail,E0133
/// let _ = shard_sandbox::zygote::main_if_asked();
/// ```
#[allow(unsafe_code)]
pub unsafe fn main_if_asked() -> Option<i32> {
    if std::env::args_os().nth(1)? != SUBCOMMAND {
        return None;
    }
    // SAFETY: the caller guarantees a single-threaded process; the subcommand says the
    // sandbox started it as a zygote.
    Some(unsafe { server::serve() })
}

/// A command for the zygote to run in a sandboxed call.
#[derive(Debug)]
pub struct CallRequest {
    /// The program (searched in the environment's `PATH`) and its arguments.
    pub argv: Vec<OsString>,
    /// The command's whole environment (`TMPDIR` is set by the sandbox).
    pub env: Vec<(OsString, OsString)>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Standard input.
    pub stdin: OwnedFd,
    /// Standard output.
    pub stdout: OwnedFd,
    /// Standard error.
    pub stderr: OwnedFd,
}

/// The Runtime's end of a running call: a socket on which the call's init reports the
/// command's end ([`parse_report`]) and takes signals ([`signal_record`]). Dropping it
/// kills every process of the call.
#[derive(Debug)]
pub struct Call {
    channel: UnixStream,
    init: Option<i32>,
}

impl Call {
    /// The pid of the call's init, leader of the call's process group (killing the group
    /// kills the call), when known at once; otherwise the channel's first record says
    /// it ([`Report::Started`]).
    pub fn init(&self) -> Option<i32> {
        self.init
    }

    /// The channel, to be read and written by the caller's event loop.
    pub fn into_channel(self) -> UnixStream {
        self.channel
    }
}

/// Length of every record on a call's channel.
pub const RECORD_LEN: usize = crate::sys::zygote::RECORD;

/// What a call's channel reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The call's init runs, with this pid (outside the call) and as the leader of a
    /// process group of that id: killing the group kills the whole call. Sent first,
    /// unless the call failed at once.
    Started(i32),
    /// The command ended with this wait status, and every process it left was killed.
    Exited(i32),
    /// The call could not start the command.
    Failed(String),
}

/// Reads one record of a call's channel.
pub fn parse_report(rec: &[u8; RECORD_LEN]) -> Report {
    let value = i32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]);
    match rec[0] {
        b'P' => Report::Started(value),
        b'X' => Report::Exited(value),
        b'E' => {
            let err = std::io::Error::from_raw_os_error(value);
            match Stage::from_u8(rec[1]) {
                Some(Stage::Exec) => Report::Failed(err.to_string()),
                Some(stage) => Report::Failed(format!("sandbox step {stage:?} failed: {err}")),
                None => Report::Failed(err.to_string()),
            }
        }
        _ => Report::Failed("the sandbox sent an unknown record".to_string()),
    }
}

/// The record that sends `signal` to every process of the call.
pub fn signal_record(signal: i32) -> [u8; RECORD_LEN] {
    let mut r = [0u8; RECORD_LEN];
    r[0] = b'S';
    r[4..].copy_from_slice(&signal.to_le_bytes());
    r
}

/// A started zygote, ready for calls.
#[derive(Debug, Clone)]
pub struct Zygote {
    client: Arc<client::Client>,
    slot: Arc<client::Slot>,
}

impl Zygote {
    pub(crate) fn new(client: Arc<client::Client>, slot: Arc<client::Slot>) -> Zygote {
        Zygote { client, slot }
    }

    /// Starts a call. On an error run the command on the per-call path instead; a zygote
    /// that is gone is not used again.
    pub fn spawn(&self, req: CallRequest) -> std::io::Result<Call> {
        let sent = self.client.spawn(req);
        if let Err(err) = &sent
            && matches!(
                err.raw_os_error(),
                Some(libc::EPIPE | libc::ECONNRESET | libc::ENOTCONN)
            )
        {
            // The zygote is gone; a call too large for one message is only that call's
            // problem.
            self.slot.lost();
        }
        sent
    }
}
