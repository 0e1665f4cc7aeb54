//! The Runtime's MCP servers (docs/mcp.md): started in the background once
//! `hello` and `sync` are out, their tools replacing `mcp__SERVER__*` in the registry as
//! they connect, change or fail, each change announced with `tools_changed`.

use shard_mcp::{McpManager, McpUpdate, ServerState, StartContext};
use shard_protocol::event::{Event, McpServerStatus, ToolsChanged};
use tokio::sync::mpsc;

use super::Runtime;
use super::inbox::Internal;
use super::toolbox::McpWait;

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
        self.toolbox.mcp_waiting = Some(McpWait {
            servers: plan.start.iter().map(|s| s.name.clone()).collect(),
            deadline: tokio::time::Instant::now() + self.config.mcp.startup_timeout(),
        });
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
        if matches!(
            state,
            ServerState::Ready { .. } | ServerState::Failed { .. }
        ) && let Some(w) = &mut self.toolbox.mcp_waiting
        {
            w.servers.remove(&server);
        }
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

    /// Before a model request: waits (serving commands meanwhile) until every server
    /// started with the Runtime connected or failed, at most until the startup deadline;
    /// a server still starting then is reported, and the turn goes on without it.
    pub(super) async fn wait_for_mcp(&mut self) {
        let Some(deadline) = self.toolbox.mcp_waiting.as_ref().map(|w| w.deadline) else {
            return;
        };
        let settled = |rt: &Runtime| {
            rt.toolbox
                .mcp_waiting
                .as_ref()
                .is_none_or(|w| w.servers.is_empty())
                || rt.cancelled()
        };
        self.serve_while(super::serve::sleep_until(Some(deadline)), settled)
            .await;
        let late = self
            .toolbox
            .mcp_waiting
            .take()
            .map(|w| w.servers)
            .unwrap_or_default();
        if self.cancelled() {
            return;
        }
        let secs = self.config.mcp.startup_timeout().as_secs();
        for name in late {
            self.emit_tools_changed(McpServerStatus {
                name,
                state: "starting".into(),
                message: Some(format!(
                    "not ready after {secs} s ([mcp] startup_timeout); this turn goes on without it, its tools join when it connects"
                )),
                restarting: None,
                tools: Vec::new(),
            })
            .await;
        }
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
