//! The supervisor (docs/architecture.md#the-daemons-duties): starts Runtime generations, waits for `hello` +
//! `sync` readiness, handles their ends (crash → `agent_exited`), kills with escalation,
//! reaps inactive ones and makes sure no tool process outlives its Runtime (§16 item 15).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use shard_protocol::command::{AgentTarget, AttachRole, Command};
use shard_protocol::event::{AgentExited, AgentStatusChanged, PermissionResolved, UiResolved};
use shard_protocol::types::{AgentStatus, PermissionDecision, RuntimeState};
use shard_protocol::{ErrorCode, Event, JsonlCodec, PermissionAnswer};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::FramedRead;

use super::broker;
use super::deliver::{close_stdin, send_to_runtime};
use super::state::{Inflight, LiveRuntime, PendingKind, Shared, State};
use crate::launcher::{ExitInfo, LaunchSpec, LaunchedRuntime};
use crate::reply::ProtocolError;
use crate::wire::frame;

/// Readiness of a Runtime the caller is waiting for.
pub(crate) type ReadyRx = oneshot::Receiver<Result<(), String>>;

/// Makes sure a Runtime is live or starting. `Ok(None)`: it is ready now.
pub(crate) fn ensure_started(
    shared: &Arc<Shared>,
    st: &mut State,
    agent_id: &str,
) -> Result<Option<ReadyRx>, String> {
    if st.shutting_down {
        return Err("the daemon is shutting down".into());
    }
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return Err("no such agent".into());
    };
    if let Some(rt) = entry.rt.as_mut() {
        let (tx, rx) = oneshot::channel();
        if rt.ready && !rt.stopping {
            return Ok(None);
        }
        if rt.stopping {
            // New work for a Runtime on its way out: start the next generation at its exit.
            rt.restart_waiters.push(tx);
        } else {
            rt.start_waiters.push(tx);
        }
        return Ok(Some(rx));
    }
    let rx = begin_start(shared, st, agent_id, Vec::new(), Vec::new());
    Ok(rx)
}

pub(super) fn begin_start(
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

fn new_token() -> String {
    let mut b = [0u8; 32];
    if getrandom::fill(&mut b).is_err() {
        // Without entropy the token still differs per Runtime; it only guards calls back.
        let a = shard_protocol::ids::new_id("t");
        return a;
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
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
    let kill_now = {
        let mut st = shared.lock();
        match st.agents.get_mut(&agent_id).and_then(|e| e.rt.as_mut()) {
            Some(rt) if rt.epoch == epoch => {
                rt.pid = pid;
                rt.start_slot = slot.take();
                rt.killed
            }
            _ => true,
        }
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
                    Ok(Ok(line)) => broker::on_runtime_line(&shared, &agent_id, epoch, &line),
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

/// Waits (bounded by the ready timeout) until no process holds the session's lock.
async fn wait_session_free(
    cfg: &crate::config::DaemonConfig,
    session_id: &str,
) -> Result<(), String> {
    let Ok(dir) = shard_session::SessionStore::new(&cfg.home).session_dir(session_id) else {
        return Ok(());
    };
    let lock = dir.join(shard_session::LOCK_FILE);
    let deadline = Instant::now() + cfg.ready_timeout;
    let mut backoff = Duration::from_millis(5);
    loop {
        let path = lock.clone();
        let holder = tokio::task::spawn_blocking(move || lock_holder(&path))
            .await
            .unwrap_or(None);
        let Some(holder) = holder else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "session {session_id} is still in use by {holder} after {} s",
                cfg.ready_timeout.as_secs()
            ));
        }
        tracing::info!(session_id, %holder, "waiting for the session to be released");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_millis(200));
    }
}

/// Who holds a session lock (`None`: nobody, or no lock file).
fn lock_holder(path: &std::path::Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    match f.try_lock() {
        Ok(()) => None,
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = std::fs::read_to_string(path).unwrap_or_default();
            Some(if pid.trim().is_empty() {
                "another process".into()
            } else {
                format!("pid {}", pid.trim())
            })
        }
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

async fn write_stdin(
    mut stdin: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
) {
    while let Some(first) = rx.recv().await {
        let mut buf = first.to_vec();
        while let Ok(more) = rx.try_recv() {
            buf.extend_from_slice(&more);
        }
        if stdin.write_all(&buf).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
    let _ = stdin.shutdown().await;
}

fn signal(pid: Option<u32>, sig: Signal) {
    if let Some(p) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = kill(Pid::from_raw(p), sig);
    }
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
            entry.attachments.remove(&c);
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
    entry.phase = shard_protocol::event::ActivityPhase::Idle;
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
        super::orphans::kill_leftover_groups(&home, &aid, pid);
        super::orphans::kill_escaped_orphans();
    });
    shared.runtime_exited.notify_waiters();
}

