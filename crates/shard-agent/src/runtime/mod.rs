//! The Runtime actor: one task owns the agent's state; commands arrive on a channel and
//! events leave through one sink. The turn runs inside the actor as a nested loop that
//! keeps serving commands, so there is no shared state and no lock.
//!
//! The modules form layers (docs/architecture.md, "The Runtime's layers"); a file uses
//! only files of a layer below its own, which `layering_tests` checks:
//!
//! 1. **Parts**, which know nothing of the actor: `conversation` (the session and the
//!    context), `flight` (the turn in flight and what is queued), `toolbox` (the tools
//!    with the gate), `choice` (the provider and model choice), and their pieces
//!    (`partial`, `tools`, `editor`, `inbox`, `start`).
//! 2. **The actor** (this file): the `Runtime` struct that owns one of each part, its
//!    construction, and emitting events.
//! 3. **Behaviour**, `impl Runtime` blocks by concern: `serve` (waiting while serving
//!    commands), `actor` (the main loop), `ui`, `sync`, `context`, `permissions`,
//!    `tool_calls`, `model_call`, `compaction`, `fork`, `mcp`, `turn`, `commands`.

mod actor;
mod choice;
mod commands;
mod compaction;
mod context;
mod conversation;
mod editor;
mod flight;
mod fork;
mod inbox;
#[cfg(test)]
mod layering_tests;
mod mcp;
mod model_call;
mod partial;
mod permissions;
#[cfg(test)]
mod recovery_tests;
mod serve;
mod start;
mod sync;
mod tool_calls;
mod toolbox;
mod tools;
mod turn;
mod ui;

use std::path::PathBuf;
use std::sync::Arc;

use shard_protocol::event::{Event, StatusEvent};
use shard_protocol::ids;
use shard_protocol::types::{AgentStatus, ContentBlock};
use shard_session::SessionStore;
use shard_tools::{ProcessTracker, Tool, ToolContext, ToolLimits};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ask::UiHandle;
use crate::config::Config;
use crate::models::EnvLookup;
use crate::modes::ModeController;

use choice::Choice;
use conversation::Conversation;
use flight::{Flight, UserInput};
pub use inbox::Input;
pub(crate) use inbox::Internal;
pub use inbox::ToolChange;
pub use start::{Prepared, RuntimeOptions, StartError, prepare, validate_choice};
use start::{restore_choices, session_start_error};
pub use toolbox::PendingPermission;
use toolbox::{ToolSite, Toolbox};
pub use tools::{RuntimeGone, ToolsHandle};

/// The session's folder for the saved outputs of cut tool results.
const TOOL_OUTPUT: &str = "tool-output";

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

/// The agent's state, owned by its actor task: one of each part, plus what belongs to
/// the actor itself (its channels, the announced status, the UI requests in flight).
pub struct Runtime {
    opts: RuntimeOptions,
    config: Config,
    events: mpsc::Sender<Event>,
    inputs: mpsc::Receiver<Input>,
    internal: mpsc::Receiver<Internal>,
    /// The conversation and its session.
    conv: Conversation,
    /// The turn in flight and what waits for it.
    flight: Flight,
    /// The tools with the gate.
    toolbox: Toolbox,
    /// The provider and model choice, and the mode.
    choice: Choice,
    status: AgentStatus,
    pending_ui: Vec<(
        shard_protocol::event::UiRequest,
        tokio::sync::oneshot::Sender<serde_json::Value>,
    )>,
    eof: bool,
    sink_closed: bool,
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
        // A one-shot run's new session is made on a thread while its first request goes
        // out: that request waits for no file system write (docs/sessions.md, "Creating a
        // session off the start path"); the turn's end reports a creation that failed.
        let deferred = opts.one_shot && opts.session_id.is_none();
        let session_id = opts
            .session_id
            .clone()
            .unwrap_or_else(|| ids::new_id(ids::SESSION));
        if let Some(provider) = seams.provider {
            models.set_provider_override(provider);
        }
        let mut modes = ModeController::new(&config.modes);
        // The creation waits for the sandbox's probe, whose forked child (no exec) would
        // otherwise keep a copy of the session's lock until it exits.
        let (probed, probe_done) = std::sync::mpsc::channel::<()>();
        let (session, tool_output, sandbox) = if deferred {
            let mut session = store
                .create_deferred_with(&session_id, &opts.cwd, &[TOOL_OUTPUT], Some(probe_done))
                .map_err(session_start_error)?;
            // A deferred session writes its first meta later, so the choices recorded
            // now are in it.
            restore_choices(&opts, &mut session, &mut modes, &mut models);
            let tool_output = session.dir().join(TOOL_OUTPUT);
            let sandbox = start_sandbox(&config, &opts, tool_output.clone());
            (session, tool_output, sandbox)
        } else {
            // The sandbox's probe (a fork that enters it) overlaps with opening the session.
            let tool_output = store
                .session_dir(&session_id)
                .map_err(session_start_error)?
                .join(TOOL_OUTPUT);
            let sandbox = start_sandbox(&config, &opts, tool_output.clone());
            // The choices are recorded before the session's meta is written, so a new
            // session's first meta already holds them.
            let session = store
                .open_or_create_then(&session_id, &opts.cwd, |session| {
                    restore_choices(&opts, session, &mut modes, &mut models);
                })
                .map_err(session_start_error)?;
            (session, tool_output, sandbox)
        };
        if let Some(torn) = session.torn() {
            tracing::warn!(?torn, "a torn last line of the transcript was set aside");
        }
        // The spill files tool results name are readable although SHARD_HOME is not.
        gate.set_tool_output(&tool_output);

