//! Events: what servers send (docs/protocol.md §9.1, §9.3–§9.5, §10.2, §10.3, docs/protocol.md §16).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorBody, ErrorCode};
use crate::permission::PermissionAnswer;
use crate::types::{
    AgentStatus, Message, ModelDescriptor, NotifyType, PermissionChoice, PermissionDecision,
    PermissionDetail, RenderDescriptor, ToolResultContent, UiKind, Usage,
};

/// Every event of the protocol, a closed set tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum Event {
    /// First message on every connection.
    #[serde(rename = "hello")]
    Hello(Hello),
    /// Authoritative agent snapshot.
    #[serde(rename = "sync")]
    Sync(Box<Sync>),
    /// Status transition.
    #[serde(rename = "status")]
    Status(StatusEvent),
    /// A turn began.
    #[serde(rename = "turn_start")]
    TurnStart(TurnStart),
    /// Streaming content.
    #[serde(rename = "message_delta")]
    MessageDelta(MessageDelta),
    /// Final snapshot of a message.
    #[serde(rename = "message_complete")]
    MessageComplete(Box<MessageComplete>),
    /// A tool is about to execute.
    #[serde(rename = "tool_call")]
    ToolCall(ToolCallEvent),
    /// A tool finished (or was refused).
    #[serde(rename = "tool_result")]
    ToolResult(Box<ToolResultEvent>),
    /// A turn ended.
    #[serde(rename = "turn_end")]
    TurnEnd(TurnEnd),
    /// Usage of one provider call.
    #[serde(rename = "usage")]
    Usage(UsageEvent),
    /// A compaction ran.
    #[serde(rename = "compaction")]
    Compaction(CompactionEvent),
    /// Asynchronous error.
    #[serde(rename = "error")]
    Error(ErrorEvent),
    /// A tool call needs permission.
    #[serde(rename = "permission_request")]
    PermissionRequest(Box<PermissionRequest>),
    /// A permission request was answered.
    #[serde(rename = "permission_resolved")]
    PermissionResolved(PermissionResolved),
    /// A UI dialog is requested.
    #[serde(rename = "ui_request")]
    UiRequest(UiRequest),
    /// A UI request was answered.
    #[serde(rename = "ui_resolved")]
    UiResolved(UiResolved),
    /// The reply to a command.
    #[serde(rename = "response")]
    Response(Response),
    /// The model selection changed.
    #[serde(rename = "model_changed")]
    ModelChanged(Box<ModelChanged>),
    /// The mode changed.
    #[serde(rename = "mode_changed")]
    ModeChanged(ModeChanged),
    /// The reasoning level changed.
    #[serde(rename = "reasoning_level_changed")]
    ReasoningLevelChanged(ReasoningLevelChanged),
    /// Additive: the tools offered to the model changed (an MCP server
    /// connected, changed its list, failed or stopped).
    #[serde(rename = "tools_changed")]
    ToolsChanged(ToolsChanged),
    /// A workspace was created.
    #[serde(rename = "workspace_created")]
    WorkspaceCreated(WorkspaceEvent),
    /// A fresh agent was launched in a workspace.
    #[serde(rename = "workspace_attached")]
    WorkspaceAttached(WorkspaceAttached),
    /// A workspace was retired.
    #[serde(rename = "workspace_retired")]
    WorkspaceRetired(WorkspaceEvent),
    /// A workspace operation met a conflict.
    #[serde(rename = "workspace_conflict")]
    WorkspaceConflict(WorkspaceConflict),
    /// An agent's Runtime was spawned.
    #[serde(rename = "agent_spawned")]
    AgentSpawned(AgentSpawned),
    /// An agent was archived (`agent.archive`): clients drop it from their lists.
    #[serde(rename = "agent_archived")]
    AgentArchived(AgentArchived),
    /// An agent's Runtime died.
    #[serde(rename = "agent_exited")]
    AgentExited(AgentExited),
    /// An agent's status changed.
    #[serde(rename = "agent_status_changed")]
    AgentStatusChanged(AgentStatusChanged),
    /// Sanitized activity overview.
    #[serde(rename = "agent_activity")]
    AgentActivity(AgentActivity),
    /// A subagent run changed state.
    #[serde(rename = "subagent_run_changed")]
    SubagentRunChanged(SubagentRunChanged),
    /// A user message entered the conversation (additive, 0.1.x).
    #[serde(rename = "user_message")]
    UserMessage(Box<UserMessage>),
    /// A tool asks the editor client for a file's text or to write it (additive, 0.1.x).
    #[serde(rename = "file_request")]
    FileRequest(Box<FileRequest>),
}

