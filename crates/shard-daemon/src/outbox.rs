//! A bounded outbound queue per client (PROTOCOL §13 P2, ARCHITECTURE §6.1). Pushing
//! never waits: a client whose queue passes the message or byte cap is closed with a
//! stated reason, so one slow reader never slows the agent or the other clients.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::transport::FrameSink;

/// Caps of one client's outbound queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueCaps {
    /// Most messages queued and not yet written.
    pub max_messages: usize,
    /// Most bytes queued and not yet written.
    pub max_bytes: usize,
}

impl Default for QueueCaps {
    /// 65,536 messages or 64 MiB: several seconds of the fastest stream, and larger than
    /// the 8 MiB `sync` live-window budget (§16 item 9).
    fn default() -> Self {
        QueueCaps {
            max_messages: 65_536,
            max_bytes: 64 * 1024 * 1024,
        }
    }
}

/// The sending side of one client's queue.
#[derive(Debug)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Bytes>,
    count: AtomicUsize,
    bytes: AtomicUsize,
    caps: QueueCaps,
    closed: AtomicBool,
    reason: Mutex<Option<String>>,
    close_token: CancellationToken,
    /// Set by [`Outbox::finish`]: the writer delivers what is queued, then ends.
    finish_token: CancellationToken,
}

/// The receiving side, drained by [`run_writer`].
#[derive(Debug)]
pub struct OutboxReceiver {
    rx: mpsc::UnboundedReceiver<Bytes>,
}

impl Outbox {
    /// A new queue with the given caps.
    pub fn new(caps: QueueCaps) -> (Arc<Outbox>, OutboxReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        let outbox = Arc::new(Outbox {
            tx,
            count: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            caps,
            closed: AtomicBool::new(false),
            reason: Mutex::new(None),
            close_token: CancellationToken::new(),
            finish_token: CancellationToken::new(),
        });
        (outbox, OutboxReceiver { rx })
    }

    /// Queues one frame; false when the client is (now) closed. Over a cap the client
    /// is closed with the reason it will be told.
    pub fn push(&self, frame: Bytes) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return false;
        }
        let len = frame.len();
        let count = self.count.fetch_add(1, Ordering::AcqRel) + 1;
        let bytes = self.bytes.fetch_add(len, Ordering::AcqRel) + len;
        // The byte cap bounds the backlog already queued: one frame larger than the cap
        // (a big `message_complete`) still goes to a client that is keeping up.
        if count > self.caps.max_messages || bytes - len > self.caps.max_bytes {
            self.count.fetch_sub(1, Ordering::AcqRel);
            self.bytes.fetch_sub(len, Ordering::AcqRel);
            self.close(format!(
                "client too slow: outbound queue over its cap ({} messages / {} bytes); \
                 disconnected so the agent and other clients are not slowed",
                self.caps.max_messages, self.caps.max_bytes
            ));
            return false;
        }
        if self.tx.send(frame).is_err() {
            self.closed.store(true, Ordering::Release);
            return false;
        }
        true
    }

    /// Closes the client with a reason (the first reason wins).
    pub fn close(&self, reason: String) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::info!(%reason, "closing client");
        if let Ok(mut r) = self.reason.lock() {
            *r = Some(reason);
        }
        self.close_token.cancel();
    }

    /// Ends the client gracefully (daemon shutdown): nothing new is queued, and the writer
    /// delivers what already is before closing the connection.
    pub fn finish(&self) {
        self.closed.store(true, Ordering::Release);
        self.finish_token.cancel();
    }

    /// Takes one queued frame off (an in-process subscriber's receive), keeping the
    /// counters the caps are checked against in step.
    pub(crate) fn taken(&self, frame: &Bytes) {
        self.count.fetch_sub(1, Ordering::AcqRel);
        self.bytes.fetch_sub(frame.len(), Ordering::AcqRel);
    }

    /// How long the writer may still need: a client closed with a reason is given the
    /// reason's own delivery time; one that is only finishing, a short drain.
    pub(crate) fn writer_bound(&self, drain: Duration) -> Duration {
        if self.close_token.is_cancelled() {
            REASON_TIMEOUT + Duration::from_secs(3)
        } else {
            drain
        }
    }

    /// True once closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Resolves when the client is closed.
    pub async fn closed(&self) {
        self.close_token.cancelled().await;
    }

    /// Resolves when the client is closed or finished: its connection is ending (a
    /// `subagent.wait` on it stops waiting then).
    pub async fn ended(&self) {
        tokio::select! {
            _ = self.close_token.cancelled() => {}
            _ = self.finish_token.cancelled() => {}
        }
    }

    /// Messages currently queued.
    pub fn queued(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    fn take_reason(&self) -> Option<String> {
        self.reason.lock().ok().and_then(|mut r| r.take())
    }
}

