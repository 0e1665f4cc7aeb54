//! Client commands on a daemon connection: the registry operations of PROTOCOL §10.1 and
//! the routing of per-agent commands (§5.2, §16 items 6 and 8).

use std::sync::Arc;
use std::time::Duration;

use shard_protocol::command::{AgentAttach, AttachRole, ClientMessage, Command, SessionOpKind};
use shard_protocol::responses::{AgentsData, TerminateData};
use shard_protocol::{ErrorCode, Event, PermissionAnswer};

use crate::broker::{self, frame, send_to_runtime};
use crate::state::{AgentEntry, Attachment, ConnId, Inflight, PendingKind, Shared};
use crate::supervisor;

pub(crate) fn reply(shared: &Shared, conn: ConnId, ev: Event) {
    shared.lock().send_to(conn, &frame(&ev));
}

pub(crate) fn fail(
    shared: &Shared,
    conn: ConnId,
    id: Option<String>,
    command: &str,
    code: ErrorCode,
    msg: impl Into<String>,
) {
    reply(shared, conn, Event::err(id, Some(command), code, msg));
}

/// Handles one decoded command from connection `conn`.
pub(crate) async fn dispatch(shared: &Arc<Shared>, conn: ConnId, msg: ClientMessage) {
    let id = msg.id;
    let ty = msg.command.type_name();
    match msg.command {
        Command::AgentList(_) => {
            let data = AgentsData {
                agents: list(shared, None),
            };
            reply(
                shared,
                conn,
                Event::ok(id, ty, serde_json::to_value(data).ok()),
            );
        }
        Command::AgentStatus(q) => {
            let agents = list(shared, q.agent_id.as_deref());
            if q.agent_id.is_some() && agents.is_empty() {
                fail(shared, conn, id, ty, ErrorCode::NotFound, "no such agent");
            } else {
                let data = AgentsData { agents };
                reply(
                    shared,
                    conn,
                    Event::ok(id, ty, serde_json::to_value(data).ok()),
                );
            }
        }
        Command::AgentCreate(c) => crate::create::create(shared, conn, id, *c).await,
        Command::AgentAttach(a) => attach(shared, conn, id, a),
        Command::AgentDetach(r) => {
            let mut guard = shared.lock();
            let st = &mut *guard;
            let removed = st
                .agents
                .get_mut(&r.agent_id)
                .and_then(|e| e.attachments.remove(&conn))
                .is_some();
            let ev = if removed {
                crate::requests::recheck_responders(shared, st);
                Event::ok(id, ty, None)
            } else {
                Event::err(
                    id,
                    Some(ty),
                    ErrorCode::NotAttached,
                    "not attached to that agent",
                )
            };
            st.send_to(conn, &frame(&ev));
        }
        Command::AgentTerminate(r) => {
            let mut guard = shared.lock();
            let st = &mut *guard;
            let ev = match st.agents.get_mut(&r.agent_id) {
                None => Event::err(id, Some(ty), ErrorCode::NotFound, "no such agent"),
                Some(entry) => {
                    let active = entry.status.is_active();
                    let deferred = match entry.rt.as_mut() {
                        None => false,
                        Some(rt) if rt.stopping => false,
                        Some(rt) if active || !rt.ready => {
                            rt.terminate_when_idle = true;
                            true
                        }
                        Some(_) => {
                            broker::close_stdin(st, &r.agent_id);
                            false
                        }
                    };
                    Event::ok(
                        id,
                        ty,
                        serde_json::to_value(TerminateData { deferred }).ok(),
                    )
                }
            };
            st.send_to(conn, &frame(&ev));
        }
        Command::AgentKill(k) => {
            let wait = {
                let mut guard = shared.lock();
                let st = &mut *guard;
                if !st.agents.contains_key(&k.agent_id) {
                    st.reply_err(conn, id, Some(ty), ErrorCode::NotFound, "no such agent");
                    return;
                }
                supervisor::kill_runtime(shared, st, &k.agent_id, k.force.unwrap_or(false))
            };
            let shared = Arc::clone(shared);
            let bound = shared.cfg.kill_grace * 2 + Duration::from_secs(5);
            tokio::spawn(async move {
                if let Some(rx) = wait {
                    let _ = tokio::time::timeout(bound, rx).await;
                }
                reply(&shared, conn, Event::ok(id, ty, None));
            });
        }
        Command::DaemonShutdown(s) => {
            reply(shared, conn, Event::ok(id, ty, None));
            supervisor::begin_shutdown(shared, s.force.unwrap_or(false));
        }
        Command::RequestSync(t) => request_sync(shared, conn, id, t.agent_id),
        Command::PermissionResponse(mut p) => {
            let Some(agent_id) = p.agent_id.take() else {
                return fail(
                    shared,
                    conn,
                    id,
                    ty,
                    ErrorCode::NotAttached,
                    "agent_id is required on a daemon connection",
                );
            };
            let request_id = p.request_id.clone();
            let answer = p.answer.clone();
            p.source = Some(format!("client-{conn}"));
            answer_request(
                shared,
                conn,
                id,
                ty,
                &agent_id,
                &request_id,
                Some(answer),
                Command::PermissionResponse(p),
            );
        }
        Command::UiResponse(mut u) => {
            let Some(agent_id) = u.agent_id.take() else {
                return fail(
                    shared,
                    conn,
                    id,
                    ty,
                    ErrorCode::NotAttached,
                    "agent_id is required on a daemon connection",
                );
            };
            let request_id = u.request_id.clone();
            answer_request(
                shared,
                conn,
                id,
                ty,
                &agent_id,
                &request_id,
                None,
                Command::UiResponse(u),
            );
        }
        c if c.is_per_agent() => forward(shared, conn, id, c).await,
        _ => fail(
            shared,
            conn,
            id,
            ty,
            ErrorCode::InvalidRequest,
            format!("`{ty}` is not supported by this daemon yet"),
        ),
    }
}