macro_rules! per_agent_slots {
    ($($variant:ident),* $(,)?) => {
        impl Event {
            fn agent_slot(&self) -> Option<&Option<String>> {
                match self {
                    $(Event::$variant(e) => Some(&e.agent_id),)*
                    _ => None,
                }
            }

            fn agent_slot_mut(&mut self) -> Option<&mut Option<String>> {
                match self {
                    $(Event::$variant(e) => Some(&mut e.agent_id),)*
                    _ => None,
                }
            }
        }
    };
}

per_agent_slots!(
    Sync,
    Status,
    TurnStart,
    MessageDelta,
    MessageComplete,
    ToolCall,
    ToolResult,
    TurnEnd,
    Usage,
    Compaction,
    Error,
    PermissionRequest,
    PermissionResolved,
    UiRequest,
    UiResolved,
    ModelChanged,
    ModeChanged,
    ReasoningLevelChanged,
    ToolsChanged,
    UserMessage,
    FileRequest,
);

impl Event {
    /// The wire `type` of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::Hello(_) => "hello",
            Event::Sync(_) => "sync",
            Event::Status(_) => "status",
            Event::TurnStart(_) => "turn_start",
            Event::MessageDelta(_) => "message_delta",
            Event::MessageComplete(_) => "message_complete",
            Event::ToolCall(_) => "tool_call",
            Event::ToolResult(_) => "tool_result",
            Event::TurnEnd(_) => "turn_end",
            Event::Usage(_) => "usage",
            Event::Compaction(_) => "compaction",
            Event::Error(_) => "error",
            Event::PermissionRequest(_) => "permission_request",
            Event::PermissionResolved(_) => "permission_resolved",
            Event::UiRequest(_) => "ui_request",
            Event::UiResolved(_) => "ui_resolved",
            Event::Response(_) => "response",
            Event::ModelChanged(_) => "model_changed",
            Event::ModeChanged(_) => "mode_changed",
            Event::ReasoningLevelChanged(_) => "reasoning_level_changed",
            Event::ToolsChanged(_) => "tools_changed",
            Event::WorkspaceCreated(_) => "workspace_created",
            Event::WorkspaceAttached(_) => "workspace_attached",
            Event::WorkspaceRetired(_) => "workspace_retired",
            Event::WorkspaceConflict(_) => "workspace_conflict",
            Event::AgentSpawned(_) => "agent_spawned",
            Event::AgentArchived(_) => "agent_archived",
            Event::AgentExited(_) => "agent_exited",
            Event::AgentStatusChanged(_) => "agent_status_changed",
            Event::AgentActivity(_) => "agent_activity",
            Event::SubagentRunChanged(_) => "subagent_run_changed",
            Event::UserMessage(_) => "user_message",
            Event::FileRequest(_) => "file_request",
        }
    }

    /// The routing `agent_id` of a per-agent event (`None` for orchestrator events,
    /// responses, `hello`, and per-agent events on a direct connection).
    pub fn routing_agent_id(&self) -> Option<&str> {
        self.agent_slot().and_then(|a| a.as_deref())
    }

    /// True for the per-agent events of docs/protocol.md §9.
    pub fn is_per_agent(&self) -> bool {
        self.agent_slot().is_some()
    }

    /// Tags a per-agent event with its routing `agent_id`; no effect on others.
    pub fn set_routing_agent_id(&mut self, agent_id: Option<String>) {
        if let Some(slot) = self.agent_slot_mut() {
            *slot = agent_id;
        }
    }

    /// A successful response.
    pub fn ok(id: Option<String>, command: &str, data: Option<Value>) -> Event {
        Event::Response(Response {
            id,
            command: Some(command.to_string()),
            success: true,
            data,
            error: None,
        })
    }

    /// A success answering command `K` (the command table in `crate::table`) with its
    /// response type. A response that cannot be encoded becomes an `INTERNAL_ERROR`
    /// response, never a success that lost its data.
    pub fn answer<K: crate::CommandSpec>(id: Option<String>, data: &K::Response) -> Event {
        match K::encode_response(data) {
            Ok(data) => Event::ok(id, K::TYPE, data),
            Err(e) => Event::err(
                id,
                Some(K::TYPE),
                ErrorCode::InternalError,
                format!("could not encode the answer to {}: {e}", K::TYPE),
            ),
        }
    }

    /// A failed response.
    pub fn err(
        id: Option<String>,
        command: Option<&str>,
        code: ErrorCode,
        message: impl Into<String>,
    ) -> Event {
        Event::Response(Response {
            id,
            command: command.map(str::to_string),
            success: false,
            data: None,
            error: Some(ErrorBody::new(code, message)),
        })
    }
}

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

pub use crate::orchestrator::{
    ActivityPhase, AgentActivity, AgentArchived, AgentExited, AgentSpawned, AgentStatusChanged,
    SubagentRunChanged, WorkspaceAttached, WorkspaceConflict, WorkspaceEvent,
};
