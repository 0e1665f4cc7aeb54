//! The journal of the assistant message being streamed, so what clients already saw
//! survives a `kill -9` of the Runtime. The transcript gets a message only once its
//! stream ends; until then `streaming.jsonl` in the session directory holds the very
//! `message_delta` lines sent to clients, written before they are (the event writer
//! writes the journal first, once per batch: one `write(2)` per flush, not per delta).
//! A Runtime that starts on a session with a journal left behind turns it into an
//! interrupted assistant message ([`recover`]) that every provider API accepts: empty
//! text goes, unsigned thinking stays only beside other content (the request builders
//! drop it), and every tool call gets an "interrupted" result — a call whose arguments
//! were cut off keeps an empty object as arguments, and its result quotes what was
//! streamed of them.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use shard_protocol::Event;
use shard_protocol::event::{DeltaKind, MessageDelta};
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};

use crate::repair;

/// File name of the journal inside a session directory.
pub const STREAMING_FILE: &str = "streaming.jsonl";

/// The `stop_reason` recorded for a message rebuilt from the journal.
pub const INTERRUPTED_STOP: &str = "interrupted";

/// Most characters of cut-off arguments quoted in the call's result.
const QUOTED_ARGS: usize = 2_000;

/// The writer's side: the event writer hands it each `message_delta` line and each
/// `message_complete`, and calls [`StreamJournal::flush`] before the same bytes can reach
/// clients. Write failures are logged once and turn the journal off (streaming goes on).
#[derive(Debug)]
pub struct StreamJournal {
    path: PathBuf,
    file: Option<File>,
    current: Option<String>,
    pending: Vec<u8>,
    truncate: bool,
    failed: bool,
}

impl StreamJournal {
    /// The journal of the session in `dir` (nothing is opened until the first delta).
    pub fn new(dir: &Path) -> Self {
        StreamJournal {
            path: dir.join(STREAMING_FILE),
            file: None,
            current: None,
            pending: Vec::new(),
            truncate: false,
            failed: false,
        }
    }

    /// Buffers one `message_delta` event line (with its newline) of message `message_id`;
    /// a new message id starts the journal over.
    pub fn record(&mut self, message_id: &str, line: &[u8]) {
        if self.failed {
            return;
        }
        if self.current.as_deref() != Some(message_id) {
            self.current = Some(message_id.to_string());
            self.pending.clear();
            self.truncate = true;
        }
        self.pending.extend_from_slice(line);
    }

    /// The message is in the transcript (`message_complete` follows its append): the
    /// journal is emptied at the next flush.
    pub fn complete(&mut self) {
        if self.current.take().is_some() {
            self.pending.clear();
            self.truncate = true;
        }
    }

    /// True when a flush would write or truncate.
    pub fn dirty(&self) -> bool {
        !self.failed && (self.truncate || !self.pending.is_empty())
    }

    /// Writes what is buffered. Blocking, but small: one write to the page cache.
    pub fn flush(&mut self) {
        if !self.dirty() {
            return;
        }
        if let Err(e) = self.write() {
            tracing::warn!(error = %e, path = %self.path.display(), "the streaming journal failed; streamed text is not kept across a kill");
            self.failed = true;
            self.pending = Vec::new();
        }
    }

    fn write(&mut self) -> std::io::Result<()> {
        if self.truncate {
            if let Some(f) = &self.file {
                f.set_len(0)?;
            }
            self.truncate = false;
        }
        if self.pending.is_empty() {
            return Ok(());
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                use std::os::unix::fs::OpenOptionsExt;
                // Emptied at open: a journal left behind was recovered at start.
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .mode(0o600)
                    .open(&self.path)?;
                f.set_len(0)?;
                self.file.insert(f)
            }
        };
        file.write_all(&self.pending)?;
        self.pending.clear();
        Ok(())
    }
}

/// An interrupted assistant message rebuilt from a journal, and the results that answer
/// its tool calls (one user message each, as the Runtime records results).
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    /// The assistant message; its id is the streamed message's entry id.
    pub message: Message,
    /// One "interrupted" tool result per call, in call order.
    pub results: Vec<Message>,
}

