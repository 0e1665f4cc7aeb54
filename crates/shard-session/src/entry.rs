//! Transcript lines: the header and the entries that follow it, and their exact byte
//! encoding (one JSON object per line, `"type"` first so a scan can classify a line by its
//! first bytes without parsing it).

use serde::{Deserialize, Serialize};
use shard_protocol::types::{Message, Role, Usage};

use crate::error::SessionError;

/// Version written into new headers; a reader refuses transcripts of a newer version.
pub const FORMAT_VERSION: u32 = 1;

/// Line 1 of every transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// Always `"header"`; kept so the line is self-describing like every other line.
    #[serde(rename = "type")]
    pub kind: HeaderTag,
    /// Format version of this transcript.
    pub version: u32,
    /// The session's id (equals its directory name).
    pub session_id: String,
    /// Working directory the session belongs to, as given at creation.
    pub cwd: String,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at: u64,
    /// Provenance of a forked session (docs/protocol.md §9.2 `fork`); absent for an original.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOrigin>,
}

/// The literal `"header"` tag.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeaderTag {
    /// The only value.
    #[default]
    #[serde(rename = "header")]
    Header,
}

/// Where a fork came from, so a forked transcript can name its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkOrigin {
    /// The fork's id (`fork-…`).
    pub fork_id: String,
    /// The session it was split from.
    pub source_session_id: String,
    /// The entry it was split at.
    pub source_entry_id: String,
}

/// One transcript entry: the chain fields every kind carries, then the kind's payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// `ent-…`, unique in the session; a message's `Message.id` equals it.
    pub id: String,
    /// The previous entry, `None` for the first one; forks and recall follow this chain.
    pub parent_id: Option<String>,
    /// When it was appended, milliseconds since the Unix epoch.
    pub timestamp: u64,
    /// What it records.
    pub kind: EntryKind,
}

/// The kinds of entries; unknown kinds in a transcript are skipped on read so newer
/// writers do not break older readers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EntryKind {
    /// A user prompt, an assistant message, or one tool result (a `user` message holding a
    /// single `tool_result` block).
    Message(MessageEntry),
    /// The active mode changed.
    ModeChange {
        /// The new mode.
        mode: String,
    },
    /// The active model changed.
    ModelChange {
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
    },
    /// The reasoning level changed.
    ReasoningLevelChange {
        /// The new level id.
        level: String,
    },
    /// The oldest part of the live window was replaced by a summary.
    Compaction(CompactionEntry),
    /// A marker rooting a chain: the first entry of a fork names where it came from.
    Checkpoint(CheckpointEntry),
    /// A permission request was answered: the answer and who gave it, written before the
    /// call runs so a reloaded conversation says who answered, as it was said live.
    PermissionAnswer(shard_protocol::PermissionAnswered),
}

/// Payload of a `checkpoint` entry (docs/protocol.md §9.2 `fork`: the fork-marker row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointEntry {
    /// What the checkpoint marks; `"fork"` for a fork's root.
    #[serde(rename = "artifactKind")]
    pub artifact_kind: String,
    /// The fork's id.
    #[serde(rename = "forkId")]
    pub fork_id: String,
    /// The session it was split from.
    #[serde(rename = "sourceSessionId")]
    pub source_session_id: String,
    /// The entry it was split at.
    #[serde(rename = "sourceEntryId")]
    pub source_entry_id: String,
}

impl EntryKind {
    /// The `type` string of this kind on disk.
    pub fn type_name(&self) -> &'static str {
        match self {
            EntryKind::Message(_) => "message",
            EntryKind::ModeChange { .. } => "mode_change",
            EntryKind::ModelChange { .. } => "model_change",
            EntryKind::ReasoningLevelChange { .. } => "reasoning_level_change",
            EntryKind::Compaction(_) => "compaction",
            EntryKind::Checkpoint(_) => "checkpoint",
            EntryKind::PermissionAnswer(_) => "permission_answer",
        }
    }

    /// The marker an aborted turn ends with: an empty assistant message flagged `aborted`.
    /// Readers keep it out of the conversation and the model's context; the live window
    /// names the message before it in `interrupted_after`.
    pub fn interruption() -> Self {
        EntryKind::Message(MessageEntry {
            message: Message {
                id: String::new(),
                role: Role::Assistant,
                content: Vec::new(),
            },
            aborted: true,
            stop_reason: Some("aborted".into()),
            usage: None,
            model: None,
        })
    }

    /// A message entry with no extra fields.
    pub fn message(message: Message) -> Self {
        EntryKind::Message(MessageEntry {
            message,
            aborted: false,
            stop_reason: None,
            usage: None,
            model: None,
        })
    }
}

/// Kinds whose lines change [`crate::SessionState`]; the open-time scan parses only these.
pub(crate) const STATE_KINDS: [&str; 4] = [
    "mode_change",
    "model_change",
    "reasoning_level_change",
    "compaction",
];

/// Every kind this version understands.
pub(crate) const KNOWN_KINDS: [&str; 7] = [
    "message",
    "permission_answer",
    "checkpoint",
    "mode_change",
    "model_change",
    "reasoning_level_change",
    "compaction",
];

