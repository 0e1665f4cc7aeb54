//! The browser door's benchmarks against the real `shard` binary (path in
//! `SHARD_BIN`): deltas per second to 1, 10 and 100 WebSocket clients on one agent (with
//! the unix socket's 100-client figure from the same run as the reference), the cost of
//! `POST /bootstrap` + WebSocket upgrade + `hello` per connection, and daemon memory per
//! open WebSocket. Run through `bench/web/run.sh`; prints one JSON object per figure.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

#[path = "../../shard-daemon/benches/support/mod.rs"]
mod support;
use support::{
    fanout, line_stream, percentile, raw_attach, rss_kb, start_daemon, stop_daemon, streaming_agent,
};

struct Daemon {
    child: Child,
    home: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
}

impl Daemon {
    fn start(bin: &Path) -> Daemon {
        let home = tempfile::tempdir().unwrap();
        let child = start_daemon(bin, home.path());
        let info = home.path().join("daemon.json");
        let mut port = None;
        for _ in 0..800 {
            if let Ok(b) = std::fs::read(&info)
                && let Ok(v) = serde_json::from_slice::<Value>(&b)
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

    /// Enrolls one browser; returns its credential as two header lines: the `Cookie` and
    /// the session key the page keeps in its Origin's storage.
    fn enroll(&self) -> String {
        let out = Command::new(&self.bin)
            .arg("web")
            .env("SHARD_HOME", self.home.path())
            .output()
            .unwrap();
        let url = String::from_utf8(out.stdout).unwrap();
        let code = url.trim().split_once("#").unwrap().1.to_string();
        let (status, head, body) =
            self.http("POST", "/enroll", &[], &format!("{{\"code\":\"{code}\"}}"));
        assert_eq!(status, 200, "{head}");
        let sc = head
            .lines()
            .find_map(|l| l.strip_prefix("set-cookie: "))
            .unwrap();
        let v: Value = serde_json::from_str(&body).unwrap();
        format!(
            "Cookie: {}\r\n{}: {}",
            sc.split(';').next().unwrap(),
            shard_web::SESSION_KEY_HEADER,
            v["session_key"].as_str().unwrap()
        )
    }

    /// `POST /bootstrap` on a fresh connection, as a browser page does.
    async fn ticket(&self, credential: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .unwrap();
        let req = format!(
            "POST /bootstrap HTTP/1.1\r\nHost: {}\r\nOrigin: {}\r\n{credential}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
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
        stop_daemon(self.home.path(), &mut self.child).await;
    }
}

/// The fan-out figure's JSON, the same for both transports.
fn fanout_figure(
    bench: &str,
    transport: &str,
    clients: usize,
    deltas: u64,
    total: u64,
    last: Duration,
) -> Value {
    json!({"bench":bench,"transport":transport,"clients":clients,"deltas_per_client":deltas,
           "delivered":total,"seconds":last.as_secs_f64(),
           "deltas_per_sec_aggregate":(total as f64/last.as_secs_f64()).round()})
}

async fn ws_fanout(bin: &Path, clients: usize, deltas: u64) -> Value {
    let d = Daemon::start(bin);
    let cookie = d.enroll();
    let (c, id) = streaming_agent(d.home.path(), deltas).await;
    let mut observers = Vec::new();
    for _ in 0..clients {
        let t = d.ticket(&cookie).await;
        let mut s = d.ws(&t).await;
        let attach = json!({"type":"agent.attach","id":"a","agent_id":id,"role":"observer"});
        s.send(Message::Text(attach.to_string().into()))
            .await
            .unwrap();
        // The observer's text frames, up to the first error or close.
        let mut texts = Box::pin(
            s.take_while(|m| std::future::ready(m.is_ok()))
                .filter_map(|m| {
                    std::future::ready(match m {
                        Ok(Message::Text(t)) => Some(t),
                        _ => None,
                    })
                }),
        );
        while let Some(t) = texts.next().await {
            if t.contains("\"type\":\"sync\"") {
                break;
            }
        }
        observers.push(texts);
    }
    let (total, last) = fanout(&c, &id, observers).await;
    d.shutdown().await;
    fanout_figure("ws_fanout", "websocket", clients, deltas, total, last)
}

async fn unix_fanout(bin: &Path, clients: usize, deltas: u64) -> Value {
    let d = Daemon::start(bin);
    let (c, id) = streaming_agent(d.home.path(), deltas).await;
    let mut observers = Vec::new();
    for _ in 0..clients {
        observers.push(line_stream(raw_attach(d.home.path(), &id).await));
    }
    let (total, last) = fanout(&c, &id, observers).await;
    d.shutdown().await;
    fanout_figure("unix_fanout", "unix", clients, deltas, total, last)
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
