//! Every wire type of the Shard protocol (`docs/protocol.md` §5–§11 with the additions
//! pinned in docs/protocol.md §16), the JSONL codec of §2.1, the error codes of §8 and the
//! JSON Schema export. This crate does no I/O beyond the codec.

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod codec;
pub mod command;
pub mod decode;
pub mod definitions;
pub mod error;
pub mod event;
pub mod ids;
pub mod jobs;
pub mod mcp;
pub mod orchestrator;
pub mod permission;
pub mod remote;
pub mod responses;
pub mod schema;
pub mod table;
pub mod types;
pub mod workspace;

pub use codec::{JsonlCodec, LineError, to_line};
pub use command::{ClientMessage, Command};
pub use decode::{DecodeError, IncomingEvent, decode_command, decode_event, decode_event_lenient};
pub use error::{ErrorBody, ErrorCode, ProviderErrorKind};
pub use event::Event;
pub use permission::{PermissionAnswer, PermissionAnswered};
pub use table::CommandSpec;

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: &str = "0.1.0";
