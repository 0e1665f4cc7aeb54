//! A bounded outbound queue per client (docs/protocol.md §13 P2, docs/architecture.md#the-broker-and-multi-client). Pushing
//! never waits: a client whose queue passes the message or byte cap is closed with a
//! stated reason, so one slow reader never slows the agent or the other clients.
//! A [`QueueBudget`] bounds the bytes queued for all clients together: past it, the
//! clients with the longest backlogs are dropped first, and once every queue has drained
//! after a burst the allocator is asked to give the memory back.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
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
    /// The daemon-wide budget this queue's bytes count against, if any.
    budget: Option<Arc<QueueBudget>>,
    /// Keeps this queue's and the budget's byte counts in step (pushes, writes, shedding).
    acct: Mutex<()>,
    /// Set when the budget dropped this client: its bytes no longer count.
    shed: AtomicBool,
}

/// The bytes queued for every client together, with their cap. Memory is what a daemon
/// with thousands of clients runs out of, and per-client caps alone allow clients × cap.
#[derive(Debug)]
pub struct QueueBudget {
    max_bytes: usize,
    queued: AtomicUsize,
    /// The most queued since the allocator was last trimmed.
    peak: AtomicUsize,
    members: Mutex<Vec<Weak<Outbox>>>,
}

/// Queues that together held at least this much are followed by a trim once drained.
const TRIM_AFTER: usize = 16 * 1024 * 1024;

impl QueueBudget {
    /// A budget of `max_bytes` for all queues together.
    pub fn new(max_bytes: usize) -> Arc<Self> {
        Arc::new(QueueBudget {
            max_bytes,
            queued: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            members: Mutex::new(Vec::new()),
        })
    }

    /// Bytes queued for all clients now.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    fn add(&self, n: usize) -> usize {
        let now = self.queued.fetch_add(n, Ordering::AcqRel) + n;
        self.peak.fetch_max(now, Ordering::AcqRel);
        now
    }

    fn sub(&self, n: usize) {
        let _ = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
                Some(q.saturating_sub(n))
            });
    }

    /// Drops the clients with the longest backlogs until the total is within the cap
    /// again. Returns false when `me` was one of them.
    fn shed(&self, me: &Outbox) -> bool {
        let mut me_alive = true;
        while self.queued() > self.max_bytes {
            let victim = {
                let mut members = self.members.lock().unwrap_or_else(|p| p.into_inner());
                members.retain(|w| w.strong_count() > 0);
                members
                    .iter()
                    .filter_map(Weak::upgrade)
                    .filter(|o| !o.is_closed())
                    .max_by_key(|o| o.bytes.load(Ordering::Acquire))
            };
            let Some(victim) = victim else { break };
            if std::ptr::eq(Arc::as_ptr(&victim), me) {
                me_alive = false;
            }
            victim.drop_for_budget(self.max_bytes);
        }
        me_alive
    }

    /// Returns freed memory to the system once every queue has drained after a burst:
    /// glibc keeps freed heap for reuse, so a daemon that once queued hundreds of
    /// megabytes would otherwise hold them for good.
    fn after_drain(&self) {
        if self.queued() != 0 || self.peak.load(Ordering::Acquire) < TRIM_AFTER {
            return;
        }
        self.peak.store(0, Ordering::Release);
        tokio::task::spawn_blocking(trim_allocator);
    }
}

