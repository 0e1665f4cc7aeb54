//! The broker's fan-out across worker threads: agents streaming at once each reach their
//! clients complete and in order, a client's handshake and detach bound what it sees,
//! and the activity overview still precedes the stream it describes. Raw protocol lines
//! over the daemon's unix socket, so the order checked is the order on the wire.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use shard_client::Client;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// A client that speaks raw lines, so nothing between the socket and the test reorders.
struct Raw {
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    out: tokio::net::unix::OwnedWriteHalf,
}

impl Raw {
    async fn connect(s: &Setup) -> Raw {
        let sock = UnixStream::connect(s.home.join("daemon.sock"))
            .await
            .unwrap();
        let (r, w) = sock.into_split();
        let mut raw = Raw {
            lines: BufReader::new(r).lines(),
            out: w,
        };
        assert_eq!(raw.line().await["type"], "hello");
        raw
    }

    async fn send(&mut self, v: Value) {
        let mut l = serde_json::to_vec(&v).unwrap();
        l.push(b'\n');
        self.out.write_all(&l).await.unwrap();
    }

    async fn line(&mut self) -> Value {
        let l = tokio::time::timeout(T, self.lines.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("connection open");
        serde_json::from_str(&l).unwrap()
    }

    /// Reads until the response to `id`, returning it and everything before it.
    async fn until_response(&mut self, id: &str) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let v = self.line().await;
            if v["type"] == "response" && v["id"] == id {
                return (v, before);
            }
            before.push(v);
        }
    }

    /// Attaches as an observer, playing the idle Runtime's part of the handshake.
    async fn attach(&mut self, agent: &str, rt: &mut Fake, id: &str) {
        self.send(json!({"type":"agent.attach","id":id,"agent_id":agent,"role":"observer"}))
            .await;
        let cmd = rt.next_command().await;
        assert_eq!(cmd["type"], "request_sync");
        rt.emit(sync_json("idle")).await;
        rt.emit(json!({"type":"response","id":cmd["id"],"command":"request_sync","success":true}))
            .await;
        let (resp, _) = self.until_response(id).await;
        assert_eq!(resp["success"], true, "{resp}");
        loop {
            let v = self.line().await;
            if v["type"] == "sync" && v["agent_id"] == agent {
                break;
            }
            assert_ne!(v["type"], "message_delta", "a delta before the sync: {v}");
        }
    }
}

fn delta_n(v: &Value) -> Option<usize> {
    let t = v["text_delta"].as_str()?;
    t.trim().strip_prefix('d')?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_streaming_at_once_reach_each_client_complete_and_in_order() {
    const AGENTS: usize = 6;
    const DELTAS: usize = 1500;
    let mut s = start(|_| {}).await;
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let mut agents = Vec::new();
    for _ in 0..AGENTS {
        agents.push(create(&mut s, &c, None).await);
    }
    let mut clients = Vec::new();
    for (i, (id, rt)) in agents.iter_mut().enumerate() {
        let mut raw = Raw::connect(&s).await;
        raw.attach(id, rt, &format!("a{i}")).await;
        clients.push((id.clone(), raw));
    }
    // Every Runtime streams at once from its own task: the daemon's readers deliver on
    // both worker threads.
    let mut emitters = Vec::new();
    for (_, mut rt) in agents {
        emitters.push(tokio::spawn(async move {
            rt.emit(json!({"type":"status","status":"streaming"})).await;
            for i in 0..DELTAS {
                rt.emit(delta(i)).await;
            }
            rt.emit(json!({"type":"status","status":"idle"})).await;
            rt
        }));
    }
    let mut readers = Vec::new();
    for (agent, mut raw) in clients {
        readers.push(tokio::spawn(async move {
            let mut activity_streaming = false;
            let mut next = 0;
            while next < DELTAS {
                let v = raw.line().await;
                match v["type"].as_str() {
                    Some("message_delta") => {
                        assert_eq!(v["agent_id"], agent.as_str(), "only its agent's stream");
                        assert!(
                            activity_streaming,
                            "the streaming activity precedes the agent's first delta"
                        );
                        assert_eq!(delta_n(&v), Some(next), "deltas complete and in order");
                        next += 1;
                    }
                    Some("agent_activity")
                        if v["agent_id"] == agent.as_str() && v["phase"] == "streaming" =>
                    {
                        activity_streaming = true;
                    }
                    _ => {}
                }
            }
            agent
        }));
    }
    let mut served = Vec::new();
    for r in readers {
        served.push(r.await.unwrap());
    }
    served.sort();
    served.dedup();
    assert_eq!(
        served.len(),
        AGENTS,
        "each client got its own agent's stream"
    );
    for e in emitters {
        e.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_the_agent_reaches_a_client_after_its_detach_answer() {
    let mut s = start(|_| {}).await;
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let (id, mut rt) = create(&mut s, &c, None).await;
    let mut leaving = Raw::connect(&s).await;
    leaving.attach(&id, &mut rt, "a1").await;
    let mut staying = Raw::connect(&s).await;
    staying.attach(&id, &mut rt, "a2").await;
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
    let emitter = tokio::spawn(async move {
        rt.emit(json!({"type":"status","status":"streaming"})).await;
        let mut i = 0;
        loop {
            rt.emit(delta(i)).await;
            i += 1;
            if i > 200 && stop_rx.try_recv().is_ok() {
                break;
            }
            if i % 64 == 0 {
                tokio::task::yield_now().await;
            }
        }
        rt.emit(json!({"type":"message_delta","message_id":"m1","block_index":0,"kind":"text","text_delta":"marker"}))
            .await;
        rt
    });
    // Detach mid-stream, once deltas are flowing to this client.
    loop {
        if leaving.line().await["type"] == "message_delta" {
            break;
        }
    }
    leaving
        .send(json!({"type":"agent.detach","id":"d1","agent_id":id}))
        .await;
    let (resp, _) = leaving.until_response("d1").await;
    assert_eq!(resp["success"], true, "{resp}");
    stop_tx.send(()).unwrap();
    // The staying client sees the stream to its end ...
    loop {
        let v = staying.line().await;
        if v["type"] == "message_delta" && v["text_delta"] == "marker" {
            break;
        }
    }
    // ... and everything queued for the leaving client before a later answer arrives
    // before that answer: none of it may be the agent's.
    leaving.send(json!({"type":"agent.list","id":"l1"})).await;
    let (_, after) = leaving.until_response("l1").await;
    let stray: Vec<_> = after
        .iter()
        .filter(|v| v["type"] == "message_delta")
        .collect();
    assert!(
        stray.is_empty(),
        "deltas after the detach answer: {stray:?}"
    );
    let _rt = emitter.await.unwrap();
}
