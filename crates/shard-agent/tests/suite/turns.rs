//! Turns: a plain answer, several tools in one message, a steer mid-turn, an abort.

use serde_json::json;
use shard_protocol::types::ContentBlock;

use super::support::*;

#[tokio::test]
async fn plain_turn_sends_one_clean_request() {
    let dirs = Dirs::new();
    let rec = Recorder::new(vec![Reply::text("hello"), Reply::text("again")]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.prompt("hi").await;
    a.prompt("once more").await;
    let reqs = rec.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(outline(&reqs[0]), ["user: hi"]);
    assert_eq!(
        outline(&reqs[1]),
        ["user: hi", "assistant: hello", "user: once more"]
    );
    assert_eq!(reqs[0].model, "claude-sonnet-4-5");
    let names: Vec<&str> = reqs[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "read", "write", "edit", "bash", "grep", "find", "ls", "ask_user"
        ]
    );
    let done: Vec<_> = a.seen.iter().filter_map(pick::message_complete).collect();
    assert_eq!(
        done[0].message.content,
        [ContentBlock::Text {
            text: "hello".into()
        }]
    );
    rec.assert_clean();
    a.close().await;
}

#[tokio::test]
async fn read_only_tools_of_one_message_each_get_one_result() {
    let dirs = Dirs::new();
    write(&dirs.cwd, "a.txt", "alpha\n");
    write(&dirs.cwd, "b.txt", "beta\n");
    let rec = Recorder::new(vec![
        Reply::tools(&[
            ("c1", "read", json!({"path": "a.txt"})),
            ("c2", "read", json!({"path": "b.txt"})),
            ("c3", "nope", json!({})),
        ]),
        Reply::text("both read"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.prompt("read both").await;
    let reqs = rec.requests();
    assert_eq!(reqs.len(), 2);
    let o = outline(&reqs[1]);
    assert_eq!(
        o[1],
        "assistant: call c1 read | call c2 read | call c3 nope"
    );
    assert!(o.contains(&"user: result c1 ok".to_string()), "{o:?}");
    assert!(o.contains(&"user: result c2 ok".to_string()), "{o:?}");
    assert!(o.contains(&"user: result c3 err".to_string()), "{o:?}");
    assert!(result_text(&reqs[1], "c1").contains("alpha"));
    assert!(result_text(&reqs[1], "c2").contains("beta"));
    assert!(result_text(&reqs[1], "c3").contains("no tool named"));
    assert_eq!(a.seen_of("tool_result").len(), 3);
    rec.assert_clean();
    a.close().await;
}

#[tokio::test]
async fn a_steer_lands_after_the_running_tool_before_the_next_call() {
    let dirs = Dirs::new();
    let blocker = Blocker::new("block");
    let rec = Recorder::new(vec![
        Reply::tools(&[("c1", "block", json!({"mode": "read"}))]),
        Reply::text("steered"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.tools.add(blocker.clone()).await.expect("running");
    a.send(json!({"type": "prompt", "message": "start"})).await;
    a.until_type("tool_call").await;
    a.call(json!({"type": "steer", "message": "also this"}))
        .await;
    blocker.release.notify_one();
    a.until_type("turn_end").await;
    let reqs = rec.requests();
    assert_eq!(reqs.len(), 2, "one turn, two calls");
    assert_eq!(
        outline(&reqs[1]),
        [
            "user: start",
            "assistant: call c1 block",
            "user: result c1 ok",
            "user: also this"
        ]
    );
    assert_eq!(a.seen_of("turn_end").len(), 1);
    rec.assert_clean();
    a.close().await;
}

#[tokio::test]
async fn abort_mid_tool_answers_the_call_once_and_the_session_goes_on() {
    let dirs = Dirs::new();
    let blocker = Blocker::new("block");
    let rec = Recorder::new(vec![
        Reply::tools(&[
            ("c1", "block", json!({"mode": "read"})),
            ("c2", "block", json!({"mode": "read"})),
        ]),
        Reply::text("after abort"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.tools.add(blocker).await.expect("running");
    a.send(json!({"type": "prompt", "message": "start"})).await;
    a.until_type("tool_call").await;
    a.call(json!({"type": "abort"})).await;
    a.until_type("turn_end").await;
    let results: Vec<_> = a.seen.iter().filter_map(pick::tool_result).collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results.iter().all(|r| r.is_error));
    a.prompt("next").await;
    let reqs = rec.requests();
    assert_eq!(reqs.len(), 2, "the aborted turn made no further call");
    let o = outline(&reqs[1]);
    assert_eq!(o.last().map(String::as_str), Some("user: next"));
    assert!(o.contains(&"user: result c1 err".to_string()), "{o:?}");
    rec.assert_clean();
    a.close().await;
}

#[tokio::test]
async fn abort_mid_stream_keeps_the_partial_answer_in_the_context() {
    let dirs = Dirs::new();
    let rec = Recorder::new(vec![Reply::hang("half an ans"), Reply::text("fine")]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.send(json!({"type": "prompt", "message": "go"})).await;
    a.until_type("message_delta").await;
    a.call(json!({"type": "abort"})).await;
    a.until_type("turn_end").await;
    a.prompt("again").await;
    let reqs = rec.requests();
    assert_eq!(
        outline(&reqs[1]),
        ["user: go", "assistant: half an ans", "user: again"]
    );
    rec.assert_clean();
    a.close().await;
}
