//! The core's API: every operation the connection layer and the handlers may do on the
//! registry. Each method takes the lock, does bounded non-blocking work, and returns a
//! value or a [`ProtocolError`]; none awaits, so a lock can never be held across an
//! `.await` and no handler has to remember to release it before answering.
//!
//! Its parts, each an `impl Shared` block: connections and listing (here), the clients
//! of an agent (`clients`: attach, detach, sync, answers, forwarding), an agent's life
//! (`lifecycle`: reserve, start, name, terminate, kill, archive) and its sessions
//! (`sessions`: `session.activate`).

mod clients;
mod errors;
mod lifecycle;
mod sessions;

pub(crate) use errors::shutting_down;

use std::sync::Arc;

use shard_protocol::ErrorCode;
use shard_protocol::types::AgentInfo;

use super::requests;
use super::state::{AgentEntry, ConnEntry, ConnId, Shared};
use crate::manifest::AgentManifest;
use crate::outbox::Outbox;
use crate::principal::Principal;
use crate::reply::ProtocolError;

/// Reads an `agent.list` cursor (`<created_at>.<agent_id>`, as `next_after` wrote it).
fn parse_cursor(c: &str) -> Result<(u64, String), ProtocolError> {
    c.split_once('.')
        .and_then(|(at, id)| Some((at.parse().ok()?, id.to_string())))
        .ok_or_else(|| {
            ProtocolError::new(
                ErrorCode::InvalidRequest,
                "after: not a cursor this daemon gave out (pass the next_after of the previous page)",
            )
        })
}

impl Shared {
    /// Loads the manifests read at startup.
    pub(crate) fn add_loaded(&self, manifests: Vec<AgentManifest>) {
        let mut st = self.lock();
        for m in manifests {
            st.agents.insert(m.agent_id.clone(), AgentEntry::new(m));
        }
    }

    /// Sends an orchestrator event (workspace events) to every connection.
    pub(crate) fn broadcast_event(&self, ev: &shard_protocol::Event) {
        self.lock().broadcast(&crate::wire::frame(ev));
    }

    /// Registers a connection (or in-process subscriber) and its queue.
    pub(crate) fn register_conn(
        &self,
        conn: ConnId,
        outbox: Arc<Outbox>,
        principal: Principal,
        broadcasts: bool,
    ) {
        self.lock().conns.insert(
            conn,
            ConnEntry {
                outbox,
                principal,
                broadcasts,
            },
        );
    }

    /// Changes a connection's principal (after `runtime.auth`).
    pub(crate) fn set_principal(&self, conn: ConnId, principal: Principal) {
        if let Some(c) = self.lock().conns.get_mut(&conn) {
            c.principal = principal;
        }
    }

    /// Forgets a connection: its attachments end, requests it could answer look for
    /// another responder.
    pub(crate) fn unregister_conn(self: &Arc<Self>, conn: ConnId) {
        let mut guard = self.lock();
        let st = &mut *guard;
        st.conns.remove(&conn);
        for e in st.agents.values_mut() {
            e.remove_attachment(conn);
            for p in &mut e.pending {
                p.delivered_to.remove(&conn);
            }
        }
        requests::recheck_responders(self, st);
    }

    /// Every connection's queue, for a graceful end at shutdown.
    pub(crate) fn outboxes(&self) -> Vec<Arc<Outbox>> {
        self.lock()
            .conns
            .values()
            .map(|c| Arc::clone(&c.outbox))
            .collect()
    }

    /// Pids of the Runtimes this daemon started and that are still live.
    pub(crate) fn runtime_pids(&self) -> Vec<u32> {
        self.lock()
            .agents
            .values()
            .filter_map(|e| e.rt.as_ref().and_then(|r| r.pid))
            .collect()
    }

    /// True when `token` is the `SHARD_AGENT_TOKEN` of `agent_id`'s live Runtime
    /// (compared in constant time against the kept hash).
    pub(crate) fn runtime_token_valid(&self, agent_id: &str, token: &str) -> bool {
        let st = self.lock();
        st.agents
            .get(agent_id)
            .and_then(|e| e.rt.as_ref())
            .is_some_and(|rt| crate::principal::token_matches(token, &rt.token_hash))
    }

    /// `agent.list` / `agent.status`: agents by creation time.
    pub(crate) fn list_agents(&self, one: Option<&str>) -> Vec<AgentInfo> {
        let st = self.lock();
        let mut v: Vec<_> = match one {
            // One agent is a map lookup, not a pass over thousands.
            Some(a) => st.agents.get(a).map(AgentEntry::info).into_iter().collect(),
            None => st.agents.values().map(AgentEntry::info).collect(),
        };
        v.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then_with(|| a.agent_id.cmp(&b.agent_id))
        });
        v
    }

    /// `agent.list`: the agents' encoded `AgentInfo`s in list order (creation time, then
    /// id), from `after` on and at most `limit` of them, with the cursor of the next page
    /// when some were left out. Only agents changed since the last listing are encoded
    /// again; the rest are shared copies of cached bytes.
    pub(crate) fn list_agents_encoded(
        &self,
        after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<(Vec<bytes::Bytes>, Option<String>), ProtocolError> {
        let after = after.map(parse_cursor).transpose()?;
        let mut guard = self.lock();
        let mut keyed: Vec<(u64, &str, &mut AgentEntry)> = guard
            .agents
            .iter_mut()
            .map(|(id, e)| (e.manifest.created_at, id.as_str(), e))
            .filter(|(at, id, _)| {
                after
                    .as_ref()
                    .is_none_or(|(a_at, a_id)| (*at, *id) > (*a_at, a_id.as_str()))
            })
            .collect();
        keyed.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let limit = limit.unwrap_or(usize::MAX).max(1);
        let next = (keyed.len() > limit).then(|| {
            let (at, id, _) = &keyed[limit - 1];
            format!("{at}.{id}")
        });
        let page = keyed
            .into_iter()
            .take(limit)
            .map(|(_, _, e)| e.encoded_info())
            .collect();
        Ok((page, next))
    }
}
