//! The Runtime actor: one task owns the agent's state (session, mode, model, queues,
//! pending requests). Commands arrive on a channel; events leave through one sink. The
//! turn runs inside the actor as a nested loop that keeps serving commands, so there is
//! no shared state and no lock.

mod commands;
mod compaction;
mod context;
mod editor;
mod fork;
mod mcp;
mod partial;
mod permissions;
#[cfg(test)]
mod recovery_tests;
mod serve;
mod start;
mod sync;
mod tool_calls;
mod tools;
mod turn;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use shard_protocol::command::HeadlessPolicy;
use shard_protocol::decode::DecodeError;
use shard_protocol::event::{Event, Hello, StatusEvent};
use shard_protocol::ids;
use shard_protocol::types::{AgentStatus, ContentBlock, Image};
use shard_protocol::{ClientMessage, ErrorCode};
use shard_session::{Session, SessionStore};
use shard_tools::{ProcessTracker, ToolContext, ToolLimits};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::models::{EnvLookup, ModelController};
use crate::modes::ModeController;
use shard_gate::grants::GrantStore;

pub use permissions::PendingPermission;
pub use start::{Prepared, prepare, validate_choice};
use start::{restore_choices, session_start_error};
pub use tools::{RuntimeGone, ToolChange, ToolsHandle};

use crate::ask::{UiAsk, UiHandle};

/// What the actor waits for next: a transport input, or a message from its own parts.
pub(crate) enum Next {
    Input(Option<Input>),
    Internal(Internal),
}

/// What the Runtime's own parts send its actor: a UI request from a tool, a change to its
/// tools. One queue, so waiting for inputs costs two channel polls however many parts
/// there are.
pub(crate) enum Internal {
    Ui(UiAsk),
    Tools(tools::ToolChange),
    /// An MCP server's new tool set and state.
    Mcp(shard_mcp::McpUpdate),
}

/// How many internal messages may wait for the actor before a sender waits.
const INTERNAL_QUEUE: usize = 64;

/// How a Runtime is started (the flags of `shard agent`).
#[derive(Debug, Clone, Default)]
pub struct RuntimeOptions {
    /// `SHARD_HOME`.
    pub shard_home: PathBuf,
    /// Working directory (canonicalized on start).
    pub cwd: PathBuf,
    /// Provider name; on resume it overrides the recorded one (and is recorded).
    pub provider: Option<String>,
    /// Model name or catalog id; on resume it overrides the recorded one.
    pub model: Option<String>,
    /// Mode; on resume it overrides the recorded one (and is recorded).
    pub mode: Option<String>,
    /// Session to resume or create.
    pub session_id: Option<String>,
    /// `None`: the stdio peer is the interactive responder.
    pub headless_policy: Option<HeadlessPolicy>,
    /// Display name.
    pub name: Option<String>,
    /// Script file of the scripted provider.
    pub script: Option<PathBuf>,
    /// Set by the daemon for managed Runtimes.
    pub agent_id: Option<String>,
    /// Tool allow-list (managed children).
    pub tools: Option<Vec<String>>,
    /// Replaces the base system prompt (managed children).
    pub system_prompt: Option<String>,
}

/// What the transport feeds the actor.
#[derive(Debug)]
pub enum Input {
    /// A decoded command.
    Command(ClientMessage),
    /// A line that did not decode.
    Invalid(DecodeError),
    /// The peer closed its side.
    Eof,
}

/// A failure before the Runtime could serve anything.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration is invalid.
    #[error("{0}")]
    Config(String),
    /// The session cannot be opened.
    #[error("{message}")]
    Session {
        /// Protocol code for the failure.
        code: ErrorCode,
        /// One line.
        message: String,
    },
    /// The working directory is unusable.
    #[error("working directory {0}: {1}")]
    Cwd(String, String),
}

