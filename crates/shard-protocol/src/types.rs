//! Shared types of docs/protocol.md §11, with the additions pinned in docs/protocol.md §16.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The literal tag `"image"` that an [`Image`] carries in its `type` field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ImageTag {
    /// The only value.
    #[default]
    #[serde(rename = "image")]
    Image,
}

/// An image attached to a prompt, base64 encoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Image {
    /// Always `"image"`.
    #[serde(rename = "type", default)]
    pub kind: ImageTag,
    /// Base64 data.
    pub data: String,
    /// For example `image/png`.
    pub mime_type: String,
}

/// A model as the catalog describes it to clients; never carries a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelDescriptor {
    /// Catalog id, `provider/model`.
    pub id: String,
    /// Provider name, e.g. `anthropic`.
    pub provider: String,
    /// The model name the provider knows.
    pub model: String,
    /// Context window in tokens, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

/// A mode as listed by `list_modes` (docs/protocol.md §16 item 3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModeDescriptor {
    /// Mode name, e.g. `build`.
    pub name: String,
    /// One line for pickers.
    pub description: String,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user, or tool results returned to the model.
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation; `id` equals its session entry id (§16 item 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// Message id, the same as the session entry id.
    pub id: String,
    /// Author.
    pub role: Role,
    /// Ordered content blocks.
    pub content: Vec<ContentBlock>,
}

/// A block of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call made by the model.
    ToolCall {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments object.
        args: serde_json::Map<String, Value>,
    },
    /// The result of a tool call, returned to the model.
    ToolResult {
        /// The call this answers.
        tool_call_id: String,
        /// Output.
        content: ToolResultContent,
        /// True when the tool failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
        /// Additive (§16 item 2): exit code of a process.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// Additive (§16 item 2): wall-clock duration.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// Additive (§16 item 2): the result's render descriptor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        render: Option<RenderDescriptor>,
        /// Additive: images that come with a text result (an MCP tool answering text
        /// and a screenshot); the model sees both.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        images: Option<Vec<Image>>,
    },
    /// Model reasoning.
    Thinking {
        /// Reasoning text (or its summary).
        text: String,
        /// Additive: the provider's opaque continuity token (an Anthropic thinking
        /// signature, an OpenAI encrypted reasoning item), sent back on later requests.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Additive (§16 item 2): an image.
    Image {
        /// Base64 data.
        data: String,
        /// For example `image/png`.
        mime_type: String,
    },
}

/// The output of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolResultContent {
    /// Text output.
    Text {
        /// The text.
        text: String,
    },
    /// Structured output.
    Json {
        /// Any JSON value.
        value: Value,
    },
    /// An error message.
    Error {
        /// What went wrong and what to do next.
        message: String,
    },
    /// Additive (§16 item 2): an image.
    Image {
        /// Base64 data.
        data: String,
        /// For example `image/png`.
        mime_type: String,
    },
}

/// One key/value pair of a `kv` render.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KvPair {
    /// Key.
    pub k: String,
    /// Value.
    pub v: String,
}

/// One hunk of a unified diff (docs/protocol.md §11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Hunk {
    /// First old line, 1-based.
    pub old_start: u64,
    /// Old line count.
    pub old_lines: u64,
    /// First new line, 1-based.
    pub new_start: u64,
    /// New line count.
    pub new_lines: u64,
    /// Lines prefixed with `' '`, `'-'` or `'+'`.
    pub lines: Vec<String>,
}

/// File or directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    /// A file (or anything that is not a directory).
    File,
    /// A directory.
    Dir,
}

/// A node of a `tree` render (docs/protocol.md §11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TreeNode {
    /// Entry name.
    pub name: String,
    /// Its kind.
    pub kind: PathKind,
    /// Children of a directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<TreeNode>>,
}

/// One path of a `path_list` render.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PathListEntry {
    /// The path as the model should write it.
    pub path: String,
    /// Its kind.
    pub kind: PathKind,
    /// A hint, e.g. the matched line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Tone of a `status` render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// Neutral.
    Info,
    /// Warning.
    Warn,
    /// Error.
    Error,
}

