//! The Rust SDK for Shard (docs/architecture.md#the-crates-and-their-floors): connect to the daemon's unix socket or to a
//! direct `shard agent` child over stdio, send typed commands with correlated responses,
//! and read events demultiplexed by `agent_id`. [`view::AgentView`] turns an agent's
//! events into its state; [`sanitize`] makes model and tool text safe for a terminal.

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod lines;
pub mod results;
pub mod sanitize;
pub mod typed;
pub mod view;

pub use typed::Request;
pub use view::{AgentView, Change, LineDecoder};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;
use shard_protocol::command::{AgentAttach, AgentCreate, AttachRole};
use shard_protocol::event::{Hello, Response};
use shard_protocol::responses::AttachData;
use shard_protocol::types::AgentInfo;
use shard_protocol::{
    ClientMessage, Command, ErrorBody, Event, IncomingEvent, JsonlCodec, decode_event_lenient,
    to_line,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::FramedRead;

/// Errors of the SDK.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Connecting or spawning failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The daemon socket's other end runs as another user: nothing was sent to it.
    #[error("{path} is served by user id {uid}, not by you ({me}): refusing to talk to it")]
    ForeignPeer {
        /// The socket.
        path: String,
        /// Who serves it.
        uid: u32,
        /// Who we are.
        me: u32,
    },
    /// The connection is gone.
    #[error("the connection is closed")]
    Closed,
    /// The server's first message was not `hello`.
    #[error("the server did not start with hello")]
    NoHello,
    /// The command failed.
    #[error("{}: {}", .0.code, .0.message)]
    Command(ErrorBody),
    /// The response data had an unexpected shape.
    #[error("unexpected response data: {0}")]
    Data(String),
}

/// Refuses a socket whose other end runs as another user (kernel-reported credentials,
/// which the peer cannot forge).
fn check_peer_is_us(stream: &tokio::net::UnixStream, path: &Path) -> Result<(), ClientError> {
    let cred = stream.peer_cred().map_err(|source| ClientError::Io {
        what: format!("reading who serves {}", path.display()),
        source,
    })?;
    let me = nix::unistd::geteuid().as_raw();
    if cred.uid() == me {
        return Ok(());
    }
    Err(ClientError::ForeignPeer {
        path: path.display().to_string(),
        uid: cred.uid(),
        me,
    })
}

/// Events of one agent, in stream order.
pub type AgentEvents = mpsc::UnboundedReceiver<Event>;

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Response>>>>;
type Subs = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Event>>>>;

/// One connection to a daemon or to a direct agent.
pub struct Client {
    writer: mpsc::UnboundedSender<Bytes>,
    pending: Pending,
    subs: Subs,
    next: AtomicU64,
    hello: Hello,
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<IncomingEvent>>,
    child: Mutex<Option<tokio::process::Child>>,
    input_closed: tokio_util::sync::CancellationToken,
}

impl Client {
    /// Connects to `SHARD_HOME/daemon.sock`.
    pub async fn connect_daemon(home: &Path) -> Result<Client, ClientError> {
        Self::connect_unix(&home.join("daemon.sock")).await
    }

