//! The fake Runtime harness shared by the in-process daemon tests: the test plays
//! `shard agent` over a pair of pipes.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code, unused_imports)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use shard_client::Client;
use shard_daemon::{Daemon, DaemonConfig, ExitInfo, LaunchSpec, LaunchedRuntime, RuntimeLauncher};
use shard_protocol::command::{AgentCreate, AttachRole, ClientMessage, Command};
use shard_protocol::event::Response;
use shard_protocol::{CommandSpec, ErrorCode, Event, JsonlCodec};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::FramedRead;

pub const T: Duration = Duration::from_secs(20);

pub struct Fake {
    pub spec: LaunchSpec,
    pub commands: FramedRead<tokio::io::ReadHalf<DuplexStream>, JsonlCodec>,
    pub out: WriteHalf<DuplexStream>,
    pub exit: Option<oneshot::Sender<ExitInfo>>,
}

impl Fake {
    pub async fn emit(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        self.out.write_all(&line).await.unwrap();
        self.out.flush().await.unwrap();
    }
    pub async fn ready(&mut self) {
        self.emit(json!({"type":"hello","protocol_version":"0.1.0","server_version":"fake","capabilities":["mode-catalog"]})).await;
        self.emit(sync_json("idle")).await;
    }
    pub async fn next_command(&mut self) -> Value {
        serde_json::from_slice(&self.next_line().await).unwrap()
    }
    async fn next_line(&mut self) -> Vec<u8> {
        tokio::time::timeout(T, self.commands.next())
            .await
            .expect("command in time")
            .unwrap()
            .unwrap()
            .unwrap()
            .to_vec()
    }
    /// The next command the daemon sends, decoded as the Runtime decodes it.
    pub async fn next_cmd(&mut self) -> ClientMessage {
        let line = self.next_line().await;
        shard_protocol::decode_command(&line).unwrap_or_else(|e| {
            panic!(
                "the daemon sent a command that does not decode: {e}: {}",
                String::from_utf8_lossy(&line)
            )
        })
    }
    /// Answers `cmd` with a success, with `data` when given (as a Runtime would).
    pub async fn answer(&mut self, cmd: &ClientMessage, data: Option<Value>) {
        let r = Event::ok(cmd.id.clone(), cmd.command.type_name(), data);
        self.emit(serde_json::to_value(&r).unwrap()).await;
    }
}

/// A raw socket client speaking the wire by hand: commands go out as lines, and every
/// line that comes back is decoded as the typed [`Event`] a client decodes (a line that
/// does not decode fails the test). The raw lines are kept too, for checks of the bytes.
pub struct Wire {
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    pub w: tokio::net::unix::OwnedWriteHalf,
    /// Every event read so far.
    pub seen: Vec<Event>,
    /// Every line read so far, as sent.
    pub raw: Vec<String>,
    n: u32,
}

impl Wire {
    /// Connects to the daemon of `home`; the `hello` is left to read.
    pub async fn connect(home: &std::path::Path) -> Wire {
        let s = UnixStream::connect(home.join("daemon.sock")).await.unwrap();
        let (r, w) = s.into_split();
        Wire {
            lines: BufReader::new(r).lines(),
            w,
            seen: Vec::new(),
            raw: Vec::new(),
            n: 0,
        }
    }
    /// Connects and reads the `hello`.
    pub async fn hello(home: &std::path::Path) -> Wire {
        let mut wire = Wire::connect(home).await;
        let first = wire.line().await.expect("a hello");
        assert!(matches!(first, Event::Hello(_)), "{first:?}");
        wire
    }
    /// Writes bytes as they are.
    pub async fn send(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).await.unwrap();
        self.w.flush().await.unwrap();
    }
    /// The next line, decoded; `None` at end of stream.
    pub async fn line(&mut self) -> Option<Event> {
        let l = tokio::time::timeout(T, self.lines.next_line())
            .await
            .expect("a line in time")
            .ok()??;
        let ev = shard_protocol::decode_event(l.as_bytes())
            .unwrap_or_else(|e| panic!("the daemon sent a line that does not decode: {e}: {l}"));
        self.raw.push(l);
        self.seen.push(ev.clone());
        Some(ev)
    }
    /// The next `response`, skipping events.
    pub async fn response(&mut self) -> Response {
        loop {
            if let Event::Response(r) = self.line().await.expect("a response before the end") {
                return r;
            }
        }
    }
    /// Sends a hand-made command line (a fresh `id` is set) and returns its response.
    pub async fn call_json(&mut self, mut cmd: Value) -> Response {
        self.n += 1;
        let id = format!("c{}", self.n);
        cmd["id"] = json!(id);
        self.send(format!("{cmd}\n").as_bytes()).await;
        loop {
            match self.line().await.expect("a response before the end") {
                Event::Response(r) if r.id.as_deref() == Some(id.as_str()) => return r,
                _ => {}
            }
        }
    }
    /// Sends `cmd` with a fresh id and returns its response.
    pub async fn call(&mut self, cmd: Command) -> Response {
        self.call_json(
            serde_json::to_value(ClientMessage {
                id: None,
                command: cmd,
            })
            .unwrap(),
        )
        .await
    }
    /// Sends `cmd`, which must succeed, and returns its data as command `K`'s response type.
    pub async fn ok<K: CommandSpec>(&mut self, cmd: Command) -> K::Response {
        let r = self.call(cmd).await;
        data_of::<K>(r)
    }
    /// Sends `cmd`, which must fail, and returns its error code.
    pub async fn fails(&mut self, cmd: Command) -> ErrorCode {
        code_of(&self.call(cmd).await)
    }
    /// Proves to be `agent_id`'s Runtime with its token (`runtime.auth`).
    pub async fn runtime_auth(&mut self, agent_id: &str, token: &str) -> Response {
        let auth = shard_protocol::orchestrator::RuntimeAuth {
            id: None,
            agent_id: agent_id.to_string(),
            token: token.to_string(),
        };
        self.call_json(serde_json::to_value(auth).unwrap()).await
    }
}

