//! The events of a turn: its start, the streamed and complete messages, tool calls and
//! results, usage, compaction, errors, and its end.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ErrorCode;
use crate::types::{Message, RenderDescriptor, ToolResultContent, Usage};

/// `turn_start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStart {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Turn id.
    pub turn_id: String,
}

/// Kind of a streamed block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeltaKind {
    /// Text.
    Text,
    /// A tool call's arguments.
    ToolCall,
    /// Reasoning.
    Thinking,
}

/// `message_delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageDelta {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Message being streamed.
    pub message_id: String,
    /// Block index.
    pub block_index: u32,
    /// Block kind.
    pub kind: DeltaKind,
    /// Text to append (text, thinking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_delta: Option<String>,
    /// Tool call id (first delta of a tool_call block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool name (first delta of a tool_call block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// JSON fragment of the arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_delta: Option<String>,
}

/// `message_complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MessageComplete {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Message id.
    pub message_id: String,
    /// The whole message.
    pub message: Message,
}

/// `user_message` (additive in 0.1.x): a user message entered the conversation — a prompt
/// as its turn starts, a steer as it is delivered, a follow-up as its turn starts — and
/// was persisted. It exists so every attached client shows what another client typed at
/// once, not at its next `sync`; a client that does not know it ignores it and sees the
/// message in `sync` as before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserMessage {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Message id (the transcript entry's id, as in `sync`).
    pub message_id: String,
    /// The whole message (`role: "user"`, its text and images).
    pub message: Message,
}

/// Which file operation a `file_request` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileOp {
    /// Send the file's text.
    Read,
    /// Replace the file's text with `content`.
    Write,
}

/// `file_request` (additive, 0.1.x): after `client_files`, the Runtime's file tools ask the
/// client for a file (its editor buffer, saved or not) or to write one, and wait for a
/// `file_response` with the same `request_id`. Only after the permission gate allowed the
/// tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileRequest {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Random request id.
    pub request_id: String,
    /// What to do.
    pub op: FileOp,
    /// Absolute path.
    pub path: String,
    /// The new text (write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// `tool_call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallEvent {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Call id.
    pub tool_call_id: String,
    /// Tool name.
    pub name: String,
    /// Arguments.
    pub args: serde_json::Map<String, Value>,
    /// Start-time render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<RenderDescriptor>,
    /// True for read-only tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// `tool_result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResultEvent {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Call id.
    pub tool_call_id: String,
    /// Output.
    pub content: ToolResultContent,
    /// True on failure or refusal.
    pub is_error: bool,
    /// Exit code of a process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Wall-clock duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Result render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<RenderDescriptor>,
    /// Additive: images that come with the result beside `content` (an MCP tool
    /// answering text and a screenshot); the model saw them too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<crate::types::Image>>,
}

/// `turn_end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnEnd {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Turn id.
    pub turn_id: String,
    /// Total usage of the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Additive: `true` when the turn was aborted (Esc, Ctrl-C, `abort`) rather than
    /// finished, so every client can say "interrupted" where it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<bool>,
    /// Additive (0.1.x): how the turn ended — the last model call's stop (`end_turn`,
    /// `max_tokens`, `refusal`, …), `aborted`, or `error`. Editor bridges (ACP) answer a
    /// prompt with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// `usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UsageEvent {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The usage.
    #[serde(flatten)]
    pub usage: Usage,
}

/// `compaction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CompactionEvent {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Compaction index.
    pub index: u64,
    /// Tokens before.
    pub tokens_before: u64,
    /// Tokens after.
    pub tokens_after: u64,
    /// First entry kept.
    pub first_kept_entry_id: String,
    /// `[first, last]` ids summarized.
    pub message_range: [String; 2],
}

/// `error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorEvent {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Code.
    pub code: ErrorCode,
    /// Message.
    pub message: String,
    /// The agent cannot continue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fatal: Option<bool>,
    /// Additive, on `PROVIDER_ERROR`: what kind of provider failure it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<crate::error::ProviderErrorKind>,
    /// Additive, on `PROVIDER_ERROR` of kind `rate_limited`: the wait the provider
    /// asked for, in milliseconds, when it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}