fn list(shared: &Shared, one: Option<&str>) -> Vec<shard_protocol::types::AgentInfo> {
    let st = shared.lock();
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

fn attach(shared: &Arc<Shared>, conn: ConnId, id: Option<String>, a: AgentAttach) {
    let ty = "agent.attach";
    let mut guard = shared.lock();
    let st = &mut *guard;
    let Some(entry) = st.agents.get_mut(&a.agent_id) else {
        st.reply_err(conn, id, Some(ty), ErrorCode::NotFound, "no such agent");
        return;
    };
    // Reserve: from here on events are held back for this client until its sync.
    entry.attachments.insert(
        conn,
        Attachment {
            role: a.role.unwrap_or_default(),
            awaiting_sync: true,
            attach_reply: Some(id.clone()),
        },
    );
    if let Some(rt) = entry.rt.as_mut()
        && rt.ready
        && !rt.stopping
        && send_to_runtime(
            shared,
            rt,
            Command::RequestSync(Default::default()),
            Inflight::Sync,
        )
    {
        rt.sync_requests += 1;
        return;
    }
    // Not live: start (or join the start of) a generation; its first sync serves us.
    if let Err(e) = supervisor::ensure_started(shared, st, &a.agent_id) {
        if let Some(entry) = st.agents.get_mut(&a.agent_id) {
            entry.attachments.remove(&conn);
        }
        st.reply_err(conn, id, Some(ty), ErrorCode::RuntimeStartFailed, e);
    }
}

fn request_sync(shared: &Arc<Shared>, conn: ConnId, id: Option<String>, agent_id: Option<String>) {
    let ty = "request_sync";
    let mut st = shared.lock();
    let Some(entry) = agent_id.as_ref().and_then(|a| st.agents.get_mut(a)) else {
        drop(st);
        return fail(
            shared,
            conn,
            id,
            ty,
            ErrorCode::NotAttached,
            "not attached to that agent",
        );
    };
    let Some(att) = entry.attachments.get_mut(&conn) else {
        drop(st);
        return fail(
            shared,
            conn,
            id,
            ty,
            ErrorCode::NotAttached,
            "not attached to that agent",
        );
    };
    let Some(rt) = entry.rt.as_mut().filter(|rt| rt.ready && !rt.stopping) else {
        drop(st);
        return fail(
            shared,
            conn,
            id,
            ty,
            ErrorCode::Conflict,
            "the agent's runtime is not running",
        );
    };
    att.awaiting_sync = true;
    if send_to_runtime(
        shared,
        rt,
        Command::RequestSync(Default::default()),
        Inflight::ClientSync {
            conn,
            client_id: id,
        },
    ) {
        rt.sync_requests += 1;
    }
}

/// First valid answer wins (PROTOCOL §6.3, §9.5); late answers are dropped silently.
#[allow(clippy::too_many_arguments)]
fn answer_request(
    shared: &Arc<Shared>,
    conn: ConnId,
    id: Option<String>,
    ty: &'static str,
    agent_id: &str,
    request_id: &str,
    answer: Option<PermissionAnswer>,
    command: Command,
) {
    let mut guard = shared.lock();
    let st = &mut *guard;
    if !st.may_answer(conn, agent_id) {
        let observer = st
            .agents
            .get(agent_id)
            .is_some_and(|e| e.attachments.contains_key(&conn));
        let (code, msg) = if observer {
            (
                ErrorCode::PermissionDenied,
                "observers never answer requests",
            )
        } else {
            (
                ErrorCode::NotAttached,
                "not attached to that agent or an ancestor",
            )
        };
        st.reply_err(conn, id, Some(ty), code, msg);
        return;
    }
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return;
    };
    let Some(p) = entry
        .pending
        .iter_mut()
        .find(|p| p.request_id == request_id && !p.answered)
    else {
        // Late or unknown: discarded silently (not an error), PROTOCOL §6.3.
        st.send_to(conn, &frame(&Event::ok(id, ty, None)));
        return;
    };
    let valid = match (&p.kind, &answer) {
        (PendingKind::Permission { choices, .. }, Some(PermissionAnswer::Choice { choice_id })) => {
            choices.contains(choice_id)
        }
        (
            PendingKind::Permission { options, .. },
            Some(PermissionAnswer::Decision { decision }),
        ) => options.is_empty() || options.contains(decision),
        (PendingKind::Ui, None) => true,
        _ => false,
    };
    if !valid {
        st.reply_err(
            conn,
            id,
            Some(ty),
            ErrorCode::InvalidRequest,
            "the answer does not match the pending request; it stays open",
        );
        return;
    }
    p.answered = true;
    if let Some(t) = p.headless_timer.take() {
        t.abort();
    }
    let sent = entry.rt.as_mut().is_some_and(|rt| {
        send_to_runtime(
            shared,
            rt,
            command,
            Inflight::Client {
                conn,
                client_id: id.clone(),
                command: ty,
            },
        )
    });
    if !sent {
        st.reply_err(
            conn,
            id,
            Some(ty),
            ErrorCode::Conflict,
            "the agent's runtime is not running",
        );
    }
}