/// The daemon's one `unsafe` (docs/decisions.md "Daemon at thousands of agents").
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim_allocator() {
    // SAFETY: `malloc_trim` takes no pointer and is thread-safe (it takes each arena's
    // lock); it only returns free heap pages to the system, never a live allocation.
    let released = unsafe { nix::libc::malloc_trim(0) };
    tracing::debug!(
        released,
        "allocator trimmed after the client queues drained"
    );
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_allocator() {}

/// The receiving side, drained by [`run_writer`].
#[derive(Debug)]
pub struct OutboxReceiver {
    rx: mpsc::UnboundedReceiver<Bytes>,
}

impl Outbox {
    /// A new queue with the given caps.
    pub fn new(caps: QueueCaps) -> (Arc<Outbox>, OutboxReceiver) {
        Self::build(caps, None)
    }

    /// A new queue whose bytes also count against a daemon-wide budget.
    pub fn with_budget(
        caps: QueueCaps,
        budget: &Arc<QueueBudget>,
    ) -> (Arc<Outbox>, OutboxReceiver) {
        let (outbox, rx) = Self::build(caps, Some(Arc::clone(budget)));
        budget
            .members
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(&outbox));
        (outbox, rx)
    }

    fn build(caps: QueueCaps, budget: Option<Arc<QueueBudget>>) -> (Arc<Outbox>, OutboxReceiver) {
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
            budget,
            acct: Mutex::new(()),
            shed: AtomicBool::new(false),
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
        let over_budget = {
            let _acct = self.lock_acct();
            let count = self.count.fetch_add(1, Ordering::AcqRel) + 1;
            let bytes = self.bytes.fetch_add(len, Ordering::AcqRel) + len;
            // The byte cap bounds the backlog already queued: one frame larger than the
            // cap (a big `message_complete`) still goes to a client that is keeping up.
            if count > self.caps.max_messages || bytes - len > self.caps.max_bytes {
                self.count.fetch_sub(1, Ordering::AcqRel);
                self.bytes.fetch_sub(len, Ordering::AcqRel);
                drop(_acct);
                self.close(format!(
                    "client too slow: outbound queue over its cap ({} messages / {} bytes); \
                     disconnected so the agent and other clients are not slowed",
                    self.caps.max_messages, self.caps.max_bytes
                ));
                return false;
            }
            match &self.budget {
                Some(b) if !self.shed.load(Ordering::Acquire) => b.add(len) > b.max_bytes,
                _ => false,
            }
        };
        if over_budget
            && let Some(b) = &self.budget
            && !b.shed(self)
        {
            return false;
        }
        if self.tx.send(frame).is_err() {
            self.closed.store(true, Ordering::Release);
            return false;
        }
        true
    }

    fn lock_acct(&self) -> std::sync::MutexGuard<'_, ()> {
        self.acct.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts `msgs` frames of `n` bytes as gone from the queue (written or taken).
    fn release(&self, msgs: usize, n: usize) {
        let _acct = self.lock_acct();
        let _ = self
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                Some(c.saturating_sub(msgs))
            });
        let _ = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                Some(b.saturating_sub(n))
            });
        if let Some(b) = &self.budget
            && !self.shed.load(Ordering::Acquire)
        {
            b.sub(n);
        }
    }

    /// The budget chose this client to drop: its backlog stops counting now (the writer
    /// discards it as it ends), so the next push does not drop another client for it.
    fn drop_for_budget(&self, max_total: usize) {
        {
            let _acct = self.lock_acct();
            if !self.shed.swap(true, Ordering::AcqRel)
                && let Some(b) = &self.budget
            {
                b.sub(self.bytes.load(Ordering::Acquire));
            }
        }
        self.close(format!(
            "client too slow: the daemon's outbound queues together passed their cap \
             ({max_total} bytes) and this client had the longest backlog; disconnected so \
             the agents and other clients are not slowed"
        ));
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
        self.release(1, frame.len());
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
            outbox.release(batch.len(), n);
            if let Some(b) = &outbox.budget {
                b.after_drain();
            }
        }
        Ok(())
    }
    .await;
    // Whatever is still queued is discarded with the receiver.
    let left = outbox.bytes.load(Ordering::Acquire);
    outbox.release(outbox.queued(), left);
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

    #[test]
    fn the_budget_drops_the_longest_backlog_first() {
        let budget = QueueBudget::new(10);
        let caps = QueueCaps::default();
        let (slow, _slow_rx) = Outbox::with_budget(caps, &budget);
        let (fast, _fast_rx) = Outbox::with_budget(caps, &budget);
        assert!(slow.push(Bytes::from_static(b"123456")));
        assert!(fast.push(Bytes::from_static(b"12")));
        fast.release(1, 2);
        // Over the budget on the fast client's push: the slow one goes, not the pusher.
        assert!(fast.push(Bytes::from_static(b"12345")));
        assert!(slow.is_closed());
        assert!(!fast.is_closed());
        assert_eq!(budget.queued(), 5);
        assert!(slow.take_reason().unwrap().contains("together"));
        // The pusher itself goes when its own backlog is the longest.
        assert!(!fast.push(Bytes::from_static(b"123456")));
        assert!(fast.is_closed());
        assert_eq!(budget.queued(), 0);
    }
}
