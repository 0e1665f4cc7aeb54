//! One server's life: connect (a child process or streamable HTTP), list its tools,
//! follow `notifications/tools/list_changed`, and restart it with backoff when it dies,
//! reporting every change through the manager's sink. A server never takes its Runtime
//! down: every failure becomes a state with a reason.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use shard_tools::{ProcessTracker, Tool};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{ServerSpec, Transport};
use crate::tool::McpTool;
use crate::{McpUpdate, ServerState};

/// Restarts after a crash before the server is left failed.
pub const MAX_RESTARTS: u32 = 5;

/// The most one message of a stdio server may hold (a tool result, as one JSON line):
/// the limit of an HTTP server's messages too (rmcp's). A longer one ends the
/// connection, so the call waiting for it fails at once instead of at its timeout.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// How long connecting (spawn + `initialize` + `tools/list`) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// A server that ran this long is healthy again: its restart count starts over.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// What the Runtime gives every server.
#[derive(Clone, Debug)]
pub struct StartContext {
    /// Working directory of stdio servers.
    pub cwd: std::path::PathBuf,
    /// Variables removed from a stdio server's environment (provider keys, Shard's
    /// secrets, and the variables other servers' secrets came from).
    pub env_remove: Arc<Vec<String>>,
    /// Process groups to kill if the Runtime dies (docs/protocol.md §16 item 15).
    pub processes: ProcessTracker,
    /// The tool sandbox stdio servers run in (docs/mcp.md); `None` refuses every server
    /// that is to be sandboxed rather than run it outside.
    pub sandbox: Option<Arc<shard_sandbox::Sandbox>>,
}

/// Shared between a server's task and its tools.
pub struct ServerShared {
    /// The configuration.
    pub spec: ServerSpec,
    peer: Mutex<Option<Peer<RoleClient>>>,
    state: Mutex<ServerState>,
    /// The connection was cut because a message was over [`MAX_MESSAGE_BYTES`].
    pub(crate) oversized: AtomicBool,
}

impl std::fmt::Debug for ServerShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerShared")
            .field("name", &self.spec.name)
            .finish()
    }
}

impl ServerShared {
    pub(crate) fn new(spec: ServerSpec) -> Arc<ServerShared> {
        Arc::new(ServerShared {
            spec,
            peer: Mutex::new(None),
            state: Mutex::new(ServerState::Starting),
            oversized: AtomicBool::new(false),
        })
    }

    /// The connection, when the server is ready.
    pub fn peer(&self) -> Option<Peer<RoleClient>> {
        lock(&self.peer).clone()
    }

    /// The current state.
    pub fn state(&self) -> ServerState {
        lock(&self.state).clone()
    }

    fn set_peer(&self, peer: Option<Peer<RoleClient>>) {
        *lock(&self.peer) = peer;
    }

    fn set_state(&self, state: ServerState) {
        *lock(&self.state) = state;
    }

