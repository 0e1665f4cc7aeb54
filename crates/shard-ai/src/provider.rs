//! The streaming trait every provider implements, and the normalized stream it yields.
//! The Runtime sees providers only through this (docs/architecture.md#models-and-providers).

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use serde_json::Value;
use shard_protocol::ProviderErrorKind;
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

/// What went wrong in a provider call, as far as the caller can act on it. Each kind maps
/// to one wire kind ([`ErrorKind::wire_kind`]) and decides whether the call is
/// retried ([`crate::retry::is_retryable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The credentials, or the account behind them (billing, quota), were refused.
    Auth,
    /// Too many requests; the server may say when to come back.
    RateLimited {
        /// The wait the server asked for (`retry-after-ms` / `retry-after`), if any.
        retry_after: Option<Duration>,
    },
    /// The provider is overloaded (Anthropic 529 `overloaded_error`, HTTP 503).
    Overloaded,
    /// The request does not fit the model's context window.
    ContextWindowExceeded,
    /// The provider rejected the request itself (bad parameter, unknown model).
    InvalidRequest,
    /// The provider could not be reached, did not answer in time, or the connection broke.
    Network,
    /// The provider failed on its side, or sent something that cannot be understood.
    Server,
}

impl ErrorKind {
    /// The kind's name in messages and documentation (`rate_limited`, …).
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::Auth => "auth",
            ErrorKind::RateLimited { .. } => "rate_limited",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::ContextWindowExceeded => "context_window_exceeded",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::Network => "network",
            ErrorKind::Server => "server",
        }
    }

    /// The `kind` a client sees beside `PROVIDER_ERROR` (docs/protocol.md, "Provider
    /// errors").
    pub fn wire_kind(&self) -> ProviderErrorKind {
        match self {
            ErrorKind::Auth => ProviderErrorKind::Auth,
            ErrorKind::RateLimited { .. } => ProviderErrorKind::RateLimited,
            ErrorKind::Overloaded => ProviderErrorKind::Overloaded,
            ErrorKind::ContextWindowExceeded => ProviderErrorKind::ContextWindowExceeded,
            ErrorKind::InvalidRequest => ProviderErrorKind::InvalidRequest,
            ErrorKind::Network => ProviderErrorKind::Network,
            ErrorKind::Server => ProviderErrorKind::Server,
        }
    }

    /// The wait the provider asked for, in milliseconds (rate limits only).
    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            ErrorKind::RateLimited { retry_after } => {
                retry_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            }
            _ => None,
        }
    }
}

/// A failure the provider reported or the transport met: its kind, the HTTP status when
/// there was one, and the message (the provider's own text where it sent one). Never
/// contains an API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// HTTP status; `None` for failures in transit or inside a 200 stream.
    pub status: Option<u16>,
    /// What happened, in one line.
    pub message: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A failed provider call. Messages never contain an API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The provider refused the call or the call failed on its way (see [`ErrorKind`]).
    #[error("{0}")]
    Api(ApiError),
    /// The request could not be built (unknown model, bad config).
    #[error("{0}")]
    Config(String),
    /// Cancelled by the caller.
    #[error("cancelled")]
    Cancelled,
}

impl ProviderError {
    /// A provider or transport failure of `kind`.
    pub fn api(kind: ErrorKind, status: Option<u16>, message: impl Into<String>) -> Self {
        ProviderError::Api(ApiError {
            kind,
            status,
            message: message.into(),
        })
    }

    /// The failure's kind; `None` for configuration errors and cancellation.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            ProviderError::Api(e) => Some(e.kind),
            _ => None,
        }
    }

    /// The `kind` the Runtime reports beside `PROVIDER_ERROR`; `None` for a request that
    /// could not be built, or a cancelled one.
    pub fn wire_kind(&self) -> Option<ProviderErrorKind> {
        self.kind().map(|k| k.wire_kind())
    }
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
