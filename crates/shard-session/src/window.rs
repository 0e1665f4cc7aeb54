//! The messages after the last compaction, found by walking the transcript backwards from
//! its end (docs/protocol.md §16 item 9): whole for the model's context, or within a byte
//! budget for a client's `sync.live_window`.

use std::fs::File;
use std::io;

use serde::Serialize;
use serde_json::Value;
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};

use crate::entry::{CompactionEntry, Decoded, EntryKind, decode_entry, fast_kind};
use crate::lines::RevLines;

/// Default `live_window` budget: 8 MiB of serialized messages (§16 item 9).
pub const DEFAULT_LIVE_WINDOW_BYTES: usize = 8 * 1024 * 1024;

/// Opening line of the synthetic message that carries a compaction summary.
pub const SUMMARY_PREAMBLE: &str =
    "The earlier part of this conversation was compacted. Summary of it:";

/// The compaction summary as the first user message of the window: id = the compaction
/// entry's id, role `user`, one text block with [`SUMMARY_PREAMBLE`] and the summary
/// between `<summary>` tags.
pub fn summary_message(compaction_entry_id: &str, compaction: &CompactionEntry) -> Message {
    Message {
        id: compaction_entry_id.to_owned(),
        role: Role::User,
        content: vec![ContentBlock::Text {
            text: format!(
                "{SUMMARY_PREAMBLE}\n<summary>\n{}\n</summary>",
                compaction.summary
            ),
        }],
    }
}

/// What a backwards walk found.
pub(crate) struct Collected {
    /// Messages, newest first.
    pub messages: Vec<Message>,
    /// The last compaction and its entry id, when the walk reached it.
    pub compaction: Option<(String, CompactionEntry)>,
    /// False when the visitor stopped the walk before the window's start.
    pub complete: bool,
    /// Unreadable lines met on the way.
    pub skipped: u64,
    /// Whether the walk met the anchor message (always true without one).
    pub anchored: bool,
    /// Ids of collected messages an aborted turn stopped after (newest first).
    pub interrupted: Vec<String>,
    /// Permission answers met inside the span walked (newest first).
    pub answers: Vec<shard_protocol::PermissionAnswered>,
}

