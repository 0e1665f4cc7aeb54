//! Commands: what clients send (docs/protocol.md §9.2, §9.5, §10.1, §10.1a, §10.3, docs/protocol.md §16).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::permission::PermissionAnswer;
use crate::responses::{
    AgentCreated, AgentsData, AttachData, ListModelsData, ListModesData, ReasoningLevelsData,
    SessionActivated, SessionListData, SessionOpData, SetModeData, SetModelData,
    SetReasoningLevelData, SteerData, SubagentCreated, SubagentRelaunched, SubagentStatusData,
    SubagentSteerData, SubagentStopData, SubagentWaitData, TerminateData,
};
use crate::table::command_table;
use crate::types::{Image, PermissionDecision, UiValue};
use crate::workspace::{
    WorkspaceLaunched, WorkspaceListData, WorkspaceRetiredData, WorkspaceStatusData,
};

/// A command with its optional correlation `id` (docs/protocol.md §5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientMessage {
    /// Correlation id, echoed by the `response`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The command itself, tagged by `type`.
    #[serde(flatten)]
    pub command: Command,
}

impl ClientMessage {
    /// A command with a correlation id.
    pub fn new(id: impl Into<String>, command: Command) -> Self {
        ClientMessage {
            id: Some(id.into()),
            command,
        }
    }
}

// The command table: one row per command (variant, request type, wire name, response
// type); `crate::table` says what it generates.
command_table! {
    /// Every command of the protocol, a closed set tagged by `type`.
    pub enum Command {
        /// Send a user message.
        Prompt(Prompt) = "prompt" => (),
        /// Shorthand for a prompt with `streaming_behavior: "steer"`.
        Steer(Steer) = "steer" => Option<SteerData>,
        /// Cancel the current turn.
        Abort(AgentTarget) = "abort" => (),
        /// Switch mode.
        SetMode(SetMode) = "set_mode" => SetModeData,
        /// List modes.
        ListModes(AgentTarget) = "list_modes" => ListModesData,
        /// List models.
        ListModels(AgentTarget) = "list_models" => ListModelsData,
        /// Select a model for the next provider call.
        SetModel(SetModel) = "set_model" => SetModelData,
        /// List reasoning levels of the active model.
        ListReasoningLevels(AgentTarget) = "list_reasoning_levels" => ReasoningLevelsData,
        /// Select a reasoning level.
        SetReasoningLevel(SetReasoningLevel) = "set_reasoning_level" => SetReasoningLevelData,
        /// Session list / compact / fork.
        SessionOp(SessionOp) = "session_op" => SessionOpData,
        /// Answer a permission request.
        PermissionResponse(PermissionResponse) = "permission_response" => (),
        /// Answer a UI request.
        UiResponse(UiResponse) = "ui_response" => (),
        /// Additive (§16 item 5): ask the Runtime for an authoritative `sync`.
        RequestSync(AgentTarget) = "request_sync" => (),
        /// Additive (0.1.x): an editor client offers its open files; the Runtime's `read`,
        /// `write` and `edit` then go through `file_request` / `file_response`.
        ClientFiles(ClientFiles) = "client_files" => (),
        /// Additive (0.1.x): the answer to a `file_request`.
        FileResponse(FileResponse) = "file_response" => (),
        /// List agents (additive: one page of them).
        AgentList(AgentListQuery) = "agent.list" => AgentsData,
        /// Additive: the sessions of a working directory, forks included.
        SessionList(SessionListQuery) = "session.list" => SessionListData,
        /// Additive: the agent's next Runtime generation opens another session.
        SessionActivate(SessionActivate) = "session.activate" => SessionActivated,
        /// Create (or adopt) an agent.
        AgentCreate(Box<AgentCreate>) = "agent.create" => AgentCreated,
        /// Attach to an agent's stream.
        AgentAttach(AgentAttach) = "agent.attach" => AttachData,
        /// Detach from an agent's stream.
        AgentDetach(AgentRef) = "agent.detach" => (),
        /// Stop an agent's Runtime once inactive.
        AgentTerminate(AgentRef) = "agent.terminate" => TerminateData,
        /// Kill an agent's Runtime.
        AgentKill(AgentKill) = "agent.kill" => (),
        /// Additive: archive an agent — its Runtime stops, it is listed with `archived: true`
        /// (clients leave it out of their lists), and its session is kept.
        AgentArchive(AgentRef) = "agent.archive" => (),
        /// Status of one or all agents.
        AgentStatus(AgentStatusQuery) = "agent.status" => AgentsData,
        /// Stop the daemon.
        DaemonShutdown(DaemonShutdown) = "daemon.shutdown" => (),
        /// Create a workspace (git worktree) and launch an agent in it.
        WorkspaceCreate(WorkspaceCreate) = "workspace.create" => WorkspaceLaunched,
        /// Launch a fresh agent in an existing workspace.
        WorkspaceAttach(WorkspaceAttach) = "workspace.attach" => WorkspaceLaunched,
        /// List workspaces.
        WorkspaceList(WorkspaceList) = "workspace.list" => WorkspaceListData,
        /// Status of one workspace.
        WorkspaceStatus(WorkspaceRef) = "workspace.status" => WorkspaceStatusData,
        /// Retire a workspace.
        WorkspaceRetire(WorkspaceRetire) = "workspace.retire" => WorkspaceRetiredData,
        /// Launch a background subagent job.
        SubagentCreate(SubagentCreate) = "subagent.create" => SubagentCreated,
        /// Wait for runs to finish.
        SubagentWait(SubagentWait) = "subagent.wait" => SubagentWaitData,
        /// Steer an active run.
        SubagentSteer(SubagentSteer) = "subagent.steer" => SubagentSteerData,
        /// Relaunch a stopped child with a new task.
        SubagentRelaunch(SubagentRelaunch) = "subagent.relaunch" => SubagentRelaunched,
        /// Job and run snapshots.
        SubagentStatus(SubagentStatus) = "subagent.status" => SubagentStatusData,
        /// Cancel a job or run.
        SubagentStop(SubagentStop) = "subagent.stop" => SubagentStopData,
    }
}

