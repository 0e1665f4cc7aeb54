//! The gate seen from the model's side: a denied call gets one error result and the turn
//! goes on; an allowed one runs; a per-call classification decides whether to ask.

use serde_json::json;

use super::support::*;

#[tokio::test]
async fn a_denied_write_gets_one_error_result_and_an_allowed_one_runs() {
    let dirs = Dirs::new();
    let rec = Recorder::new(vec![
        Reply::tools(&[
            ("c1", "write", json!({"path": "no.txt", "content": "x"})),
            ("c2", "write", json!({"path": "yes.txt", "content": "y"})),
        ]),
        Reply::text("done"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.send(json!({"type": "prompt", "message": "write two"}))
        .await;
    let id = a.until_event(pick::permission_request).await.request_id;
    a.call(json!({"type": "permission_response", "request_id": id,
        "decision": "deny", "reason": "not that one"}))
        .await;
    let id = a.until_event(pick::permission_request).await.request_id;
    a.call(json!({"type": "permission_response", "request_id": id,
        "decision": "allow"}))
        .await;
    a.until_type("turn_end").await;
    assert!(!dirs.cwd.join("no.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dirs.cwd.join("yes.txt")).expect("written"),
        "y"
    );
    let reqs = rec.requests();
    let o = outline(&reqs[1]);
    assert!(o.contains(&"user: result c1 err".to_string()), "{o:?}");
    assert!(o.contains(&"user: result c2 ok".to_string()), "{o:?}");
    assert!(result_text(&reqs[1], "c1").contains("not that one"));
    // Only the allowed call was announced as running.
    let calls: Vec<_> = a
        .seen
        .iter()
        .filter_map(pick::tool_call)
        .map(|c| c.tool_call_id)
        .collect();
    assert_eq!(calls, ["c2"]);
    rec.assert_clean();
    a.close().await;
}

#[tokio::test]
async fn the_tool_classifies_each_call_read_only_runs_mutating_asks() {
    let dirs = Dirs::new();
    let blocker = Blocker::new("kv");
    let rec = Recorder::new(vec![
        Reply::tools(&[("c1", "kv", json!({"mode": "read"}))]),
        Reply::tools(&[("c2", "kv", json!({"mode": "write"}))]),
        Reply::text("done"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.tools.add(blocker.clone()).await.expect("running");
    a.send(json!({"type": "prompt", "message": "go"})).await;
    let call = a.until_event(pick::tool_call).await;
    assert_eq!(call.read_only, Some(true));
    blocker.release.notify_one();
    let ask = a.until_event(pick::permission_request).await;
    assert_eq!(ask.tool_name, "kv");
    let id = ask.request_id.clone();
    a.call(json!({"type": "permission_response", "request_id": id,
        "decision": "allow"}))
        .await;
    let call = a
        .until_event(|e| pick::tool_call(e).filter(|c| c.tool_call_id == "c2"))
        .await;
    assert_eq!(call.read_only, Some(false));
    blocker.release.notify_one();
    a.until_type("turn_end").await;
    assert_eq!(
        a.seen_of("permission_request").len(),
        1,
        "only the mutating call asked"
    );
    rec.assert_clean();
    a.close().await;
}
