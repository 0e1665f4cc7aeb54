//! `SHARD_HOME/sessions/`: finding, creating, locking and listing sessions.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use shard_protocol::ids;

use crate::entry::{Decoded, SessionHeader, decode_entry, decode_header, encode_header};
use crate::error::SessionError;
use crate::fork_index;
use crate::lines::{last_newline_end, read_first_line};
use crate::meta::{SessionMeta, trusted_state};
use crate::records::{
    atomic_write, atomic_write_unsynced, ensure_private_dir, open_private, read_small, sync_dir,
};
use crate::session::{LOCK_FILE, META_FILE, Session, TRANSCRIPT_FILE};
use crate::state::{SessionState, TornLine, scan_forward};

/// The sessions under one `SHARD_HOME`. Cheap to construct; holds no open files.
#[derive(Debug, Clone)]
pub struct SessionStore {
    home: PathBuf,
}

impl SessionStore {
    /// A store rooted at `shard_home` (sessions live in `shard_home/sessions`).
    pub fn new(shard_home: impl Into<PathBuf>) -> Self {
        SessionStore {
            home: shard_home.into(),
        }
    }

    /// `SHARD_HOME`.
    pub(crate) fn home(&self) -> &Path {
        &self.home
    }

    /// `SHARD_HOME/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }

    /// The directory of `session_id`, after validating the id: `sessions/<id>`, or for a
    /// fork the `forks/<id>` folder under its source, found through the fork index without
    /// walking the store (`fork_index`; docs/sessions.md).
    pub fn session_dir(&self, session_id: &str) -> Result<PathBuf, SessionError> {
        if !ids::is_valid(ids::SESSION, session_id) {
            return Err(SessionError::InvalidId(
                session_id.chars().take(64).collect(),
            ));
        }
        let sessions = self.sessions_dir();
        let top = sessions.join(session_id);
        if top.is_dir() {
            return Ok(top);
        }
        Ok(match fork_index::lookup(&sessions, session_id) {
            fork_index::Lookup::Found(dir) => dir,
            fork_index::Lookup::NotAFork => top,
            fork_index::Lookup::Unindexed => {
                let all = self.all_session_dirs();
                fork_index::rebuild(&sessions, &all);
                all.into_iter()
                    .find(|(id, _)| id == session_id)
                    .map_or(top, |(_, dir)| dir)
            }
        })
    }

