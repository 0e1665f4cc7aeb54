//! The events that ask a person something or answer a command: permission and UI
//! requests, their resolutions, and `response`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ErrorBody;
use crate::permission::PermissionAnswer;
use crate::types::{NotifyType, PermissionChoice, PermissionDecision, PermissionDetail, UiKind};

/// `permission_request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionRequest {
    /// Routing id (the requesting agent, also for delegated requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Random request id.
    pub request_id: String,
    /// Tool.
    pub tool_name: String,
    /// Tool input.
    pub input: Value,
    /// Question for the user.
    pub prompt: String,
    /// Legacy options.
    pub options: Vec<PermissionDecision>,
    /// Presentation details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<PermissionDetail>>,
    /// Server-built choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<PermissionChoice>>,
    /// Additive: the tool call this request gates (the `tool_call_id` of its
    /// `message_delta`/`tool_call` events), so a client matches the two exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// `permission_resolved`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionResolved {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Request id.
    pub request_id: String,
    /// The winning answer.
    #[serde(flatten)]
    pub answer: PermissionAnswer,
    /// Who answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// `ui_request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UiRequest {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Random request id.
    pub request_id: String,
    /// Dialog kind.
    pub kind: UiKind,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Options of a select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// Placeholder of an input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// Prefill of an input or editor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill: Option<String>,
    /// Severity of a notify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify_type: Option<NotifyType>,
}

/// `ui_resolved`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UiResolved {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Request id.
    pub request_id: String,
    /// The answer.
    #[serde(default)]
    pub value: Value,
}

/// `response` (§9.3); `id` and `command` are absent only when the command's id could
/// not be read (§16 item 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Response {
    /// The command's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The command's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Outcome.
    pub success: bool,
    /// Result data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}
