//! A Runtime generation's start, its run (reading its events until it ends) and its end.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use nix::sys::signal::Signal;
use shard_protocol::command::Command;
use shard_protocol::event::{AgentExited, AgentStatusChanged, PermissionResolved, UiResolved};
use shard_protocol::types::{AgentStatus, PermissionDecision, RuntimeState};
use shard_protocol::{ErrorCode, Event, JsonlCodec, PermissionAnswer};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::FramedRead;

use super::super::broker;
use super::super::state::{Inflight, LiveRuntime, PendingKind, Shared, State};
use super::process::{ReadyRx, new_token, signal, wait_session_free, write_stdin};
use crate::launcher::{ExitInfo, LaunchSpec, LaunchedRuntime};
use crate::reply::ProtocolError;
use crate::wire::frame;

pub(crate) fn begin_start(
    shared: &Arc<Shared>,
    st: &mut State,
    agent_id: &str,
    mut waiters: Vec<oneshot::Sender<Result<(), String>>>,
    queued: Vec<(Command, Inflight)>,
) -> Option<ReadyRx> {
    let entry = st.agents.get_mut(agent_id)?;
    let epoch = entry.last_epoch.map_or(0, |e| e + 1);
    entry.last_epoch = Some(epoch);
    let (tx, rx) = oneshot::channel();
    waiters.push(tx);
    let (stdin_tx, stdin_rx) = mpsc::unbounded_channel();
    let token = new_token();
    let token_hash = crate::principal::hash_token(&token);
    entry.rt = Some(LiveRuntime {
        epoch,
        pid: None,
        stdin: Some(stdin_tx),
        ready: false,
        capabilities: Vec::new(),
        inflight: Default::default(),
        sync_requests: 0,
        idle_since: None,
        terminate_when_idle: false,
        stopping: false,
        killed: false,
        start_failure: None,
        start_waiters: waiters,
        exit_waiters: Vec::new(),
        restart_waiters: Vec::new(),
        queued,
        queued_next: Vec::new(),
        token_hash,
        start_slot: None,
    });
    entry.fanout().epoch = Some(epoch);
    entry.runtime_state = RuntimeState::Starting;
    let spec = launch_spec(&shared.cfg, &entry.manifest, epoch, token);
    let ev = Event::AgentStatusChanged(AgentStatusChanged {
        agent_id: agent_id.to_string(),
        status: entry.status,
        runtime_state: RuntimeState::Starting,
        detail: None,
    });
    st.broadcast(&frame(&ev));
    tokio::spawn(run_generation(Arc::clone(shared), spec, stdin_rx));
    Some(rx)
}

/// What a Runtime generation of this agent is started with.
pub(crate) fn launch_spec(
    cfg: &crate::config::DaemonConfig,
    m: &crate::manifest::AgentManifest,
    epoch: u64,
    token: String,
) -> LaunchSpec {
    let scripted = m.provider.as_deref() == Some("scripted");
    let first = !m.started;
    LaunchSpec {
        agent_id: m.agent_id.clone(),
        parent_agent_id: m.parent_agent_id.clone(),
        session_id: m.session_id.clone(),
        cwd: m.cwd.clone().into(),
        // Later starts restore the session's own record (a set_model since creation).
        provider: if first || scripted {
            m.provider.clone()
        } else {
            None
        },
        model: if scripted || !first {
            None
        } else {
            m.model.clone()
        },
        mode: if first { m.mode.clone() } else { None },
        script: if scripted { m.model.clone() } else { None },
        tools: m.tools.clone(),
        system_prompt_file: m.system_prompt_file.as_ref().map(std::path::PathBuf::from),
        mcp_servers: m.mcp_servers.clone(),
        home: cfg.home.clone(),
        daemon_sock: cfg.socket_path(),
        token,
        epoch,
        host: m.host.clone(),
    }
}

/// True while generation `epoch` of `agent_id` is still the agent's and not killed.
fn generation_wanted(shared: &Shared, agent_id: &str, epoch: u64) -> bool {
    let st = shared.lock();
    st.agents
        .get(agent_id)
        .and_then(|e| e.rt.as_ref())
        .is_some_and(|rt| rt.epoch == epoch && !rt.killed)
}

