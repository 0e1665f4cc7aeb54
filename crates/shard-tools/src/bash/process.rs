//! Process-group plumbing for `bash`: spawning with a parent-death signal, checking
//! whether a group still has live members, and killing a group (TERM, grace, KILL).

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How often a terminating group is polled for exit.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Makes the kernel SIGKILL the child when the thread that spawned it dies, so a tool
/// process never outlives a Runtime that was killed with `kill -9` (the `unsafe` part
/// lives in shard-sandbox).
pub fn set_parent_death_signal(cmd: &mut tokio::process::Command) {
    shard_sandbox::set_parent_death_signal(cmd.as_std_mut());
}

/// True while some non-zombie process is in group `pgid`.
///
/// `killpg(pgid, 0)` alone also counts zombies, which can linger when the machine's
/// init does not reap orphans, so /proc is consulted when it is readable.
pub fn group_alive(pgid: i32) -> bool {
    if killpg(Pid::from_raw(pgid), None).is_err() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((state, pgrp)) = stat_state_pgrp(pid)
            && pgrp == pgid
            && state != 'Z'
            && state != 'X'
        {
            return true;
        }
    }
    false
}

/// State letter and process group of a process, from `/proc/PID/stat`.
pub fn stat_state_pgrp(pid: u32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

async fn alive(pgid: i32) -> bool {
    tokio::task::spawn_blocking(move || group_alive(pgid))
        .await
        .unwrap_or(true)
}

/// Ends the whole group: SIGTERM, then SIGKILL once `grace` has passed with a member
/// still alive. Reaps the main child meanwhile so it does not count as alive.
pub async fn terminate_group(pgid: i32, child: &mut tokio::process::Child, grace: Duration) {
    let group = Pid::from_raw(pgid);
    if let Err(err) = killpg(group, Signal::SIGTERM) {
        tracing::debug!(pgid, %err, "SIGTERM to process group failed");
    }
    let give_up = Instant::now() + grace;
    loop {
        let _ = child.try_wait();
        if !alive(pgid).await {
            break;
        }
        if Instant::now() >= give_up {
            tracing::debug!(
                pgid,
                "process group outlived the grace period; sending SIGKILL"
            );
            let _ = killpg(group, Signal::SIGKILL);
            break;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    // After SIGKILL the main child is gone within moments; the bound only guards against
    // a process stuck in uninterruptible sleep.
    if tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .is_err()
    {
        tracing::warn!(pgid, "main process did not exit after SIGKILL");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn reads_own_state_and_group() {
        let (state, pgrp) = stat_state_pgrp(std::process::id()).unwrap();
        assert_ne!(state, 'Z');
        assert_eq!(pgrp, nix::unistd::getpgrp().as_raw());
        assert!(group_alive(pgrp));
    }
}
