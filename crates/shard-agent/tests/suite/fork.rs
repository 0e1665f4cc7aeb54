//! `session_op fork` and `session_op list` (docs/protocol.md §9.2): every error row, the fork's
//! provenance, the source left byte for byte, and the list showing the fork.

use serde_json::json;

use super::support::*;

fn transcript(dirs: &Dirs, session_id: &str) -> Vec<u8> {
    std::fs::read(
        dirs.home
            .join("sessions")
            .join(session_id)
            .join("session.jsonl"),
    )
    .expect("transcript")
}

#[tokio::test]
async fn fork_errors_provenance_and_list() {
    let dirs = Dirs::new();
    let rec = Recorder::new(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::hang("busy"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.prompt("first").await;
    let at = a.seen_of("message_complete")[0]["message_id"]
        .as_str()
        .expect("id")
        .to_string();
    a.prompt("second").await;
    let before = transcript(&dirs, &a.session_id);

    let bad = a
        .send(json!({"type": "session_op", "op": "fork", "args": {}}))
        .await;
    let resp = a
        .until(|e| e["type"] == "response" && e["id"] == json!(bad))
        .await;
    assert_eq!(resp["error"]["code"], "INVALID_REQUEST");
    let missing = a
        .send(json!({"type": "session_op", "op": "fork",
                     "args": {"from_entry_id": "ent-01J00000000000000000000000"}}))
        .await;
    let resp = a
        .until(|e| e["type"] == "response" && e["id"] == json!(missing))
        .await;
    assert_eq!(resp["error"]["code"], "NOT_FOUND");

    let data = a
        .call(json!({"type": "session_op", "op": "fork", "args": {"from_entry_id": at}}))
        .await;
    let fork_session = data["session_id"].as_str().expect("session_id").to_string();
    assert!(
        data["fork_id"]
            .as_str()
            .is_some_and(|f| f.starts_with("fork-"))
    );
    assert_eq!(
        transcript(&dirs, &a.session_id),
        before,
        "the source changed"
    );
    let fork_dir = dirs
        .home
        .join("sessions")
        .join(&a.session_id)
        .join("forks")
        .join(&fork_session);
    assert!(fork_dir.join("session.jsonl").is_file());

    let list = a.call(json!({"type": "session_op", "op": "list"})).await;
    let sessions = list["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 2, "{list}");
    assert_eq!(
        sessions[0]["session_id"],
        json!(fork_session),
        "newest first"
    );
    assert_eq!(sessions[0]["forked_from"]["source_entry_id"], json!(at));
    assert_eq!(sessions[0]["forked_from"]["fork_id"], data["fork_id"]);
    assert_eq!(sessions[0]["message_count"], json!(2));
    assert_eq!(sessions[1]["message_count"], json!(4));
    assert_eq!(sessions[1]["current"], json!(true));

    // During a turn, even a fork at an unknown entry is CONFLICT.
    a.send(json!({"type": "prompt", "message": "third"})).await;
    a.until_type("message_delta").await;
    let busy = a
        .send(json!({"type": "session_op", "op": "fork",
                     "args": {"from_entry_id": "ent-01J00000000000000000000000"}}))
        .await;
    let resp = a
        .until(|e| e["type"] == "response" && e["id"] == json!(busy))
        .await;
    assert_eq!(resp["error"]["code"], "CONFLICT");
    a.call(json!({"type": "abort"})).await;
    a.until_type("turn_end").await;
    rec.assert_clean();
    a.close().await;

    // The fork opens as a session of its own and holds the window at `at`.
    let rec2 = Recorder::new(vec![Reply::text("forked answer")]);
    let mut start = Start::new(&dirs, &rec2);
    start.session_id = Some(fork_session);
    let mut b = Agent::start(start).await;
    b.prompt("on the fork").await;
    assert_eq!(
        outline(&rec2.requests()[0]),
        ["user: first", "assistant: one", "user: on the fork"]
    );
    b.close().await;
}
