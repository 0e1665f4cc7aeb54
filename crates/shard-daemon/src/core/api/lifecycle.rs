//! An agent's life in the registry: reserved at create, started, named from its first
//! prompt, terminated, killed, archived, or forgotten when its creation failed.

use std::sync::Arc;

use shard_protocol::ErrorCode;
use tokio::sync::oneshot;

use super::super::deliver::close_stdin;
use super::super::state::{AgentEntry, Shared};
use super::super::supervisor::{self, ReadyRx};
use super::errors::not_found;
use crate::manifest::AgentManifest;
use crate::reply::ProtocolError;

impl Shared {
    /// `agent.terminate`: stops an inactive agent now, an active one when it next idles.
    /// Returns whether the stop was deferred.
    pub(crate) fn terminate(&self, agent_id: &str) -> Result<bool, ProtocolError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let entry = st.agents.get_mut(agent_id).ok_or_else(not_found)?;
        let active = entry.status.is_active();
        let deferred = match entry.rt.as_mut() {
            None => false,
            Some(rt) if rt.stopping => false,
            Some(rt) if active || !rt.ready => {
                rt.terminate_when_idle = true;
                true
            }
            Some(_) => {
                close_stdin(st, agent_id);
                false
            }
        };
        Ok(deferred)
    }

    /// `agent.kill`: resolves when the Runtime is gone (`None`: none was live).
    pub(crate) fn kill(
        self: &Arc<Self>,
        agent_id: &str,
        force: bool,
    ) -> Result<Option<oneshot::Receiver<()>>, ProtocolError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        if !st.agents.contains_key(agent_id) {
            return Err(not_found());
        }
        Ok(supervisor::kill_runtime(self, st, agent_id, force))
    }

    /// An agent created without a name is named after its first prompt (`fix-the-login`),
    /// so lists tell agents apart; returns the manifest to persist when it was named.
    pub(crate) fn name_from_first_prompt(
        &self,
        agent_id: &str,
        prompt: &str,
    ) -> Option<AgentManifest> {
        let name = short_name(prompt)?;
        let mut st = self.lock();
        let entry = st.agents.get_mut(agent_id)?;
        if entry.manifest.name.is_some() {
            return None;
        }
        entry.manifest.name = Some(name);
        Some(entry.manifest.clone())
    }

    /// `agent.archive`: marks the agent archived, drops the client's MCP servers (and
    /// their secrets) and stops its Runtime; returns the manifest to persist and what
    /// resolves when the Runtime is gone.
    pub(crate) fn archive(
        self: &Arc<Self>,
        agent_id: &str,
    ) -> Result<(AgentManifest, Option<oneshot::Receiver<()>>), ProtocolError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let entry = st.agents.get_mut(agent_id).ok_or_else(not_found)?;
        let newly = !entry.manifest.archived;
        entry.manifest.archived = true;
        // An archived agent's Runtime is never started again with the editor's servers
        // (the editor that made them is gone): their secrets leave the manifest with it.
        entry.manifest.mcp_servers.clear();
        let manifest = entry.manifest.clone();
        if newly {
            st.broadcast(&crate::wire::frame(&shard_protocol::Event::AgentArchived(
                shard_protocol::orchestrator::AgentArchived {
                    agent_id: agent_id.to_string(),
                },
            )));
        }
        Ok((
            manifest,
            supervisor::kill_runtime(self, st, agent_id, false),
        ))
    }

    /// Reserves a new agent in the registry; two concurrent adoptions of one session
    /// cannot both win.
    pub(crate) fn reserve_agent(&self, manifest: &AgentManifest) -> Result<(), ProtocolError> {
        let mut st = self.lock();
        if st.shutting_down {
            return Err(ProtocolError::new(
                ErrorCode::Conflict,
                "the daemon is shutting down",
            ));
        }
        if let Some(p) = &manifest.parent_agent_id
            && !st.agents.contains_key(p)
        {
            return Err(ProtocolError::new(
                ErrorCode::NotFound,
                "parent_agent_id names no agent",
            ));
        }
        if manifest.adopted
            && st
                .agents
                .values()
                .any(|e| e.manifest.session_id == manifest.session_id)
        {
            return Err(ProtocolError::new(
                ErrorCode::InvalidRequest,
                "session is already adopted",
            ));
        }
        st.agents
            .insert(manifest.agent_id.clone(), AgentEntry::new(manifest.clone()));
        Ok(())
    }

    /// Drops an agent whose creation failed before anything durable was written.
    pub(crate) fn forget_agent(&self, agent_id: &str) {
        self.lock().agents.remove(agent_id);
    }

    /// Makes sure a Runtime is live or starting (`Ok(None)`: ready now).
    pub(crate) fn start_agent(self: &Arc<Self>, agent_id: &str) -> Result<Option<ReadyRx>, String> {
        let mut st = self.lock();
        supervisor::ensure_started(self, &mut st, agent_id)
    }
}

/// A short name from a prompt: its first words, lower case, letters and digits only,
/// joined by `-`, at most 32 characters; `None` when nothing usable is left.
pub(crate) fn short_name(prompt: &str) -> Option<String> {
    let mut name = String::new();
    for word in prompt.split_whitespace().take(5) {
        let w: String = word
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        if w.is_empty() {
            continue;
        }
        if name.chars().count() + w.chars().count() + 1 > 32 {
            break;
        }
        if !name.is_empty() {
            name.push('-');
        }
        name.push_str(&w);
    }
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod name_tests {
    use super::short_name;

    #[test]
    fn a_prompt_gives_a_short_name() {
        assert_eq!(
            short_name("Fix the login bug, please: it fails!").as_deref(),
            Some("fix-the-login-bug-please")
        );
        assert_eq!(short_name("  …  ").as_deref(), None);
        let long = short_name("supercalifragilistic expialidocious words here").unwrap();
        assert!(long.chars().count() <= 32, "{long}");
    }
}
