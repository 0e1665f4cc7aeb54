//! `AgentView`: the same stream gives the same view however it is cut, and a `sync` after
//! a reconnect restates state without duplicating it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use shard_client::view::{AgentView, LineDecoder, Pending};
use shard_protocol::Event;

fn ev(v: Value) -> Event {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v}"))
}

fn assistant(id: &str, text: &str, call: Option<(&str, &str, Value)>) -> Value {
    let mut content = vec![json!({"type": "text", "text": text})];
    if let Some((cid, name, args)) = call {
        content.push(json!({"type": "tool_call", "id": cid, "name": name, "args": args}));
    }
    json!({"id": id, "role": "assistant", "content": content})
}

fn result_msg(id: &str, call: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "content": [
        {"type": "tool_result", "tool_call_id": call, "content": {"kind": "text", "text": text}, "is_error": false}
    ]})
}

/// A turn with streaming text, a permission request, a tool run with renders, a UI
/// request left pending, usage and a mode change.
fn scenario() -> Vec<Value> {
    let a1 = assistant(
        "ent-a1",
        "Let me check.",
        Some(("c1", "bash", json!({"command": "ls"}))),
    );
    let u1 = result_msg("ent-u1", "c1", "a.txt\n");
    let a2 = assistant(
        "ent-a2",
        "Which one?",
        Some(("c2", "ask_user", json!({"question": "Which?"}))),
    );
    vec![
        json!({"type": "hello", "protocol_version": "0.1.0", "server_version": "x", "capabilities": ["streaming-deltas"]}),
        json!({"type": "sync", "status": "idle", "mode": "build", "session_id": "sess-1",
               "live_window": {"messages": []}, "pending_requests": []}),
        json!({"type": "turn_start", "turn_id": "turn-1"}),
        json!({"type": "user_message", "message_id": "ent-p1", "message": {"id": "ent-p1", "role": "user",
               "content": [{"type": "text", "text": "list the files"}]}}),
        json!({"type": "status", "status": "streaming"}),
        json!({"type": "message_delta", "message_id": "ent-a1", "block_index": 0, "kind": "text", "text_delta": "Let me "}),
        json!({"type": "message_delta", "message_id": "ent-a1", "block_index": 0, "kind": "text", "text_delta": "check."}),
        json!({"type": "message_delta", "message_id": "ent-a1", "block_index": 1, "kind": "tool_call", "tool_call_id": "c1", "name": "bash"}),
        json!({"type": "message_delta", "message_id": "ent-a1", "block_index": 1, "kind": "tool_call", "args_delta": "{\"command\":\"ls\"}"}),
        json!({"type": "message_complete", "message_id": "ent-a1", "message": a1}),
        json!({"type": "usage", "input": 100, "output": 10, "cost": 0.5}),
        json!({"type": "status", "status": "waiting_for_permission"}),
        json!({"type": "permission_request", "request_id": "req-p1", "tool_name": "bash",
               "input": {"command": "ls"}, "prompt": "Run ls?", "options": ["allow", "deny"]}),
        json!({"type": "permission_resolved", "request_id": "req-p1", "decision": "allow", "source": "me"}),
        json!({"type": "status", "status": "streaming"}),
        json!({"type": "tool_call", "tool_call_id": "c1", "name": "bash", "args": {"command": "ls"},
               "render": {"kind": "text", "text": "$ ls"}, "read_only": false}),
        json!({"type": "tool_result", "tool_call_id": "c1", "content": {"kind": "text", "text": "a.txt\n"},
               "is_error": false, "exit_code": 0, "render": {"kind": "text", "text": "a.txt"}}),
        json!({"type": "message_complete", "message_id": "ent-u1", "message": u1}),
        json!({"type": "mode_changed", "previous_mode": "build", "mode": "plan"}),
        json!({"type": "message_delta", "message_id": "ent-a2", "block_index": 0, "kind": "text", "text_delta": "Which one?"}),
        json!({"type": "message_complete", "message_id": "ent-a2", "message": a2}),
        json!({"type": "usage", "input": 200, "output": 20, "cost": 0.25}),
        json!({"type": "tool_call", "tool_call_id": "c2", "name": "ask_user", "args": {"question": "Which?"}, "read_only": true}),
        json!({"type": "status", "status": "waiting_for_ui"}),
        json!({"type": "ui_request", "request_id": "req-u1", "kind": "select", "message": "Which?", "options": ["a", "b"]}),
    ]
}

