//! The clients of an agent: attach and detach, `sync` on request, the answers to its
//! permission and UI requests, and every other command forwarded to its Runtime.

use std::sync::Arc;

use shard_protocol::command::{AgentAttach, AttachRole, Command};
use shard_protocol::{ErrorCode, PermissionAnswer};

use super::super::deliver::send_to_runtime;
use super::super::requests;
use super::super::route::route;
use super::super::state::{Attachment, ConnId, Inflight, PendingKind, Shared};
use super::super::supervisor::{self};
use super::errors::{answered_nothing, not_found, not_running, shutting_down};
use crate::reply::{ProtocolError, Reply, ReplySlot};

impl Shared {
    /// `agent.detach`.
    pub(crate) fn detach(
        self: &Arc<Self>,
        conn: ConnId,
        agent_id: &str,
    ) -> Result<(), ProtocolError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let removed = st
            .agents
            .get_mut(agent_id)
            .and_then(|e| e.remove_attachment(conn))
            .is_some();
        if !removed {
            return Err(ProtocolError::new(
                ErrorCode::NotAttached,
                "not attached to that agent",
            ));
        }
        requests::recheck_responders(self, st);
        Ok(())
    }

    /// `agent.attach`: answered by the first `sync` that reaches this client.
    pub(crate) fn attach(
        self: &Arc<Self>,
        conn: ConnId,
        a: AgentAttach,
        slot: &mut ReplySlot,
    ) -> Result<Reply, ProtocolError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let entry = st.agents.get_mut(&a.agent_id).ok_or_else(not_found)?;
        let outbox = st
            .conns
            .get(&conn)
            .map(|c| Arc::clone(&c.outbox))
            .ok_or_else(|| {
                ProtocolError::new(ErrorCode::InternalError, "the connection is closing")
            })?;
        // Reserve: from here on events are held back for this client until its sync.
        entry.insert_attachment(
            conn,
            Attachment {
                role: a.role.unwrap_or_default(),
                awaiting_sync: true,
                attach_reply: Some(slot.defer()?),
                outbox,
            },
        );
        if let Some(rt) = entry.rt.as_mut()
            && rt.ready
            && !rt.stopping
            && send_to_runtime(
                self,
                rt,
                Command::RequestSync(Default::default()),
                Inflight::Sync,
            )
            .is_ok()
        {
            rt.sync_requests += 1;
            return Ok(Reply::Deferred);
        }
        // Not live: start (or join the start of) a generation; its first sync serves us.
        if let Err(e) = supervisor::ensure_started(self, st, &a.agent_id) {
            let responder = st
                .agents
                .get_mut(&a.agent_id)
                .and_then(|e| e.remove_attachment(conn))
                .and_then(|att| att.attach_reply);
            if let Some(r) = responder {
                r.fail(ProtocolError::new(ErrorCode::RuntimeStartFailed, e));
            }
        }
        Ok(Reply::Deferred)
    }

    /// `request_sync` on a daemon connection: a fresh `sync` for this client.
    pub(crate) fn request_sync(
        self: &Arc<Self>,
        conn: ConnId,
        agent_id: Option<&str>,
        slot: &mut ReplySlot,
    ) -> Result<Reply, ProtocolError> {
        let detached = || ProtocolError::new(ErrorCode::NotAttached, "not attached to that agent");
        let mut st = self.lock();
        let entry = agent_id
            .and_then(|a| st.agents.get_mut(a))
            .ok_or_else(detached)?;
        let att = entry.attachments.get_mut(&conn).ok_or_else(detached)?;
        if !entry.rt.as_ref().is_some_and(|rt| rt.ready && !rt.stopping) {
            return Err(not_running());
        }
        att.awaiting_sync = true;
        entry.refresh_fanout();
        let Some(rt) = entry.rt.as_mut() else {
            return Err(not_running());
        };
        match send_to_runtime(
            self,
            rt,
            Command::RequestSync(Default::default()),
            Inflight::ClientSync(slot.defer()?),
        ) {
            Ok(()) => rt.sync_requests += 1,
            Err(inf) => inf.fail(ErrorCode::Conflict, "the agent's runtime is not running"),
        }
        Ok(Reply::Deferred)
    }

    /// `permission_response` / `ui_response`: first valid answer wins (docs/protocol.md §6.3,
    /// §9.5); late answers are acknowledged and dropped.
    pub(crate) fn answer_request(
        self: &Arc<Self>,
        conn: ConnId,
        agent_id: &str,
        request_id: &str,
        answer: Option<PermissionAnswer>,
        command: Command,
        slot: &mut ReplySlot,
    ) -> Result<Reply, ProtocolError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        if !st.may_answer(conn, agent_id) {
            let observer = st
                .agents
                .get(agent_id)
                .is_some_and(|e| e.attachments.contains_key(&conn));
            return Err(if observer {
                ProtocolError::new(
                    ErrorCode::PermissionDenied,
                    "observers never answer requests",
                )
            } else {
                ProtocolError::new(
                    ErrorCode::NotAttached,
                    "not attached to that agent or an ancestor",
                )
            });
        }
        let entry = st.agents.get_mut(agent_id).ok_or_else(not_found)?;
        let Some(p) = entry
            .pending
            .iter_mut()
            .find(|p| p.request_id == request_id && !p.answered)
        else {
            // Late or unknown: discarded silently (not an error), docs/protocol.md §6.3.
            return Ok(answered_nothing());
        };
        let valid = match (&p.kind, &answer) {
            (
                PendingKind::Permission { choices, .. },
                Some(PermissionAnswer::Choice { choice_id }),
            ) => choices.contains(choice_id),
            (
                PendingKind::Permission { options, .. },
                Some(PermissionAnswer::Decision { decision }),
            ) => options.is_empty() || options.contains(decision),
            (PendingKind::Ui, None) => true,
            _ => false,
        };
        if !valid {
            return Err(ProtocolError::new(
                ErrorCode::InvalidRequest,
                "the answer does not match the pending request; it stays open",
            ));
        }
        let rt = entry.rt.as_mut().ok_or_else(not_running)?;
        p.answered = true;
        if let Some(t) = p.headless_timer.take() {
            t.abort();
        }
        if let Err(inf) = send_to_runtime(self, rt, command, Inflight::Client(slot.defer()?)) {
            inf.fail(ErrorCode::Conflict, "the agent's runtime is not running");
        }
        Ok(Reply::Deferred)
    }

    /// A per-agent command from a client: checked against its attachment, then sent to
    /// the Runtime, or queued on a generation that is starting (sent in arrival order at
    /// its first `sync`), so the connection never waits for a Runtime to start.
    pub(crate) fn forward(
        self: &Arc<Self>,
        conn: ConnId,
        agent_id: &str,
        command: Command,
        read_only: bool,
        slot: &mut ReplySlot,
    ) -> Result<Reply, ProtocolError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.shutting_down && !read_only {
            return Err(shutting_down());
        }
        let entry = st.agents.get_mut(agent_id).ok_or_else(|| {
            ProtocolError::new(ErrorCode::NotAttached, "not attached to that agent")
        })?;
        match entry.attachments.get(&conn).map(|a| a.role) {
            None => {
                return Err(ProtocolError::new(
                    ErrorCode::NotAttached,
                    "not attached to that agent",
                ));
            }
            Some(AttachRole::Observer) if !read_only => {
                return Err(ProtocolError::new(
                    ErrorCode::PermissionDenied,
                    "observers are read-only",
                ));
            }
            _ => {}
        }
        let live = entry.rt.as_ref().is_some_and(|rt| rt.ready && !rt.stopping);
        if read_only && !live {
            // Listing never wakes a stopped Runtime (docs/protocol.md §9.2).
            return Err(ProtocolError::new(
                ErrorCode::Conflict,
                "the agent's runtime is not running; listing does not wake it",
            ));
        }
        let inflight = Inflight::Client(slot.defer()?);
        route(self, st, agent_id, command, inflight);
        Ok(Reply::Deferred)
    }
}
