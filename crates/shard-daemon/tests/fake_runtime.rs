//! The broker against an in-process fake Runtime: the test plays `shard agent` over a
//! pair of pipes and checks what the daemon forwards and what clients see.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::StreamExt;
use serde_json::json;
use shard_client::Client;
use shard_daemon::ExitInfo;
use shard_protocol::command::{AgentCreate, AttachRole, Command, kind};
use shard_protocol::types::PermissionDecision;
use shard_protocol::{CommandSpec, Event, PermissionAnswer};

#[tokio::test]
async fn attach_handshake_sends_sync_then_only_later_events() {
    let mut s = start(|_| {}).await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c1, None).await;
    assert_eq!(rt.spec.agent_id, id);
    let f = c1.attach(&id, AttachRole::Interactive);
    tokio::pin!(f);
    // c1's attach: the daemon asks the Runtime for a sync.
    let cmd = tokio::select! { c = rt.next_cmd() => c, _ = &mut f => panic!("no sync yet") };
    assert!(matches!(cmd.command, Command::RequestSync(_)), "{cmd:?}");
    rt.emit(sync_json("streaming")).await;
    rt.answer(&cmd, None).await;
    let (_, mut e1) = tokio::time::timeout(T, f).await.unwrap().unwrap();
    assert!(matches!(next(&mut e1).await, Event::Sync(_)));

    let c2 = Client::connect_daemon(&s.home).await.unwrap();
    let id2 = id.clone();
    let attach2 = tokio::spawn(async move {
        let r = c2.attach(&id2, AttachRole::Interactive).await;
        (c2, r)
    });
    let cmd = rt.next_cmd().await;
    assert!(matches!(cmd.command, Command::RequestSync(_)), "{cmd:?}");
    // Events before the snapshot are covered by it; events after it must all arrive once.
    for i in 0..5 {
        rt.emit(delta(i)).await;
    }
    rt.emit(sync_json("streaming")).await;
    for i in 5..10 {
        rt.emit(delta(i)).await;
    }
    rt.answer(&cmd, None).await;
    for i in 10..15 {
        rt.emit(delta(i)).await;
    }
    let (_c2, r) = attach2.await.unwrap();
    let (_, mut e2) = r.unwrap();
    assert!(matches!(next(&mut e2).await, Event::Sync(_)), "sync first");
    let mut seen2 = Vec::new();
    while seen2.len() < 10 {
        if let Some(t) = delta_text(&next(&mut e2).await) {
            seen2.push(t);
        }
    }
    assert_eq!(seen2, (5..15).map(|i| format!("d{i} ")).collect::<Vec<_>>());
    let mut seen1 = Vec::new();
    while seen1.len() < 15 {
        if let Some(t) = delta_text(&next(&mut e1).await) {
            seen1.push(t);
        }
    }
    assert_eq!(seen1, (0..15).map(|i| format!("d{i} ")).collect::<Vec<_>>());
}

#[tokio::test]
async fn late_attacher_sees_sync_first_then_each_event_once() {
    let mut s = start(|_| {}).await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c1, None).await;
    let c2 = Arc::new(Client::connect_daemon(&s.home).await.unwrap());
    let c2b = Arc::clone(&c2);
    let id2 = id.clone();
    let attach = tokio::spawn(async move { c2b.attach(&id2, AttachRole::Observer).await });
    let cmd = rt.next_cmd().await;
    for i in 0..3 {
        rt.emit(delta(i)).await;
    }
    rt.emit(sync_json("streaming")).await;
    for i in 3..6 {
        rt.emit(delta(i)).await;
    }
    rt.answer(&cmd, None).await;
    let (data, mut e2) = attach.await.unwrap().unwrap();
    assert_eq!(data.info.agent_id, id);
    match next(&mut e2).await {
        Event::Sync(sy) => {
            assert_eq!(sy.agent_id.as_deref(), Some(id.as_str()));
            assert_eq!(sy.runtime_epoch, Some(0));
            assert_eq!(
                sy.capabilities.as_deref(),
                Some(&["mode-catalog".to_string()][..])
            );
        }
        other => panic!("expected sync first, got {other:?}"),
    }
    let mut seen = Vec::new();
    while seen.len() < 3 {
        if let Some(t) = delta_text(&next(&mut e2).await) {
            seen.push(t);
        }
    }
    assert_eq!(seen, vec!["d3 ", "d4 ", "d5 "]);
    // Observers are read-only.
    let r = c2
        .request(
            serde_json::from_value(json!({"type":"prompt","agent_id":id,"message":"hi"})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.error.unwrap().code.as_str(), "PERMISSION_DENIED");
}

