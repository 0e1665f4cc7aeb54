//! `session.activate`: switching an agent to another session when no turn runs.

use shard_protocol::ErrorCode;

use super::super::deliver::close_stdin;
use super::super::state::{AgentEntry, Shared};
use super::errors::not_found;
use crate::reply::ProtocolError;

/// What `session.activate` changed, for its response and the durable manifest write.
pub(crate) struct Activation {
    /// The session the agent was on.
    pub(crate) previous_session_id: String,
    /// True when a live idle Runtime was asked to stop (end of input).
    pub(crate) runtime_stopping: bool,
}

fn turn_running() -> ProtocolError {
    ProtocolError::new(
        ErrorCode::Conflict,
        "a turn is running or queued; activate a session when the agent is idle",
    )
}

impl Shared {
    /// `session.activate`, first half: the agent's cwd, or `NOT_FOUND` / `CONFLICT` (a
    /// cheap early answer; [`Shared::activate_session`] checks again under the lock).
    pub(crate) fn activation_cwd(&self, agent_id: &str) -> Result<String, ProtocolError> {
        let st = self.lock();
        let entry = st.agents.get(agent_id).ok_or_else(not_found)?;
        check_switchable(entry)?;
        Ok(entry.manifest.cwd.clone())
    }

    /// `session.activate`, second half (the session was found for the agent's cwd):
    /// points the agent at `session_id` and stops a live idle Runtime gracefully, so the
    /// next attach or prompt starts a generation on the new session (docs/decisions.md
    /// "Session activation"). The caller then persists the manifest.
    pub(crate) fn activate_session(
        &self,
        agent_id: &str,
        session_id: &str,
    ) -> Result<Activation, ProtocolError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.shutting_down {
            return Err(ProtocolError::new(
                ErrorCode::Conflict,
                "the daemon is shutting down",
            ));
        }
        if let Some(other) = st
            .agents
            .values()
            .find(|e| e.manifest.agent_id != agent_id && e.manifest.session_id == session_id)
        {
            return Err(ProtocolError::new(
                ErrorCode::Conflict,
                format!(
                    "session {session_id} is the session of agent {}",
                    other.manifest.agent_id
                ),
            ));
        }
        let entry = st.agents.get_mut(agent_id).ok_or_else(not_found)?;
        check_switchable(entry)?;
        let previous_session_id =
            std::mem::replace(&mut entry.manifest.session_id, session_id.to_string());
        if previous_session_id == session_id {
            return Ok(Activation {
                previous_session_id,
                runtime_stopping: false,
            });
        }
        let runtime_stopping = match entry.rt.as_ref() {
            Some(rt) if rt.stopping => true,
            Some(_) => {
                close_stdin(st, agent_id);
                true
            }
            None => false,
        };
        Ok(Activation {
            previous_session_id,
            runtime_stopping,
        })
    }

    /// Undoes [`Self::activate_session`] when its manifest could not be written, so the
    /// agent's next generation opens the session the durable record names (a stopped
    /// Runtime simply restores on it).
    pub(crate) fn revert_session(&self, agent_id: &str, activated: &str, previous: &str) {
        if let Some(entry) = self.lock().agents.get_mut(agent_id)
            && entry.manifest.session_id == activated
        {
            entry.manifest.session_id = previous.to_string();
        }
    }

    /// Writes `agent_id`'s manifest as it is now. Writes are serialized and each reads the
    /// latest in-memory manifest, so an older copy can never land after a newer one.
    pub(crate) async fn persist_manifest(&self, agent_id: &str) -> Result<(), ProtocolError> {
        let _writing = self.manifest_writes.lock().await;
        let manifest = self
            .lock()
            .agents
            .get(agent_id)
            .map(|e| e.manifest.clone())
            .ok_or_else(not_found)?;
        self.store.save(&manifest).await.map_err(|e| {
            ProtocolError::new(
                ErrorCode::InternalError,
                format!("could not record the agent: {e}"),
            )
        })
    }
}

/// An agent may change session only when no turn runs or waits to run: not active, no
/// Runtime starting (its queued commands would run on the old session), no prompt queued
/// for the next generation.
fn check_switchable(entry: &AgentEntry) -> Result<(), ProtocolError> {
    if entry.status.is_active() || entry.pending.iter().any(|p| !p.answered) {
        return Err(turn_running());
    }
    match entry.rt.as_ref() {
        Some(rt) if !rt.ready && !rt.stopping => Err(ProtocolError::new(
            ErrorCode::Conflict,
            "the agent's runtime is starting; retry when it is ready",
        )),
        Some(rt) if !rt.queued_next.is_empty() || !rt.inflight.is_empty() => Err(turn_running()),
        _ => Ok(()),
    }
}
