//! The JSONL codec (docs/protocol.md §2.1) driven the way transports drive it: a `FramedRead`
//! over an async reader that hands out the input in chunks of a chosen size.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use futures::StreamExt;
use shard_protocol::codec::DEFAULT_MAX_LINE;
use shard_protocol::{JsonlCodec, LineError, decode_command};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::{Encoder, FramedRead};

/// An async reader that returns at most `chunk` bytes per read.
pub struct Chunked {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
}

impl Chunked {
    /// A reader over `data` in pieces of `chunk` bytes (at least 1).
    pub fn new(data: impl Into<Vec<u8>>, chunk: usize) -> Self {
        Chunked {
            data: data.into(),
            pos: 0,
            chunk: chunk.max(1),
        }
    }
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self
            .chunk
            .min(self.data.len() - self.pos)
            .min(buf.remaining());
        let start = self.pos;
        buf.put_slice(&self.data[start..start + n]);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// One framed item, as a string for easy comparison.
#[derive(Debug, PartialEq)]
pub enum Item {
    Line(String),
    TooLong,
}

/// Frames `input` with `codec`, reading `chunk` bytes at a time.
pub async fn frame(input: &[u8], codec: JsonlCodec, chunk: usize) -> Vec<Item> {
    let mut framed = FramedRead::new(Chunked::new(input, chunk), codec);
    let mut out = Vec::new();
    while let Some(item) = framed.next().await {
        match item.expect("the codec never fails the stream") {
            Ok(line) => out.push(Item::Line(String::from_utf8(line.to_vec()).unwrap())),
            Err(LineError::TooLong { .. }) => out.push(Item::TooLong),
        }
    }
    out
}

fn line(s: &str) -> Item {
    Item::Line(s.to_string())
}

#[tokio::test]
async fn splits_on_newline_only() {
    let input = "{\"a\":\"x\u{2028}y\u{2029}z\"}\n{\"b\":\"\u{85}\u{b}\u{c}\"}\n";
    let out = frame(input.as_bytes(), JsonlCodec::default(), 4096).await;
    assert_eq!(
        out,
        vec![
            line("{\"a\":\"x\u{2028}y\u{2029}z\"}"),
            line("{\"b\":\"\u{85}\u{b}\u{c}\"}")
        ]
    );
}

#[tokio::test]
async fn unicode_line_separators_reach_the_decoder_untouched() {
    let text = "before\u{2028}middle\u{2029}after";
    let input = format!("{{\"id\":\"1\",\"type\":\"prompt\",\"message\":\"{text}\"}}\n");
    let out = frame(input.as_bytes(), JsonlCodec::default(), 3).await;
    let [Item::Line(l)] = &out[..] else {
        panic!("{out:?}")
    };
    let msg = decode_command(l.as_bytes()).unwrap();
    let shard_protocol::Command::Prompt(p) = msg.command else {
        panic!()
    };
    assert_eq!(p.message, text);
}

#[tokio::test]
async fn strips_exactly_one_trailing_carriage_return() {
    let out = frame(
        b"{\"a\":1}\r\n{\"b\":2}\r\r\n{\"c\":\"\r\"}\n",
        JsonlCodec::default(),
        4096,
    )
    .await;
    assert_eq!(
        out,
        vec![
            line("{\"a\":1}"),
            line("{\"b\":2}\r"),
            line("{\"c\":\"\r\"}")
        ]
    );
}

#[tokio::test]
async fn skips_blank_lines() {
    let out = frame(
        b"\n\r\n   \n\t\r\n{\"a\":1}\n\n\n{\"b\":2}\n \n",
        JsonlCodec::default(),
        4096,
    )
    .await;
    assert_eq!(out, vec![line("{\"a\":1}"), line("{\"b\":2}")]);
}

#[tokio::test]
async fn too_long_line_is_an_error_for_that_line_only() {
    let long = format!("{{\"x\":\"{}\"}}", "a".repeat(100));
    let input = format!("{{\"a\":1}}\n{long}\n{{\"b\":2}}\n");
    for chunk in [1, 7, 64, 4096] {
        let out = frame(input.as_bytes(), JsonlCodec::new(32), chunk).await;
        assert_eq!(
            out,
            vec![line("{\"a\":1}"), Item::TooLong, line("{\"b\":2}")],
            "chunk {chunk}"
        );
    }
}

#[tokio::test]
async fn the_line_after_a_too_long_line_still_decodes_as_a_command() {
    let input = format!(
        "{{\"id\":\"big\",\"type\":\"prompt\",\"message\":\"{}\"}}\n{{\"id\":\"next\",\"type\":\"abort\"}}\n",
        "z".repeat(500)
    );
    let out = frame(input.as_bytes(), JsonlCodec::new(64), 16).await;
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0], Item::TooLong);
    let Item::Line(l) = &out[1] else { panic!() };
    assert_eq!(
        decode_command(l.as_bytes()).unwrap().id.as_deref(),
        Some("next")
    );
}

