//! `session_op fork` and `session_op list` (docs/protocol.md §9.2): every error row, the fork's
//! provenance, the source left byte for byte, and the list showing the fork.

use serde_json::json;
use shard_protocol::ErrorCode;
use shard_protocol::responses::{ForkData, SessionListData};

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
    let at = a
        .seen
        .iter()
        .find_map(pick::message_complete)
        .expect("a message")
        .message_id;
    a.prompt("second").await;
    let before = transcript(&dirs, &a.session_id);

    let bad = json!({"type": "session_op", "op": "fork", "args": {}});
    assert_eq!(a.fails(bad).await, ErrorCode::InvalidRequest);
    let missing = json!({"type": "session_op", "op": "fork",
                         "args": {"from_entry_id": "ent-01J00000000000000000000000"}});
    assert_eq!(a.fails(missing).await, ErrorCode::NotFound);

    let data: ForkData = a
        .call_as(json!({"type": "session_op", "op": "fork", "args": {"from_entry_id": at}}))
        .await;
    let fork_session = data.session_id.clone();
    assert!(data.fork_id.starts_with("fork-"), "{data:?}");
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

    let list: SessionListData = a.call_as(json!({"type": "session_op", "op": "list"})).await;
    let sessions = &list.sessions;
    assert_eq!(sessions.len(), 2, "{list:?}");
    assert_eq!(sessions[0].session_id, fork_session, "newest first");
    let from = sessions[0]
        .forked_from
        .as_ref()
        .expect("a fork's provenance");
    assert_eq!(from.source_entry_id, at);
    assert_eq!(from.fork_id, data.fork_id);
    assert_eq!(sessions[0].message_count, Some(2));
    assert_eq!(sessions[1].message_count, Some(4));
    assert!(sessions[1].current);

    // During a turn, even a fork at an unknown entry is CONFLICT.
    a.send(json!({"type": "prompt", "message": "third"})).await;
    a.until_type("message_delta").await;
    let busy = json!({"type": "session_op", "op": "fork",
                      "args": {"from_entry_id": "ent-01J00000000000000000000000"}});
    assert_eq!(a.fails(busy).await, ErrorCode::Conflict);
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
