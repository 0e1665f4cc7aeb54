//! Strict steers: a steer that must land in the running turn at its next
//! provider boundary (`injected`, answered then) or be dropped (`conflict`) — never kept
//! for, or starting, a later turn. The turn is held open on a tool the test releases.

use serde_json::json;
use shard_protocol::Event;
use shard_protocol::command::kind;
use shard_protocol::event::Response;
use shard_protocol::responses::{SteerData, SteerOutcome};

use super::support::*;

fn response_to<'a>(seen: &'a [Event], id: &str) -> Option<&'a Response> {
    seen.iter().find_map(|e| match e {
        Event::Response(r) if r.id.as_deref() == Some(id) => Some(r),
        _ => None,
    })
}

/// A strict steer's answer: its data, typed.
fn steer_data(r: &Response) -> SteerData {
    assert!(r.success, "{r:?}");
    serde_json::from_value(r.data.clone().expect("a strict steer answers with data")).unwrap()
}

#[tokio::test]
async fn a_strict_steer_is_answered_injected_when_the_turn_takes_it() {
    let dirs = Dirs::new();
    let blocker = Blocker::new("block");
    let rec = Recorder::new(vec![
        Reply::tools(&[("c1", "block", json!({"mode": "read"}))]),
        Reply::text("steered"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.tools.add(blocker.clone()).await.expect("running");
    a.send(json!({"type": "prompt", "message": "start"})).await;
    let turn = a.turn_started().await;
    a.until_type("tool_call").await;
    let steer = a
        .send(json!({"type": "steer", "message": "also this", "strict": true, "turn_id": turn}))
        .await;
    // Commands are handled in order: once this one is answered the steer was taken in,
    // and it is not answered while the tool still holds the turn.
    let modes = a.ok::<kind::ListModes>(json!({"type": "list_modes"})).await;
    assert_eq!(modes.active, "build");
    assert!(response_to(&a.seen, &steer).is_none(), "answered too early");
    blocker.release.notify_one();
    let r = steer_data(&a.response(&steer).await);
    assert_eq!(r.status, SteerOutcome::Injected, "{r:?}");
    assert_eq!(r.turn_id.as_deref(), Some(turn.as_str()));
    a.until_type("turn_end").await;
    let reqs = rec.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        outline(&reqs[1]).last().map(String::as_str),
        Some("user: also this")
    );
    rec.assert_clean();
    a.close().await;
}

#[tokio::test]
async fn a_strict_steer_the_turn_ends_before_is_dropped_with_conflict() {
    let dirs = Dirs::new();
    let blocker = Blocker::new("block");
    let rec = Recorder::new(vec![
        Reply::tools(&[("c1", "block", json!({"mode": "read"}))]),
        Reply::text("next answer"),
        Reply::text("third answer"),
    ]);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    a.tools.add(blocker.clone()).await.expect("running");
    a.send(json!({"type": "prompt", "message": "start"})).await;
    let turn = a.turn_started().await;
    a.until_type("tool_call").await;
    let steer = a
        .send(json!({"type": "steer", "message": "LATE-STEER", "strict": true}))
        .await;
    // The turn ends (aborted) before its next provider boundary.
    a.call(json!({"type": "abort"})).await;
    let r = steer_data(&a.response(&steer).await);
    assert_eq!(r.status, SteerOutcome::Conflict, "{r:?}");
    assert_eq!(r.turn_id.as_deref(), Some(turn.as_str()));
    a.until_type("turn_end").await;

    // Between turns: answered `conflict` at once, and no turn starts from it.
    let idle = a
        .send(json!({"type": "steer", "message": "IDLE-STEER", "strict": true}))
        .await;
    let r = steer_data(&a.response(&idle).await);
    assert_eq!(r.status, SteerOutcome::Conflict, "{r:?}");
    assert_eq!(r.turn_id, None, "{r:?}");
    let ended = a.seen_of("turn_end").len();

    // The next turn carries neither message; a strict steer naming an old turn conflicts.
    a.send(json!({"type": "prompt", "message": "next"})).await;
    a.until_type("turn_start").await;
    let stale = a
        .send(json!({"type": "steer", "message": "STALE-STEER", "turn_id": turn}))
        .await;
    let r = steer_data(&a.response(&stale).await);
    assert_eq!(r.status, SteerOutcome::Conflict, "{r:?}");
    // The turn may have ended while the answer was awaited.
    if a.seen_of("turn_end").len() == ended {
        a.until_type("turn_end").await;
    }
    assert_eq!(a.seen_of("turn_end").len(), ended + 1);
    a.prompt("third").await;
    let reqs = rec.requests();
    assert_eq!(
        reqs.len(),
        3,
        "one call per later turn, none started by a steer"
    );
    for r in &reqs {
        let o = outline(r).join("\n");
        for m in ["LATE-STEER", "IDLE-STEER", "STALE-STEER"] {
            assert!(!o.contains(m), "{m} reached the model:\n{o}");
        }
    }
    rec.assert_clean();
    a.close().await;
}
