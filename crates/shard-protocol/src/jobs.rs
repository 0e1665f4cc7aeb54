//! Subagent job and run types (docs/protocol.md §11.2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// State of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Accepted, nothing started.
    Queued,
    /// At least one run active.
    Running,
    /// Every run completed.
    Completed,
    /// A run failed.
    Failed,
    /// Stopped.
    Cancelled,
}

/// State of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Waiting to start.
    Queued,
    /// Its Runtime is starting.
    Starting,
    /// Executing.
    Active,
    /// Finished.
    Completed,
    /// Failed.
    Failed,
    /// Ran past its deadline.
    TimedOut,
    /// Stopped.
    Cancelled,
    /// Nonterminal when the daemon restarted.
    Interrupted,
}

impl RunState {
    /// Terminal states have no outgoing transitions.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunState::Completed
                | RunState::Failed
                | RunState::TimedOut
                | RunState::Cancelled
                | RunState::Interrupted
        )
    }
}

/// How a job's runs are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobStrategy {
    /// One task.
    #[default]
    Single,
    /// All at once.
    Parallel,
    /// One after the other, each getting the previous final text.
    Chain,
}

/// Token counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunUsage {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
}

/// Who acted on a run besides the coordinator (additive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunActor {
    /// The owning parent, through `subagent.steer` / `subagent.stop`.
    Parent,
    /// A person: a client attached to the leased child sent `steer` or `abort` directly.
    Client,
}

/// What was done to a run from outside (additive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunActionKind {
    /// A strict steer into the run's turn.
    Steer,
    /// A cancellation (a person's `abort`, a parent's `subagent.stop`).
    Abort,
}

/// The latest outside action on a run, recorded so that the parent sees in
/// `subagent.status` that a person steered or aborted its child (additive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunAction {
    /// What was done.
    pub action: RunActionKind,
    /// Who did it.
    pub by: RunActor,
    /// For a steer: whether the turn took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<crate::responses::SteerOutcome>,
    /// When, ms since the epoch.
    pub at: u64,
}

/// A run as reported to its owner; never carries the private task text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSnapshot {
    /// Job.
    pub job_id: String,
    /// Run.
    pub run_id: String,
    /// Position in the job.
    pub index: u32,
    /// Definition name.
    pub name: String,
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
    /// State.
    pub state: RunState,
    /// Deadline, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<u64>,
    /// Final assistant text, only to the owning parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
    /// Usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<RunUsage>,
    /// Error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Start, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
    /// End, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    /// Steers the run's turn took, from the parent and from people (additive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steers: Option<u32>,
    /// The latest steer or abort from outside the coordinator (additive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_action: Option<RunAction>,
}

/// A job as reported to its owner; the private task specs are omitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobSnapshot {
    /// Job.
    pub job_id: String,
    /// Owner.
    pub parent_agent_id: String,
    /// Strategy.
    pub strategy: JobStrategy,
    /// State.
    pub state: JobState,
    /// Runs in order.
    pub runs: Vec<RunSnapshot>,
    /// Current chain step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_step: Option<u32>,
    /// When stopped, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<u64>,
    /// Creation, ms since the epoch.
    pub created_at: u64,
    /// End, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
}
