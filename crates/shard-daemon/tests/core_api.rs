//! The daemon core against the fake Runtime: slow work never blocks a
//! connection, the connection cap, Runtime claims, line limits, in-process subscribers
//! and the headless `TIMEOUT` event.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use shard_client::Client;
use shard_daemon::{ExitInfo, Topic};
use shard_protocol::command::{AgentCreate, AttachRole, Command, SessionListQuery, kind};
use shard_protocol::orchestrator::{AuthPrincipal, RuntimeAuthKind};
use shard_protocol::types::RuntimeState;
use shard_protocol::{ErrorCode, Event};

fn create_req(s: &Setup) -> AgentCreate {
    serde_json::from_value(json!({"cwd": s.home.to_str().unwrap()})).unwrap()
}

#[tokio::test]
async fn agent_list_is_answered_while_a_create_waits_for_its_runtime() {
    let mut s = start(|_| {}).await;
    let c = std::sync::Arc::new(Client::connect_daemon(&s.home).await.unwrap());
    let c2 = std::sync::Arc::clone(&c);
    let req = create_req(&s);
    let pending = tokio::spawn(async move { c2.create(req).await });
    // The Runtime was launched and has not said hello: the create is in flight.
    let mut rt = tokio::time::timeout(T, s.runtimes.recv())
        .await
        .unwrap()
        .unwrap();
    // The same connection still gets its other answers at once.
    let agents = tokio::time::timeout(T, c.list()).await.unwrap().unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0].runtime_state, RuntimeState::Starting);
    assert!(!pending.is_finished());
    // Per-agent commands for the starting agent are queued, not a blocked read loop:
    // a later `agent.list` on the same connection is answered before the Runtime is ready.
    let id = agents[0].agent_id.clone();
    let mut raw = Wire::connect(&s.home).await;
    let lines = [
        json!({"type":"agent.attach","id":"at","agent_id":id,"role":"interactive"}),
        json!({"type":"prompt","id":"pr","agent_id":id,"message":"hi"}),
        json!({"type":"agent.list","id":"ls"}),
    ];
    let batch: String = lines.iter().map(|l| format!("{l}\n")).collect();
    raw.send(batch.as_bytes()).await;
    let first = raw.response().await;
    assert_eq!(
        first.id.as_deref(),
        Some("ls"),
        "the list is answered first: {first:?}"
    );
    rt.ready().await;
    let created = tokio::time::timeout(T, pending)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(created, id);
    assert_eq!(raw.response().await.id.as_deref(), Some("at"));
    // The queued prompt reaches the Runtime once it is ready.
    let cmd = rt.next_cmd().await;
    assert!(matches!(cmd.command, Command::Prompt(_)), "{cmd:?}");
    rt.answer(&cmd, None).await;
    let r = raw.response().await;
    assert_eq!(r.id.as_deref(), Some("pr"));
    assert!(r.success, "{r:?}");
}

