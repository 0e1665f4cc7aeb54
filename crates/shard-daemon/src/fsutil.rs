//! Owner-only directories and atomic file replacement (ARCHITECTURE §11): a manifest is
//! either the old or the new version after a crash, never a torn mix.

use std::path::Path;

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
