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
use shard_protocol::command::{AgentCreate, AttachRole};
use shard_protocol::{Event, JsonlCodec};
use tokio::io::{AsyncWriteExt, DuplexStream, WriteHalf};
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
        let line = tokio::time::timeout(T, self.commands.next())
            .await
            .expect("command in time")
            .unwrap()
            .unwrap()
            .unwrap();
        serde_json::from_slice(&line).unwrap()
    }
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
    let cmd = tokio::select! { c = rt.next_command() => c, _ = &mut f => panic!("no sync yet") };
    rt.emit(sync_json("idle")).await;
    rt.emit(json!({"type":"response","id":cmd["id"],"command":"request_sync","success":true}))
        .await;
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
