//! A prompt waits for the editor's MCP servers: a Runtime starts them in the background,
//! and a prompt sent before they connect would not find their tools. `sync` names the
//! servers still connecting; the prompt is held until each of them is ready or failed
//! (`tools_changed`), for at most [`MCP_READY`]; a cancel answers it at once.

use std::collections::HashSet;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use shard_protocol::event::{Sync, ToolsChanged};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::Session;
use crate::rpc::RpcError;
use crate::translate::ShardPrompt;

/// The longest a prompt waits for the editor's servers before it goes without them.
pub const MCP_READY: Duration = Duration::from_secs(30);

/// A prompt waiting for the editor's servers.
pub struct Held {
    pub(super) prompt: ShardPrompt,
    pub(super) reply: oneshot::Sender<Result<acp::StopReason, RpcError>>,
    pub(super) deadline: Instant,
}

/// The names of the editor's servers.
pub fn names(servers: &[shard_protocol::mcp::ClientMcpServer]) -> HashSet<String> {
    servers.iter().map(|s| s.name.clone()).collect()
}

/// Which of the editor's servers `sync` says are still connecting.
pub fn still_starting(names: &HashSet<String>, sync: &Sync) -> HashSet<String> {
    sync.mcp_starting
        .iter()
        .flatten()
        .filter(|n| names.contains(*n))
        .cloned()
        .collect()
}

impl Session {
    /// Holds `prompt` when the editor's servers are still starting; gives it back when
    /// it may go now.
    pub(super) fn hold(
        &mut self,
        prompt: ShardPrompt,
        reply: oneshot::Sender<Result<acp::StopReason, RpcError>>,
    ) -> Option<(
        ShardPrompt,
        oneshot::Sender<Result<acp::StopReason, RpcError>>,
    )> {
        if self.mcp_waiting.is_empty() {
            return Some((prompt, reply));
        }
        self.held = Some(Held {
            prompt,
            reply,
            deadline: Instant::now() + MCP_READY,
        });
        None
    }

    /// Notes a server that is no longer starting; sends the held prompt once none is.
    pub(super) async fn mcp_changed(&mut self, t: &ToolsChanged) {
        if let Some(s) = &t.server
            && s.state != "starting"
        {
            self.mcp_waiting.remove(&s.name);
        }
        if self.mcp_waiting.is_empty() {
            self.release().await;
        }
    }

    /// Sends the held prompt (its servers settled, or the wait ran out).
    pub(super) async fn release(&mut self) {
        self.mcp_waiting.clear();
        if let Some(h) = self.held.take() {
            self.send_prompt(h.prompt, h.reply).await;
        }
    }

    /// Answers the held prompt without sending it (a cancel, a dead Runtime).
    pub(super) fn drop_held(&mut self, result: Result<acp::StopReason, RpcError>) -> bool {
        match self.held.take() {
            Some(h) => {
                let _ = h.reply.send(result);
                true
            }
            None => false,
        }
    }
}
