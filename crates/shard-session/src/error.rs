//! The one error type of the store, so callers can map each case to a protocol error code
//! (`NotFound` → `NOT_FOUND`, `Conflict` → `CONFLICT`, the rest → `INTERNAL_ERROR`).

use std::io;
use std::path::Path;

/// Everything that can go wrong opening, reading or writing a session or a record.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The session (or record) does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// Another process (or another open in this process) holds the session's lock.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The transcript or a record cannot be understood at all (bad header, garbage).
    #[error("corrupt: {0}")]
    Corrupt(String),
    /// An id failed validation before it could touch a path.
    #[error("invalid id: {0}")]
    InvalidId(String),
    /// An operating-system error, with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What the store was doing, including the path.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl SessionError {
    /// Builds an [`SessionError::Io`] naming the operation and path.
    pub(crate) fn io(what: &str, path: &Path, source: io::Error) -> Self {
        SessionError::Io {
            context: format!("{what} {}", path.display()),
            source,
        }
    }
}
