//! One snapshot per kind of result, as the terminal client draws it: listings, trees,
//! subagent run cards, a subagent report, an MCP result with an image, short tool titles,
//! Markdown tables, and code highlighted by its language or left plain.

use serde_json::{Value, json};

use super::tests::{app, ev, frame};

/// A conversation of one assistant message calling `name` with `args`, answered by
/// `result` (the `tool_result` block's fields beside its id).
fn call(name: &str, args: Value, result: Value) -> String {
    let mut r = json!({"type": "tool_result", "tool_call_id": "c1"});
    if let (Some(o), Some(extra)) = (r.as_object_mut(), result.as_object()) {
        o.extend(extra.clone());
    }
    session(json!([
        {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_call", "id": "c1", "name": name, "args": args}]},
        {"id": "m2", "role": "user", "content": [r]}
    ]))
}

fn session(messages: Value) -> String {
    let mut a = app();
    a.apply(&ev(
        json!({"type": "sync", "status": "idle", "mode": "build",
        "session_id": "sess-1", "live_window": {"messages": messages}, "pending_requests": []}),
    ));
    frame(&mut a, 60, 16)
}

#[test]
fn a_path_list_is_a_listing() {
    insta::assert_snapshot!(call(
        "glob",
        json!({"pattern": "**/*.rs"}),
        json!({"content": {"kind": "text", "text": "src\nsrc/main.rs"},
            "render": {"kind": "path_list", "paths": [
                {"path": "src", "kind": "dir"},
                {"path": "src/main.rs", "kind": "file", "hint": "12 lines"}]}})
    ));
}

#[test]
fn a_tree_is_drawn_like_tree() {
    insta::assert_snapshot!(call(
        "ls",
        json!({"path": "."}),
        json!({"content": {"kind": "text", "text": "."},
            "render": {"kind": "tree", "root": {"name": ".", "kind": "dir", "children": [
                {"name": "src", "kind": "dir", "children": [{"name": "main.rs", "kind": "file"}]},
                {"name": "README.md", "kind": "file"}]}}})
    ));
}

fn run(alias: &str, state: &str, extra: Value) -> Value {
    let mut r = json!({"job_id": "job-1", "run_id": "run-1", "index": 0, "name": "general",
        "agent_id": "agent-1", "alias": alias, "state": state});
    if let (Some(o), Some(e)) = (r.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    r
}

#[test]
fn a_subagent_create_is_a_card_per_run() {
    let text = json!({"job_id": "job-1", "runs": [run("review", "queued", json!({})),
        run("tests", "queued", json!({}))]})
    .to_string();
    insta::assert_snapshot!(call(
        "subagent",
        json!({"action": "create", "tasks": [{"name": "review"}, {"name": "tests"}]}),
        json!({"content": {"kind": "text", "text": text}})
    ));
}

#[test]
fn a_subagent_wait_shows_final_text_and_usage() {
    let text = json!({"timed_out": false, "aggregate_state": "completed", "runs": [
        run("review", "completed", json!({"final_text": "No problems found.\nTwo nits.",
            "usage": {"input": 1200, "output": 80}}))]})
    .to_string();
    insta::assert_snapshot!(call(
        "subagent",
        json!({"action": "wait", "handle": "review"}),
        json!({"content": {"kind": "text", "text": text}})
    ));
}

#[test]
fn a_subagent_status_shows_a_failed_run() {
    let text = json!({"agents": [{"agent_id": "agent-1", "alias": "tests",
        "run": run("tests", "failed", json!({"error": "the provider refused"}))}]})
    .to_string();
    insta::assert_snapshot!(call(
        "subagent",
        json!({"action": "status"}),
        json!({"content": {"kind": "text", "text": text}})
    ));
}

#[test]
fn a_subagent_report_is_a_notice_not_a_user_message() {
    let report = json!({"subagent_report": {"job_id": "job-1", "run_id": "run-1",
        "alias": "snake_case_helper", "state": "completed", "final_text": "done_with_it"}});
    insta::assert_snapshot!(session(json!([
        {"id": "m1", "role": "user", "content": [
            {"type": "text", "text": format!("[subagent report]\n{report}")}]}
    ])));
}

#[test]
fn an_mcp_result_shows_its_text_and_its_images() {
    insta::assert_snapshot!(call(
        "mcp__browser__screenshot",
        json!({"url": "https://example.com"}),
        json!({"content": {"kind": "text", "text": "Page title: Example"},
            "images": [{"type": "image", "data": "iVBORw0KGgo=", "mime_type": "image/png"}]})
    ));
}

#[test]
fn tool_headers_are_short_titles() {
    insta::assert_snapshot!(session(json!([
        {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_call", "id": "c1", "name": "edit",
                "args": {"path": "notes.txt", "old_string": "a", "new_string": "b"}},
            {"type": "tool_call", "id": "c2", "name": "bash", "args": {"command": "cargo test\nls"}},
            {"type": "tool_call", "id": "c3", "name": "todo", "args": {}}]}
    ])));
}

#[test]
fn a_markdown_table_is_a_table() {
    insta::assert_snapshot!(session(json!([
        {"id": "m1", "role": "assistant", "content": [{"type": "text",
            "text": "Results:\n\n| crate | tests |\n|---|---:|\n| shard-cli | 185 |\n| web | 17 |\n\nDone."}]}
    ])));
}

#[test]
fn code_is_highlighted_by_its_language_and_plain_when_unknown() {
    use super::markdown::render;
    use super::theme::Theme;
    let t = Theme::coloured();
    let known = render("```python\nfor x in y: pass\n```", &t);
    assert!(
        known[1].spans.iter().any(|s| s.style == t.keyword()),
        "{:?}",
        known[1]
    );
    // English in an unlabelled fence is not coloured as code.
    let plain = render("```\nfor if in while\n```", &t);
    assert!(
        plain[1].spans.iter().all(|s| s.style != t.keyword()),
        "{:?}",
        plain[1]
    );
    insta::assert_snapshot!(session(json!([
        {"id": "m1", "role": "assistant", "content": [{"type": "text",
            "text": "```python\nfor x in y: pass\n```\n```\nplain words if for\n```"}]}
    ])));
}
