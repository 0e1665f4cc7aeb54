//! One open session: the single writer of a transcript (docs/protocol.md §16 item 10).
//!
//! Every method blocks on the file system; the async Runtime calls them from
//! `spawn_blocking` (an append is one `write(2)`, a window read is bounded by its budget).

use std::fs::File;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use shard_protocol::event::LiveWindow;
use shard_protocol::ids;
use shard_protocol::types::Message;

use crate::entry::{Decoded, Entry, EntryKind, SessionHeader, decode_entry, encode_entry};
use crate::error::SessionError;
use crate::lines::RevLines;
use crate::reader::SessionReader;
use crate::records::atomic_write_unsynced;
use crate::state::{SessionState, TornLine};

/// File name of the transcript inside a session directory.
pub const TRANSCRIPT_FILE: &str = "session.jsonl";
/// File name of the metadata inside a session directory.
pub const META_FILE: &str = "meta.json";
/// File name of the single-writer lock inside a session directory.
pub const LOCK_FILE: &str = "session.lock";

/// An open, locked session. Dropping it releases the lock.
#[derive(Debug)]
pub struct Session {
    pub(crate) id: String,
    pub(crate) dir: PathBuf,
    /// The transcript, opened for reading and appending; empty while a deferred creation
    /// runs ([`crate::SessionStore::create_deferred`]).
    pub(crate) file: OnceLock<File>,
    /// Held only for its lock (empty while a deferred creation runs).
    pub(crate) _lock: OnceLock<File>,
    /// A deferred creation still running or failed, with the lines appended meanwhile.
    pub(crate) creating: Mutex<Option<crate::deferred::Creating>>,
    pub(crate) header: SessionHeader,
    pub(crate) header_end: u64,
    pub(crate) state: SessionState,
    pub(crate) torn: Option<TornLine>,
    /// Set when a failed write could not be undone: the file may end in a partial line,
    /// so further appends are refused until the session is reopened (which sets it aside).
    pub(crate) poisoned: bool,
    /// Transcript length at the last fsync, so a sync with nothing new costs nothing.
    pub(crate) synced_len: Option<u64>,
    /// Transcript length described by the durable `meta.json`.
    pub(crate) meta_len: Option<u64>,
    /// False for a session created by this open until its directory entries (made without
    /// fsync, to start fast) are made durable by the first sync.
    pub(crate) dirs_synced: bool,
    /// Transcript length a helper process was started to sync
    /// ([`Session::finish_detached`]).
    pub(crate) handed_len: Option<u64>,
    /// A sync helper started ahead of the exit ([`Session::arm_detached_finish`]).
    pub(crate) armed: Option<crate::detached::ArmedSync>,
}

impl Session {
    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The transcript header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session's directory (where forks and torn lines live).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of the transcript.
    pub fn transcript_path(&self) -> PathBuf {
        self.dir.join(TRANSCRIPT_FILE)
    }

    /// Mode, model, reasoning level, entry count and chain head, kept current by appends.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// The torn last line set aside when this session was opened, if there was one.
    pub fn torn(&self) -> Option<&TornLine> {
        self.torn.as_ref()
    }

    /// Appends one entry: a fresh id, `parent_id` = the previous entry, the current time.
    /// A message's `Message.id` is set to the entry id. The line goes to the kernel in one
    /// `write(2)` before this returns (durable against a process crash; call
    /// [`Session::sync_data`] for power loss). The file is never rewritten.
    pub fn append(&mut self, kind: EntryKind) -> Result<Entry, SessionError> {
        self.append_with_id(ids::new_id(ids::ENTRY), kind)
    }

    /// Appends one entry under an id the caller allocated earlier with
    /// `shard_protocol::ids::new_id(ids::ENTRY)`: a streamed assistant message is named
    /// by its first delta, long before it is complete and persisted.
    pub fn append_with_id(
        &mut self,
        id: String,
        mut kind: EntryKind,
    ) -> Result<Entry, SessionError> {
        if !ids::is_valid(ids::ENTRY, &id) {
            return Err(SessionError::InvalidId(id));
        }
        if self.poisoned {
            return Err(SessionError::Io {
                context: format!("appending to session {}", self.id),
                source: std::io::Error::other(
                    "an earlier write failed and could not be undone; reopen the session",
                ),
            });
        }
        if let EntryKind::Message(m) = &mut kind {
            m.message.id.clone_from(&id);
        }
        let entry = Entry {
            id,
            parent_id: self.state.last_entry_id.clone(),
            timestamp: ids::now_millis(),
            kind,
        };
        let line = encode_entry(&entry)?;
        if !self.buffer_while_creating(&line)? {
            let failed = {
                let mut file = self.transcript()?;
                match file.write_all(&line) {
                    Ok(()) => None,
                    // A partial line would glue onto the next append; cut it off.
                    Err(e) => Some((e, file.set_len(self.state.transcript_len).err())),
                }
            };
            if let Some((e, undo)) = failed {
                if let Some(undo) = undo {
                    tracing::error!(session = %self.id, error = %undo, "cannot undo a failed append");
                    self.poisoned = true;
                }
                return Err(SessionError::io("appending to", &self.transcript_path(), e));
            }
        }
        self.state.apply(&entry);
        self.state.transcript_len += line.len() as u64;
        Ok(entry)
    }

