//! Commands: what clients send (PROTOCOL §9.2, §9.5, §10.1, §10.1a, §10.3, ARCHITECTURE §16).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::permission::PermissionAnswer;
use crate::types::{Image, LaunchPolicy, PermissionDecision, UiValue};

/// A command with its optional correlation `id` (PROTOCOL §5).
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

/// Every command of the protocol, a closed set tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum Command {
    /// Send a user message.
    #[serde(rename = "prompt")]
    Prompt(Prompt),
    /// Shorthand for a prompt with `streaming_behavior: "steer"`.
    #[serde(rename = "steer")]
    Steer(Steer),
    /// Cancel the current turn.
    #[serde(rename = "abort")]
    Abort(AgentTarget),
    /// Switch mode.
    #[serde(rename = "set_mode")]
    SetMode(SetMode),
    /// List modes.
    #[serde(rename = "list_modes")]
    ListModes(AgentTarget),
    /// List models.
    #[serde(rename = "list_models")]
    ListModels(AgentTarget),
    /// Select a model for the next provider call.
    #[serde(rename = "set_model")]
    SetModel(SetModel),
    /// List reasoning levels of the active model.
    #[serde(rename = "list_reasoning_levels")]
    ListReasoningLevels(AgentTarget),
    /// Select a reasoning level.
    #[serde(rename = "set_reasoning_level")]
    SetReasoningLevel(SetReasoningLevel),
    /// Session list / compact / fork.
    #[serde(rename = "session_op")]
    SessionOp(SessionOp),
    /// Answer a permission request.
    #[serde(rename = "permission_response")]
    PermissionResponse(PermissionResponse),
    /// Answer a UI request.
    #[serde(rename = "ui_response")]
    UiResponse(UiResponse),
    /// Additive (§16 item 5): ask the Runtime for an authoritative `sync`.
    #[serde(rename = "request_sync")]
    RequestSync(AgentTarget),
    /// List agents.
    #[serde(rename = "agent.list")]
    AgentList(Empty),
    /// Create (or adopt) an agent.
    #[serde(rename = "agent.create")]
    AgentCreate(Box<AgentCreate>),
    /// Attach to an agent's stream.
    #[serde(rename = "agent.attach")]
    AgentAttach(AgentAttach),
    /// Detach from an agent's stream.
    #[serde(rename = "agent.detach")]
    AgentDetach(AgentRef),
    /// Stop an agent's Runtime once inactive.
    #[serde(rename = "agent.terminate")]
    AgentTerminate(AgentRef),
    /// Kill an agent's Runtime.
    #[serde(rename = "agent.kill")]
    AgentKill(AgentKill),
    /// Status of one or all agents.
    #[serde(rename = "agent.status")]
    AgentStatus(AgentStatusQuery),
    /// Stop the daemon.
    #[serde(rename = "daemon.shutdown")]
    DaemonShutdown(DaemonShutdown),
    /// Create a workspace (git worktree) and launch an agent in it.
    #[serde(rename = "workspace.create")]
    WorkspaceCreate(WorkspaceCreate),
    /// Launch a fresh agent in an existing workspace.
    #[serde(rename = "workspace.attach")]
    WorkspaceAttach(WorkspaceAttach),
    /// List workspaces.
    #[serde(rename = "workspace.list")]
    WorkspaceList(WorkspaceList),
    /// Status of one workspace.
    #[serde(rename = "workspace.status")]
    WorkspaceStatus(WorkspaceRef),
    /// Retire a workspace.
    #[serde(rename = "workspace.retire")]
    WorkspaceRetire(WorkspaceRetire),
    /// Launch a background subagent job.
    #[serde(rename = "subagent.create")]
    SubagentCreate(SubagentCreate),
    /// Wait for runs to finish.
    #[serde(rename = "subagent.wait")]
    SubagentWait(SubagentWait),
    /// Steer an active run.
    #[serde(rename = "subagent.steer")]
    SubagentSteer(SubagentSteer),
    /// Relaunch a stopped child with a new task.
    #[serde(rename = "subagent.relaunch")]
    SubagentRelaunch(SubagentRelaunch),
    /// Job and run snapshots.
    #[serde(rename = "subagent.status")]
    SubagentStatus(SubagentStatus),
    /// Cancel a job or run.
    #[serde(rename = "subagent.stop")]
    SubagentStop(SubagentStop),
}