async fn run_generation(
    shared: Arc<Shared>,
    spec: LaunchSpec,
    stdin_rx: mpsc::UnboundedReceiver<Bytes>,
) {
    let agent_id = spec.agent_id.clone();
    let epoch = spec.epoch;
    // Held until the generation is ready (the broker drops it) or has ended.
    let mut slot = Arc::clone(&shared.start_slots).acquire_owned().await.ok();
    // Killed (`agent.kill`, shutdown) or replaced while it waited for the slot: end it
    // without spawning a Runtime only to kill it.
    if !generation_wanted(&shared, &agent_id, epoch) {
        on_exit(&shared, &agent_id, epoch, ExitInfo::default(), None);
        return;
    }
    // A Runtime of a previous daemon may still hold the session (it aborts and exits when
    // its daemon dies): wait for it instead of failing with CONFLICT, and never kill it.
    if let Err(e) = wait_session_free(&shared.cfg, &spec.session_id).await {
        on_exit(&shared, &agent_id, epoch, ExitInfo::default(), Some(e));
        return;
    }
    let launched =
        match tokio::time::timeout(shared.cfg.ready_timeout, shared.launcher.launch(&spec)).await {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => {
                on_exit(
                    &shared,
                    &agent_id,
                    epoch,
                    ExitInfo::default(),
                    Some(format!(
                        "could not start the runtime: {}",
                        crate::fdlimit::describe(&e)
                    )),
                );
                return;
            }
            Err(_) => {
                on_exit(
                    &shared,
                    &agent_id,
                    epoch,
                    ExitInfo::default(),
                    Some("starting the runtime timed out".into()),
                );
                return;
            }
        };
    let LaunchedRuntime {
        pid,
        stdin,
        stdout,
        exit,
    } = launched;
    let (kill_now, fanout) = {
        let mut st = shared.lock();
        let fanout = st.agents.get(&agent_id).map(|e| Arc::clone(&e.fanout));
        let kill_now = match st.agents.get_mut(&agent_id).and_then(|e| e.rt.as_mut()) {
            Some(rt) if rt.epoch == epoch => {
                rt.pid = pid;
                rt.start_slot = slot.take();
                rt.killed
            }
            _ => true,
        };
        (kill_now, fanout.unwrap_or_default())
    };
    if kill_now {
        signal(pid, Signal::SIGKILL);
    }
    drop(slot);
    tokio::spawn(write_stdin(stdin, stdin_rx));
    {
        let shared = Arc::clone(&shared);
        let agent_id = agent_id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(shared.cfg.ready_timeout).await;
            let late = {
                let mut st = shared.lock();
                match st.agents.get_mut(&agent_id).and_then(|e| e.rt.as_mut()) {
                    Some(rt) if rt.epoch == epoch && !rt.ready => {
                        rt.start_failure = Some(format!(
                            "the runtime did not send hello and sync within {:?}",
                            shared.cfg.ready_timeout
                        ));
                        true
                    }
                    _ => false,
                }
            };
            if late {
                signal(pid, Signal::SIGKILL);
            }
        });
    }
    let mut lines = FramedRead::new(stdout, JsonlCodec::new(shared.cfg.max_line));
    let read_all = {
        let shared = Arc::clone(&shared);
        let agent_id = agent_id.clone();
        async move {
            while let Some(item) = lines.next().await {
                match item {
                    Ok(Ok(line)) => {
                        broker::on_runtime_line(&shared, &fanout, &agent_id, epoch, &line)
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(agent_id, error = %e, "runtime line dropped");
                        // A response too long to carry still answers its command, so no
                        // client waits forever and idle reaping is not held up.
                        let shard_protocol::LineError::TooLong { id, .. } = e;
                        if let Some(id) = id {
                            broker::on_overlong_response(&shared, &agent_id, epoch, &id);
                        }
                    }
                    Err(e) => {
                        tracing::debug!(agent_id, error = %e, "runtime stdout failed");
                        break;
                    }
                }
            }
        }
    };
    tokio::pin!(read_all);
    tokio::pin!(exit);
    let info = tokio::select! {
        info = &mut exit => {
            // Whatever the Runtime wrote before it died still belongs to the stream.
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut read_all).await;
            info
        }
        _ = &mut read_all => exit.await,
    };
    on_exit(&shared, &agent_id, epoch, info, None);
}