    /// Removes the server's secret values (`ServerSpec::secret_values`) from a
    /// message that may quote them (a server's stderr, an HTTP error).
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.spec.secret_values {
            if s.len() >= 4 {
                out = out.replace(s.as_str(), "[redacted]");
            }
        }
        out
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Our side of the connection: it only listens for tool-list changes.
struct Handler {
    changed: mpsc::Sender<()>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("shard", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // A full queue already holds a pending re-list.
        let _ = self.changed.try_send(());
    }
}

type Client = RunningService<RoleClient, Handler>;

/// A stdio server's process group, recorded in the tracker (so a daemon can kill it after
/// a crash) for exactly as long as this guard lives: dropping it — a normal stop, a failed
/// `initialize`, a connect that timed out or was cancelled — kills the group and forgets it.
struct GroupGuard {
    pgid: i32,
    processes: ProcessTracker,
}

impl GroupGuard {
    fn new(pgid: i32, processes: &ProcessTracker) -> GroupGuard {
        processes.register(pgid);
        GroupGuard {
            pgid,
            processes: processes.clone(),
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // The server's own children go with it.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
        self.processes.unregister(self.pgid);
    }
}

/// A live connection and what ends with it.
struct Connection {
    client: Client,
    /// A stdio server's process group.
    group: Option<GroupGuard>,
    /// The last lines the child wrote to stderr (a crash's reason).
    stderr: Arc<Mutex<Vec<String>>>,
    /// A stdio server's process, killed when the connection ends.
    child: Option<Box<dyn process_wrap::tokio::ChildWrapper>>,
}

/// Runs one server until `cancel`: connect, serve, restart with backoff.
pub(crate) async fn supervise(
    shared: Arc<ServerShared>,
    ctx: StartContext,
    sink: mpsc::Sender<McpUpdate>,
    cancel: CancellationToken,
) {
    let name = shared.spec.name.clone();
    let mut failures: u32 = 0;
    loop {
        let (changed_tx, mut changed_rx) = mpsc::channel(1);
        let connecting = tokio::time::timeout(CONNECT_TIMEOUT, connect(&shared, &ctx, changed_tx));
        let conn = tokio::select! {
            _ = cancel.cancelled() => return,
            c = connecting => c.unwrap_or_else(|_| Err(format!(
                "did not answer `initialize` within {} s", CONNECT_TIMEOUT.as_secs()))),
        };
        let reason = match conn {
            Err(reason) => reason,
            Ok(conn) => {
                let started = tokio::time::Instant::now();
                let reason = serve(&shared, conn, &sink, &cancel, &mut changed_rx).await;
                if cancel.is_cancelled() {
                    shared.set_state(ServerState::Stopped);
                    return;
                }
                if started.elapsed() >= HEALTHY_AFTER {
                    failures = 0;
                }
                reason
            }
        };
        let reason = shared.redact(&reason);
        failures += 1;
        tracing::warn!(server = %name, %reason, failures, "MCP server failed");
        let give_up = failures > MAX_RESTARTS;
        let state = ServerState::Failed {
            reason: reason.clone(),
            restarting: !give_up,
        };
        shared.set_state(state.clone());
        let _ = sink
            .send(McpUpdate {
                server: name.clone(),
                tools: Vec::new(),
                state,
            })
            .await;
        if give_up {
            return;
        }
        let backoff = Duration::from_millis(250u64 << failures.min(7)).min(Duration::from_secs(30));
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        shared.set_state(ServerState::Starting);
    }
}

/// Serves a connected server until it closes or `cancel`; returns why it ended.
async fn serve(
    shared: &Arc<ServerShared>,
    conn: Connection,
    sink: &mpsc::Sender<McpUpdate>,
    cancel: &CancellationToken,
    changed: &mut mpsc::Receiver<()>,
) -> String {
    let Connection {
        client,
        group,
        stderr,
        child,
    } = conn;
    let peer = client.peer().clone();
    let mut reason = publish(shared, &peer, sink).await.err();
    let mut closed = Some(client.cancellation_token());
    let mut waiting = Box::pin(client.waiting());
    while reason.is_none() {
        tokio::select! {
            _ = cancel.cancelled() => {
                if let Some(c) = closed.take() {
                    c.cancel();
                }
                break;
            }
            ended = &mut waiting => {
                let tail = lock(&stderr).join(" | ");
                let over = shared.oversized.load(Ordering::SeqCst);
                reason = Some(match (ended, tail.is_empty()) {
                    _ if over => format!(
                        "the server sent a message over the {} MiB limit",
                        MAX_MESSAGE_BYTES / (1024 * 1024)
                    ),
                    (_, false) => format!("the server stopped: {tail}"),
                    (Ok(q), true) => format!("the server stopped ({q:?})"),
                    (Err(e), true) => format!("the server's connection task failed: {e}"),
                });
            }
            Some(()) = changed.recv() => {
                if let Err(e) = publish(shared, &peer, sink).await {
                    reason = Some(e);
                }
            }
        }
    }
    shared.set_peer(None);
    if let Some(c) = closed.take() {
        c.cancel();
    }
    // Dropping the child kills it (process-wrap's kill-on-drop); dropping the group
    // guard kills the rest of its group, so a server's own children do not outlive it.
    drop(waiting);
    drop(child);
    drop(group);
    if cancel.is_cancelled() {
        // A stop is on purpose and its reader may be gone or busy stopping: a notice
        // that cannot be queued at once is dropped rather than waited for.
        let _ = sink.try_send(McpUpdate {
            server: shared.spec.name.clone(),
            tools: Vec::new(),
            state: ServerState::Stopped,
        });
    }
    reason.unwrap_or_default()
}

/// Lists the server's tools and sends them (replacing its previous ones).
async fn publish(
    shared: &Arc<ServerShared>,
    peer: &Peer<RoleClient>,
    sink: &mpsc::Sender<McpUpdate>,
) -> Result<(), String> {
    let listed = peer
        .list_all_tools()
        .await
        .map_err(|e| format!("`tools/list` failed: {e}"))?;
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    let mut names = Vec::new();
    for t in listed {
        let raw = serde_json::to_value(&t).unwrap_or_default();
        match McpTool::from_listing(shared.clone(), &raw) {
            Some(tool) => {
                names.push(tool.name().to_string());
                tools.push(Arc::new(tool));
            }
            None => {
                tracing::warn!(server = %shared.spec.name, "a tool with an unusable name was skipped")
            }
        }
    }
    shared.set_peer(Some(peer.clone()));
    let state = ServerState::Ready { tools: names };
    shared.set_state(state.clone());
    sink.send(McpUpdate {
        server: shared.spec.name.clone(),
        tools,
        state,
    })
    .await
    .map_err(|_| "the Runtime is gone".to_string())
}

/// Removes the Rust type names rmcp puts in its transport errors (`[rmcp::…<…>]`): a
/// person reading `shard mcp list` needs the cause, not the generic types.
fn tidy(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find(" [rmcp::") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Starts the transport and runs `initialize`.
async fn connect(
    shared: &Arc<ServerShared>,
    ctx: &StartContext,
    changed: mpsc::Sender<()>,
) -> Result<Connection, String> {
    let handler = Handler { changed };
    match &shared.spec.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args);
            if shared.spec.inherits_environment() {
                for k in ctx.env_remove.iter() {
                    cmd.env_remove(k);
                }
            } else {
                // Allow-listed: a server the repository or the editor named gets the
                // shared variables and what its own `env` says, nothing else.
                cmd.env_clear();
                for k in crate::config::SHARED_VARS {
                    if let Some(v) = std::env::var_os(k) {
                        cmd.env(k, v);
                    }
                }
            }
            cmd.envs(env);
            let dir = cwd
                .as_ref()
                .map(|c| ctx.cwd.join(c))
                .unwrap_or_else(|| ctx.cwd.clone());
            cmd.current_dir(&dir);
            // Set before the sandbox's setup runs (std applies it first), so the process
            // outside the namespaces leads the group the Runtime kills.
            cmd.process_group(0);
            if shared.spec.sandboxed {
                let Some(sandbox) = &ctx.sandbox else {
                    return Err("no tool sandbox is available to run this server in".into());
                };
                sandbox
                    .apply(cmd.as_std_mut(), &dir)
                    .map_err(|e| format!("cannot start `{command}` in the sandbox: {e}"))?;
            }
            cmd.stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
            wrap.wrap(process_wrap::tokio::KillOnDrop);
            let mut child = wrap
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            let group = child
                .id()
                .and_then(|p| i32::try_from(p).ok())
                .map(|pgid| GroupGuard::new(pgid, &ctx.processes));
            let (Some(stdout), Some(stdin)) = (child.stdout().take(), child.stdin().take()) else {
                return Err(format!("cannot start `{command}`: no pipes to it"));
            };
            let child_stderr = child.stderr().take();
            shared.oversized.store(false, Ordering::SeqCst);
            let stdout = crate::limit::Limited::new(stdout, MAX_MESSAGE_BYTES, shared.clone());
            let transport =
                rmcp::transport::async_rw::AsyncRwTransport::<RoleClient, _, _>::new(stdout, stdin);
            let stderr = Arc::new(Mutex::new(Vec::new()));
            if let Some(child_stderr) = child_stderr {
                let keep = stderr.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(child_stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        let mut k = lock(&keep);
                        if k.len() == 3 {
                            k.remove(0);
                        }
                        k.push(line.chars().take(300).collect());
                    }
                });
            }
            let client = handler.serve(transport).await.map_err(|e| {
                let tail = lock(&stderr).join(" | ");
                if tail.is_empty() {
                    format!("`initialize` failed: {e}")
                } else {
                    format!("`initialize` failed: {e}: {tail}")
                }
            })?;
            Ok(Connection {
                client,
                group,
                stderr,
                child: Some(child),
            })
        }
        Transport::Http { url, headers } => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut map = std::collections::HashMap::new();
            for (k, v) in headers {
                let name = http::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| format!("header name `{k}` is invalid"))?;
                let value = http::HeaderValue::from_str(v)
                    .map_err(|_| format!("the value of header `{k}` is invalid"))?;
                map.insert(name, value);
            }
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
            // rmcp builds its reqwest client here, which needs a process-wide TLS
            // provider (the workspace builds reqwest without one: `ring` is installed).
            let _ = rustls::crypto::ring::default_provider().install_default();
            let transport = StreamableHttpClientTransport::from_config(config);
            let client = handler
                .serve(transport)
                .await
                .map_err(|e| format!("`initialize` failed: {}", tidy(&e.to_string())))?;
            Ok(Connection {
                client,
                group: None,
                stderr: Arc::new(Mutex::new(Vec::new())),
                child: None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tidy_drops_rust_type_names() {
        let m = "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<reqwest::Client>>] error: Client error: refused";
        assert_eq!(
            super::tidy(m),
            "Send message error Transport error: Client error: refused"
        );
        assert_eq!(super::tidy("plain"), "plain");
    }
}
