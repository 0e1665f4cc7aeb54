//! Decoding with a precise error: a missing required field or an unknown `type` is an
//! error that still carries the message's `id` when it can be read, so a server can
//! answer `INVALID_REQUEST` to the right request (docs/protocol.md §2).

use serde::Serialize;
use serde_json::Value;

use crate::command::ClientMessage;
use crate::event::Event;

/// Every command `type` of the protocol.
pub const COMMAND_TYPES: &[&str] = crate::Command::TYPES;

/// Every event `type` of the protocol.
pub const EVENT_TYPES: &[&str] = &[
    "hello",
    "sync",
    "status",
    "turn_start",
    "message_delta",
    "message_complete",
    "tool_call",
    "tool_result",
    "turn_end",
    "usage",
    "compaction",
    "error",
    "permission_request",
    "permission_resolved",
    "ui_request",
    "ui_resolved",
    "response",
    "model_changed",
    "mode_changed",
    "reasoning_level_changed",
    "tools_changed",
    "workspace_created",
    "workspace_attached",
    "workspace_retired",
    "workspace_conflict",
    "agent_spawned",
    "agent_archived",
    "agent_exited",
    "agent_status_changed",
    "agent_activity",
    "subagent_run_changed",
    "user_message",
    "file_request",
];

/// Why a line did not decode, with the `id` and `type` when they could be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    /// The message's `id`, when readable.
    pub id: Option<String>,
    /// The message's `type`, when readable.
    pub type_name: Option<String>,
    /// What is wrong, in one line.
    pub message: String,
}

/// Decodes one command line.
pub fn decode_command(line: &[u8]) -> Result<ClientMessage, DecodeError> {
    let msg = serde_json::from_slice::<ClientMessage>(line)
        .map_err(|e| explain(line, e, COMMAND_TYPES, "command"))?;
    reject_numeric_tags(line, &msg)?;
    Ok(msg)
}

/// Decodes one event line, strictly: an unknown `type` is an error.
pub fn decode_event(line: &[u8]) -> Result<Event, DecodeError> {
    let event = serde_json::from_slice::<Event>(line)
        .map_err(|e| explain(line, e, EVENT_TYPES, "event"))?;
    reject_numeric_tags(line, &event)?;
    Ok(event)
}

/// An event as a tolerant client sees it (§16 item 1).
// Boxing `Known` would change the public shape other crates match on; the size gap
// only costs a move per received event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum IncomingEvent {
    /// A known event.
    Known(Event),
    /// An event type from a newer server, kept raw.
    Unknown {
        /// Its `type`.
        type_name: String,
        /// The whole message.
        raw: Value,
    },
}

/// Decodes one event line, keeping an unknown `type` as [`IncomingEvent::Unknown`].
pub fn decode_event_lenient(line: &[u8]) -> Result<IncomingEvent, DecodeError> {
    match decode_event(line) {
        Ok(e) => Ok(IncomingEvent::Known(e)),
        Err(err) => {
            let Ok(raw) = serde_json::from_slice::<Value>(line) else {
                return Err(err);
            };
            match raw.get("type").and_then(Value::as_str) {
                Some(t) if !EVENT_TYPES.contains(&t) => Ok(IncomingEvent::Unknown {
                    type_name: t.to_string(),
                    raw,
                }),
                _ => Err(err),
            }
        }
    }
}

fn explain(line: &[u8], err: serde_json::Error, known: &[&str], what: &str) -> DecodeError {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return DecodeError {
            id: None,
            type_name: None,
            message: format!("malformed JSON: {err}"),
        };
    };
    let Some(obj) = value.as_object() else {
        return DecodeError {
            id: None,
            type_name: None,
            message: format!("expected a JSON object, got {}", kind_of(&value)),
        };
    };
    let id = obj.get("id").and_then(Value::as_str).map(str::to_string);
    let type_name = obj.get("type").and_then(Value::as_str).map(str::to_string);
    let message = match (&type_name, obj.get("type")) {
        (_, None) => "missing field `type`".to_string(),
        (None, Some(_)) => "field `type` must be a string".to_string(),
        (Some(t), _) if !known.contains(&t.as_str()) => format!("unknown {what} type `{t}`"),
        (Some(t), _) => format!("invalid `{t}`: {}", strip_position(&err.to_string())),
    };
    DecodeError {
        id,
        type_name,
        message,
    }
}