    /// Every session folder: the top-level ones, then forks under them (to
    /// [`crate::fork::MAX_FORK_DEPTH`] levels), each with its id.
    pub(crate) fn all_session_dirs(&self) -> Vec<(String, PathBuf)> {
        let mut out = Vec::new();
        let mut level: Vec<PathBuf> = vec![self.sessions_dir()];
        for depth in 0..=crate::fork::MAX_FORK_DEPTH {
            let mut next = Vec::new();
            for parent in &level {
                let Ok(entries) = std::fs::read_dir(parent) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    let Some(name) = name.to_str() else { continue };
                    if !ids::is_valid(ids::SESSION, name) {
                        continue;
                    }
                    let path = entry.path();
                    next.push(path.join("forks"));
                    out.push((name.to_string(), path));
                }
            }
            if next.is_empty() || depth == crate::fork::MAX_FORK_DEPTH {
                break;
            }
            level = next;
        }
        out
    }

    /// Opens the existing session in `dir` (a fork being written).
    pub(crate) fn open_dir(&self, session_id: &str, dir: PathBuf) -> Result<Session, SessionError> {
        self.open_in(session_id, dir, None, |_| {})
    }

    /// Opens the session, creating it with this id and `cwd` when absent (the daemon
    /// allocates ids before spawning, §16 item 10). An existing session keeps the cwd of
    /// its header. Holds an exclusive lock for the `Session`'s life; a second opener gets
    /// `Conflict("session is in use by pid N")`.
    pub fn open_or_create(&self, session_id: &str, cwd: &Path) -> Result<Session, SessionError> {
        self.open_or_create_then(session_id, cwd, |_| {})
    }

    /// [`Self::open_or_create`], with `first` run on the session before its meta is written
    /// (a new session's first meta, or the refresh of a stale one). What `first` appends —
    /// the Runtime records the model and mode it starts with — is then in that meta, which
    /// is not rewritten for it at the next turn end or exit: one file replaced fewer per
    /// new session (docs/decisions.md, "Fewer files per create").
    pub fn open_or_create_then(
        &self,
        session_id: &str,
        cwd: &Path,
        first: impl FnOnce(&mut Session),
    ) -> Result<Session, SessionError> {
        let dir = self.session_dir(session_id)?;
        ensure_private_dir(&self.home)?;
        let sessions = self.sessions_dir();
        let fresh = !sessions.exists();
        ensure_private_dir(&sessions)?;
        if fresh {
            // A brand-new store has no forks: its index is complete from the start.
            fork_index::rebuild(&sessions, &[]);
        }
        ensure_private_dir(&dir)?;
        self.open_in(session_id, dir, Some(cwd), first)
    }

    /// Opens an existing session; `NotFound` when there is none.
    pub fn open_existing(&self, session_id: &str) -> Result<Session, SessionError> {
        let dir = self.session_dir(session_id)?;
        if !dir.join(TRANSCRIPT_FILE).is_file() {
            return Err(SessionError::NotFound(format!("session {session_id}")));
        }
        self.open_in(session_id, dir, None, |_| {})
    }

    /// Checks that a session exists and its header is readable, without locking or
    /// changing anything (the daemon's adoption check).
    pub fn inspect(&self, session_id: &str) -> Result<SessionHeader, SessionError> {
        let dir = self.session_dir(session_id)?;
        let path = dir.join(TRANSCRIPT_FILE);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound(format!("session {session_id}")));
            }
            Err(e) => return Err(SessionError::io("opening", &path, e)),
        };
        read_header(&file, &path, session_id).map(|(h, _)| h)
    }

    /// Sessions whose cwd equals `cwd` (compared as given, not canonicalized), forks
    /// included, newest `updated_at` first, read from `meta.json` files only.
    pub fn list_for_cwd(&self, cwd: &Path) -> Result<Vec<SessionMeta>, SessionError> {
        let root = self.sessions_dir();
        if let Err(e) = std::fs::metadata(&root) {
            if e.kind() == std::io::ErrorKind::NotFound {
                return Ok(Vec::new());
            }
            return Err(SessionError::io("listing", &root, e));
        }
        let want = cwd.to_string_lossy();
        let mut out = Vec::new();
        for (name, dir) in self.all_session_dirs() {
            let name = name.as_str();
            let path = dir.join(META_FILE);
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) => {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        tracing::warn!(path = %path.display(), error = %e, "cannot read session meta");
                    }
                    continue;
                }
            };
            match serde_json::from_slice::<SessionMeta>(&bytes) {
                Ok(meta) if meta.cwd == want && meta.session_id == name => out.push(meta),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "skipping unreadable session meta");
                }
            }
        }
        out.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| b.session_id.cmp(&a.session_id))
        });
        Ok(out)
    }

    /// The most recently updated session of `cwd`, for "continue where I left off".
    pub fn latest_for_cwd(&self, cwd: &Path) -> Result<Option<String>, SessionError> {
        Ok(self
            .list_for_cwd(cwd)?
            .into_iter()
            .next()
            .map(|m| m.session_id))
    }

    fn open_in(
        &self,
        session_id: &str,
        dir: PathBuf,
        create_cwd: Option<&Path>,
        first: impl FnOnce(&mut Session),
    ) -> Result<Session, SessionError> {
        let lock = take_lock(&dir.join(LOCK_FILE), session_id)?;
        let path = dir.join(TRANSCRIPT_FILE);
        let mut created = false;
        if !path.exists() {
            let Some(cwd) = create_cwd else {
                return Err(SessionError::NotFound(format!("session {session_id}")));
            };
            let header = crate::deferred::new_header(session_id, cwd);
            // Written whole by rename, so a transcript never exists without its header.
            // No fsync yet: an empty new session is worth nothing after a power cut, and
            // the first `write_meta` (turn end, shutdown) syncs the file and directory.
            atomic_write_unsynced(&path, &encode_header(&header)?)?;
            created = true;
        }
        let file = open_private(&path, OpenOptions::new().read(true).append(true))?;
        let (header, header_end) = read_header(&file, &path, session_id)?;
        let mut len = file
            .metadata()
            .map_err(|e| SessionError::io("inspecting", &path, e))?
            .len();
        let torn = repair_tail(&file, &dir, &path, header_end, &mut len)?;
        let meta_path = dir.join(META_FILE);
        let (state, fresh) = match trusted_state(&meta_path, &header, &file, header_end, len) {
            Some(mut state) => {
                let from = state.transcript_len;
                scan_forward(&file, from, len, &mut state)
                    .map_err(|e| SessionError::io("scanning", &path, e))?;
                (state, from == len)
            }
            None => {
                let mut state = SessionState::default();
                scan_forward(&file, header_end, len, &mut state)
                    .map_err(|e| SessionError::io("scanning", &path, e))?;
                (state, false)
            }
        };
        let mut session = Session {
            id: session_id.to_owned(),
            dir,
            file: file.into(),
            _lock: lock.into(),
            creating: std::sync::Mutex::new(None),
            header,
            header_end,
            state,
            torn,
            poisoned: false,
            synced_len: None,
            meta_len: None,
            dirs_synced: !created,
            handed_len: None,
            armed: None,
        };
        first(&mut session);
        if created {
            session.write_initial_meta()?;
        } else if !fresh {
            // Next open (and `list`) should not have to scan again.
            if let Err(e) = session.write_meta() {
                tracing::warn!(session = %session_id, error = %e, "cannot refresh session meta");
            }
        }
        Ok(session)
    }
}

