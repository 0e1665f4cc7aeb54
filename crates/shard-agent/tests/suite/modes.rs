//! Mode and model changes mid-session. "Byte-stable" (docs/decisions.md, "Runtime
//! seams"): modes never filter the tool list (the gate refuses instead), so the tool list
//! stays identical across a mode switch; the system prompt changes exactly when the mode
//! does (its prompt addition); a model switch changes neither.

use serde_json::json;

use super::support::*;

#[tokio::test]
async fn a_mode_switch_changes_only_the_system_prompt_a_model_switch_nothing() {
    let dirs = Dirs::new();
    let rec = Recorder::new(vec![
        Reply::text("in build"),
        Reply::tools(&[("c1", "write", json!({"path": "x.txt", "content": "x"}))]),
        Reply::text("refused, as planned"),
        Reply::text("on haiku"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.prompt("one").await;

    rec.allow(Break::Mode);
    a.call(json!({"type": "set_mode", "mode": "plan"})).await;
    a.prompt("two").await;

    a.call(json!({"type": "set_model", "model": "anthropic/claude-haiku-4-5"}))
        .await;
    a.prompt("three").await;

    let reqs = rec.requests();
    assert_eq!(reqs.len(), 4);
    assert_ne!(reqs[0].system, reqs[1].system);
    assert!(reqs[1].system.contains("plan mode"), "{}", reqs[1].system);
    assert_eq!(reqs[1].system, reqs[3].system);
    assert_eq!(reqs[0].tools, reqs[3].tools);
    assert_eq!(reqs[2].model, "claude-sonnet-4-5");
    assert_eq!(reqs[3].model, "claude-haiku-4-5");
    assert!(result_text(&reqs[2], "c1").contains("plan mode"));
    assert!(!dirs.cwd.join("x.txt").exists());
    rec.assert_clean();
    a.close().await;
}
