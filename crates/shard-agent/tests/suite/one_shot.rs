//! A one-shot Runtime (`shard run`): its new session is created off the start path, and a
//! creation that fails still fails the turn loudly.

use shard_session::SessionStore;

use super::support::*;

fn one_shot<'a>(dirs: &'a Dirs, rec: &std::sync::Arc<Recorder>) -> Start<'a> {
    Start {
        one_shot: true,
        ..Start::new(dirs, rec)
    }
}

#[tokio::test]
async fn a_one_shot_session_holds_the_whole_turn_once_it_ends() {
    let dirs = Dirs::new();
    let rec = Recorder::new(vec![Reply::text("hello")]);
    let mut a = Agent::start(one_shot(&dirs, &rec)).await;
    let end = a.prompt("hi").await;
    let end = pick::turn_end(&end).expect("turn_end");
    assert_eq!(
        end.stop_reason.as_deref(),
        Some("end_turn"),
        "{:?}",
        a.seen_of("error")
    );
    assert!(a.seen_of("error").is_empty(), "{:?}", a.seen_of("error"));
    let id = a.session_id.clone();
    a.close().await;
    let session = SessionStore::new(&dirs.home)
        .open_existing(&id)
        .expect("reopen");
    let state = session.state();
    assert_eq!(state.message_count, 2);
    assert_eq!(state.title.as_deref(), Some("hi"));
    assert_eq!(
        state.model.as_ref().map(|m| m.model.as_str()),
        Some("claude-sonnet-4-5")
    );
    assert!(session.dir().join("tool-output").is_dir());
}

#[tokio::test]
async fn a_session_that_cannot_be_created_fails_the_turn_loudly() {
    let dirs = Dirs::new();
    // `sessions` is a file: the session's folder can never be made.
    std::fs::write(dirs.home.join("sessions"), "not a folder").expect("write");
    let rec = Recorder::new(vec![Reply::text("hello")]);
    let mut a = Agent::start(one_shot(&dirs, &rec)).await;
    let end = a.prompt("keep this").await;
    let end = pick::turn_end(&end).expect("turn_end");
    assert_eq!(end.stop_reason.as_deref(), Some("error"));
    // Whether the prompt's append or the turn's end met the failure first depends on
    // timing; either way one error names the session and says nothing was saved.
    let errors: Vec<String> = a
        .seen
        .iter()
        .filter_map(pick::error)
        .map(|e| e.message)
        .collect();
    assert!(
        errors
            .iter()
            .any(|m| m.contains(&a.session_id) && m.contains("nothing of this session was saved")),
        "{errors:?}"
    );
    a.close().await;
}