#[tokio::test]
async fn command_ids_are_rewritten_and_mapped_back() {
    let mut s = start(|_| {}).await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c1, None).await;
    let (_, _e1) = attach_idle(&c1, &id, &mut rt).await;
    let c2 = Client::connect_daemon(&s.home).await.unwrap();
    // An unattached client is refused.
    let raw = json!({"type":"list_modes","agent_id":id});
    let r = c2
        .request(serde_json::from_value(raw.clone()).unwrap())
        .await
        .unwrap();
    assert_eq!(r.error.unwrap().code.as_str(), "NOT_ATTACHED");
    // Two clients both use id "1".
    let mut m = raw.clone();
    m["id"] = json!("1");
    c1.send(&serde_json::from_value(m.clone()).unwrap())
        .unwrap();
    let a = rt.next_cmd().await;
    assert_ne!(a.id.as_deref(), Some("1"));
    assert_eq!(
        a.command.routing_agent_id(),
        None,
        "routing id stripped for the Runtime"
    );
    rt.answer(&a, Some(json!({"modes":[],"active":"first"})))
        .await;
    // c1 gets its response with its own id back.
    loop {
        if let Some(shard_protocol::IncomingEvent::Known(Event::Response(r))) =
            c1.next_event().await
        {
            assert_eq!(r.id.as_deref(), Some("1"));
            let modes = kind::ListModes::decode_response(r.data).unwrap();
            assert_eq!(modes.active, "first");
            break;
        }
    }
}

#[tokio::test]
async fn permission_first_valid_answer_wins_and_everyone_sees_resolved() {
    let mut s = start(|_| {}).await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c1, None).await;
    let c2 = Arc::new(Client::connect_daemon(&s.home).await.unwrap());
    let mut evs = Vec::new();
    for c in [&c1, &*c2] {
        let f = c.attach(&id, AttachRole::Interactive);
        tokio::pin!(f);
        let cmd = tokio::select! { c = rt.next_cmd() => c, _ = &mut f => panic!("no sync yet") };
        rt.emit(sync_json("idle")).await;
        rt.answer(&cmd, None).await;
        evs.push(f.await.unwrap().1);
    }
    for e in &mut evs {
        assert!(matches!(next(e).await, Event::Sync(_)));
    }
    rt.emit(json!({"type":"permission_request","request_id":"req-1","tool_name":"bash","input":{"command":"ls"},
        "prompt":"run ls?","options":["allow","deny"],
        "choices":[{"id":"once","label":"Allow once","intent":"allow"},{"id":"no","label":"Deny","intent":"deny"}]})).await;
    for e in &mut evs {
        assert!(matches!(next(e).await, Event::PermissionRequest(_)));
    }
    let answer = |choice: &str| {
        serde_json::from_value(json!({"type":"permission_response","agent_id":id,"request_id":"req-1","choice_id":choice})).unwrap()
    };
    // An unknown choice is invalid and leaves the request open.
    let r = c2.request(answer("bogus")).await.unwrap();
    assert_eq!(r.error.unwrap().code.as_str(), "INVALID_REQUEST");
    let r2 = tokio::spawn({
        let c2 = Arc::clone(&c2);
        let a = answer("once");
        async move { c2.request(a).await }
    });
    let fwd = rt.next_cmd().await;
    let Command::PermissionResponse(forwarded) = &fwd.command else {
        panic!("a permission_response: {fwd:?}");
    };
    assert_eq!(
        forwarded.answer,
        PermissionAnswer::Choice {
            choice_id: "once".into()
        },
        "{fwd:?}"
    );
    let source = forwarded.source.clone().unwrap();
    assert!(source.starts_with("client-"), "{source}");
    // A late answer from the first client is dropped silently.
    let late = c1.request(answer("no")).await.unwrap();
    assert!(late.success);
    rt.answer(&fwd, None).await;
    assert!(r2.await.unwrap().unwrap().success);
    rt.emit(json!({"type":"permission_resolved","request_id":"req-1","choice_id":"once","source":source})).await;
    for e in &mut evs {
        match next(e).await {
            Event::PermissionResolved(p) => assert_eq!(p.request_id, "req-1"),
            other => panic!("expected permission_resolved, got {other:?}"),
        }
    }
    // Nothing else reached the Runtime (the late answer was not forwarded).
    rt.emit(json!({"type":"status","status":"idle"})).await;
    let more = tokio::time::timeout(Duration::from_millis(300), rt.commands.next()).await;
    assert!(more.is_err(), "late answer must not be forwarded: {more:?}");
}

