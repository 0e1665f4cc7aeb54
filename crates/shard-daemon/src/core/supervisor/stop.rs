//! Stopping Runtimes: `agent.kill` with escalation, idle reaping and the daemon's
//! shutdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use shard_protocol::command::{AgentTarget, AttachRole, Command};
use tokio::sync::oneshot;

use super::super::deliver::{close_stdin, send_to_runtime};
use super::super::state::{Inflight, Shared, State};
use super::process::signal;

/// `agent.kill`: `abort` and end of input, SIGTERM after the grace period, SIGKILL after
/// another (`force`: SIGKILL at once). Resolves when the Runtime is gone; `None` when none was live.
pub(crate) fn kill_runtime(
    shared: &Arc<Shared>,
    st: &mut State,
    agent_id: &str,
    force: bool,
) -> Option<oneshot::Receiver<()>> {
    let rt = st.agents.get_mut(agent_id)?.rt.as_mut()?;
    let (tx, rx) = oneshot::channel();
    rt.exit_waiters.push(tx);
    rt.killed = true;
    let epoch = rt.epoch;
    if force || !rt.ready || rt.stdin.is_none() {
        signal(rt.pid, Signal::SIGKILL);
        return Some(rx);
    }
    let _ = send_to_runtime(
        shared,
        rt,
        Command::Abort(AgentTarget { agent_id: None }),
        Inflight::Internal,
    );
    // After the abort, end of input lets the Runtime persist and exit at once; the
    // signals below are only for one that does not.
    close_stdin(st, agent_id);
    let shared = Arc::clone(shared);
    let agent_id = agent_id.to_string();
    tokio::spawn(async move {
        for sig in [Signal::SIGTERM, Signal::SIGKILL] {
            tokio::time::sleep(shared.cfg.kill_grace).await;
            let pid = {
                let st = shared.lock();
                match st.agents.get(&agent_id).and_then(|e| e.rt.as_ref()) {
                    Some(rt) if rt.epoch == epoch => rt.pid,
                    _ => return,
                }
            };
            signal(pid, sig);
        }
    });
    Some(rx)
}

/// Closes the stdin of Runtimes inactive for longer than the idle timeout.
pub(crate) async fn reap_idle(shared: Arc<Shared>) {
    let idle = shared.cfg.idle_runtime_timeout;
    let tick = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(tick) => {}
        }
        let mut st = shared.lock();
        let now = Instant::now();
        let attached_idle = shared.cfg.attached_idle_timeout.max(idle);
        let due: Vec<String> = st
            .agents
            .iter()
            .filter(|(_, e)| {
                let limit = if e
                    .attachments
                    .values()
                    .any(|a| a.role == AttachRole::Interactive)
                {
                    attached_idle
                } else {
                    idle
                };
                !e.status.is_active()
                    && !e.pending.iter().any(|p| !p.answered)
                    && e.rt.as_ref().is_some_and(|rt| {
                        rt.ready
                            && rt.stdin.is_some()
                            && rt.inflight.is_empty()
                            && rt
                                .idle_since
                                .is_some_and(|t| now.duration_since(t) >= limit)
                    })
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            tracing::info!(agent_id = %id, "reaping an idle runtime");
            close_stdin(&mut st, &id);
        }
    }
}

/// `daemon.shutdown`: graceful lets active turns finish (bounded), `force` kills at once.
pub(crate) fn begin_shutdown(shared: &Arc<Shared>, force: bool) {
    let mut guard = shared.lock();
    let st = &mut *guard;
    if st.shutting_down && !force {
        return;
    }
    st.shutting_down = true;
    let ids: Vec<String> = st.agents.keys().cloned().collect();
    for id in ids {
        let Some(entry) = st.agents.get_mut(&id) else {
            continue;
        };
        let active = entry.status.is_active();
        let Some(rt) = entry.rt.as_mut() else {
            continue;
        };
        if force || !rt.ready {
            rt.killed = true;
            signal(rt.pid, Signal::SIGKILL);
        } else if active {
            rt.terminate_when_idle = true;
        } else if rt.stdin.is_some() {
            close_stdin(st, &id);
        }
    }
    drop(guard);
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let deadline = Instant::now()
            + if force {
                Duration::from_secs(10)
            } else {
                Duration::from_secs(60)
            };
        loop {
            let live: Vec<Option<u32>> = {
                let st = shared.lock();
                st.agents
                    .values()
                    .filter_map(|e| e.rt.as_ref().map(|r| r.pid))
                    .collect()
            };
            if live.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                tracing::warn!(
                    count = live.len(),
                    "runtimes still live at the shutdown deadline; killing them"
                );
                for pid in live {
                    signal(pid, Signal::SIGKILL);
                }
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), shared.runtime_exited.notified())
                        .await;
                break;
            }
            let _ =
                tokio::time::timeout(Duration::from_millis(500), shared.runtime_exited.notified())
                    .await;
        }
        shared.shutdown.cancel();
    });
}
