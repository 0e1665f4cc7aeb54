//! Files an editor holds. When a client offers them (`client_files`), `read`, `write` and
//! `edit` go through the editor instead of the disk, so the agent sees and edits unsaved
//! buffers; the gate has already allowed the call. A method answering `None` means the
//! editor does not serve that operation and the disk is used.

use std::path::Path;

use futures::future::BoxFuture;

/// The editor's side of file access.
pub trait EditorFiles: Send + Sync + std::fmt::Debug {
    /// The text of `path` as the editor has it; `None` when reads are not offered.
    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<Result<String, String>>>;
    /// Replaces the text of `path` in the editor; `None` when writes are not offered.
    fn write<'a>(
        &'a self,
        path: &'a Path,
        content: String,
    ) -> BoxFuture<'a, Option<Result<(), String>>>;
}

/// True when `path` is a file `read` may take from the editor: an existing text file
/// (images and binary files are read from disk) or one the disk does not have (a new
/// buffer). Blocking.
pub fn editor_may_read(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return true;
    };
    if !meta.is_file() {
        return false;
    }
    let mut head = vec![0u8; 8192];
    let n = match std::fs::File::open(path) {
        Ok(mut f) => std::io::Read::read(&mut f, &mut head).unwrap_or(0),
        Err(_) => return false,
    };
    head.truncate(n);
    crate::read::image_mime(&head).is_none() && !crate::util::sniff_binary(&head)
}