/// One block as the deltas built it.
enum Block {
    Text(String),
    Thinking(String),
    Call {
        id: String,
        name: String,
        args: String,
    },
}

/// Rebuilds the last streamed message of a journal; `None` when it holds nothing a
/// provider would accept (no text, no tool call).
pub fn recover(journal: &[u8]) -> Option<Recovered> {
    let mut deltas: Vec<MessageDelta> = Vec::new();
    for line in journal.split(|b| *b == b'\n') {
        // A torn last line (killed mid-write) is skipped like any other bad line.
        if let Ok(Event::MessageDelta(d)) = serde_json::from_slice::<Event>(line) {
            deltas.push(d);
        }
    }
    let last = deltas.last()?.message_id.clone();
    let mut blocks: Vec<(u32, Block)> = Vec::new();
    for d in deltas.into_iter().filter(|d| d.message_id == last) {
        let pos = match blocks.iter().position(|(i, _)| *i == d.block_index) {
            Some(p) => p,
            None => {
                let b = match d.kind {
                    DeltaKind::Text => Block::Text(String::new()),
                    DeltaKind::Thinking => Block::Thinking(String::new()),
                    DeltaKind::ToolCall => Block::Call {
                        id: String::new(),
                        name: String::new(),
                        args: String::new(),
                    },
                };
                blocks.push((d.block_index, b));
                blocks.len() - 1
            }
        };
        match &mut blocks[pos].1 {
            Block::Text(t) | Block::Thinking(t) => {
                t.push_str(d.text_delta.as_deref().unwrap_or_default());
            }
            Block::Call { id, name, args } => {
                if let Some(i) = d.tool_call_id {
                    *id = i;
                }
                if let Some(n) = d.name {
                    *name = n;
                }
                args.push_str(d.args_delta.as_deref().unwrap_or_default());
            }
        }
    }
    blocks.sort_by_key(|(i, _)| *i);
    let mut content = Vec::new();
    let mut results = Vec::new();
    let mut substantive = false;
    for (_, b) in blocks {
        match b {
            // Providers refuse empty and whitespace-only text blocks.
            Block::Text(text) if !text.trim().is_empty() => {
                substantive = true;
                content.push(ContentBlock::Text { text });
            }
            Block::Text(_) => {}
            Block::Thinking(text) if !text.is_empty() => content.push(ContentBlock::Thinking {
                text,
                signature: None,
            }),
            Block::Thinking(_) => {}
            Block::Call { id, name, args } if !id.is_empty() && !name.is_empty() => {
                substantive = true;
                let parsed = match serde_json::from_str::<Value>(&args) {
                    Ok(Value::Object(m)) => Some(m),
                    _ if args.trim().is_empty() => Some(Map::new()),
                    _ => None,
                };
                let result = match &parsed {
                    Some(_) => repair::interrupted_result(&id),
                    None => cut_off_result(&id, &args),
                };
                content.push(ContentBlock::ToolCall {
                    id,
                    name,
                    args: parsed.unwrap_or_default(),
                });
                results.push(Message {
                    id: String::new(),
                    role: Role::User,
                    content: vec![result],
                });
            }
            // A call whose start never arrived cannot be named to any API.
            Block::Call { .. } => {}
        }
    }
    if !substantive {
        return None;
    }
    Some(Recovered {
        message: Message {
            id: last,
            role: Role::Assistant,
            content,
        },
        results,
    })
}

/// The result of a call whose arguments were cut off mid-stream: it never ran, and the
/// model sees what it had written.
fn cut_off_result(id: &str, args: &str) -> ContentBlock {
    let quoted: String = args.chars().take(QUOTED_ARGS).collect();
    let more = if quoted.len() < args.len() {
        " …"
    } else {
        ""
    };
    ContentBlock::ToolResult {
        tool_call_id: id.to_string(),
        content: ToolResultContent::Error {
            message: format!(
                "interrupted: the agent stopped while this call's arguments were streaming, so it never ran; they were cut off after {} bytes: {quoted}{more}",
                args.len()
            ),
        },
        is_error: Some(true),
        exit_code: None,
        duration_ms: None,
        render: None,
        images: None,
    }
}

