//! Events: what servers send (docs/protocol.md §9.1, §9.3–§9.5, §10.2, §10.3, docs/protocol.md §16).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorBody, ErrorCode};

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

mod requests;
mod session;
mod turn;

pub use requests::*;
pub use session::*;
pub use turn::*;

pub use crate::orchestrator::{
    ActivityPhase, AgentActivity, AgentArchived, AgentExited, AgentSpawned, AgentStatusChanged,
    SubagentRunChanged, WorkspaceAttached, WorkspaceConflict, WorkspaceEvent,
};
