//! Tool processes never talk to the daemon: a connection whose peer
//! process descends from one of the daemon's Runtimes — or from a process re-parented
//! to the daemon as child subreaper, which is what an orphaned tool process becomes — is
//! refused before it can answer a permission request, drive an agent or create one.
//! The peer's pid comes from `SO_PEERCRED`; its ancestry is read from `/proc`.

/// Most ancestors walked before giving up (a loop would be a kernel bug; bound anyway).
const MAX_DEPTH: usize = 256;

/// What `/proc/<pid>/stat` says of a process: its parent and its start time (clock
/// ticks since boot), the pair that tells a process from a later one reusing its pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    /// Parent pid.
    pub ppid: u32,
    /// Start time, in clock ticks after boot.
    pub start: u64,
}

/// Reads `/proc/<pid>/stat`: the fields after the parenthesised command name (which may
/// itself contain spaces and parentheses) are state, ppid, … and, 20th, starttime.
fn stat_of(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut after = stat[stat.rfind(')')? + 1..].split_whitespace();
    let ppid = after.nth(1)?.parse().ok()?;
    let start = after.nth(17)?.parse().ok()?;
    Some(ProcStat { ppid, start })
}

/// The parent pid of `pid`.
fn parent_of(pid: u32) -> Option<u32> {
    stat_of(pid).map(|s| s.ppid)
}

/// [`check_ancestry`] for a connecting peer of this daemon, on a blocking thread (it
/// reads `/proc`). A check that cannot run refuses: a door is closed unless proven safe.
/// `Ok` carries the peer's start time, so a later check ([`recheck_peer`]) knows it is
/// looking at the same process.
pub(crate) async fn check_peer(shared: &crate::core::Shared, pid: u32) -> Result<u64, String> {
    let runtimes = shared.runtime_pids();
    let daemon = std::process::id();
    tokio::task::spawn_blocking(move || {
        let start = stat_of(pid).map(|s| s.start);
        check_ancestry(pid, daemon, &runtimes)?;
        // Read again after the walk: the same process throughout, or refused.
        match (start, stat_of(pid).map(|s| s.start)) {
            (Some(a), Some(b)) if a == b => Ok(a),
            _ => Err(gone(pid)),
        }
    })
    .await
    .unwrap_or_else(|e| Err(format!("the peer check failed: {e}")))
}

/// The check again, at the moment a connection answers a permission or UI request: the
/// process that connected (`pid`, started at `start`) must still exist and still not
/// descend from a Runtime. A connection handed on by a process that has since exited, or
/// whose pid now names another process, answers nothing.
pub(crate) async fn recheck_peer(
    shared: &crate::core::Shared,
    pid: u32,
    start: u64,
) -> Result<(), String> {
    match check_peer(shared, pid).await {
        Ok(now) if now == start => Ok(()),
        Ok(_) => Err(format!(
            "process {pid}, which opened this connection, has exited and its pid was reused; answers from this connection are refused"
        )),
        Err(e) => Err(e),
    }
}

fn gone(pid: u32) -> String {
    format!(
        "process {pid}, which opened this connection, has exited or cannot be read, so who is asking cannot be checked; refused"
    )
}

/// `Err` with the reason when `peer` must be refused: it descends from a Runtime in
/// `runtimes`, or from a child of the daemon (`daemon`) that is not a Runtime, or its
/// ancestry cannot be read (it, or an ancestor between two reads, already exited: fail
/// closed). A Runtime itself, and anything that does not descend from the daemon, is
/// accepted.
pub(crate) fn check_ancestry(peer: u32, daemon: u32, runtimes: &[u32]) -> Result<(), String> {
    if peer == daemon || runtimes.contains(&peer) {
        return Ok(());
    }
    let mut cur = peer;
    for _ in 0..MAX_DEPTH {
        if cur != peer && runtimes.contains(&cur) {
            return Err(format!(
                "process {peer} was started by an agent's runtime (pid {cur}); tool processes may not use the daemon"
            ));
        }
        let Some(parent) = parent_of(cur) else {
            return Err(gone(peer));
        };
        if parent == daemon {
            return Err(format!(
                "process {peer} descends from process {cur}, which the daemon adopted or started and which is not a runtime; tool processes may not use the daemon"
            ));
        }
        if parent <= 1 {
            return Ok(());
        }
        cur = parent;
    }
    Err(format!(
        "process {peer} has more than {MAX_DEPTH} ancestors; refused"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_of_self_is_the_real_parent() {
        let me = std::process::id();
        assert_eq!(parent_of(me), Some(std::os::unix::process::parent_id()));
    }

    #[test]
    fn a_child_of_a_runtime_is_refused_and_others_pass() {
        let me = std::process::id();
        let parent = std::os::unix::process::parent_id();
        // Pretend our parent is a runtime: we descend from it.
        assert!(check_ancestry(me, 0, &[parent]).is_err());
        // Pretend our parent is the daemon and we are not a runtime.
        assert!(check_ancestry(me, parent, &[]).is_err());
        // ... unless we are one of its runtimes.
        assert!(check_ancestry(me, parent, &[me]).is_ok());
        // Unrelated to the daemon: fine.
        assert!(check_ancestry(me, u32::MAX - 1, &[]).is_ok());
    }

    #[test]
    fn a_peer_whose_ancestry_cannot_be_read_is_refused() {
        // No process has this pid (above the kernel's pid_max): as a peer that exited.
        let e = check_ancestry(u32::MAX - 7, 1, &[]).unwrap_err();
        assert!(e.contains("cannot be checked"), "{e}");
        assert!(stat_of(std::process::id()).is_some_and(|s| s.start > 0));
    }
}
