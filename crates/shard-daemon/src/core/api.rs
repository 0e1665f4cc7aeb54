//! The core's API: every operation the connection layer and the handlers may do on the
//! registry. Each method takes the lock, does bounded non-blocking work, and returns a
//! value or a [`ProtocolError`]; none awaits, so a lock can never be held across an
//! `.await` and no handler has to remember to release it before answering.

use std::sync::Arc;

use shard_protocol::command::kind;
use shard_protocol::command::{AgentAttach, AttachRole, Command};
use shard_protocol::types::AgentInfo;
use shard_protocol::{CommandSpec, ErrorCode, PermissionAnswer};
use tokio::sync::oneshot;

use super::deliver::{close_stdin, send_to_runtime};
use super::requests;
use super::route::route;
use super::state::{AgentEntry, Attachment, ConnEntry, ConnId, Inflight, PendingKind, Shared};
use super::supervisor::{self, ReadyRx};
use crate::manifest::AgentManifest;
use crate::outbox::Outbox;
use crate::principal::Principal;
use crate::reply::{ProtocolError, Reply, ReplySlot};

fn not_found() -> ProtocolError {
    ProtocolError::new(ErrorCode::NotFound, "no such agent")
}

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

/// The empty success of `permission_response` and `ui_response`, whose responses are both
/// `()` in the command table (the second line checks that the two never drift apart).
fn answered_nothing() -> Reply {
    let _same: <kind::UiResponse as CommandSpec>::Response = ();
    Reply::empty::<kind::PermissionResponse>()
}

fn not_running() -> ProtocolError {
    ProtocolError::new(ErrorCode::Conflict, "the agent's runtime is not running")
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
            e.attachments.remove(&conn);
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
        let mut v: Vec<_> = st
            .agents
            .values()
            .filter(|e| one.is_none_or(|a| e.manifest.agent_id == a))
            .map(AgentEntry::info)
            .collect();
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
            .and_then(|e| e.attachments.remove(&conn))
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

    /// `agent.archive`: marks the agent archived and stops its Runtime; returns the
    /// manifest to persist and what resolves when the Runtime is gone.
    pub(crate) fn archive(
        self: &Arc<Self>,
        agent_id: &str,
    ) -> Result<(AgentManifest, Option<oneshot::Receiver<()>>), ProtocolError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let entry = st.agents.get_mut(agent_id).ok_or_else(not_found)?;
        let newly = !entry.manifest.archived;
        entry.manifest.archived = true;
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
        // Reserve: from here on events are held back for this client until its sync.
        entry.attachments.insert(
            conn,
            Attachment {
                role: a.role.unwrap_or_default(),
                awaiting_sync: true,
                attach_reply: Some(slot.defer()?),
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
                .and_then(|e| e.attachments.remove(&conn))
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
        let rt = entry
            .rt
            .as_mut()
            .filter(|rt| rt.ready && !rt.stopping)
            .ok_or_else(not_running)?;
        att.awaiting_sync = true;
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

/// The one error for commands that arrive while the daemon shuts down.
pub(super) fn shutting_down() -> ProtocolError {
    ProtocolError::new(ErrorCode::RuntimeStartFailed, "the daemon is shutting down")
}

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
