//! The Tool contract (docs/architecture.md#the-tool-contract): what the Runtime needs from every tool.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use shard_protocol::types::{Image, PermissionDetail, RenderDescriptor, ToolResultContent};
use tokio_util::sync::CancellationToken;

/// Size and time bounds shared by the tools.
#[derive(Debug, Clone)]
pub struct ToolLimits {
    /// Default `bash` timeout.
    pub bash_default_timeout: Duration,
    /// Largest `timeout_ms` a call may ask for.
    pub bash_max_timeout: Duration,
    /// Grace period between SIGTERM and SIGKILL of a process group.
    pub kill_grace: Duration,
    /// Largest output kept inline, in bytes.
    pub max_output_bytes: usize,
    /// Largest output kept inline, in lines.
    pub max_output_lines: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            bash_default_timeout: Duration::from_secs(120),
            bash_max_timeout: Duration::from_secs(600),
            kill_grace: Duration::from_secs(2),
            max_output_bytes: 50 * 1024,
            max_output_lines: 2000,
        }
    }
}

/// Process groups started by tools, so that none outlives its Runtime
/// (docs/protocol.md §16 item 15). Cheap to clone; the lock is never held across `.await`.
#[derive(Clone, Default)]
pub struct ProcessTracker {
    inner: Arc<Mutex<BTreeSet<i32>>>,
    on_change: Option<Arc<dyn Fn(Vec<i32>) + Send + Sync>>,
}

impl std::fmt::Debug for ProcessTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessTracker")
            .field("groups", &self.snapshot())
            .finish()
    }
}

impl ProcessTracker {
    /// A tracker that calls `on_change` with the live group ids after every change
    /// (the Runtime records them in its runtime state file).
    pub fn with_hook(on_change: Arc<dyn Fn(Vec<i32>) + Send + Sync>) -> Self {
        ProcessTracker {
            inner: Arc::default(),
            on_change: Some(on_change),
        }
    }

    /// Records a live process group.
    pub fn register(&self, pgid: i32) {
        self.change(|set| {
            set.insert(pgid);
        });
    }

    /// Forgets a process group that has ended.
    pub fn unregister(&self, pgid: i32) {
        self.change(|set| {
            set.remove(&pgid);
        });
    }

    /// The live process groups.
    pub fn snapshot(&self) -> Vec<i32> {
        match self.inner.lock() {
            Ok(set) => set.iter().copied().collect(),
            Err(poisoned) => poisoned.into_inner().iter().copied().collect(),
        }
    }

    /// Sends SIGKILL to every recorded group and forgets them.
    pub fn kill_all(&self) {
        for pgid in self.snapshot() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        self.change(|set| set.clear());
    }

    fn change(&self, f: impl FnOnce(&mut BTreeSet<i32>)) {
        let groups = {
            let mut guard = match self.inner.lock() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            f(&mut guard);
            guard.iter().copied().collect::<Vec<_>>()
        };
        if let Some(hook) = &self.on_change {
            hook(groups);
        }
    }
}

/// Which paths the listing tools (`grep`, `find`, `ls`) may show: the Runtime builds it
/// from the gate's deny rules and secret locations, so a file the gate would
/// refuse to `read` is never printed by a search either. The default shows everything.
#[derive(Clone, Default)]
pub struct PathFilter(Option<Arc<PathPredicate>>);

/// `(tool, absolute path, the entry itself is a symlink) -> may be shown`. The path's
/// directories are real (no symlinks); only its last component may be a link.
pub type PathPredicate = dyn Fn(&str, &std::path::Path, bool) -> bool + Send + Sync;

impl PathFilter {
    /// A filter from a predicate.
    pub fn new(f: Arc<PathPredicate>) -> Self {
        PathFilter(Some(f))
    }

    /// True when the entry may be shown.
    pub fn allows(&self, tool: &str, path: &std::path::Path, is_symlink: bool) -> bool {
        self.0.as_ref().is_none_or(|f| f(tool, path, is_symlink))
    }

    /// True when it filters anything at all.
    pub fn is_active(&self) -> bool {
        self.0.is_some()
    }
}

impl std::fmt::Debug for PathFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "PathFilter(active)"
        } else {
            "PathFilter(none)"
        })
    }
}