#[tokio::test]
async fn no_responder_means_headless_deny_and_crash_reports_exit() {
    let mut s = start(|_| {}).await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c1, None).await;
    rt.emit(
        json!({"type":"permission_request","request_id":"req-9","tool_name":"bash","input":{},
        "prompt":"?","options":["allow","deny"]}),
    )
    .await;
    let fwd = rt.next_cmd().await;
    let Command::PermissionResponse(answer) = &fwd.command else {
        panic!("a permission_response: {fwd:?}");
    };
    assert_eq!(
        answer.answer,
        PermissionAnswer::Decision {
            decision: PermissionDecision::Deny
        },
        "{fwd:?}"
    );
    assert_eq!(answer.source.as_deref(), Some("headless"));
    rt.exit
        .take()
        .unwrap()
        .send(ExitInfo {
            code: None,
            signal: Some(9),
            cause: None,
        })
        .unwrap();
    loop {
        match c1.next_event().await.unwrap() {
            shard_protocol::IncomingEvent::Known(Event::AgentExited(e)) => {
                assert_eq!(e.agent_id, id);
                assert!(e.reason.contains("signal 9"), "{}", e.reason);
                break;
            }
            _ => continue,
        }
    }
    // The next attach restores it with a new epoch.
    let f = c1.attach(&id, AttachRole::Interactive);
    tokio::pin!(f);
    let mut rt2 = tokio::select! { r = s.runtimes.recv() => r.unwrap(), _ = &mut f => panic!("attach before restore") };
    assert_eq!(rt2.spec.epoch, 1);
    rt2.ready().await;
    let (_, mut e) = f.await.unwrap();
    match next(&mut e).await {
        Event::Sync(sy) => assert_eq!(sy.runtime_epoch, Some(1)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn queued_request_times_out_headlessly() {
    let mut s = start(|c| c.headless_timeout = Duration::from_millis(200)).await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let (_id, mut rt) = create(&mut s, &c1, Some("queue")).await;
    rt.emit(json!({"type":"ui_request","request_id":"req-u","kind":"confirm","title":"ok?"}))
        .await;
    let fwd = rt.next_cmd().await;
    let Command::UiResponse(answer) = &fwd.command else {
        panic!("a ui_response: {fwd:?}");
    };
    assert!(answer.value.is_none(), "{fwd:?}");
}

#[tokio::test]
async fn idle_runtime_is_reaped_by_closing_stdin() {
    let mut s = start(|c| c.idle_runtime_timeout = Duration::from_millis(200)).await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let (_id, mut rt) = create(&mut s, &c1, None).await;
    // End of input is the Runtime's signal to finish and exit 0.
    let end = tokio::time::timeout(T, rt.commands.next()).await.unwrap();
    assert!(end.is_none(), "stdin closed, got {end:?}");
}

#[tokio::test]
async fn an_interactive_client_keeps_its_runtime_warm_past_the_idle_timeout() {
    let mut s = start(|c| {
        c.idle_runtime_timeout = Duration::from_millis(200);
        c.attached_idle_timeout = Duration::from_secs(3600);
    })
    .await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut kept) = create(&mut s, &c1, None).await;
    let (_, _e1) = attach_idle(&c1, &id, &mut kept).await;
    // A second agent nobody attaches to, idle since after the first: once it is reaped, the
    // reaper has passed the idle timeout of both.
    let (_other, mut reaped) = create(&mut s, &c1, None).await;
    let end = tokio::time::timeout(T, reaped.commands.next())
        .await
        .unwrap();
    assert!(
        end.is_none(),
        "the unattached Runtime is reaped, got {end:?}"
    );
    let still = tokio::time::timeout(Duration::from_millis(500), kept.commands.next()).await;
    assert!(still.is_err(), "the attached Runtime was reaped: {still:?}");
}

#[tokio::test]
async fn terminate_closes_stdin_at_once_when_idle_and_defers_when_active() {
    let mut s = start(|_| {}).await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c1, None).await;
    rt.emit(json!({"type":"status","status":"streaming"})).await;
    // Wait until the daemon has seen the status (it reaches every connection).
    loop {
        if let Some(shard_protocol::IncomingEvent::Known(Event::AgentStatusChanged(e))) =
            c1.next_event().await
            && e.status == shard_protocol::types::AgentStatus::Streaming
        {
            break;
        }
    }
    let term = json!({"type":"agent.terminate","agent_id":id});
    let r = c1
        .call(serde_json::from_value(term.clone()).unwrap())
        .await
        .unwrap();
    assert!(kind::AgentTerminate::decode_response(r).unwrap().deferred);
    rt.emit(json!({"type":"status","status":"idle"})).await;
    let end = tokio::time::timeout(T, rt.commands.next()).await.unwrap();
    assert!(end.is_none(), "stdin closed once inactive, got {end:?}");
    rt.exit
        .take()
        .unwrap()
        .send(ExitInfo {
            code: Some(0),
            signal: None,
            cause: None,
        })
        .unwrap();
    loop {
        if let Some(shard_protocol::IncomingEvent::Known(Event::AgentStatusChanged(e))) =
            c1.next_event().await
            && e.runtime_state == shard_protocol::types::RuntimeState::Stopped
        {
            break;
        }
    }
    let agents = c1.list().await.unwrap();
    assert_eq!(
        agents[0].runtime_state,
        shard_protocol::types::RuntimeState::Stopped
    );
    // Nothing live: terminate is immediate.
    let r = c1
        .call(serde_json::from_value(term).unwrap())
        .await
        .unwrap();
    assert!(!kind::AgentTerminate::decode_response(r).unwrap().deferred);
}

