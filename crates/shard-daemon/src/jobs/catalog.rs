//! The job catalog: every job record in memory, the live control of the runs the
//! coordinator executes, and the runs whose report is being delivered. Its fields are
//! private; everything else in `jobs` reads and changes it through these methods, which
//! are plain functions (no `.await`), so the lock `Jobs` keeps around it can never be
//! held across one. Handle and alias resolution lives here too, since it reads nothing
//! else.

use std::collections::{HashMap, HashSet};

use shard_protocol::ErrorCode;
use shard_protocol::ids;
use shard_protocol::jobs::{JobStrategy, RunState};
use shard_protocol::orchestrator::SubagentRunChanged;
use tokio_util::sync::CancellationToken;

use super::record::{JOB_VERSION, JobRecord, RunRecord};
use crate::reply::ProtocolError;

/// Where a run is: (job id, index in the job).
pub(crate) type RunAt = (String, usize);

/// Live control of a run the coordinator is executing (not durable).
#[derive(Debug, Default)]
struct RunControl {
    /// Cancelled by `subagent.stop`.
    cancel: CancellationToken,
    /// The child's current turn, once it started.
    turn_id: Option<String>,
    /// Why the run is being cancelled (its error text): the first canceller's reason.
    stop_reason: Option<String>,
}

/// What a handle resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// A whole job.
    Job(String),
    /// One run: (job id, index).
    Run(String, usize),
    /// A child Agent of the parent.
    Agent(String),
}

/// How a run stood when the coordinator came to start it.
pub(crate) enum StartClaim {
    /// Still queued: start it, watching this token for a stop.
    Queued(CancellationToken),
    /// It left the queue already (a stop): its state and final text.
    Settled(RunState, Option<String>),
}

/// What a change to one run did, for the caller to persist and announce.
pub(crate) struct Changed {
    /// The run's state after the change.
    pub state: RunState,
    /// The `subagent_run_changed` to send once the change is durable (`None`: the state
    /// did not move).
    pub event: Option<SubagentRunChanged>,
}

/// The records in memory.
#[derive(Default)]
pub(crate) struct Catalog {
    jobs: HashMap<String, JobRecord>,
    /// Keyed by run id.
    live: HashMap<String, RunControl>,
    /// Runs whose completion report is being delivered: one delivery at a time, so two
    /// paths that end a run (a stop and a chain's cancel, say) never report it twice.
    reporting: HashSet<String>,
}