impl OutboxReceiver {
    /// The next queued frame (in-process subscribers, which have no writer task).
    pub(crate) async fn recv(&mut self) -> Option<Bytes> {
        self.rx.recv().await
    }

    /// A queued frame, if any (tests).
    #[cfg(test)]
    pub(crate) fn try_recv(&mut self) -> Option<Bytes> {
        self.rx.try_recv().ok()
    }
}

/// How long a closed client's writer keeps trying to deliver the close reason.
const REASON_TIMEOUT: Duration = Duration::from_secs(30);

/// Most frames written before a flush; batching keeps syscalls few under load.
const BATCH: usize = 256;

/// Drains the queue into the transport until the client closes or goes away.
pub async fn run_writer(outbox: Arc<Outbox>, mut rx: OutboxReceiver, mut sink: Box<dyn FrameSink>) {
    let result: std::io::Result<()> = async {
        loop {
            let first = tokio::select! {
                biased;
                _ = outbox.closed() => break,
                f = rx.rx.recv() => match f { Some(f) => f, None => break },
                _ = outbox.finish_token.cancelled() => {
                    // Graceful end: deliver what is queued, then close.
                    while let Ok(f) = rx.rx.try_recv() {
                        sink.write_frame(&f).await?;
                    }
                    sink.flush().await?;
                    break;
                }
            };
            let mut batch = Vec::with_capacity(16);
            batch.push(first);
            while batch.len() < BATCH {
                match rx.rx.try_recv() {
                    Ok(f) => batch.push(f),
                    Err(_) => break,
                }
            }
            let write = async {
                for f in &batch {
                    sink.write_frame(f).await?;
                }
                sink.flush().await
            };
            tokio::select! {
                biased;
                _ = outbox.closed() => break,
                r = write => r?,
            }
            let n: usize = batch.iter().map(Bytes::len).sum();
            outbox.count.fetch_sub(batch.len(), Ordering::AcqRel);
            outbox.bytes.fetch_sub(n, Ordering::AcqRel);
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        tracing::debug!(error = %e, "client write failed");
        outbox.close(format!("write failed: {e}"));
    }
    if let Some(reason) = outbox.take_reason() {
        // Best effort: a client that does not read may never take this line.
        let line = shard_protocol::to_line(&serde_json::json!({
            "type": "error", "code": "CLIENT_TOO_SLOW", "message": reason, "fatal": true
        }));
        let mut framed = Vec::with_capacity(line.len() + 1);
        framed.push(b'\n');
        framed.extend_from_slice(&line);
        // A client that stopped reading may pick the reason up later; wait a bounded time.
        let _ = tokio::time::timeout(REASON_TIMEOUT, async {
            sink.write_frame(&framed).await?;
            sink.flush().await
        })
        .await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), sink.shutdown()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_the_message_cap_closes_with_a_reason() {
        let (ob, _rx) = Outbox::new(QueueCaps {
            max_messages: 2,
            max_bytes: 1000,
        });
        assert!(ob.push(Bytes::from_static(b"a")));
        assert!(ob.push(Bytes::from_static(b"b")));
        assert!(!ob.push(Bytes::from_static(b"c")));
        assert!(ob.is_closed());
        assert!(ob.take_reason().unwrap().contains("too slow"));
        assert!(!ob.push(Bytes::from_static(b"d")));
    }

    #[test]
    fn over_the_byte_cap_closes() {
        let (ob, _rx) = Outbox::new(QueueCaps {
            max_messages: 100,
            max_bytes: 5,
        });
        assert!(ob.push(Bytes::from_static(b"1234")));
        assert!(ob.push(Bytes::from_static(b"56")));
        assert!(!ob.push(Bytes::from_static(b"7")));
        assert!(ob.is_closed());
        // A single oversized frame into an empty queue is a message, not a backlog.
        let (big, _rx) = Outbox::new(QueueCaps {
            max_messages: 100,
            max_bytes: 5,
        });
        assert!(big.push(Bytes::from_static(b"0123456789")));
        assert!(!big.push(Bytes::from_static(b"x")));
    }
}
