//! Durable job records under `SHARD_HOME/jobs/<job_id>.json` (docs/protocol.md §10.3, §11.2):
//! the only place the private task text is kept. Each write is atomic (temp file, fsync,
//! rename, directory fsync), so a record is the old or the new version after a crash.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shard_protocol::ids;
use shard_protocol::jobs::{
    JobSnapshot, JobState, JobStrategy, RunAction, RunSnapshot, RunState, RunUsage,
};

use crate::fsutil;

/// Format version written into every job record.
pub(crate) const JOB_VERSION: u32 = 1;

/// One run of a job: one task given to one durable child Agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub run_id: String,
    pub index: u32,
    /// The definition name the task asked for.
    pub name: String,
    /// Private: never leaves this record (no response, event, log).
    pub task: String,
    pub agent_id: String,
    pub alias: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub state: RunState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<RunUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    /// True once the completion report reached the parent (delivery is retried after a
    /// daemon restart while false).
    #[serde(default)]
    pub reported: bool,
    /// The child's model (request, else definition; else the parent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The child's mode (never above the parent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The definition's tool allow-list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Private: the definition body, the child's system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Steers the run's turn took (parent's and people's).
    #[serde(default)]
    pub steers: u32,
    /// The latest outside steer or abort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_action: Option<RunAction>,
}

impl RunRecord {
    /// The wire view; `final_text` only for the owning parent (every caller is it).
    pub fn snapshot(&self, job_id: &str) -> RunSnapshot {
        RunSnapshot {
            job_id: job_id.to_string(),
            run_id: self.run_id.clone(),
            index: self.index,
            name: self.name.clone(),
            agent_id: Some(self.agent_id.clone()),
            alias: Some(self.alias.clone()),
            definition_name: self.definition_name.clone(),
            display_name: self.display_name.clone(),
            state: self.state,
            deadline: None,
            final_text: self.final_text.clone(),
            usage: self.usage,
            error: self.error.clone(),
            started_at: self.started_at,
            ended_at: self.ended_at,
            steers: (self.steers > 0).then_some(self.steers),
            last_action: self.last_action.clone(),
        }
    }
}

/// One job: what a `subagent.create` or `subagent.relaunch` accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JobRecord {
    pub version: u32,
    pub job_id: String,
    pub parent_agent_id: String,
    pub strategy: JobStrategy,
    pub runs: Vec<RunRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<u64>,
    pub created_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    /// True for a relaunch: the child Agent exists already.
    #[serde(default)]
    pub relaunch: bool,
}

/// The job state that a set of run states adds up to.
pub(crate) fn job_state(runs: &[RunRecord]) -> JobState {
    states_add_up(runs.iter().map(|r| r.state))
}

/// The job state that a set of run states adds up to (no records needed).
pub(crate) fn states_add_up(states: impl Iterator<Item = RunState> + Clone) -> JobState {
    let all = |f: fn(RunState) -> bool| states.clone().all(f);
    let any = |f: fn(RunState) -> bool| states.clone().any(f);
    if !all(RunState::is_terminal) {
        if all(|s| s == RunState::Queued) {
            return JobState::Queued;
        }
        return JobState::Running;
    }
    if all(|s| s == RunState::Completed) {
        JobState::Completed
    } else if any(|s| matches!(s, RunState::Failed | RunState::TimedOut)) {
        JobState::Failed
    } else if any(|s| s == RunState::Cancelled) {
        JobState::Cancelled
    } else {
        // Interrupted runs (daemon restart) and nothing else.
        JobState::Failed
    }
}

impl JobRecord {
    /// The wire view, without the private task text.
    pub fn snapshot(&self) -> JobSnapshot {
        let chain_step = (self.strategy == JobStrategy::Chain)
            .then(|| {
                self.runs
                    .iter()
                    .find(|r| !r.state.is_terminal())
                    .map(|r| r.index)
            })
            .flatten();
        JobSnapshot {
            job_id: self.job_id.clone(),
            parent_agent_id: self.parent_agent_id.clone(),
            strategy: self.strategy,
            state: job_state(&self.runs),
            runs: self.runs.iter().map(|r| r.snapshot(&self.job_id)).collect(),
            chain_step,
            stopped_at: self.stopped_at,
            created_at: self.created_at,
            ended_at: self.ended_at,
        }
    }
}

