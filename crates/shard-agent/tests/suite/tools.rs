//! Tools joining and leaving a running Runtime (MCP servers come and go): the next model
//! call sees the new list, and nothing else about the requests changes.

use serde_json::json;

use super::support::*;

#[tokio::test]
async fn tools_added_and_removed_while_running_reach_the_next_call() {
    let dirs = Dirs::new();
    let blocker = Blocker::new("mcp__kv");
    let rec = Recorder::new(vec![
        Reply::text("before"),
        Reply::tools(&[("c1", "mcp__kv", json!({"mode": "read"}))]),
        Reply::text("used it"),
        Reply::tools(&[("c2", "mcp__kv", json!({"mode": "read"}))]),
        Reply::text("gone"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.prompt("one").await;

    rec.allow(Break::Tools);
    a.tools.add(blocker.clone()).await.expect("running");
    blocker.release.notify_one();
    a.prompt("two").await;

    rec.allow(Break::Tools);
    a.tools.remove("mcp__kv").await.expect("running");
    a.prompt("three").await;

    let reqs = rec.requests();
    assert_eq!(reqs.len(), 5);
    let names =
        |i: usize| -> Vec<String> { reqs[i].tools.iter().map(|t| t.name.clone()).collect() };
    assert!(!names(0).contains(&"mcp__kv".to_string()));
    assert_eq!(names(1).last().map(String::as_str), Some("mcp__kv"));
    assert_eq!(names(1), names(2));
    assert!(!names(3).contains(&"mcp__kv".to_string()));
    assert!(result_text(&reqs[2], "c1").contains("released"));
    assert!(result_text(&reqs[4], "c2").contains("no tool named"));
    // The list is shared between calls, not rebuilt: same allocation while unchanged.
    assert!(std::sync::Arc::ptr_eq(&reqs[1].tools, &reqs[2].tools));
    rec.assert_clean();
    a.close().await;
}

#[tokio::test]
async fn an_allow_list_applies_to_tools_added_later() {
    let dirs = Dirs::new();
    let rec = Recorder::new(vec![Reply::text("ok")]);
    let mut start = Start::new(&dirs, &rec);
    start.tools = Some(vec!["read".into(), "mcp__a".into()]);
    let mut a = Agent::start(start).await;
    a.tools.add(Blocker::new("mcp__a")).await.expect("running");
    a.tools.add(Blocker::new("mcp__b")).await.expect("running");
    a.prompt("which tools?").await;
    let reqs = rec.requests();
    let names: Vec<&str> = reqs[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read", "mcp__a"]);
    rec.assert_clean();
    a.close().await;
}
