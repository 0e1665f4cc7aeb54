//! One MCP tool on Shard's open Tool contract: named `mcp__SERVER__TOOL`, described and
//! schema'd by its server, read-only only when the user's configuration says so, called
//! with the server's timeout and cancelled (`notifications/cancelled`) on abort.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use shard_protocol::types::{KvPair, RenderDescriptor};
use shard_tools::{Tool, ToolContext, ToolOutput};

use crate::server::ServerShared;

/// The prefix every MCP tool name starts with.
pub const PREFIX: &str = "mcp__";

/// The name the model sees for `tool` of `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{PREFIX}{server}__{tool}")
}

/// A tool of a connected server.
pub struct McpTool {
    name: String,
    remote: String,
    description: String,
    schema: Value,
    read_only: bool,
    hint: Option<String>,
    server: Arc<ServerShared>,
}

impl McpTool {
    /// A tool from one entry of `tools/list` (as JSON); `None` when its name cannot be a
    /// tool name for the providers (`[A-Za-z0-9_-]`, 64 characters in all).
    pub fn from_listing(server: Arc<ServerShared>, raw: &Value) -> Option<McpTool> {
        let remote = raw.get("name")?.as_str()?.to_string();
        let name = tool_name(&server.spec.name, &remote);
        let valid = name.len() <= 64
            && remote
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return None;
        }
        let mut schema = raw
            .get("inputSchema")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| serde_json::json!({"type": "object"}));
        if let Some(obj) = schema.as_object_mut()
            && !obj.contains_key("type")
        {
            obj.insert("type".into(), "object".into());
        }
        let annotations = raw.get("annotations");
        let hint_read_only = annotations
            .and_then(|a| a.get("readOnlyHint"))
            .and_then(Value::as_bool);
        let hint_destructive = annotations
            .and_then(|a| a.get("destructiveHint"))
            .and_then(Value::as_bool);
        let hint = match (hint_read_only, hint_destructive) {
            (Some(true), _) => Some(
                "the server says this tool only reads (readOnlyHint; not trusted alone)"
                    .to_string(),
            ),
            (_, Some(true)) => Some(
                "the server says this tool may delete or overwrite (destructiveHint)".to_string(),
            ),
            _ => None,
        };
        let description = raw
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Some(McpTool {
            read_only: server.spec.tool_is_read_only(&remote),
            name,
            remote,
            description: format!("[MCP server {}] {description}", server.spec.name),
            schema,
            hint,
            server,
        })
    }

    /// The tool's name on its server.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let started = Instant::now();
        let server = &self.server.spec.name;
        let Some(peer) = self.server.peer() else {
            return ToolOutput::error(format!(
                "`{}` was not run: the MCP server `{server}` is not connected ({}). Try again \
                 later or continue without it.",
                self.name,
                self.server.state().describe()
            ));
        };
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            _ => {
                return ToolOutput::error(format!("`{}` takes an object of arguments.", self.name));
            }
        };
        let params = CallToolRequestParams::new(self.remote.clone()).with_arguments(arguments);
        let timeout = self.server.spec.timeout;
        // Dropping the call (timeout, abort) sends `notifications/cancelled`.
        let result = tokio::select! {
            r = peer.call_tool(params) => r,
            _ = tokio::time::sleep(timeout) => {
                return ToolOutput::error(format!(
                    "`{}` timed out after {} s: the MCP server `{server}` did not answer; the \
                     call was cancelled.",
                    self.name,
                    timeout.as_secs()
                ));
            }
            _ = ctx.cancel.cancelled() => {
                return ToolOutput::error("Aborted by the user; the MCP call was cancelled.");
            }
        };
        let mut out = match result {
            Ok(r) => {
                let raw = serde_json::to_value(&r).unwrap_or_default();
                crate::content::convert(&raw, ctx).await
            }
            Err(rmcp::ServiceError::TransportClosed)
                if self
                    .server
                    .oversized
                    .load(std::sync::atomic::Ordering::SeqCst) =>
            {
                ToolOutput::error(format!(
                    "`{}` failed: the MCP server `{server}` sent a message over the {} MiB \
                     limit; it was not read, and the server is being restarted. Ask for \
                     less at a time.",
                    self.name,
                    crate::server::MAX_MESSAGE_BYTES / (1024 * 1024)
                ))
            }
            Err(rmcp::ServiceError::TransportClosed) => ToolOutput::error(format!(
                "`{}` failed: the MCP server `{server}` stopped during the call (it is being \
                 restarted; the call was not retried).",
                self.name
            )),
            Err(e) => ToolOutput::error(format!(
                "`{}` failed: the MCP server `{server}` answered with an error: {}",
                self.name,
                self.server.redact(&e.to_string())
            )),
        };
        out.duration_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
        out
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn is_read_only(&self, _args: &Value) -> bool {
        self.read_only
    }

    fn permission_note(&self, _args: &Value) -> Option<String> {
        self.hint.clone()
    }

    fn start_render(&self, _args: &Value, _ctx: &ToolContext) -> Option<RenderDescriptor> {
        let mut pairs = vec![
            KvPair {
                k: "server".into(),
                v: self.server.spec.name.clone(),
            },
            KvPair {
                k: "tool".into(),
                v: self.remote.clone(),
            },
        ];
        if let Some(h) = &self.hint {
            pairs.push(KvPair {
                k: "hint".into(),
                v: h.clone(),
            });
        }
        Some(RenderDescriptor::Kv { pairs })
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.call(args, ctx))
    }
}
