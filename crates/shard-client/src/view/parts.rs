//! What an [`AgentView`](super::AgentView) holds besides its messages: the streaming
//! message, the tool calls, the open requests, the usage totals, and the [`Change`]s an
//! event makes.

use serde_json::{Map, Value};
use shard_protocol::event::{DeltaKind, ErrorEvent, PermissionRequest, UiRequest};
use shard_protocol::types::{Image, RenderDescriptor, ToolResultContent, Usage};

/// A block of the message being streamed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamBlock {
    /// Text so far.
    Text(String),
    /// Reasoning so far.
    Thinking(String),
    /// A tool call whose arguments are still arriving.
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// The JSON fragments so far.
        args_json: String,
    },
}

/// The assistant message being streamed, from its deltas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamingMessage {
    /// Message id.
    pub message_id: String,
    /// Blocks by index (a gap stays empty text).
    pub blocks: Vec<StreamBlock>,
}

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// Output.
    pub content: ToolResultContent,
    /// Failure or refusal.
    pub is_error: bool,
    /// Process exit code.
    pub exit_code: Option<i64>,
    /// Wall-clock duration.
    pub duration_ms: Option<u64>,
    /// Result render.
    pub render: Option<RenderDescriptor>,
    /// Images that came beside the content (an MCP tool's screenshot).
    pub images: Vec<Image>,
}

/// One tool call, from the model's message, its `tool_call` event and its result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallView {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments.
    pub args: Map<String, Value>,
    /// Start-time render.
    pub render: Option<RenderDescriptor>,
    /// Read-only tool, when announced.
    pub read_only: Option<bool>,
    /// The gate let it run (a `tool_call` event was seen). A call that got a result
    /// without one was refused before it ran (mode, rule, headless policy) or was invalid.
    pub started: bool,
    /// Its result, once there.
    pub result: Option<ToolOutcome>,
}

/// A request waiting for an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Pending {
    /// A permission request.
    Permission(Box<PermissionRequest>),
    /// A UI request.
    Ui(UiRequest),
}

impl Pending {
    /// Its request id.
    pub fn request_id(&self) -> &str {
        match self {
            Pending::Permission(p) => &p.request_id,
            Pending::Ui(u) => &u.request_id,
        }
    }
}

/// Usage added up over the provider calls this view saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageTotals {
    /// Provider calls.
    pub calls: u64,
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Cache reads.
    pub cache_read: u64,
    /// Cache writes.
    pub cache_write: u64,
    /// Cost in US dollars, when every call's cost was known.
    pub cost: Option<f64>,
    /// Context size after the last call.
    pub context_tokens: Option<u64>,
}

impl UsageTotals {
    pub(super) fn add(&mut self, u: &Usage) {
        self.cost = match (self.calls, self.cost, u.cost) {
            (0, _, c) => c,
            (_, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.calls += 1;
        self.input += u.input;
        self.output += u.output;
        self.cache_read += u.cache_read.unwrap_or(0);
        self.cache_write += u.cache_write.unwrap_or(0);
        if u.context_tokens.is_some() {
            self.context_tokens = u.context_tokens;
        }
    }
}

/// What one event changed, for printers that show only what is new.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A `sync` replaced the state: redraw.
    Synced,
    /// Status (or its detail) changed.
    Status,
    /// A turn started.
    TurnStarted(String),
    /// A turn ended (with its usage when given).
    TurnEnded(String),
    /// A streamed block began.
    BlockStarted {
        /// Message.
        message_id: String,
        /// Block index.
        block_index: u32,
        /// Kind.
        kind: DeltaKind,
    },
    /// Text or thinking arrived for a streaming block.
    Delta {
        /// Message.
        message_id: String,
        /// Block index.
        block_index: u32,
        /// Kind.
        kind: DeltaKind,
        /// The new text.
        text: String,
    },
    /// A message is complete (new, or its streamed form reconciled).
    MessageCompleted(String),
    /// A user message entered the conversation (typed here or in another client).
    UserMessage(String),
    /// A tool call passed the gate and is running.
    ToolStarted(String),
    /// A tool call has its result.
    ToolFinished(String),
    /// A request now waits for an answer (first time seen).
    RequestAdded(String),
    /// A request was answered.
    RequestResolved {
        /// Request.
        request_id: String,
        /// Who answered.
        source: Option<String>,
    },
    /// Mode, model or reasoning level changed.
    Settings,
    /// Usage arrived.
    Usage,
    /// An error event.
    Error(ErrorEvent),
}
