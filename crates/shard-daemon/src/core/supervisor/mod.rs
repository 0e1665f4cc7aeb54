//! The supervisor (docs/architecture.md, "The daemon's duties"): starts Runtime
//! generations, waits for `hello` + `sync` readiness, handles their ends (crash →
//! `agent_exited`), kills with escalation, reaps inactive ones and makes sure no tool
//! process outlives its Runtime (docs/protocol.md §16 item 15).
//!
//! Its parts: a generation's start, run and end (`generation`), stopping one (`stop`:
//! kill, idle reaping, shutdown) and the process plumbing both use (`process`).

mod generation;
mod process;
mod stop;

pub(super) use generation::begin_start;
pub(crate) use generation::launch_spec;
pub(crate) use process::ReadyRx;
pub(crate) use stop::{begin_shutdown, kill_runtime, reap_idle};

use std::sync::Arc;

use tokio::sync::oneshot;

use super::state::{Shared, State};

/// Makes sure a Runtime is live or starting. `Ok(None)`: it is ready now.
pub(crate) fn ensure_started(
    shared: &Arc<Shared>,
    st: &mut State,
    agent_id: &str,
) -> Result<Option<ReadyRx>, String> {
    if st.shutting_down {
        return Err("the daemon is shutting down".into());
    }
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return Err("no such agent".into());
    };
    if let Some(rt) = entry.rt.as_mut() {
        let (tx, rx) = oneshot::channel();
        if rt.ready && !rt.stopping {
            return Ok(None);
        }
        if rt.stopping {
            // New work for a Runtime on its way out: start the next generation at its exit.
            rt.restart_waiters.push(tx);
        } else {
            rt.start_waiters.push(tx);
        }
        return Ok(Some(rx));
    }
    let rx = begin_start(shared, st, agent_id, Vec::new(), Vec::new());
    Ok(rx)
}
