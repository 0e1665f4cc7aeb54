//! Payloads of the orchestrator messages (docs/protocol.md §10.1, §10.1a, §10.2, §10.3): the
//! daemon's registry, workspaces and subagent jobs. Commands are re-exported from
//! [`crate::command`], events from [`crate::event`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::jobs::RunState;
use crate::types::{AgentInfo, AgentStatus, LaunchPolicy, RuntimeState};
use crate::workspace::WorkspaceInfo;

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
    /// Additive: MCP servers the client supplies (an editor's), joining the configured
    /// ones as untrusted servers (tool sandbox, gate). Their `env`/`headers` values are
    /// secrets: kept in the owner-only manifest, never in `agent.list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<crate::mcp::ClientMcpServer>>,
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
    /// Additive: a `[hosts.NAME]` of the daemon's `config.toml` to run the Runtime on
    /// (over SSH or a command prefix); `cwd` is then a path on that host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
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
    /// The `[hosts.NAME]` whose checkout `cwd` is in (absent: the daemon's machine): the
    /// worktree is made there, and the workspace's git and agents run there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
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
    /// Additive: `cwd` is a path on this `[hosts.NAME]` (absent: the daemon's machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
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

/// `workspace_created` / `workspace_retired`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceEvent {
    /// The workspace projection.
    pub workspace: WorkspaceInfo,
}

/// `workspace_attached`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceAttached {
    /// The workspace projection.
    pub workspace: WorkspaceInfo,
    /// The new agent (payload).
    pub agent_id: String,
    /// Its session.
    pub session_id: String,
}

/// `workspace_conflict`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceConflict {
    /// The workspace.
    pub workspace_id: String,
    /// Sanitized reason.
    pub reason: String,
}

/// `agent_spawned`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentSpawned {
    /// The agent (payload).
    pub agent_id: String,
    /// Its info.
    pub info: AgentInfo,
}

/// `agent_archived`: another client archived the agent, so every list drops it (the session
/// is kept; `agent.list` with archived agents still shows it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentArchived {
    /// The agent (payload).
    pub agent_id: String,
}

/// `agent_exited`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentExited {
    /// The agent (payload).
    pub agent_id: String,
    /// Always `failed`.
    pub runtime_state: RuntimeState,
    /// Why.
    pub reason: String,
    /// Exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
}

/// `agent_status_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentStatusChanged {
    /// The agent (payload).
    pub agent_id: String,
    /// Agent status.
    pub status: AgentStatus,
    /// Runtime state.
    pub runtime_state: RuntimeState,
    /// Detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Coarse phase of `agent_activity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActivityPhase {
    /// Idle.
    Idle,
    /// Reasoning.
    Thinking,
    /// Writing.
    Streaming,
    /// Running a tool.
    Tool,
    /// Waiting for an answer.
    Waiting,
    /// Compacting.
    Compacting,
    /// Retrying a provider call.
    Retrying,
    /// Failed.
    Error,
}

/// `agent_activity`: never a prompt, text, argument, result or path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentActivity {
    /// The agent (payload).
    pub agent_id: String,
    /// Milliseconds since the epoch.
    pub timestamp: u64,
    /// Phase.
    pub phase: ActivityPhase,
    /// Status.
    pub status: AgentStatus,
    /// Tool name during `tool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
}

/// `subagent_run_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentRunChanged {
    /// Owning parent (payload).
    pub parent_agent_id: String,
    /// Job.
    pub job_id: String,
    /// Run.
    pub run_id: String,
    /// Child agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Definition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_name: Option<String>,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// New state.
    pub state: RunState,
    /// Previous state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_state: Option<RunState>,
    /// Error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// End, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
}

/// `runtime.auth`: a connection message (answered like a command, but outside the command
/// table) by which a Runtime proves, with the `SHARD_AGENT_TOKEN` it was started with,
/// that it is `agent_id`'s live Runtime; only such a connection may send `subagent.*`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "runtime.auth")]
pub struct RuntimeAuth {
    /// Correlation id, echoed by the `response`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The agent the Runtime claims to run.
    pub agent_id: String,
    /// The Runtime's token (a secret: never logged, never in `Debug`).
    pub token: String,
}

impl std::fmt::Debug for RuntimeAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeAuth")
            .field("id", &self.id)
            .field("agent_id", &self.agent_id)
            .finish_non_exhaustive()
    }
}

/// Who a connection is after `runtime.auth`: always `"runtime"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuthPrincipal {
    /// The Runtime of an agent.
    Runtime,
}

/// The data of a successful `runtime.auth`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RuntimeAuthData {
    /// `"runtime"`.
    pub principal: AuthPrincipal,
    /// The agent the connection now acts for.
    pub agent_id: String,
}

/// `runtime.auth`'s request and response types, as the command table names a command's
/// (`CommandSpec`), so both ends answer and read it typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeAuthKind;

impl crate::table::CommandSpec for RuntimeAuthKind {
    const TYPE: &'static str = "runtime.auth";
    type Request = RuntimeAuth;
    type Response = RuntimeAuthData;
}
