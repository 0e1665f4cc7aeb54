//! The streaming trait every provider implements, and the normalized stream it yields.
//! The Runtime sees providers only through this (ARCHITECTURE §4.6).

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use serde_json::Value;
use shard_protocol::types::{Message, Usage};
use tokio_util::sync::CancellationToken;

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments object.
    pub input_schema: Value,
}

/// One provider call.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The provider's model name (not the catalog id).
    pub model: String,
    /// System prompt.
    pub system: String,
    /// Conversation so far, oldest first. Tool results are `user` messages holding
    /// `tool_result` blocks; thinking blocks keep their provider signatures. Shared with
    /// the caller's context: a request copies pointers, never message bodies or images.
    pub messages: Vec<Arc<Message>>,
    /// Tools the model may call; shared, since the list rarely changes between calls.
    pub tools: Arc<[ToolSpec]>,
    /// Maximum output tokens.
    pub max_output_tokens: Option<u64>,
    /// Reasoning effort level id from the catalog, when the model supports it.
    pub reasoning_effort: Option<String>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// Finished its answer.
    EndTurn,
    /// Wants tool results.
    ToolUse,
    /// Hit the output limit.
    MaxTokens,
    /// Refused.
    Refusal,
    /// The provider paused a long turn; call again to continue.
    PauseTurn,
    /// Anything else, verbatim.
    Other(String),
}

/// One normalized streaming event. Block indexes are per call, dense and ordered as the
/// blocks appear in the assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Text appended to text block `index` (the block starts at its first delta).
    TextDelta {
        /// Block index.
        index: u32,
        /// Text.
        text: String,
    },
    /// Reasoning text appended to thinking block `index`.
    ThinkingDelta {
        /// Block index.
        index: u32,
        /// Text.
        text: String,
    },
    /// The continuity token of thinking block `index` (Anthropic signature, OpenAI
    /// encrypted reasoning), to be sent back on later requests.
    ThinkingSignature {
        /// Block index.
        index: u32,
        /// Opaque token.
        signature: String,
    },
    /// A tool call block begins.
    ToolCallStart {
        /// Block index.
        index: u32,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallArgsDelta {
        /// Block index.
        index: u32,
        /// JSON fragment.
        json: String,
    },
    /// Usage of this call, normalized: `input` excludes cache reads and writes. May
    /// arrive more than once; the last one wins.
    Usage(Usage),
    /// A retry is about to happen (only before any delta of this call was yielded).
    Retrying {
        /// Attempt number starting at 1.
        attempt: u32,
        /// Delay before it, in milliseconds.
        delay_ms: u64,
        /// Why.
        reason: String,
    },
    /// The call finished normally.
    Done {
        /// Why the model stopped.
        stop_reason: StopReason,
    },
}

/// A failed provider call. Messages never contain an API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// Bad or missing credentials (HTTP 401/403); never retried.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// Retries exhausted or a non-retryable HTTP error.
    #[error("{0}")]
    Http(String),
    /// The stream broke or could not be parsed.
    #[error("stream error: {0}")]
    Stream(String),
    /// The request could not be built (unknown model, bad config).
    #[error("{0}")]
    Config(String),
    /// Cancelled by the caller.
    #[error("cancelled")]
    Cancelled,
}

/// The stream of one provider call.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// A model provider. `stream` must return quickly; the work happens as the stream is
/// polled. Cancelling `cancel` (or dropping the stream) drops the HTTP connection.
pub trait Provider: Send + Sync {
    /// Provider name, e.g. `anthropic`.
    fn name(&self) -> &str;

    /// Starts one call.
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> EventStream;
}