#[tokio::test]
async fn kill_aborts_then_ends_input_and_answers_after_the_exit() {
    let mut s = start(|_| {}).await;
    let c1 = Arc::new(Client::connect_daemon(&s.home).await.unwrap());
    let (id, mut rt) = create(&mut s, &c1, None).await;
    let c = Arc::clone(&c1);
    let kill = tokio::spawn(async move {
        c.call(serde_json::from_value(json!({"type":"agent.kill","agent_id":id})).unwrap())
            .await
    });
    let abort = rt.next_cmd().await;
    assert!(matches!(abort.command, Command::Abort(_)), "{abort:?}");
    let end = tokio::time::timeout(T, rt.commands.next()).await.unwrap();
    assert!(end.is_none(), "end of input after the abort, got {end:?}");
    assert!(
        !kill.is_finished(),
        "the kill is answered only once the Runtime is gone"
    );
    rt.exit
        .take()
        .unwrap()
        .send(ExitInfo {
            code: Some(0),
            signal: None,
            cause: None,
        })
        .unwrap();
    tokio::time::timeout(T, kill)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // A deliberate kill stops the agent; it did not fail: no
    // `agent_exited`, a `stopped` status change saying it was killed, `agent.list` idle.
    loop {
        match c1.next_event().await {
            Some(shard_protocol::IncomingEvent::Known(Event::AgentExited(e))) => {
                panic!("a deliberate kill reported as a failure: {e:?}")
            }
            Some(shard_protocol::IncomingEvent::Known(Event::AgentStatusChanged(e)))
                if e.runtime_state == shard_protocol::types::RuntimeState::Stopped =>
            {
                assert!(e.detail.unwrap_or_default().starts_with("killed"));
                break;
            }
            Some(_) => {}
            None => panic!("stream ended"),
        }
    }
    let agents = c1.list().await.unwrap();
    assert_eq!(
        agents[0].runtime_state,
        shard_protocol::types::RuntimeState::Stopped
    );
    assert_eq!(agents[0].status, shard_protocol::types::AgentStatus::Idle);
}