impl Catalog {
    /// The parent's jobs, oldest first.
    pub fn owned<'a>(&'a self, parent: &'a str) -> impl Iterator<Item = &'a JobRecord> + 'a {
        let mut v: Vec<_> = self
            .jobs
            .values()
            .filter(|j| j.parent_agent_id == parent)
            .collect();
        v.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then(a.job_id.cmp(&b.job_id))
        });
        v.into_iter()
    }

    /// Job `job_id`.
    pub fn job(&self, job_id: &str) -> Option<&JobRecord> {
        self.jobs.get(job_id)
    }

    /// The run at `at`.
    pub fn run_at(&self, at: &RunAt) -> Option<&RunRecord> {
        self.jobs.get(&at.0).and_then(|j| j.runs.get(at.1))
    }

    /// Where run `run_id` is.
    fn find_run(&self, run_id: &str) -> Option<RunAt> {
        self.jobs.values().find_map(|j| {
            j.runs
                .iter()
                .position(|r| r.run_id == run_id)
                .map(|i| (j.job_id.clone(), i))
        })
    }

    /// True when `agent_id` has a queued or executing run (the lease of a child).
    pub fn leased(&self, agent_id: &str) -> bool {
        self.jobs
            .values()
            .flat_map(|j| &j.runs)
            .any(|r| r.agent_id == agent_id && !r.state.is_terminal())
    }

    /// The queued or executing run that leases `agent_id`.
    pub fn leasing_run(&self, agent_id: &str) -> Option<RunAt> {
        self.jobs.values().find_map(|j| {
            j.runs
                .iter()
                .position(|r| r.agent_id == agent_id && !r.state.is_terminal())
                .map(|i| (j.job_id.clone(), i))
        })
    }

    /// The child's current turn in run `at`, while the coordinator follows one.
    pub fn turn_of(&self, at: &RunAt) -> Option<String> {
        let run = self.run_at(at)?;
        self.live.get(&run.run_id).and_then(|l| l.turn_id.clone())
    }

    /// Why run `at` is being cancelled, when something cancelled it.
    pub fn stop_reason(&self, at: &RunAt) -> Option<String> {
        let run = self.run_at(at)?;
        self.live
            .get(&run.run_id)
            .and_then(|l| l.stop_reason.clone())
    }

    /// Runs that ended and whose report did not reach the parent yet.
    pub fn unreported(&self) -> Vec<RunAt> {
        self.jobs
            .values()
            .flat_map(|j| {
                j.runs
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.state.is_terminal() && !r.reported)
                    .map(|(i, _)| (j.job_id.clone(), i))
            })
            .collect()
    }

    /// Resolves a handle of `parent`'s: a job id, a run id, a child agent id, or an alias
    /// (folded: NFKC, lower case).
    pub fn resolve(&self, parent: &str, handle: &str) -> Result<Resolved, ProtocolError> {
        let not_found =
            || ProtocolError::new(ErrorCode::NotFound, "no such job, run or child agent");
        if ids::is_valid(ids::JOB, handle) {
            return match self.jobs.get(handle) {
                Some(j) if j.parent_agent_id == parent => Ok(Resolved::Job(handle.to_string())),
                _ => Err(not_found()),
            };
        }
        if ids::is_valid(ids::RUN, handle) {
            return match self.find_run(handle) {
                Some((job, i))
                    if self
                        .jobs
                        .get(&job)
                        .is_some_and(|j| j.parent_agent_id == parent) =>
                {
                    Ok(Resolved::Run(job, i))
                }
                _ => Err(not_found()),
            };
        }
        if ids::is_valid(ids::AGENT, handle) {
            let owned = self
                .owned(parent)
                .any(|j| j.runs.iter().any(|r| r.agent_id == handle));
            return if owned {
                Ok(Resolved::Agent(handle.to_string()))
            } else {
                Err(not_found())
            };
        }
        let wanted = fold(handle);
        self.owned(parent)
            .flat_map(|j| &j.runs)
            .find(|r| fold(&r.alias) == wanted)
            .map(|r| Resolved::Agent(r.agent_id.clone()))
            .ok_or_else(not_found)
    }

    /// Every run a handle stands for at acceptance.
    pub fn runs_of(&self, parent: &str, r: &Resolved) -> Vec<RunAt> {
        match r {
            Resolved::Job(j) => self
                .jobs
                .get(j)
                .map(|job| (0..job.runs.len()).map(|i| (j.clone(), i)).collect())
                .unwrap_or_default(),
            Resolved::Run(j, i) => vec![(j.clone(), *i)],
            Resolved::Agent(a) => self.run_of_agent(parent, a).into_iter().collect(),
        }
    }

    /// The run an agent handle stands for: its queued/executing run, else its latest one.
    pub fn run_of_agent(&self, parent: &str, agent_id: &str) -> Option<RunAt> {
        let mut latest = None;
        for j in self.owned(parent) {
            for (i, r) in j.runs.iter().enumerate() {
                if r.agent_id == agent_id {
                    if !r.state.is_terminal() {
                        return Some((j.job_id.clone(), i));
                    }
                    latest = Some((j.job_id.clone(), i));
                }
            }
        }
        latest
    }

    /// Takes a record in as it is (loaded at startup).
    pub fn insert(&mut self, job: JobRecord) {
        self.jobs.insert(job.job_id.clone(), job);
    }

    /// Adds a new job, giving each run a fresh alias among the parent's (from the run's
    /// name: `name`, `name-2`, …). Returns the record as added.
    pub fn add(&mut self, mut job: JobRecord) -> &JobRecord {
        let mut taken: Vec<String> = self
            .owned(&job.parent_agent_id)
            .flat_map(|j| j.runs.iter().map(|r| fold(&r.alias)))
            .collect();
        for run in &mut job.runs {
            run.alias = fresh_alias(&run.name, &mut taken);
        }
        let id = job.job_id.clone();
        self.jobs.entry(id).insert_entry(job).into_mut()
    }

    /// A one-run job `job_id` that gives child `target` of `parent` a new task, with the
    /// settings of its latest run; refused while the child has a queued or active run.
    pub fn relaunch(
        &mut self,
        parent: &str,
        target: &str,
        task: String,
        job_id: &str,
    ) -> Result<&JobRecord, ProtocolError> {
        let res = self.resolve(parent, target)?;
        let agent_id = match &res {
            Resolved::Agent(a) => a.clone(),
            Resolved::Run(..) => self
                .runs_of(parent, &res)
                .first()
                .and_then(|at| self.run_at(at))
                .map(|run| run.agent_id.clone())
                .ok_or_else(|| ProtocolError::new(ErrorCode::NotFound, "no such run"))?,
            Resolved::Job(_) => {
                return Err(ProtocolError::new(
                    ErrorCode::InvalidRequest,
                    "relaunch targets a child agent, run or alias, not a job",
                ));
            }
        };
        if self.leased(&agent_id) {
            return Err(ProtocolError::new(
                ErrorCode::Conflict,
                "the child has a queued or active run; stop it or wait first",
            ));
        }
        let no_child = || ProtocolError::new(ErrorCode::NotFound, "no such child");
        let at = self.run_of_agent(parent, &agent_id).ok_or_else(no_child)?;
        let (last, job) = match (self.run_at(&at), self.jobs.get(&at.0)) {
            (Some(l), Some(j)) => (l.clone(), j),
            _ => return Err(no_child()),
        };
        let run = RunRecord {
            run_id: ids::new_id(ids::RUN),
            index: 0,
            task,
            state: RunState::Queued,
            final_text: None,
            usage: None,
            error: None,
            started_at: None,
            ended_at: None,
            reported: false,
            steers: 0,
            last_action: None,
            ..last
        };
        let record = JobRecord {
            version: JOB_VERSION,
            job_id: job_id.to_string(),
            parent_agent_id: parent.to_string(),
            strategy: JobStrategy::Single,
            runs: vec![run],
            model: job.model.clone(),
            provider: job.provider.clone(),
            mode: job.mode.clone(),
            stopped_at: None,
            created_at: ids::now_millis(),
            ended_at: None,
            relaunch: true,
        };
        Ok(self
            .jobs
            .entry(job_id.to_string())
            .insert_entry(record)
            .into_mut())
    }

    /// Drops a job whose record could not be written.
    pub fn remove(&mut self, job_id: &str) {
        self.jobs.remove(job_id);
    }

    /// Notes when a whole job was stopped (the first stop counts).
    pub fn mark_stopped(&mut self, job_id: &str) {
        if let Some(job) = self.jobs.get_mut(job_id) {
            job.stopped_at.get_or_insert(ids::now_millis());
        }
    }

    /// The coordinator's first look at run `at`; `None` when there is no such run.
    pub fn claim_start(&mut self, at: &RunAt) -> Option<StartClaim> {
        let run = self.run_at(at)?;
        if run.state != RunState::Queued {
            return Some(StartClaim::Settled(run.state, run.final_text.clone()));
        }
        let run_id = run.run_id.clone();
        Some(StartClaim::Queued(
            self.live.entry(run_id).or_default().cancel.clone(),
        ))
    }

    /// Records (or clears) the child's current turn in run `at`.
    pub fn set_turn(&mut self, at: &RunAt, turn: Option<String>) {
        let Some(run_id) = self.run_at(at).map(|r| r.run_id.clone()) else {
            return;
        };
        self.live.entry(run_id).or_default().turn_id = turn;
    }

    /// Cancels run `at` unless it has ended: the first reason is kept, the token fires.
    /// Returns the state the cancellation found (`None`: ended, or no such run).
    pub fn cancel(&mut self, at: &RunAt, reason: &str) -> Option<RunState> {
        let (run_id, state) = self
            .run_at(at)
            .filter(|r| !r.state.is_terminal())
            .map(|r| (r.run_id.clone(), r.state))?;
        let live = self.live.entry(run_id).or_default();
        live.stop_reason.get_or_insert_with(|| reason.to_string());
        live.cancel.cancel();
        Some(state)
    }

    /// Claims the delivery of run `at`'s report when it ended and was not reported and
    /// nobody delivers it now: the parent and the run as it ended.
    pub fn claim_report(&mut self, at: &RunAt) -> Option<(String, RunRecord)> {
        let job = self.jobs.get(&at.0)?;
        let run = job.runs.get(at.1)?;
        if !run.state.is_terminal() || run.reported || !self.reporting.insert(run.run_id.clone()) {
            return None;
        }
        Some((job.parent_agent_id.clone(), run.clone()))
    }

    /// Ends a delivery [`Self::claim_report`] claimed.
    pub fn end_report(&mut self, run_id: &str) {
        self.reporting.remove(run_id);
    }

    /// Changes run `at` with `f` in memory; a job whose runs all ended gets its end time,
    /// and an ended run loses its live control. `None`: no such run.
    pub fn change_run(&mut self, at: &RunAt, f: impl FnOnce(&mut RunRecord)) -> Option<Changed> {
        let job = self.jobs.get_mut(&at.0)?;
        let run = job.runs.get_mut(at.1)?;
        let previous = run.state;
        f(run);
        let run = &job.runs[at.1];
        let state = run.state;
        let event = (previous != state).then(|| SubagentRunChanged {
            parent_agent_id: job.parent_agent_id.clone(),
            job_id: job.job_id.clone(),
            run_id: run.run_id.clone(),
            agent_id: Some(run.agent_id.clone()),
            alias: Some(run.alias.clone()),
            definition_name: run.definition_name.clone(),
            display_name: run.display_name.clone(),
            state,
            previous_state: Some(previous),
            error: run.error.clone(),
            ended_at: run.ended_at,
        });
        if job.runs.iter().all(|r| r.state.is_terminal()) && job.ended_at.is_none() {
            job.ended_at = Some(ids::now_millis());
        }
        let run_id = job.runs[at.1].run_id.clone();
        if state.is_terminal() {
            self.live.remove(&run_id);
        }
        Some(Changed { state, event })
    }
}

/// Folds a handle or alias for comparison: NFKC, then lower case.
pub(crate) fn fold(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    s.nfkc().collect::<String>().to_lowercase()
}

/// A fresh alias for `name` among `taken` (folded): `name`, `name-2`, `name-3`, …
pub(crate) fn fresh_alias(name: &str, taken: &mut Vec<String>) -> String {
    let base: String = fold(name)
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect();
    let base = if base.trim_matches('-').is_empty() {
        "agent".to_string()
    } else {
        base
    };
    let mut n = 1;
    loop {
        let candidate = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        if !taken.contains(&candidate) {
            taken.push(candidate.clone());
            return candidate;
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn aliases_are_unique_and_folded() {
        let mut taken = vec![];
        assert_eq!(fresh_alias("Review", &mut taken), "review");
        assert_eq!(fresh_alias("REVIEW", &mut taken), "review-2");
        assert_eq!(fresh_alias("a b", &mut taken), "a-b");
        assert_eq!(fold("ＲＥＶＩＥＷ"), "review");
    }
}
