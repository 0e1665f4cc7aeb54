//! The built-in tools and the Tool contract (ARCHITECTURE §4.1).

pub mod tool;

pub use tool::{ProcessTracker, Tool, ToolContext, ToolLimits, ToolOutput};