/// Prepares the tool sandbox on its own thread (docs/sandbox.md).
fn start_sandbox(
    config: &Config,
    opts: &RuntimeOptions,
    tool_output: std::path::PathBuf,
) -> std::thread::JoinHandle<Result<shard_sandbox::Sandbox, shard_sandbox::SandboxError>> {
    let sandbox_config = config.sandbox.clone();
    let cwd = opts.cwd.clone();
    let home = opts.shard_home.clone();
    std::thread::spawn(move || {
        // A linked worktree's common git dir is added by the sandbox itself, once git's
        // back-link verifies (docs/sandbox.md).
        let spec = shard_sandbox::SandboxSpec {
            workspace_roots: vec![cwd.clone()],
            hidden: vec![home.clone()],
            visible: vec![tool_output],
            temp_parent: None,
            probe_cache: Some(home),
        };
        shard_sandbox::Sandbox::new(&sandbox_config, spec)
    })
}

/// A user message waiting to be delivered.
#[derive(Debug, Clone)]
pub(crate) struct UserInput {
    text: String,
    images: Vec<Image>,
}

/// A steer waiting for the running turn's next provider boundary.
#[derive(Debug, Clone)]
pub(crate) struct PendingSteer {
    input: UserInput,
    /// A strict steer (issue 16) is answered only when it is injected or dropped; this
    /// is the id that answer carries.
    strict: Option<Option<String>>,
}

/// The agent's state, owned by its actor task.
pub struct Runtime {
    opts: RuntimeOptions,
    config: Config,
    events: mpsc::Sender<Event>,
    inputs: mpsc::Receiver<Input>,
    store: SessionStore,
    session: Session,
    modes: ModeController,
    models: ModelController,
    tools: tools::Tools,
    hook: Option<Arc<dyn crate::hooks::ModelCallHook>>,
    /// The system prompt and the mode it was built for: built once per mode so
    /// consecutive calls send the same bytes (its date is the day the mode was entered).
    system: Option<(String, String)>,
    /// Usage of the last model call, shown to the hook.
    last_usage: Option<shard_protocol::types::Usage>,
    gate: Arc<shard_gate::gate::Gate>,
    grants: GrantStore,
    processes: ProcessTracker,
    env_remove: Arc<Vec<String>>,
    sandbox: Arc<shard_sandbox::Sandbox>,
    status: AgentStatus,
    steers: Vec<PendingSteer>,
    follow_ups: VecDeque<UserInput>,
    start_next: Option<UserInput>,
    pending: Option<PendingPermission>,
    pending_answer: Option<permissions::Answer>,
    turn: Option<turn::TurnState>,
    streaming: Option<partial::PartialMessage>,
    instructions: String,
    /// The model's context (every message after the last compaction), read from the
    /// transcript once and then extended as messages are persisted, so a model call never
    /// re-reads the session. Shared: a call copies pointers, not messages. A compaction
    /// replaces it (through the model-call hook).
    context: Option<crate::hooks::SharedContext>,
    internal: mpsc::Receiver<Internal>,
    /// A manual compaction accepted and not yet run.
    compact_next: Option<compaction::CompactRequest>,
    /// Set while a compaction's summary is being written; an abort cancels it.
    compaction_cancel: Option<CancellationToken>,
    /// Context tokens the provider reported for the last call and the context length
    /// they cover: later use is that plus an estimate of what was added.
    usage_mark: Option<(u64, usize)>,
    pending_ui: Vec<(
        shard_protocol::event::UiRequest,
        tokio::sync::oneshot::Sender<serde_json::Value>,
    )>,
    eof: bool,
    sink_closed: bool,
    /// The editor client's files (`client_files`).
    editor: Arc<editor::EditorBridge>,
    /// MCP servers resolved at start, started when the Runtime runs.
    mcp_plan: Option<shard_mcp::Resolved>,
    /// The running MCP servers; stopped with the Runtime.
    mcp: Option<shard_mcp::McpManager>,
    /// Servers the first model request still waits for, and until when.
    mcp_waiting: Option<mcp::McpWait>,
    /// Byte budget of `sync.live_window`, the most a history page holds.
    live_window_budget: usize,
}

impl Runtime {
    /// Prepares and opens in one step (see [`prepare`] and [`Runtime::open`]). Nothing is
    /// written to `events` yet.
    pub fn start(
        opts: RuntimeOptions,
        env: EnvLookup,
        events: mpsc::Sender<Event>,
        inputs: mpsc::Receiver<Input>,
    ) -> Result<Runtime, StartError> {
        Runtime::open(prepare(opts, env)?, events, inputs)
    }

