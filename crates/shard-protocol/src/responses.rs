//! Typed `data` of successful responses, for servers to build and clients to read.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::Effective;
use crate::jobs::{JobSnapshot, JobState, JobStrategy, RunSnapshot, RunState};
use crate::types::{AgentInfo, AgentStatus, Message, ModeDescriptor, ModelDescriptor};

/// `agent.list` and `agent.status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentsData {
    /// The agents.
    pub agents: Vec<AgentInfo>,
    /// Additive: present when an `agent.list` with a `limit` left agents out; pass it as
    /// `after` for the next page. Opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after: Option<String>,
}

/// `agent.create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentCreated {
    /// New agent.
    pub agent_id: String,
    /// Additive: one line the user should see, e.g. that the chosen model is not in the
    /// catalog (its price is unknown and its context window assumed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// `agent.attach`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AttachData {
    /// Status.
    pub status: AgentStatus,
    /// Info.
    pub info: AgentInfo,
}

/// `agent.terminate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TerminateData {
    /// True when active work finishes first.
    pub deferred: bool,
}

/// `set_mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetModeData {
    /// Mode before.
    pub previous_mode: String,
    /// Mode now.
    pub mode: String,
}

/// `list_modes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListModesData {
    /// Every mode, built-ins first.
    pub modes: Vec<ModeDescriptor>,
    /// Active mode.
    pub active: String,
}

/// `list_models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListModelsData {
    /// Catalog.
    pub models: Vec<ModelDescriptor>,
    /// Active selection.
    pub active: ModelDescriptor,
}

/// `set_model`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetModelData {
    /// Before.
    pub previous: ModelDescriptor,
    /// After.
    pub active: ModelDescriptor,
    /// When it applies.
    pub effective: Effective,
    /// Additive: one line the user should see, e.g. that the model is not in the
    /// catalog (its price is unknown and its context window assumed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// A reasoning level of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReasoningLevel {
    /// Id to send back.
    pub id: String,
    /// Label.
    pub label: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `list_reasoning_levels`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReasoningLevelsData {
    /// Active model.
    pub model: ModelDescriptor,
    /// Levels.
    pub levels: Vec<ReasoningLevel>,
    /// Active level.
    pub active: String,
    /// When it applies.
    pub effective: Effective,
}

/// `set_reasoning_level`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetReasoningLevelData {
    /// Active model.
    pub model: ModelDescriptor,
    /// Before.
    pub previous: String,
    /// After.
    pub active: String,
    /// When it applies.
    pub effective: Effective,
}

/// One session of `session_op list` and `session.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionSummary {
    /// Session id.
    pub session_id: String,
    /// The first prompt, shortened.
    pub title: String,
    /// Creation, ms since the epoch.
    pub created_at: u64,
    /// Last change, ms since the epoch.
    pub updated_at: u64,
    /// Entries in the transcript.
    pub entry_count: u64,
    /// The Runtime's own session.
    pub current: bool,
    /// Additive: messages in the transcript (prompts, answers, tool results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_count: Option<u64>,
    /// Additive: the recorded cost of its model calls, US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Additive: where a fork came from; absent for an original session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkProvenance>,
}

/// Where a forked session came from (`session_op fork`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ForkProvenance {
    /// The fork's id.
    pub fork_id: String,
    /// The session it was split from.
    pub source_session_id: String,
    /// The entry it was split at.
    pub source_entry_id: String,
}

/// `session_op list` and `session.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionListData {
    /// Newest first.
    pub sessions: Vec<SessionSummary>,
}

/// `session_op history`: the page of messages just before `before`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionHistoryData {
    /// Oldest first, ending right before the requested id; cut like the live window.
    pub messages: Vec<Message>,
    /// First message id of this page when older ones remain; absent once the start of
    /// the session (or the compaction summary that opens it) is in this page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_before: Option<String>,
    /// Additive: ids of this page's messages after which an aborted turn stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_after: Option<Vec<String>>,
}

/// `session.activate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionActivated {
    /// The session the agent's next Runtime generation opens.
    pub session_id: String,
    /// The session it was on.
    pub previous_session_id: String,
    /// True when a live idle Runtime was asked to stop (it ends on the old session; the
    /// next attach or prompt starts a generation on the new one).
    pub runtime_stopping: bool,
}

