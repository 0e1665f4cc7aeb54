//! What a provider's error means: the [`ErrorKind`] of an HTTP error (status, headers,
//! body) or of an error event inside a stream, for the three APIs and compatible servers.
//!
//! The bodies recognised are the documented ones: Anthropic's
//! `{"type":"error","error":{"type":…,"message":…}}`, OpenAI's
//! `{"error":{"message":…,"type":…,"param":…,"code":…}}`, and the Responses API's stream
//! `error` event / `response.failed` (`code`, `message`). Context overflow in particular:
//! Anthropic answers 400 `invalid_request_error` "prompt is too long: N tokens > M maximum"
//! (or "input length and `max_tokens` exceed context limit"), both OpenAI APIs answer
//! `code: "context_length_exceeded"`, and OpenAI-compatible servers say "maximum context
//! length" in the message.

use std::time::Duration;

use serde_json::Value;

use crate::provider::ErrorKind;

/// The fields of a JSON error object that say what happened.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ErrorFields {
    /// `error.type` (Anthropic, OpenAI).
    pub kind: Option<String>,
    /// `error.code` (OpenAI), as text even when numeric.
    pub code: Option<String>,
    /// `error.message`.
    pub message: Option<String>,
}

impl ErrorFields {
    /// The fields of a parsed error document: its `error` object when it has one (the
    /// `response.error` of `response.failed` included), else the document itself.
    pub fn of(v: &Value) -> ErrorFields {
        let err = v
            .get("error")
            .filter(|e| e.is_object())
            .or_else(|| v.pointer("/response/error").filter(|e| e.is_object()))
            .unwrap_or(v);
        let text = |k: &str| match err.get(k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        ErrorFields {
            // The top-level `type` of an event (`error`) is not the error's type.
            kind: text("type").filter(|t| t != "error"),
            code: text("code"),
            message: text("message"),
        }
    }

    /// The fields of an error body, when it is JSON.
    pub fn parse(body: &str) -> Option<ErrorFields> {
        serde_json::from_str::<Value>(body)
            .ok()
            .map(|v| ErrorFields::of(&v))
    }

    /// What the fields alone say, when they say something known.
    pub fn kind(&self) -> Option<ErrorKind> {
        let names = [self.kind.as_deref(), self.code.as_deref()];
        let named = |list: &[&str]| names.iter().flatten().any(|n| list.contains(n));
        if named(&[
            "rate_limit_error",
            "rate_limit_exceeded",
            "slow_down",
            "429",
        ]) {
            return Some(ErrorKind::RateLimited { retry_after: None });
        }
        if self.is_context_overflow() {
            return Some(ErrorKind::ContextWindowExceeded);
        }
        if named(&[
            "authentication_error",
            "permission_error",
            "billing_error",
            "insufficient_quota",
            "invalid_api_key",
        ]) {
            return Some(ErrorKind::Auth);
        }
        let message = self.message.as_deref().unwrap_or("").to_ascii_lowercase();
        if named(&[
            "overloaded_error",
            "server_is_overloaded",
            "overloaded",
            "529",
        ]) || message.contains("overloaded")
        {
            return Some(ErrorKind::Overloaded);
        }
        let status = self.code.as_deref().and_then(|c| c.parse::<u16>().ok());
        if named(&[
            "api_error",
            "server_error",
            "internal_error",
            "timeout_error",
        ]) || status.is_some_and(|c| c >= 500)
        {
            return Some(ErrorKind::Server);
        }
        if matches!(status, Some(401..=403)) {
            return Some(ErrorKind::Auth);
        }
        if named(&[
            "invalid_request_error",
            "not_found_error",
            "request_too_large",
            "invalid_prompt",
        ]) || status.is_some_and(|c| (400..500).contains(&c))
        {
            return Some(ErrorKind::InvalidRequest);
        }
        None
    }

    /// Whether the request was too large for the model's context window.
    pub fn is_context_overflow(&self) -> bool {
        if self.code.as_deref() == Some("context_length_exceeded") {
            return true;
        }
        let message = self.message.as_deref().unwrap_or("").to_ascii_lowercase();
        [
            "prompt is too long",
            "exceed context limit",
            "maximum context length",
            "exceeds the context window",
            "exceeds the available context size",
            "context length exceeded",
        ]
        .iter()
        .any(|p| message.contains(p))
    }
}

/// The kind of an HTTP error response. `retry_after` is the delay the server asked for.
pub fn classify_http(status: u16, body: &str, retry_after: Option<Duration>) -> ErrorKind {
    let from_body = ErrorFields::parse(body).and_then(|f| f.kind());
    match status {
        401..=403 => ErrorKind::Auth,
        // A spent quota is answered 429 too, but no wait fixes it.
        429 => match from_body {
            Some(ErrorKind::Auth) => ErrorKind::Auth,
            _ => ErrorKind::RateLimited { retry_after },
        },
        503 | 529 => ErrorKind::Overloaded,
        408 => ErrorKind::Network,
        409 => ErrorKind::Server,
        400..=499 => match from_body {
            Some(ErrorKind::ContextWindowExceeded) => ErrorKind::ContextWindowExceeded,
            _ => ErrorKind::InvalidRequest,
        },
        _ => match from_body {
            Some(ErrorKind::Overloaded) => ErrorKind::Overloaded,
            _ => ErrorKind::Server,
        },
    }
}

/// The kind of an error reported inside a stream that began with HTTP 200: what its
/// fields say, else a server-side failure.
pub fn classify_event(v: &Value) -> ErrorKind {
    ErrorFields::of(v).kind().unwrap_or(ErrorKind::Server)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn statuses_and_bodies() {
        let anthropic = |t: &str, m: &str| {
            format!(r#"{{"type":"error","error":{{"type":"{t}","message":"{m}"}}}}"#)
        };
        let openai = |t: &str, c: &str, m: &str| {
            format!(r#"{{"error":{{"message":"{m}","type":"{t}","param":null,"code":"{c}"}}}}"#)
        };
        let wait = Some(Duration::from_secs(2));
        assert_eq!(
            classify_http(429, &anthropic("rate_limit_error", "slow"), wait),
            ErrorKind::RateLimited { retry_after: wait }
        );
        assert_eq!(
            classify_http(
                429,
                &openai("insufficient_quota", "insufficient_quota", "quota"),
                None
            ),
            ErrorKind::Auth
        );
        assert_eq!(
            classify_http(401, &anthropic("authentication_error", "x"), None),
            ErrorKind::Auth
        );
        assert_eq!(
            classify_http(529, &anthropic("overloaded_error", "Overloaded"), None),
            ErrorKind::Overloaded
        );
        assert_eq!(classify_http(503, "upstream", None), ErrorKind::Overloaded);
        assert_eq!(classify_http(500, "", None), ErrorKind::Server);
        assert_eq!(classify_http(408, "", None), ErrorKind::Network);
        assert_eq!(
            classify_http(404, &anthropic("not_found_error", "model: x"), None),
            ErrorKind::InvalidRequest
        );
        assert_eq!(
            classify_http(400, "not json at all", None),
            ErrorKind::InvalidRequest
        );
        // A rate limit counted in tokens is not a context overflow.
        assert_eq!(
            classify_http(
                429,
                &openai(
                    "tokens",
                    "rate_limit_exceeded",
                    "Request too large for gpt-4o on tokens per min (TPM)"
                ),
                None
            ),
            ErrorKind::RateLimited { retry_after: None }
        );
    }

    #[test]
    fn in_stream_errors() {
        let v: Value = serde_json::from_str(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap();
        assert_eq!(classify_event(&v), ErrorKind::Overloaded);
        let v: Value = serde_json::from_str(
            r#"{"type":"error","code":"server_error","message":"boom","param":null}"#,
        )
        .unwrap();
        assert_eq!(classify_event(&v), ErrorKind::Server);
        let v: Value = serde_json::from_str(
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"rate_limit_exceeded","message":"slow"}}}"#,
        )
        .unwrap();
        assert_eq!(
            classify_event(&v),
            ErrorKind::RateLimited { retry_after: None }
        );
        let v: Value =
            serde_json::from_str(r#"{"error":{"code":502,"message":"bad gateway"}}"#).unwrap();
        assert_eq!(classify_event(&v), ErrorKind::Server);
    }
}
