//! No tool process outlives its Runtime (docs/protocol.md §16 item 15): recorded process
//! groups are killed when a Runtime ends, escaped orphans with them, and orphans
//! inherited as a subreaper are reaped.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::state::Shared;

/// Kills the process groups a dead Runtime recorded in `SHARD_HOME/runtime/<id>.json`
/// (and its own group), so no tool process outlives it.
pub(crate) fn kill_leftover_groups(home: &Path, agent_id: &str, pid: Option<u32>) {
    let own = nix::unistd::getpgrp().as_raw();
    let mut groups: Vec<i32> = pid
        .and_then(|p| i32::try_from(p).ok())
        .into_iter()
        .collect();
    let path = home.join("runtime").join(format!("{agent_id}.json"));
    if let Ok(bytes) = std::fs::read(&path) {
        let v = serde_json::from_slice::<serde_json::Value>(&bytes).unwrap_or_default();
        // Only a record written by this generation's Runtime names groups this daemon
        // owns; one left by another Runtime (a previous daemon's, still finishing) is
        // not ours to kill or remove.
        let recorded = v.get("pid").and_then(serde_json::Value::as_u64);
        if pid.is_some() && recorded == pid.map(u64::from) {
            collect_groups(&v, &mut groups);
            let _ = std::fs::remove_file(&path);
        }
    }
    for g in groups {
        if g > 1 && g != own {
            match killpg(Pid::from_raw(g), Signal::SIGKILL) {
                Ok(()) => {
                    tracing::info!(agent_id, pgid = g, "killed a leftover tool process group")
                }
                Err(nix::errno::Errno::ESRCH) => {}
                Err(e) => tracing::debug!(agent_id, pgid = g, error = %e, "killpg failed"),
            }
        }
    }
}

/// Kills the process groups of orphans that escaped their tool call's tracking: children
/// the daemon adopted as subreaper that left the daemon's session (`setsid`, `setsid -f`,
/// a double fork after `setsid`). Runtimes, their tool groups and the daemon's `git` runs
/// stay in the daemon's session, so anything adopted in another session is such an
/// orphan; inside the sandbox the PID namespace kills them first, and this is the bound
/// with `[sandbox] mode = "off"` (docs/security.md). Which Runtime an escaped orphan came
/// from is no longer known, so every generation's end sweeps them all.
pub(crate) fn kill_escaped_orphans() {
    use nix::unistd::{getpgid, getsid};
    let Ok(own_sid) = getsid(None) else { return };
    let own_group = nix::unistd::getpgrp();
    for pid in child_pids() {
        let Ok(p) = i32::try_from(pid) else { continue };
        let p = Pid::from_raw(p);
        match (getsid(Some(p)), getpgid(Some(p))) {
            (Ok(sid), Ok(group)) if sid != own_sid && group != own_group && group.as_raw() > 1 => {
                match killpg(group, Signal::SIGKILL) {
                    Ok(()) => tracing::info!(
                        pid,
                        pgid = group.as_raw(),
                        "killed an orphaned tool process that left its session"
                    ),
                    Err(e) => tracing::debug!(pid, error = %e, "killpg failed"),
                }
            }
            _ => {}
        }
    }
}

fn collect_groups(v: &serde_json::Value, out: &mut Vec<i32>) {
    let Some(obj) = v.as_object() else { return };
    for key in ["process_groups", "pgids", "groups"] {
        if let Some(arr) = obj.get(key).and_then(|a| a.as_array()) {
            for x in arr {
                let n = x
                    .as_i64()
                    .or_else(|| x.get("pgid").and_then(|p| p.as_i64()));
                if let Some(n) = n.and_then(|n| i32::try_from(n).ok()) {
                    out.push(n);
                }
            }
        }
    }
}

/// As a child subreaper the daemon inherits orphaned tool processes; collect the ones
/// that are not Runtimes (tokio waits for those) so they do not linger as zombies.
pub(crate) async fn collect_orphans(shared: Arc<Shared>) {
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
        }
        let runtimes: Vec<u32> = {
            let st = shared.lock();
            st.agents
                .values()
                .filter_map(|e| e.rt.as_ref().and_then(|r| r.pid))
                .collect()
        };
        let _ = tokio::task::spawn_blocking(move || {
            let own = crate::children::listed();
            for pid in child_pids() {
                if runtimes.contains(&pid) || own.as_ref().is_some_and(|o| o.contains(&pid)) {
                    continue;
                }
                if let Ok(p) = i32::try_from(pid) {
                    let _ = nix::sys::wait::waitpid(
                        Pid::from_raw(p),
                        Some(nix::sys::wait::WaitPidFlag::WNOHANG),
                    );
                }
            }
        })
        .await;
    }
}

fn child_pids() -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out
}
