//! Client commands on a daemon connection: the registry operations of docs/protocol.md §10.1 and
//! the routing of per-agent commands (§5.2, §16 items 6 and 8). Handlers return
//! `Result<Reply, ProtocolError>`; the connection layer sends the one response. Fast
//! handlers run inline; slow ones (`agent.create`, `agent.kill`) come back as a future
//! the connection layer spawns, so a connection's read loop never waits on them.

use std::sync::Arc;
use std::time::Duration;

use shard_protocol::ErrorCode;
use shard_protocol::command::SessionActivate;
use shard_protocol::command::kind;
use shard_protocol::command::{Command, SessionOpKind};
use shard_protocol::responses::{AgentsData, SessionActivated, SessionListData, TerminateData};

use crate::core::{ConnId, Shared, begin_shutdown};
use crate::jobs::Jobs;
use crate::reply::{Handled, ProtocolError, Reply, ReplySlot};
use crate::workspaces::Workspaces;

/// What commands are applied to: the registry (`core`) and the services on top of it.
/// Built once by the server; each connection holds a clone.
#[derive(Clone)]
pub(crate) struct Services {
    /// The registry: agents, Runtimes, attachments, requests, connections.
    pub core: Arc<Shared>,
    /// Subagent jobs.
    pub jobs: Arc<Jobs>,
    /// Git-worktree workspaces.
    pub workspaces: Arc<Workspaces>,
}

impl Services {
    /// The services on top of `core`; their records are read by [`Services::load`].
    pub fn new(core: Arc<Shared>) -> Self {
        Services {
            jobs: Arc::new(Jobs::new(Arc::clone(&core))),
            workspaces: Arc::new(Workspaces::new(Arc::clone(&core))),
            core,
        }
    }
}

/// Who answered a request, for `permission_resolved.source`: the connection, then in
/// parentheses what a person would call it ("a terminal", "browser brw-…"), so another
/// client can say where it was answered instead of naming a connection number.
fn answerer(core: &Arc<Shared>, conn: ConnId) -> String {
    use crate::principal::Principal;
    let what = match core.principal_of(conn) {
        Some(Principal::LocalUser { .. }) => "a terminal".to_string(),
        Some(Principal::Browser { id }) => format!("browser {id}"),
        Some(Principal::Runtime { agent_id }) => format!("agent {agent_id}"),
        Some(Principal::Internal) | None => return format!("client-{conn}"),
    };
    format!("client-{conn} ({what})")
}

fn needs_agent_id() -> ProtocolError {
    ProtocolError::new(
        ErrorCode::NotAttached,
        "agent_id is required on a daemon connection",
    )
}

/// `agent.list`: the `AgentsData` written from the agents' cached encodings.
fn list(
    core: &Shared,
    q: &shard_protocol::command::AgentListQuery,
    slot: &mut ReplySlot,
) -> Result<Reply, ProtocolError> {
    let limit = q.limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX));
    let (agents, next) = core.list_agents_encoded(q.after.as_deref(), limit)?;
    let len: usize = agents.iter().map(|a| a.len() + 1).sum();
    let mut out = Vec::with_capacity(len + 64);
    out.extend_from_slice(b"{\"agents\":[");
    for (i, a) in agents.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(a);
    }
    out.push(b']');
    if let Some(n) = next {
        out.extend_from_slice(b",\"next_after\":");
        out.extend_from_slice(&serde_json::to_vec(&n).unwrap_or_else(|_| b"null".to_vec()));
    }
    out.push(b'}');
    slot.defer()?.ok_encoded(&out);
    Ok(Reply::Deferred)
}

