//! The JSONL framing of PROTOCOL §2.1: split on `\n` only (U+2028 and U+2029 inside
//! strings pass through), strip one trailing `\r`, skip blank lines, bound the line
//! length. A bad line is an error item for that line only; the stream goes on.

use bytes::{BufMut, BytesMut};
use serde::Serialize;
use tokio_util::codec::{Decoder, Encoder};

/// Default maximum line length: 64 MiB.
pub const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;

/// A per-line framing error; the stream continues after it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// The line exceeded the configured maximum and was discarded.
    #[error("line longer than the {limit}-byte limit was discarded")]
    TooLong {
        /// The limit in bytes.
        limit: usize,
    },
}

/// A tokio codec for JSONL. Each decoded item is one line (without its terminator) or
/// a [`LineError`] for a line that could not be framed.
#[derive(Debug, Clone)]
pub struct JsonlCodec {
    max_line: usize,
    scanned: usize,
    discarding: bool,
}

impl Default for JsonlCodec {
    fn default() -> Self {
        JsonlCodec::new(DEFAULT_MAX_LINE)
    }
}

impl JsonlCodec {
    /// A codec with the given maximum line length in bytes.
    pub fn new(max_line: usize) -> Self {
        JsonlCodec {
            max_line,
            scanned: 0,
            discarding: false,
        }
    }

    /// The configured maximum line length.
    pub fn max_line(&self) -> usize {
        self.max_line
    }

    fn finish_line(&self, mut line: BytesMut) -> Option<Result<BytesMut, LineError>> {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.len() > self.max_line {
            return Some(Err(LineError::TooLong {
                limit: self.max_line,
            }));
        }
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            return None;
        }
        Some(Ok(line))
    }
}

impl Decoder for JsonlCodec {
    type Item = Result<BytesMut, LineError>;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        loop {
            let Some(offset) = memchr_newline(&buf[self.scanned..]) else {
                if self.discarding {
                    buf.clear();
                    self.scanned = 0;
                } else if buf.len() > self.max_line + 1 {
                    // Too long already: stop buffering and drop bytes until the newline.
                    self.discarding = true;
                    buf.clear();
                    self.scanned = 0;
                } else {
                    self.scanned = buf.len();
                }
                return Ok(None);
            };
            let end = self.scanned + offset;
            let mut line = buf.split_to(end + 1);
            line.truncate(end);
            self.scanned = 0;
            if self.discarding {
                self.discarding = false;
                return Ok(Some(Err(LineError::TooLong {
                    limit: self.max_line,
                })));
            }
            if let Some(item) = self.finish_line(line) {
                return Ok(Some(item));
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        if let Some(item) = self.decode(buf)? {
            return Ok(Some(item));
        }
        self.scanned = 0;
        if self.discarding {
            self.discarding = false;
            buf.clear();
            return Ok(Some(Err(LineError::TooLong {
                limit: self.max_line,
            })));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        // A last line without a terminator is still a line.
        let line = buf.split_to(buf.len());
        Ok(self.finish_line(line))
    }
}

fn memchr_newline(haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == b'\n')
}

impl<T: Serialize> Encoder<&T> for JsonlCodec {
    type Error = std::io::Error;

    fn encode(&mut self, item: &T, dst: &mut BytesMut) -> Result<(), Self::Error> {
        let mut writer = dst.writer();
        serde_json::to_writer(&mut writer, item).map_err(std::io::Error::other)?;
        writer.into_inner().put_u8(b'\n');
        Ok(())
    }
}

/// Serializes a message as one JSONL line, newline included.
pub fn to_line<T: Serialize>(message: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec(message).unwrap_or_else(|e| {
        // Our types always serialize; a failure is a bug, reported as a valid message.
        serde_json::to_vec(&serde_json::json!({
            "type": "error", "code": "INTERNAL_ERROR",
            "message": format!("could not encode a message: {e}")
        }))
        .unwrap_or_default()
    });
    out.push(b'\n');
    out
}