#[tokio::test]
async fn start_failure_keeps_identity_and_adoption_is_checked() {
    let mut s = start(|_| {}).await;
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let cwd = s.home.to_str().unwrap().to_string();
    // The Runtime dies before it is ready: RUNTIME_START_FAILED, agent kept for a retry.
    let req: AgentCreate = serde_json::from_value(json!({"cwd": cwd})).unwrap();
    let fut = c.request(shard_protocol::Command::AgentCreate(Box::new(req)));
    tokio::pin!(fut);
    let mut rt =
        tokio::select! { r = s.runtimes.recv() => r.unwrap(), r = &mut fut => panic!("{r:?}") };
    rt.emit(json!({"type":"hello","protocol_version":"0.1.0","server_version":"fake","capabilities":[]})).await;
    rt.emit(json!({"type":"error","code":"SESSION_CORRUPT","message":"broken","fatal":true}))
        .await;
    rt.exit
        .take()
        .unwrap()
        .send(ExitInfo {
            code: Some(1),
            signal: None,
            cause: None,
        })
        .unwrap();
    let r = tokio::time::timeout(T, fut).await.unwrap().unwrap();
    let err = r.error.unwrap();
    assert_eq!(err.code.as_str(), "RUNTIME_START_FAILED");
    assert!(err.message.contains("broken"), "{}", err.message);
    // The error's data is the success's, naming the agent that was created.
    let id = kind::AgentCreate::decode_response(err.data)
        .unwrap()
        .agent_id;
    assert_eq!(c.list().await.unwrap()[0].agent_id, id);
    // Retry: an attach starts a new generation.
    let f = c.attach(&id, AttachRole::Observer);
    tokio::pin!(f);
    let mut rt2 = tokio::select! { r = s.runtimes.recv() => r.unwrap(), r = &mut f => panic!("{:?}", r.err()) };
    rt2.ready().await;
    f.await.unwrap();

    // Adoption of a legacy session.
    let sid = shard_protocol::ids::new_id(shard_protocol::ids::SESSION);
    let adopt = |sid: &str| -> shard_protocol::Command {
        serde_json::from_value(json!({"type":"agent.create","cwd":cwd,"session_id":sid})).unwrap()
    };
    let r = c.request(adopt(&sid)).await.unwrap();
    assert_eq!(r.error.unwrap().code.as_str(), "NOT_FOUND");
    let dir = s.home.join("sessions").join(&sid);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("session.jsonl"), b"not json\n").unwrap();
    let r = c.request(adopt(&sid)).await.unwrap();
    assert_eq!(r.error.unwrap().code.as_str(), "SESSION_CORRUPT");
    std::fs::write(dir.join("session.jsonl"), b"{\"type\":\"header\"}\n").unwrap();
    let fut = c.request(adopt(&sid));
    tokio::pin!(fut);
    let mut rt3 =
        tokio::select! { r = s.runtimes.recv() => r.unwrap(), r = &mut fut => panic!("{r:?}") };
    assert_eq!(rt3.spec.session_id, sid);
    rt3.ready().await;
    assert!(tokio::time::timeout(T, fut).await.unwrap().unwrap().success);
    let r = c.request(adopt(&sid)).await.unwrap();
    let e = r.error.unwrap();
    assert_eq!(e.code.as_str(), "INVALID_REQUEST");
    assert_eq!(e.message, "session is already adopted");
}