/// `session_op fork`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ForkData {
    /// Fork id.
    pub fork_id: String,
    /// New session.
    pub session_id: String,
    /// Its head entry.
    pub head_entry_id: String,
}

/// Any `session_op` success, by op: what the command table names as its response (the
/// client knows which op it sent; the variants are tried in this order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SessionOpData {
    /// `list`.
    List(SessionListData),
    /// `history`.
    History(SessionHistoryData),
    /// `fork`.
    Fork(ForkData),
    /// `compact`.
    Compact(CompactData),
}

/// `session_op compact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CompactData {
    /// A compaction entry was appended.
    Compacted {
        /// Always true.
        compacted: bool,
        /// Compaction index.
        index: u64,
        /// Tokens before.
        tokens_before: u64,
        /// Tokens after.
        tokens_after: u64,
        /// First entry kept.
        first_kept_entry_id: String,
        /// Summarized span.
        message_range: [String; 2],
    },
    /// Nothing to do.
    NoOp {
        /// Always false.
        compacted: bool,
        /// Why, e.g. `no_safe_cut`.
        reason: String,
    },
}

/// A run of `subagent.create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CreatedRun {
    /// Run.
    pub run_id: String,
    /// Position.
    pub index: u32,
    /// Definition name.
    pub name: String,
    /// Always `queued`.
    pub state: RunState,
    /// Child agent.
    pub agent_id: String,
    /// Alias.
    pub alias: String,
    /// Definition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_name: Option<String>,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// `subagent.create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentCreated {
    /// Job.
    pub job_id: String,
    /// Strategy.
    pub strategy: JobStrategy,
    /// Runs.
    pub runs: Vec<CreatedRun>,
}

/// Aggregate state of `subagent.wait`: a job state or `"mixed"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AggregateState {
    /// All runs share a state.
    State(JobState),
    /// `"mixed"`.
    Mixed(MixedTag),
}

/// The literal `"mixed"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MixedTag {
    /// Runs differ.
    Mixed,
}

/// `subagent.wait`. The fields are in the order the daemon has always sent them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentWaitData {
    /// Aggregate state.
    pub aggregate_state: AggregateState,
    /// Every run, in order.
    pub runs: Vec<RunSnapshot>,
    /// The wait timed out.
    pub timed_out: bool,
}

/// Outcome of a strict steer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SteerOutcome {
    /// Delivered into the active turn.
    Injected,
    /// The turn ended first.
    Conflict,
}

/// Response data of a strict `steer` (additive): whether the Runtime put the
/// message into a turn, so a coordinator can tell the sender without guessing from events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SteerData {
    /// `injected`: the message is in the transcript of turn `turn_id`; `conflict`: it was
    /// dropped (no such turn ran, or it ended first).
    pub status: SteerOutcome,
    /// The turn that took the message, or the one that ended without taking it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// `subagent.steer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentSteerData {
    /// Outcome.
    pub status: SteerOutcome,
    /// Run.
    pub run_id: String,
    /// Turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Correlation id.
    pub correlation_id: String,
}

/// `subagent.relaunch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentRelaunched {
    /// New job.
    pub job_id: String,
    /// New run.
    pub run_id: String,
    /// The same agent.
    pub agent_id: String,
    /// Alias.
    pub alias: String,
    /// Definition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_name: Option<String>,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Always `queued`.
    pub state: RunState,
}

/// One agent of `subagent.status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentAgentStatus {
    /// Agent.
    pub agent_id: String,
    /// Alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Definition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_name: Option<String>,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    /// Current or latest run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunSnapshot>,
}

/// `subagent.status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentStatusData {
    /// Agents.
    pub agents: Vec<SubagentAgentStatus>,
    /// Jobs, when no targets were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<Vec<JobSnapshot>>,
}

/// A cancelled run of `subagent.stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CancelledRun {
    /// Run.
    pub run_id: String,
    /// Agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// State after cancellation.
    pub state: RunState,
}

/// `subagent.stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentStopData {
    /// Runs cancelled.
    pub cancelled: Vec<CancelledRun>,
    /// Job; `null` when the handle named an agent with no run to stop (the daemon has
    /// always sent the key).
    #[serde(default)]
    pub job_id: Option<String>,
}
