//! The daemon's own defences, end to end with the real `shard daemon` and `shard agent`:
//! a tool process cannot use the daemon (issue 10 §5), the daemon's death stops its work
//! and a restarted daemon restores (issue 10 §7), and `agent.create` refuses settings no
//! Runtime would accept (issue 9 item 7).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use shard_protocol::Event;
use shard_protocol::command::AttachRole;

use super::daemon::*;

/// True while `pid` exists and is not a zombie.
fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Allows the next permission request of an attached interactive client.
async fn allow_next(c: &shard_client::Client, e: &mut shard_client::AgentEvents, id: &str) {
    let (ev, _) = until(e, |e| matches!(e, Event::PermissionRequest(_))).await;
    let Event::PermissionRequest(req) = ev else {
        unreachable!()
    };
    let allow = json!({"type":"permission_response","agent_id":id,"request_id":req.request_id,"decision":"allow"});
    c.call(serde_json::from_value(allow).unwrap())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_process_cannot_use_the_daemon() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let cmd = format!(
        "SHARD_HOME='{}' '{}' ls; echo \"exit=$?\"",
        h.path().display(),
        env!("CARGO_BIN_EXE_shard")
    );
    let s = script(h.path(), "s.json", bash_turns(&cmd));
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&id, "list the agents")).await.unwrap();
    allow_next(&c, &mut e, &id).await;
    let (ev, _) = until(&mut e, |e| matches!(e, Event::ToolResult(_))).await;
    let Event::ToolResult(t) = ev else {
        unreachable!()
    };
    let out = serde_json::to_string(&t.content).unwrap();
    assert!(
        !out.contains(&id),
        "the tool process listed the agents: {out}"
    );
    assert!(!out.contains("exit=0"), "`shard ls` succeeded: {out}");
    let log = std::fs::read_to_string(h.path().join("daemon-test.log")).unwrap();
    assert!(
        log.contains("tool processes may not use the daemon"),
        "the daemon says why"
    );
    // The daemon is fine and the person's own client still works.
    assert_eq!(c.list().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_daemon_stops_its_runtimes_and_a_new_daemon_restores() {
    let h = home();
    let s = script(
        h.path(),
        "s.json",
        json!([
            {"steps":[{"text":"first answer"}]},
            {"steps":[{"tool_call":{"id":"call-1","name":"bash","args":{"command":"sleep 300 & sleep 301; wait"}}}]},
            {"steps":[{"text":"done"}]}
        ]),
    );
    let mut d = Daemon::start(h.path(), &[]);
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&id, "one")).await.unwrap();
    until(&mut e, |e| matches!(e, Event::TurnEnd(_))).await;
    c.call(prompt(&id, "two")).await.unwrap();
    allow_next(&c, &mut e, &id).await;
    until(&mut e, |e| matches!(e, Event::ToolCall(_))).await;
    let state = h.path().join("runtime").join(format!("{id}.json"));
    let mut groups = Vec::new();
    eventually("the runtime to record the tool's process group", || {
        let v: Value =
            serde_json::from_slice(&std::fs::read(&state).unwrap_or_default()).unwrap_or_default();
        groups = v["process_groups"].as_array().cloned().unwrap_or_default();
        !groups.is_empty()
    })
    .await;
    let pgid = groups[0].as_i64().unwrap();
    let runtime = runtime_pid(h.path(), &id);
    assert!(process_alive(runtime) && group_alive(pgid));
    drop(e);
    drop(c);
    d.child.kill().unwrap(); // SIGKILL: the daemon gets no say
    d.wait_exit();
    // Its Runtime sees end of input, aborts the turn (killing the tool) and exits.
    eventually("the orphaned runtime to exit", || !process_alive(runtime)).await;
    eventually("the tool's processes to die", || !group_alive(pgid)).await;
    // A new daemon restores the agent on the first attach: no CONFLICT.
    let d2 = Daemon::start(h.path(), &[]);
    let c2 = d2.client().await;
    let (_, mut e2) = c2.attach(&id, AttachRole::Interactive).await.unwrap();
    let Event::Sync(sync) = next(&mut e2).await else {
        panic!("sync first")
    };
    let texts = window_texts(&sync);
    assert!(texts.iter().any(|t| t == "first answer"), "{texts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_create_refuses_an_unknown_mode_or_provider_and_creates_nothing() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let s = script(h.path(), "s.json", json!([]));
    let c = d.client().await;
    for bad in [
        json!({"mode":"bogus"}),
        json!({"provider":"nonexistent-provider","model":"x"}),
    ] {
        let mut req = serde_json::to_value(create_req(h.path(), &s)).unwrap();
        for (k, v) in bad.as_object().unwrap() {
            req[k] = v.clone();
        }
        req["type"] = json!("agent.create");
        let r = c
            .request(serde_json::from_value(req).unwrap())
            .await
            .unwrap();
        assert!(!r.success, "{bad} was accepted");
        let err = r.error.unwrap();
        assert_eq!(
            err.code.as_str(),
            "INVALID_REQUEST",
            "{bad}: {}",
            err.message
        );
        assert!(!err.message.is_empty());
    }
    assert!(c.list().await.unwrap().is_empty(), "nothing was created");
    let manifests = std::fs::read_dir(h.path().join("agents")).unwrap().count();
    assert_eq!(manifests, 0);
    // A good one still works.
    c.create(create_req(h.path(), &s)).await.unwrap();
}