fn view_of(events: &[Value]) -> AgentView {
    let mut v = AgentView::new();
    for e in events {
        v.apply(&ev(e.clone()));
    }
    v
}

/// What an authoritative `sync` says after the first `k` events: an independent model of
/// the server (complete messages, unresolved requests, last status and mode).
fn sync_after(events: &[Value]) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    let mut pending: Vec<Value> = Vec::new();
    let mut status = json!("idle");
    let mut mode = json!("build");
    for e in events {
        match ev(e.clone()) {
            Event::MessageComplete(m) => messages.push(json!(m.message)),
            Event::UserMessage(u) => messages.push(json!(u.message)),
            Event::PermissionRequest(_) | Event::UiRequest(_) => pending.push(e.clone()),
            Event::PermissionResolved(r) => pending.retain(|p| p["request_id"] != *r.request_id),
            Event::UiResolved(r) => pending.retain(|p| p["request_id"] != *r.request_id),
            Event::Status(s) => status = json!(s.status),
            Event::Sync(s) => status = json!(s.status),
            Event::ModeChanged(m) => mode = json!(m.mode),
            _ => {}
        }
    }
    json!({"type": "sync", "status": status, "mode": mode, "session_id": "sess-1",
           "live_window": {"messages": messages}, "pending_requests": pending})
}

/// The parts of a view a `sync` can restate (usage is not in `sync`).
fn restatable(v: &AgentView) -> AgentView {
    let mut r = v.clone();
    r.usage = Default::default();
    r.capabilities = Vec::new();
    r
}

#[test]
fn the_full_stream_gives_the_expected_view() {
    let v = view_of(&scenario());
    assert_eq!(v.messages.len(), 4);
    assert_eq!(v.messages[0].id, "ent-p1", "the prompt, before the answer");
    assert_eq!(v.messages[0].role, shard_protocol::types::Role::User);
    assert!(v.streaming.is_none());
    assert_eq!(v.mode.as_deref(), Some("plan"));
    assert_eq!(v.session_id.as_deref(), Some("sess-1"));
    assert_eq!(
        v.status,
        Some(shard_protocol::types::AgentStatus::WaitingForUi)
    );
    let c1 = v.tool_call("c1").unwrap();
    assert!(c1.started);
    assert!(c1.render.is_some());
    assert_eq!(c1.result.as_ref().unwrap().exit_code, Some(0));
    assert!(v.tool_call("c2").unwrap().result.is_none());
    assert_eq!(v.pending.len(), 1);
    assert!(matches!(&v.pending[0], Pending::Ui(u) if u.request_id == "req-u1"));
    assert_eq!(v.usage.calls, 2);
    assert_eq!(v.usage.input, 300);
    assert_eq!(v.usage.cost, Some(0.75));
}

#[test]
fn a_byte_stream_split_at_every_point_gives_the_same_view() {
    let events = scenario();
    let bytes: Vec<u8> = events
        .iter()
        .flat_map(|e| {
            let mut l = serde_json::to_vec(e).unwrap();
            l.push(b'\n');
            l
        })
        .collect();
    let expected = view_of(&events);
    for cut in 0..=bytes.len() {
        let mut d = LineDecoder::new();
        let mut v = AgentView::new();
        for e in d
            .push(&bytes[..cut])
            .into_iter()
            .chain(d.push(&bytes[cut..]))
        {
            v.apply(&e);
        }
        assert_eq!(v, expected, "stream cut at byte {cut}");
    }
}

