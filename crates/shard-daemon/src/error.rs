//! Errors of the daemon library.

use std::path::PathBuf;

/// Why the daemon could not start or keep running.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// Another daemon holds the lock of this `SHARD_HOME`.
    #[error("a daemon is already running for {home} (lock {lock} is held)")]
    AlreadyRunning {
        /// The home directory.
        home: PathBuf,
        /// The lock file.
        lock: PathBuf,
    },
    /// A filesystem or socket operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A durable record could not be read or written.
    #[error("agent manifest {path}: {message}")]
    Manifest {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl DaemonError {
    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        DaemonError::Io {
            what: what.into(),
            source,
        }
    }
}
