//! A long scripted session (cache-warm requests): 20 turns with tool calls, a
//! steer, a mode change and a model change. The recorder checks every request: each one
//! extends the previous one message for message (shared, not copied), with the system
//! prompt and tool list unchanged except where a mode change was announced.

use serde_json::json;

use super::support::*;

#[tokio::test]
async fn twenty_turns_with_tools_steer_mode_and_model_changes_only_extend_the_prefix() {
    let dirs = Dirs::new();
    write(&dirs.cwd, "a.txt", "alpha\n");
    let blocker = Blocker::new("block");
    let mut replies = Vec::new();
    for turn in 0..20 {
        if turn == 5 {
            replies.push(Reply::tools(&[("s1", "block", json!({"mode": "read"}))]));
        } else {
            let id = format!("c{turn}");
            replies.push(Reply::tools(&[(
                id.as_str(),
                "read",
                json!({"path": "a.txt"}),
            )]));
        }
        replies.push(Reply::text(&format!("answer {turn}")));
    }
    let rec = Recorder::new(replies);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.tools.add(blocker.clone()).await.expect("running");
    for turn in 0..20 {
        if turn == 10 {
            rec.allow(Break::Mode);
            a.call(json!({"type": "set_mode", "mode": "plan"})).await;
        }
        if turn == 15 {
            a.call(json!({"type": "set_model", "model": "anthropic/claude-haiku-4-5"}))
                .await;
        }
        if turn == 5 {
            a.send(json!({"type": "prompt", "message": "turn 5"})).await;
            a.until_type("tool_call").await;
            a.call(json!({"type": "steer", "message": "and a steer"}))
                .await;
            blocker.release.notify_one();
            a.until_type("turn_end").await;
        } else {
            a.prompt(&format!("turn {turn}")).await;
        }
    }
    let reqs = rec.requests();
    assert_eq!(reqs.len(), 40);
    assert_eq!(reqs[39].model, "claude-haiku-4-5");
    assert!(outline(&reqs[11]).contains(&"user: and a steer".to_string()));
    // 20 turns × (prompt, call, result, answer) + the steer, before the last answer.
    assert_eq!(reqs[39].messages.len(), 20 * 4 + 1 - 1);
    rec.assert_clean();
    a.close().await;
}
