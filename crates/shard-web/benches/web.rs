//! The browser door's benchmarks (issue 12) against the real `shard` binary (path in
//! `SHARD_BIN`): deltas per second to 1, 10 and 100 WebSocket clients on one agent (with
//! the unix socket's 100-client figure from the same run as the reference), the cost of
//! `POST /bootstrap` + WebSocket upgrade + `hello` per connection, and daemon memory per
//! open WebSocket. Run through `bench/web/run.sh`; prints one JSON object per figure.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use shard_client::Client;
use shard_protocol::command::{AgentCreate, AttachRole};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

struct Daemon {
    child: Child,
    home: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
}

impl Daemon {
    fn start(bin: &Path) -> Daemon {
        let home = tempfile::tempdir().unwrap();
        let child = Command::new(bin)
            .args(["daemon", "--port", "0"])
            .env("SHARD_HOME", home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let info = home.path().join("daemon.json");
        let mut port = None;
        for _ in 0..800 {
            if let Ok(b) = std::fs::read(&info)
                && let Ok(v) = serde_json::from_slice::<Value>(&b)
                && std::os::unix::net::UnixStream::connect(home.path().join("daemon.sock")).is_ok()
            {
                port = v["port"].as_u64();
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Daemon {
            child,
            home,
            port: port.expect("daemon.json") as u16,
            bin: bin.to_path_buf(),
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn http(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String, String) {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nOrigin: {}\r\n",
            self.host(),
            self.origin()
        );
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        s.write_all(req.as_bytes()).unwrap();
        let mut buf = String::new();
        s.read_to_string(&mut buf).unwrap();
        let (head, body) = buf.split_once("\r\n\r\n").unwrap();
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, head.to_string(), body.to_string())
    }

    /// Enrolls one browser; returns its `Cookie` header value.
    fn enroll(&self) -> String {
        let out = Command::new(&self.bin)
            .arg("web")
            .env("SHARD_HOME", self.home.path())
            .output()
            .unwrap();
        let url = String::from_utf8(out.stdout).unwrap();
        let code = url.trim().split_once("#").unwrap().1.to_string();
        let (status, head, _) =
            self.http("POST", "/enroll", &[], &format!("{{\"code\":\"{code}\"}}"));
        assert_eq!(status, 200, "{head}");
        let sc = head
            .lines()
            .find_map(|l| l.strip_prefix("set-cookie: "))
            .unwrap();
        sc.split(';').next().unwrap().to_string()
    }

    /// `POST /bootstrap` on a fresh connection, as a browser page does.
    async fn ticket(&self, cookie: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .unwrap();
        let req = format!(
            "POST /bootstrap HTTP/1.1\r\nHost: {}\r\nOrigin: {}\r\nCookie: {cookie}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.host(),
            self.origin()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut buf = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut s, &mut buf)
            .await
            .unwrap();
        let body = buf.split_once("\r\n\r\n").unwrap().1;
        let v: Value = serde_json::from_str(body).unwrap();
        v["ticket"].as_str().unwrap().to_string()
    }

    /// Upgrade with a ticket and read `hello`.
    async fn ws(&self, ticket: &str) -> Ws {
        let mut req = format!("ws://{}/ws", self.host())
            .into_client_request()
            .unwrap();
        let h = req.headers_mut();
        h.insert("origin", HeaderValue::from_str(&self.origin()).unwrap());
        h.insert(
            "sec-websocket-protocol",
            HeaderValue::from_str(&format!("shard.v1, shard.ticket.{ticket}")).unwrap(),
        );
        let (mut s, _) = tokio_tungstenite::connect_async(req).await.unwrap();
        match s.next().await {
            Some(Ok(Message::Text(t))) if t.contains("\"hello\"") => {}
            other => panic!("no hello: {other:?}"),
        }
        s
    }

    async fn shutdown(mut self) {
        if let Ok(c) = Client::connect_daemon(self.home.path()).await {
            let _ = c
                .request(
                    serde_json::from_value(json!({"type":"daemon.shutdown","force":true})).unwrap(),
                )
                .await;
        }
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[f64], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

async fn agent(d: &Daemon, deltas: u64) -> (Client, String) {
    let script = d.home.path().join("s.json");
    let steps = json!({"turns":[{"steps":[{"text":"abcdefgh","chunk_chars":8,"repeat":deltas}]}]});
    std::fs::write(&script, serde_json::to_vec(&steps).unwrap()).unwrap();
    let c = Client::connect_daemon(d.home.path()).await.unwrap();
    let create: AgentCreate = serde_json::from_value(
        json!({"cwd": d.home.path(), "provider":"scripted", "model": script}),
    )
    .unwrap();
    let id = c.create(create).await.unwrap();
    (c, id)
}

/// Counts deltas until `message_complete` on each reader; returns (total, slowest reader).
async fn drain<F>(readers: Vec<F>) -> (u64, Duration)
where
    F: std::future::Future<Output = (u64, Duration)> + Send + 'static,
{
    let tasks: Vec<_> = readers.into_iter().map(tokio::spawn).collect();
    let mut total = 0;
    let mut last = Duration::ZERO;
    for t in tasks {
        let (n, el) = t.await.unwrap();
        total += n;
        last = last.max(el);
    }
    (total, last)
}

async fn ws_fanout(bin: &Path, clients: usize, deltas: u64) -> Value {
    let d = Daemon::start(bin);
    let cookie = d.enroll();
    let (c, id) = agent(&d, deltas).await;
    let mut sockets = Vec::new();
    for _ in 0..clients {
        let t = d.ticket(&cookie).await;
        let mut s = d.ws(&t).await;
        let attach = json!({"type":"agent.attach","id":"a","agent_id":id,"role":"observer"});
        s.send(Message::Text(attach.to_string().into()))
            .await
            .unwrap();
        while let Some(Ok(m)) = s.next().await {
            if let Message::Text(t) = m
                && t.contains("\"type\":\"sync\"")
            {
                break;
            }
        }
        sockets.push(s);
    }
    let (_, _driver) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    let t0 = Instant::now();
    let readers: Vec<_> = sockets
        .into_iter()
        .map(|mut s| async move {
            let mut n = 0u64;
            while let Some(Ok(m)) = s.next().await {
                if let Message::Text(t) = m {
                    if t.contains("\"message_delta\"") {
                        n += 1;
                    } else if t.contains("\"message_complete\"") {
                        break;
                    }
                }
            }
            (n, t0.elapsed())
        })
        .collect();
    let prompt = json!({"type":"prompt","agent_id":id,"message":"go"});
    let drained = tokio::spawn(drain(readers));
    c.call(serde_json::from_value(prompt).unwrap())
        .await
        .unwrap();
    let (total, last) = drained.await.unwrap();
    d.shutdown().await;
    json!({"bench":"ws_fanout","transport":"websocket","clients":clients,"deltas_per_client":deltas,
           "delivered":total,"seconds":last.as_secs_f64(),
           "deltas_per_sec_aggregate":(total as f64/last.as_secs_f64()).round()})
}

async fn unix_fanout(bin: &Path, clients: usize, deltas: u64) -> Value {
    let d = Daemon::start(bin);
    let (c, id) = agent(&d, deltas).await;
    let mut conns = Vec::new();
    for _ in 0..clients {
        let mut s = tokio::net::UnixStream::connect(d.home.path().join("daemon.sock"))
            .await
            .unwrap();
        let line = json!({"type":"agent.attach","id":"a","agent_id":id,"role":"observer"});
        s.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        let mut lines = BufReader::with_capacity(256 * 1024, s).lines();
        while let Some(l) = lines.next_line().await.unwrap() {
            if l.contains("\"type\":\"sync\"") {
                break;
            }
        }
        conns.push(lines);
    }
    let (_, _driver) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    let t0 = Instant::now();
    let readers: Vec<_> = conns
        .into_iter()
        .map(|mut lines| async move {
            let mut n = 0u64;
            while let Some(l) = lines.next_line().await.unwrap() {
                if l.contains("\"message_delta\"") {
                    n += 1;
                } else if l.contains("\"message_complete\"") {
                    break;
                }
            }
            (n, t0.elapsed())
        })
        .collect();
    let prompt = json!({"type":"prompt","agent_id":id,"message":"go"});
    let drained = tokio::spawn(drain(readers));
    c.call(serde_json::from_value(prompt).unwrap())
        .await
        .unwrap();
    let (total, last) = drained.await.unwrap();
    d.shutdown().await;
    json!({"bench":"unix_fanout","transport":"unix","clients":clients,"deltas_per_client":deltas,
           "delivered":total,"seconds":last.as_secs_f64(),
           "deltas_per_sec_aggregate":(total as f64/last.as_secs_f64()).round()})
}

async fn bootstrap_upgrade(bin: &Path, rounds: usize) -> Value {
    let d = Daemon::start(bin);
    let cookie = d.enroll();
    let mut both = Vec::new();
    let mut boot = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        let ticket = d.ticket(&cookie).await;
        let b = t.elapsed();
        let s = d.ws(&ticket).await;
        both.push(t.elapsed().as_secs_f64() * 1000.0);
        boot.push(b.as_secs_f64() * 1000.0);
        drop(s);
    }
    both.sort_by(|a, b| a.partial_cmp(b).unwrap());
    boot.sort_by(|a, b| a.partial_cmp(b).unwrap());
    d.shutdown().await;
    json!({"bench":"bootstrap_plus_upgrade_ms","rounds":rounds,
           "p50":percentile(&both,50),"p95":percentile(&both,95),"p99":percentile(&both,99),
           "bootstrap_only_p50":percentile(&boot,50),
           "note":"POST /bootstrap on a new TCP connection + GET /ws upgrade on another + hello"})
}

async fn memory_per_ws(bin: &Path, count: usize) -> Value {
    let d = Daemon::start(bin);
    let cookie = d.enroll();
    // Warm the paths once so one-time allocations are not counted.
    let w = d.ws(&d.ticket(&cookie).await).await;
    drop(w);
    let base = rss_kb(d.child.id());
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        let t = d.ticket(&cookie).await;
        held.push(d.ws(&t).await);
    }
    let after = rss_kb(d.child.id());
    drop(held);
    d.shutdown().await;
    json!({"bench":"daemon_memory_per_websocket","connections":count,
           "daemon_rss_kb_before":base,"daemon_rss_kb_after":after,
           "kb_per_websocket":((after.saturating_sub(base)) as f64/count as f64*10.0).round()/10.0})
}

fn main() {
    let bin =
        PathBuf::from(std::env::var("SHARD_BIN").expect("set SHARD_BIN to a built shard binary"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let deltas: u64 = std::env::var("DELTAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    rt.block_on(async {
        println!("{}", bootstrap_upgrade(&bin, 300).await);
        println!("{}", memory_per_ws(&bin, 1000).await);
        for clients in [1, 10, 100] {
            println!("{}", ws_fanout(&bin, clients, deltas).await);
        }
        println!("{}", unix_fanout(&bin, 100, deltas).await);
    });
}
