//! A stdio server's output, cut off at the first message over the size limit. rmcp
//! drops such a line and keeps reading, so the call waiting for it would wait for its
//! timeout; ending the stream instead ends the connection, the waiting call fails at
//! once, and the server is restarted.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

use crate::server::ServerShared;

/// Reads `inner` until a line grows past `max` bytes, then reports the end of the
/// stream (complete lines before it are still delivered) and marks the server.
pub(crate) struct Limited<R> {
    inner: R,
    max: usize,
    /// Bytes of the current line so far.
    line: usize,
    server: Arc<ServerShared>,
}

impl<R> Limited<R> {
    pub(crate) fn new(inner: R, max: usize, server: Arc<ServerShared>) -> Limited<R> {
        Limited {
            inner,
            max,
            line: 0,
            server,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Limited<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.server.oversized.load(Ordering::SeqCst) {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let mut keep = None;
        for (i, b) in buf.filled()[before..].iter().enumerate() {
            if *b == b'\n' {
                this.line = 0;
            } else {
                this.line += 1;
                if this.line > this.max {
                    keep = Some(before + i);
                    break;
                }
            }
        }
        if let Some(n) = keep {
            tracing::warn!(
                server = %this.server.spec.name,
                max = this.max,
                "an MCP server sent a message over the size limit; its connection is ended"
            );
            this.server.oversized.store(true, Ordering::SeqCst);
            buf.set_filled(n);
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_pass_until_one_is_too_long() {
        let spec = crate::config::spec(
            "s",
            &crate::ServerConfig {
                command: Some("x".into()),
                ..Default::default()
            },
            crate::Origin::User,
            std::path::Path::new("config.toml"),
            &|_| None,
        )
        .unwrap();
        let server = ServerShared::new(spec);
        let input: &[u8] = b"short\nfine\n0123456789abcdef\nnever\n";
        let mut r = Limited::new(input, 8, server.clone());
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, b"short\nfine\n01234567");
        assert!(server.oversized.load(Ordering::SeqCst));
    }
}