    /// Opens the session of a prepared Runtime (taking its lock) and builds the actor.
    pub fn open(
        prepared: Prepared,
        events: mpsc::Sender<Event>,
        inputs: mpsc::Receiver<Input>,
    ) -> Result<Runtime, StartError> {
        Runtime::open_with(prepared, events, inputs, crate::hooks::Seams::default())
    }

    /// [`Runtime::open`] with injected seams: a provider serving every model selection
    /// and a hook before every model call. For embedders and the in-process test suite;
    /// `shard agent` injects nothing.
    pub fn open_with(
        prepared: Prepared,
        events: mpsc::Sender<Event>,
        inputs: mpsc::Receiver<Input>,
        seams: crate::hooks::Seams,
    ) -> Result<Runtime, StartError> {
        let Prepared {
            opts,
            config,
            mut gate,
            grants,
            mut models,
            mcp: mcp_plan,
            live_window_budget,
        } = prepared;
        let store = SessionStore::new(opts.shard_home.clone());
        let session_id = opts
            .session_id
            .clone()
            .unwrap_or_else(|| ids::new_id(ids::SESSION));
        // The sandbox's probe (a fork that enters it) overlaps with opening the session.
        let tool_output = store
            .session_dir(&session_id)
            .map_err(session_start_error)?
            .join("tool-output");
        let sandbox = start_sandbox(&config, &opts, tool_output.clone());
        let session = store
            .open_or_create(&session_id, &opts.cwd)
            .map_err(session_start_error)?;
        if let Some(torn) = session.torn() {
            tracing::warn!(?torn, "a torn last line of the transcript was set aside");
        }
        // The spill files tool results name are readable although SHARD_HOME is not.
        gate.set_tool_output(&session.dir().join("tool-output"));

        if let Some(provider) = seams.provider {
            models.set_provider_override(provider);
        }
        let mut modes = ModeController::new(&config.modes);
        let mut session = session;
        restore_choices(&opts, &mut session, &mut modes, &mut models);

        let (internal_tx, internal) = mpsc::channel(INTERNAL_QUEUE);
        // `subagent` is offered only under a daemon: it forwards to `subagent.*`. Its
        // description lists the agent definitions there are now (two small dirs).
        let subagent = crate::subagent::SubagentTool::from_env().map(|sub| {
            let defs = shard_protocol::definitions::list_blocking(&opts.shard_home, &opts.cwd);
            crate::subagent::Subagent::new(sub, &defs)
        });
        let tools = crate::tool_budget::first_tools(UiHandle::new(internal_tx.clone()), subagent);
        let tools = tools::Tools::new(tools, opts.tools.clone(), internal_tx);

        let env_remove = config.child_env_remove(mcp_plan.secret_vars());
        let processes = match &opts.agent_id {
            Some(agent_id) => runtime_state_tracker(&opts.shard_home, agent_id),
            None => ProcessTracker::default(),
        };

        // The saved outputs of cut results stay readable by `bash` inside the sandbox (a
        // folder created after the probe is mounted from the next call on).
        if let Err(err) = shard_session::records::ensure_private_dir(&tool_output) {
            tracing::warn!(%err, "cannot create the session's tool-output folder");
        }
        let sandbox = sandbox
            .join()
            .map_err(|_| StartError::Config("the sandbox probe panicked".to_string()))?
            .map_err(|e| StartError::Config(e.to_string()))?;
        if let Some(warning) = sandbox.warning() {
            tracing::warn!("{warning}");
        }

        let cwd_for_prompt = opts.cwd.clone();
        let editor = editor::EditorBridge::new(events.clone());
        let mut runtime = Runtime {
            opts,
            config,
            events,
            inputs,
            store,
            session,
            modes,
            models,
            tools,
            hook: seams.model_call_hook,
            system: None,
            last_usage: None,
            gate: Arc::new(gate),
            grants,
            processes,
            env_remove: Arc::new(env_remove),
            sandbox: Arc::new(sandbox),
            status: AgentStatus::Idle,
            steers: Vec::new(),
            follow_ups: VecDeque::new(),
            start_next: None,
            pending: None,
            pending_answer: None,
            turn: None,
            streaming: None,
            instructions: crate::prompt::project_instructions(&cwd_for_prompt),
            context: None,
            internal,
            compact_next: None,
            compaction_cancel: None,
            usage_mark: None,
            pending_ui: Vec::new(),
            eof: false,
            sink_closed: false,
            editor,
            mcp_plan: Some(mcp_plan),
            mcp_waiting: None,
            mcp: None,
            live_window_budget,
        };
        // A compacted session offers `recall` from its first request.
        runtime.register_recall();
        Ok(runtime)
    }