    /// Connects to a daemon socket. The process at the other end must run as this
    /// user: a socket someone else bound (a `SHARD_HOME` on a shared folder, a squatter
    /// after the daemon died) would otherwise receive every prompt and answer every
    /// permission request.
    pub async fn connect_unix(path: &Path) -> Result<Client, ClientError> {
        let stream = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|source| ClientError::Io {
                what: format!("connecting to {}", path.display()),
                source,
            })?;
        check_peer_is_us(&stream, path)?;
        let (r, w) = stream.into_split();
        Self::from_io(r, w).await
    }

    /// Spawns `exe args…` (a `shard agent`) and talks to it over its stdio.
    pub async fn spawn_agent(
        exe: &Path,
        args: &[String],
        env: &[(String, String)],
    ) -> Result<Client, ClientError> {
        let mut cmd = tokio::process::Command::new(exe);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|source| ClientError::Io {
            what: format!("spawning {}", exe.display()),
            source,
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ClientError::Closed);
        };
        let client = Self::from_io(stdout, stdin).await?;
        if let Ok(mut c) = client.child.lock() {
            *c = Some(child);
        }
        Ok(client)
    }

    /// Runs the protocol over any reader/writer pair; waits for the server's `hello`.
    pub async fn from_io<R, W>(reader: R, writer: W) -> Result<Client, ClientError>
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        let (wtx, wrx) = mpsc::unbounded_channel::<Bytes>();
        let input_closed = tokio_util::sync::CancellationToken::new();
        tokio::spawn(write_loop(Box::pin(writer), wrx, input_closed.clone()));
        let mut lines = FramedRead::new(
            Box::pin(reader) as Pin<Box<dyn AsyncRead + Send>>,
            JsonlCodec::default(),
        );
        let hello = loop {
            match lines.next().await {
                Some(Ok(Ok(line))) => match decode_event_lenient(&line) {
                    Ok(IncomingEvent::Known(Event::Hello(h))) => break h,
                    _ => return Err(ClientError::NoHello),
                },
                Some(Ok(Err(_))) => continue,
                _ => return Err(ClientError::Closed),
            }
        };
        let pending: Pending = Arc::default();
        let subs: Subs = Arc::default();
        let (etx, erx) = mpsc::unbounded_channel();
        tokio::spawn(read_loop(
            lines,
            Arc::clone(&pending),
            Arc::clone(&subs),
            etx,
        ));
        Ok(Client {
            writer: wtx,
            pending,
            subs,
            next: AtomicU64::new(1),
            hello,
            events: tokio::sync::Mutex::new(erx),
            child: Mutex::new(None),
            input_closed,
        })
    }

    /// The server's `hello`.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// Sends a message without waiting for anything.
    pub fn send(&self, message: &ClientMessage) -> Result<(), ClientError> {
        self.writer
            .send(Bytes::from(to_line(message)))
            .map_err(|_| ClientError::Closed)
    }

    /// Sends a command with a fresh id and waits for its `response` (success or not).
    pub async fn request(&self, command: Command) -> Result<Response, ClientError> {
        let id = format!("c{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id.clone(), tx);
        }
        self.send(&ClientMessage::new(id, command))?;
        rx.await.map_err(|_| ClientError::Closed)
    }

    /// Like [`request`](Client::request), turning `success: false` into an error.
    pub async fn call(&self, command: Command) -> Result<Option<serde_json::Value>, ClientError> {
        let r = self.request(command).await?;
        if r.success {
            Ok(r.data)
        } else {
            Err(ClientError::Command(r.error.unwrap_or_else(|| {
                ErrorBody::new(
                    shard_protocol::ErrorCode::InternalError,
                    "failed without an error body",
                )
            })))
        }
    }

    /// Routes every later event tagged with `agent_id` to the returned receiver.
    pub fn subscribe(&self, agent_id: &str) -> AgentEvents {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut s) = self.subs.lock() {
            s.insert(agent_id.to_string(), tx);
        }
        rx
    }

    /// The next event no subscription took (orchestrator events, direct-connection
    /// events, unknown types); `None` once the connection is closed.
    pub async fn next_event(&self) -> Option<IncomingEvent> {
        self.events.lock().await.recv().await
    }

    /// Sends a typed request and returns its typed response data.
    pub async fn send_request<R: Request>(&self, request: R) -> Result<R::Data, ClientError> {
        let data = self.call(request.into_command()).await?;
        parse::<R::Data>(data)
    }

    /// `agent.list`.
    pub async fn list(&self) -> Result<Vec<AgentInfo>, ClientError> {
        Ok(self.send_request(typed::ListAgents).await?.agents)
    }

    /// `agent.create`; returns the new agent id.
    pub async fn create(&self, create: AgentCreate) -> Result<String, ClientError> {
        Ok(self.send_request(create).await?.agent_id)
    }

    /// `agent.create`; returns the whole answer (the id and any notice for the user).
    pub async fn create_with_notice(
        &self,
        create: AgentCreate,
    ) -> Result<shard_protocol::responses::AgentCreated, ClientError> {
        self.send_request(create).await
    }

    /// `agent.attach`, subscribing first so the `sync` and everything after it land in
    /// the returned receiver.
    pub async fn attach(
        &self,
        agent_id: &str,
        role: AttachRole,
    ) -> Result<(AttachData, AgentEvents), ClientError> {
        let rx = self.subscribe(agent_id);
        let data = self
            .send_request(AgentAttach {
                agent_id: agent_id.to_string(),
                role: Some(role),
            })
            .await?;
        Ok((data, rx))
    }

    /// `agent.detach`.
    pub async fn detach(&self, agent_id: &str) -> Result<(), ClientError> {
        self.send_request(typed::Detach(agent_id.to_string()))
            .await?;
        if let Ok(mut s) = self.subs.lock() {
            s.remove(agent_id);
        }
        Ok(())
    }

    /// Ends the output to the server once what is queued is written (a direct agent
    /// sees end of input), while events can still be read; for a connection shared by
    /// tasks, where [`close_and_wait`](Client::close_and_wait) cannot take it.
    pub fn close_input(&self) {
        self.input_closed.cancel();
    }

    /// For a direct agent: waits for it to exit (after [`close_input`](Client::close_input)).
    pub async fn wait_exit(&self) -> Option<std::process::ExitStatus> {
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        match child {
            Some(mut c) => c.wait().await.ok(),
            None => None,
        }
    }

    /// For a direct agent: closes its stdin and waits for it to exit.
    pub async fn close_and_wait(self) -> Option<std::process::ExitStatus> {
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        drop(self.writer);
        match child {
            Some(mut c) => c.wait().await.ok(),
            None => None,
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(
    data: Option<serde_json::Value>,
) -> Result<T, ClientError> {
    serde_json::from_value(data.unwrap_or(serde_json::Value::Null))
        .map_err(|e| ClientError::Data(e.to_string()))
}

async fn write_loop(
    mut w: Pin<Box<dyn AsyncWrite + Send>>,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    closed: tokio_util::sync::CancellationToken,
) {
    loop {
        let first = tokio::select! {
            biased;
            m = rx.recv() => match m {
                Some(m) => m,
                None => break,
            },
            _ = closed.cancelled() => break,
        };
        let mut buf = first.to_vec();
        while let Ok(more) = rx.try_recv() {
            buf.extend_from_slice(&more);
        }
        if w.write_all(&buf).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
    let _ = w.shutdown().await;
}

async fn read_loop(
    mut lines: FramedRead<Pin<Box<dyn AsyncRead + Send>>, JsonlCodec>,
    pending: Pending,
    subs: Subs,
    events: mpsc::UnboundedSender<IncomingEvent>,
) {
    while let Some(item) = lines.next().await {
        let line = match item {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "line dropped");
                continue;
            }
            Err(_) => break,
        };
        let ev = match decode_event_lenient(&line) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "undecodable event dropped");
                continue;
            }
        };
        if let IncomingEvent::Known(Event::Response(r)) = &ev
            && let Some(id) = &r.id
            && let Some(tx) = pending.lock().ok().and_then(|mut p| p.remove(id))
        {
            let _ = tx.send(r.clone());
            continue;
        }
        if let IncomingEvent::Known(e) = &ev
            && let Some(aid) = e.routing_agent_id()
        {
            let tx = subs.lock().ok().and_then(|s| s.get(aid).cloned());
            if let Some(tx) = tx
                && tx.send(e.clone()).is_ok()
            {
                continue;
            }
        }
        let _ = events.send(ev);
    }
    if let Ok(mut p) = pending.lock() {
        p.clear();
    }
    if let Ok(mut s) = subs.lock() {
        s.clear();
    }
}

/// `SHARD_HOME`: the environment variable, else `~/.shard`.
pub fn shard_home() -> PathBuf {
    if let Some(h) = std::env::var_os("SHARD_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".shard")
}