/// Walks `[start, end)` backwards collecting message entries until the window's start: the
/// last compaction's `first_kept_entry_id` (included) or its last summarized entry
/// (excluded), or the first entry. `visit` may cut a message in place; returning false
/// stops the walk without keeping that message. With an `anchor` id, messages up to and
/// including that one are passed over unvisited (history paging starts just before it).
pub(crate) fn collect(
    file: &File,
    start: u64,
    end: u64,
    anchor: Option<&str>,
    mut visit: impl FnMut(&mut Message) -> bool,
) -> io::Result<Collected> {
    let mut lines = RevLines::new(file, start, end);
    let mut out = Collected {
        messages: Vec::new(),
        compaction: None,
        complete: true,
        skipped: 0,
        anchored: anchor.is_none(),
        interrupted: Vec::new(),
        answers: Vec::new(),
    };
    // An interruption marker was met: the next (older) message kept is where it stopped.
    let mut mark = false;
    while let Some((offset, line)) = lines.next_line()? {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let (false, Some(anchor)) = (out.anchored, anchor) {
            // Paging walks past everything after its anchor: a message line that names
            // neither the anchor nor an end of the window cannot change the walk, so it is
            // not decoded (a page costs its own span, not the whole tail of the session).
            if fast_kind(&line) == Some(b"message".as_slice())
                && !mentions(&line, anchor)
                && !out.compaction.as_ref().is_some_and(|(_, c)| {
                    mentions(&line, &c.first_kept_entry_id) || mentions(&line, &c.message_range[1])
                })
            {
                continue;
            }
        }
        let entry = match decode_entry(&line) {
            Ok(Decoded::Entry(entry)) => entry,
            Ok(Decoded::Unknown(_)) => continue,
            Err(e) => {
                out.skipped += 1;
                tracing::warn!(offset, error = %e, "skipping unreadable transcript line");
                continue;
            }
        };
        match entry.kind {
            // The empty marker an aborted turn ends with is no message of the conversation
            // nor of the model's context; it marks the message before it.
            EntryKind::Message(m) if m.message.content.is_empty() => {
                mark |= m.aborted;
            }
            EntryKind::Message(m) => {
                let mut message = m.message;
                let first_kept = match &out.compaction {
                    Some((_, c)) if c.message_range[1] == entry.id => break,
                    Some((_, c)) => c.first_kept_entry_id == entry.id,
                    None => false,
                };
                if !out.anchored {
                    out.anchored = anchor == Some(message.id.as_str());
                    mark = false;
                    if first_kept {
                        break;
                    }
                    continue;
                }
                if !visit(&mut message) {
                    out.complete = false;
                    break;
                }
                if std::mem::take(&mut mark) {
                    out.interrupted.push(message.id.clone());
                }
                out.messages.push(message);
                if first_kept {
                    break;
                }
            }
            EntryKind::PermissionAnswer(a) if out.anchored => out.answers.push(a),
            EntryKind::Compaction(c) if out.compaction.is_none() => {
                // A kept entry written after its compaction line (never done by Shard, but
                // legal) is already among the collected ones: the window ends there.
                if let Some(pos) = out
                    .messages
                    .iter()
                    .position(|m| m.id == c.first_kept_entry_id)
                {
                    out.messages.truncate(pos + 1);
                    out.compaction = Some((entry.id, c));
                    break;
                }
                out.compaction = Some((entry.id, c));
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Whether `line` contains `id` anywhere: a cheap superset test of "this entry is `id`".
fn mentions(line: &[u8], id: &str) -> bool {
    memchr::memmem::find(line, id.as_bytes()).is_some()
}

/// Bytes of `value` as compact JSON, counted without building the string.
pub(crate) fn json_len<T: Serialize>(value: &T) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// A message's live-window parts in order: cut every block over `cap` bytes, then keep
/// what fits in `budget`, newest first.
pub(crate) struct Budget {
    budget: usize,
    cap: usize,
    used: usize,
}

impl Budget {
    /// A budget of `budget` bytes; single blocks are cut to a quarter of it so one huge
    /// tool output cannot push the whole conversation out of the window.
    pub(crate) fn new(budget: usize) -> Self {
        Budget {
            budget,
            cap: (budget / 4).max(1024),
            used: 0,
        }
    }

    /// Cuts `message` as needed and charges it; false when it does not fit.
    pub(crate) fn admit(&mut self, message: &mut Message) -> bool {
        cut_blocks(message, self.cap);
        let mut size = json_len(message);
        if self.used + size > self.budget && self.used == 0 {
            // The newest message alone is over budget: share the budget among its blocks.
            let share = self.budget / (message.content.len() + 1);
            cut_blocks(message, share.max(64));
            size = json_len(message);
        }
        if self.used + size > self.budget {
            return false;
        }
        self.used += size;
        true
    }

    /// Charges `message` without cutting; false when it does not fit.
    pub(crate) fn admit_whole(&mut self, message: &Message) -> bool {
        let size = json_len(message);
        if self.used + size > self.budget {
            return false;
        }
        self.used += size;
        true
    }
}

/// Cuts every block of `message` whose JSON is longer than `cap` bytes.
fn cut_blocks(message: &mut Message, cap: usize) {
    for block in &mut message.content {
        if json_len(block) > cap {
            cut_block(block, cap);
        }
    }
}

fn cut_block(block: &mut ContentBlock, cap: usize) {
    match block {
        ContentBlock::Text { text } => cut_text(text, cap),
        ContentBlock::Thinking { text, signature } => {
            // The signature only matters to the provider, never to a client.
            *signature = None;
            cut_text(text, cap);
        }
        ContentBlock::ToolCall { args, .. } => {
            let mut raw = Value::Object(std::mem::take(args)).to_string();
            cut_text(&mut raw, cap);
            args.insert("_cut".to_owned(), Value::String(raw));
        }
        ContentBlock::ToolResult {
            content, render, ..
        } => {
            if json_len(render) > cap / 2 {
                *render = None;
            }
            let replacement = match content {
                ToolResultContent::Text { text } => {
                    cut_text(text, cap);
                    None
                }
                ToolResultContent::Error { message } => {
                    cut_text(message, cap);
                    None
                }
                ToolResultContent::Json { value } => {
                    let mut text = value.to_string();
                    cut_text(&mut text, cap);
                    Some(ToolResultContent::Text { text })
                }
                ToolResultContent::Image { data, mime_type } => Some(ToolResultContent::Text {
                    text: format!("[{mime_type} image of {} bytes omitted]", data.len()),
                }),
            };
            if let Some(r) = replacement {
                *content = r;
            }
        }
        ContentBlock::Image { data, mime_type } => {
            *block = ContentBlock::Text {
                text: format!("[{mime_type} image of {} bytes omitted]", data.len()),
            };
        }
    }
}

/// Shortens `text` to about `cap` bytes on a char boundary and says how much was cut.
fn cut_text(text: &mut String, cap: usize) {
    if text.len() <= cap {
        return;
    }
    let keep_target = cap.saturating_sub(48);
    let mut keep = keep_target.min(text.len());
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    let cut = text.len() - keep;
    text.truncate(keep);
    text.push_str(&format!("\n[… {cut} bytes cut]"));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn cut_text_keeps_char_boundaries() {
        let mut s = "ééééé".repeat(100);
        cut_text(&mut s, 101);
        assert!(s.len() < 120, "{}", s.len());
        assert!(s.contains("bytes cut"));
    }

    #[test]
    fn oversized_newest_message_is_cut_to_fit() {
        let mut m = Message {
            id: "ent-x".into(),
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text {
                    text: "a".repeat(10_000),
                },
                ContentBlock::Text {
                    text: "b".repeat(10_000),
                },
            ],
        };
        let mut budget = Budget::new(8_000);
        assert!(budget.admit(&mut m));
        assert!(json_len(&m) <= 8_000);
    }
}
