//! What the daemon's benchmark and the browser door's (crates/shard-web/benches/web.rs,
//! which includes this file by path) share: starting and stopping a real daemon, a
//! scripted agent, raw unix-socket observers, and the delta fan-out measurement itself,
//! so the unix-socket and WebSocket figures are measured the same way.

use std::ops::Deref;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use serde_json::json;
use shard_client::Client;
use shard_protocol::command::{AgentCreate, AttachRole};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// Resident memory of a process, in KiB (0 when it is gone).
pub fn rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Starts `shard daemon` on `home` and returns once its socket accepts.
pub fn start_daemon(bin: &Path, home: &Path) -> Child {
    let child = Command::new(bin)
        // `--port 0`: the HTTP door's default port may be taken by another daemon here.
        .args(["daemon", "--port", "0"])
        .env("SHARD_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sock = home.join("daemon.sock");
    for _ in 0..400 {
        if std::os::unix::net::UnixStream::connect(&sock).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    child
}

/// Stops the daemon (forcefully, its agents with it) and reaps it.
pub async fn stop_daemon(home: &Path, child: &mut Child) {
    if let Ok(c) = Client::connect_daemon(home).await {
        let _ = c
            .request(
                serde_json::from_value(json!({"type":"daemon.shutdown","force":true})).unwrap(),
            )
            .await;
    }
    let _ = child.wait();
}

/// `agent.create` for a scripted-provider agent.
pub fn create_req(cwd: &Path, script: &Path) -> AgentCreate {
    serde_json::from_value(json!({"cwd": cwd, "provider":"scripted", "model": script})).unwrap()
}

/// A scripted agent whose one turn streams `deltas` deltas of 8 characters.
pub async fn streaming_agent(home: &Path, deltas: u64) -> (Client, String) {
    let script = home.join("s.json");
    let steps = json!({"turns":[{"steps":[{"text":"abcdefgh","chunk_chars":8,"repeat":deltas}]}]});
    std::fs::write(&script, serde_json::to_vec(&steps).unwrap()).unwrap();
    let c = Client::connect_daemon(home).await.unwrap();
    let id = c.create(create_req(home, &script)).await.unwrap();
    (c, id)
}

/// A raw unix-socket observer of `agent`, read up to its `sync`.
pub async fn raw_attach(home: &Path, agent: &str) -> tokio::io::Lines<BufReader<UnixStream>> {
    let mut s = UnixStream::connect(home.join("daemon.sock")).await.unwrap();
    let line = json!({"type":"agent.attach","id":"a","agent_id":agent,"role":"observer"});
    s.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    let mut lines = BufReader::with_capacity(256 * 1024, s).lines();
    while let Some(l) = lines.next_line().await.unwrap() {
        if l.contains("\"type\":\"sync\"") {
            break;
        }
    }
    lines
}

/// A raw observer's lines as a stream, for [`fanout`].
pub fn line_stream(
    lines: tokio::io::Lines<BufReader<UnixStream>>,
) -> impl Stream<Item = String> + Send + Unpin + 'static {
    Box::pin(futures::stream::unfold(lines, |mut l| async move {
        l.next_line().await.unwrap().map(|line| (line, l))
    }))
}

/// Attaches `c` as the driver, prompts `agent` and counts the `message_delta`s each
/// observer receives until its `message_complete`; returns (total, slowest observer's
/// time since the prompt was sent).
pub async fn fanout<S, T>(c: &Client, agent: &str, observers: Vec<S>) -> (u64, Duration)
where
    S: Stream<Item = T> + Send + Unpin + 'static,
    T: Deref<Target = str> + Send,
{
    let (_, _driver) = c.attach(agent, AttachRole::Interactive).await.unwrap();
    let t0 = Instant::now();
    let tasks: Vec<_> = observers
        .into_iter()
        .map(|mut s| {
            tokio::spawn(async move {
                let mut n = 0u64;
                while let Some(l) = s.next().await {
                    if l.contains("\"message_delta\"") {
                        n += 1;
                    } else if l.contains("\"message_complete\"") {
                        break;
                    }
                }
                (n, t0.elapsed())
            })
        })
        .collect();
    c.call(
        serde_json::from_value(json!({"type":"prompt","agent_id":agent,"message":"go"})).unwrap(),
    )
    .await
    .unwrap();
    let mut total = 0;
    let mut last = Duration::ZERO;
    for t in tasks {
        let (n, el) = t.await.unwrap();
        total += n;
        last = last.max(el);
    }
    (total, last)
}

/// The p-th percentile of sorted samples.
pub fn percentile(sorted: &[f64], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}
