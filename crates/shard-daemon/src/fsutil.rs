//! Owner-only directories and atomic file replacement (docs/architecture.md#storage): a manifest is
//! either the old or the new version after a crash, never a torn mix.

use std::path::{Path, PathBuf};

/// Creates `dir` (and parents) with mode 0700 and tightens an existing one to 0700. The
/// store's own helper, with the daemon's `io::Error` face.
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    shard_session::records::ensure_private_dir(dir).map_err(std::io::Error::other)
}

/// Writes `bytes` to `path` through a 0600 temp file in the same directory, fsyncs it,
/// renames it over `path` and fsyncs the directory (the store's helper).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    shard_session::records::atomic_write(path, bytes).map_err(|e| match e {
        // The OS error itself, so callers can still tell what it was (out of descriptors,
        // disk full); the caller's context names the file.
        shard_session::SessionError::Io { source, .. } => source,
        other => std::io::Error::other(other),
    })
}

/// Writes one record file atomically (0600 in the 0700 directory `dir`, fsynced) on a
/// blocking thread, so the async executor never waits on the disk.
pub async fn save_record(dir: PathBuf, path: PathBuf, bytes: Vec<u8>) -> std::io::Result<()> {
    tokio::task::spawn_blocking(move || {
        ensure_private_dir(&dir)?;
        atomic_write(&path, &bytes)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// A record kept as `<id>.json` in a directory of its own (manifests, job and workspace
/// records): what [`load_records`] needs to check and order it.
pub trait StoredRecord: serde::de::DeserializeOwned {
    /// The id prefix (`shard_protocol::ids`) a file name must carry.
    const ID_KIND: &'static str;
    /// What a log line calls one record.
    const WHAT: &'static str;
    /// The id inside the record; it must match the file name.
    fn id(&self) -> &str;
    /// Creation time, the first ordering key.
    fn created_at(&self) -> u64;
}

/// Every `<id>.json` record in `dir` (created 0700, or tightened to it, when needed) with a
/// valid id that matches the id inside it, ordered by (created_at, id). A file that cannot
/// be read or parsed, or names another id, is logged by path, never by content, and
/// skipped — left in place, since it may still name something the user needs — so one bad
/// record never hides the others. Blocking: call it from a blocking thread.
pub fn load_records<T: StoredRecord>(dir: &Path) -> std::io::Result<Vec<T>> {
    ensure_private_dir(dir)?;
    let mut out: Vec<T> = Vec::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let path = entry.path();
        let Some(id) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().and_then(|e| e.to_str()) != Some("json")
            || !shard_protocol::ids::is_valid(T::ID_KIND, id)
        {
            continue;
        }
        let parsed = std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<T>(&b).map_err(|e| e.to_string()));
        match parsed {
            Ok(record) if record.id() == id => out.push(record),
            Ok(_) => {
                tracing::warn!(path = %path.display(), what = T::WHAT, "record id does not match its file name; skipped")
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, what = T::WHAT, "unreadable record skipped")
            }
        }
    }
    out.sort_by(|a, b| {
        a.created_at()
            .cmp(&b.created_at())
            .then_with(|| a.id().cmp(b.id()))
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_write_is_owner_only_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        ensure_private_dir(&sub).unwrap();
        assert_eq!(
            fs::metadata(&sub).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let f = sub.join("x.json");
        atomic_write(&f, b"one").unwrap();
        atomic_write(&f, b"two").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let leftovers: Vec<_> = fs::read_dir(&sub).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp files left behind");
    }

    #[derive(serde::Deserialize)]
    struct Job {
        job_id: String,
        created_at: u64,
    }

    impl StoredRecord for Job {
        const ID_KIND: &'static str = shard_protocol::ids::JOB;
        const WHAT: &'static str = "job";
        fn id(&self) -> &str {
            &self.job_id
        }
        fn created_at(&self) -> u64 {
            self.created_at
        }
    }

    #[test]
    fn load_records_skips_mismatched_and_bad_files_and_orders_by_creation() {
        use shard_protocol::ids;
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c, d) = (
            ids::new_id(ids::JOB),
            ids::new_id(ids::JOB),
            ids::new_id(ids::JOB),
            ids::new_id(ids::JOB),
        );
        let put = |file: &str, id: &str, at: u64| {
            let body = format!(r#"{{"job_id":"{id}","created_at":{at}}}"#);
            fs::write(dir.path().join(format!("{file}.json")), body).unwrap();
        };
        put(&a, &a, 2);
        put(&b, &b, 1);
        put(&c, &a, 0); // names another record
        fs::write(dir.path().join(format!("{d}.json")), b"{not json").unwrap();
        put("not-an-id", "not-an-id", 0);
        let got: Vec<String> = load_records::<Job>(dir.path())
            .unwrap()
            .into_iter()
            .map(|j| j.job_id)
            .collect();
        assert_eq!(got, vec![b, a]);
        assert!(
            dir.path().join(format!("{d}.json")).exists(),
            "bad file left in place"
        );
    }
}