#[tokio::test]
async fn connections_over_the_cap_are_refused_and_the_daemon_stays_healthy() {
    let s = start(|c| c.max_connections = 2).await;
    let c1 = Client::connect_daemon(&s.home).await.unwrap();
    let c2 = Client::connect_daemon(&s.home).await.unwrap();
    let mut third = Wire::connect(&s.home).await;
    let Some(Event::Error(refusal)) = third.line().await else {
        panic!("one error line: {:?}", third.raw);
    };
    assert_eq!(refusal.code.as_str(), "TOO_MANY_CONNECTIONS");
    assert!(refusal.message.contains("--max-connections"), "{refusal:?}");
    assert!(third.line().await.is_none(), "then the connection closes");
    // The daemon is healthy: the others are served, and a freed slot is usable again.
    assert!(c1.list().await.unwrap().is_empty());
    drop(c2);
    let deadline = std::time::Instant::now() + T;
    loop {
        let mut again = Wire::connect(&s.home).await;
        if let Some(Event::Hello(_)) = again.line().await {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "slot never freed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_runtime_claim_needs_the_runtimes_token() {
    let mut s = start(|_| {}).await;
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let (id, rt) = create(&mut s, &c, None).await;
    let mut liar = Wire::hello(&s.home).await;
    liar.send(
        format!(
            "{}\n",
            json!({"type":"runtime.auth","id":"a1","agent_id":id,"token":"guess"})
        )
        .as_bytes(),
    )
    .await;
    let r = liar.response().await;
    assert_eq!(r.id.as_deref(), Some("a1"));
    assert_eq!(code_of(&r), ErrorCode::PermissionDenied);
    assert!(
        liar.line().await.is_none(),
        "a false claim closes the connection"
    );
    // The daemon keeps only the token's hash; the Runtime's real token is accepted.
    let mut runtime = Wire::connect(&s.home).await;
    let Some(Event::Hello(hello)) = runtime.line().await else {
        panic!("a hello first: {:?}", runtime.raw);
    };
    assert!(hello.capabilities.iter().any(|c| c == "runtime-auth"));
    let auth = json!({"type":"runtime.auth","id":"a2","agent_id":id,"token":rt.spec.token});
    runtime.send(format!("{auth}\n").as_bytes()).await;
    let r = runtime.response().await;
    assert!(r.success, "{r:?}");
    let who = data_of::<RuntimeAuthKind>(r);
    assert_eq!(who.principal, AuthPrincipal::Runtime);
    assert_eq!(who.agent_id, id);
    runtime
        .send(b"{\"type\":\"agent.list\",\"id\":\"l1\"}\n")
        .await;
    assert_eq!(runtime.response().await.id.as_deref(), Some("l1"));
}

#[tokio::test]
async fn an_oversized_line_is_refused_with_its_id_and_the_connection_keeps_working() {
    let s = start(|c| c.max_line = 4096).await;
    let mut raw = Wire::hello(&s.home).await;
    let big = format!(
        "{{\"id\":\"big\",\"type\":\"agent.list\",\"pad\":\"{}\"}}\n",
        "a".repeat(100_000)
    );
    raw.send(big.as_bytes()).await;
    raw.send(b"{\"id\":\"after\",\"type\":\"agent.list\"}\n")
        .await;
    let r = raw.response().await;
    assert_eq!(r.id.as_deref(), Some("big"));
    assert_eq!(code_of(&r), ErrorCode::InvalidRequest);
    assert!(r.error.unwrap().message.contains("4096"));
    let r = raw.response().await;
    assert_eq!(r.id.as_deref(), Some("after"));
    assert!(r.success, "{r:?}");
}

#[tokio::test]
async fn in_process_subscribers_get_orchestrator_and_agent_events() {
    let mut s = start(|_| {}).await;
    let mut orch = s.handle.subscribe(Topic::Orchestrator).unwrap();
    assert!(
        s.handle
            .subscribe(Topic::Agent("agent-nope".into()))
            .is_err()
    );
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c, None).await;
    loop {
        match tokio::time::timeout(T, orch.recv()).await.unwrap() {
            Some(Event::AgentSpawned(a)) => {
                assert_eq!(a.agent_id, id);
                break;
            }
            Some(_) => {}
            None => panic!("subscription closed"),
        }
    }
    let mut agent = s.handle.subscribe(Topic::Agent(id.clone())).unwrap();
    rt.emit(delta(1)).await;
    loop {
        match tokio::time::timeout(T, agent.recv()).await.unwrap() {
            Some(Event::MessageDelta(d)) => {
                assert_eq!(d.agent_id.as_deref(), Some(id.as_str()));
                assert_eq!(d.text_delta.as_deref(), Some("d1 "));
                break;
            }
            Some(_) => {}
            None => panic!("subscription closed"),
        }
    }
}

#[tokio::test]
async fn a_headless_timeout_is_also_a_timeout_error_event() {
    let mut s = start(|c| c.headless_timeout = Duration::from_millis(200)).await;
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c, Some("queue")).await;
    let watcher = Client::connect_daemon(&s.home).await.unwrap();
    let f = watcher.attach(&id, AttachRole::Observer);
    tokio::pin!(f);
    let cmd = tokio::select! { c = rt.next_cmd() => c, _ = &mut f => panic!("no sync yet") };
    rt.emit(sync_json("idle")).await;
    rt.answer(&cmd, None).await;
    let (_, mut events) = f.await.unwrap();
    assert!(matches!(next(&mut events).await, Event::Sync(_)));
    rt.emit(
        json!({"type":"permission_request","request_id":"req-t","tool_name":"bash",
        "input":{"command":"ls"},"prompt":"run ls?","options":["allow","deny"]}),
    )
    .await;
    let fwd = rt.next_cmd().await;
    let Command::PermissionResponse(answer) = &fwd.command else {
        panic!("a permission_response: {fwd:?}");
    };
    assert_eq!(answer.source.as_deref(), Some("headless_timeout"));
    loop {
        if let Event::Error(e) = next(&mut events).await {
            assert_eq!(e.code.as_str(), "TIMEOUT");
            assert_eq!(e.fatal, Some(false));
            break;
        }
    }
}

