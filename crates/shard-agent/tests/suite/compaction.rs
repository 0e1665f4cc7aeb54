//! Compaction (docs/protocol.md §9.2 `session_op compact`, §9.4 `compaction`): the manual command's
//! lifecycle and error rows, the summary request, the context after it, `recall`, the
//! automatic triggers (between turns, on a context-overflow refusal) and resume.

use serde_json::{Value, json};
use shard_ai::ErrorKind;
use shard_protocol::event::Response;
use shard_protocol::responses::CompactData;
use shard_protocol::types::{AgentStatus, ContentBlock};
use shard_protocol::{ErrorCode, Event};

use super::support::*;

/// `prompt N` padded to about 100 tokens.
fn long(n: u32) -> String {
    format!("prompt {n} {}", "x".repeat(400))
}

/// Sends `session_op compact` and returns (the response, the types of the events from
/// the command to the final `status`).
async fn compact(a: &mut Agent, args: Value) -> (Response, Vec<String>) {
    let from = a.seen.len();
    let resp = a
        .respond(json!({"type": "session_op", "op": "compact", "args": args}))
        .await;
    if resp.success || code(&resp) == Some(ErrorCode::InternalError) {
        wait_idle(a).await;
    }
    let kinds = a.seen[from..]
        .iter()
        .filter(|e| !matches!(e, Event::MessageDelta(_)))
        .map(|e| match e {
            Event::Status(s) => format!(
                "status {}",
                serde_json::json!(s.status).as_str().unwrap_or("")
            ),
            other => other.type_name().to_string(),
        })
        .skip_while(|k: &String| k == "status idle")
        .collect();
    (resp, kinds)
}

/// Waits for the agent to report `status: idle`.
async fn wait_idle(a: &mut Agent) {
    a.until(|e| matches!(e, Event::Status(s) if s.status == AgentStatus::Idle))
        .await;
}

/// The error code of a failed response (`None` for a success).
fn code(r: &Response) -> Option<ErrorCode> {
    r.error.as_ref().map(|e| e.code.clone())
}

/// A `session_op compact` answer, typed.
fn compacted(r: &Response) -> CompactData {
    assert!(r.success, "{r:?}");
    serde_json::from_value(r.data.clone().unwrap_or(Value::Null)).unwrap()
}

/// The `compaction` event an event is.
fn compaction(e: &Event) -> Option<shard_protocol::event::CompactionEvent> {
    match e {
        Event::Compaction(c) => Some(c.clone()),
        _ => None,
    }
}

fn first_text(r: &shard_ai::ModelRequest) -> String {
    outline(r).first().cloned().unwrap_or_default()
}