/// Reads and writes job records; ids are validated before they touch a path.
#[derive(Debug, Clone)]
pub(crate) struct JobStore {
    dir: PathBuf,
}

impl JobStore {
    /// A store rooted at `SHARD_HOME/jobs`.
    pub fn new(home: &Path) -> Self {
        JobStore {
            dir: home.join("jobs"),
        }
    }

    /// Writes one record atomically (0600 in a 0700 directory) and fsyncs it.
    pub async fn save(&self, job: &JobRecord) -> std::io::Result<()> {
        if !ids::is_valid(ids::JOB, &job.job_id) {
            return Err(std::io::Error::other(format!(
                "invalid job id {:?}",
                job.job_id
            )));
        }
        let path = self.dir.join(format!("{}.json", job.job_id));
        let dir = self.dir.clone();
        let bytes = serde_json::to_vec_pretty(job).map_err(std::io::Error::other)?;
        fsutil::save_record(dir, path, bytes).await
    }

    /// Every readable record, oldest first; unreadable ones are logged (by path, never
    /// content) and skipped so one bad file never hides the others.
    pub fn load_all_blocking(&self) -> std::io::Result<Vec<JobRecord>> {
        fsutil::load_records(&self.dir)
    }
}

impl fsutil::StoredRecord for JobRecord {
    const ID_KIND: &'static str = ids::JOB;
    const WHAT: &'static str = "job record";
    fn id(&self) -> &str {
        &self.job_id
    }
    fn created_at(&self) -> u64 {
        self.created_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(state: RunState) -> RunRecord {
        RunRecord {
            run_id: ids::new_id(ids::RUN),
            index: 0,
            name: "general".into(),
            task: "secret".into(),
            agent_id: ids::new_id(ids::AGENT),
            alias: "general".into(),
            definition_name: None,
            display_name: None,
            state,
            final_text: None,
            usage: None,
            error: None,
            started_at: None,
            ended_at: None,
            reported: false,
            model: None,
            mode: None,
            tools: None,
            system_prompt: None,
            steers: 0,
            last_action: None,
        }
    }

    #[test]
    fn job_state_adds_up_runs() {
        use RunState::*;
        let s = |v: &[RunState]| job_state(&v.iter().map(|s| run(*s)).collect::<Vec<_>>());
        assert_eq!(s(&[Queued, Queued]), JobState::Queued);
        assert_eq!(s(&[Active, Queued]), JobState::Running);
        assert_eq!(s(&[Completed, Completed]), JobState::Completed);
        assert_eq!(s(&[Completed, Failed]), JobState::Failed);
        assert_eq!(s(&[Completed, Cancelled]), JobState::Cancelled);
        assert_eq!(s(&[Interrupted]), JobState::Failed);
    }

    #[tokio::test]
    async fn records_round_trip_and_snapshots_drop_the_task() {
        let home = tempfile::tempdir().unwrap();
        let store = JobStore::new(home.path());
        let job = JobRecord {
            version: JOB_VERSION,
            job_id: ids::new_id(ids::JOB),
            parent_agent_id: ids::new_id(ids::AGENT),
            strategy: JobStrategy::Single,
            runs: vec![run(RunState::Queued)],
            model: None,
            provider: None,
            mode: None,
            stopped_at: None,
            created_at: 1,
            ended_at: None,
            relaunch: false,
        };
        store.save(&job).await.unwrap();
        assert_eq!(store.load_all_blocking().unwrap(), vec![job.clone()]);
        let wire = serde_json::to_string(&job.snapshot()).unwrap();
        assert!(!wire.contains("secret"));
    }
}
