//! Tool processes never talk to the daemon (issue 10 §5): a connection whose peer
//! process descends from one of the daemon's Runtimes — or from a process re-parented
//! to the daemon as child subreaper, which is what an orphaned tool process becomes — is
//! refused before it can answer a permission request, drive an agent or create one.
//! The peer's pid comes from `SO_PEERCRED`; its ancestry is read from `/proc`.

/// Most ancestors walked before giving up (a loop would be a kernel bug; bound anyway).
const MAX_DEPTH: usize = 256;

/// The parent pid of `pid`, from `/proc/<pid>/stat` (its fourth field, after the
/// parenthesised command name, which may itself contain spaces and parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// [`check_ancestry`] for a connecting peer of this daemon, on a blocking thread (it
/// reads `/proc`). A check that cannot run refuses: a door is closed unless proven safe.
pub(crate) async fn check_peer(shared: &crate::core::Shared, pid: u32) -> Result<(), String> {
    let runtimes = shared.runtime_pids();
    let daemon = std::process::id();
    tokio::task::spawn_blocking(move || check_ancestry(pid, daemon, &runtimes))
        .await
        .unwrap_or_else(|e| Err(format!("the peer check failed: {e}")))
}

/// `Err` with the reason when `peer` must be refused: it descends from a Runtime in
/// `runtimes`, or from a child of the daemon (`daemon`) that is not a Runtime. A Runtime
/// itself, and anything that does not descend from the daemon, is accepted.
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
            // Gone, or unreadable: it is not ours to judge further.
            return Ok(());
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
    Ok(())
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
}
