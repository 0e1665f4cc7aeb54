//! Finding a forked session by id without walking every session folder.
//!
//! A fork lives under its source (`sessions/<src>/forks/<id>`), so its folder cannot be
//! derived from its id alone. Each fork therefore leaves one small file
//! `sessions/.fork-index/<id>` holding its folder relative to `sessions/`, written before
//! the fork itself. Once every fork of a store is indexed (the `.complete` marker, written
//! after a one-time walk of a store made before the index existed), a lookup is a couple of
//! `stat`s whatever the number of sessions: an id with no top-level folder and no index
//! entry is simply a new session.

use std::path::{Component, Path, PathBuf};

use shard_protocol::ids;

use crate::error::SessionError;
use crate::records::{atomic_write_unsynced, ensure_private_dir};

const INDEX_DIR: &str = ".fork-index";
const COMPLETE_MARKER: &str = ".complete";
/// An index entry is a short relative path; anything longer is not ours.
const MAX_ENTRY_BYTES: u64 = 4096;

/// What the index says about an id that has no top-level folder.
pub(crate) enum Lookup {
    /// The fork's folder.
    Found(PathBuf),
    /// The index is complete and does not name the id: it is not a fork.
    NotAFork,
    /// The store predates the index (or the index was never finished): walk once.
    Unindexed,
}

fn index_dir(sessions: &Path) -> PathBuf {
    sessions.join(INDEX_DIR)
}

/// Looks `session_id` (already validated) up.
pub(crate) fn lookup(sessions: &Path, session_id: &str) -> Lookup {
    let index = index_dir(sessions);
    if let Some(dir) = read_entry(sessions, &index.join(session_id), session_id) {
        return Lookup::Found(dir);
    }
    if index.join(COMPLETE_MARKER).is_file() || !sessions.is_dir() {
        // A store with no sessions folder yet has no forks to find either.
        Lookup::NotAFork
    } else {
        Lookup::Unindexed
    }
}

/// Reads one entry, accepting only `id/forks/id/…/forks/<session_id>` below `sessions`
/// (the index lives under the owner-only `SHARD_HOME`, but a damaged entry must never
/// point a lookup outside the store).
fn read_entry(sessions: &Path, entry: &Path, session_id: &str) -> Option<PathBuf> {
    let meta = std::fs::metadata(entry).ok()?;
    if !meta.is_file() || meta.len() > MAX_ENTRY_BYTES {
        return None;
    }
    let text = std::fs::read_to_string(entry).ok()?;
    let rel = Path::new(text.trim_end_matches('\n'));
    let mut parts = Vec::new();
    for component in rel.components() {
        let Component::Normal(name) = component else {
            return None;
        };
        parts.push(name.to_str()?);
    }
    let shape_ok = parts.len() >= 3
        && parts.len() % 2 == 1
        && parts.iter().enumerate().all(|(i, p)| {
            if i % 2 == 1 {
                *p == "forks"
            } else {
                ids::is_valid(ids::SESSION, p)
            }
        })
        && parts.last() == Some(&session_id);
    if !shape_ok {
        return None;
    }
    let dir = sessions.join(rel);
    dir.is_dir().then_some(dir)
}

/// Records that the fork `session_id` lives in `rel` (its folder relative to `sessions`).
/// Called before the fork's folder is written, so a lookup never misses a fork that exists.
pub(crate) fn record(sessions: &Path, session_id: &str, rel: &Path) -> Result<(), SessionError> {
    let index = index_dir(sessions);
    ensure_private_dir(&index)?;
    atomic_write_unsynced(&index.join(session_id), rel.to_string_lossy().as_bytes())
}

/// Forgets a fork whose folder could not be written.
pub(crate) fn forget(sessions: &Path, session_id: &str) {
    let _ = std::fs::remove_file(index_dir(sessions).join(session_id));
}

/// Indexes every fork found by one walk of an older store, then marks the index complete.
/// Best effort: a store that cannot be written is walked again next time, as before.
pub(crate) fn rebuild(sessions: &Path, all: &[(String, PathBuf)]) {
    if ensure_private_dir(&index_dir(sessions)).is_err() {
        return;
    }
    let top_level = |dir: &Path| dir.parent() == Some(sessions);
    for (id, dir) in all.iter().filter(|(_, dir)| !top_level(dir)) {
        let Ok(rel) = dir.strip_prefix(sessions) else {
            return;
        };
        if record(sessions, id, rel).is_err() {
            return;
        }
    }
    let _ = atomic_write_unsynced(&index_dir(sessions).join(COMPLETE_MARKER), b"1\n");
}
