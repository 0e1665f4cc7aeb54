//! Routing: the one path a command takes to an agent's Runtime, for clients' commands
//! (`forward`) and the daemon's own (`drive`). It sits above the supervisor, which it asks
//! to start a generation when none is running.

use std::sync::Arc;

use shard_protocol::command::Command;

use super::deliver::send_to_runtime;
use super::state::{Inflight, Shared, State};
use super::supervisor;

/// Hands `command` to the agent's Runtime generation: sent now when it is live, queued
/// while it starts or stops, or a new generation is started with it. The one path for
/// clients' commands (`forward`) and the daemon's own (`drive`).
pub(crate) fn route(
    shared: &Arc<Shared>,
    st: &mut State,
    agent_id: &str,
    command: Command,
    inflight: Inflight,
) {
    let Some(entry) = st.agents.get_mut(agent_id) else {
        inflight.fail(shard_protocol::ErrorCode::NotFound, "no such agent");
        return;
    };
    let live = entry.rt.as_ref().is_some_and(|rt| rt.ready && !rt.stopping);
    let start = match entry.rt.as_mut() {
        Some(rt) if live => {
            match send_to_runtime(shared, rt, command, inflight) {
                Ok(()) => {
                    if rt.idle_since.is_some() {
                        rt.idle_since = Some(std::time::Instant::now());
                    }
                }
                Err(inf) => inf.fail(
                    shard_protocol::ErrorCode::RuntimeStartFailed,
                    "the agent's runtime stopped before the command could be sent; retry",
                ),
            }
            None
        }
        Some(rt) if rt.stopping => {
            rt.queued_next.push((command, inflight));
            None
        }
        Some(rt) => {
            rt.queued.push((command, inflight));
            None
        }
        None => Some((command, inflight)),
    };
    if let Some(first) = start {
        supervisor::begin_start(shared, st, agent_id, Vec::new(), vec![first]);
    }
}
