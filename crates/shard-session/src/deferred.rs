//! A new session whose files are made on a thread while the caller goes on: `shard run`
//! sends its first model request without waiting for the file system (docs/sessions.md,
//! "Creating a session off the start path"). Entries appended meanwhile wait in memory
//! and reach the transcript, in order, as soon as its files exist; a creation that failed
//! fails every later write, the sync and the meta with the reason.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

use shard_protocol::ids;

use crate::entry::{FORMAT_VERSION, HeaderTag, SessionHeader, encode_header};
use crate::error::SessionError;
use crate::fork_index;
use crate::meta::SessionMeta;
use crate::records::{atomic_write_unsynced, ensure_private_dir, open_private};
use crate::session::{LOCK_FILE, META_FILE, Session, TRANSCRIPT_FILE};
use crate::state::SessionState;
use crate::store::{SessionStore, take_lock};

/// The files a creation thread made: the transcript (header written) and the lock.
pub(crate) struct Created {
    file: File,
    lock: File,
}

/// A creation in progress (or failed), with what was appended before it finished.
pub(crate) struct Creating {
    handle: Option<JoinHandle<Result<Created, SessionError>>>,
    /// Encoded lines appended before the transcript existed, in order.
    buffered: Vec<u8>,
    /// Why the creation failed, once it has.
    failed: Option<String>,
}

impl std::fmt::Debug for Creating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Creating")
            .field("running", &self.handle.is_some())
            .field("buffered", &self.buffered.len())
            .field("failed", &self.failed)
            .finish()
    }
}

/// What a creation needs on its thread.
struct Plan {
    home: PathBuf,
    sessions: PathBuf,
    dir: PathBuf,
    id: String,
    header: Vec<u8>,
    meta: Vec<u8>,
    subdirs: Vec<&'static str>,
}