impl Command {
    /// The routing `agent_id` of a per-agent command; `None` for orchestrator commands
    /// and for per-agent commands on a direct connection.
    pub fn routing_agent_id(&self) -> Option<&str> {
        self.per_agent_target_ref().and_then(|t| t.as_deref())
    }

    /// True for the per-agent commands of docs/protocol.md §9.
    pub fn is_per_agent(&self) -> bool {
        self.per_agent_target_ref().is_some()
    }

    /// Sets (or clears) the routing `agent_id` of a per-agent command; no effect on
    /// orchestrator commands.
    pub fn set_routing_agent_id(&mut self, agent_id: Option<String>) {
        if let Some(slot) = self.per_agent_target_mut() {
            *slot = agent_id;
        }
    }

    fn per_agent_target_ref(&self) -> Option<&Option<String>> {
        Some(match self {
            Command::Prompt(c) => &c.agent_id,
            Command::Steer(c) => &c.agent_id,
            Command::Abort(c)
            | Command::ListModes(c)
            | Command::ListModels(c)
            | Command::ListReasoningLevels(c)
            | Command::RequestSync(c) => &c.agent_id,
            Command::SetMode(c) => &c.agent_id,
            Command::SetModel(c) => &c.agent_id,
            Command::SetReasoningLevel(c) => &c.agent_id,
            Command::SessionOp(c) => &c.agent_id,
            Command::PermissionResponse(c) => &c.agent_id,
            Command::UiResponse(c) => &c.agent_id,
            Command::ClientFiles(c) => &c.agent_id,
            Command::FileResponse(c) => &c.agent_id,
            _ => return None,
        })
    }