#[tokio::test]
async fn a_runtime_answer_over_the_line_limit_still_answers_the_client() {
    let mut s = start(|c| c.max_line = 4096).await;
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c, None).await;
    let f = c.attach(&id, AttachRole::Interactive);
    tokio::pin!(f);
    let cmd = tokio::select! { c = rt.next_cmd() => c, _ = &mut f => panic!("no sync yet") };
    rt.emit(sync_json("idle")).await;
    rt.answer(&cmd, None).await;
    f.await.unwrap();
    let ask = json!({"type":"list_modes","agent_id":id});
    let pending = c.request(serde_json::from_value(ask).unwrap());
    tokio::pin!(pending);
    let fwd =
        tokio::select! { c = rt.next_cmd() => c, _ = &mut pending => panic!("answered early") };
    // An answer longer than the line limit.
    rt.answer(&fwd, Some(json!({"pad": "x".repeat(10_000)})))
        .await;
    let r = tokio::time::timeout(T, pending).await.unwrap().unwrap();
    assert!(!r.success);
    assert_eq!(code_of(&r), ErrorCode::InternalError);
}

#[tokio::test]
async fn session_list_lists_a_cwds_sessions_newest_first_with_forks() {
    let s = start(|_| {}).await;
    let cwd = s.home.join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let store = shard_session::SessionStore::new(&s.home);
    let old_id = shard_protocol::ids::new_id(shard_protocol::ids::SESSION);
    let mut old = store.open_or_create(&old_id, &cwd).unwrap();
    let text = |t: &str| {
        shard_session::EntryKind::message(shard_protocol::types::Message {
            id: String::new(),
            role: shard_protocol::types::Role::User,
            content: vec![shard_protocol::types::ContentBlock::Text { text: t.into() }],
        })
    };
    let at = old.append(text("the first prompt")).unwrap();
    old.write_meta().unwrap();
    std::thread::sleep(Duration::from_millis(2));
    let forked = store.fork(&old.reader().unwrap(), &at.id).unwrap();
    drop(old);

    let mut raw = Wire::hello(&s.home).await;
    let list = |cwd: &str| {
        Command::SessionList(SessionListQuery {
            cwd: cwd.to_string(),
        })
    };
    let listed = raw
        .ok::<kind::SessionList>(list(cwd.to_str().unwrap()))
        .await;
    let sessions = &listed.sessions;
    assert_eq!(sessions.len(), 2, "{listed:?}");
    assert_eq!(sessions[0].session_id, forked.session_id);
    assert_eq!(
        sessions[0]
            .forked_from
            .as_ref()
            .map(|f| f.source_session_id.as_str()),
        Some(old_id.as_str())
    );
    assert_eq!(sessions[1].title, "the first prompt");
    assert_eq!(sessions[1].message_count, Some(1));

    let none = raw.ok::<kind::SessionList>(list("/nowhere")).await;
    assert!(none.sessions.is_empty(), "{none:?}");
}

