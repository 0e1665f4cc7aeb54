//! The events that state an agent's session and settings: `hello`, `sync`, `status`, and
//! the `*_changed` notices.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::requests::{PermissionRequest, UiRequest};
use crate::types::{AgentStatus, Message, ModelDescriptor};

/// `hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Hello {
    /// Semver of the protocol.
    pub protocol_version: String,
    /// Build of the server.
    pub server_version: String,
    /// Feature strings.
    pub capabilities: Vec<String>,
}

/// The live message window of a `sync`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LiveWindow {
    /// Messages after the last compaction (within the byte budget).
    pub messages: Vec<Message>,
    /// Index of the last compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_index: Option<u64>,
    /// Additive (§16 item 9): first entry id kept when older ones were cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_before: Option<String>,
    /// Additive: ids of the messages after which an aborted turn stopped, so a reloaded
    /// conversation says "interrupted" where the live one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_after: Option<Vec<String>>,
    /// Additive: the answers to this window's permission requests, oldest first, so a
    /// reloaded conversation says who answered each (docs/protocol.md, "Recorded permission answers").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_answers: Option<Vec<crate::permission::PermissionAnswered>>,
}

/// A pending request re-shown in `sync`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum PendingRequest {
    /// A pending permission request.
    #[serde(rename = "permission_request")]
    Permission(Box<PermissionRequest>),
    /// A pending UI request.
    #[serde(rename = "ui_request")]
    Ui(UiRequest),
}

/// `sync`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sync {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Agent status.
    pub status: AgentStatus,
    /// Active mode.
    pub mode: String,
    /// The runtime's capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
    /// Runtime generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_epoch: Option<u64>,
    /// Additive (§16 item 2): the agent's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Live window.
    pub live_window: LiveWindow,
    /// Requests still waiting for an answer.
    #[serde(default)]
    pub pending_requests: Vec<PendingRequest>,
}

/// `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatusEvent {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// New status.
    pub status: AgentStatus,
    /// Detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The literal `"next_provider_call"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Effective {
    /// Applied at the next provider-call boundary.
    #[default]
    NextProviderCall,
}

/// `model_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelChanged {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Previous model.
    pub previous: ModelDescriptor,
    /// New model.
    pub active: ModelDescriptor,
    /// When it applies.
    pub effective: Effective,
    /// The runtime's capabilities after the switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
}

/// `mode_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModeChanged {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Previous mode.
    pub previous_mode: String,
    /// New mode.
    pub mode: String,
}

/// `tools_changed` (additive): the whole tool list now, and which MCP server
/// caused the change and its state, so a client can show "server X failed: why".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolsChanged {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Every tool the model is offered now, in order.
    pub tools: Vec<String>,
    /// The MCP server whose change this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<McpServerStatus>,
}

/// An MCP server's state in a `tools_changed` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerStatus {
    /// The server's name (the `SERVER` of `mcp__SERVER__TOOL`).
    pub name: String,
    /// `starting`, `ready`, `failed`, `stopped` or `not_approved`.
    pub state: String,
    /// Why it failed or is not started (never a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A failed server is being restarted (with backoff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarting: Option<bool>,
    /// Its tools now (`mcp__SERVER__TOOL` names).
    #[serde(default)]
    pub tools: Vec<String>,
}

/// `reasoning_level_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReasoningLevelChanged {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The model.
    pub model: ModelDescriptor,
    /// Previous level.
    pub previous: String,
    /// New level.
    pub active: String,
    /// When it applies.
    pub effective: Effective,
}