    fn per_agent_target_mut(&mut self) -> Option<&mut Option<String>> {
        Some(match self {
            Command::Prompt(c) => &mut c.agent_id,
            Command::Steer(c) => &mut c.agent_id,
            Command::Abort(c)
            | Command::ListModes(c)
            | Command::ListModels(c)
            | Command::ListReasoningLevels(c)
            | Command::RequestSync(c) => &mut c.agent_id,
            Command::SetMode(c) => &mut c.agent_id,
            Command::SetModel(c) => &mut c.agent_id,
            Command::SetReasoningLevel(c) => &mut c.agent_id,
            Command::SessionOp(c) => &mut c.agent_id,
            Command::PermissionResponse(c) => &mut c.agent_id,
            Command::UiResponse(c) => &mut c.agent_id,
            Command::ClientFiles(c) => &mut c.agent_id,
            Command::FileResponse(c) => &mut c.agent_id,
            _ => return None,
        })
    }
}

/// `session.list`: which directory's sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionListQuery {
    /// The working directory, as agents were created with it.
    pub cwd: String,
}

/// `session.activate`: which agent moves to which session of its cwd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionActivate {
    /// The agent whose session changes.
    pub agent_id: String,
    /// A session of the agent's cwd (as `session.list` lists them, forks included).
    pub session_id: String,
}

/// A command with no payload.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Empty {}

/// `agent.list`. Without fields it lists every agent; the paging fields (additive, 0.1.x)
/// let a client of a daemon with thousands of agents read them a page at a time, in the
/// same order (creation time, then id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentListQuery {
    /// Additive: at most this many agents in the answer (at least one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Additive: list the agents after this cursor, the `next_after` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// A per-agent command whose only field is the routing `agent_id`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentTarget {
    /// Routing id on daemon connections; omitted on direct connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// How a prompt sent mid-turn is delivered (docs/protocol.md §9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StreamingBehavior {
    /// After the current tool calls, before the next model call.
    Steer,
    /// When the agent is fully idle.
    FollowUp,
}

/// `prompt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Prompt {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The user's message.
    pub message: String,
    /// Attached images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<Image>>,
    /// Required mid-turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming_behavior: Option<StreamingBehavior>,
}

/// `steer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Steer {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The message.
    pub message: String,
    /// Attached images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<Image>>,
    /// Strict steer (additive): the message goes into the turn running now (or
    /// the one named by `turn_id`) at its next provider boundary, or nowhere. The response
    /// is sent when that is decided and carries [`crate::responses::SteerData`]: `injected`
    /// with the turn's id, or `conflict` when no such turn runs or it ended first; a
    /// conflicting steer is dropped, never kept for a later turn. Without it a steer sent
    /// between turns starts a turn, and one the turn did not take waits for the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// With `strict`: only this turn may take the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

impl Steer {
    /// True when the steer must land in the running turn or be dropped.
    pub fn is_strict(&self) -> bool {
        self.strict == Some(true) || self.turn_id.is_some()
    }
}

/// `set_mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetMode {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Target mode.
    pub mode: String,
}

/// `set_model`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetModel {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Catalog id of the model.
    pub model: String,
}

/// `set_reasoning_level`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetReasoningLevel {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The active model's id, an optimistic-concurrency precondition.
    pub model: String,
    /// Level id from the catalog.
    pub effort: String,
}

/// Which session operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionOpKind {
    /// List this cwd's sessions.
    List,
    /// Compact the live window.
    Compact,
    /// Fork into a new session.
    Fork,
    /// Additive (0.1.x): read-only page of the messages just before an entry,
    /// so a client can scroll back past `sync.live_window.truncated_before`.
    History,
}

/// Op-specific arguments of `session_op`; `list` takes none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionOpArgs {
    /// `compact`: override of the kept-token budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_recent_tokens: Option<u64>,
    /// `fork`: the entry to fork at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_entry_id: Option<String>,
    /// `history`: the message id to page back from (e.g. `truncated_before`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// `history`: byte budget of the page's serialized messages (default 1 MiB, capped
    /// at the 8 MiB of the live window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

/// `session_op`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionOp {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The operation.
    pub op: SessionOpKind,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<SessionOpArgs>,
}

