//! The Runtime's MCP servers (issue 18, docs/mcp.md): started in the background once
//! `hello` and `sync` are out, their tools replacing `mcp__SERVER__*` in the registry as
//! they connect, change or fail, each change announced with `tools_changed`.

use shard_mcp::{McpManager, McpUpdate, ServerState, StartContext};
use shard_protocol::event::{Event, McpServerStatus, ToolsChanged};
use tokio::sync::mpsc;

use super::Runtime;
use super::inbox::Internal;

/// Updates waiting between the servers and the actor.
const UPDATE_QUEUE: usize = 32;

impl Runtime {
    /// Starts the configured servers (returns at once) and reports the project servers
    /// that wait for approval.
    pub(super) async fn start_mcp(&mut self) {
        let Some(plan) = self.toolbox.mcp_plan.take() else {
            return;
        };
        for skipped in &plan.skipped {
            self.emit_tools_changed(McpServerStatus {
                name: skipped.name.clone(),
                state: "not_approved".into(),
                message: Some(skipped.reason.clone()),
                restarting: None,
                tools: Vec::new(),
            })
            .await;
        }
        if plan.start.is_empty() {
            return;
        }
        let (tx, mut rx) = mpsc::channel::<McpUpdate>(UPDATE_QUEUE);
        let ctx = StartContext {
            cwd: self.opts.cwd.clone(),
            env_remove: self.toolbox.env_remove.clone(),
            processes: self.toolbox.processes.clone(),
            sandbox: Some(self.toolbox.sandbox.clone()),
        };
        self.toolbox.mcp = Some(McpManager::start(plan.start, ctx, tx));
        // Through the actor's own queue: updates apply between commands, never mid-call.
        let internal = self.toolbox.tools.sender();
        tokio::spawn(async move {
            while let Some(update) = rx.recv().await {
                if internal.send(Internal::Mcp(update)).await.is_err() {
                    break;
                }
            }
        });
    }

    /// Replaces one server's tools and announces it.
    pub(super) async fn apply_mcp(&mut self, update: McpUpdate) {
        let McpUpdate {
            server,
            tools,
            state,
        } = update;
        let names = self
            .toolbox
            .tools
            .replace_prefix(&shard_mcp::tool::tool_name(&server, ""), tools);
        let (message, restarting) = match &state {
            ServerState::Failed { reason, restarting } => (Some(reason.clone()), Some(*restarting)),
            _ => (None, None),
        };
        self.emit_tools_changed(McpServerStatus {
            name: server,
            state: state.name().into(),
            message,
            restarting,
            tools: names,
        })
        .await;
    }

    async fn emit_tools_changed(&mut self, server: McpServerStatus) {
        let tools = self
            .toolbox
            .tools
            .registry
            .names()
            .into_iter()
            .map(str::to_string)
            .collect();
        self.emit(Event::ToolsChanged(ToolsChanged {
            agent_id: None,
            tools,
            server: Some(server),
        }))
        .await;
    }
}