        let (internal_tx, internal) = mpsc::channel(inbox::INTERNAL_QUEUE);
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
        if !deferred && let Err(err) = shard_session::records::ensure_private_dir(&tool_output) {
            tracing::warn!(%err, "cannot create the session's tool-output folder");
        }
        let sandbox = sandbox.join();
        drop(probed);
        let sandbox = sandbox
            .map_err(|_| StartError::Config("the sandbox probe panicked".to_string()))?
            .map_err(|e| StartError::Config(e.to_string()))?;
        if let Some(warning) = sandbox.warning() {
            tracing::warn!("{warning}");
        }

        let instructions = crate::prompt::project_instructions(&opts.cwd);
        let editor = editor::EditorBridge::new(events.clone());
        let one_shot = opts.one_shot;
        let mut runtime = Runtime {
            opts,
            config,
            events,
            inputs,
            internal,
            conv: Conversation::new(store, session, instructions, live_window_budget, one_shot),
            flight: Flight::default(),
            toolbox: Toolbox {
                tools,
                gate: Arc::new(gate),
                grants,
                processes,
                env_remove: Arc::new(env_remove),
                sandbox: Arc::new(sandbox),
                editor,
                mcp_plan: Some(mcp_plan),
                mcp: None,
                mcp_waiting: None,
                pending: None,
                pending_answer: None,
            },
            choice: Choice {
                models,
                modes,
                hook: seams.model_call_hook,
            },
            status: AgentStatus::Idle,
            pending_ui: Vec::new(),
            eof: false,
            sink_closed: false,
        };
        // A compacted session offers `recall` from its first request.
        runtime.register_recall();
        Ok(runtime)
    }

    /// What the sandbox lacks or refuses, to be said once on stderr; None when it is
    /// complete or off.
    pub fn sandbox_warning(&self) -> Option<String> {
        self.toolbox.sandbox.warning()
    }

    /// The capabilities announced in `hello` and after a model switch: the model's, then
    /// the sandbox's (`sandbox`, `sandbox-off`, `sandbox-missing:<feature>`).
    pub(crate) fn capabilities(&self) -> Vec<String> {
        let mut caps = self.choice.models.capabilities();
        caps.extend(self.toolbox.sandbox.capabilities());
        caps
    }

    /// Environment variables that hold keys (the providers' and Shard's own), never
    /// passed to tool processes; the binary also overwrites them in its initial
    /// environment block.
    pub fn secret_env_vars(&self) -> &[String] {
        &self.toolbox.env_remove
    }

    /// The journal the event writer keeps of the message being streamed (see
    /// `shard_session::streaming`), for this Runtime's session.
    pub fn stream_journal(&self) -> shard_session::streaming::StreamJournal {
        shard_session::streaming::StreamJournal::new(self.conv.session.dir())
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        self.conv.session.id()
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
        let (accepts_images, image_max_bytes) = self.choice.images();
        let site = ToolSite {
            cwd: self.opts.cwd.clone(),
            limits,
            output_dir: self.conv.session.dir().join(TOOL_OUTPUT),
            accepts_images,
            image_max_bytes,
        };
        self.toolbox.context(cancel, site)
    }

    /// A handle to add and remove this Runtime's tools while it runs. Take it before
    /// [`Runtime::run`].
    pub fn tools_handle(&self) -> ToolsHandle {
        self.toolbox.tools.handle()
    }

    pub(crate) fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.toolbox.tool(name)
    }

    /// Persists a message entry and mirrors it into the cached context.
    pub(crate) fn append_message(
        &mut self,
        id: Option<String>,
        kind: shard_session::EntryKind,
    ) -> Result<(), shard_session::SessionError> {
        self.conv.append_message(id, kind)
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
/// `SHARD_HOME/runtime/<agent_id>.json` while there are any, so the daemon can kill them if
/// this process dies (docs/protocol.md §16 item 15). With none live the daemon has nothing
/// to kill but the Runtime's own group, which it knows: the file is removed rather than
/// rewritten empty, and a Runtime that runs no tool never writes it (docs/decisions.md,
/// "Fewer files per create").
fn runtime_state_tracker(shard_home: &std::path::Path, agent_id: &str) -> ProcessTracker {
    if !ids::is_valid(ids::AGENT, agent_id) {
        return ProcessTracker::default();
    }
    let path = runtime_state_path(shard_home, agent_id);
    let pid = std::process::id();
    let write = move |groups: Vec<i32>| {
        if groups.is_empty() {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!(error = %e, "could not remove the tool process record"),
            }
            return;
        }
        let body = serde_json::json!({ "version": 1, "pid": pid, "process_groups": groups });
        if let Some(dir) = path.parent() {
            let _ = shard_session::records::ensure_private_dir(dir);
        }
        if let Err(e) = shard_session::records::atomic_write(&path, body.to_string().as_bytes()) {
            tracing::warn!(error = %e, "could not record tool process groups");
        }
    };
    ProcessTracker::with_hook(Arc::new(write))
}
