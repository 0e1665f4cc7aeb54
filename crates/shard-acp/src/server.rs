//! The ACP method table: `initialize`, `authenticate`, `session/new`, `session/load`,
//! `session/prompt`, `session/cancel`, `session/set_mode`. Each session lives in its own
//! task ([`crate::session`]); this module opens them and routes the editor's calls.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;
use shard_client::Client;
use shard_protocol::command::{ClientFiles, SessionOp, SessionOpArgs, SessionOpKind};
use shard_protocol::event::Sync;
use shard_protocol::responses::{ListModesData, SessionHistoryData};
use shard_protocol::types::Message;
use shard_protocol::{Command, Event, IncomingEvent, ids};
use tokio::sync::{OnceCell, oneshot};

use crate::AcpConfig;
use crate::link::{AgentSpec, Events, Link, LinkError};
use crate::rpc::{Peer, RpcError, code, params};
use crate::session::{COMMANDS, Msg, Reopen, Session, SessionHandle, Start};
use crate::translate;

/// The server's shared state; each field is touched without awaiting under a lock.
pub struct Server {
    peer: Peer,
    config: AcpConfig,
    sessions: Mutex<HashMap<String, SessionHandle>>,
    daemon: OnceCell<Option<Arc<Client>>>,
    auth: OnceCell<Option<String>>,
    /// What the editor's `fs` capability offers.
    files: Mutex<ClientFiles>,
}

impl Server {
    /// A server answering through `peer`.
    pub fn new(peer: Peer, config: AcpConfig) -> Arc<Server> {
        Arc::new(Server {
            peer,
            config,
            sessions: Mutex::default(),
            daemon: OnceCell::new(),
            auth: OnceCell::new(),
            files: Mutex::default(),
        })
    }

