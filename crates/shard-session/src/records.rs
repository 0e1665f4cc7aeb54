//! Durable small files shared by several parts of Shard: agent manifests, grants, job
//! records and session `meta.json` (docs/architecture.md#storage, docs/protocol.md §16 item 12).
//!
//! Every function here blocks on the file system; async callers run them in
//! `spawn_blocking`.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::SessionError;

/// Mode of every directory Shard creates.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file Shard creates.
pub const FILE_MODE: u32 = 0o600;

/// Creates `path` (and missing parents) and makes sure it is mode 0700 whatever the umask.
pub fn ensure_private_dir(path: &Path) -> Result<(), SessionError> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(|e| SessionError::io("creating directory", path, e))?;
    let meta = fs::metadata(path).map_err(|e| SessionError::io("inspecting", path, e))?;
    if meta.permissions().mode() & 0o7777 != DIR_MODE {
        fs::set_permissions(path, Permissions::from_mode(DIR_MODE))
            .map_err(|e| SessionError::io("setting mode of", path, e))?;
    }
    Ok(())
}

/// Opens (creating when absent) a file with mode 0600 set explicitly, since the umask can
/// only remove bits and a restrictive one could leave the owner unable to write.
pub(crate) fn open_private(path: &Path, options: &mut OpenOptions) -> Result<File, SessionError> {
    let file = options
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| SessionError::io("opening", path, e))?;
    let mode = file
        .metadata()
        .map_err(|e| SessionError::io("inspecting", path, e))?
        .permissions()
        .mode();
    if mode & 0o7777 != FILE_MODE {
        file.set_permissions(Permissions::from_mode(FILE_MODE))
            .map_err(|e| SessionError::io("setting mode of", path, e))?;
    }
    Ok(file)
}

/// fsyncs a directory so a rename or creation inside it survives a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), SessionError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| SessionError::io("syncing directory", dir, e))
}

fn parent_of(path: &Path) -> Result<&Path, SessionError> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => Ok(p),
        _ => Ok(Path::new(".")),
    }
}

/// Replaces `path` with `bytes` atomically: a temp file in the same directory, fsync,
/// rename over the target, fsync the directory. Readers see the old or the new content,
/// never a mix; the result is mode 0600.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    replace_file(path, bytes, true)
}

/// Like [`atomic_write`] but without the fsyncs: still never a torn file, but only as
/// durable as the next fsync of the directory. For files whose loss in a power cut costs
/// nothing (a brand-new, still empty transcript), where the fsyncs would dominate start-up.
pub fn atomic_write_unsynced(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    replace_file(path, bytes, false)
}

fn replace_file(path: &Path, bytes: &[u8], durable: bool) -> Result<(), SessionError> {
    let dir = parent_of(path)?;
    let name = path
        .file_name()
        .ok_or_else(|| SessionError::Io {
            context: format!("atomic write of {}", path.display()),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "path has no file name"),
        })?
        .to_string_lossy();
    // A random suffix keeps concurrent writers of the same file from sharing a temp file.
    let tmp: PathBuf = dir.join(format!(
        ".{name}.tmp-{}",
        shard_protocol::ids::new_id("tmp")
    ));
    let result = (|| {
        let mut file = open_private(&tmp, OpenOptions::new().write(true).create_new(true))?;
        file.write_all(bytes)
            .map_err(|e| SessionError::io("writing", &tmp, e))?;
        if durable {
            file.sync_all()
                .map_err(|e| SessionError::io("syncing", &tmp, e))?;
        }
        fs::rename(&tmp, path).map_err(|e| SessionError::io("renaming onto", path, e))?;
        if durable { sync_dir(dir) } else { Ok(()) }
    })();
    if result.is_err() {
        // Best effort: a leftover temp file is harmless but untidy.
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Reads a whole file, or `None` when it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, SessionError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SessionError::io("reading", path, e)),
    }
}

/// Read-modify-write of a shared record under an exclusive lock on the sibling
/// `<path>.lock` file (docs/protocol.md §16 item 12): lock, re-read, let `change` compute the
/// new content from the current one (`None` when absent), write it atomically, unlock.
///
/// Blocks until the lock is free, so two processes (or threads) updating the same record
/// never lose each other's change. If `change` fails nothing is written.
pub fn locked_update<F, E>(path: &Path, change: F) -> Result<(), E>
where
    F: FnOnce(Option<Vec<u8>>) -> Result<Vec<u8>, E>,
    E: From<SessionError>,
{
    let lock_path = lock_path_for(path);
    let lock = open_private(
        &lock_path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )?;
    lock.lock()
        .map_err(|e| SessionError::io("locking", &lock_path, e))?;
    let current = read_optional(path)?;
    let next = change(current)?;
    atomic_write(path, &next)?;
    // Dropping the file would unlock too; unlocking explicitly documents the intent.
    lock.unlock()
        .map_err(|e| SessionError::io("unlocking", &lock_path, e))?;
    Ok(())
}

/// The sibling lock file `locked_update` uses for `path`.
pub fn lock_path_for(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Reads a small text file (the pid in a lock file) without failing on odd content.
pub(crate) fn read_small(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.take(64).read_to_string(&mut text);
    text.trim().to_owned()
}