/// The data of a successful response, as command `K`'s response type.
pub fn data_of<K: CommandSpec>(r: Response) -> K::Response {
    assert!(r.success, "{} failed: {r:?}", K::TYPE);
    K::decode_response(r.data.clone())
        .unwrap_or_else(|e| panic!("{} data does not decode: {e}: {r:?}", K::TYPE))
}

/// The error code of a failed response.
pub fn code_of(r: &Response) -> ErrorCode {
    assert!(!r.success, "expected a failure: {r:?}");
    r.error.as_ref().expect("an error body").code.clone()
}

pub fn sync_json(status: &str) -> Value {
    json!({"type":"sync","status":status,"mode":"build","live_window":{"messages":[]},"pending_requests":[]})
}

pub struct FakeLauncher(pub mpsc::UnboundedSender<Fake>);

#[async_trait]
impl RuntimeLauncher for FakeLauncher {
    async fn launch(&self, spec: &LaunchSpec) -> std::io::Result<LaunchedRuntime> {
        let (d_in, rt_in) = tokio::io::duplex(1 << 20);
        let (rt_out, d_out) = tokio::io::duplex(1 << 20);
        let (exit_tx, exit_rx) = oneshot::channel();
        let (rt_in_r, _rt_in_w) = tokio::io::split(rt_in);
        let (_rt_out_r, rt_out_w) = tokio::io::split(rt_out);
        let fake = Fake {
            spec: spec.clone(),
            commands: FramedRead::new(rt_in_r, JsonlCodec::default()),
            out: rt_out_w,
            exit: Some(exit_tx),
        };
        self.0
            .send(fake)
            .map_err(|_| std::io::Error::other("test gone"))?;
        Ok(LaunchedRuntime {
            pid: None,
            stdin: Box::pin(d_in),
            stdout: Box::pin(d_out),
            exit: Box::pin(async move { exit_rx.await.unwrap_or_default() }),
        })
    }
}

pub struct Setup {
    pub _home: tempfile::TempDir,
    pub home: std::path::PathBuf,
    pub runtimes: mpsc::UnboundedReceiver<Fake>,
    pub handle: shard_daemon::ShutdownHandle,
}

pub async fn start(config: impl FnOnce(&mut DaemonConfig)) -> Setup {
    let home = tempfile::tempdir().unwrap();
    let mut cfg = DaemonConfig::new(home.path().to_path_buf());
    config(&mut cfg);
    let (tx, rx) = mpsc::unbounded_channel();
    let d = Daemon::bind_with_launcher(cfg, Arc::new(FakeLauncher(tx)))
        .await
        .unwrap();
    let handle = d.shutdown_handle();
    tokio::spawn(d.run());
    Setup {
        home: home.path().to_path_buf(),
        _home: home,
        runtimes: rx,
        handle,
    }
}

pub async fn create(s: &mut Setup, c: &Client, policy: Option<&str>) -> (String, Fake) {
    let cwd = s.home.to_str().unwrap().to_string();
    let mut req: AgentCreate = serde_json::from_value(json!({"cwd": cwd})).unwrap();
    if let Some(p) = policy {
        req.headless_policy = serde_json::from_value(json!(p)).unwrap();
    }
    let fut = c.create(req);
    tokio::pin!(fut);
    let mut rt = tokio::select! {
        r = s.runtimes.recv() => r.unwrap(),
        r = &mut fut => panic!("create answered before the runtime was ready: {r:?}"),
    };
    rt.ready().await;
    let id = tokio::time::timeout(T, fut).await.unwrap().unwrap();
    (id, rt)
}

/// Attaches `c` to `id` as an interactive client, answering the daemon's `request_sync` as
/// an idle Runtime would.
pub async fn attach_idle(
    c: &Client,
    id: &str,
    rt: &mut Fake,
) -> (
    shard_protocol::responses::AttachData,
    shard_client::AgentEvents,
) {
    let f = c.attach(id, AttachRole::Interactive);
    tokio::pin!(f);
    let cmd = tokio::select! { c = rt.next_cmd() => c, _ = &mut f => panic!("no sync yet") };
    rt.emit(sync_json("idle")).await;
    rt.answer(&cmd, None).await;
    f.await.unwrap()
}

pub async fn next(rx: &mut mpsc::UnboundedReceiver<Event>) -> Event {
    tokio::time::timeout(T, rx.recv())
        .await
        .expect("event in time")
        .expect("stream open")
}

pub fn delta(i: usize) -> Value {
    json!({"type":"message_delta","message_id":"m1","block_index":0,"kind":"text","text_delta":format!("d{i} ")})
}

pub fn delta_text(e: &Event) -> Option<String> {
    match e {
        Event::MessageDelta(d) => d.text_delta.clone(),
        _ => None,
    }
}