    /// Starts the slow look-ups (is a daemon running, is a provider configured) while the
    /// editor is still sending `initialize`.
    pub fn warm_up(self: &Arc<Self>) {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            me.daemon().await;
        });
        let me = Arc::clone(self);
        tokio::spawn(async move {
            me.auth_problem().await;
        });
    }

    async fn daemon(self: &Arc<Self>) -> Option<Arc<Client>> {
        let me = Arc::clone(self);
        self.daemon
            .get_or_init(|| async move {
                if !me.config.use_daemon {
                    return None;
                }
                let client = Arc::new(Client::connect_daemon(&me.config.home).await.ok()?);
                tokio::spawn(watch_daemon(Arc::downgrade(&me), Arc::clone(&client)));
                Some(client)
            })
            .await
            .clone()
    }

    async fn auth_problem(&self) -> Option<String> {
        let check = Arc::clone(&self.config.auth_check);
        self.auth
            .get_or_init(|| async move {
                tokio::task::spawn_blocking(move || check())
                    .await
                    .unwrap_or(None)
            })
            .await
            .clone()
    }

    /// Handles one request; the answer is written when it is ready.
    pub async fn request(self: Arc<Self>, id: Value, method: String, p: Option<Value>) {
        let result = match method.as_str() {
            "initialize" => self.initialize(p).await,
            "authenticate" => self.authenticate().await,
            "session/new" => self.new_session(p).await,
            "session/load" => self.load_session(p).await,
            "session/prompt" => self.prompt(p).await,
            "session/set_mode" => self.set_mode(p).await,
            _ => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
        };
        let after = match &result {
            Ok((_, after)) => after.clone(),
            Err(_) => None,
        };
        self.peer.respond(id, result.map(|(v, _)| v));
        if let Some(session_id) = after {
            self.after_open(&session_id);
        }
    }

    /// Handles one notification (no answer).
    pub fn notification(&self, method: &str, p: Option<Value>) {
        if method == "session/cancel" {
            match params::<acp::CancelNotification>(method, p) {
                Ok(c) => {
                    if let Some(s) = self.session(&c.session_id.0) {
                        let _ = s.tx.send(Msg::Cancel);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "bad session/cancel"),
            }
        } else {
            tracing::debug!(method, "notification ignored");
        }
    }

    /// Leaves every session (the editor closed the connection).
    pub async fn close(&self) {
        let handles: Vec<SessionHandle> = self
            .sessions
            .lock()
            .map(|mut s| s.drain().map(|(_, h)| h).collect())
            .unwrap_or_default();
        for h in handles {
            let (tx, rx) = oneshot::channel();
            if h.tx.send(Msg::Close(tx)).is_ok() {
                let _ = rx.await;
            }
        }
        self.peer.close_pending();
    }

    fn session(&self, id: &str) -> Option<SessionHandle> {
        self.sessions.lock().ok()?.get(id).cloned()
    }

    fn session_for_agent(&self, agent_id: &str) -> Option<SessionHandle> {
        let s = self.sessions.lock().ok()?;
        s.values()
            .find(|h| h.agent_id.as_deref() == Some(agent_id))
            .cloned()
    }

    fn after_open(&self, session_id: &str) {
        let commands = COMMANDS
            .iter()
            .map(|(name, description)| acp::AvailableCommand::new(*name, *description))
            .collect();
        self.peer.notify(
            "session/update",
            &acp::SessionNotification::new(
                session_id.to_string(),
                acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(
                    commands,
                )),
            ),
        );
    }

    async fn initialize(self: &Arc<Self>, p: Option<Value>) -> Answer {
        let req: acp::InitializeRequest = params("initialize", p)?;
        if let Ok(mut f) = self.files.lock() {
            f.read = req.client_capabilities.fs.read_text_file;
            f.write = req.client_capabilities.fs.write_text_file;
        }
        let caps = acp::AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                acp::PromptCapabilities::new()
                    .image(true)
                    .embedded_context(true),
            )
            .mcp_capabilities(acp::McpCapabilities::new().http(true).sse(false));
        let mut resp =
            acp::InitializeResponse::new(agent_client_protocol_schema::ProtocolVersion::V1)
                .agent_capabilities(caps)
                .agent_info(
                    acp::Implementation::new("shard", self.config.version.clone())
                        .title("Shard".to_string()),
                );
        if let Some(why) = self.auth_problem().await {
            resp = resp.auth_methods(vec![acp::AuthMethod::Agent(
                acp::AuthMethodAgent::new("shard-provider-key", "Configure a model provider")
                    .description(format!(
                        "{why}. Set a provider key (e.g. ANTHROPIC_API_KEY or OPENAI_API_KEY) \
                         in the editor's environment for the agent, or configure a provider in \
                         SHARD_HOME/config.toml, then restart the agent."
                    )),
            )]);
        }
        ok(&resp)
    }

    async fn authenticate(&self) -> Answer {
        match self.auth_problem().await {
            None => ok(&serde_json::json!({})),
            Some(why) => Err(RpcError::new(
                code::AUTH_REQUIRED,
                format!("{why}; configure a provider key and restart the agent"),
            )),
        }
    }

    fn cwd(cwd: &Path) -> Result<PathBuf, RpcError> {
        if !cwd.is_absolute() {
            return Err(RpcError::invalid_params(
                "cwd",
                format!("cwd must be an absolute path, got {}", cwd.display()),
            ));
        }
        std::fs::canonicalize(cwd)
            .map_err(|e| RpcError::invalid_params("cwd", format!("{}: {e}", cwd.display())))
    }

    /// The agent spec of a session with the editor's MCP servers: they join the
    /// configured ones as untrusted servers (tool sandbox, gate; docs/acp.md).
    fn spec_with(&self, servers: &[acp::McpServer]) -> Result<AgentSpec, RpcError> {
        let mut spec = self.config.agent.clone();
        spec.mcp_servers = crate::mcp::servers(servers)?;
        Ok(spec)
    }

    async fn new_session(self: &Arc<Self>, p: Option<Value>) -> Answer {
        let req: acp::NewSessionRequest = params("session/new", p)?;
        let cwd = Self::cwd(&req.cwd)?;
        let spec = &self.spec_with(&req.mcp_servers)?;
        let (reopen, opened) = match self.daemon().await {
            Some(d) => (
                Reopen::Daemon,
                Link::daemon_create(d, spec, &cwd, None).await,
            ),
            None => {
                let id = ids::new_id(ids::SESSION);
                (
                    Reopen::Direct(spec.clone()),
                    Link::direct(spec, &cwd, &id, false).await,
                )
            }
        };
        let (link, events, sync) = opened.map_err(start_error)?;
        let (id, modes) = self.open(cwd, reopen, link, events, sync).await?;
        let resp = acp::NewSessionResponse::new(id.clone()).modes(modes);
        Ok((to_value(&resp)?, Some(id)))
    }

    async fn load_session(self: &Arc<Self>, p: Option<Value>) -> Answer {
        let req: acp::LoadSessionRequest = params("session/load", p)?;
        let cwd = Self::cwd(&req.cwd)?;
        let spec = &self.spec_with(&req.mcp_servers)?;
        let id = req.session_id.0.to_string();
        if !ids::is_valid(ids::SESSION, &id) {
            return Err(RpcError::invalid_params(
                "sessionId",
                format!("`{id}` is not a Shard session id (sess-…)"),
            ));
        }
        if let Some(old) = self.sessions.lock().ok().and_then(|mut s| s.remove(&id)) {
            let (tx, rx) = oneshot::channel();
            if old.tx.send(Msg::Close(tx)).is_ok() {
                let _ = rx.await;
            }
        }
        let (reopen, opened) = match self.daemon().await {
            Some(d) => {
                let existing = d
                    .list()
                    .await
                    .map_err(|e| RpcError::internal(e.to_string()))?
                    .into_iter()
                    .find(|a| a.session_id.as_deref() == Some(id.as_str()));
                let opened = match existing {
                    Some(a) => {
                        if !spec.mcp_servers.is_empty() {
                            // A running agent keeps the servers it was started with.
                            tracing::info!(
                                agent_id = %a.agent_id,
                                "session/load of a running daemon agent: the editor's MCP \
                                 servers are not added to it"
                            );
                        }
                        Link::daemon_attach(Arc::clone(&d), a.agent_id).await
                    }
                    None => Link::daemon_create(Arc::clone(&d), spec, &cwd, Some(id.clone())).await,
                };
                (Reopen::Daemon, opened)
            }
            None => {
                let file = self
                    .config
                    .home
                    .join("sessions")
                    .join(&id)
                    .join("session.jsonl");
                if !file.exists() {
                    return Err(RpcError::new(
                        code::RESOURCE_NOT_FOUND,
                        format!("no session {id} in {}", self.config.home.display()),
                    ));
                }
                (
                    Reopen::Direct(spec.clone()),
                    Link::direct(spec, &cwd, &id, true).await,
                )
            }
        };
        let (link, events, sync) = opened.map_err(|e| match e {
            LinkError::Client(shard_client::ClientError::Command(b))
                if b.code == shard_protocol::ErrorCode::NotFound =>
            {
                RpcError::new(code::RESOURCE_NOT_FOUND, b.message)
            }
            e => start_error(e),
        })?;
        let history = history(&link, &sync).await;
        for u in translate::replay(&cwd, &history) {
            self.peer.notify(
                "session/update",
                &acp::SessionNotification::new(id.clone(), u),
            );
        }
        let (id, modes) = self.open(cwd, reopen, link, events, sync).await?;
        let resp = acp::LoadSessionResponse::new().modes(modes);
        Ok((to_value(&resp)?, Some(id)))
    }

    async fn open(
        self: &Arc<Self>,
        cwd: PathBuf,
        reopen: Reopen,
        link: Link,
        events: Events,
        sync: Sync,
    ) -> Result<(String, acp::SessionModeState), RpcError> {
        let id = sync
            .session_id
            .clone()
            .ok_or_else(|| RpcError::internal("the agent did not name its session"))?;
        let listed = link
            .call(Command::ListModes(Default::default()))
            .await
            .map_err(|e| RpcError::internal(format!("list_modes: {e}")))?;
        let data: ListModesData = serde_json::from_value(listed.unwrap_or(Value::Null))
            .map_err(|e| RpcError::internal(format!("list_modes: {e}")))?;
        let modes = acp::SessionModeState::new(
            sync.mode.clone(),
            data.modes
                .iter()
                .map(|m| {
                    acp::SessionMode::new(m.name.clone(), m.name.clone())
                        .description(m.description.clone())
                })
                .collect(),
        );
        let files = self.files.lock().map(|f| f.clone()).unwrap_or_default();
        if files.read || files.write {
            link.call(Command::ClientFiles(files.clone()))
                .await
                .map_err(|e| RpcError::internal(format!("client_files: {e}")))?;
        }
        let start = Start {
            id: id.clone(),
            cwd,
            reopen,
            link,
            events,
            mode: sync.mode.clone(),
            files,
        };
        let handle = Session::spawn(start, self.peer.clone());
        if let Ok(mut s) = self.sessions.lock() {
            s.insert(id.clone(), handle);
        }
        Ok((id, modes))
    }

    fn known(&self, id: &acp::SessionId) -> Result<SessionHandle, RpcError> {
        self.session(&id.0).ok_or_else(|| {
            RpcError::invalid_params(
                "sessionId",
                format!(
                    "unknown session `{}`: open it with session/new or session/load",
                    id.0
                ),
            )
        })
    }

    async fn prompt(&self, p: Option<Value>) -> Answer {
        let req: acp::PromptRequest = params("session/prompt", p)?;
        let session = self.known(&req.session_id)?;
        let prompt = translate::prompt(&req.prompt)?;
        let (tx, rx) = oneshot::channel();
        session
            .tx
            .send(Msg::Prompt(prompt, tx))
            .map_err(|_| RpcError::internal("the session ended"))?;
        let stop = rx
            .await
            .map_err(|_| RpcError::internal("the session ended"))??;
        ok(&acp::PromptResponse::new(stop))
    }

    async fn set_mode(&self, p: Option<Value>) -> Answer {
        let req: acp::SetSessionModeRequest = params("session/set_mode", p)?;
        let session = self.known(&req.session_id)?;
        let (tx, rx) = oneshot::channel();
        session
            .tx
            .send(Msg::SetMode(req.mode_id.0.to_string(), tx))
            .map_err(|_| RpcError::internal("the session ended"))?;
        rx.await
            .map_err(|_| RpcError::internal("the session ended"))??;
        ok(&acp::SetSessionModeResponse::new())
    }
}

