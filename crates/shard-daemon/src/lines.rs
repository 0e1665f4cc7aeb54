//! Reading JSONL from a byte stream with bounded memory: one connection
//! buffers at most one maximum line of a partial line, and all connections together at
//! most a daemon-wide budget. A line refused for either reason is discarded up to its
//! newline and reported as one [`LineError::TooLong`] (with the line's `id` when its
//! start shows one), so the connection stays usable.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::BytesMut;
use futures::{Stream, StreamExt};
use shard_protocol::{JsonlCodec, LineError};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::codec::Decoder;

/// Inbound records: one JSON message each, or a framing error for one record (what a
/// transport's connection reads).
pub type InboundStream =
    Pin<Box<dyn Stream<Item = std::io::Result<Result<BytesMut, LineError>>> + Send>>;

/// Partial-line bytes buffered across every connection of a daemon.
#[derive(Debug)]
pub struct LineBudget {
    used: AtomicUsize,
    max: usize,
}

impl LineBudget {
    /// A budget of `max` bytes.
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(LineBudget {
            used: AtomicUsize::new(0),
            max,
        })
    }

    /// Bytes buffered now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

/// Keeps one connection's share of the budget equal to its buffered bytes.
struct Share {
    budget: Arc<LineBudget>,
    held: usize,
}

impl Share {
    fn set(&mut self, now: usize) {
        if now > self.held {
            self.budget
                .used
                .fetch_add(now - self.held, Ordering::AcqRel);
        } else {
            self.budget
                .used
                .fetch_sub(self.held - now, Ordering::AcqRel);
        }
        self.held = now;
    }

    fn over(&self) -> bool {
        self.budget.used() > self.budget.max
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.set(0);
    }
}

const READ_CHUNK: usize = 64 * 1024;

struct Reader<R> {
    io: R,
    codec: JsonlCodec,
    buf: BytesMut,
    share: Share,
    max_line: usize,
    /// Dropping the rest of a line refused for the daemon-wide budget.
    skipping: Option<Option<String>>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    async fn next(&mut self) -> Option<std::io::Result<Result<BytesMut, LineError>>> {
        loop {
            if let Some(id) = self.skipping.take() {
                match self.buf.iter().position(|b| *b == b'\n') {
                    Some(nl) => {
                        let _ = self.buf.split_to(nl + 1);
                        self.share.set(self.buf.len());
                        return Some(Ok(Err(LineError::TooLong {
                            limit: self.max_line,
                            id,
                        })));
                    }
                    None => {
                        self.buf.clear();
                        self.share.set(0);
                        if self.eof {
                            return Some(Ok(Err(LineError::TooLong {
                                limit: self.max_line,
                                id,
                            })));
                        }
                        self.skipping = Some(id);
                    }
                }
            } else {
                let item = if self.eof {
                    self.codec.decode_eof(&mut self.buf)
                } else {
                    self.codec.decode(&mut self.buf)
                };
                match item {
                    Err(e) => return Some(Err(e)),
                    Ok(Some(item)) => {
                        self.share.set(self.buf.len());
                        return Some(Ok(item));
                    }
                    Ok(None) if self.eof => return None,
                    Ok(None) => {}
                }
                self.share.set(self.buf.len());
                if self.share.over() && !self.buf.is_empty() {
                    // Over the daemon-wide budget: this line is refused, not buffered.
                    let id =
                        shard_protocol::codec::top_level_id(&self.buf[..self.buf.len().min(4096)]);
                    tracing::warn!(
                        used = self.share.budget.used(),
                        "inbound buffer budget exhausted; a partial line was refused"
                    );
                    self.codec = JsonlCodec::new(self.max_line);
                    self.skipping = Some(id);
                    continue;
                }
            }
            self.buf.reserve(READ_CHUNK);
            match self.io.read_buf(&mut self.buf).await {
                Ok(0) => self.eof = true,
                Ok(_) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// Frames a byte stream as JSONL lines under the line limit and the shared budget.
pub fn budgeted_lines<R: AsyncRead + Unpin + Send + 'static>(
    io: R,
    max_line: usize,
    budget: Arc<LineBudget>,
) -> InboundStream {
    let reader = Reader {
        io,
        codec: JsonlCodec::new(max_line),
        buf: BytesMut::new(),
        share: Share { budget, held: 0 },
        max_line,
        skipping: None,
        eof: false,
    };
    futures::stream::unfold(reader, |mut r| async move {
        let item = r.next().await?;
        Some((item, r))
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// Returns one chunk per read, as a socket delivering a line in pieces would.
    struct Chunks(std::collections::VecDeque<Vec<u8>>);

    impl AsyncRead for Chunks {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if let Some(c) = self.0.pop_front() {
                buf.put_slice(&c);
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_line_over_the_shared_budget_is_refused_and_the_next_one_read() {
        let budget = LineBudget::new(1024);
        let mut head = br#"{"id":"b1","type":"prompt","message":""#.to_vec();
        head.extend(std::iter::repeat_n(b'a', 4096));
        let chunks = vec![head, vec![b'a'; 4096], b"\"}\n{\"id\":\"ok\"}\n".to_vec()];
        let mut lines = budgeted_lines(Chunks(chunks.into()), 1 << 20, Arc::clone(&budget));
        match lines.next().await.unwrap().unwrap() {
            Err(LineError::TooLong { id, .. }) => assert_eq!(id.as_deref(), Some("b1")),
            other => panic!("unexpected {other:?}"),
        }
        let ok = lines.next().await.unwrap().unwrap().unwrap();
        assert_eq!(&ok[..], br#"{"id":"ok"}"#);
        assert!(lines.next().await.is_none());
        drop(lines);
        assert_eq!(budget.used(), 0);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_refused_with_its_id() {
        let budget = LineBudget::new(1 << 30);
        let (mut w, r) = tokio::io::duplex(1 << 16);
        let mut lines = budgeted_lines(r, 100, budget);
        let mut big = br#"{"type":"prompt","id":"x","message":""#.to_vec();
        big.extend(std::iter::repeat_n(b'a', 500));
        big.extend_from_slice(b"\"}\n{\"id\":\"ok\"}\n");
        w.write_all(&big).await.unwrap();
        match lines.next().await.unwrap().unwrap() {
            Err(LineError::TooLong { id, .. }) => assert_eq!(id.as_deref(), Some("x")),
            other => panic!("unexpected {other:?}"),
        }
        assert!(lines.next().await.unwrap().unwrap().is_ok());
    }
}
