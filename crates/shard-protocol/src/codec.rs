//! The JSONL framing of docs/protocol.md §2.1: split on `\n` only (U+2028 and U+2029 inside
//! strings pass through), strip one trailing `\r`, skip blank lines, bound the line
//! length. A bad line is an error item for that line only; the stream goes on.

use bytes::{BufMut, BytesMut};
use serde::Serialize;
use tokio_util::codec::{Decoder, Encoder};

/// The maximum line length of the whole path (client → daemon → Runtime and back):
/// 64 MiB. Every reader of the protocol uses this limit, so a line one
/// hop accepts is never refused by the next. docs/protocol.md documents it.
pub const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;

/// How much of an over-long line is kept to find its command `id`.
const ID_PREFIX: usize = 4096;

/// A per-line framing error; the stream continues after it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// The line exceeded the configured maximum and was discarded.
    #[error("line longer than the {limit}-byte limit was discarded")]
    TooLong {
        /// The limit in bytes.
        limit: usize,
        /// The line's top-level `"id"`, when its first few KiB show one, so the
        /// `INVALID_REQUEST` answer can carry it.
        id: Option<String>,
    },
}

/// A tokio codec for JSONL. Each decoded item is one line (without its terminator) or
/// a [`LineError`] for a line that could not be framed.
#[derive(Debug, Clone)]
pub struct JsonlCodec {
    max_line: usize,
    scanned: usize,
    discarding: bool,
    /// The `id` read from the start of the line being discarded.
    discarded_id: Option<String>,
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
            discarded_id: None,
        }
    }

    fn too_long(&mut self, prefix: &[u8]) -> LineError {
        let id = self
            .discarded_id
            .take()
            .or_else(|| top_level_id(&prefix[..prefix.len().min(ID_PREFIX)]));
        LineError::TooLong {
            limit: self.max_line,
            id,
        }
    }

    /// The configured maximum line length.
    pub fn max_line(&self) -> usize {
        self.max_line
    }

    fn finish_line(&mut self, mut line: BytesMut) -> Option<Result<BytesMut, LineError>> {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.len() > self.max_line {
            return Some(Err(self.too_long(&line)));
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
                    self.discarded_id = top_level_id(&buf[..buf.len().min(ID_PREFIX)]);
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
                return Ok(Some(Err(self.too_long(&[]))));
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
            return Ok(Some(Err(self.too_long(&[]))));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        // A last line without a terminator is still a line.
        let line = buf.split_to(buf.len());
        Ok(self.finish_line(line))
    }
}

/// The string value of the top-level `"id"` key of a JSON object, read from the start
/// of a line that may be cut off anywhere: nested objects and strings are skipped, so an
/// `"id"` inside a message body is never taken for the command's.
pub fn top_level_id(prefix: &[u8]) -> Option<String> {
    let mut i = prefix.iter().position(|b| !b.is_ascii_whitespace())?;
    if prefix[i] != b'{' {
        return None;
    }
    i += 1;
    let mut depth = 1usize;
    let mut expect_key = true;
    let mut last_key: Option<(usize, usize)> = None;
    while i < prefix.len() {
        match prefix[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < prefix.len() && prefix[j] != b'"' {
                    j += if prefix[j] == b'\\' { 2 } else { 1 };
                }
                if j >= prefix.len() {
                    return None;
                }
                if depth == 1 {
                    if expect_key {
                        last_key = Some((start, j));
                    } else if last_key.is_some_and(|(a, b)| &prefix[a..b] == b"id") {
                        let raw = &prefix[start..j];
                        return std::str::from_utf8(raw)
                            .ok()
                            .filter(|s| !s.contains('\\'))
                            .map(str::to_string);
                    }
                }
                i = j + 1;
                continue;
            }
            b':' if depth == 1 => expect_key = false,
            b',' if depth == 1 => {
                expect_key = true;
                last_key = None;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
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

#[cfg(test)]
mod id_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn finds_only_the_top_level_id() {
        assert_eq!(
            top_level_id(br#"{"id":"7","type":"prompt"#),
            Some("7".into())
        );
        assert_eq!(
            top_level_id(br#"{"type":"prompt","message":{"id":"inner"},"id":"x1","#),
            Some("x1".into())
        );
        assert_eq!(
            top_level_id(br#"{"type":"prompt","message":"id\":\"no"#),
            None
        );
        assert_eq!(top_level_id(br#"{"type":"prompt","message":"aaaa"#), None);
        assert_eq!(top_level_id(b"[1,2]"), None);
    }

    #[test]
    fn an_over_long_line_reports_its_id() {
        let mut codec = JsonlCodec::new(32);
        let mut buf = BytesMut::new();
        buf.extend_from_slice(br#"{"id":"big","type":"prompt","message":""#);
        buf.extend_from_slice(&[b'a'; 100]);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(b"\"}\n{\"id\":\"ok\"}\n");
        match codec.decode(&mut buf).unwrap() {
            Some(Err(LineError::TooLong { id, .. })) => assert_eq!(id.as_deref(), Some("big")),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            &codec.decode(&mut buf).unwrap().unwrap().unwrap()[..],
            br#"{"id":"ok"}"#
        );
    }
}
