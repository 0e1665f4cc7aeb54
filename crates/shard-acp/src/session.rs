//! One ACP session: a task that owns the session's link to its Shard agent and turns the
//! agent's events into `session/update` notifications, its permission requests into
//! `session/request_permission`, and the editor's prompts, cancels and mode switches into
//! Shard commands. Everything else talks to it through [`SessionHandle`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde_json::{Map, Value};
use shard_protocol::command::{AgentTarget, ClientFiles};
use shard_protocol::command::{Prompt, SessionOp, SessionOpKind, SetMode};
use shard_protocol::{Command, Event};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::link::{AgentSpec, Events, Link};
use crate::rpc::{Peer, RpcError, code};
use crate::translate::ShardPrompt;

mod events;
mod requests;

/// How long a cancelled prompt may wait for its turn to end before it answers
/// `cancelled` anyway (ACP clients expect the answer promptly; the turn's last events
/// still stream after it).
const CANCEL_ANSWER: Duration = Duration::from_millis(800);

/// The slash commands `available_commands_update` offers, and what they do.
pub const COMMANDS: &[(&str, &str)] = &[(
    "compact",
    "Summarize older messages to free context (Shard session_op compact)",
)];

/// Messages to a session task.
pub enum Msg {
    /// `session/prompt`.
    Prompt(
        ShardPrompt,
        oneshot::Sender<Result<acp::StopReason, RpcError>>,
    ),
    /// `session/cancel`.
    Cancel,
    /// `session/set_mode`.
    SetMode(String, oneshot::Sender<Result<(), RpcError>>),
    /// The editor answered `session/request_permission` for Shard request `request_id`.
    PermissionAnswered {
        /// The Shard request.
        request_id: String,
        /// The editor's answer; `None` for `cancelled` or a failed request.
        option_id: Option<String>,
    },
    /// The editor answered a file request.
    FileAnswered {
        /// The Shard request.
        request_id: String,
        /// The text of a read.
        content: Option<String>,
        /// Why it failed.
        error: Option<String>,
    },
    /// The daemon reported that the agent's Runtime died.
    RuntimeDied(String),
    /// The connection ends: leave the agent.
    Close(oneshot::Sender<()>),
}

/// The way to reach a session task.
#[derive(Clone)]
pub struct SessionHandle {
    /// Its inbox.
    pub tx: mpsc::UnboundedSender<Msg>,
    /// The daemon agent behind it, if any.
    pub agent_id: Option<String>,
}

/// How a session reopens its agent after a direct Runtime died.
#[derive(Clone)]
pub enum Reopen {
    /// Start `shard agent --session ID` again.
    Direct(AgentSpec),
    /// The daemon restarts the Runtime itself on the next prompt.
    Daemon,
}

/// What a tool call is, as far as the stream has told.
#[derive(Default)]
struct Call {
    name: String,
    args: Map<String, Value>,
    args_known: bool,
    asked: bool,
    finished: bool,
}

struct Asked {
    tool_call_id: String,
    by_choice: bool,
}

struct Turn {
    reply: oneshot::Sender<Result<acp::StopReason, RpcError>>,
    turn_id: Option<String>,
    cancel_at: Option<Instant>,
    error: Option<String>,
    own_message_seen: bool,
}

/// What a session task starts with.
pub struct Start {
    /// The Shard session id (also the ACP `sessionId`).
    pub id: String,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// How to reopen the agent.
    pub reopen: Reopen,
    /// The open link.
    pub link: Link,
    /// Its events, the first `sync` taken out.
    pub events: Events,
    /// The mode that `sync` named.
    pub mode: String,
    /// The editor's file offer.
    pub files: ClientFiles,
}

/// The session task's state.
pub struct Session {
    id: String,
    cwd: PathBuf,
    peer: Peer,
    reopen: Reopen,
    link: Option<Link>,
    events: Option<Events>,
    calls: HashMap<String, Call>,
    order: Vec<String>,
    blocks: HashMap<(String, u32), String>,
    asked: HashMap<String, Asked>,
    turn: Option<Turn>,
    mode: String,
    tx: mpsc::UnboundedSender<Msg>,
    files: ClientFiles,
}

