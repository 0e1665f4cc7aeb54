//! What the actor waits for: a transport input, or a message from the Runtime's own parts
//! (a tool's UI request, a change to its tools, an MCP server's update).

use std::sync::Arc;

use shard_protocol::ClientMessage;
use shard_protocol::decode::DecodeError;
use shard_tools::Tool;

use futures::future::BoxFuture;
use tokio::sync::mpsc;

use crate::ask::{UiAsk, UiQueue};

/// What the transport feeds the actor.
#[derive(Debug)]
pub enum Input {
    /// A decoded command.
    Command(ClientMessage),
    /// A line that did not decode.
    Invalid(DecodeError),
    /// The peer closed its side.
    Eof,
}

/// One change to a running Runtime's tools.
pub enum ToolChange {
    /// Adds a tool, or replaces the one of the same name in place.
    Add(Arc<dyn Tool>),
    /// Removes the tool with this name (calls already running finish).
    Remove(String),
}

/// What the actor waits for next: a transport input, or a message from its own parts.
pub(crate) enum Next {
    Input(Option<Input>),
    Internal(Internal),
}

/// What the Runtime's own parts send its actor: a UI request from a tool, a change to its
/// tools. One queue, so waiting for inputs costs two channel polls however many parts
/// there are.
pub(crate) enum Internal {
    Ui(UiAsk),
    Tools(ToolChange),
    /// An MCP server's new tool set and state.
    Mcp(shard_mcp::McpUpdate),
}

/// How many internal messages may wait for the actor before a sender waits.
pub(super) const INTERNAL_QUEUE: usize = 64;

/// A tool's UI request reaches the actor through the same queue as the other parts' messages.
impl UiQueue for mpsc::Sender<Internal> {
    fn send(&self, ask: UiAsk) -> BoxFuture<'_, bool> {
        Box::pin(async move { mpsc::Sender::send(self, Internal::Ui(ask)).await.is_ok() })
    }
}