/// How long a session's lock is waited for before it counts as held by another process.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(250);

/// Takes the session's exclusive lock and records our pid in it.
pub(crate) fn take_lock(path: &Path, session_id: &str) -> Result<File, SessionError> {
    let mut lock = open_private(
        path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )?;
    // A Runtime that has just ended may have left a copy of its lock's descriptor in a
    // child between `fork` and `exec` (the sandbox's zygote starts that way): the copy
    // goes at the child's `exec`, milliseconds later. A holder still there after a short
    // wait is a real one (docs/decisions.md, "A session lock waits briefly").
    let patience = std::time::Instant::now() + LOCK_PATIENCE;
    let locked = loop {
        match lock.try_lock() {
            Err(TryLockError::WouldBlock) if std::time::Instant::now() < patience => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            other => break other,
        }
    };
    match locked {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let holder = read_small(&mut lock);
            let who = if holder.is_empty() {
                "another process".to_owned()
            } else {
                format!("pid {holder}")
            };
            return Err(SessionError::Conflict(format!(
                "session {session_id} is in use by {who}"
            )));
        }
        Err(TryLockError::Error(e)) => return Err(SessionError::io("locking", path, e)),
    }
    let pid = std::process::id().to_string();
    lock.set_len(0)
        .and_then(|()| lock.write_all_at(pid.as_bytes(), 0))
        .map_err(|e| SessionError::io("writing pid to", path, e))?;
    Ok(lock)
}

fn read_header(
    file: &File,
    path: &Path,
    session_id: &str,
) -> Result<(SessionHeader, u64), SessionError> {
    let first = read_first_line(file).map_err(|e| SessionError::io("reading", path, e))?;
    let Some((line, end)) = first else {
        return Err(SessionError::Corrupt(format!(
            "session {session_id}: transcript has no header line"
        )));
    };
    Ok((decode_header(&line, session_id)?, end))
}

/// Sets aside a torn last line (bytes after the last `\n`) and truncates the transcript
/// to its last newline, so the next append starts a clean line. A tail that is a complete
/// entry missing only its newline is kept and completed instead.
fn repair_tail(
    file: &File,
    dir: &Path,
    path: &Path,
    header_end: u64,
    len: &mut u64,
) -> Result<Option<TornLine>, SessionError> {
    if *len <= header_end {
        return Ok(None);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, *len - 1)
        .map_err(|e| SessionError::io("reading", path, e))?;
    if last[0] == b'\n' {
        return Ok(None);
    }
    let start = last_newline_end(file, header_end, *len)
        .map_err(|e| SessionError::io("reading", path, e))?
        .unwrap_or(header_end);
    let tail_len = usize::try_from(*len - start)
        .map_err(|_| SessionError::Corrupt(format!("{}: torn tail too large", path.display())))?;
    let mut tail = vec![0u8; tail_len];
    file.read_exact_at(&mut tail, start)
        .map_err(|e| SessionError::io("reading", path, e))?;
    if matches!(
        decode_entry(&tail),
        Ok(Decoded::Entry(_) | Decoded::Unknown(_))
    ) {
        tracing::info!(path = %path.display(), "completing last transcript line missing its newline");
        let mut writer = file;
        writer
            .write_all(b"\n")
            .and_then(|()| file.sync_data())
            .map_err(|e| SessionError::io("completing last line of", path, e))?;
        *len += 1;
        return Ok(None);
    }
    let torn_path = dir.join(format!("{TRANSCRIPT_FILE}.torn-{}", ids::now_millis()));
    atomic_write(&torn_path, &tail)?;
    file.set_len(start)
        .and_then(|()| file.sync_all())
        .map_err(|e| SessionError::io("truncating", path, e))?;
    sync_dir(dir)?;
    tracing::warn!(
        path = %path.display(),
        offset = start,
        bytes = tail_len,
        torn = %torn_path.display(),
        "torn last transcript line set aside"
    );
    *len = start;
    Ok(Some(TornLine {
        path: torn_path,
        offset: start,
        len: tail_len as u64,
    }))
}