impl Session {
    /// Starts the task for an open link; returns its handle.
    pub fn spawn(start: Start, peer: Peer) -> SessionHandle {
        let (tx, rx) = mpsc::unbounded_channel();
        let agent_id = start.link.agent_id().map(str::to_string);
        let session = Session {
            id: start.id,
            cwd: start.cwd,
            peer,
            reopen: start.reopen,
            link: Some(start.link),
            events: Some(start.events),
            calls: HashMap::new(),
            order: Vec::new(),
            blocks: HashMap::new(),
            asked: HashMap::new(),
            turn: None,
            mode: start.mode,
            tx: tx.clone(),
            files: start.files,
        };
        tokio::spawn(session.run(rx));
        SessionHandle { tx, agent_id }
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        loop {
            let deadline = self.turn.as_ref().and_then(|t| t.cancel_at);
            tokio::select! {
                msg = rx.recv() => match msg {
                    Some(Msg::Close(done)) => {
                        if let Some(link) = self.link.take() {
                            if self.files.read || self.files.write {
                                // The agent outlives this editor (daemon): withdraw the offer.
                                let _ = link.call(Command::ClientFiles(ClientFiles::default())).await;
                            }
                            link.close().await;
                        }
                        let _ = done.send(());
                        return;
                    }
                    Some(m) => self.on_msg(m).await,
                    None => break,
                },
                ev = recv(&mut self.events) => match ev {
                    Some(ev) => self.on_event(ev).await,
                    None => self.on_died("the Shard Runtime ended".into()).await,
                },
                _ = sleep_until(deadline) => self.finish(Ok(acp::StopReason::Cancelled)),
            }
        }
        if let Some(link) = self.link.take() {
            link.close().await;
        }
    }

    fn update(&self, update: acp::SessionUpdate) {
        self.peer.notify(
            "session/update",
            &acp::SessionNotification::new(self.id.clone(), update),
        );
    }

    fn finish(&mut self, result: Result<acp::StopReason, RpcError>) {
        if let Some(t) = self.turn.take() {
            let _ = t.reply.send(result);
        }
    }

    async fn on_msg(&mut self, msg: Msg) {
        match msg {
            Msg::Prompt(p, reply) => self.prompt(p, reply).await,
            Msg::Cancel => {
                if let Some(t) = &mut self.turn
                    && t.cancel_at.is_none()
                {
                    t.cancel_at = Some(Instant::now() + CANCEL_ANSWER);
                    if let Some(link) = &self.link {
                        let _ = link.send(Command::Abort(AgentTarget::default()));
                    }
                }
            }
            Msg::SetMode(mode, reply) => {
                let r = match &self.link {
                    None => Err(RpcError::internal("the session's Runtime is not running")),
                    Some(link) => link
                        .call(Command::SetMode(SetMode {
                            agent_id: None,
                            mode: mode.clone(),
                        }))
                        .await
                        .map(|_| ())
                        .map_err(|e| RpcError::invalid_params("modeId", e.to_string())),
                };
                let _ = reply.send(r);
            }
            Msg::PermissionAnswered {
                request_id,
                option_id,
            } => self.answer_permission(request_id, option_id),
            Msg::FileAnswered {
                request_id,
                content,
                error,
            } => self.file_answered(request_id, content, error),
            Msg::RuntimeDied(why) => self.on_died(why).await,
            Msg::Close(_) => {}
        }
    }