    /// What the sandbox lacks or refuses, to be said once on stderr; None when it is
    /// complete or off.
    pub fn sandbox_warning(&self) -> Option<String> {
        self.sandbox.warning()
    }

    /// The capabilities announced in `hello` and after a model switch: the model's, then
    /// the sandbox's (`sandbox`, `sandbox-off`, `sandbox-missing:<feature>`).
    pub(crate) fn capabilities(&self) -> Vec<String> {
        let mut caps = self.models.capabilities();
        caps.extend(self.sandbox.capabilities());
        caps
    }

    /// Environment variables that hold keys (the providers' and Shard's own), never
    /// passed to tool processes; the binary also overwrites them in its initial
    /// environment block.
    pub fn secret_env_vars(&self) -> &[String] {
        &self.env_remove
    }

    /// The journal the event writer keeps of the message being streamed (see
    /// `shard_session::streaming`), for this Runtime's session.
    pub fn stream_journal(&self) -> shard_session::streaming::StreamJournal {
        shard_session::streaming::StreamJournal::new(self.session.dir())
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        self.session.id()
    }

    /// Serves until end of input, then finishes persisting. Emits `hello` and `sync`
    /// first.
    pub async fn run(mut self) {
        let hello = Event::Hello(Hello {
            protocol_version: shard_protocol::PROTOCOL_VERSION.to_string(),
            server_version: env!("CARGO_PKG_VERSION").to_string(),
            capabilities: self.capabilities(),
        });
        self.emit(hello).await;
        let sync = self.first_sync().await;
        self.emit(sync).await;
        // In the background: a slow server never delays `hello`, `sync` or a prompt.
        self.start_mcp().await;
        if let Some(torn) = self.session.torn() {
            // Reported, never fatal: a crash mid-write left a partial last line.
            let name = torn
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let message = format!(
                "the transcript's last line was incomplete (a crash mid-write): {} bytes were \
                 set aside in {name}; everything before it was restored",
                torn.len
            );
            self.emit(Event::Error(shard_protocol::event::ErrorEvent {
                agent_id: None,
                code: ErrorCode::SessionCorrupt,
                message,
                fatal: Some(false),
                kind: None,
                retry_after_ms: None,
            }))
            .await;
        }
        loop {
            if let Some(request) = self.compact_next.take() {
                self.run_manual_compaction(request).await;
                continue;
            }
            if let Some(input) = self.start_next.take().or_else(|| {
                if self.status == AgentStatus::Idle {
                    self.follow_ups.pop_front()
                } else {
                    None
                }
            }) {
                self.run_turn(input).await;
                continue;
            }
            if self.eof {
                break;
            }
            let next = self.next_input().await;
            self.handle_next(next).await;
        }
        if let Some(mcp) = self.mcp.take() {
            mcp.stop().await;
        }
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Err(e) = self.session.sync_data() {
            tracing::error!(error = %e, "could not sync the transcript");
        }
        if let Err(e) = self.session.write_meta() {
            tracing::error!(error = %e, "could not write session meta");
        }
        self.processes.kill_all();
        if let Some(agent_id) = &self.opts.agent_id {
            let path = runtime_state_path(&self.opts.shard_home, agent_id);
            let _ = std::fs::remove_file(path);
        }
    }

    /// Waits for a transport input or an internal message (a tool's UI request, a tool
    /// change). After end of input only internal messages arrive (UI requests are then
    /// answered with null at once).
    pub(crate) async fn next_input(&mut self) -> Next {
        let eof = self.eof;
        // Internal messages first: a tool change sent before a command applies before it.
        tokio::select! {
            biased;
            Some(internal) = self.internal.recv() => Next::Internal(internal),
            input = self.inputs.recv(), if !eof => Next::Input(input),
            else => std::future::pending().await,
        }
    }

