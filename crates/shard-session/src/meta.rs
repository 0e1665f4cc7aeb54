//! `meta.json`: the small per-session summary that `session_op list` reads instead of
//! transcripts (§16 item 11), and that lets an open skip the part of the transcript it
//! already describes.

use std::fs::File;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::entry::{ForkOrigin, Frame, SessionHeader};
use crate::lines::RevLines;
use crate::state::{ModelRef, SessionState};

/// Version of the `meta.json` format.
pub const META_VERSION: u32 = 2;

/// The contents of a session's `meta.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// Format version.
    pub version: u32,
    /// The session.
    pub session_id: String,
    /// Its working directory (from the header).
    pub cwd: String,
    /// First user prompt, shortened; absent before the first prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Creation time, ms since the Unix epoch.
    pub created_at: u64,
    /// Time of the newest entry (creation time when there is none).
    pub updated_at: u64,
    /// Entries in the transcript.
    pub entry_count: u64,
    /// Last recorded mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Last recorded model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// Last recorded reasoning level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_level: Option<String>,
    /// Newest entry id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_entry_id: Option<String>,
    /// Index of the last compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_index: Option<u64>,
    /// Message entries.
    #[serde(default)]
    pub message_count: u64,
    /// Sum of the recorded messages' costs, US dollars.
    #[serde(default)]
    pub cost: f64,
    /// Where a fork came from (from the header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOrigin>,
    /// Transcript bytes this meta describes; an open scans only what follows.
    pub transcript_len: u64,
    /// Unreadable lines met by scans so far.
    #[serde(default)]
    pub skipped_lines: u64,
}

impl SessionMeta {
    /// The meta describing `state` of the session with `header`.
    pub(crate) fn from_state(header: &SessionHeader, state: &SessionState) -> Self {
        SessionMeta {
            version: META_VERSION,
            session_id: header.session_id.clone(),
            cwd: header.cwd.clone(),
            title: state.title.clone(),
            created_at: header.created_at,
            updated_at: state.last_timestamp.unwrap_or(header.created_at),
            entry_count: state.entry_count,
            mode: state.mode.clone(),
            model: state.model.clone(),
            reasoning_level: state.reasoning_level.clone(),
            last_entry_id: state.last_entry_id.clone(),
            compaction_index: state.compaction_index,
            message_count: state.message_count,
            cost: state.cost,
            forked_from: header.forked_from.clone(),
            transcript_len: state.transcript_len,
            skipped_lines: state.skipped_lines,
        }
    }

    /// This session as one row of `session_op list` / `session.list`.
    pub fn to_summary(&self, current: bool) -> shard_protocol::responses::SessionSummary {
        shard_protocol::responses::SessionSummary {
            session_id: self.session_id.clone(),
            title: self.title.clone().unwrap_or_default(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            entry_count: self.entry_count,
            current,
            message_count: Some(self.message_count),
            cost: Some(self.cost),
            forked_from: self.forked_from.as_ref().map(|f| {
                shard_protocol::responses::ForkProvenance {
                    fork_id: f.fork_id.clone(),
                    source_session_id: f.source_session_id.clone(),
                    source_entry_id: f.source_entry_id.clone(),
                }
            }),
        }
    }

    fn to_state(&self) -> SessionState {
        SessionState {
            mode: self.mode.clone(),
            model: self.model.clone(),
            reasoning_level: self.reasoning_level.clone(),
            entry_count: self.entry_count,
            last_entry_id: self.last_entry_id.clone(),
            last_timestamp: self.last_entry_id.as_ref().map(|_| self.updated_at),
            compaction_index: self.compaction_index,
            message_count: self.message_count,
            cost: self.cost,
            title: self.title.clone(),
            transcript_len: self.transcript_len,
            skipped_lines: self.skipped_lines,
        }
    }
}

/// The state `meta` records, if it still describes a prefix of this transcript: same
/// session, length within the file, and the line ending at that length is the entry meta
/// names as the newest. Anything else (a missing, stale or foreign meta) gives `None` and
/// the caller scans the whole transcript.
pub(crate) fn trusted_state(
    meta_path: &Path,
    header: &SessionHeader,
    file: &File,
    header_end: u64,
    file_len: u64,
) -> Option<SessionState> {
    let bytes = match std::fs::read(meta_path) {
        Ok(b) => b,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %meta_path.display(), error = %e, "cannot read session meta");
            }
            return None;
        }
    };
    let meta: SessionMeta = match serde_json::from_slice(&bytes) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(path = %meta_path.display(), error = %e, "ignoring unreadable session meta");
            return None;
        }
    };
    if meta.version != META_VERSION
        || meta.session_id != header.session_id
        || meta.transcript_len < header_end
        || meta.transcript_len > file_len
    {
        return None;
    }
    let last = RevLines::new(file, header_end, meta.transcript_len)
        .next_line()
        .ok()?;
    let matches = match (&last, &meta.last_entry_id) {
        (None, None) => true,
        (Some((offset, line)), Some(id)) => {
            let ends_line = offset + line.len() as u64 + 1 == meta.transcript_len;
            ends_line
                && serde_json::from_slice::<Frame>(line)
                    .map(|f| &f.id == id)
                    .unwrap_or(false)
        }
        _ => false,
    };
    matches.then(|| meta.to_state())
}