/// Everything a tool call may use besides its arguments.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The agent's working directory; relative paths resolve against it.
    pub cwd: PathBuf,
    /// Cancelled on abort: a tool stops promptly and kills what it started.
    pub cancel: CancellationToken,
    /// Bounds.
    pub limits: ToolLimits,
    /// Environment variables removed from every tool process (secrets, §16 item 14).
    pub env_remove: Arc<Vec<String>>,
    /// Process groups started by tools.
    pub processes: ProcessTracker,
    /// Where full outputs that were cut are saved.
    pub output_dir: PathBuf,
    /// The active model accepts images (else `read` describes an image instead).
    pub accepts_images: bool,
    /// The largest decoded image the active model takes, in bytes.
    pub image_max_bytes: usize,
    /// The sandbox `bash` runs its commands in (docs/sandbox.md).
    pub sandbox: Arc<shard_sandbox::Sandbox>,
    /// What `grep`, `find` and `ls` may show.
    pub path_filter: PathFilter,
    /// The editor's files, when a client offers them (`read`, `write`, `edit` use it).
    pub editor: Option<Arc<dyn crate::editor::EditorFiles>>,
}

impl ToolContext {
    /// A context with default limits, a fresh cancellation token and tracker, nothing
    /// removed from the environment, images accepted and no sandbox.
    pub fn new(cwd: impl Into<PathBuf>, output_dir: impl Into<PathBuf>) -> Self {
        ToolContext {
            cwd: cwd.into(),
            cancel: CancellationToken::new(),
            limits: ToolLimits::default(),
            env_remove: Arc::new(Vec::new()),
            processes: ProcessTracker::default(),
            output_dir: output_dir.into(),
            accepts_images: true,
            image_max_bytes: 5 * 1024 * 1024,
            sandbox: Arc::new(shard_sandbox::Sandbox::off()),
            path_filter: PathFilter::default(),
            editor: None,
        }
    }
}

/// What a tool call returns to the Runtime (and through it to the model and clients).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The output the model sees.
    pub content: ToolResultContent,
    /// True on failure.
    pub is_error: bool,
    /// Exit code of a process.
    pub exit_code: Option<i64>,
    /// Wall-clock duration.
    pub duration_ms: Option<u64>,
    /// Result render for clients.
    pub render: Option<RenderDescriptor>,
    /// Images beside a text `content`, already within the model's limits.
    pub images: Vec<Image>,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: ToolResultContent::Text { text: text.into() },
            is_error: false,
            exit_code: None,
            duration_ms: None,
            render: None,
            images: Vec::new(),
        }
    }

    /// An error result telling the model what went wrong and what to do next.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            content: ToolResultContent::Error {
                message: message.into(),
            },
            is_error: true,
            exit_code: None,
            duration_ms: None,
            render: None,
            images: Vec::new(),
        }
    }

    /// Adds a render descriptor.
    pub fn with_render(mut self, render: RenderDescriptor) -> Self {
        self.render = Some(render);
        self
    }
}

/// A tool the model can call. Implementations never panic: every failure is a
/// [`ToolOutput`] with `is_error`.
///
/// The contract is open: names and descriptions are borrowed from the tool itself, so a
/// tool discovered at run time (an MCP server's) owns them as `String`s, and the
/// read-only classification is asked per call, so a tool whose effect depends on its
/// arguments (an MCP tool with an annotation per action, a `git` tool) can say so.
pub trait Tool: Send + Sync {
    /// Name the model uses; unique within a registry.
    fn name(&self) -> &str;
    /// Description for the model.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object, derived from the argument type.
    fn input_schema(&self) -> Value;
    /// Whether this call (with these arguments) only reads: read-only calls run without
    /// asking and may run concurrently. When unsure, a tool answers `false`.
    fn is_read_only(&self, args: &Value) -> bool;
    /// A note shown in this call's permission request, when the tool has something to say
    /// that the gate must not trust alone (an MCP server's `readOnlyHint`).
    fn permission_note(&self, _args: &Value) -> Option<String> {
        None
    }
    /// What this call would change, added to its permission request so the person sees
    /// it before answering (a diff for `edit` and `write`). It may read files: the
    /// Runtime calls it off the async executor.
    fn permission_details(&self, _args: &Value, _ctx: &ToolContext) -> Vec<PermissionDetail> {
        Vec::new()
    }
    /// A preview shown before the tool runs.
    fn start_render(&self, _args: &Value, _ctx: &ToolContext) -> Option<RenderDescriptor> {
        None
    }
    /// Runs the call. Invalid arguments produce an error result naming the field.
    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput>;
}