    pub(crate) async fn handle_next(&mut self, next: Next) {
        match next {
            Next::Input(input) => {
                self.handle_input(input).await;
                if self.eof {
                    self.resolve_all_ui().await;
                }
            }
            Next::Internal(Internal::Ui(ask)) => self.open_ui(ask).await,
            // No client holds a tool list (PROTOCOL has none on the wire), so there is
            // nothing to notify; docs/decisions.md, "Runtime seams".
            Next::Internal(Internal::Tools(change)) => self.tools.apply(change),
            Next::Internal(Internal::Mcp(update)) => self.apply_mcp(update).await,
        }
    }

    async fn open_ui(&mut self, ask: UiAsk) {
        let interactive = self
            .opts
            .headless_policy
            .is_none_or(|p| p == HeadlessPolicy::Queue);
        if self.eof || !interactive {
            let _ = ask.reply.send(serde_json::Value::Null);
            return;
        }
        let mut request = ask.request;
        request.request_id = ids::new_id(ids::REQUEST);
        // A notification waits for nobody, so the agent is not waiting for the UI.
        let waits = request.kind != shard_protocol::types::UiKind::Notify;
        if waits {
            self.pending_ui.push((request.clone(), ask.reply));
            self.set_status(AgentStatus::WaitingForUi).await;
            self.emit(Event::UiRequest(request)).await;
        } else {
            // Pending until acknowledged; the tool is released once it is shown.
            self.pending_ui
                .push((request.clone(), tokio::sync::oneshot::channel().0));
            self.emit(Event::UiRequest(request)).await;
            let _ = ask.reply.send(serde_json::Value::Null);
        }
    }

    /// Resolves a pending UI request; unknown or late answers are dropped silently.
    pub(crate) async fn answer_ui(&mut self, request_id: &str, value: serde_json::Value) {
        let Some(pos) = self
            .pending_ui
            .iter()
            .position(|(r, _)| r.request_id == request_id)
        else {
            return;
        };
        let (request, reply) = self.pending_ui.remove(pos);
        let _ = reply.send(value.clone());
        self.emit(Event::UiResolved(shard_protocol::event::UiResolved {
            agent_id: None,
            request_id: request.request_id,
            value,
        }))
        .await;
        let still_waiting = self
            .pending_ui
            .iter()
            .any(|(r, _)| r.kind != shard_protocol::types::UiKind::Notify);
        if !still_waiting && self.status == AgentStatus::WaitingForUi {
            let back = if self.turn.is_some() {
                AgentStatus::Streaming
            } else {
                AgentStatus::Idle
            };
            self.set_status(back).await;
        }
    }

    /// Answers every pending UI request with null (nobody is left, or the turn ended).
    pub(crate) async fn resolve_all_ui(&mut self) {
        let ids: Vec<String> = self
            .pending_ui
            .iter()
            .map(|(r, _)| r.request_id.clone())
            .collect();
        for id in ids {
            self.answer_ui(&id, serde_json::Value::Null).await;
        }
    }

    async fn handle_input(&mut self, input: Option<Input>) {
        match input {
            None | Some(Input::Eof) => self.on_eof(),
            Some(Input::Invalid(err)) => {
                let ev = Event::err(
                    err.id.clone(),
                    err.type_name.as_deref(),
                    ErrorCode::InvalidRequest,
                    err.message,
                );
                self.emit(ev).await;
            }
            Some(Input::Command(msg)) => self.handle_command(msg).await,
        }
    }

    fn on_eof(&mut self) {
        self.eof = true;
        // Under a daemon, end of input means the daemon died: nobody is left to watch,
        // so the turn stops now (no more provider calls or tools unattended) and the
        // Runtime exits. A direct Runtime lets its turn finish.
        if self.opts.agent_id.is_some() {
            self.start_next = None;
            if self.turn.is_some() {
                self.request_abort();
            }
        }
        // Nobody can answer any more: pending requests resolve through the headless path.
        if self.pending.is_some() && self.pending_answer.is_none() {
            self.pending_answer = Some(permissions::Answer::no_responder());
        }
    }

