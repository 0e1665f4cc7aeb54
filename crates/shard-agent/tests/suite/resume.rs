//! A session resumed by a new Runtime: its first request extends the last one the
//! previous Runtime sent, value for value (the prompt cache survives a restart).

use serde_json::json;

use super::support::*;

#[tokio::test]
async fn a_resumed_session_extends_the_previous_runtimes_requests() {
    let dirs = Dirs::new();
    write(&dirs.cwd, "a.txt", "alpha\n");
    let rec = Recorder::new(vec![
        Reply::tools(&[("c1", "read", json!({"path": "a.txt"}))]),
        Reply::text("read it"),
        Reply::text("still here"),
    ]);
    let a = Agent::start(Start::new(&dirs, &rec));
    let mut a = a.await;
    a.prompt("read a").await;
    let session_id = a.session_id.clone();
    a.close().await;

    rec.allow(Break::Restart);
    let mut start = Start::new(&dirs, &rec);
    start.session_id = Some(session_id.clone());
    let mut b = Agent::start(start).await;
    assert_eq!(b.session_id, session_id);
    b.prompt("and now").await;
    let reqs = rec.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        outline(&reqs[2]),
        [
            "user: read a",
            "assistant: call c1 read",
            "user: result c1 ok",
            "assistant: read it",
            "user: and now"
        ]
    );
    rec.assert_clean();
    b.close().await;
}
