//! The error-code registry of PROTOCOL §8.

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An error code. The registry is extensible, so a code this build does not know is
/// kept as [`ErrorCode::Other`] rather than failing to decode.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Malformed message, bad JSON, failed validation.
    InvalidRequest,
    /// No durable Agent/session identity exists.
    NotFound,
    /// Per-agent command without a valid attachment.
    NotAttached,
    /// The server refused the operation.
    PermissionDenied,
    /// Version mismatch, message out of sequence.
    ProtocolError,
    /// An ask hit the headless timeout.
    Timeout,
    /// The Runtime failed to start or become ready; retry is safe.
    RuntimeStartFailed,
    /// A session cannot be safely restored.
    SessionCorrupt,
    /// Unexpected server-side failure.
    InternalError,
    /// The LLM provider call failed.
    ProviderError,
    /// A tool returned an error.
    ToolError,
    /// Conflicts with the current state.
    Conflict,
    /// The provider refused the credentials or the account behind them (billing, quota):
    /// the user must act; retrying cannot help.
    ProviderAuth,
    /// The provider's rate limit held after the retries.
    ProviderRateLimited,
    /// The provider was overloaded after the retries.
    ProviderOverloaded,
    /// The request does not fit the model's context window: compact or start afresh.
    ContextWindowExceeded,
    /// The provider rejected the request itself (bad parameter, unknown model).
    ProviderInvalidRequest,
    /// The provider could not be reached, or the connection broke.
    ProviderUnreachable,
    /// A code from a newer server.
    Other(String),
}

impl ErrorCode {
    /// Every code of the registry: v0.1's, then the provider codes this project added
    /// (docs/protocol.md, "Provider error codes").
    pub const KNOWN: [ErrorCode; 18] = [
        ErrorCode::InvalidRequest,
        ErrorCode::NotFound,
        ErrorCode::NotAttached,
        ErrorCode::PermissionDenied,
        ErrorCode::ProtocolError,
        ErrorCode::Timeout,
        ErrorCode::RuntimeStartFailed,
        ErrorCode::SessionCorrupt,
        ErrorCode::InternalError,
        ErrorCode::ProviderError,
        ErrorCode::ToolError,
        ErrorCode::Conflict,
        ErrorCode::ProviderAuth,
        ErrorCode::ProviderRateLimited,
        ErrorCode::ProviderOverloaded,
        ErrorCode::ContextWindowExceeded,
        ErrorCode::ProviderInvalidRequest,
        ErrorCode::ProviderUnreachable,
    ];

    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::NotAttached => "NOT_ATTACHED",
            ErrorCode::PermissionDenied => "PERMISSION_DENIED",
            ErrorCode::ProtocolError => "PROTOCOL_ERROR",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::RuntimeStartFailed => "RUNTIME_START_FAILED",
            ErrorCode::SessionCorrupt => "SESSION_CORRUPT",
            ErrorCode::InternalError => "INTERNAL_ERROR",
            ErrorCode::ProviderError => "PROVIDER_ERROR",
            ErrorCode::ToolError => "TOOL_ERROR",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::ProviderAuth => "PROVIDER_AUTH",
            ErrorCode::ProviderRateLimited => "PROVIDER_RATE_LIMITED",
            ErrorCode::ProviderOverloaded => "PROVIDER_OVERLOADED",
            ErrorCode::ContextWindowExceeded => "CONTEXT_WINDOW_EXCEEDED",
            ErrorCode::ProviderInvalidRequest => "PROVIDER_INVALID_REQUEST",
            ErrorCode::ProviderUnreachable => "PROVIDER_UNREACHABLE",
            ErrorCode::Other(s) => s,
        }
    }

    /// Parses a wire string; unknown codes become [`ErrorCode::Other`].
    pub fn parse(s: &str) -> ErrorCode {
        ErrorCode::KNOWN
            .iter()
            .find(|c| c.as_str() == s)
            .cloned()
            .unwrap_or_else(|| ErrorCode::Other(s.to_string()))
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Cow::<'de, str>::deserialize(d)?;
        Ok(ErrorCode::parse(&s))
    }
}

impl JsonSchema for ErrorCode {
    fn schema_name() -> Cow<'static, str> {
        "ErrorCode".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let known: Vec<&str> = ErrorCode::KNOWN.iter().map(|c| c.as_str()).collect();
        schemars::json_schema!({
            "description": "Error code; the registry is extensible, so clients accept other strings.",
            "anyOf": [ { "type": "string", "enum": known }, { "type": "string" } ]
        })
    }
}

/// The `error` object of a failed `response`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// Code.
    pub code: ErrorCode,
    /// Human-readable message.
    pub message: String,
    /// Typed detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ErrorBody {
    /// An error with no data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            code,
            message: message.into(),
            data: None,
        }
    }
}