    /// Sends one event; a closed sink turns into end of input (the peer is gone), and
    /// the Runtime still persists everything.
    pub(crate) async fn emit(&mut self, event: Event) {
        if self.sink_closed {
            return;
        }
        if self.events.send(event).await.is_err() {
            self.sink_closed = true;
            self.on_eof();
        }
    }

    pub(crate) async fn set_status(&mut self, status: AgentStatus) {
        if self.status == status {
            return;
        }
        self.status = status;
        self.emit(Event::Status(StatusEvent {
            agent_id: None,
            status,
            detail: None,
        }))
        .await;
    }

    fn tool_context(&self, cancel: CancellationToken) -> ToolContext {
        let mut limits = ToolLimits::default();
        if let Some(s) = self.config.tools.bash_max_timeout_secs {
            limits.bash_max_timeout = std::time::Duration::from_secs(s);
        }
        if let Some(s) = self.config.tools.bash_default_timeout_secs {
            limits.bash_default_timeout = std::time::Duration::from_secs(s);
        }
        ToolContext {
            cwd: self.opts.cwd.clone(),
            cancel,
            limits,
            env_remove: self.env_remove.clone(),
            processes: self.processes.clone(),
            // Inside the session's folder: removed with it, bounded per session.
            output_dir: self.session.dir().join("tool-output"),
            accepts_images: self.models.active().is_ok_and(|a| a.info.supports_images),
            image_max_bytes: self
                .models
                .active()
                .ok()
                .and_then(|a| shard_ai::image_limits(&a.info))
                .map_or(0, |l| l.max_bytes),
            sandbox: self.sandbox.clone(),
            path_filter: {
                let gate = self.gate.clone();
                shard_tools::PathFilter::new(Arc::new(move |tool, path, link| {
                    gate.visible(tool, path, link)
                }))
            },
            editor: self
                .editor
                .offered()
                .then(|| Arc::clone(&self.editor) as Arc<dyn shard_tools::EditorFiles>),
        }
    }

    /// Persists a message entry and mirrors it into the cached context.
    pub(crate) fn append_message(
        &mut self,
        id: Option<String>,
        kind: shard_session::EntryKind,
    ) -> Result<(), shard_session::SessionError> {
        let entry = match id {
            Some(id) => self.session.append_with_id(id, kind)?,
            None => self.session.append(kind)?,
        };
        if let (Some(context), shard_session::EntryKind::Message(m)) =
            (self.context.as_mut(), entry.kind)
            && !m.message.content.is_empty()
        {
            context.push(Arc::new(m.message));
        }
        Ok(())
    }

    pub(crate) fn user_blocks(input: &UserInput) -> Vec<ContentBlock> {
        let mut blocks = vec![ContentBlock::Text {
            text: input.text.clone(),
        }];
        for img in &input.images {
            blocks.push(ContentBlock::Image {
                data: img.data.clone(),
                mime_type: img.mime_type.clone(),
            });
        }
        blocks
    }
}

fn runtime_state_path(shard_home: &std::path::Path, agent_id: &str) -> PathBuf {
    shard_home.join("runtime").join(format!("{agent_id}.json"))
}

/// A tracker that records the Runtime's pid and live tool process groups in
/// `SHARD_HOME/runtime/<agent_id>.json`, so the daemon can kill them if this process dies
/// (ARCHITECTURE §16 item 15).
fn runtime_state_tracker(shard_home: &std::path::Path, agent_id: &str) -> ProcessTracker {
    if !ids::is_valid(ids::AGENT, agent_id) {
        return ProcessTracker::default();
    }
    let path = runtime_state_path(shard_home, agent_id);
    let pid = std::process::id();
    let write = move |groups: Vec<i32>| {
        let body = serde_json::json!({ "version": 1, "pid": pid, "process_groups": groups });
        if let Some(dir) = path.parent() {
            let _ = shard_session::records::ensure_private_dir(dir);
        }
        if let Err(e) = shard_session::records::atomic_write(&path, body.to_string().as_bytes()) {
            tracing::warn!(error = %e, "could not record tool process groups");
        }
    };
    write(Vec::new());
    ProcessTracker::with_hook(Arc::new(write))
}