/// `agent.kill`: `abort` and end of input, SIGTERM after the grace period, SIGKILL after
/// another (`force`: SIGKILL at once). Resolves when the Runtime is gone; `None` when none was live.
pub(crate) fn kill_runtime(
    shared: &Arc<Shared>,
    st: &mut State,
    agent_id: &str,
    force: bool,
) -> Option<oneshot::Receiver<()>> {
    let rt = st.agents.get_mut(agent_id)?.rt.as_mut()?;
    let (tx, rx) = oneshot::channel();
    rt.exit_waiters.push(tx);
    rt.killed = true;
    let epoch = rt.epoch;
    if force || !rt.ready || rt.stdin.is_none() {
        signal(rt.pid, Signal::SIGKILL);
        return Some(rx);
    }
    let _ = send_to_runtime(
        shared,
        rt,
        Command::Abort(AgentTarget { agent_id: None }),
        Inflight::Internal,
    );
    // After the abort, end of input lets the Runtime persist and exit at once; the
    // signals below are only for one that does not.
    close_stdin(st, agent_id);
    let shared = Arc::clone(shared);
    let agent_id = agent_id.to_string();
    tokio::spawn(async move {
        for sig in [Signal::SIGTERM, Signal::SIGKILL] {
            tokio::time::sleep(shared.cfg.kill_grace).await;
            let pid = {
                let st = shared.lock();
                match st.agents.get(&agent_id).and_then(|e| e.rt.as_ref()) {
                    Some(rt) if rt.epoch == epoch => rt.pid,
                    _ => return,
                }
            };
            signal(pid, sig);
        }
    });
    Some(rx)
}

/// Closes the stdin of Runtimes inactive for longer than the idle timeout.
pub(crate) async fn reap_idle(shared: Arc<Shared>) {
    let idle = shared.cfg.idle_runtime_timeout;
    let tick = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(tick) => {}
        }
        let mut st = shared.lock();
        let now = Instant::now();
        let attached_idle = shared.cfg.attached_idle_timeout.max(idle);
        let due: Vec<String> = st
            .agents
            .iter()
            .filter(|(_, e)| {
                let limit = if e
                    .attachments
                    .values()
                    .any(|a| a.role == AttachRole::Interactive)
                {
                    attached_idle
                } else {
                    idle
                };
                !e.status.is_active()
                    && !e.pending.iter().any(|p| !p.answered)
                    && e.rt.as_ref().is_some_and(|rt| {
                        rt.ready
                            && rt.stdin.is_some()
                            && rt.inflight.is_empty()
                            && rt
                                .idle_since
                                .is_some_and(|t| now.duration_since(t) >= limit)
                    })
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            tracing::info!(agent_id = %id, "reaping an idle runtime");
            close_stdin(&mut st, &id);
        }
    }
}

/// `daemon.shutdown`: graceful lets active turns finish (bounded), `force` kills at once.
pub(crate) fn begin_shutdown(shared: &Arc<Shared>, force: bool) {
    let mut guard = shared.lock();
    let st = &mut *guard;
    if st.shutting_down && !force {
        return;
    }
    st.shutting_down = true;
    let ids: Vec<String> = st.agents.keys().cloned().collect();
    for id in ids {
        let Some(entry) = st.agents.get_mut(&id) else {
            continue;
        };
        let active = entry.status.is_active();
        let Some(rt) = entry.rt.as_mut() else {
            continue;
        };
        if force || !rt.ready {
            rt.killed = true;
            signal(rt.pid, Signal::SIGKILL);
        } else if active {
            rt.terminate_when_idle = true;
        } else if rt.stdin.is_some() {
            close_stdin(st, &id);
        }
    }
    drop(guard);
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let deadline = Instant::now()
            + if force {
                Duration::from_secs(10)
            } else {
                Duration::from_secs(60)
            };
        loop {
            let live: Vec<Option<u32>> = {
                let st = shared.lock();
                st.agents
                    .values()
                    .filter_map(|e| e.rt.as_ref().map(|r| r.pid))
                    .collect()
            };
            if live.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                tracing::warn!(
                    count = live.len(),
                    "runtimes still live at the shutdown deadline; killing them"
                );
                for pid in live {
                    signal(pid, Signal::SIGKILL);
                }
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), shared.runtime_exited.notified())
                        .await;
                break;
            }
            let _ =
                tokio::time::timeout(Duration::from_millis(500), shared.runtime_exited.notified())
                    .await;
        }
        shared.shutdown.cancel();
    });
}
