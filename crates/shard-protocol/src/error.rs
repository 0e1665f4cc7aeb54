//! The error-code registry of docs/protocol.md §8.

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
    /// A code from a newer server.
    Other(String),
}

impl ErrorCode {
    /// Every code of the registry (docs/protocol.md §8). A failed model call is always
    /// `PROVIDER_ERROR`; what kind of failure travels beside it
    /// ([`ProviderErrorKind`]), so a client written against §8 keeps matching.
    pub const KNOWN: [ErrorCode; 12] = [
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

/// Display, serde and JSON Schema for an extensible string registry: `$t` has `KNOWN`,
/// `as_str` and `parse` (unknown strings kept as `Other`), so it travels as a plain
/// string and the schema lists the known values while accepting any string.
macro_rules! string_registry {
    ($t:ident, $description:literal) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = Cow::<'de, str>::deserialize(d)?;
                Ok($t::parse(&s))
            }
        }

        impl JsonSchema for $t {
            fn schema_name() -> Cow<'static, str> {
                stringify!($t).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let known: Vec<&str> = $t::KNOWN.iter().map(|c| c.as_str()).collect();
                schemars::json_schema!({
                    "description": $description,
                    "anyOf": [ { "type": "string", "enum": known }, { "type": "string" } ]
                })
            }
        }
    };
}

string_registry!(
    ErrorCode,
    "Error code; the registry is extensible, so clients accept other strings."
);

/// What kind of failure a `PROVIDER_ERROR` was, carried beside the code so that a
/// client can act on it (ask for a key, wait, compact) while one that knows only the
/// code keeps working. Extensible like the code: a kind this build does not know is
/// kept as [`ProviderErrorKind::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProviderErrorKind {
    /// The provider refused the credentials or the account behind them (billing,
    /// quota): the user must act; retrying cannot help.
    Auth,
    /// The provider's rate limit held after the retries.
    RateLimited,
    /// The provider was overloaded after the retries.
    Overloaded,
    /// The request does not fit the model's context window: compact or start afresh.
    ContextWindowExceeded,
    /// The provider rejected the request itself (bad parameter, unknown model).
    InvalidRequest,
    /// The provider could not be reached, or the connection broke.
    Network,
    /// The provider failed on its side, or sent something that cannot be understood.
    Server,
    /// A kind from a newer server.
    Other(String),
}

impl ProviderErrorKind {
    /// Every kind this build knows.
    pub const KNOWN: [ProviderErrorKind; 7] = [
        ProviderErrorKind::Auth,
        ProviderErrorKind::RateLimited,
        ProviderErrorKind::Overloaded,
        ProviderErrorKind::ContextWindowExceeded,
        ProviderErrorKind::InvalidRequest,
        ProviderErrorKind::Network,
        ProviderErrorKind::Server,
    ];

    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            ProviderErrorKind::Auth => "auth",
            ProviderErrorKind::RateLimited => "rate_limited",
            ProviderErrorKind::Overloaded => "overloaded",
            ProviderErrorKind::ContextWindowExceeded => "context_window_exceeded",
            ProviderErrorKind::InvalidRequest => "invalid_request",
            ProviderErrorKind::Network => "network",
            ProviderErrorKind::Server => "server",
            ProviderErrorKind::Other(s) => s,
        }
    }

    /// Parses a wire string; unknown kinds become [`ProviderErrorKind::Other`].
    pub fn parse(s: &str) -> ProviderErrorKind {
        ProviderErrorKind::KNOWN
            .iter()
            .find(|k| k.as_str() == s)
            .cloned()
            .unwrap_or_else(|| ProviderErrorKind::Other(s.to_string()))
    }
}

string_registry!(
    ProviderErrorKind,
    "Kind of a PROVIDER_ERROR; extensible, so clients accept other strings."
);

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