impl SessionStore {
    /// Creates a brand-new session with `session_id` (just allocated with
    /// `ids::new_id(ids::SESSION)`, so nobody else can hold it) without waiting for the file
    /// system: its folder, lock, header, meta and `subdirs` are made on a thread, and
    /// appends wait in memory until they exist. The first sync (or meta, or read) waits
    /// for the creation; a creation that fails makes every later write fail with the
    /// reason, and [`Session::created`] reports it.
    pub fn create_deferred(
        &self,
        session_id: &str,
        cwd: &Path,
        subdirs: &[&'static str],
    ) -> Result<Session, SessionError> {
        self.create_deferred_with(session_id, cwd, subdirs, None)
    }

    /// [`SessionStore::create_deferred`] whose thread first waits for `gate` (a message or
    /// its sender's drop): the Runtime holds the creation back until the sandbox's probe
    /// has forked, so that child (which does not exec) never holds a copy of the session's
    /// lock; tests hold it back to append while the folder does not exist yet.
    pub fn create_deferred_with(
        &self,
        session_id: &str,
        cwd: &Path,
        subdirs: &[&'static str],
        gate: Option<std::sync::mpsc::Receiver<()>>,
    ) -> Result<Session, SessionError> {
        if !ids::is_valid(ids::SESSION, session_id) {
            return Err(SessionError::InvalidId(
                session_id.chars().take(64).collect(),
            ));
        }
        let sessions = self.sessions_dir();
        let dir = sessions.join(session_id);
        let header = new_header(session_id, cwd);
        let header_bytes = encode_header(&header)?;
        let header_end = header_bytes.len() as u64;
        let state = SessionState {
            transcript_len: header_end,
            ..SessionState::default()
        };
        let plan = Plan {
            home: self.home().to_path_buf(),
            sessions,
            dir: dir.clone(),
            id: session_id.to_owned(),
            header: header_bytes,
            meta: meta_bytes(&header, &state)?,
            subdirs: subdirs.to_vec(),
        };
        let handle = std::thread::Builder::new()
            .name("session-create".into())
            .spawn(move || {
                if let Some(gate) = gate {
                    let _ = gate.recv();
                }
                create(&plan)
            })
            .map_err(|e| SessionError::io("starting the creation of", &dir, e))?;
        Ok(Session {
            id: session_id.to_owned(),
            dir,
            file: OnceLock::new(),
            _lock: OnceLock::new(),
            creating: Mutex::new(Some(Creating {
                handle: Some(handle),
                buffered: Vec::new(),
                failed: None,
            })),
            header,
            header_end,
            state,
            torn: None,
            poisoned: false,
            synced_len: None,
            meta_len: None,
            dirs_synced: false,
            handed_len: None,
            armed: None,
        })
    }
}

/// The header of a session created now in `cwd`.
pub(crate) fn new_header(session_id: &str, cwd: &Path) -> SessionHeader {
    SessionHeader {
        kind: HeaderTag::Header,
        version: FORMAT_VERSION,
        session_id: session_id.to_owned(),
        cwd: cwd.to_string_lossy().into_owned(),
        created_at: ids::now_millis(),
        forked_from: None,
    }
}

/// The meta of `state`, as `meta.json` holds it.
pub(crate) fn meta_bytes(
    header: &SessionHeader,
    state: &SessionState,
) -> Result<Vec<u8>, SessionError> {
    let meta = SessionMeta::from_state(header, state);
    let mut bytes = serde_json::to_vec_pretty(&meta)
        .map_err(|e| SessionError::Corrupt(format!("cannot encode meta: {e}")))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// What `open_or_create` does for a new session, on the creation thread.
fn create(plan: &Plan) -> Result<Created, SessionError> {
    ensure_private_dir(&plan.home)?;
    let fresh = !plan.sessions.exists();
    ensure_private_dir(&plan.sessions)?;
    if fresh {
        // A brand-new store has no forks: its index is complete from the start.
        fork_index::rebuild(&plan.sessions, &[]);
    }
    ensure_private_dir(&plan.dir)?;
    let lock = take_lock(&plan.dir.join(LOCK_FILE), &plan.id)?;
    let path = plan.dir.join(TRANSCRIPT_FILE);
    if path.exists() {
        return Err(SessionError::Conflict(format!(
            "session {} exists already",
            plan.id
        )));
    }
    // As in `open_or_create`: whole by rename, no fsync (the first sync makes it durable).
    atomic_write_unsynced(&path, &plan.header)?;
    let file = open_private(&path, OpenOptions::new().read(true).append(true))?;
    atomic_write_unsynced(&plan.dir.join(META_FILE), &plan.meta)?;
    for sub in &plan.subdirs {
        if let Err(err) = ensure_private_dir(&plan.dir.join(sub)) {
            tracing::warn!(%err, "cannot create a folder of the new session");
        }
    }
    Ok(Created { file, lock })
}

impl Session {
    /// The transcript, once it exists: a creation still running is waited for here.
    pub(crate) fn transcript(&self) -> Result<&File, SessionError> {
        if let Some(file) = self.file.get() {
            return Ok(file);
        }
        self.settle(true)?;
        self.file.get().ok_or_else(|| SessionError::Io {
            context: format!("creating session {}", self.id),
            source: std::io::Error::other("the creation did not finish"),
        })
    }

    /// Waits for a creation started by [`SessionStore::create_deferred`] and writes what
    /// was appended meanwhile. `Err` says why the session could not be created: nothing
    /// of it is on disk, and the caller must say so (the Runtime fails the turn). `Ok` at
    /// once for any other session.
    pub fn created(&self) -> Result<(), SessionError> {
        self.transcript().map(|_| ())
    }

    /// True while the files of a new session are still being made (nothing can be read
    /// from it yet; its entries so far are in memory).
    pub fn being_created(&self) -> bool {
        self.file.get().is_none()
    }

    /// Takes over a finished creation (or, with `wait`, waits for it). Failed creations
    /// stay failed.
    pub(crate) fn settle(&self, wait: bool) -> Result<(), SessionError> {
        let failure = |why: &str| SessionError::Io {
            context: format!("creating session {}", self.id),
            source: std::io::Error::other(format!("{why}; nothing of this session was saved")),
        };
        let mut guard = self
            .creating
            .lock()
            .map_err(|_| failure("a creation thread panicked"))?;
        let Some(creating) = guard.as_mut() else {
            return Ok(());
        };
        if let Some(why) = &creating.failed {
            return Err(failure(why));
        }
        let Some(handle) = creating.handle.take_if(|h| wait || h.is_finished()) else {
            return Ok(());
        };
        let outcome = match handle.join() {
            Ok(Ok(created)) => {
                let mut file = &created.file;
                match file.write_all(&creating.buffered) {
                    Ok(()) => Ok(created),
                    Err(e) => Err(SessionError::io("appending to", &self.transcript_path(), e)),
                }
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(failure("the creation thread panicked")),
        };
        match outcome {
            Ok(Created { file, lock }) => {
                let _ = self.file.set(file);
                let _ = self._lock.set(lock);
                *guard = None;
                Ok(())
            }
            Err(e) => {
                let why = e.to_string();
                creating.failed = Some(why.clone());
                creating.buffered = Vec::new();
                Err(failure(&why))
            }
        }
    }

    /// Takes over the creation if it has finished, writing what was appended meanwhile;
    /// never waits. Until this (or a call that waits) runs, appends stay in memory even
    /// after the files exist: the Runtime calls it once the model answers, so nothing
    /// before the first request writes to the file system. `Err` if the creation failed.
    pub fn take_over_if_created(&self) -> Result<(), SessionError> {
        self.settle(false)
    }

    /// Keeps `line` for a transcript still being made (or made but not taken over yet);
    /// `false` when the transcript is open (the caller writes the line itself). A
    /// creation known to have failed fails the append.
    pub(crate) fn buffer_while_creating(&mut self, line: &[u8]) -> Result<bool, SessionError> {
        if self.file.get().is_some() {
            return Ok(false);
        }
        let failed = match self.creating.get_mut() {
            Ok(Some(creating)) if creating.failed.is_none() => {
                creating.buffered.extend_from_slice(line);
                return Ok(true);
            }
            Ok(Some(_)) => true,
            _ => false,
        };
        if failed {
            self.settle(false)?;
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::EntryKind;
    use crate::detached::tests::said;
    use shard_protocol::types::ContentBlock;

    #[test]
    fn appends_wait_in_memory_until_the_folder_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let store = SessionStore::new(tmp.path().join("home"));
        let id = ids::new_id(ids::SESSION);
        let (go, gate) = std::sync::mpsc::channel();
        let mut session = store
            .create_deferred_with(&id, tmp.path(), &["tool-output"], Some(gate))
            .unwrap();
        // Held back: nothing exists, yet appends succeed and the state follows them.
        session
            .append(EntryKind::ModeChange {
                mode: "build".into(),
            })
            .unwrap();
        session.append(said("the prompt")).unwrap();
        assert!(session.being_created());
        assert!(!session.dir().exists(), "the folder waits for the gate");
        assert_eq!(session.state().entry_count, 2);
        assert_eq!(session.state().title.as_deref(), Some("the prompt"));
        go.send(()).unwrap();
        // Made, but not taken over: appends still wait in memory, nothing is written.
        while !session.transcript_path().exists() || !session.dir().join("tool-output").is_dir() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        session.append(said("meanwhile")).unwrap();
        let header_only = std::fs::metadata(session.transcript_path()).unwrap().len();
        assert_eq!(header_only, session.header_end);
        session.take_over_if_created().unwrap();
        session.created().unwrap();
        assert!(!session.being_created());
        session.append(said("after")).unwrap();
        session.sync_data().unwrap();
        session.write_meta().unwrap();
        assert!(session.dir().join("tool-output").is_dir());
        let len = std::fs::metadata(session.transcript_path()).unwrap().len();
        assert_eq!(len, session.state().transcript_len);
        drop(session);
        let reopened = store.open_existing(&id).unwrap();
        assert_eq!(reopened.state().entry_count, 4);
        assert_eq!(reopened.state().mode.as_deref(), Some("build"));
        let texts: Vec<String> = reopened
            .context_messages()
            .unwrap()
            .iter()
            .map(|m| match &m.content[0] {
                ContentBlock::Text { text } => text.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(texts, ["the prompt", "meanwhile", "after"]);
    }

    #[test]
    fn a_creation_that_fails_fails_every_later_write_with_its_reason() {
        let tmp = tempfile::tempdir().unwrap();
        // SHARD_HOME is a file: no folder can be made under it.
        let home = tmp.path().join("home");
        std::fs::write(&home, "not a folder").unwrap();
        let store = SessionStore::new(&home);
        let id = ids::new_id(ids::SESSION);
        let (go, gate) = std::sync::mpsc::channel();
        let mut session = store
            .create_deferred_with(&id, tmp.path(), &[], Some(gate))
            .unwrap();
        session.append(said("typed")).unwrap();
        go.send(()).unwrap();
        let err = session.created().unwrap_err().to_string();
        assert!(
            err.contains(&id) && err.contains("nothing of this session was saved"),
            "{err}"
        );
        assert!(session.append(said("more")).is_err());
        assert!(session.sync_data().is_err());
        assert!(session.write_meta().is_err());
        assert!(session.reader().is_err());
        // Still failed, with the same reason, on every later call.
        assert_eq!(session.created().unwrap_err().to_string(), err);
    }

    #[test]
    fn an_ordinary_session_is_never_being_created() {
        let tmp = tempfile::tempdir().unwrap();
        let store = SessionStore::new(tmp.path().join("home"));
        let session = store
            .open_or_create(&ids::new_id(ids::SESSION), tmp.path())
            .unwrap();
        assert!(!session.being_created());
        session.created().unwrap();
    }
}