#[tokio::test]
async fn limit_is_inclusive_and_ignores_the_stripped_carriage_return() {
    let exact = "x".repeat(16);
    let input = format!("{exact}\n{exact}\r\n{exact}y\n");
    for chunk in [1, 5, 4096] {
        let out = frame(input.as_bytes(), JsonlCodec::new(16), chunk).await;
        assert_eq!(
            out,
            vec![line(&exact), line(&exact), Item::TooLong],
            "chunk {chunk}"
        );
    }
}

#[tokio::test]
async fn too_long_last_line_without_newline_is_reported_at_eof() {
    let input = format!("{{\"a\":1}}\n{}", "q".repeat(200));
    for chunk in [1, 50, 4096] {
        let out = frame(input.as_bytes(), JsonlCodec::new(32), chunk).await;
        assert_eq!(out, vec![line("{\"a\":1}"), Item::TooLong], "chunk {chunk}");
    }
}

#[tokio::test]
async fn last_line_without_newline_at_eof_is_a_line() {
    let out = frame(b"{\"a\":1}\n{\"b\":2}", JsonlCodec::default(), 4096).await;
    assert_eq!(out, vec![line("{\"a\":1}"), line("{\"b\":2}")]);
    let out = frame(b"{\"b\":2}\r", JsonlCodec::default(), 1).await;
    assert_eq!(out, vec![line("{\"b\":2}")]);
    assert!(frame(b"", JsonlCodec::default(), 1).await.is_empty());
    assert!(frame(b"  \r", JsonlCodec::default(), 1).await.is_empty());
}

#[tokio::test]
async fn a_line_split_across_many_small_reads_is_reassembled() {
    // Multi-byte UTF-8 characters get cut between reads too.
    let message = "多字节 🦀 \u{2028} text ".repeat(50);
    let input = format!("{{\"id\":\"s\",\"type\":\"prompt\",\"message\":\"{message}\"}}\r\n");
    for chunk in [1, 2, 3, 5, 13] {
        let out = frame(input.as_bytes(), JsonlCodec::default(), chunk).await;
        let [Item::Line(l)] = &out[..] else {
            panic!("chunk {chunk}: {out:?}")
        };
        let msg = decode_command(l.as_bytes()).unwrap();
        let shard_protocol::Command::Prompt(p) = msg.command else {
            panic!()
        };
        assert_eq!(p.message, message, "chunk {chunk}");
    }
}

#[tokio::test]
async fn many_lines_in_one_read_all_come_out_in_order() {
    let input: String = (0..1000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    let out = frame(input.as_bytes(), JsonlCodec::default(), 1 << 20).await;
    assert_eq!(out.len(), 1000);
    assert_eq!(out[999], line("{\"n\":999}"));
}

#[test]
fn default_limit_is_64_mib() {
    assert_eq!(DEFAULT_MAX_LINE, 64 * 1024 * 1024);
    assert_eq!(JsonlCodec::default().max_line(), DEFAULT_MAX_LINE);
}

#[test]
fn encoder_writes_one_line_that_the_decoder_reads_back() {
    let msg = shard_protocol::ClientMessage::new(
        "e1",
        shard_protocol::Command::SetMode(shard_protocol::command::SetMode {
            agent_id: None,
            mode: "a\nb\u{2028}c\"d".into(),
        }),
    );
    let mut codec = JsonlCodec::default();
    let mut buf = BytesMut::new();
    codec.encode(&msg, &mut buf).unwrap();
    codec.encode(&msg, &mut buf).unwrap();
    assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 2);
    assert_eq!(
        &buf[..],
        [shard_protocol::to_line(&msg), shard_protocol::to_line(&msg)].concat()
    );
    let mut decoder = JsonlCodec::default();
    for _ in 0..2 {
        let item = tokio_util::codec::Decoder::decode(&mut decoder, &mut buf)
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(decode_command(&item).unwrap(), msg);
    }
}