/// Runtime starts beyond `max_concurrent_starts` wait for a slot, which a generation holds
/// until it is ready or has ended: here one that dies before `hello` frees it.
#[tokio::test]
async fn starts_beyond_the_bound_wait_until_one_ends_or_is_ready() {
    let mut s = start(|c| c.max_concurrent_starts = 1).await;
    let c = std::sync::Arc::new(Client::connect_daemon(&s.home).await.unwrap());
    let creates: Vec<_> = (0..3)
        .map(|_| {
            let c = std::sync::Arc::clone(&c);
            let req = create_req(&s);
            tokio::spawn(async move { c.create(req).await })
        })
        .collect();
    let mut first = tokio::time::timeout(T, s.runtimes.recv())
        .await
        .unwrap()
        .unwrap();
    // All three become registered and starting (a create registers its agent before it
    // starts the generation); only one was launched.
    tokio::time::timeout(T, async {
        loop {
            let agents = c.list().await.unwrap();
            if agents.len() == 3
                && agents
                    .iter()
                    .all(|a| a.runtime_state == RuntimeState::Starting)
            {
                break;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("three agents starting");
    assert!(s.runtimes.try_recv().is_err(), "a second start got a slot");
    // The first dies before it is ready: its slot goes to the next.
    let exit = first.exit.take().unwrap();
    drop(first);
    let _ = exit.send(ExitInfo {
        code: Some(1),
        signal: None,
        cause: None,
    });
    let mut second = tokio::time::timeout(T, s.runtimes.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(s.runtimes.try_recv().is_err(), "the third start got a slot");
    second.ready().await;
    let mut third = tokio::time::timeout(T, s.runtimes.recv())
        .await
        .unwrap()
        .unwrap();
    third.ready().await;
    let mut ok = 0;
    for t in creates {
        if tokio::time::timeout(T, t).await.unwrap().unwrap().is_ok() {
            ok += 1;
        }
    }
    assert_eq!(ok, 2, "the first create failed, the other two succeeded");
}

/// A generation killed while it waits for a start slot ends there: no Runtime is spawned
/// only to be killed, and the kill is answered once the slot frees.
#[tokio::test]
async fn a_start_killed_while_waiting_for_a_slot_is_never_launched() {
    let mut s = start(|c| c.max_concurrent_starts = 1).await;
    let c = std::sync::Arc::new(Client::connect_daemon(&s.home).await.unwrap());
    let creates: Vec<_> = (0..2)
        .map(|_| {
            let c = std::sync::Arc::clone(&c);
            let req = create_req(&s);
            tokio::spawn(async move { c.create(req).await })
        })
        .collect();
    let mut first = tokio::time::timeout(T, s.runtimes.recv())
        .await
        .unwrap()
        .unwrap();
    let waiting = tokio::time::timeout(T, async {
        loop {
            let agents = c.list().await.unwrap();
            // Both generations exist (a create registers its agent before it starts one).
            if agents.len() == 2
                && agents
                    .iter()
                    .all(|a| a.runtime_state == RuntimeState::Starting)
            {
                break agents
                    .into_iter()
                    .find(|a| a.agent_id != first.spec.agent_id)
                    .unwrap()
                    .agent_id;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("two agents starting");
    // One connection handles its lines in order, and a kill is recorded when its line is
    // handled: once the list after it is answered, the kill is in, before the slot frees.
    let mut raw = Wire::connect(&s.home).await;
    let batch = format!(
        "{}\n{}\n",
        json!({"type":"agent.kill","id":"k","agent_id":waiting}),
        json!({"type":"agent.list","id":"ls"})
    );
    raw.send(batch.as_bytes()).await;
    let listed = raw.response().await;
    assert_eq!(
        listed.id.as_deref(),
        Some("ls"),
        "the list answers before the waiting kill"
    );
    first.ready().await;
    let killed = raw.response().await;
    assert_eq!(killed.id.as_deref(), Some("k"));
    data_of::<kind::AgentKill>(killed);
    assert!(
        s.runtimes.try_recv().is_err(),
        "the killed generation was launched"
    );
    let agents = c.list().await.unwrap();
    let killed = agents.iter().find(|a| a.agent_id == waiting).unwrap();
    assert_eq!(killed.runtime_state, RuntimeState::Stopped);
    for t in creates {
        let _ = tokio::time::timeout(T, t).await.unwrap();
    }
}

/// An editor's MCP servers hold secrets in the manifest; archiving the agent drops them,
/// since its Runtime is never started again with the editor's servers.
#[tokio::test]
async fn archiving_an_agent_scrubs_its_editors_server_secrets_from_the_manifest() {
    let mut s = start(|_| {}).await;
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let mut req = create_req(&s);
    req.mcp_servers = Some(
        serde_json::from_value(json!([
            {"name": "ed", "command": "srv", "env": {"TOKEN": "tok-scrub-91"}},
            {"name": "web", "transport": "http", "url": "https://example.com/mcp",
             "headers": {"Authorization": "Bearer hdr-scrub-92"}}
        ]))
        .unwrap(),
    );
    let fut = c.create(req);
    tokio::pin!(fut);
    let mut rt = tokio::select! {
        r = s.runtimes.recv() => r.unwrap(),
        r = &mut fut => panic!("create answered before the runtime was ready: {r:?}"),
    };
    rt.ready().await;
    let id = tokio::time::timeout(T, fut).await.unwrap().unwrap();
    let manifest = s.home.join("manifests").join(format!("{id}.json"));
    let before = std::fs::read_to_string(&manifest).unwrap();
    assert!(before.contains("tok-scrub-91"), "{before}");
    let home = s.home.clone();
    let id2 = id.clone();
    let archive = tokio::spawn(async move {
        let mut w = Wire::hello(&home).await;
        w.call_json(json!({"type": "agent.archive", "agent_id": id2}))
            .await
    });
    // The Runtime is asked to stop, and goes.
    rt.next_cmd().await;
    drop(rt);
    let r = tokio::time::timeout(T, archive).await.unwrap().unwrap();
    assert!(r.success, "{r:?}");
    let after = std::fs::read_to_string(&manifest).unwrap();
    let v: serde_json::Value = serde_json::from_str(&after).unwrap();
    assert_eq!(v["archived"], true, "{after}");
    for secret in ["tok-scrub-91", "hdr-scrub-92", "TOKEN"] {
        assert!(!after.contains(secret), "{secret} kept: {after}");
    }
}
