//! Open-file limits. Every live Runtime holds a few descriptors in the daemon (its stdio
//! and its process handle), so the usual soft limit of 1,024 stopped the daemon at a few
//! hundred agents while the hard limit allowed thousands. At start the daemon raises its
//! soft limit to the hard one; when descriptors still run out, the errors say so in one
//! line, with the limit and how to raise it.

use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// The soft limit in force after [`raise_to_hard_limit`] (0 before).
static SOFT_LIMIT: AtomicU64 = AtomicU64::new(0);

/// The start of every message about running out of descriptors, so that `agent.create`
/// can tell this failure (undo everything) from others (keep the agent).
pub(crate) const EXHAUSTED: &str = "the daemon has run out of file descriptors";

/// Raises the soft `RLIMIT_NOFILE` to the hard limit and returns the limit now in force.
/// A failure leaves the limit as it was (logged): the daemon still runs, with fewer agents.
pub fn raise_to_hard_limit() -> u64 {
    let soft = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => hard,
            Err(e) => {
                tracing::warn!(error = %e, soft, hard, "could not raise the open-file limit");
                soft
            }
        },
        Ok((soft, _)) => soft,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the open-file limit");
            0
        }
    };
    SOFT_LIMIT.store(soft, Ordering::Relaxed);
    tracing::debug!(limit = soft, "open-file limit");
    soft
}

/// Whether `e` means this process (EMFILE) or the system (ENFILE) has no descriptor left.
pub(crate) fn is_exhaustion(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(code) if code == nix::errno::Errno::EMFILE as i32 || code == nix::errno::Errno::ENFILE as i32
    )
}

/// The one line a person reads when descriptors ran out.
pub(crate) fn exhausted_message() -> String {
    match SOFT_LIMIT.load(Ordering::Relaxed) {
        0 => format!(
            "{EXHAUSTED}: raise its open-file limit (`ulimit -n` in the shell that starts \
             `shard daemon`, or LimitNOFILE= in its service unit) and restart it"
        ),
        limit => format!(
            "{EXHAUSTED} (limit {limit} open files): raise the hard limit (`ulimit -Hn` in the \
             shell that starts `shard daemon`, or LimitNOFILE= in its service unit) and restart it"
        ),
    }
}

/// Whether this process cannot open one more descriptor right now. A failure reported as
/// text (the settings check, a wrapped error) may hide EMFILE; this probe tells, so such a
/// failure is still reported as what it is and undone.
pub(crate) fn exhausted_now() -> bool {
    use std::os::fd::AsFd;
    match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(_probe) => false,
        Err(e) => is_exhaustion(&e),
    }
}

/// `e` as a message, the descriptor line when that is what it means.
pub(crate) fn describe(e: &std::io::Error) -> String {
    if is_exhaustion(e) {
        exhausted_message()
    } else {
        e.to_string()
    }
}
