//! A tool the test controls: it runs until released or cancelled, and classifies each
//! call by its `mode` argument (`"read"` → read-only, anything else → mutating).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use shard_tools::{Tool, ToolContext, ToolOutput};
use tokio::sync::Notify;

/// The test's handle on its tool.
pub struct Blocker {
    /// The tool's name.
    pub name: String,
    /// Lets one waiting (or the next) call finish.
    pub release: Arc<Notify>,
}

impl Blocker {
    /// A blocker named `name`.
    pub fn new(name: &str) -> Arc<Blocker> {
        Arc::new(Blocker {
            name: name.to_string(),
            release: Arc::new(Notify::new()),
        })
    }
}

impl Tool for Blocker {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "Waits until the test releases it."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"mode": {"type": "string"}}})
    }

    fn is_read_only(&self, args: &Value) -> bool {
        args.get("mode").and_then(Value::as_str) == Some("read")
    }

    fn execute<'a>(&'a self, _args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            tokio::select! {
                _ = self.release.notified() => ToolOutput::text("released"),
                _ = ctx.cancel.cancelled() => ToolOutput::error("cancelled"),
            }
        })
    }
}
