//! A WebSocket as a daemon [`Connection`]: text frames in, text frames out, the same
//! protocol as the unix socket. Binary frames close the socket (docs/protocol.md §2.2); the server
//! pings every interval and drops a client that let a whole interval pass without a pong;
//! a revocation or the daemon's stop closes it with a stated reason.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code};
use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use shard_daemon::transport::{Connection, FrameSink, InboundStream};
use shard_daemon::{Principal, TransportKind};
use shard_protocol::LineError;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Why the server closed a socket, sent as the close frame.
type CloseReason = Arc<Mutex<Option<(u16, &'static str)>>>;

fn set_reason(r: &CloseReason, code: u16, why: &'static str) {
    let mut g = r.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_none() {
        *g = Some((code, why));
    }
}

enum Out {
    Batch(Vec<Message>),
    Shutdown,
}

/// The outgoing side the daemon writes to: frames are batched until `flush`, so one
/// channel hop carries a whole batch of deltas.
struct WsSink {
    tx: mpsc::Sender<Out>,
    pending: Vec<Message>,
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "websocket closed")
}

#[async_trait]
impl FrameSink for WsSink {
    async fn write_frame(&mut self, frame: &[u8]) -> std::io::Result<()> {
        let body = frame.strip_suffix(b"\n").unwrap_or(frame);
        let text = std::str::from_utf8(body)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        self.pending.push(Message::Text(Utf8Bytes::from(text)));
        Ok(())
    }
    async fn flush(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.pending);
        self.tx.send(Out::Batch(batch)).await.map_err(|_| closed())
    }
    async fn shutdown(&mut self) -> std::io::Result<()> {
        self.flush().await?;
        self.tx.send(Out::Shutdown).await.map_err(|_| closed())
    }
}

/// Turns an upgraded socket into a daemon connection for a browser principal. `cancel`
/// closes it (revocation, daemon stop).
pub(crate) fn bridge(
    socket: WebSocket,
    principal_id: String,
    peer: String,
    ping_interval: Duration,
    cancel: CancellationToken,
    stop: CancellationToken,
) -> Connection {
    let (mut sink, stream) = socket.split();
    let reason: CloseReason = Arc::new(Mutex::new(None));
    let alive = Arc::new(AtomicBool::new(true));
    let (tx, mut rx) = mpsc::channel::<Out>(8);

    // Writer: batches from the daemon, pings, and the closing frame.
    let w_cancel = cancel.clone();
    let w_reason = Arc::clone(&reason);
    let w_alive = Arc::clone(&alive);
    tokio::spawn(async move {
        let start = tokio::time::Instant::now() + ping_interval;
        let mut ping = tokio::time::interval_at(start, ping_interval);
        let result: Result<(), axum::Error> = async {
            loop {
                tokio::select! {
                    biased;
                    _ = w_cancel.cancelled() => {
                        if stop.is_cancelled() {
                            set_reason(&w_reason, close_code::AWAY, "the daemon is stopping");
                        } else {
                            set_reason(&w_reason, close_code::POLICY, "this browser was revoked");
                        }
                        break;
                    }
                    m = rx.recv() => match m {
                        Some(Out::Batch(batch)) => {
                            for m in batch {
                                sink.feed(m).await?;
                            }
                            sink.flush().await?;
                        }
                        Some(Out::Shutdown) | None => {
                            set_reason(&w_reason, close_code::NORMAL, "closed by the daemon");
                            break;
                        }
                    },
                    _ = ping.tick() => {
                        if !w_alive.swap(false, Ordering::AcqRel) {
                            set_reason(&w_reason, close_code::POLICY, "no pong within the ping interval");
                            break;
                        }
                        sink.send(Message::Ping(bytes::Bytes::new())).await?;
                    }
                }
            }
            Ok(())
        }
        .await;
        w_cancel.cancel();
        if result.is_ok() {
            let (code, why) = w_reason
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or((close_code::AWAY, "closed"));
            let frame = CloseFrame {
                code,
                reason: Utf8Bytes::from_static(why),
            };
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                let _ = sink.send(Message::Close(Some(frame))).await;
                let _ = sink.close().await;
            })
            .await;
        }
    });

    // Reader: the inbound stream the daemon polls.
    let inbound: InboundStream = Box::pin(futures::stream::unfold(
        (stream, cancel, reason, alive),
        |(mut stream, cancel, reason, alive)| async move {
            loop {
                let m = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return None,
                    m = stream.next() => m,
                };
                match m {
                    Some(Ok(Message::Text(t))) => {
                        alive.store(true, Ordering::Release);
                        let line = BytesMut::from(t.as_bytes());
                        let item: std::io::Result<Result<BytesMut, LineError>> = Ok(Ok(line));
                        return Some((item, (stream, cancel, reason, alive)));
                    }
                    Some(Ok(Message::Binary(_))) => {
                        set_reason(
                            &reason,
                            close_code::UNSUPPORTED,
                            "binary frames are not used; send JSON text frames",
                        );
                        cancel.cancel();
                        return None;
                    }
                    Some(Ok(Message::Pong(_))) => alive.store(true, Ordering::Release),
                    Some(Ok(Message::Ping(_))) => {}
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                        set_reason(&reason, close_code::NORMAL, "closed by the client");
                        cancel.cancel();
                        return None;
                    }
                }
            }
        },
    ));

    Connection {
        peer,
        kind: TransportKind::WebSocket,
        principal: Principal::Browser { id: principal_id },
        peer_pid: None,
        inbound,
        outbound: Box::new(WsSink {
            tx,
            pending: Vec::new(),
        }),
    }
}