    async fn prompt(
        &mut self,
        p: ShardPrompt,
        reply: oneshot::Sender<Result<acp::StopReason, RpcError>>,
    ) {
        if self.turn.is_some() {
            let e = RpcError::new(
                code::INVALID_REQUEST,
                "a prompt is already running in this session",
            );
            let _ = reply.send(Err(e));
            return;
        }
        if let Err(e) = self.ensure_link().await {
            let _ = reply.send(Err(e));
            return;
        }
        let Some(link) = &self.link else { return };
        if let Some(rest) = p.text.trim().strip_prefix("/compact")
            && (rest.is_empty() || rest.starts_with(char::is_whitespace))
        {
            let r = link
                .call(Command::SessionOp(SessionOp {
                    agent_id: None,
                    op: SessionOpKind::Compact,
                    args: None,
                }))
                .await;
            let text = match r {
                Ok(_) => "Compacted the conversation.".to_string(),
                Err(e) => format!("Could not compact: {e}"),
            };
            self.update(acp::SessionUpdate::AgentMessageChunk(text_chunk(&text)));
            let _ = reply.send(Ok(acp::StopReason::EndTurn));
            return;
        }
        self.send_prompt(p, reply).await;
    }

    /// Sends a prompt to the Runtime; the turn's end answers it.
    async fn send_prompt(
        &mut self,
        p: ShardPrompt,
        reply: oneshot::Sender<Result<acp::StopReason, RpcError>>,
    ) {
        let Some(link) = &self.link else {
            let _ = reply.send(Err(RpcError::internal(
                "the session's Runtime is not running",
            )));
            return;
        };
        let images = (!p.images.is_empty()).then_some(p.images);
        let command = Command::Prompt(Prompt {
            agent_id: None,
            message: p.text,
            images,
            streaming_behavior: None,
        });
        match link.request(command).await {
            Ok(r) if r.success => {
                self.turn = Some(Turn {
                    reply,
                    turn_id: None,
                    cancel_at: None,
                    error: None,
                    own_message_seen: false,
                });
            }
            Ok(r) => {
                let msg = r
                    .error
                    .map(|e| format!("{}: {}", e.code, e.message))
                    .unwrap_or_else(|| "the prompt was refused".into());
                let _ = reply.send(Err(RpcError::internal(msg)));
            }
            Err(e) => {
                let _ = reply.send(Err(RpcError::internal(format!(
                    "the Shard Runtime did not take the prompt: {e}"
                ))));
                self.on_died(e.to_string()).await;
            }
        }
    }

    /// Reopens a direct Runtime that died (the session's transcript is on disk, so
    /// nothing is lost); a daemon agent restarts on its own.
    async fn ensure_link(&mut self) -> Result<(), RpcError> {
        if self.link.is_some() {
            return Ok(());
        }
        let opened = match &self.reopen {
            Reopen::Direct(spec) => Link::direct(spec, &self.cwd, &self.id, true).await,
            Reopen::Daemon => {
                return Err(RpcError::internal("the daemon connection is gone"));
            }
        };
        match opened {
            Ok((link, events, sync)) => {
                self.link = Some(link);
                self.events = Some(events);
                self.on_sync(&sync).await;
                Ok(())
            }
            Err(e) => Err(RpcError::internal(format!(
                "could not restart the Shard Runtime: {e}"
            ))),
        }
    }

    async fn on_died(&mut self, why: String) {
        if matches!(self.reopen, Reopen::Direct(_)) {
            self.events = None;
            if let Some(link) = self.link.take() {
                tokio::spawn(link.close());
            }
        }
        self.asked.clear();
        let open: Vec<String> = self
            .order
            .iter()
            .filter(|id| self.calls.get(*id).is_some_and(|c| !c.finished))
            .cloned()
            .collect();
        for id in open {
            if let Some(c) = self.calls.get_mut(&id) {
                c.finished = true;
            }
            self.update(acp::SessionUpdate::ToolCallUpdate(
                acp::ToolCallUpdate::new(
                    id,
                    acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::Failed),
                ),
            ));
        }
        self.finish(Err(RpcError::internal(format!(
            "{why}; the next prompt starts a new Runtime on the same session"
        ))));
    }
}

fn text_chunk(text: &str) -> acp::ContentChunk {
    acp::ContentChunk::new(acp::ContentBlock::Text(acp::TextContent::new(text)))
}

async fn recv(events: &mut Option<Events>) -> Option<Event> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