/// `permission_response`: exactly one of `choice_id` or `decision`; a message carrying
/// both (or neither) fails to decode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PermissionResponseWire", into = "PermissionResponseWire")]
pub struct PermissionResponse {
    /// Routing id.
    pub agent_id: Option<String>,
    /// The request answered.
    pub request_id: String,
    /// The answer.
    pub answer: PermissionAnswer,
    /// Free-text reason, shown to the model on a deny.
    pub reason: Option<String>,
    /// Additive (§16 item 2): who answered; the daemon always overwrites it.
    pub source: Option<String>,
}

/// The wire shape of [`PermissionResponse`], before the one-form rule is checked.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct PermissionResponseWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    request_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    choice_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    decision: Option<PermissionDecision>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<String>,
}

impl TryFrom<PermissionResponseWire> for PermissionResponse {
    type Error = String;

    fn try_from(w: PermissionResponseWire) -> Result<Self, String> {
        let answer = match (w.choice_id, w.decision) {
            (Some(_), Some(_)) => {
                return Err(
                    "permission_response carries both choice_id and decision; send exactly one"
                        .into(),
                );
            }
            (None, None) => {
                return Err("permission_response needs either choice_id or decision".into());
            }
            // docs/protocol.md §9.5: choice ids are non-empty; the schema says the same.
            (Some(choice_id), None) if choice_id.is_empty() => {
                return Err("permission_response choice_id must not be empty".into());
            }
            (Some(choice_id), None) => PermissionAnswer::Choice { choice_id },
            (None, Some(decision)) => PermissionAnswer::Decision { decision },
        };
        Ok(PermissionResponse {
            agent_id: w.agent_id,
            request_id: w.request_id,
            answer,
            reason: w.reason,
            source: w.source,
        })
    }
}

impl From<PermissionResponse> for PermissionResponseWire {
    fn from(r: PermissionResponse) -> Self {
        let (choice_id, decision) = match r.answer {
            PermissionAnswer::Choice { choice_id } => (Some(choice_id), None),
            PermissionAnswer::Decision { decision } => (None, Some(decision)),
        };
        PermissionResponseWire {
            agent_id: r.agent_id,
            request_id: r.request_id,
            choice_id,
            decision,
            reason: r.reason,
            source: r.source,
        }
    }
}

impl JsonSchema for PermissionResponse {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PermissionResponse".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let decision = generator.subschema_for::<PermissionDecision>();
        let common = serde_json::json!({
            "agent_id": { "type": "string" },
            "request_id": { "type": "string" },
            "reason": { "type": "string" },
            "source": { "type": "string" },
        });
        let mut by_choice = common.clone();
        let mut by_decision = common;
        if let (Some(a), Some(b)) = (by_choice.as_object_mut(), by_decision.as_object_mut()) {
            a.insert(
                "choice_id".into(),
                serde_json::json!({ "type": "string", "minLength": 1 }),
            );
            b.insert(
                "decision".into(),
                serde_json::to_value(&decision).unwrap_or_default(),
            );
        }
        schemars::json_schema!({
            "description": "Exactly one answer form: the structured choice or the legacy decision.",
            "oneOf": [
                { "type": "object", "properties": by_choice,
                  "required": ["request_id", "choice_id"],
                  "not": { "required": ["decision"] } },
                { "type": "object", "properties": by_decision,
                  "required": ["request_id", "decision"],
                  "not": { "required": ["choice_id"] } }
            ]
        })
    }
}

/// `ui_response`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UiResponse {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The request answered.
    pub request_id: String,
    /// The answer; `null` dismisses.
    #[serde(default)]
    pub value: Option<UiValue>,
}

/// `client_files` (additive, 0.1.x): which file operations an editor client serves. The
/// Runtime keeps the offer until it is withdrawn (both false) or the Runtime ends.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientFiles {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Reads of text files go to the client (its unsaved buffers included).
    pub read: bool,
    /// Writes of text files go to the client.
    pub write: bool,
}

/// `file_response` (additive, 0.1.x): the answer to a `file_request`: the file's text for
/// a read, nothing for a write, or an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileResponse {
    /// Routing id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The request answered.
    pub request_id: String,
    /// The text of a read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub use crate::orchestrator::*;