/// Reads and removes the journal of the session in `dir`: `Ok(None)` when there is none
/// or it holds nothing to keep. The caller persists the message first, then calls
/// [`discard`].
pub fn read_journal(dir: &Path) -> std::io::Result<Option<Recovered>> {
    match std::fs::read(dir.join(STREAMING_FILE)) {
        Ok(bytes) => Ok(recover(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Removes the journal of the session in `dir` (nothing when there is none).
pub fn discard(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(dir.join(STREAMING_FILE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn line(i: u32, kind: DeltaKind, f: impl FnOnce(&mut MessageDelta)) -> Vec<u8> {
        let mut d = MessageDelta {
            agent_id: None,
            message_id: "ent-01M8YKR4FXHSF9M9VV230DZ40Y".into(),
            block_index: i,
            kind,
            text_delta: None,
            tool_call_id: None,
            name: None,
            args_delta: None,
        };
        f(&mut d);
        let mut v = serde_json::to_vec(&Event::MessageDelta(d)).unwrap();
        v.push(b'\n');
        v
    }

    #[test]
    fn text_and_calls_come_back_and_cut_arguments_are_quoted() {
        let mut j = Vec::new();
        j.extend(line(0, DeltaKind::Text, |d| {
            d.text_delta = Some("Hello ".into())
        }));
        j.extend(line(0, DeltaKind::Text, |d| {
            d.text_delta = Some("world".into())
        }));
        j.extend(line(1, DeltaKind::ToolCall, |d| {
            d.tool_call_id = Some("c1".into());
            d.name = Some("read".into());
        }));
        j.extend(line(1, DeltaKind::ToolCall, |d| {
            d.args_delta = Some(r#"{"path":"a"}"#.into())
        }));
        j.extend(line(2, DeltaKind::ToolCall, |d| {
            d.tool_call_id = Some("c2".into());
            d.name = Some("write".into());
            d.args_delta = Some(r#"{"path":"b","cont"#.into());
        }));
        j.extend_from_slice(b"{\"type\":\"message_del"); // torn last line
        let r = recover(&j).unwrap();
        assert_eq!(r.message.id, "ent-01M8YKR4FXHSF9M9VV230DZ40Y");
        assert_eq!(r.message.content.len(), 3);
        assert!(
            matches!(&r.message.content[0], ContentBlock::Text { text } if text == "Hello world")
        );
        assert!(
            matches!(&r.message.content[1], ContentBlock::ToolCall { args, .. } if args["path"] == "a")
        );
        assert!(
            matches!(&r.message.content[2], ContentBlock::ToolCall { args, .. } if args.is_empty())
        );
        assert_eq!(r.results.len(), 2);
        let text = serde_json::to_string(&r.results[1]).unwrap();
        assert!(text.contains("cut off after 17 bytes"), "{text}");
    }

    #[test]
    fn nothing_substantive_is_nothing_to_keep() {
        let mut j = line(0, DeltaKind::Text, |d| d.text_delta = Some("  \n".into()));
        j.extend(line(1, DeltaKind::Thinking, |d| {
            d.text_delta = Some("hmm".into())
        }));
        assert!(recover(&j).is_none());
        assert!(recover(b"").is_none());
    }

    #[test]
    fn the_journal_keeps_only_the_current_message_and_empties_on_complete() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = StreamJournal::new(dir.path());
        let a = line(0, DeltaKind::Text, |d| d.text_delta = Some("one".into()));
        j.record("ent-a", &a);
        j.flush();
        assert_eq!(std::fs::read(dir.path().join(STREAMING_FILE)).unwrap(), a);
        j.complete();
        j.flush();
        assert!(
            std::fs::read(dir.path().join(STREAMING_FILE))
                .unwrap()
                .is_empty()
        );
        j.record("ent-b", &a);
        j.record("ent-b", &a);
        j.flush();
        assert_eq!(
            std::fs::read(dir.path().join(STREAMING_FILE))
                .unwrap()
                .len(),
            2 * a.len()
        );
        discard(dir.path()).unwrap();
        assert!(read_journal(dir.path()).unwrap().is_none());
    }
}
