//! The broker (docs/architecture.md#the-broker-and-multi-client): every line a Runtime writes is fanned out to the agent's
//! attachments tagged with its `agent_id`; `sync` completes attach handshakes; responses
//! are mapped back to the client that asked; permission and UI requests are shown to
//! every attachment and to the nearest interactive ancestor, or answered headlessly.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use shard_protocol::command::AttachRole;
use shard_protocol::command::kind;
use shard_protocol::event::{
    ActivityPhase, AgentActivity, AgentSpawned, AgentStatusChanged, DeltaKind, PendingRequest,
    Response, Sync,
};
use shard_protocol::responses::AttachData;
use shard_protocol::types::{AgentStatus, RuntimeState, UiKind};
use shard_protocol::{Event, IncomingEvent, decode_event_lenient, ids};

use super::deliver::{close_stdin, fan_out, push, send_to_runtime};
use super::requests;
use super::state::{Fanout, Inflight, LiveRuntime, PendingKind, Shared, State, lock_fanout};
use crate::wire::frame;

/// Adds `"agent_id"` to a Runtime line without re-encoding it: ids are validated base32,
/// so no escaping is needed, and the rest of the line is copied as is.
pub(crate) fn tag(line: &[u8], agent_id: &str) -> Bytes {
    let body = line.strip_prefix(b"{").unwrap_or(line);
    let mut out = Vec::with_capacity(line.len() + agent_id.len() + 16);
    out.extend_from_slice(b"{\"agent_id\":\"");
    out.extend_from_slice(agent_id.as_bytes());
    out.extend_from_slice(b"\"");
    if !body.starts_with(b"}") {
        out.push(b',');
    }
    out.extend_from_slice(body);
    out.push(b'\n');
    Bytes::from(out)
}

/// Sends the commands queued while a generation was starting, in arrival order.
fn flush_queued(shared: &Shared, rt: &mut LiveRuntime) {
    for (command, inflight) in std::mem::take(&mut rt.queued) {
        if let Err(inf) = send_to_runtime(shared, rt, command, inflight) {
            inf.fail(
                shard_protocol::ErrorCode::RuntimeStartFailed,
                "the agent's runtime stopped before the command could be sent; retry",
            );
        }
    }
}

/// The activity phase a delta of this kind puts its agent in.
fn delta_phase(kind: DeltaKind) -> ActivityPhase {
    if kind == DeltaKind::Thinking {
        ActivityPhase::Thinking
    } else {
        ActivityPhase::Streaming
    }
}

/// Lines that change no registry state: `Some(None)` when the line is only delivered,
/// `Some(Some(p))` when it is only delivered as long as the agent's phase already is `p`,
/// `None` when the registry must see it. Every variant named here has its own arm in
/// [`on_runtime_line`]'s match; the rest reach its last arm, which only delivers.
fn delivery_only(incoming: &IncomingEvent) -> Option<Option<ActivityPhase>> {
    let IncomingEvent::Known(ev) = incoming else {
        return Some(None);
    };
    match ev {
        Event::MessageDelta(d) => Some(Some(delta_phase(d.kind))),
        Event::Hello(_)
        | Event::Sync(_)
        | Event::Response(_)
        | Event::PermissionRequest(_)
        | Event::UiRequest(_)
        | Event::PermissionResolved(_)
        | Event::UiResolved(_)
        | Event::Status(_)
        | Event::ToolCall(_)
        | Event::Usage(_)
        | Event::ModeChanged(_)
        | Event::Error(_) => None,
        _ => Some(None),
    }
}

/// The frame a Runtime event becomes: the line itself tagged with the agent's id when
/// that is all it lacks, else the event re-encoded with its routing id.
fn frame_for(tagged: Option<&Bytes>, ev: &Event, agent_id: &str) -> Bytes {
    if let Some(t) = tagged {
        t.clone()
    } else {
        let mut ev = ev.clone();
        ev.set_routing_agent_id(Some(agent_id.to_string()));
        frame(&ev)
    }
}