/// Ends of a Runtime generation, clean or not (§16 item 6: in-flight commands fail,
/// pending requests are resolved as denied).
pub(crate) fn on_exit(
    shared: &Arc<Shared>,
    agent_id: &str,
    epoch: u64,
    exit: ExitInfo,
    launch_error: Option<String>,
) {
    let mut guard = shared.lock();
    let st = &mut *guard;
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return;
    };
    let Some(rt) = entry.rt.take_if(|rt| rt.epoch == epoch) else {
        return;
    };
    entry.fanout().epoch = None;
    let was_ready = rt.ready;
    let clean = launch_error.is_none() && rt.stopping && exit.is_clean() && !rt.killed;
    // A deliberate `agent.kill` (or forced shutdown) stops the agent; it did not fail
    //.
    let deliberate = rt.killed && launch_error.is_none() && rt.start_failure.is_none();
    let stopped = clean || deliberate;
    let reason = launch_error
        .or(rt.start_failure.clone())
        .unwrap_or_else(|| {
            if rt.killed {
                format!("killed ({})", exit.describe())
            } else {
                exit.describe()
            }
        });
    tracing::info!(agent_id, epoch, clean, %reason, "runtime generation ended");
    let restart =
        (!rt.restart_waiters.is_empty() || !rt.queued_next.is_empty()) && !st.shutting_down;
    let (code, msg) = if was_ready {
        (
            ErrorCode::InternalError,
            format!("the agent's runtime exited before answering: {reason}"),
        )
    } else {
        (
            ErrorCode::RuntimeStartFailed,
            format!("the agent's runtime failed to start: {reason}"),
        )
    };
    for (_, inf) in rt.inflight {
        inf.fail(code.clone(), msg.clone());
    }
    for (_, inf) in rt.queued {
        inf.fail(
            ErrorCode::RuntimeStartFailed,
            format!("the agent's runtime failed to start: {reason}"),
        );
    }
    for w in rt.start_waiters {
        let _ = w.send(Err(reason.clone()));
    }
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return;
    };
    // Attaches still waiting for their sync fail, unless a new generation will serve them.
    if !restart {
        let failed: Vec<_> = entry
            .attachments
            .iter_mut()
            .filter_map(|(c, a)| a.attach_reply.take().map(|r| (*c, r)))
            .collect();
        for (c, responder) in failed {
            entry.remove_attachment(c);
            responder.fail(ProtocolError::new(
                ErrorCode::RuntimeStartFailed,
                format!("the agent's runtime failed to start: {reason}"),
            ));
        }
    }
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return;
    };
    let pending = std::mem::take(&mut entry.pending);
    let mut sends = Vec::new();
    for p in pending {
        if let Some(t) = p.headless_timer {
            t.abort();
        }
        let ev = match p.kind {
            PendingKind::Permission { .. } => Event::PermissionResolved(PermissionResolved {
                agent_id: Some(agent_id.to_string()),
                request_id: p.request_id.clone(),
                answer: PermissionAnswer::Decision {
                    decision: PermissionDecision::Deny,
                },
                source: Some("runtime_exited".into()),
            }),
            PendingKind::Ui => Event::UiResolved(UiResolved {
                agent_id: Some(agent_id.to_string()),
                request_id: p.request_id.clone(),
                value: serde_json::Value::Null,
            }),
        };
        let mut targets = p.delivered_to;
        targets.extend(entry.attachments.keys().copied());
        sends.push((frame(&ev), targets));
    }
    entry.runtime_state = if stopped {
        RuntimeState::Stopped
    } else {
        RuntimeState::Failed
    };
    if !stopped || entry.status.is_active() {
        entry.status = if stopped {
            AgentStatus::Idle
        } else {
            AgentStatus::Error
        };
    }
    entry.fanout().phase = shard_protocol::event::ActivityPhase::Idle;
    let status = entry.status;
    let runtime_state = entry.runtime_state;
    for (f, targets) in sends {
        for c in targets {
            st.send_to(c, &f);
        }
    }
    if !stopped {
        st.broadcast(&frame(&Event::AgentExited(AgentExited {
            agent_id: agent_id.to_string(),
            runtime_state: RuntimeState::Failed,
            reason: reason.clone(),
            exit_code: exit.code.map(i64::from),
        })));
    }
    st.broadcast(&frame(&Event::AgentStatusChanged(AgentStatusChanged {
        agent_id: agent_id.to_string(),
        status,
        runtime_state,
        detail: (!clean).then(|| reason.clone()),
    })));
    for w in rt.exit_waiters {
        let _ = w.send(());
    }
    if restart {
        begin_start(shared, st, agent_id, rt.restart_waiters, rt.queued_next);
    } else {
        for w in rt.restart_waiters {
            let _ = w.send(Err("the daemon is shutting down".into()));
        }
        for (_, inf) in rt.queued_next {
            inf.fail(ErrorCode::Conflict, "the daemon is shutting down");
        }
    }
    drop(guard);
    let home = shared.cfg.home.clone();
    let aid = agent_id.to_string();
    let pid = rt.pid;
    tokio::task::spawn_blocking(move || {
        super::super::orphans::kill_leftover_groups(&home, &aid, pid);
        super::super::orphans::kill_escaped_orphans();
    });
    shared.runtime_exited.notify_waiters();
}
