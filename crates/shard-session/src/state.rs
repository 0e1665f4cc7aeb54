//! What a resumed Runtime needs without reading messages: the last mode, model and
//! reasoning level, the entry count, the chain head, and the title. Built on open from
//! `meta.json` plus the transcript tail, or by one sequential scan that fully parses only
//! state-changing lines.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use shard_protocol::types::{ContentBlock, Role};

use crate::entry::{Decoded, Entry, EntryKind, STATE_KINDS, decode_entry, fast_kind};

/// Title length in characters before it is cut with an ellipsis.
pub const TITLE_CHARS: usize = 80;

/// A provider and model pair, as a `model_change` entry records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    /// Provider name.
    pub provider: String,
    /// Model name.
    pub model: String,
}

/// The session state a Runtime restores from: the mode, model and reasoning level it ran
/// with last (a launch flag overrides them and is recorded; docs/sessions.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// Last recorded mode.
    pub mode: Option<String>,
    /// Last recorded model.
    pub model: Option<ModelRef>,
    /// Last recorded reasoning level.
    pub reasoning_level: Option<String>,
    /// Entries in the transcript (all kinds, unknown kinds included, unreadable lines not).
    pub entry_count: u64,
    /// Id of the newest entry: the parent of the next one.
    pub last_entry_id: Option<String>,
    /// Timestamp of the newest entry.
    pub last_timestamp: Option<u64>,
    /// Index of the last compaction.
    pub compaction_index: Option<u64>,
    /// Message entries (prompts, answers, tool results).
    pub message_count: u64,
    /// Sum of the `usage.cost` of recorded messages, in US dollars.
    pub cost: f64,
    /// The first user prompt, shortened to [`TITLE_CHARS`] characters.
    pub title: Option<String>,
    /// Bytes of transcript these figures describe.
    pub transcript_len: u64,
    /// Lines found unreadable and skipped (see docs/sessions.md for which lines are checked).
    pub skipped_lines: u64,
}

impl SessionState {
    /// Folds one appended or read entry into the state.
    pub(crate) fn apply(&mut self, entry: &Entry) {
        self.note_chain(&entry.id, entry.timestamp);
        match &entry.kind {
            // An aborted turn's empty marker is no message.
            EntryKind::Message(m) if m.message.content.is_empty() => {}
            EntryKind::Message(m) => {
                self.message_count += 1;
                if let Some(c) = m.usage.as_ref().and_then(|u| u.cost) {
                    self.cost += c;
                }
                if self.title.is_none() && m.message.role == Role::User {
                    self.title = title_of(&m.message.content);
                }
            }
            EntryKind::ModeChange { mode } => self.mode = Some(mode.clone()),
            EntryKind::ModelChange { provider, model } => {
                self.model = Some(ModelRef {
                    provider: provider.clone(),
                    model: model.clone(),
                });
            }
            EntryKind::ReasoningLevelChange { level } => self.reasoning_level = Some(level.clone()),
            EntryKind::Compaction(c) => self.compaction_index = Some(c.index),
            EntryKind::Checkpoint(_) | EntryKind::PermissionAnswer(_) => {}
        }
    }

    fn note_chain(&mut self, id: &str, timestamp: u64) {
        self.entry_count += 1;
        self.last_entry_id = Some(id.to_owned());
        self.last_timestamp = Some(timestamp);
    }
}

/// A title from a user message's first text block: whitespace collapsed, cut on a char
/// boundary. Tool results (no text block) give none.
pub(crate) fn title_of(content: &[ContentBlock]) -> Option<String> {
    let text = content.iter().find_map(|b| match b {
        ContentBlock::Text { text } if !text.trim().is_empty() => Some(text),
        _ => None,
    })?;
    let mut out = String::new();
    let mut chars = 0;
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
            chars += 1;
        }
        for c in word.chars() {
            if chars >= TITLE_CHARS {
                out.push('…');
                return Some(out);
            }
            out.push(c);
            chars += 1;
        }
    }
    Some(out)
}

/// Chain fields of a line this store wrote, read from its fixed prefix
/// `{"type":"K","id":"I","parent_id":…,"timestamp":T` without a JSON parse.
fn fast_frame(line: &[u8]) -> Option<(&[u8], &[u8], u64)> {
    let kind = fast_kind(line)?;
    let rest = &line[9 + kind.len()..];
    let rest = rest.strip_prefix(b"\",\"id\":\"")?;
    let id_end = memchr::memchr(b'"', rest)?;
    let id = &rest[..id_end];
    let rest = &rest[id_end..];
    // parent_id is null or an id (no escapes), so the first `"timestamp":` is the field.
    let window = &rest[..rest.len().min(128)];
    let at = memchr::memmem::find(window, b"\"timestamp\":")? + 12;
    let digits = rest[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    let ts = std::str::from_utf8(&rest[at..at + digits])
        .ok()?
        .parse()
        .ok()?;
    Some((kind, id, ts))
}

/// The `usage.cost` of a message line this store wrote, found without a parse: usage is
/// written after the message, so its key is the last structural `"usage":{` (keys inside
/// strings have escaped quotes and cannot match).
fn fast_cost(line: &[u8]) -> Option<f64> {
    let at = memchr::memmem::rfind(line, b"\"usage\":{")?;
    let rest = &line[at..];
    let end = memchr::memchr(b'}', rest)?;
    let usage = &rest[..end];
    let c = memchr::memmem::find(usage, b"\"cost\":")? + 7;
    let digits = usage[c..]
        .iter()
        .take_while(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'e' | b'E' | b'+'))
        .count();
    std::str::from_utf8(&usage[c..c + digits])
        .ok()?
        .parse()
        .ok()
}