/// Handles one line from the Runtime generation `epoch` of `agent_id`. Called only by
/// that generation's reader task, one line after the other, so the agent's events reach
/// each client in the Runtime's order whichever worker thread runs the task.
pub(crate) fn on_runtime_line(
    shared: &Arc<Shared>,
    fanout: &std::sync::Mutex<Fanout>,
    agent_id: &str,
    epoch: u64,
    line: &[u8],
) {
    let incoming = match decode_event_lenient(line) {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(agent_id, error = %e, "undecodable line from runtime dropped");
            return;
        }
    };
    // The frame most lines become is made before any lock is taken.
    let tagged = match &incoming {
        IncomingEvent::Known(ev) if !(ev.is_per_agent() && ev.routing_agent_id().is_none()) => None,
        _ => Some(tag(line, agent_id)),
    };
    // Streamed output (deltas, tool output, …) takes only this agent's fan-out lock: the
    // agents' readers deliver in parallel, and the registry lock is left to lines that
    // change its state (docs/decisions.md "Broker across the cores").
    if let Some(need) = delivery_only(&incoming) {
        let f = lock_fanout(fanout);
        if f.epoch != Some(epoch) {
            return;
        }
        if need.is_none_or(|p| f.phase == p) {
            let out = match &incoming {
                IncomingEvent::Known(ev) => frame_for(tagged.as_ref(), ev, agent_id),
                IncomingEvent::Unknown { .. } => tagged.unwrap_or_else(|| tag(line, agent_id)),
            };
            f.deliver(&out);
            return;
        }
    }
    let mut guard = shared.lock();
    let st = &mut *guard;
    let Some(entry) = st.agents.get(agent_id) else {
        return;
    };
    if entry.rt.as_ref().is_none_or(|rt| rt.epoch != epoch) {
        return;
    }
    let event = match incoming {
        IncomingEvent::Known(ev) => ev,
        IncomingEvent::Unknown { .. } => {
            if let Some(t) = &tagged {
                fan_out(st, agent_id, t);
            }
            return;
        }
    };
    let make = |ev: &Event| -> Bytes { frame_for(tagged.as_ref(), ev, agent_id) };
    match event {
        Event::Hello(h) => {
            if let Some(rt) = st.agents.get_mut(agent_id).and_then(|e| e.rt.as_mut()) {
                rt.capabilities = h.capabilities;
            }
        }
        Event::Sync(s) => on_sync(shared, st, agent_id, epoch, *s),
        Event::Response(r) => on_response(st, agent_id, r),
        Event::PermissionRequest(ref p) => {
            let kind = PendingKind::Permission {
                choices: p
                    .choices
                    .as_ref()
                    .map(|c| c.iter().map(|c| c.id.clone()).collect())
                    .unwrap_or_default(),
                options: p.options.clone(),
            };
            let id = p.request_id.clone();
            set_phase(st, agent_id, ActivityPhase::Waiting, None);
            requests::on_request(shared, st, agent_id, id, kind, make(&event));
        }
        Event::UiRequest(ref u) if u.kind != UiKind::Notify => {
            let id = u.request_id.clone();
            set_phase(st, agent_id, ActivityPhase::Waiting, None);
            requests::on_request(shared, st, agent_id, id, PendingKind::Ui, make(&event));
        }
        Event::PermissionResolved(ref r) => {
            let id = r.request_id.clone();
            requests::on_resolved(st, agent_id, &id, &make(&event));
        }
        Event::UiResolved(ref r) => {
            let id = r.request_id.clone();
            requests::on_resolved(st, agent_id, &id, &make(&event));
        }
        Event::Status(ref s) => {
            let f = make(&event);
            fan_out(st, agent_id, &f);
            // The Runtime's `detail` may carry text; orchestrator events go to every
            // connection, so only the coarse status crosses over.
            on_status(st, agent_id, s.status, None);
        }
        Event::MessageDelta(ref d) => {
            set_phase(st, agent_id, delta_phase(d.kind), None);
            fan_out(st, agent_id, &make(&event));
        }
        Event::ToolCall(ref t) => {
            set_phase(st, agent_id, ActivityPhase::Tool, Some(t.name.clone()));
            fan_out(st, agent_id, &make(&event));
        }
        Event::Usage(ref u) => {
            if let Some(e) = st.agents.get_mut(agent_id) {
                let total = e.usage.get_or_insert_with(Default::default);
                total.input += u.usage.input;
                total.output += u.usage.output;
                total.model.clone_from(&u.usage.model);
                if u.usage.context_tokens.is_some() {
                    total.context_tokens = u.usage.context_tokens;
                }
                if let Some(c) = u.usage.cost {
                    total.cost = Some(total.cost.unwrap_or(0.0) + c);
                }
            }
            fan_out(st, agent_id, &make(&event));
        }
        Event::ModeChanged(ref m) => {
            if let Some(e) = st.agents.get_mut(agent_id) {
                e.mode = Some(m.mode.clone());
            }
            fan_out(st, agent_id, &make(&event));
        }
        Event::Error(ref e) => {
            if let Some(rt) = st.agents.get_mut(agent_id).and_then(|en| en.rt.as_mut())
                && !rt.ready
            {
                rt.start_failure = Some(format!("{}: {}", e.code, e.message));
            }
            fan_out(st, agent_id, &make(&event));
        }
        ref other => fan_out(st, agent_id, &make(other)),
    }
}