#[test]
fn a_resync_at_every_point_duplicates_nothing_and_reshows_pending_requests() {
    let events = scenario();
    let expected = restatable(&view_of(&events));
    for k in 1..=events.len() {
        let sync = ev(sync_after(&events[..k]));
        // The same client, reconnected: it saw events[..k], then gets a sync.
        let mut same = view_of(&events[..k]);
        let changes = same.apply(&sync);
        for c in &changes {
            if let shard_client::Change::RequestAdded(id) = c {
                panic!("request {id} was already shown before the reconnect (k = {k})");
            }
        }
        for e in &events[k..] {
            same.apply(&ev(e.clone()));
        }
        assert_eq!(
            restatable(&same),
            expected,
            "same client, resync after {k} events"
        );

        // A fresh client that starts from the sync: pending requests are shown again.
        let mut fresh = AgentView::new();
        let changes = fresh.apply(&sync);
        let shown: Vec<_> = changes
            .iter()
            .filter_map(|c| match c {
                shard_client::Change::RequestAdded(id) => Some(id.clone()),
                _ => None,
            })
            .collect();
        let pending: Vec<String> = fresh
            .pending
            .iter()
            .map(|p| p.request_id().to_string())
            .collect();
        assert_eq!(
            shown, pending,
            "every pending request is reported after {k} events"
        );
        for e in &events[k..] {
            fresh.apply(&ev(e.clone()));
        }
        let fresh = restatable(&fresh);
        assert_eq!(fresh.messages, expected.messages, "fresh client after {k}");
        assert_eq!(fresh.pending, expected.pending, "fresh client after {k}");
        assert_eq!(fresh.mode, expected.mode);
        assert_eq!(fresh.status, expected.status);
        for call in &expected.tool_calls {
            let got = fresh.tool_call(&call.id).unwrap();
            assert_eq!(got.name, call.name);
            assert_eq!(got.args, call.args);
            assert_eq!(
                got.result.as_ref().map(|r| &r.content),
                call.result.as_ref().map(|r| &r.content)
            );
        }
    }
}

#[test]
fn a_restated_request_or_message_is_not_duplicated() {
    let events = scenario();
    let mut v = view_of(&events);
    let again = v.apply(&ev(events.last().unwrap().clone()));
    assert!(again.is_empty(), "{again:?}");
    let typed: Vec<Event> = events.into_iter().map(ev).collect();
    let msg = typed
        .iter()
        .rev()
        .find(|e| matches!(e, Event::MessageComplete(_)))
        .unwrap();
    v.apply(msg);
    let prompt = typed
        .iter()
        .find(|e| matches!(e, Event::UserMessage(_)))
        .unwrap();
    v.apply(prompt);
    assert_eq!(v.messages.len(), 4);
    assert_eq!(v.pending.len(), 1);
}

/// A conversation opened again says who answered each permission request, from the
/// session's record; a client that said it live does not say it twice.
#[test]
fn a_recorded_answer_is_said_after_a_reload_and_not_twice_live() {
    let a1 = assistant(
        "ent-a1",
        "Let me check.",
        Some(("c1", "bash", json!({"command": "ls"}))),
    );
    let u1 = result_msg("ent-u1", "c1", "a.txt\n");
    let sync = ev(json!({"type": "sync", "status": "idle", "mode": "build",
        "live_window": {"messages": [a1, u1], "permission_answers": [
            {"request_id": "perm-1", "tool_call_id": "c1", "tool_name": "bash",
             "choice_id": "allow", "label": "Allow once", "source": "client-3 (browser brw-7)"}]},
        "pending_requests": []}));
    let mut fresh = AgentView::new();
    fresh.apply(&sync);
    let said = fresh
        .recorded_answer("c1")
        .map(shard_client::results::recorded_answer);
    assert_eq!(
        said.as_deref(),
        Some("permission for bash: “Allow once”, answered by browser brw-7")
    );
    assert!(fresh.recorded_answer("c2").is_none());

    let mut live = AgentView::new();
    live.apply(&ev(
        json!({"type": "permission_resolved", "request_id": "perm-1",
        "choice_id": "allow", "source": "client-3 (browser brw-7)"}),
    ));
    live.apply(&sync);
    assert!(live.recorded_answer("c1").is_none(), "said live already");
}