#[tokio::test]
async fn manual_compact_runs_its_lifecycle_and_recall_returns_the_summarized() {
    let dirs = Dirs::new();
    let rec = Recorder::new(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
        Reply::text("## Goal\nS1"),
        Reply::tools(&[("r1", "recall", json!({"index": 0}))]),
        Reply::text("recalled"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    for n in 1..=3 {
        a.prompt(&long(n)).await;
    }
    let (resp, kinds) = compact(&mut a, json!({"keep_recent_tokens": 120})).await;
    assert_eq!(
        kinds,
        ["status compacting", "compaction", "response", "status idle"]
    );
    let CompactData::Compacted {
        index,
        tokens_before,
        tokens_after,
        first_kept_entry_id,
        message_range,
        ..
    } = compacted(&resp)
    else {
        panic!("not compacted: {resp:?}")
    };
    assert_eq!(index, 0);
    let event = a.seen.iter().find_map(compaction).unwrap();
    assert_eq!(event.message_range, message_range);
    assert_eq!(event.first_kept_entry_id, first_kept_entry_id);
    assert!(tokens_after < tokens_before);

    // The summary request: the summarized messages, and a last message asking for a summary.
    let summaries = rec.summaries();
    assert_eq!(summaries.len(), 1);
    let ask = outline(&summaries[0]).join("\n");
    assert!(
        ask.contains("prompt 1") && !ask.contains("prompt 2"),
        "{ask}"
    );
    assert!(ask.contains("This is a request for a summary"), "{ask}");
    assert!(summaries[0].tools.is_empty());

    a.prompt("p4").await;
    let reqs = rec.requests();
    let last = &reqs[3];
    let o = outline(last);
    assert!(
        o[0].contains("compacted") && o[0].contains("## Goal\nS1"),
        "{o:?}"
    );
    assert!(o[1].starts_with("user: prompt 2"), "{o:?}");
    assert_eq!(o[2], "assistant: two");
    assert_eq!(o[5], "user: p4");
    assert_eq!(last.tools.last().map(|t| t.name.as_str()), Some("recall"));

    // recall gives back exactly the summarized messages.
    let text = result_text(&rec.requests()[4], "r1");
    assert!(text.contains("page 1 of 1"), "{text}");
    assert!(text.contains("prompt 1") && text.contains("one"), "{text}");
    assert!(!text.contains("prompt 2"), "{text}");
    rec.assert_clean();
    a.close().await;
}

#[tokio::test]
async fn nothing_to_cut_invalid_arguments_and_a_running_turn() {
    let dirs = Dirs::new();
    let rec = Recorder::new(vec![Reply::text("short"), Reply::hang("thinking")]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.prompt("hi").await;
    let (resp, kinds) = compact(&mut a, json!({})).await;
    assert!(
        matches!(compacted(&resp), CompactData::NoOp { compacted: false, reason } if reason == "no_safe_cut"),
        "{resp:?}"
    );
    assert_eq!(kinds, ["status compacting", "response", "status idle"]);

    let (resp, kinds) = compact(&mut a, json!({"keep_recent_tokens": 0})).await;
    assert_eq!(code(&resp), Some(ErrorCode::InvalidRequest), "{resp:?}");
    assert_eq!(kinds, ["response"]);

    a.send(json!({"type": "prompt", "message": "long one"}))
        .await;
    a.until_type("message_delta").await;
    let (resp, kinds) = compact(&mut a, json!({})).await;
    assert_eq!(code(&resp), Some(ErrorCode::Conflict), "{resp:?}");
    assert_eq!(kinds, ["response"]);
    a.call(json!({"type": "abort"})).await;
    a.until_type("turn_end").await;
    assert!(a.seen_of("compaction").is_empty());
    rec.assert_clean();
    a.close().await;
}

#[tokio::test]
async fn a_failed_summary_is_an_internal_error_and_appends_nothing() {
    let dirs = Dirs::new();
    let rec = Recorder::new(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::fail(ErrorKind::Server, "overloaded"),
        Reply::text("three"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.prompt(&long(1)).await;
    a.prompt(&long(2)).await;
    let (resp, kinds) = compact(&mut a, json!({"keep_recent_tokens": 10})).await;
    assert_eq!(code(&resp), Some(ErrorCode::InternalError), "{resp:?}");
    assert_eq!(kinds, ["status compacting", "response", "status idle"]);
    a.prompt("p3").await;
    let o = outline(&rec.requests()[2]);
    assert_eq!(o.len(), 5, "{o:?}");
    assert!(o[0].starts_with("user: prompt 1"));
    let answered = a.respond(json!({"type": "request_sync"})).await;
    assert!(answered.success && answered.data.is_none(), "{answered:?}");
    let s: Vec<_> = a.seen.iter().filter_map(pick::sync).collect();
    assert!(
        s.last()
            .is_some_and(|s| s.live_window.compaction_index.is_none())
    );
    a.close().await;
}

#[tokio::test]
async fn a_context_overflow_refusal_compacts_and_retries_once() {
    let dirs = Dirs::new();
    write(
        &dirs.home,
        "config.toml",
        "[compaction]\nkeep_recent_tokens = 120\n",
    );
    let rec = Recorder::new(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::fail(ErrorKind::ContextWindowExceeded, "prompt is too long"),
        Reply::text("## Goal\nS"),
        Reply::text("three"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.prompt(&long(1)).await;
    a.prompt(&long(2)).await;
    a.prompt(&long(3)).await;
    assert_eq!(a.seen_of("compaction").len(), 1);
    assert!(a.seen_of("error").is_empty(), "{:?}", a.seen_of("error"));
    let reqs = rec.requests();
    assert_eq!(reqs.len(), 4);
    assert!(first_text(&reqs[3]).contains("## Goal\nS"));
    assert!(
        outline(&reqs[3])
            .last()
            .is_some_and(|m| m.starts_with("user: prompt 3"))
    );
    let done: Vec<_> = a.seen.iter().filter_map(pick::message_complete).collect();
    assert_eq!(
        done.last().map(|m| m.message.content.clone()),
        Some(vec![ContentBlock::Text {
            text: "three".into()
        }])
    );
    rec.assert_clean();
    a.close().await;
}

#[tokio::test]
async fn a_turn_above_the_threshold_is_followed_by_a_compaction_and_resume_keeps_it() {
    let dirs = Dirs::new();
    write(
        &dirs.home,
        "config.toml",
        "[compaction]\nreserve_ratio = 0.5\nkeep_recent_tokens = 120\n\n\
         [[models]]\nid = \"anthropic/claude-sonnet-4-5\"\ncontext_window = 600\n",
    );
    let rec = Recorder::new(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three").with_input(350),
        Reply::text("## Goal\nauto"),
        Reply::text("four"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.prompt(&long(1)).await;
    a.prompt(&long(2)).await;
    assert!(a.seen_of("compaction").is_empty());
    a.prompt(&long(3)).await;
    let ev = a.until_event(compaction).await;
    assert_eq!(ev.index, 0);
    wait_idle(&mut a).await;
    let session_id = a.session_id.clone();
    a.close().await;

    rec.allow(Break::Restart);
    let mut start = Start::new(&dirs, &rec);
    start.session_id = Some(session_id);
    let mut b = Agent::start(start).await;
    let sync = b.seen.iter().find_map(pick::sync).unwrap();
    assert_eq!(sync.live_window.compaction_index, Some(0));
    b.prompt("p4").await;
    let reqs = rec.requests();
    let o = outline(&reqs[3]);
    assert!(o[0].contains("## Goal\nauto"), "{o:?}");
    assert!(o[1].starts_with("user: prompt 2"), "{o:?}");
    assert_eq!(o.last().map(String::as_str), Some("user: p4"));
    assert_eq!(
        reqs[3].tools.last().map(|t| t.name.as_str()),
        Some("recall")
    );
    rec.assert_clean();
    b.close().await;
}
