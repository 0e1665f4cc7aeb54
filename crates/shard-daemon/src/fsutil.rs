//! Owner-only directories and atomic file replacement (ARCHITECTURE §11): a manifest is
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
    shard_session::records::atomic_write(path, bytes).map_err(std::io::Error::other)
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

/// Every `<id>.json` record in `dir` (created 0700, or tightened to it, when needed) whose
/// id passes `valid_id`, with that id. A file that cannot be read or parsed is logged by
/// path, never by content, and skipped — left in place, since it may still name something
/// the user needs — so one bad record never hides the others. Blocking: call it from a
/// blocking thread.
pub fn load_records<T: serde::de::DeserializeOwned>(
    dir: &Path,
    what: &'static str,
    valid_id: impl Fn(&str) -> bool,
) -> std::io::Result<Vec<(String, T)>> {
    ensure_private_dir(dir)?;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let path = entry.path();
        let Some(id) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().and_then(|e| e.to_str()) != Some("json") || !valid_id(id) {
            continue;
        }
        let parsed = std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<T>(&b).map_err(|e| e.to_string()));
        match parsed {
            Ok(record) => out.push((id.to_string(), record)),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, what, "unreadable record skipped")
            }
        }
    }
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
}
