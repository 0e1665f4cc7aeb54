//! The agent Runtime (docs/architecture.md#the-runtime-actor): one agent, one durable session, the per-agent
//! protocol. The turn loop, the PermissionGate, modes, the model controller and the
//! direct stdio transport live here; the daemon's registry does not.

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod ask;
pub mod compactor;
pub mod config;
pub mod forwarded;
pub mod hooks;
pub mod images;
pub mod models;
pub mod modes;
pub mod prompt;
pub mod recall;
pub mod runtime;
pub mod subagent;
pub mod tool_budget;
pub mod transport;

pub use hooks::{HookOutcome, ModelCallHook, ModelCallView, Seams, SharedContext};
pub use runtime::{
    Input, Prepared, Runtime, RuntimeGone, RuntimeOptions, StartError, ToolChange, ToolsHandle,
    prepare, validate_choice,
};