/// Handles one decoded command from connection `conn`.
pub(crate) fn dispatch(
    svc: &Services,
    conn: ConnId,
    command: Command,
    slot: &mut ReplySlot,
) -> Handled {
    let core = &svc.core;
    let ty = command.type_name();
    let now = match command {
        Command::WorkspaceCreate(_)
        | Command::WorkspaceAttach(_)
        | Command::WorkspaceList(_)
        | Command::WorkspaceStatus(_)
        | Command::WorkspaceRetire(_) => {
            return crate::workspaces::handlers::dispatch(&svc.workspaces, command);
        }
        Command::AgentList(q) => list(core, &q, slot),
        Command::AgentStatus(q) => {
            let agents = core.list_agents(q.agent_id.as_deref());
            if q.agent_id.is_some() && agents.is_empty() {
                Err(ProtocolError::new(ErrorCode::NotFound, "no such agent"))
            } else {
                Reply::data::<kind::AgentStatus>(&AgentsData {
                    agents,
                    next_after: None,
                })
            }
        }
        Command::SessionList(q) => {
            let store = shard_session::SessionStore::new(&core.cfg.home);
            return Handled::Later(Box::pin(async move {
                let listed = tokio::task::spawn_blocking(move || {
                    store.list_for_cwd(std::path::Path::new(&q.cwd))
                })
                .await;
                match listed {
                    Ok(Ok(metas)) => Reply::data::<kind::SessionList>(&SessionListData {
                        sessions: metas.iter().map(|m| m.to_summary(false)).collect(),
                    }),
                    Ok(Err(e)) => Err(ProtocolError::new(
                        ErrorCode::InternalError,
                        format!("could not list sessions: {e}"),
                    )),
                    Err(e) => Err(ProtocolError::new(
                        ErrorCode::InternalError,
                        format!("could not list sessions: {e}"),
                    )),
                }
            }));
        }
        Command::SessionActivate(a) => {
            let core = Arc::clone(core);
            return Handled::Later(Box::pin(async move { activate(&core, a).await }));
        }
        Command::AgentCreate(c) => {
            let core = Arc::clone(core);
            return Handled::Later(Box::pin(async move {
                let created = crate::create::create(&core, *c).await?;
                Reply::data::<kind::AgentCreate>(&created)
            }));
        }
        Command::AgentAttach(a) => core.attach(conn, a, slot),
        Command::AgentDetach(r) => core
            .detach(conn, &r.agent_id)
            .map(|()| Reply::empty::<kind::AgentDetach>()),
        Command::AgentTerminate(r) => core
            .terminate(&r.agent_id)
            .and_then(|deferred| Reply::data::<kind::AgentTerminate>(&TerminateData { deferred })),
        Command::AgentKill(k) => {
            let wait = match core.kill(&k.agent_id, k.force.unwrap_or(false)) {
                Ok(w) => w,
                Err(e) => return Handled::Now(Err(e)),
            };
            let bound = core.cfg.kill_grace * 2 + Duration::from_secs(5);
            return Handled::Later(Box::pin(async move {
                if let Some(rx) = wait {
                    let _ = tokio::time::timeout(bound, rx).await;
                }
                Ok(Reply::empty::<kind::AgentKill>())
            }));
        }
        Command::AgentArchive(r) => {
            let (manifest, wait) = match core.archive(&r.agent_id) {
                Ok(x) => x,
                Err(e) => return Handled::Now(Err(e)),
            };
            let core = Arc::clone(core);
            let bound = core.cfg.kill_grace * 2 + Duration::from_secs(5);
            return Handled::Later(Box::pin(async move {
                if let Err(e) = core.store.save(&manifest).await {
                    return Err(ProtocolError::new(
                        ErrorCode::InternalError,
                        format!("could not record the archive: {e}"),
                    ));
                }
                if let Some(rx) = wait {
                    let _ = tokio::time::timeout(bound, rx).await;
                }
                Ok(Reply::empty::<kind::AgentArchive>())
            }));
        }
        Command::DaemonShutdown(s) => {
            if let Ok(r) = slot.defer() {
                r.answer::<kind::DaemonShutdown>(&());
            }
            begin_shutdown(core, s.force.unwrap_or(false));
            Ok(Reply::Deferred)
        }
        Command::SubagentCreate(_)
        | Command::SubagentWait(_)
        | Command::SubagentSteer(_)
        | Command::SubagentRelaunch(_)
        | Command::SubagentStatus(_)
        | Command::SubagentStop(_) => {
            return Handled::Later(crate::jobs::handlers::handle(&svc.jobs, conn, command));
        }
        Command::RequestSync(t) => core.request_sync(conn, t.agent_id.as_deref(), slot),
        Command::PermissionResponse(mut p) => match p.agent_id.take() {
            None => Err(needs_agent_id()),
            Some(agent_id) => {
                let request_id = p.request_id.clone();
                let answer = p.answer.clone();
                p.source = Some(answerer(core, conn));
                core.answer_request(
                    conn,
                    &agent_id,
                    &request_id,
                    Some(answer),
                    Command::PermissionResponse(p),
                    slot,
                )
            }
        },
        Command::UiResponse(mut u) => match u.agent_id.take() {
            None => Err(needs_agent_id()),
            Some(agent_id) => {
                let request_id = u.request_id.clone();
                core.answer_request(
                    conn,
                    &agent_id,
                    &request_id,
                    None,
                    Command::UiResponse(u),
                    slot,
                )
            }
        },
        c if c.is_per_agent() => match c.routing_agent_id().map(str::to_string) {
            None => Err(ProtocolError::new(
                ErrorCode::NotAttached,
                "per-agent commands need agent_id on a daemon connection",
            )),
            Some(agent_id) => {
                // The lease guard (docs/protocol.md §10.3): one run at a time on a leased child;
                // a person's steer or abort goes through the coordinator, which records it
                // against the run. Only these three commands are checked: the lease scan
                // takes the job catalog's lock, which reads and other commands skip.
                let lease_bound = matches!(
                    c,
                    Command::Prompt(_) | Command::Steer(_) | Command::Abort(_)
                );
                if lease_bound && svc.jobs.leased(&agent_id) {
                    match c {
                        Command::Prompt(_) => {
                            return Handled::Now(Err(ProtocolError::new(
                                ErrorCode::Conflict,
                                "the agent is leased by a subagent job; steer or stop the run instead",
                            )));
                        }
                        Command::Steer(s) => {
                            let f =
                                crate::jobs::intervene::person_steer(&svc.jobs, conn, agent_id, s);
                            return Handled::Later(f);
                        }
                        Command::Abort(_) => {
                            let f = crate::jobs::intervene::person_abort(&svc.jobs, conn, agent_id);
                            return Handled::Later(f);
                        }
                        _ => {}
                    }
                }
                if let Command::Prompt(p) = &c
                    && let Some(named) = core.name_from_first_prompt(&agent_id, &p.message)
                {
                    let core = Arc::clone(core);
                    tokio::spawn(async move {
                        if let Err(e) = core.store.save(&named).await {
                            tracing::warn!(error = %e, "could not record the agent's name");
                        }
                    });
                }
                let read_only = is_read_only(&c);
                core.forward(conn, &agent_id, c, read_only, slot)
            }
        },
        _ => Err(ProtocolError::new(
            ErrorCode::InvalidRequest,
            format!("`{ty}` is not supported by this daemon yet"),
        )),
    };
    Handled::Now(now)
}