/// Payload of a `message` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageEntry {
    /// The message; its id is overwritten with the entry id on append.
    pub message: Message,
    /// True when the turn was aborted while this message streamed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub aborted: bool,
    /// The provider's stop reason, for assistant messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Usage of the call that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Model id that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Payload of a `compaction` entry (docs/sessions.md#compaction-recall-and-forks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionEntry {
    /// 0-based count of compactions in this session.
    pub index: u64,
    /// The summary that replaces the compacted messages.
    pub summary: String,
    /// Estimated context tokens before.
    pub tokens_before: u64,
    /// Estimated context tokens after.
    pub tokens_after: u64,
    /// First message entry kept verbatim; the live window starts there.
    pub first_kept_entry_id: String,
    /// First and last entry ids summarized, for `recall`.
    pub message_range: [String; 2],
}

/// The chain fields read from any entry line, whatever its kind.
#[derive(Deserialize)]
pub(crate) struct Frame {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    #[serde(default)]
    pub parent_id: Option<String>,
    #[serde(default)]
    pub timestamp: u64,
}

/// Result of decoding one line.
pub(crate) enum Decoded {
    /// A known entry.
    Entry(Entry),
    /// A well-formed entry of a kind this version does not know; it still occupies a place
    /// in the parent chain.
    Unknown(Frame),
}

/// Encodes an entry as one line ending in `\n`, with `type`, `id`, `parent_id`,
/// `timestamp` first and the payload after.
pub(crate) fn encode_entry(entry: &Entry) -> Result<Vec<u8>, SessionError> {
    let payload = serde_json::to_vec(&entry.kind).map_err(|e| {
        SessionError::Corrupt(format!(
            "cannot encode {} entry: {e}",
            entry.kind.type_name()
        ))
    })?;
    // An internally tagged enum always writes its tag first: `{"type":"<kind>"` then
    // either `}` or `,…}`. Splicing the chain fields in after the tag keeps the documented
    // field order without a second serialization.
    let tag = format!("{{\"type\":\"{}\"", entry.kind.type_name());
    let rest = payload.strip_prefix(tag.as_bytes()).ok_or_else(|| {
        SessionError::Corrupt(format!(
            "encoded {} entry does not start with its tag",
            entry.kind.type_name()
        ))
    })?;
    let mut line = Vec::with_capacity(payload.len() + 96);
    line.extend_from_slice(tag.as_bytes());
    line.extend_from_slice(b",\"id\":");
    push_json(&mut line, &entry.id)?;
    line.extend_from_slice(b",\"parent_id\":");
    push_json(&mut line, &entry.parent_id)?;
    line.extend_from_slice(b",\"timestamp\":");
    line.extend_from_slice(entry.timestamp.to_string().as_bytes());
    line.extend_from_slice(rest);
    line.push(b'\n');
    Ok(line)
}

fn push_json<T: Serialize>(out: &mut Vec<u8>, value: &T) -> Result<(), SessionError> {
    serde_json::to_writer(out, value)
        .map_err(|e| SessionError::Corrupt(format!("cannot encode entry field: {e}")))
}

/// Decodes one line (without its `\n`). Errors mean the line is not an entry at all.
pub(crate) fn decode_entry(line: &[u8]) -> Result<Decoded, serde_json::Error> {
    let frame: Frame = serde_json::from_slice(line)?;
    if !KNOWN_KINDS.contains(&frame.kind.as_str()) {
        return Ok(Decoded::Unknown(frame));
    }
    let mut kind: EntryKind = serde_json::from_slice(line)?;
    if let EntryKind::Message(m) = &mut kind {
        // The entry id is the authority (docs/protocol.md §16 item 4).
        m.message.id.clone_from(&frame.id);
    }
    Ok(Decoded::Entry(Entry {
        id: frame.id,
        parent_id: frame.parent_id,
        timestamp: frame.timestamp,
        kind,
    }))
}

/// The kind name of a line written by this store (`{"type":"<kind>",…`), found without
/// parsing; `None` for lines of another shape, which need a full parse.
pub(crate) fn fast_kind(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(b"{\"type\":\"")?;
    let end = memchr::memchr(b'"', rest)?;
    Some(&rest[..end])
}

/// Encodes the header line.
pub(crate) fn encode_header(header: &SessionHeader) -> Result<Vec<u8>, SessionError> {
    let mut line = serde_json::to_vec(header)
        .map_err(|e| SessionError::Corrupt(format!("cannot encode header: {e}")))?;
    line.push(b'\n');
    Ok(line)
}

/// Decodes and checks the header line against the expected session id.
pub(crate) fn decode_header(line: &[u8], session_id: &str) -> Result<SessionHeader, SessionError> {
    let header: SessionHeader = serde_json::from_slice(line)
        .map_err(|e| SessionError::Corrupt(format!("session {session_id}: bad header: {e}")))?;
    if header.version > FORMAT_VERSION || header.version == 0 {
        return Err(SessionError::Corrupt(format!(
            "session {session_id}: unsupported format version {}",
            header.version
        )));
    }
    if header.session_id != session_id {
        return Err(SessionError::Corrupt(format!(
            "session {session_id}: header names session {}",
            header.session_id
        )));
    }
    Ok(header)
}