    /// fsyncs the transcript: at turn boundaries, and before a permission request for a
    /// just-appended tool call is emitted.
    pub fn sync_data(&mut self) -> Result<(), SessionError> {
        if self.synced_len == Some(self.state.transcript_len) {
            return Ok(());
        }
        self.transcript()?
            .sync_data()
            .map_err(|e| SessionError::io("syncing", &self.transcript_path(), e))?;
        if !self.dirs_synced {
            crate::records::sync_dir(&self.dir)?;
            if let Some(sessions) = self.dir.parent() {
                crate::records::sync_dir(sessions)?;
            }
            self.dirs_synced = true;
        }
        self.synced_len = Some(self.state.transcript_len);
        Ok(())
    }

    /// A read-only view of the transcript as it stands, which can move to a blocking
    /// thread: the Runtime reads the live window and the context there while its actor keeps
    /// the executor free.
    pub fn reader(&self) -> Result<SessionReader, SessionError> {
        let file = self
            .transcript()?
            .try_clone()
            .map_err(|e| SessionError::io("duplicating", &self.transcript_path(), e))?;
        Ok(SessionReader {
            id: self.id.clone(),
            path: self.transcript_path(),
            file,
            header_end: self.header_end,
            transcript_len: self.state.transcript_len,
            compaction_index: self.state.compaction_index,
        })
    }

    /// The live window for `sync`; see [`SessionReader::live_window`].
    pub fn live_window(&self, budget_bytes: usize) -> Result<LiveWindow, SessionError> {
        self.reader()?.live_window(budget_bytes)
    }

    /// The model's context; see [`SessionReader::context_messages`].
    pub fn context_messages(&self) -> Result<Vec<Message>, SessionError> {
        self.reader()?.context_messages()
    }

    /// Visits entries newest first until `visit` breaks (for recall and fork, which look
    /// for a recent entry). Unknown kinds and unreadable lines are skipped.
    pub fn for_each_entry_rev(
        &self,
        mut visit: impl FnMut(Entry) -> ControlFlow<()>,
    ) -> Result<(), SessionError> {
        let mut lines = RevLines::new(
            self.transcript()?,
            self.header_end,
            self.state.transcript_len,
        );
        while let Some((_, line)) = lines
            .next_line()
            .map_err(|e| SessionError::io("reading", &self.transcript_path(), e))?
        {
            if let Ok(Decoded::Entry(entry)) = decode_entry(&line)
                && visit(entry).is_break()
            {
                break;
            }
        }
        Ok(())
    }

    /// Rewrites `meta.json` atomically from the current state. The transcript is synced
    /// first so the meta never describes bytes a power loss could take back.
    pub fn write_meta(&mut self) -> Result<(), SessionError> {
        // Synced even when the meta is current: a new session's first meta is written
        // before anything is synced.
        self.sync_data()?;
        if self.meta_len == Some(self.state.transcript_len) {
            return Ok(());
        }
        // The meta is a cache checked against the transcript on open (a stale or lost
        // one means a scan, never wrong state), so it is replaced atomically but not
        // fsynced: two fewer fsyncs at every turn end.
        atomic_write_unsynced(&self.dir.join(META_FILE), &self.meta_bytes()?)?;
        self.meta_len = Some(self.state.transcript_len);
        Ok(())
    }

    /// Rewrites `meta.json` without syncing the transcript first, in place: for
    /// [`Session::finish_detached`], whose helper syncs the transcript, on the way out of
    /// the process. One `pwrite` into the existing file (padded with spaces, which JSON
    /// allows, when the new text is shorter) instead of a temp file and a rename, which
    /// create and rename directory entries and allocate blocks, each waiting for the
    /// journal on a busy disk. Safe because the meta is a cache checked on open: a meta
    /// that describes more than the transcript holds is refused, and one a power cut left
    /// half-written is unreadable, so open scans (docs/sessions.md). Without an existing
    /// meta, or if the write fails, the atomic replacement runs instead.
    pub(crate) fn write_meta_in_place(&mut self) -> Result<(), SessionError> {
        use std::os::unix::fs::FileExt;
        self.transcript()?;
        let path = self.dir.join(META_FILE);
        let mut bytes = self.meta_bytes()?;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|file| {
                let old = file.metadata()?.len();
                if let Ok(old) = usize::try_from(old)
                    && old > bytes.len()
                {
                    bytes.resize(old, b' ');
                }
                file.write_all_at(&bytes, 0)
            });
        if let Err(e) = written {
            tracing::debug!(error = %e, "meta not overwritten in place; replacing it");
            atomic_write_unsynced(&path, &self.meta_bytes()?)?;
        }
        self.meta_len = Some(self.state.transcript_len);
        Ok(())
    }

    /// The meta of a brand-new session: listed at once, its folder made durable by the
    /// first [`Session::write_meta`] (which rewrites it only if the transcript has grown
    /// since; like every meta it is a cache checked against the transcript, never
    /// fsynced). Skipping the fsyncs keeps creating a session cheap.
    pub(crate) fn write_initial_meta(&mut self) -> Result<(), SessionError> {
        atomic_write_unsynced(&self.dir.join(META_FILE), &self.meta_bytes()?)?;
        self.meta_len = Some(self.state.transcript_len);
        Ok(())
    }

    fn meta_bytes(&self) -> Result<Vec<u8>, SessionError> {
        crate::deferred::meta_bytes(&self.header, &self.state)
    }
}
