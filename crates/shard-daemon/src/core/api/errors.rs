//! The errors the core's API answers with, shared by its parts.

use shard_protocol::command::kind;
use shard_protocol::{CommandSpec, ErrorCode};

use crate::reply::{ProtocolError, Reply};

pub(super) fn not_found() -> ProtocolError {
    ProtocolError::new(ErrorCode::NotFound, "no such agent")
}

/// The empty success of `permission_response` and `ui_response`, whose responses are both
/// `()` in the command table (the second line checks that the two never drift apart).
pub(super) fn answered_nothing() -> Reply {
    let _same: <kind::UiResponse as CommandSpec>::Response = ();
    Reply::empty::<kind::PermissionResponse>()
}

pub(super) fn not_running() -> ProtocolError {
    ProtocolError::new(ErrorCode::Conflict, "the agent's runtime is not running")
}

/// The one error for commands that arrive while the daemon shuts down.
pub(crate) fn shutting_down() -> ProtocolError {
    ProtocolError::new(ErrorCode::RuntimeStartFailed, "the daemon is shutting down")
}