impl Command {
    /// The wire `type` of this command, as echoed in `response.command`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Command::Prompt(_) => "prompt",
            Command::Steer(_) => "steer",
            Command::Abort(_) => "abort",
            Command::SetMode(_) => "set_mode",
            Command::ListModes(_) => "list_modes",
            Command::ListModels(_) => "list_models",
            Command::SetModel(_) => "set_model",
            Command::ListReasoningLevels(_) => "list_reasoning_levels",
            Command::SetReasoningLevel(_) => "set_reasoning_level",
            Command::SessionOp(_) => "session_op",
            Command::PermissionResponse(_) => "permission_response",
            Command::UiResponse(_) => "ui_response",
            Command::RequestSync(_) => "request_sync",
            Command::AgentList(_) => "agent.list",
            Command::AgentCreate(_) => "agent.create",
            Command::AgentAttach(_) => "agent.attach",
            Command::AgentDetach(_) => "agent.detach",
            Command::AgentTerminate(_) => "agent.terminate",
            Command::AgentKill(_) => "agent.kill",
            Command::AgentStatus(_) => "agent.status",
            Command::DaemonShutdown(_) => "daemon.shutdown",
            Command::WorkspaceCreate(_) => "workspace.create",
            Command::WorkspaceAttach(_) => "workspace.attach",
            Command::WorkspaceList(_) => "workspace.list",
            Command::WorkspaceStatus(_) => "workspace.status",
            Command::WorkspaceRetire(_) => "workspace.retire",
            Command::SubagentCreate(_) => "subagent.create",
            Command::SubagentWait(_) => "subagent.wait",
            Command::SubagentSteer(_) => "subagent.steer",
            Command::SubagentRelaunch(_) => "subagent.relaunch",
            Command::SubagentStatus(_) => "subagent.status",
            Command::SubagentStop(_) => "subagent.stop",
        }
    }

    /// The routing `agent_id` of a per-agent command; `None` for orchestrator commands
    /// and for per-agent commands on a direct connection.
    pub fn routing_agent_id(&self) -> Option<&str> {
        self.per_agent_target_ref().and_then(|t| t.as_deref())
    }

    /// True for the per-agent commands of PROTOCOL §9.
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
            _ => return None,
        })
    }
}

/// A command with no payload.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Empty {}

/// A per-agent command whose only field is the routing `agent_id`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentTarget {
    /// Routing id on daemon connections; omitted on direct connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// How a prompt sent mid-turn is delivered (PROTOCOL §9.2).
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
            // PROTOCOL §9.5: choice ids are non-empty; the schema says the same.
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

/// Which way a subagent or headless agent handles requests with no responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum HeadlessPolicy {
    /// Deny at once.
    #[default]
    Deny,
    /// Allow only what the `[headless] allow` rules match.
    AllowIfRuleMatches,
    /// Keep pending until answered or timed out.
    Queue,
}

/// `agent.create`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentCreate {
    /// Working directory.
    pub cwd: String,
    /// Legacy adoption of an existing session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Tool allow-list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Skills.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    /// Headless policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless_policy: Option<HeadlessPolicy>,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Parent, for a subagent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    /// Daemon-set: delegated child system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Daemon-set: durable depth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Daemon-set: launch limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_policy: Option<LaunchPolicy>,
    /// Daemon-set: friendly alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Daemon-set: definition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_name: Option<String>,
    /// Daemon-set: display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Daemon-set: alias pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<Vec<String>>,
}