/// `session.activate`: the session must be one `session.list` lists for the
/// agent's cwd; the switch is recorded in the manifest before the answer.
async fn activate(core: &Arc<Shared>, a: SessionActivate) -> Result<Reply, ProtocolError> {
    let cwd = core.activation_cwd(&a.agent_id)?;
    let store = shard_session::SessionStore::new(&core.cfg.home);
    let wanted = a.session_id.clone();
    let found = tokio::task::spawn_blocking(move || {
        store
            .list_for_cwd(std::path::Path::new(&cwd))
            .map(|metas| metas.iter().any(|m| m.session_id == wanted))
    })
    .await
    .map_err(|e| ProtocolError::new(ErrorCode::InternalError, e.to_string()))?
    .map_err(|e| {
        ProtocolError::new(
            ErrorCode::InternalError,
            format!("could not list sessions: {e}"),
        )
    })?;
    if !found {
        return Err(ProtocolError::new(
            ErrorCode::NotFound,
            format!("no session {} in the agent's cwd", a.session_id),
        ));
    }
    let done = core.activate_session(&a.agent_id, &a.session_id)?;
    if let Err(e) = core.persist_manifest(&a.agent_id).await {
        core.revert_session(&a.agent_id, &a.session_id, &done.previous_session_id);
        return Err(e);
    }
    Reply::data::<kind::SessionActivate>(&SessionActivated {
        session_id: a.session_id,
        previous_session_id: done.previous_session_id,
        runtime_stopping: done.runtime_stopping,
    })
}

/// Observers are read-only (§16 item 8): these are the commands they may send.
fn is_read_only(c: &Command) -> bool {
    match c {
        Command::ListModes(_) | Command::ListModels(_) | Command::ListReasoningLevels(_) => true,
        Command::SessionOp(s) => matches!(s.op, SessionOpKind::List | SessionOpKind::History),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use shard_protocol::command::{Command, SessionOp, SessionOpKind};

    use super::is_read_only;

    fn op(op: SessionOpKind) -> Command {
        Command::SessionOp(SessionOp {
            agent_id: Some("agent-x".into()),
            op,
            args: None,
        })
    }

    #[test]
    fn observers_may_list_and_page_history_but_not_change_the_session() {
        assert!(is_read_only(&op(SessionOpKind::List)));
        assert!(is_read_only(&op(SessionOpKind::History)));
        assert!(!is_read_only(&op(SessionOpKind::Compact)));
        assert!(!is_read_only(&op(SessionOpKind::Fork)));
    }
}
