//! `session.activate` end to end: the real daemon, scripted Runtimes, a fork
//! made over the protocol, and the next prompt landing in the activated session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use shard_protocol::Event;
use shard_protocol::command::AttachRole;

use super::daemon::{Daemon, create_req, home, prompt, script, until};

fn manifest_path(home: &std::path::Path, agent: &str) -> std::path::PathBuf {
    home.join("manifests").join(format!("{agent}.json"))
}

fn activate(agent: &str, session: &str) -> shard_protocol::command::Command {
    serde_json::from_value(json!({"type":"session.activate","agent_id":agent,"session_id":session}))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_activate_moves_the_next_prompt_to_another_session() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    // Each generation replays the script from its first turn: turn 0 answers in text,
    // turn 1 runs a tool (and waits for its permission), turn 2 ends that turn.
    let s = script(
        h.path(),
        "s.json",
        json!([
            {"steps":[{"text":"plain answer"}]},
            {"steps":[{"tool_call":{"id":"call-1","name":"bash","args":{"command":"echo hi"}}}]},
            {"steps":[{"text":"done"}]}
        ]),
    );
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    let (ev, _) = until(&mut e, |e| matches!(e, Event::Sync(_))).await;
    let Event::Sync(first) = ev else {
        unreachable!()
    };
    let session_a = first.session_id.clone().unwrap();

    c.call(prompt(&id, "the first prompt")).await.unwrap();
    let (_, before) = until(&mut e, |e| matches!(e, Event::TurnEnd(_))).await;
    let first_entry = before
        .iter()
        .find_map(|e| match e {
            Event::MessageComplete(m) => Some(m.message_id.clone()),
            _ => None,
        })
        .unwrap();

    // A turn waiting on a permission: activation is refused, nothing changes.
    c.call(prompt(&id, "run it")).await.unwrap();
    let (req, _) = until(&mut e, |e| matches!(e, Event::PermissionRequest(_))).await;
    let Event::PermissionRequest(req) = req else {
        unreachable!()
    };
    let r = c.request(activate(&id, &session_a)).await.unwrap();
    assert!(!r.success, "{r:?}");
    assert_eq!(r.error.unwrap().code.as_str(), "CONFLICT");
    let allow = json!({"type":"permission_response","agent_id":id,"request_id":req.request_id,"decision":"allow"});
    assert!(
        c.request(serde_json::from_value(allow).unwrap())
            .await
            .unwrap()
            .success
    );
    until(&mut e, |e| matches!(e, Event::TurnEnd(_))).await;

    // Session B: a fork of A at its first prompt, made over the daemon.
    let fork =
        json!({"type":"session_op","agent_id":id,"op":"fork","args":{"from_entry_id":first_entry}});
    let forked = c
        .call(serde_json::from_value(fork).unwrap())
        .await
        .unwrap()
        .unwrap();
    let session_b = forked["session_id"].as_str().unwrap().to_string();
    assert_ne!(session_b, session_a);

    // Unknown session (well-formed id) and unknown agent: NOT_FOUND.
    let bogus = shard_protocol::ids::new_id(shard_protocol::ids::SESSION);
    for (agent, session) in [
        (id.clone(), bogus),
        (
            shard_protocol::ids::new_id(shard_protocol::ids::AGENT),
            session_b.clone(),
        ),
    ] {
        let r = c.request(activate(&agent, &session)).await.unwrap();
        assert!(!r.success, "{r:?}");
        assert_eq!(r.error.unwrap().code.as_str(), "NOT_FOUND");
    }

    let store = shard_session::SessionStore::new(h.path());
    let file_of = |sid: &str| store.session_dir(sid).unwrap().join("session.jsonl");
    let a_before = std::fs::read(file_of(&session_a)).unwrap();
    let r = c.call(activate(&id, &session_b)).await.unwrap().unwrap();
    assert_eq!(r["session_id"], json!(session_b));
    assert_eq!(r["previous_session_id"], json!(session_a));
    assert_eq!(r["runtime_stopping"], true);
    // Durable: the manifest names the new session.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(manifest_path(h.path(), &id)).unwrap()).unwrap();
    assert_eq!(manifest["session_id"], json!(session_b));

    // The next prompt restores the agent on B: the new generation's sync says so.
    c.call(prompt(&id, "the prompt for B")).await.unwrap();
    let (ev, _) = until(&mut e, |e| matches!(e, Event::Sync(_))).await;
    let Event::Sync(s) = ev else { unreachable!() };
    assert_eq!(s.session_id.as_deref(), Some(session_b.as_str()));
    assert!(s.runtime_epoch.unwrap() >= 1);
    until(&mut e, |e| matches!(e, Event::TurnEnd(_))).await;

    let b = String::from_utf8(std::fs::read(file_of(&session_b)).unwrap()).unwrap();
    assert!(b.contains("the prompt for B"), "{b}");
    assert_eq!(
        std::fs::read(file_of(&session_a)).unwrap(),
        a_before,
        "the source session is untouched"
    );
    let agents = c.list().await.unwrap();
    assert_eq!(agents[0].session_id.as_deref(), Some(session_b.as_str()));
}

/// A create writes its manifest once (before the Runtime starts): the first start is not
/// written back into it, since the session records it. A restarted daemon reads it there,
/// so the agent comes back in the mode its session recorded (here changed after creation),
/// not the one it was created with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_daemon_restores_the_mode_the_session_recorded() {
    let h = home();
    let s = script(h.path(), "s.json", json!([{"steps":[{"text":"hi"}]}]));
    let id;
    {
        let mut d = Daemon::start(h.path(), &[]);
        let c = d.client().await;
        let mut req = create_req(h.path(), &s);
        req.mode = Some("plan".into());
        id = c.create(req).await.unwrap();
        let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
        let (ev, _) = until(&mut e, |e| matches!(e, Event::Sync(_))).await;
        let Event::Sync(first) = ev else {
            unreachable!()
        };
        assert_eq!(first.mode, "plan");
        let set = json!({"type":"set_mode","agent_id":id,"mode":"build"});
        c.call(serde_json::from_value(set).unwrap()).await.unwrap();
        until(&mut e, |e| matches!(e, Event::ModeChanged(_))).await;
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(manifest_path(h.path(), &id)).unwrap()).unwrap();
        assert_eq!(manifest["started"], json!(false), "written once, at create");
        let down = json!({"type":"daemon.shutdown"});
        assert!(
            c.request(serde_json::from_value(down).unwrap())
                .await
                .unwrap()
                .success
        );
        assert!(d.wait_exit().success());
    }
    let d = Daemon::start(h.path(), &[]);
    let c = d.client().await;
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    let (ev, _) = until(&mut e, |e| matches!(e, Event::Sync(_))).await;
    let Event::Sync(again) = ev else {
        unreachable!()
    };
    assert_eq!(
        again.mode, "build",
        "the session's mode, not the creation's"
    );
}
