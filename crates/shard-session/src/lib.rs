//! The durable session store (docs/architecture.md#storage, docs/sessions.md#compaction-recall-and-forks, docs/protocol.md §16 items 9–12).
//!
//! A session is `SHARD_HOME/sessions/<session_id>/session.jsonl`: a versioned header line,
//! then one JSON entry per line, appended and never rewritten. One writer at a time holds
//! its lock. `meta.json` beside it summarizes the session so listing never reads
//! transcripts and opening reads only what the meta does not yet cover. The format and
//! the decisions behind it are documented in `docs/sessions.md`.
//!
//! [`records`] holds the atomic and locked file writes other parts of Shard share.

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod compact;
mod deferred;
mod detached;
mod entry;
mod error;
mod fork;
mod fork_index;
mod lines;
mod meta;
mod reader;
mod recall;
pub mod records;
pub mod repair;
mod session;
mod state;
mod store;
pub mod streaming;
mod window;

pub use entry::{
    CheckpointEntry, CompactionEntry, Entry, EntryKind, FORMAT_VERSION, ForkOrigin, HeaderTag,
    MessageEntry, SessionHeader,
};
pub use error::SessionError;
pub use fork::Forked;
pub use meta::{META_VERSION, SessionMeta};
pub use reader::SessionReader;
pub use recall::NewCompaction;
pub use session::{LOCK_FILE, META_FILE, Session, TRANSCRIPT_FILE};
pub use state::{ModelRef, SessionState, TITLE_CHARS, TornLine};
pub use store::SessionStore;
pub use window::{DEFAULT_LIVE_WINDOW_BYTES, SUMMARY_PREAMBLE, summary_message};