#[tokio::test]
async fn activity_overview_is_sanitized_and_reaches_unattached_connections() {
    let mut s = start(|_| {}).await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c1, None).await;
    let watcher = Client::connect_daemon(&s.home).await.unwrap();
    rt.emit(json!({"type":"status","status":"streaming","detail":"SECRET detail"}))
        .await;
    rt.emit(json!({"type":"message_delta","message_id":"m","block_index":0,"kind":"text","text_delta":"SECRET text"})).await;
    rt.emit(
        json!({"type":"tool_call","tool_call_id":"t","name":"read","args":{"path":"/SECRET/path"}}),
    )
    .await;
    let mut seen = Vec::new();
    loop {
        let ev = tokio::time::timeout(T, watcher.next_event())
            .await
            .unwrap()
            .unwrap();
        let shard_protocol::IncomingEvent::Known(ev) = ev else {
            continue;
        };
        let raw = serde_json::to_string(&ev).unwrap();
        assert!(
            !raw.contains("SECRET"),
            "leaked into an orchestrator event: {raw}"
        );
        if let Event::AgentActivity(a) = &ev {
            assert_eq!(a.agent_id, id);
            seen.push(a.phase);
            if a.tool_name.as_deref() == Some("read") {
                break;
            }
        }
    }
    assert!(
        seen.contains(&shard_protocol::event::ActivityPhase::Streaming),
        "{seen:?}"
    );
}

#[tokio::test]
async fn archiving_tells_every_client_once_and_stops_the_runtime() {
    let mut s = start(|_| {}).await;
    let c1 = Arc::new(Client::connect_daemon(&s.home).await.unwrap());
    let watcher = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c1, None).await;
    let c = Arc::clone(&c1);
    let agent = id.clone();
    let archive = tokio::spawn(async move {
        c.call(serde_json::from_value(json!({"type":"agent.archive","agent_id":agent})).unwrap())
            .await
    });
    // The Runtime is stopped: its input ends (an idle agent needs no abort).
    while tokio::time::timeout(T, rt.commands.next())
        .await
        .unwrap()
        .is_some()
    {}
    rt.exit.take().unwrap().send(ExitInfo::default()).unwrap();
    tokio::time::timeout(T, archive)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // A client that only watches hears of it, so its list drops the agent without a reload.
    loop {
        match tokio::time::timeout(T, watcher.next_event()).await.unwrap() {
            Some(shard_protocol::IncomingEvent::Known(Event::AgentArchived(e))) => {
                assert_eq!(e.agent_id, id);
                break;
            }
            Some(_) => {}
            None => panic!("stream ended"),
        }
    }
    // Archiving again is answered but announced only once.
    c1.call(serde_json::from_value(json!({"type":"agent.archive","agent_id":id})).unwrap())
        .await
        .unwrap();
    let agents = watcher.list().await.unwrap();
    assert!(
        agents
            .iter()
            .all(|a| a.agent_id != id || a.archived == Some(true))
    );
    while let Ok(Some(ev)) =
        tokio::time::timeout(Duration::from_millis(300), watcher.next_event()).await
    {
        assert!(
            !matches!(
                ev,
                shard_protocol::IncomingEvent::Known(Event::AgentArchived(_))
            ),
            "a second agent_archived"
        );
    }
}