/// A Runtime line over the line limit carried the id of a command the daemon sent: that
/// command fails instead of staying in flight forever.
pub(crate) fn on_overlong_response(shared: &Shared, agent_id: &str, epoch: u64, id: &str) {
    let mut st = shared.lock();
    let Some(rt) = st
        .agents
        .get_mut(agent_id)
        .and_then(|e| e.rt.as_mut())
        .filter(|rt| rt.epoch == epoch)
    else {
        return;
    };
    let Some(inf) = rt.inflight.remove(id) else {
        return;
    };
    if matches!(inf, Inflight::Sync | Inflight::ClientSync(_)) {
        rt.sync_requests = rt.sync_requests.saturating_sub(1);
    }
    inf.fail(
        shard_protocol::ErrorCode::InternalError,
        "the agent's answer was longer than the protocol's line limit and was discarded",
    );
}

/// Broadcasts the sanitized activity overview when the coarse phase changes.
pub(crate) fn set_phase(
    st: &mut State,
    agent_id: &str,
    phase: ActivityPhase,
    tool: Option<String>,
) {
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return;
    };
    {
        let mut f = entry.fanout();
        if f.phase == phase && tool.is_none() {
            return;
        }
        f.phase = phase;
    }
    let ev = Event::AgentActivity(AgentActivity {
        agent_id: agent_id.to_string(),
        timestamp: ids::now_millis(),
        phase,
        status: entry.status,
        tool_name: tool,
    });
    st.broadcast(&frame(&ev));
}

/// Records a status change, tells every connection, and acts on inactivity.
pub(crate) fn on_status(
    st: &mut State,
    agent_id: &str,
    status: AgentStatus,
    detail: Option<String>,
) {
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return;
    };
    let changed = entry.status != status;
    entry.status = status;
    let mut close = false;
    if let Some(rt) = entry.rt.as_mut() {
        if status.is_active() {
            rt.idle_since = None;
        } else {
            rt.idle_since.get_or_insert_with(Instant::now);
            if rt.terminate_when_idle && rt.stdin.is_some() {
                close = true;
            }
        }
    }
    if close {
        close_stdin(st, agent_id);
    }
    let Some(entry) = st.agents.get(agent_id) else {
        return;
    };
    if changed {
        let ev = Event::AgentStatusChanged(AgentStatusChanged {
            agent_id: agent_id.to_string(),
            status,
            runtime_state: entry.runtime_state,
            detail,
        });
        st.broadcast(&frame(&ev));
        let phase = match status {
            AgentStatus::Idle => ActivityPhase::Idle,
            AgentStatus::Streaming => match entry.fanout().phase {
                p @ (ActivityPhase::Thinking | ActivityPhase::Streaming | ActivityPhase::Tool) => p,
                _ => ActivityPhase::Streaming,
            },
            AgentStatus::WaitingForPermission | AgentStatus::WaitingForUi => ActivityPhase::Waiting,
            AgentStatus::Compacting => ActivityPhase::Compacting,
            AgentStatus::Error => ActivityPhase::Error,
        };
        set_phase(st, agent_id, phase, None);
    }
}

