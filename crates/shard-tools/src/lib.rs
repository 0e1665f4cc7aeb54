//! The built-in tools and the Tool contract (docs/architecture.md#the-tool-contract).
//!
//! Each tool's arguments are one type deriving `Deserialize` and `JsonSchema`
//! ([`typed::TypedTool`]); [`builtin_tools`] gives the seven built-ins and
//! [`ToolRegistry`] looks them up by name.

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod bash;
pub mod diff;
pub mod edit;
pub mod editor;
pub mod find;
pub mod grep;
pub mod ls;
pub mod output;
pub mod paths;
pub mod read;
pub mod registry;
pub mod tool;
pub mod typed;
mod util;
mod walk;
pub mod write;

pub use editor::EditorFiles;
pub use registry::{ToolRegistry, ToolSpec, builtin_tools};
pub use tool::{PathFilter, ProcessTracker, Tool, ToolContext, ToolLimits, ToolOutput};
pub use typed::{Typed, TypedTool};