/// serde accepts a variant *index* for an enum tag that was buffered (through `flatten`
/// or an internally tagged parent), so `{"type":2}` would decode as the third command and
/// `{"kind":0}` as the first render kind. The spec's tags are strings; a number there is
/// malformed. A byte scan keeps the common path free; only a line that may hold a
/// numeric `type`/`kind` (or an escaped key that could spell one) gets the exact check,
/// which compares the decoded message with the input at the tag keys only, so free-form
/// data (tool args, JSON results) may still carry numeric `type` fields.
fn reject_numeric_tags<T: Serialize>(line: &[u8], decoded: &T) -> Result<(), DecodeError> {
    if !may_hold_numeric_tag(line) {
        return Ok(());
    }
    let (Ok(input), Ok(output)) = (
        serde_json::from_slice::<Value>(line),
        serde_json::to_value(decoded),
    ) else {
        return Ok(());
    };
    let Some(key) = numeric_tag(&input, &output) else {
        return Ok(());
    };
    let obj = input.as_object();
    let id = obj
        .and_then(|o| o.get("id"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let type_name = obj
        .and_then(|o| o.get("type"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let message = match &type_name {
        Some(t) => format!("invalid `{t}`: field `{key}` must be a string"),
        None => format!("field `{key}` must be a string"),
    };
    Err(DecodeError {
        id,
        type_name,
        message,
    })
}

/// True when some object key that is `type` or `kind` (or is escaped, so could spell
/// one) has a value starting with a digit. Runs only on lines serde accepted, so the
/// JSON is well formed: outside strings there are no quotes, and every string that is
/// followed by `:` is a key. String bodies are skipped with `memchr`, so a long tool
/// result costs a fraction of the parse itself.
fn may_hold_numeric_tag(line: &[u8]) -> bool {
    let mut i = 0;
    while let Some(open) = memchr::memchr(b'"', &line[i..]).map(|o| i + o) {
        // Find the closing quote, stepping over escapes.
        let mut j = open + 1;
        let mut escaped = false;
        let close = loop {
            let Some(k) = line
                .get(j..)
                .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                .map(|o| j + o)
            else {
                return false;
            };
            if line[k] == b'"' {
                break k;
            }
            escaped = true;
            j = k + 2;
        };
        let key = &line[open + 1..close];
        let after = line[close + 1..].trim_ascii_start();
        if let Some(value) = after.strip_prefix(b":")
            && (escaped || key == b"type" || key == b"kind")
            && value
                .trim_ascii_start()
                .first()
                .is_some_and(u8::is_ascii_digit)
        {
            return true;
        }
        i = close + 1;
    }
    false
}

/// The first tag key whose decoded value is a string but whose input value is a number.
fn numeric_tag(input: &Value, output: &Value) -> Option<&'static str> {
    match (input, output) {
        (Value::Object(i), Value::Object(o)) => o.iter().find_map(|(k, ov)| {
            let iv = i.get(k)?;
            let tag = match k.as_str() {
                "type" => Some("type"),
                "kind" => Some("kind"),
                _ => None,
            };
            match tag {
                Some(tag) if ov.is_string() && iv.is_number() => Some(tag),
                _ => numeric_tag(iv, ov),
            }
        }),
        (Value::Array(i), Value::Array(o)) => i.iter().zip(o).find_map(|(i, o)| numeric_tag(i, o)),
        _ => None,
    }
}

fn strip_position(msg: &str) -> &str {
    msg.find(" at line ").map_or(msg, |i| &msg[..i])
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
