//! What the subagent coordinator (`crate::jobs`) needs of the registry, as core API: who
//! a connection is, what a parent looks like, sending a command to an agent as the
//! daemon itself (no attachment), and telling the owner's connections about its runs.
//! Like the rest of `core::api`, every method locks, does bounded work and returns.

use std::sync::Arc;

use bytes::Bytes;
use shard_protocol::ErrorCode;
use shard_protocol::command::{Command, HeadlessPolicy};
use tokio::sync::oneshot;

use super::state::{ConnId, Inflight, Shared};
use crate::manifest::AgentManifest;
use crate::principal::Principal;
use crate::reply::{ProtocolError, Responder};

/// A parent agent as the coordinator sees it when it launches children.
#[derive(Debug, Clone)]
pub(crate) struct AgentView {
    /// The durable record.
    pub manifest: AgentManifest,
    /// The mode in effect (the Runtime's report, else the manifest's).
    pub mode: Option<String>,
    /// True while a turn runs or is waiting on a request.
    pub active: bool,
    /// Number of ancestors (a top-level agent is 0).
    pub depth: u32,
    /// The parent's headless policy, which its children inherit.
    pub headless_policy: HeadlessPolicy,
}

impl Shared {
    /// Who is on the other end of `conn`.
    pub(crate) fn principal_of(&self, conn: ConnId) -> Option<Principal> {
        self.lock().conns.get(&conn).map(|c| c.principal.clone())
    }

    /// The queue of `conn` while it is registered: a waiter watches it to stop when its
    /// connection goes.
    pub(crate) fn conn_outbox(&self, conn: ConnId) -> Option<Arc<crate::outbox::Outbox>> {
        self.lock().conns.get(&conn).map(|c| Arc::clone(&c.outbox))
    }

    /// A snapshot of one agent, or `None` when it does not exist.
    pub(crate) fn agent_view(&self, agent_id: &str) -> Option<AgentView> {
        let st = self.lock();
        let entry = st.agents.get(agent_id)?;
        let mut depth = 0;
        let mut cur = entry.manifest.parent_agent_id.clone();
        while let Some(p) = cur {
            depth += 1;
            if depth > 64 {
                break;
            }
            cur = st
                .agents
                .get(&p)
                .and_then(|e| e.manifest.parent_agent_id.clone());
        }
        Some(AgentView {
            manifest: entry.manifest.clone(),
            mode: entry.mode.clone().or_else(|| entry.manifest.mode.clone()),
            active: entry.status.is_active(),
            depth,
            headless_policy: entry.manifest.headless_policy,
        })
    }

    /// Sends `frame` to the connections of `parent`: the clients attached to it (past
    /// their attach handshake, as every agent event: `deliver::fan_out`) and its
    /// authenticated Runtime connections.
    pub(crate) fn send_to_owner(&self, parent: &str, frame: &Bytes) {
        let st = self.lock();
        super::deliver::fan_out(&st, parent, frame);
        let attachments = st.agents.get(parent).map(|e| &e.attachments);
        for (id, c) in &st.conns {
            let attached = attachments.is_some_and(|a| a.contains_key(id));
            if !attached && c.principal.runtime_agent() == Some(parent) {
                c.outbox.push(frame.clone());
            }
        }
    }

    /// Ok when `conn` may drive `agent_id` (attached, not as an observer): what a
    /// person's steer or abort to a leased child needs before the coordinator acts on it.
    pub(crate) fn check_may_drive(
        &self,
        conn: ConnId,
        agent_id: &str,
    ) -> Result<(), ProtocolError> {
        let st = self.lock();
        let role = st
            .agents
            .get(agent_id)
            .and_then(|e| e.attachments.get(&conn))
            .map(|a| a.role);
        match role {
            None => Err(ProtocolError::new(
                ErrorCode::NotAttached,
                "not attached to that agent",
            )),
            Some(shard_protocol::command::AttachRole::Observer) => Err(ProtocolError::new(
                ErrorCode::PermissionDenied,
                "observers are read-only",
            )),
            Some(_) => Ok(()),
        }
    }

    /// Fires when the agent's current Runtime generation exits; `None` when none is live.
    pub(crate) fn exit_waiter(&self, agent_id: &str) -> Option<oneshot::Receiver<()>> {
        let mut st = self.lock();
        let rt = st.agents.get_mut(agent_id)?.rt.as_mut()?;
        let (tx, rx) = oneshot::channel();
        rt.exit_waiters.push(tx);
        Some(rx)
    }

    /// Sends `command` to `agent_id` as the daemon itself (no attachment needed), starting
    /// a Runtime generation when none is live; `responder` gets the Runtime's answer.
    pub(crate) fn drive(
        self: &Arc<Self>,
        agent_id: &str,
        command: Command,
        responder: Responder,
    ) -> Result<(), ProtocolError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.shutting_down {
            return Err(super::api::shutting_down());
        }
        if !st.agents.contains_key(agent_id) {
            return Err(ProtocolError::new(ErrorCode::NotFound, "no such agent"));
        }
        super::route::route(self, st, agent_id, command, Inflight::Client(responder));
        Ok(())
    }
}
