//! `session_op fork` (docs/protocol.md §9.2): the live window as it stood at one entry becomes a
//! new session under the source's `forks/` folder, rooted by a fork-marker checkpoint and
//! followed by copies of the window's messages with fresh ids. The source is only read.

use std::path::Path;

use shard_protocol::ids;

use crate::entry::{
    CheckpointEntry, Decoded, EntryKind, FORMAT_VERSION, ForkOrigin, HeaderTag, SessionHeader,
    decode_entry, encode_header,
};
use crate::error::SessionError;
use crate::fork_index;
use crate::lines::RevLines;
use crate::reader::SessionReader;
use crate::records::{atomic_write_unsynced, ensure_private_dir};
use crate::session::{META_FILE, TRANSCRIPT_FILE};
use crate::store::SessionStore;

/// Deepest fork-of-a-fork nesting searched when a session id is resolved.
pub(crate) const MAX_FORK_DEPTH: usize = 8;

/// What a fork produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forked {
    /// `fork-…`.
    pub fork_id: String,
    /// The new session.
    pub session_id: String,
    /// Its newest entry.
    pub head_entry_id: String,
}

impl SessionReader {
    /// Offset just past the line of entry `entry_id`, searched from the newest.
    fn entry_end(&self, entry_id: &str) -> Result<Option<u64>, SessionError> {
        let mut lines = RevLines::new(&self.file, self.header_end, self.transcript_len);
        while let Some((offset, line)) = lines
            .next_line()
            .map_err(|e| SessionError::io("reading", &self.path, e))?
        {
            let id = match decode_entry(&line) {
                Ok(Decoded::Entry(e)) => e.id,
                Ok(Decoded::Unknown(f)) => f.id,
                Err(_) => continue,
            };
            if id == entry_id {
                return Ok(Some(offset + line.len() as u64 + 1));
            }
        }
        Ok(None)
    }
}

impl SessionStore {
    /// Forks the session `reader` views at `from_entry_id`. `NotFound` when the entry is
    /// not in it; `Io` when the fork cannot be written (a half-written fork folder is
    /// removed).
    pub fn fork(
        &self,
        reader: &SessionReader,
        from_entry_id: &str,
    ) -> Result<Forked, SessionError> {
        let Some(end) = reader.entry_end(from_entry_id)? else {
            return Err(SessionError::NotFound(format!(
                "entry {from_entry_id} in session {}",
                reader.id
            )));
        };
        let mut at = reader.try_clone()?;
        at.transcript_len = end;
        let window = at.context_messages()?;
        let source_dir = reader
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let session_id = ids::new_id(ids::SESSION);
        let fork_id = ids::new_id(ids::FORK);
        let forks = source_dir.join("forks");
        let dir = forks.join(&session_id);
        let origin = ForkOrigin {
            fork_id: fork_id.clone(),
            source_session_id: reader.id.clone(),
            source_entry_id: from_entry_id.to_string(),
        };
        let header = self.source_header(reader)?;
        let sessions = self.sessions_dir();
        let source_rel = self.session_dir(&reader.id)?;
        let source_rel = source_rel
            .strip_prefix(&sessions)
            .unwrap_or(Path::new(&reader.id));
        fork_index::record(
            &sessions,
            &session_id,
            &source_rel.join("forks").join(&session_id),
        )?;
        let written = write_fork(self, &forks, &dir, &session_id, &header.cwd, origin, window);
        match written {
            Ok(head_entry_id) => Ok(Forked {
                fork_id,
                session_id,
                head_entry_id,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                fork_index::forget(&sessions, &session_id);
                Err(e)
            }
        }
    }

    fn source_header(&self, reader: &SessionReader) -> Result<SessionHeader, SessionError> {
        self.inspect(&reader.id)
    }
}

fn write_fork(
    store: &SessionStore,
    forks: &Path,
    dir: &Path,
    session_id: &str,
    cwd: &str,
    origin: ForkOrigin,
    window: Vec<shard_protocol::types::Message>,
) -> Result<String, SessionError> {
    ensure_private_dir(forks)?;
    ensure_private_dir(dir)?;
    let header = SessionHeader {
        kind: HeaderTag::Header,
        version: FORMAT_VERSION,
        session_id: session_id.to_string(),
        cwd: cwd.to_string(),
        created_at: ids::now_millis(),
        forked_from: Some(origin.clone()),
    };
    atomic_write_unsynced(&dir.join(TRANSCRIPT_FILE), &encode_header(&header)?)?;
    // Written: now open it like any session (lock, state) and append the rows.
    let mut session = store.open_dir(session_id, dir.to_path_buf())?;
    let marker = session.append(EntryKind::Checkpoint(CheckpointEntry {
        artifact_kind: "fork".to_string(),
        fork_id: origin.fork_id,
        source_session_id: origin.source_session_id,
        source_entry_id: origin.source_entry_id,
    }))?;
    let mut head = marker.id;
    for mut message in window {
        message.id = String::new();
        head = session.append(EntryKind::message(message))?.id;
    }
    session.write_meta()?;
    if !dir.join(META_FILE).is_file() {
        return Err(SessionError::Corrupt("fork meta was not written".into()));
    }
    Ok(head)
}
