//! Delivery: the bytes the core sends out — a frame to one client, to every attachment
//! of an agent, a command down a Runtime's stdin, and the close of that stdin. The
//! broker, the request tracker and the supervisor all send through here, so none of them
//! needs another to reach a client or a Runtime.

use std::collections::HashMap;

use bytes::Bytes;
use shard_protocol::command::{ClientMessage, Command};
use shard_protocol::event::AgentStatusChanged;
use shard_protocol::types::RuntimeState;
use shard_protocol::{Event, to_line};

use super::state::{ConnEntry, ConnId, Inflight, LiveRuntime, Shared, State};
use crate::wire::frame;

/// Queues `frame` for one client (gone: nothing to do).
pub(crate) fn push(conns: &HashMap<ConnId, ConnEntry>, conn: ConnId, frame: &Bytes) {
    if let Some(c) = conns.get(&conn) {
        c.outbox.push(frame.clone());
    }
}

/// Sends a command to a Runtime with a daemon-unique id (§16 item 6). When the Runtime's
/// input is closed the inflight record comes back, so its responder can say why.
pub(crate) fn send_to_runtime(
    shared: &Shared,
    rt: &mut LiveRuntime,
    mut command: Command,
    inflight: Inflight,
) -> Result<(), Inflight> {
    let Some(stdin) = &rt.stdin else {
        return Err(inflight);
    };
    command.set_routing_agent_id(None);
    let id = format!("d{}", shared.next());
    let line = to_line(&ClientMessage::new(id.clone(), command));
    if stdin.send(Bytes::from(line)).is_err() {
        return Err(inflight);
    }
    rt.inflight.insert(id, inflight);
    Ok(())
}

/// Sends a frame to every attachment of an agent that is past its handshake.
pub(crate) fn fan_out(st: &State, agent_id: &str, frame: &Bytes) {
    let Some(entry) = st.agents.get(agent_id) else {
        return;
    };
    for (conn, att) in &entry.attachments {
        if !att.awaiting_sync {
            push(&st.conns, *conn, frame);
        }
    }
}

/// Closes a Runtime's stdin: on end of input it finishes persisting and exits 0 (§16 item 16).
pub(crate) fn close_stdin(st: &mut State, agent_id: &str) {
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return;
    };
    let Some(rt) = entry.rt.as_mut() else {
        return;
    };
    rt.stdin = None;
    rt.stopping = true;
    rt.terminate_when_idle = false;
    entry.runtime_state = RuntimeState::Stopping;
    let ev = Event::AgentStatusChanged(AgentStatusChanged {
        agent_id: agent_id.to_string(),
        status: entry.status,
        runtime_state: RuntimeState::Stopping,
        detail: None,
    });
    st.broadcast(&frame(&ev));
}
