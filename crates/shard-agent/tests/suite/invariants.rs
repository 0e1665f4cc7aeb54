//! The request-invariant check itself: fed broken sequences it must fail, with a message
//! that says what broke, so a green suite means the invariants held.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Map;
use shard_ai::{ModelRequest, Provider};
use shard_protocol::types::{ContentBlock, Message, Role};
use tokio_util::sync::CancellationToken;

use super::support::{Break, InvariantCheck, Recorder, Reply, check_alone, check_pair};

fn text(id: &str, role: Role, text: &str) -> Arc<Message> {
    Arc::new(Message {
        id: id.into(),
        role,
        content: vec![ContentBlock::Text { text: text.into() }],
    })
}

fn call(id: &str, call_id: &str) -> Arc<Message> {
    Arc::new(Message {
        id: id.into(),
        role: Role::Assistant,
        content: vec![ContentBlock::ToolCall {
            id: call_id.into(),
            name: "read".into(),
            args: Map::new(),
        }],
    })
}

fn result(id: &str, call_id: &str) -> Arc<Message> {
    Arc::new(Message {
        id: id.into(),
        role: Role::User,
        content: vec![shard_session::repair::interrupted_result(call_id)],
    })
}

fn request(messages: Vec<Arc<Message>>) -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: "system".into(),
        messages,
        tools: Arc::from(Vec::new()),
        max_output_tokens: None,
        reasoning_effort: None,
    }
}

fn none() -> HashSet<Break> {
    HashSet::new()
}

#[test]
fn a_call_without_its_result_is_caught() {
    let r = request(vec![text("e1", Role::User, "hi"), call("e2", "c1")]);
    let v = check_alone(&r);
    assert_eq!(v, vec!["tool call c1 has 0 results".to_string()]);
}

#[test]
fn a_result_before_its_call_or_twice_is_caught() {
    let r = request(vec![
        result("e1", "c1"),
        call("e2", "c1"),
        result("e3", "c1"),
    ]);
    let v = check_alone(&r);
    assert!(
        v.iter()
            .any(|m| m.contains("result for c1 before or without its call")),
        "{v:?}"
    );
    assert!(
        v.iter().any(|m| m.contains("tool call c1 has 2 results")),
        "{v:?}"
    );
}

#[test]
fn duplicated_message_ids_are_caught() {
    let r = request(vec![
        text("e1", Role::User, "a"),
        text("e1", Role::User, "b"),
    ]);
    assert!(check_alone(&r)[0].contains("duplicated"));
}

#[test]
fn a_request_that_rewrites_the_prefix_is_caught_unless_a_compaction_happened() {
    let first = text("e1", Role::User, "hi");
    let prev = request(vec![first.clone(), text("e2", Role::Assistant, "hello")]);
    let next = request(vec![
        first.clone(),
        text("e2", Role::Assistant, "HELLO"),
        text("e3", Role::User, "more"),
    ]);
    let v = check_pair(&prev, &next, &none());
    assert!(v[0].contains("do not strictly extend"), "{v:?}");
    let compacted: HashSet<Break> = [Break::Compaction].into();
    assert!(check_pair(&prev, &next, &compacted).is_empty());
    // Same bytes, but copied rather than shared: caught too (except after a restart).
    let copied = request(vec![
        text("e1", Role::User, "hi"),
        text("e2", Role::Assistant, "hello"),
        text("e3", Role::User, "more"),
    ]);
    assert!(check_pair(&prev, &copied, &none())[0].contains("copied, not shared"));
    let restarted: HashSet<Break> = [Break::Restart].into();
    assert!(check_pair(&prev, &copied, &restarted).is_empty());
}

#[test]
fn a_changed_system_prompt_or_tool_list_is_caught_unless_announced() {
    let prev = request(vec![text("e1", Role::User, "hi")]);
    let mut next = request(vec![
        prev.messages[0].clone(),
        text("e2", Role::Assistant, "hello"),
    ]);
    next.system = "another".into();
    assert_eq!(
        check_pair(&prev, &next, &none()),
        vec!["the system prompt changed"]
    );
    let mode: HashSet<Break> = [Break::Mode].into();
    assert!(check_pair(&prev, &next, &mode).is_empty());
}

/// The guard every harness agent holds fails the test, naming the request and what broke.
#[test]
fn the_guard_fails_a_test_whose_requests_broke_an_invariant() {
    let rec = Recorder::new(vec![Reply::text("a"), Reply::text("b")]);
    let guard = InvariantCheck::new(&rec);
    let first = text("e1", Role::User, "hi");
    let _ = rec.stream(request(vec![first.clone()]), CancellationToken::new());
    // The next request drops the first message: not an extension of the previous one.
    let _ = rec.stream(request(vec![call("e2", "c1")]), CancellationToken::new());
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(guard)));
    let message = panicked.expect_err("the guard must fail the test");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("model request invariants violated"),
        "{message}"
    );
    assert!(
        message.contains("request 1: tool call c1 has 0 results"),
        "{message}"
    );
    assert!(
        message.contains("request 1: the messages (1) do not strictly extend"),
        "{message}"
    );

    // A clean sequence passes.
    let rec = Recorder::new(vec![Reply::text("a"), Reply::text("b")]);
    let guard = InvariantCheck::new(&rec);
    let _ = rec.stream(request(vec![first.clone()]), CancellationToken::new());
    let _ = rec.stream(
        request(vec![first, call("e2", "c1"), result("e3", "c1")]),
        CancellationToken::new(),
    );
    drop(guard);
}
