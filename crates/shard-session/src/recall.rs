//! Compaction records on disk: appending one, and reading back the original messages a
//! compaction summarized (the `recall` tool, docs/sessions.md#compaction-recall-and-forks).

use std::ops::ControlFlow;

use shard_protocol::types::Message;

use crate::entry::{CompactionEntry, Decoded, Entry, EntryKind, decode_entry};
use crate::error::SessionError;
use crate::lines::RevLines;
use crate::reader::SessionReader;
use crate::session::Session;

/// What a compaction records besides its index, which the session allocates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCompaction {
    /// The summary text.
    pub summary: String,
    /// Estimated (or reported) context tokens before.
    pub tokens_before: u64,
    /// Estimated context tokens after (summary + kept messages).
    pub tokens_after: u64,
    /// First message kept verbatim.
    pub first_kept_entry_id: String,
    /// First and last message summarized.
    pub message_range: [String; 2],
}

impl Session {
    /// The index the next compaction gets: one more than the last, 0 for the first.
    pub fn next_compaction_index(&self) -> u64 {
        self.state.compaction_index.map_or(0, |i| i + 1)
    }

    /// Appends a `compaction` entry and syncs it: after this returns, a reopened session
    /// loads the summary plus the kept messages.
    pub fn append_compaction(
        &mut self,
        new: NewCompaction,
    ) -> Result<(Entry, CompactionEntry), SessionError> {
        let compaction = CompactionEntry {
            index: self.next_compaction_index(),
            summary: new.summary,
            tokens_before: new.tokens_before,
            tokens_after: new.tokens_after,
            first_kept_entry_id: new.first_kept_entry_id,
            message_range: new.message_range,
        };
        let entry = self.append(EntryKind::Compaction(compaction.clone()))?;
        self.sync_data()?;
        Ok((entry, compaction))
    }

    /// The original messages compaction `index` summarized; see [`SessionReader::recall`].
    pub fn recall(&self, index: u64) -> Result<Vec<Message>, SessionError> {
        self.reader()?.recall(index)
    }
}

impl SessionReader {
    /// The compaction entry with `index`, searched from the newest.
    pub fn compaction(&self, index: u64) -> Result<Option<CompactionEntry>, SessionError> {
        let mut found = None;
        self.entries_rev(|entry| match entry.kind {
            EntryKind::Compaction(c) if c.index == index => {
                found = Some(c);
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        })?;
        Ok(found)
    }

    /// The original messages compaction `index` summarized, oldest first: every message
    /// entry from `message_range[0]` to `message_range[1]` inclusive. `NotFound` when the
    /// session has no such compaction.
    pub fn recall(&self, index: u64) -> Result<Vec<Message>, SessionError> {
        let Some(compaction) = self.compaction(index)? else {
            return Err(SessionError::NotFound(format!("compaction {index}")));
        };
        let [first, last] = compaction.message_range;
        let mut inside = false;
        let mut out = Vec::new();
        self.entries_rev(|entry| {
            if entry.id == last {
                inside = true;
            }
            if !inside {
                return ControlFlow::Continue(());
            }
            let done = entry.id == first;
            if let EntryKind::Message(m) = entry.kind
                && !m.message.content.is_empty()
            {
                out.push(m.message);
            }
            if done {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        out.reverse();
        Ok(out)
    }

    /// Visits entries newest first until `visit` breaks; unknown kinds and unreadable
    /// lines are skipped.
    fn entries_rev(
        &self,
        mut visit: impl FnMut(Entry) -> ControlFlow<()>,
    ) -> Result<(), SessionError> {
        let mut lines = RevLines::new(&self.file, self.header_end, self.transcript_len);
        while let Some((_, line)) = lines
            .next_line()
            .map_err(|e| SessionError::io("reading", &self.path, e))?
        {
            if let Ok(Decoded::Entry(entry)) = decode_entry(&line)
                && visit(entry).is_break()
            {
                break;
            }
        }
        Ok(())
    }

    /// A second view of the same bytes, for another thread.
    pub fn try_clone(&self) -> Result<SessionReader, SessionError> {
        Ok(SessionReader {
            id: self.id.clone(),
            path: self.path.clone(),
            file: self
                .file
                .try_clone()
                .map_err(|e| SessionError::io("duplicating", &self.path, e))?,
            header_end: self.header_end,
            transcript_len: self.transcript_len,
            compaction_index: self.compaction_index,
        })
    }
}