fn on_sync(shared: &Arc<Shared>, st: &mut State, agent_id: &str, epoch: u64, mut s: Sync) {
    // Delegated requests of descendants whose nearest interactive ancestor is this agent.
    let mut delegated: Vec<(String, String, serde_json::Value)> = Vec::new();
    // Only agents that may have open requests are looked at (`State::requesting`), so a
    // sync costs nothing per registered agent; those found without any leave the set.
    let mut settled = Vec::new();
    for id in &st.requesting {
        let Some(e) = st.agents.get(id).filter(|e| !e.pending.is_empty()) else {
            settled.push(id.clone());
            continue;
        };
        if id == agent_id {
            continue;
        }
        for p in e.pending.iter().filter(|p| !p.answered) {
            if st
                .responders(id)
                .is_some_and(|(owner, _)| owner == agent_id)
            {
                delegated.push((id.clone(), p.request_id.clone(), p.value.clone()));
            }
        }
    }
    for id in settled {
        st.requesting.remove(&id);
    }
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return;
    };
    let Some(rt) = entry.rt.as_mut() else {
        return;
    };
    let first = !rt.ready;
    let to_all = first || rt.sync_requests == 0;
    entry.status = s.status;
    entry.mode = Some(s.mode.clone());
    if first {
        rt.ready = true;
        rt.start_slot = None;
        entry.runtime_state = RuntimeState::Running;
        entry.last_epoch = Some(epoch);
        if !s.status.is_active() {
            rt.idle_since = Some(Instant::now());
        }
        for w in rt.start_waiters.drain(..) {
            let _ = w.send(Ok(()));
        }
        flush_queued(shared, rt);
        // A local agent's own session records its first start (`ManifestStore::load_all`
        // reads it there), so only an adopted agent's or a host's manifest is rewritten.
        if !entry.manifest.started {
            entry.manifest.started = true;
            if !crate::manifest::start_recorded_by_session(&entry.manifest) {
                let shared = Arc::clone(shared);
                let agent_id = agent_id.to_string();
                tokio::spawn(async move {
                    if let Err(e) = shared.persist_manifest(&agent_id).await {
                        tracing::warn!(error = %e.message, "could not record the first start");
                    }
                });
            }
        }
    }
    s.agent_id = Some(agent_id.to_string());
    s.runtime_epoch = Some(epoch);
    if !rt.capabilities.is_empty() || s.capabilities.is_none() {
        s.capabilities = Some(rt.capabilities.clone());
    }
    s.session_id
        .get_or_insert_with(|| entry.manifest.session_id.clone());
    for (_, _, v) in &delegated {
        match serde_json::from_value::<PendingRequest>(v.clone()) {
            Ok(p) => s.pending_requests.push(p),
            Err(e) => tracing::warn!(error = %e, "delegated request not re-shown"),
        }
    }
    let status = s.status;
    let sync_frame = frame(&Event::Sync(Box::new(s)));
    let info = entry.info();
    let mut interactive_served = Vec::new();
    for (conn, att) in entry.attachments.iter_mut() {
        if !(to_all || att.awaiting_sync) {
            continue;
        }
        if let Some(responder) = att.attach_reply.take() {
            let data = AttachData {
                status,
                info: info.clone(),
            };
            responder.answer::<kind::AgentAttach>(&data);
        }
        push(&st.conns, *conn, &sync_frame);
        att.awaiting_sync = false;
        if att.role == AttachRole::Interactive {
            interactive_served.push(*conn);
        }
    }
    entry.refresh_fanout();
    for (child, rid, _) in &delegated {
        if let Some(p) = st
            .agents
            .get_mut(child)
            .and_then(|e| e.pending.iter_mut().find(|p| &p.request_id == rid))
        {
            p.delivered_to.extend(interactive_served.iter().copied());
        }
    }
    if first {
        st.broadcast(&frame(&Event::AgentSpawned(AgentSpawned {
            agent_id: agent_id.to_string(),
            info: info.clone(),
        })));
        st.broadcast(&frame(&Event::AgentStatusChanged(AgentStatusChanged {
            agent_id: agent_id.to_string(),
            status,
            runtime_state: RuntimeState::Running,
            detail: None,
        })));
    }
}

fn on_response(st: &mut State, agent_id: &str, r: Response) {
    let Some(rt) = st.agents.get_mut(agent_id).and_then(|e| e.rt.as_mut()) else {
        return;
    };
    let Some(id) = r.id.clone() else {
        tracing::warn!(agent_id, "runtime response without an id dropped");
        return;
    };
    let target = match rt.inflight.remove(&id) {
        Some(Inflight::Client(responder)) => Some(responder),
        Some(Inflight::Sync) => {
            rt.sync_requests = rt.sync_requests.saturating_sub(1);
            None
        }
        Some(Inflight::ClientSync(responder)) => {
            rt.sync_requests = rt.sync_requests.saturating_sub(1);
            Some(responder)
        }
        Some(Inflight::Internal) => {
            if !r.success {
                tracing::debug!(agent_id, error = ?r.error, "internal command failed");
            }
            None
        }
        None => {
            tracing::debug!(agent_id, id, "response for an unknown id dropped");
            None
        }
    };
    if let Some(responder) = target {
        responder.forward(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_splices_agent_id_into_the_line() {
        let t = tag(br#"{"type":"status","status":"idle"}"#, "agent-X");
        let v: serde_json::Value = serde_json::from_slice(&t).unwrap();
        assert_eq!(v["agent_id"], "agent-X");
        assert_eq!(v["type"], "status");
        assert!(t.ends_with(b"\n"));
        let e = tag(b"{}", "agent-Y");
        let v: serde_json::Value = serde_json::from_slice(&e).unwrap();
        assert_eq!(v["agent_id"], "agent-Y");
    }
}