/// A method's answer, and the session to announce slash commands for once it is sent.
type Answer = Result<(Value, Option<String>), RpcError>;

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, RpcError> {
    serde_json::to_value(v).map_err(|e| RpcError::internal(e.to_string()))
}

fn ok<T: serde::Serialize>(v: &T) -> Answer {
    Ok((to_value(v)?, None))
}

fn start_error(e: LinkError) -> RpcError {
    RpcError::internal(format!("could not start the Shard agent: {e}"))
}

/// The whole conversation after the last compaction: the `sync` window, and the pages
/// before it when the window was cut.
async fn history(link: &Link, sync: &Sync) -> Vec<Message> {
    let mut messages = sync.live_window.messages.clone();
    let mut before = sync.live_window.truncated_before.clone();
    while let Some(b) = before.take() {
        let page = link
            .call(Command::SessionOp(SessionOp {
                agent_id: None,
                op: SessionOpKind::History,
                args: Some(SessionOpArgs {
                    before: Some(b),
                    ..SessionOpArgs::default()
                }),
            }))
            .await;
        let Ok(Some(data)) = page else { break };
        let Ok(page) = serde_json::from_value::<SessionHistoryData>(data) else {
            break;
        };
        if page.messages.is_empty() {
            break;
        }
        let mut all = page.messages;
        all.extend(messages);
        messages = all;
        before = page.truncated_before;
    }
    messages
}

/// Reads the daemon connection's own events: a Runtime that died fails its session's
/// prompt (the daemon starts a new one on the next).
async fn watch_daemon(server: std::sync::Weak<Server>, client: Arc<Client>) {
    while let Some(ev) = client.next_event().await {
        let IncomingEvent::Known(Event::AgentExited(e)) = ev else {
            continue;
        };
        let Some(server) = server.upgrade() else {
            return;
        };
        if let Some(s) = server.session_for_agent(&e.agent_id) {
            let _ = s.tx.send(Msg::RuntimeDied(format!(
                "the Shard Runtime exited: {}",
                e.reason
            )));
        }
    }
    let Some(server) = server.upgrade() else {
        return;
    };
    let handles: Vec<SessionHandle> = server
        .sessions
        .lock()
        .map(|s| {
            s.values()
                .filter(|h| h.agent_id.is_some())
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    for h in handles {
        let _ =
            h.tx.send(Msg::RuntimeDied("the daemon connection closed".into()));
    }
}
