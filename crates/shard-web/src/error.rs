//! Errors of the web door. None of them ever carries a code, cookie or ticket.

use std::path::PathBuf;

/// Why the web door could not start or an operation failed.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// An unsafe or incomplete combination of flags (docs/protocol.md §4.1.2); one line naming
    /// what is missing.
    #[error("{0}")]
    Config(String),
    /// The security store's file or directory is readable or writable by others.
    #[error(
        "{path} has mode {mode:o}; the security store must be owner-only (0700 directory, 0600 file): fix it with chmod or remove it"
    )]
    StorePermissions {
        /// The offending path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The security store could not be parsed.
    #[error("{path}: {message}")]
    StoreCorrupt {
        /// The store file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A file or socket operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The OS gave no randomness.
    #[error("no randomness from the OS: {0}")]
    Random(String),
    /// The daemon answered the admin socket with an error.
    #[error("{0}")]
    Admin(String),
    /// The port chosen explicitly (`--port`) is taken.
    #[error(
        "port {0} is taken (--port {0}): stop what holds it, choose another with --port N, or leave --port out to use the first free port from 7420"
    )]
    PortTaken(u16),
    /// Neither the default port nor any of the ports after it could be bound.
    #[error("no port from {first} to {last} could be bound for the web door ({last_error})")]
    NoFreePort {
        /// The first port tried.
        first: u16,
        /// The last port tried.
        last: u16,
        /// Why the last one failed.
        last_error: String,
    },
}

impl WebError {
    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        WebError::Io {
            context: context.into(),
            source,
        }
    }
}