/// Presentation data for a tool call or result; the client decides how to show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RenderDescriptor {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Key/value pairs.
    Kv {
        /// The pairs.
        pairs: Vec<KvPair>,
    },
    /// A diff of one file.
    Diff {
        /// The file.
        path: String,
        /// Its hunks.
        hunks: Vec<Hunk>,
    },
    /// A tree.
    Tree {
        /// The root node.
        root: TreeNode,
    },
    /// Progress.
    Progress {
        /// What is progressing.
        label: String,
        /// Done so far.
        current: u64,
        /// Total, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<u64>,
    },
    /// A status line.
    Status {
        /// Text.
        label: String,
        /// Tone.
        tone: Tone,
    },
    /// A shell command preview (field names are camelCase in the spec).
    Command {
        /// The command line.
        command: String,
        /// Exit code.
        #[serde(rename = "exitCode", default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// Duration.
        #[serde(
            rename = "durationMs",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        duration_ms: Option<u64>,
    },
    /// A flat list of paths.
    PathList {
        /// The paths.
        paths: Vec<PathListEntry>,
    },
    /// A file body.
    Code {
        /// File path.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// Language hint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lang: Option<String>,
        /// The text.
        text: String,
    },
}

/// Token usage and cost of one provider call or of a whole turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Input tokens, excluding cache reads and writes.
    pub input: u64,
    /// Output tokens (reasoning included).
    pub output: u64,
    /// Tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// Tokens written to the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
    /// Cost in US dollars, when the model's prices are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Tokens in the context after this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// Model id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// What an agent is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Nothing running.
    Idle,
    /// A turn is running.
    Streaming,
    /// Waiting for a permission answer.
    WaitingForPermission,
    /// Waiting for a UI answer.
    WaitingForUi,
    /// Compacting the session.
    Compacting,
    /// Stopped on a fatal error.
    Error,
}

impl AgentStatus {
    /// Active states are never reaped (docs/protocol.md §6.4).
    pub fn is_active(self) -> bool {
        !matches!(self, AgentStatus::Idle | AgentStatus::Error)
    }
}

/// State of an agent's Runtime generation (docs/protocol.md §16 item 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeState {
    /// Spawned, not yet ready.
    Starting,
    /// Ready.
    Running,
    /// Shutting down.
    Stopping,
    /// No process.
    Stopped,
    /// The process died.
    Failed,
}

/// Subagent launch limits; field names are camelCase in the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LaunchPolicy {
    /// Tasks per job.
    #[serde(rename = "maxTasks")]
    pub max_tasks: u32,
    /// Delegation depth.
    #[serde(rename = "maxDepth")]
    pub max_depth: u32,
}

/// An agent as the registry describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentInfo {
    /// Durable agent id.
    pub agent_id: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Working directory.
    pub cwd: String,
    /// Model id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Active mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Agent status.
    pub status: AgentStatus,
    /// Runtime state.
    pub runtime_state: RuntimeState,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at: u64,
    /// Cumulative usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Parent, for a subagent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    /// Friendly alias (display only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Definition it was launched from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_name: Option<String>,
    /// `definition_name · alias`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Additive (§16 item 2): the agent's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Additive: the `[hosts.NAME]` its Runtime runs on; absent for the daemon's machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Additive: the agent was archived (`agent.archive`); clients list it only on request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
}

/// Format hint of a permission detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DetailFormat {
    /// Plain text.
    Text,
    /// A shell command.
    Command,
    /// A path.
    Path,
    /// Code.
    Code,
    /// A unified diff (`---`/`+++` headers, `@@` hunks, ` `/`-`/`+` lines): what an
    /// `edit` or `write` would change, shown before the person answers.
    Diff,
}

/// Server-built presentation detail of a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionDetail {
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Value.
    pub value: String,
    /// Format hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<DetailFormat>,
}

/// What choosing a permission choice does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChoiceIntent {
    /// Allow this once.
    Allow,
    /// Allow and persist a grant.
    Persist,
    /// Deny.
    Deny,
}

/// A server-defined answer to a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionChoice {
    /// Opaque, non-empty id.
    pub id: String,
    /// Button label.
    pub label: String,
    /// Longer description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Keyboard accelerator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator: Option<String>,
    /// Its effect.
    pub intent: ChoiceIntent,
}

/// The legacy semantic permission answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PermissionDecision {
    /// Allow once.
    Allow,
    /// Allow this exact request from now on.
    AllowAlways,
    /// Deny.
    Deny,
}

/// Kind of a UI dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UiKind {
    /// Pick one of `options`.
    Select,
    /// Yes or no.
    Confirm,
    /// One line of text.
    Input,
    /// A multi-line editor.
    Editor,
    /// A notification needing no answer.
    Notify,
}

/// Severity of a `notify` UI request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotifyType {
    /// Information.
    Info,
    /// Warning.
    Warning,
    /// Error.
    Error,
}

/// The answer to a UI request: a string, a list of strings, or null.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum UiValue {
    /// One string.
    Text(String),
    /// Several strings.
    List(Vec<String>),
}