/// Folds lines `[from, to)` of the transcript into `state`. Message lines are counted from
/// their prefix alone (until a title is found); state-changing and odd-shaped lines are
/// parsed. Ends with `state.transcript_len == to`.
pub(crate) fn scan_forward(
    file: &File,
    from: u64,
    to: u64,
    state: &mut SessionState,
) -> io::Result<()> {
    let mut handle = file.try_clone()?;
    handle.seek(SeekFrom::Start(from))?;
    let mut reader = BufReader::with_capacity(1 << 20, handle.take(to.saturating_sub(from)));
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let used = match memchr::memchr(b'\n', buf) {
            Some(nl) => {
                if carry.is_empty() {
                    scan_line(&buf[..nl], state);
                } else {
                    carry.extend_from_slice(&buf[..nl]);
                    scan_line(&carry, state);
                    carry.clear();
                }
                nl + 1
            }
            None => {
                carry.extend_from_slice(buf);
                buf.len()
            }
        };
        reader.consume(used);
    }
    if !carry.is_empty() {
        // Only possible when `to` is not a line end; callers pass line ends, but a final
        // partial line is still better counted than dropped.
        scan_line(&carry, state);
    }
    state.transcript_len = to;
    Ok(())
}

fn scan_line(line: &[u8], state: &mut SessionState) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    if let Some((kind, id, ts)) = fast_frame(line) {
        let is_state = STATE_KINDS.iter().any(|k| k.as_bytes() == kind);
        // A title can only come from a user message with a text block; both show as
        // structural bytes (string contents escape their quotes), so other message lines
        // are skipped without a parse.
        let wants_title = state.title.is_none()
            && kind == b"message"
            && memchr::memmem::find(line, b"\"role\":\"user\"").is_some()
            && memchr::memmem::find(line, b"\"type\":\"text\"").is_some();
        // An aborted turn's empty marker is no message: decoded below to be sure.
        let maybe_marker = kind == b"message"
            && memchr::memmem::find(line, b"\"content\":[]").is_some()
            && memchr::memmem::find(line, b"\"aborted\":true").is_some();
        if !is_state
            && !wants_title
            && !maybe_marker
            && let Ok(id) = std::str::from_utf8(id)
        {
            state.note_chain(id, ts);
            if kind == b"message" {
                state.message_count += 1;
                state.cost += fast_cost(line).unwrap_or(0.0);
            }
            return;
        }
    }
    match decode_entry(line) {
        Ok(Decoded::Entry(entry)) => state.apply(&entry),
        Ok(Decoded::Unknown(frame)) => state.note_chain(&frame.id, frame.timestamp),
        Err(e) => {
            state.skipped_lines += 1;
            tracing::warn!(error = %e, "skipping unreadable transcript line");
        }
    }
}

/// Where a torn last line went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornLine {
    /// The `session.jsonl.torn-<ms>` file holding the bytes.
    pub path: PathBuf,
    /// Offset in the transcript where the torn line began (the new file length).
    pub offset: u64,
    /// How many bytes were set aside.
    pub len: u64,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn fast_frame_reads_prefix() {
        let line =
            br#"{"type":"message","id":"ent-1","parent_id":"ent-0","timestamp":1234,"message":{}}"#;
        let (k, id, ts) = fast_frame(line).unwrap();
        assert_eq!((k, id, ts), (&b"message"[..], &b"ent-1"[..], 1234));
        let line =
            br#"{"type":"mode_change","id":"ent-1","parent_id":null,"timestamp":7,"mode":"x"}"#;
        assert_eq!(fast_frame(line).unwrap().2, 7);
        assert!(fast_frame(br#"{"id":"x","type":"message"}"#).is_none());
    }

    #[test]
    fn fast_cost_reads_the_usage_cost() {
        let line = br#"{"type":"message","id":"e","parent_id":null,"timestamp":1,"message":{"args":{"cost":9}},"usage":{"input":3,"cost":0.25,"model":"m"},"model":"m"}"#;
        assert_eq!(fast_cost(line), Some(0.25));
        assert_eq!(fast_cost(br#"{"type":"message","message":{}}"#), None);
    }

    #[test]
    fn titles_collapse_whitespace_and_cut_on_chars() {
        let t = title_of(&[ContentBlock::Text {
            text: "  fix\n the   bug ".into(),
        }]);
        assert_eq!(t.as_deref(), Some("fix the bug"));
        let long = "é".repeat(200);
        let t = title_of(&[ContentBlock::Text { text: long }]).unwrap();
        assert_eq!(t.chars().count(), TITLE_CHARS + 1);
        assert!(t.ends_with('…'));
    }
}