/// Observers are read-only (§16 item 8): these are the commands they may send.
fn is_read_only(c: &Command) -> bool {
    match c {
        Command::ListModes(_) | Command::ListModels(_) | Command::ListReasoningLevels(_) => true,
        Command::SessionOp(s) => s.op == SessionOpKind::List,
        _ => false,
    }
}

async fn forward(shared: &Arc<Shared>, conn: ConnId, id: Option<String>, command: Command) {
    let ty = command.type_name();
    let Some(agent_id) = command.routing_agent_id().map(str::to_string) else {
        return fail(
            shared,
            conn,
            id,
            ty,
            ErrorCode::NotAttached,
            "per-agent commands need agent_id on a daemon connection",
        );
    };
    let read_only = is_read_only(&command);
    let wait = {
        let mut guard = shared.lock();
        let st = &mut *guard;
        let role = st
            .agents
            .get(&agent_id)
            .and_then(|e| e.attachments.get(&conn))
            .map(|a| a.role);
        match role {
            None => {
                st.reply_err(
                    conn,
                    id,
                    Some(ty),
                    ErrorCode::NotAttached,
                    "not attached to that agent",
                );
                return;
            }
            Some(AttachRole::Observer) if !read_only => {
                st.reply_err(
                    conn,
                    id,
                    Some(ty),
                    ErrorCode::PermissionDenied,
                    "observers are read-only",
                );
                return;
            }
            _ => {}
        }
        if read_only {
            // Listing never wakes a stopped Runtime (PROTOCOL §9.2).
            let live = st
                .agents
                .get(&agent_id)
                .and_then(|e| e.rt.as_ref())
                .is_some_and(|rt| rt.ready && !rt.stopping);
            if !live {
                st.reply_err(
                    conn,
                    id,
                    Some(ty),
                    ErrorCode::Conflict,
                    "the agent's runtime is not running; listing does not wake it",
                );
                return;
            }
            None
        } else {
            match supervisor::ensure_started(shared, st, &agent_id) {
                Ok(w) => w,
                Err(e) => {
                    st.reply_err(conn, id, Some(ty), ErrorCode::RuntimeStartFailed, e);
                    return;
                }
            }
        }
    };
    if let Some(rx) = wait {
        let ready = match tokio::time::timeout(shared.cfg.ready_timeout * 2, rx).await {
            Ok(Ok(r)) => r,
            _ => Err("the runtime did not become ready".into()),
        };
        if let Err(e) = ready {
            return fail(
                shared,
                conn,
                id,
                ty,
                ErrorCode::RuntimeStartFailed,
                format!("the agent's runtime failed to start: {e}"),
            );
        }
    }
    let mut guard = shared.lock();
    let st = &mut *guard;
    let sent = st
        .agents
        .get_mut(&agent_id)
        .and_then(|e| e.rt.as_mut())
        .is_some_and(|rt| {
            let ok = send_to_runtime(
                shared,
                rt,
                command,
                Inflight::Client {
                    conn,
                    client_id: id.clone(),
                    command: ty,
                },
            );
            if ok && rt.idle_since.is_some() {
                rt.idle_since = Some(std::time::Instant::now());
            }
            ok
        });
    if !sent {
        st.reply_err(
            conn,
            id,
            Some(ty),
            ErrorCode::RuntimeStartFailed,
            "the agent's runtime stopped before the command could be sent; retry",
        );
    }
}