impl AgentCreate {
    /// Names of the daemon-only fields present; clients may not send them (§16 item 8).
    pub fn daemon_only_fields(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.system_prompt.is_some() {
            v.push("system_prompt");
        }
        if self.depth.is_some() {
            v.push("depth");
        }
        if self.launch_policy.is_some() {
            v.push("launch_policy");
        }
        if self.alias.is_some() {
            v.push("alias");
        }
        if self.definition_name.is_some() {
            v.push("definition_name");
        }
        if self.display_name.is_some() {
            v.push("display_name");
        }
        if self.names.is_some() {
            v.push("names");
        }
        v
    }
}

/// Attachment role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttachRole {
    /// May drive the agent and answer requests.
    #[default]
    Interactive,
    /// Read-only.
    Observer,
}

/// `agent.attach`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentAttach {
    /// The agent (payload, not routing).
    pub agent_id: String,
    /// Role; default interactive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<AttachRole>,
}

/// An orchestrator command naming one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentRef {
    /// The agent.
    pub agent_id: String,
}

/// `agent.kill`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentKill {
    /// The agent.
    pub agent_id: String,
    /// SIGKILL at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
}

/// `agent.status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentStatusQuery {
    /// One agent, or all when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// `daemon.shutdown`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DaemonShutdown {
    /// Kill instead of letting turns finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
}

/// `workspace.create`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceCreate {
    /// Accepted for forward compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// A directory inside the repository.
    pub cwd: String,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Branch to create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Base ref.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_ref: Option<String>,
    /// Integration target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration_target: Option<String>,
    /// Agent title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Agent name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// `workspace.attach`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceAttach {
    /// Accepted for forward compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The workspace.
    pub workspace_id: String,
    /// Agent title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Agent name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// `workspace.list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceList {
    /// Accepted for forward compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// Only workspaces of this repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Include retired ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_retired: Option<bool>,
}

/// `workspace.status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceRef {
    /// Accepted for forward compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The workspace.
    pub workspace_id: String,
}

/// What retiring does to the branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BranchDisposition {
    /// Delete only when proven merged.
    DeleteIfMerged,
    /// Keep the branch.
    Keep,
    /// Delete after explicit confirmation.
    DeleteConfirmed,
}

/// `workspace.retire`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceRetire {
    /// Accepted for forward compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The workspace.
    pub workspace_id: String,
    /// Branch handling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_disposition: Option<BranchDisposition>,
}

/// One task of a batch `subagent.create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentTask {
    /// Definition name.
    pub name: String,
    /// Private task text.
    pub task: String,
}

/// `subagent.create`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentCreate {
    /// Owning parent.
    pub parent_agent_id: String,
    /// Single form: definition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Single form: private task text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Batch form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<SubagentTask>>,
    /// Strategy; required for batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<crate::jobs::JobStrategy>,
    /// Model override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Mode override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// `any` or `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitMode {
    /// Return when any handle is terminal.
    Any,
    /// Return when all are.
    #[default]
    All,
}

/// `subagent.wait`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentWait {
    /// Owning parent.
    pub parent_agent_id: String,
    /// Handles to wait for.
    pub handles: Vec<String>,
    /// `any` or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<WaitMode>,
    /// Seconds; omitted waits forever, 0 polls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

/// `subagent.steer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentSteer {
    /// Owning parent.
    pub parent_agent_id: String,
    /// Run, agent or alias.
    pub target: String,
    /// Private message.
    pub message: String,
}

/// `subagent.relaunch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentRelaunch {
    /// Owning parent.
    pub parent_agent_id: String,
    /// Agent, run or alias.
    pub target: String,
    /// Private new task.
    pub task: String,
}

/// `subagent.status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentStatus {
    /// Owning parent.
    pub parent_agent_id: String,
    /// Handles; omitted lists the latest 50 jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
}

/// `subagent.stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentStop {
    /// Owning parent.
    pub parent_agent_id: String,
    /// Job, run or alias.
    pub handle: String,
}
