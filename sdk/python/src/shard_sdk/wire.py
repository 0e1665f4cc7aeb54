"""Wire types of the Shard protocol, generated from ``schema/protocol.schema.json``.

Do not edit: run ``python3 sdk/python/scripts/gen_types.py`` after the schema changes
(the test suite fails while this file and the schema disagree).
"""

# fmt: off
# ruff: noqa
from __future__ import annotations

from typing import Any, Literal, Union

from ._base import Event, WireObject, _list, _obj, _tagged

SCHEMA_SHA256 = "16edc5cc983f4c475754e9dc7673c5073c3c48cbdf4cd815d4e12253e161d0c5"
"""SHA-256 of the schema file this module was generated from."""

PROTOCOL_VERSION = "0.1.0"
"""The protocol version the schema describes."""


ImageTag = Literal["image"]
"""The literal tag `"image"` that an [`Image`] carries in its `type` field."""

StreamingBehavior = Literal["steer", "follow_up"]
"""How a prompt sent mid-turn is delivered (docs/protocol.md §9.2)."""

SessionOpKind = Literal["list", "compact", "fork", "history"]
"""Which session operation."""

PermissionDecision = Literal["allow", "allow_always", "deny"]
"""The legacy semantic permission answer."""

HeadlessPolicy = Literal["deny", "allow_if_rule_matches", "queue"]
"""Which way a subagent or headless agent handles requests with no responder."""

ClientMcpTransport = Literal["stdio", "http"]
"""How a client-supplied server is reached."""

AttachRole = Literal["interactive", "observer"]
"""Attachment role."""

BranchDisposition = Literal["delete_if_merged", "keep", "delete_confirmed"]
"""What retiring does to the branch."""

JobStrategy = Literal["single", "parallel", "chain"]
"""How a job's runs are scheduled."""

WaitMode = Literal["any", "all"]
"""`any` or `all`."""

AgentStatus = Literal["idle", "streaming", "waiting_for_permission", "waiting_for_ui", "compacting", "error"]
"""What an agent is doing."""

Role = Literal["user", "assistant"]
"""Who wrote a message."""

PathKind = Literal["file", "dir"]
"""File or directory."""

Tone = Literal["info", "warn", "error"]
"""Tone of a `status` render."""

DetailFormat = Literal["text", "command", "path", "code", "diff"]
"""Format hint of a permission detail."""

ChoiceIntent = Literal["allow", "persist", "deny"]
"""What choosing a permission choice does."""

UiKind = Literal["select", "confirm", "input", "editor", "notify"]
"""Kind of a UI dialog."""

NotifyType = Literal["info", "warning", "error"]
"""Severity of a `notify` UI request."""

DeltaKind = Literal["text", "tool_call", "thinking"]
"""Kind of a streamed block."""

Effective = Literal["next_provider_call"]
"""The literal `"next_provider_call"`."""

WorkspaceLifecycle = Literal["active", "retired"]
"""Lifecycle of a workspace."""

RuntimeState = Literal["starting", "running", "stopping", "stopped", "failed"]
"""State of an agent's Runtime generation (docs/protocol.md §16 item 3)."""

ActivityPhase = Literal["idle", "thinking", "streaming", "tool", "waiting", "compacting", "retrying", "error"]
"""Coarse phase of `agent_activity`."""

RunState = Literal["queued", "starting", "active", "completed", "failed", "timed_out", "cancelled", "interrupted"]
"""State of one run."""

FileOp = Literal["read", "write"]
"""Which file operation a `file_request` asks for."""

WorkspaceConflictKind = Literal["live", "busy", "dirty", "missing_authority", "unsafe", "confirmation_required"]
"""Why a workspace operation was refused (`CONFLICT` data `kind`)."""

JobState = Literal["queued", "running", "completed", "failed", "cancelled"]
"""State of a job."""

MixedTag = Literal["mixed"]
"""The literal `"mixed"`."""

RunActionKind = Literal["steer", "abort"]
"""What was done to a run from outside (additive)."""

RunActor = Literal["parent", "client"]
"""Who acted on a run besides the coordinator (additive)."""

SteerOutcome = Literal["injected", "conflict"]
"""Outcome of a strict steer."""

AuthPrincipal = Literal["runtime"]
"""Who a connection is after `runtime.auth`: always `"runtime"`."""


class Image(WireObject):
    """An image attached to a prompt, base64 encoded."""

    __slots__ = ()

    @property
    def type(self) -> ImageTag | None:
        """Always `"image"`."""
        return self._d.get("type")

    @property
    def data(self) -> str:
        """Base64 data."""
        return self._d.get("data")

    @property
    def mime_type(self) -> str:
        """For example `image/png`."""
        return self._d.get("mime_type")


class Prompt(WireObject):
    """`prompt`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def message(self) -> str:
        """The user's message."""
        return self._d.get("message")

    @property
    def images(self) -> list[Image] | None:
        """Attached images."""
        return _list(lambda x: _obj(Image, x), self._d.get("images"))

    @property
    def streaming_behavior(self) -> StreamingBehavior | None:
        """Required mid-turn."""
        return self._d.get("streaming_behavior")


class Steer(WireObject):
    """`steer`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def message(self) -> str:
        """The message."""
        return self._d.get("message")

    @property
    def images(self) -> list[Image] | None:
        """Attached images."""
        return _list(lambda x: _obj(Image, x), self._d.get("images"))

    @property
    def strict(self) -> bool | None:
        """Strict steer (additive): the message goes into the turn running now (or the one named by `turn_id`) at its next provider boundary, or nowhere. The response is sent when that is decided and carries [`crate::responses::SteerData`]: `injected` with the turn's id, or `conflict` when no such turn runs or it ended first; a conflicting steer is dropped, never kept for a later turn. Without it a steer sent between turns starts a turn, and one the turn did not take waits for the next."""
        return self._d.get("strict")

    @property
    def turn_id(self) -> str | None:
        """With `strict`: only this turn may take the message."""
        return self._d.get("turn_id")


class AgentTarget(WireObject):
    """A per-agent command whose only field is the routing `agent_id`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id on daemon connections; omitted on direct connections."""
        return self._d.get("agent_id")


class SetMode(WireObject):
    """`set_mode`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def mode(self) -> str:
        """Target mode."""
        return self._d.get("mode")


class SetModel(WireObject):
    """`set_model`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def model(self) -> str:
        """Catalog id of the model."""
        return self._d.get("model")


class SetReasoningLevel(WireObject):
    """`set_reasoning_level`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def model(self) -> str:
        """The active model's id, an optimistic-concurrency precondition."""
        return self._d.get("model")

    @property
    def effort(self) -> str:
        """Level id from the catalog."""
        return self._d.get("effort")


class SessionOpArgs(WireObject):
    """Op-specific arguments of `session_op`; `list` takes none."""

    __slots__ = ()

    @property
    def keep_recent_tokens(self) -> int | None:
        """`compact`: override of the kept-token budget."""
        return self._d.get("keep_recent_tokens")

    @property
    def from_entry_id(self) -> str | None:
        """`fork`: the entry to fork at."""
        return self._d.get("from_entry_id")

    @property
    def before(self) -> str | None:
        """`history`: the message id to page back from (e.g. `truncated_before`)."""
        return self._d.get("before")

    @property
    def max_bytes(self) -> int | None:
        """`history`: byte budget of the page's serialized messages (default 1 MiB, capped at the 8 MiB of the live window)."""
        return self._d.get("max_bytes")


class SessionOp(WireObject):
    """`session_op`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def op(self) -> SessionOpKind:
        """The operation."""
        return self._d.get("op")

    @property
    def args(self) -> SessionOpArgs | None:
        """Its arguments."""
        return _obj(SessionOpArgs, self._d.get("args"))


class UiResponse(WireObject):
    """`ui_response`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def request_id(self) -> str:
        """The request answered."""
        return self._d.get("request_id")

    @property
    def value(self) -> UiValue | None:
        """The answer; `null` dismisses."""
        return self._d.get("value")


class ClientFiles(WireObject):
    """`client_files` (additive, 0.1.x): which file operations an editor client serves. The Runtime keeps the offer until it is withdrawn (both false) or the Runtime ends."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def read(self) -> bool:
        """Reads of text files go to the client (its unsaved buffers included)."""
        return self._d.get("read")

    @property
    def write(self) -> bool:
        """Writes of text files go to the client."""
        return self._d.get("write")


class FileResponse(WireObject):
    """`file_response` (additive, 0.1.x): the answer to a `file_request`: the file's text for a read, nothing for a write, or an error."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def request_id(self) -> str:
        """The request answered."""
        return self._d.get("request_id")

    @property
    def content(self) -> str | None:
        """The text of a read."""
        return self._d.get("content")

    @property
    def error(self) -> str | None:
        """Why it failed."""
        return self._d.get("error")


class AgentListQuery(WireObject):
    """`agent.list`. Without fields it lists every agent; the paging fields (additive, 0.1.x) let a client of a daemon with thousands of agents read them a page at a time, in the same order (creation time, then id)."""

    __slots__ = ()

    @property
    def limit(self) -> int | None:
        """Additive: at most this many agents in the answer (at least one)."""
        return self._d.get("limit")

    @property
    def after(self) -> str | None:
        """Additive: list the agents after this cursor, the `next_after` of the previous page."""
        return self._d.get("after")


class ClientMcpServer(WireObject):
    """One MCP server a client supplies: `command` (+`args`, `env`) for stdio, `url` (+`headers`) for HTTP."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """The `SERVER` of `mcp__SERVER__TOOL`: 1 to 32 letters, digits, `-` or `_`."""
        return self._d.get("name")

    @property
    def transport(self) -> ClientMcpTransport | None:
        """Transport (default stdio)."""
        return self._d.get("transport")

    @property
    def command(self) -> str | None:
        """Program of a stdio server."""
        return self._d.get("command")

    @property
    def args(self) -> list[str] | None:
        """Its arguments."""
        return self._d.get("args")

    @property
    def env(self) -> dict[str, Any] | None:
        """Variables added to the server's (scrubbed) environment. Secret."""
        return self._d.get("env")

    @property
    def url(self) -> str | None:
        """Endpoint of an HTTP server."""
        return self._d.get("url")

    @property
    def headers(self) -> dict[str, Any] | None:
        """Headers on every request to an HTTP server. Secret."""
        return self._d.get("headers")


class LaunchPolicy(WireObject):
    """Subagent launch limits; field names are camelCase in the spec."""

    __slots__ = ()

    @property
    def maxTasks(self) -> int:
        """Tasks per job."""
        return self._d.get("maxTasks")

    @property
    def maxDepth(self) -> int:
        """Delegation depth."""
        return self._d.get("maxDepth")


class AgentCreate(WireObject):
    """`agent.create`."""

    __slots__ = ()

    @property
    def cwd(self) -> str:
        """Working directory."""
        return self._d.get("cwd")

    @property
    def session_id(self) -> str | None:
        """Legacy adoption of an existing session."""
        return self._d.get("session_id")

    @property
    def model(self) -> str | None:
        """Model."""
        return self._d.get("model")

    @property
    def provider(self) -> str | None:
        """Provider."""
        return self._d.get("provider")

    @property
    def mode(self) -> str | None:
        """Mode."""
        return self._d.get("mode")

    @property
    def tools(self) -> list[str] | None:
        """Tool allow-list."""
        return self._d.get("tools")

    @property
    def skills(self) -> list[str] | None:
        """Skills."""
        return self._d.get("skills")

    @property
    def headless_policy(self) -> HeadlessPolicy | None:
        """Headless policy."""
        return self._d.get("headless_policy")

    @property
    def mcp_servers(self) -> list[ClientMcpServer] | None:
        """Additive: MCP servers the client supplies (an editor's), joining the configured ones as untrusted servers (tool sandbox, gate). Their `env`/`headers` values are secrets: kept in the owner-only manifest, never in `agent.list`."""
        return _list(lambda x: _obj(ClientMcpServer, x), self._d.get("mcp_servers"))

    @property
    def name(self) -> str | None:
        """Display name."""
        return self._d.get("name")

    @property
    def parent_agent_id(self) -> str | None:
        """Parent, for a subagent."""
        return self._d.get("parent_agent_id")

    @property
    def system_prompt(self) -> str | None:
        """Daemon-set: delegated child system prompt."""
        return self._d.get("system_prompt")

    @property
    def depth(self) -> int | None:
        """Daemon-set: durable depth."""
        return self._d.get("depth")

    @property
    def launch_policy(self) -> LaunchPolicy | None:
        """Daemon-set: launch limits."""
        return _obj(LaunchPolicy, self._d.get("launch_policy"))

    @property
    def alias(self) -> str | None:
        """Daemon-set: friendly alias."""
        return self._d.get("alias")

    @property
    def definition_name(self) -> str | None:
        """Daemon-set: definition name."""
        return self._d.get("definition_name")

    @property
    def display_name(self) -> str | None:
        """Daemon-set: display name."""
        return self._d.get("display_name")

    @property
    def names(self) -> list[str] | None:
        """Daemon-set: alias pool."""
        return self._d.get("names")

    @property
    def host(self) -> str | None:
        """Additive: a `[hosts.NAME]` of the daemon's `config.toml` to run the Runtime on (over SSH or a command prefix); `cwd` is then a path on that host."""
        return self._d.get("host")


class AgentAttach(WireObject):
    """`agent.attach`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """The agent (payload, not routing)."""
        return self._d.get("agent_id")

    @property
    def role(self) -> AttachRole | None:
        """Role; default interactive."""
        return self._d.get("role")


class AgentRef(WireObject):
    """An orchestrator command naming one agent."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """The agent."""
        return self._d.get("agent_id")


class AgentKill(WireObject):
    """`agent.kill`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """The agent."""
        return self._d.get("agent_id")

    @property
    def force(self) -> bool | None:
        """SIGKILL at once."""
        return self._d.get("force")


class AgentStatusQuery(WireObject):
    """`agent.status`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """One agent, or all when omitted."""
        return self._d.get("agent_id")


class DaemonShutdown(WireObject):
    """`daemon.shutdown`."""

    __slots__ = ()

    @property
    def force(self) -> bool | None:
        """Kill instead of letting turns finish."""
        return self._d.get("force")


class WorkspaceCreate(WireObject):
    """`workspace.create`."""

    __slots__ = ()

    @property
    def version(self) -> int | None:
        """Accepted for forward compatibility."""
        return self._d.get("version")

    @property
    def cwd(self) -> str:
        """A directory inside the repository."""
        return self._d.get("cwd")

    @property
    def label(self) -> str | None:
        """Label."""
        return self._d.get("label")

    @property
    def branch(self) -> str | None:
        """Branch to create."""
        return self._d.get("branch")

    @property
    def base_ref(self) -> str | None:
        """Base ref."""
        return self._d.get("base_ref")

    @property
    def integration_target(self) -> str | None:
        """Integration target."""
        return self._d.get("integration_target")

    @property
    def title(self) -> str | None:
        """Agent title."""
        return self._d.get("title")

    @property
    def name(self) -> str | None:
        """Agent name."""
        return self._d.get("name")

    @property
    def model(self) -> str | None:
        """Model."""
        return self._d.get("model")

    @property
    def provider(self) -> str | None:
        """Provider."""
        return self._d.get("provider")

    @property
    def mode(self) -> str | None:
        """Mode."""
        return self._d.get("mode")

    @property
    def host(self) -> str | None:
        """The `[hosts.NAME]` whose checkout `cwd` is in (absent: the daemon's machine): the worktree is made there, and the workspace's git and agents run there."""
        return self._d.get("host")


class WorkspaceAttach(WireObject):
    """`workspace.attach`."""

    __slots__ = ()

    @property
    def version(self) -> int | None:
        """Accepted for forward compatibility."""
        return self._d.get("version")

    @property
    def workspace_id(self) -> str:
        """The workspace."""
        return self._d.get("workspace_id")

    @property
    def title(self) -> str | None:
        """Agent title."""
        return self._d.get("title")

    @property
    def name(self) -> str | None:
        """Agent name."""
        return self._d.get("name")

    @property
    def model(self) -> str | None:
        """Model."""
        return self._d.get("model")

    @property
    def provider(self) -> str | None:
        """Provider."""
        return self._d.get("provider")

    @property
    def mode(self) -> str | None:
        """Mode."""
        return self._d.get("mode")


class WorkspaceList(WireObject):
    """`workspace.list`."""

    __slots__ = ()

    @property
    def version(self) -> int | None:
        """Accepted for forward compatibility."""
        return self._d.get("version")

    @property
    def cwd(self) -> str | None:
        """Only workspaces of this repository."""
        return self._d.get("cwd")

    @property
    def include_retired(self) -> bool | None:
        """Include retired ones."""
        return self._d.get("include_retired")

    @property
    def host(self) -> str | None:
        """Additive: `cwd` is a path on this `[hosts.NAME]` (absent: the daemon's machine)."""
        return self._d.get("host")


class WorkspaceRef(WireObject):
    """`workspace.status`."""

    __slots__ = ()

    @property
    def version(self) -> int | None:
        """Accepted for forward compatibility."""
        return self._d.get("version")

    @property
    def workspace_id(self) -> str:
        """The workspace."""
        return self._d.get("workspace_id")


class WorkspaceRetire(WireObject):
    """`workspace.retire`."""

    __slots__ = ()

    @property
    def version(self) -> int | None:
        """Accepted for forward compatibility."""
        return self._d.get("version")

    @property
    def workspace_id(self) -> str:
        """The workspace."""
        return self._d.get("workspace_id")

    @property
    def branch_disposition(self) -> BranchDisposition | None:
        """Branch handling."""
        return self._d.get("branch_disposition")


class SubagentTask(WireObject):
    """One task of a batch `subagent.create`."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """Definition name."""
        return self._d.get("name")

    @property
    def task(self) -> str:
        """Private task text."""
        return self._d.get("task")


class SubagentCreate(WireObject):
    """`subagent.create`."""

    __slots__ = ()

    @property
    def parent_agent_id(self) -> str:
        """Owning parent."""
        return self._d.get("parent_agent_id")

    @property
    def name(self) -> str | None:
        """Single form: definition name."""
        return self._d.get("name")

    @property
    def task(self) -> str | None:
        """Single form: private task text."""
        return self._d.get("task")

    @property
    def tasks(self) -> list[SubagentTask] | None:
        """Batch form."""
        return _list(lambda x: _obj(SubagentTask, x), self._d.get("tasks"))

    @property
    def strategy(self) -> JobStrategy | None:
        """Strategy; required for batch."""
        return self._d.get("strategy")

    @property
    def model(self) -> str | None:
        """Model override."""
        return self._d.get("model")

    @property
    def provider(self) -> str | None:
        """Provider override."""
        return self._d.get("provider")

    @property
    def mode(self) -> str | None:
        """Mode override."""
        return self._d.get("mode")


class SubagentWait(WireObject):
    """`subagent.wait`."""

    __slots__ = ()

    @property
    def parent_agent_id(self) -> str:
        """Owning parent."""
        return self._d.get("parent_agent_id")

    @property
    def handles(self) -> list[str]:
        """Handles to wait for."""
        return self._d.get("handles")

    @property
    def mode(self) -> WaitMode | None:
        """`any` or `all`."""
        return self._d.get("mode")

    @property
    def timeout(self) -> float | None:
        """Seconds; omitted waits forever, 0 polls."""
        return self._d.get("timeout")


class SubagentSteer(WireObject):
    """`subagent.steer`."""

    __slots__ = ()

    @property
    def parent_agent_id(self) -> str:
        """Owning parent."""
        return self._d.get("parent_agent_id")

    @property
    def target(self) -> str:
        """Run, agent or alias."""
        return self._d.get("target")

    @property
    def message(self) -> str:
        """Private message."""
        return self._d.get("message")


class SubagentRelaunch(WireObject):
    """`subagent.relaunch`."""

    __slots__ = ()

    @property
    def parent_agent_id(self) -> str:
        """Owning parent."""
        return self._d.get("parent_agent_id")

    @property
    def target(self) -> str:
        """Agent, run or alias."""
        return self._d.get("target")

    @property
    def task(self) -> str:
        """Private new task."""
        return self._d.get("task")


class SubagentStatus(WireObject):
    """`subagent.status`."""

    __slots__ = ()

    @property
    def parent_agent_id(self) -> str:
        """Owning parent."""
        return self._d.get("parent_agent_id")

    @property
    def targets(self) -> list[str] | None:
        """Handles; omitted lists the latest 50 jobs."""
        return self._d.get("targets")


class SubagentStop(WireObject):
    """`subagent.stop`."""

    __slots__ = ()

    @property
    def parent_agent_id(self) -> str:
        """Owning parent."""
        return self._d.get("parent_agent_id")

    @property
    def handle(self) -> str:
        """Job, run or alias."""
        return self._d.get("handle")


class Hello(Event):
    """`hello`."""

    __slots__ = ()

    @property
    def protocol_version(self) -> str:
        """Semver of the protocol."""
        return self._d.get("protocol_version")

    @property
    def server_version(self) -> str:
        """Build of the server."""
        return self._d.get("server_version")

    @property
    def capabilities(self) -> list[str]:
        """Feature strings."""
        return self._d.get("capabilities")


class LiveWindow(WireObject):
    """The live message window of a `sync`."""

    __slots__ = ()

    @property
    def messages(self) -> list[Message]:
        """Messages after the last compaction (within the byte budget)."""
        return _list(lambda x: _obj(Message, x), self._d.get("messages"))

    @property
    def compaction_index(self) -> int | None:
        """Index of the last compaction."""
        return self._d.get("compaction_index")

    @property
    def truncated_before(self) -> str | None:
        """Additive (§16 item 9): first entry id kept when older ones were cut."""
        return self._d.get("truncated_before")

    @property
    def interrupted_after(self) -> list[str] | None:
        """Additive: ids of the messages after which an aborted turn stopped, so a reloaded conversation says "interrupted" where the live one did."""
        return self._d.get("interrupted_after")

    @property
    def permission_answers(self) -> list[PermissionAnswered] | None:
        """Additive: the answers to this window's permission requests, oldest first, so a reloaded conversation says who answered each (docs/protocol.md, "Recorded permission answers")."""
        return _list(lambda x: _obj(PermissionAnswered, x), self._d.get("permission_answers"))


class Message(WireObject):
    """One message of the conversation; `id` equals its session entry id (§16 item 4)."""

    __slots__ = ()

    @property
    def id(self) -> str:
        """Message id, the same as the session entry id."""
        return self._d.get("id")

    @property
    def role(self) -> Role:
        """Author."""
        return self._d.get("role")

    @property
    def content(self) -> list[ContentBlock]:
        """Ordered content blocks."""
        return _list(lambda x: _tagged(_CONTENTBLOCK, x), self._d.get("content"))


class ContentBlockText(WireObject):
    """Plain text."""

    __slots__ = ()

    @property
    def type(self) -> Literal["text"]:
        """The tag, always ``text``."""
        return self._d["type"]

    @property
    def text(self) -> str:
        """The text."""
        return self._d.get("text")


class ContentBlockToolCall(WireObject):
    """A tool call made by the model."""

    __slots__ = ()

    @property
    def type(self) -> Literal["tool_call"]:
        """The tag, always ``tool_call``."""
        return self._d["type"]

    @property
    def id(self) -> str:
        """Tool call id."""
        return self._d.get("id")

    @property
    def name(self) -> str:
        """Tool name."""
        return self._d.get("name")

    @property
    def args(self) -> dict[str, Any]:
        """Arguments object."""
        return self._d.get("args")


class ContentBlockToolResult(WireObject):
    """The result of a tool call, returned to the model."""

    __slots__ = ()

    @property
    def type(self) -> Literal["tool_result"]:
        """The tag, always ``tool_result``."""
        return self._d["type"]

    @property
    def tool_call_id(self) -> str:
        """The call this answers."""
        return self._d.get("tool_call_id")

    @property
    def content(self) -> ToolResultContent:
        """Output."""
        return _tagged(_TOOLRESULTCONTENT, self._d.get("content"))

    @property
    def is_error(self) -> bool | None:
        """True when the tool failed."""
        return self._d.get("is_error")

    @property
    def exit_code(self) -> int | None:
        """Additive (§16 item 2): exit code of a process."""
        return self._d.get("exit_code")

    @property
    def duration_ms(self) -> int | None:
        """Additive (§16 item 2): wall-clock duration."""
        return self._d.get("duration_ms")

    @property
    def render(self) -> RenderDescriptor | None:
        """Additive (§16 item 2): the result's render descriptor."""
        return _tagged(_RENDERDESCRIPTOR, self._d.get("render"))

    @property
    def images(self) -> list[Image] | None:
        """Additive: images that come with a text result (an MCP tool answering text and a screenshot); the model sees both."""
        return _list(lambda x: _obj(Image, x), self._d.get("images"))


class ContentBlockThinking(WireObject):
    """Model reasoning."""

    __slots__ = ()

    @property
    def type(self) -> Literal["thinking"]:
        """The tag, always ``thinking``."""
        return self._d["type"]

    @property
    def text(self) -> str:
        """Reasoning text (or its summary)."""
        return self._d.get("text")

    @property
    def signature(self) -> str | None:
        """Additive: the provider's opaque continuity token (an Anthropic thinking signature, an OpenAI encrypted reasoning item), sent back on later requests."""
        return self._d.get("signature")


class ContentBlockImage(WireObject):
    """Additive (§16 item 2): an image."""

    __slots__ = ()

    @property
    def type(self) -> Literal["image"]:
        """The tag, always ``image``."""
        return self._d["type"]

    @property
    def data(self) -> str:
        """Base64 data."""
        return self._d.get("data")

    @property
    def mime_type(self) -> str:
        """For example `image/png`."""
        return self._d.get("mime_type")


class ToolResultContentText(WireObject):
    """Text output."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["text"]:
        """The tag, always ``text``."""
        return self._d["kind"]

    @property
    def text(self) -> str:
        """The text."""
        return self._d.get("text")


class ToolResultContentJson(WireObject):
    """Structured output."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["json"]:
        """The tag, always ``json``."""
        return self._d["kind"]

    @property
    def value(self) -> Any:
        """Any JSON value."""
        return self._d.get("value")


class ToolResultContentError(WireObject):
    """An error message."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["error"]:
        """The tag, always ``error``."""
        return self._d["kind"]

    @property
    def message(self) -> str:
        """What went wrong and what to do next."""
        return self._d.get("message")


class ToolResultContentImage(WireObject):
    """Additive (§16 item 2): an image."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["image"]:
        """The tag, always ``image``."""
        return self._d["kind"]

    @property
    def data(self) -> str:
        """Base64 data."""
        return self._d.get("data")

    @property
    def mime_type(self) -> str:
        """For example `image/png`."""
        return self._d.get("mime_type")


class RenderDescriptorText(WireObject):
    """Plain text."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["text"]:
        """The tag, always ``text``."""
        return self._d["kind"]

    @property
    def text(self) -> str:
        """The text."""
        return self._d.get("text")


class RenderDescriptorKv(WireObject):
    """Key/value pairs."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["kv"]:
        """The tag, always ``kv``."""
        return self._d["kind"]

    @property
    def pairs(self) -> list[KvPair]:
        """The pairs."""
        return _list(lambda x: _obj(KvPair, x), self._d.get("pairs"))


class RenderDescriptorDiff(WireObject):
    """A diff of one file."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["diff"]:
        """The tag, always ``diff``."""
        return self._d["kind"]

    @property
    def path(self) -> str:
        """The file."""
        return self._d.get("path")

    @property
    def hunks(self) -> list[Hunk]:
        """Its hunks."""
        return _list(lambda x: _obj(Hunk, x), self._d.get("hunks"))


class RenderDescriptorTree(WireObject):
    """A tree."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["tree"]:
        """The tag, always ``tree``."""
        return self._d["kind"]

    @property
    def root(self) -> TreeNode:
        """The root node."""
        return _obj(TreeNode, self._d.get("root"))


class RenderDescriptorProgress(WireObject):
    """Progress."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["progress"]:
        """The tag, always ``progress``."""
        return self._d["kind"]

    @property
    def label(self) -> str:
        """What is progressing."""
        return self._d.get("label")

    @property
    def current(self) -> int:
        """Done so far."""
        return self._d.get("current")

    @property
    def total(self) -> int | None:
        """Total, when known."""
        return self._d.get("total")


class RenderDescriptorStatus(WireObject):
    """A status line."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["status"]:
        """The tag, always ``status``."""
        return self._d["kind"]

    @property
    def label(self) -> str:
        """Text."""
        return self._d.get("label")

    @property
    def tone(self) -> Tone:
        """Tone."""
        return self._d.get("tone")


class RenderDescriptorCommand(WireObject):
    """A shell command preview (field names are camelCase in the spec)."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["command"]:
        """The tag, always ``command``."""
        return self._d["kind"]

    @property
    def command(self) -> str:
        """The command line."""
        return self._d.get("command")

    @property
    def exitCode(self) -> int | None:
        """Exit code."""
        return self._d.get("exitCode")

    @property
    def durationMs(self) -> int | None:
        """Duration."""
        return self._d.get("durationMs")


class RenderDescriptorPathList(WireObject):
    """A flat list of paths."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["path_list"]:
        """The tag, always ``path_list``."""
        return self._d["kind"]

    @property
    def paths(self) -> list[PathListEntry]:
        """The paths."""
        return _list(lambda x: _obj(PathListEntry, x), self._d.get("paths"))


class RenderDescriptorCode(WireObject):
    """A file body."""

    __slots__ = ()

    @property
    def kind(self) -> Literal["code"]:
        """The tag, always ``code``."""
        return self._d["kind"]

    @property
    def path(self) -> str | None:
        """File path."""
        return self._d.get("path")

    @property
    def lang(self) -> str | None:
        """Language hint."""
        return self._d.get("lang")

    @property
    def text(self) -> str:
        """The text."""
        return self._d.get("text")


class KvPair(WireObject):
    """One key/value pair of a `kv` render."""

    __slots__ = ()

    @property
    def k(self) -> str:
        """Key."""
        return self._d.get("k")

    @property
    def v(self) -> str:
        """Value."""
        return self._d.get("v")


class Hunk(WireObject):
    """One hunk of a unified diff (docs/protocol.md §11)."""

    __slots__ = ()

    @property
    def old_start(self) -> int:
        """First old line, 1-based."""
        return self._d.get("old_start")

    @property
    def old_lines(self) -> int:
        """Old line count."""
        return self._d.get("old_lines")

    @property
    def new_start(self) -> int:
        """First new line, 1-based."""
        return self._d.get("new_start")

    @property
    def new_lines(self) -> int:
        """New line count."""
        return self._d.get("new_lines")

    @property
    def lines(self) -> list[str]:
        """Lines prefixed with `' '`, `'-'` or `'+'`."""
        return self._d.get("lines")


class TreeNode(WireObject):
    """A node of a `tree` render (docs/protocol.md §11)."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """Entry name."""
        return self._d.get("name")

    @property
    def kind(self) -> PathKind:
        """Its kind."""
        return self._d.get("kind")

    @property
    def children(self) -> list[TreeNode] | None:
        """Children of a directory."""
        return _list(lambda x: _obj(TreeNode, x), self._d.get("children"))


class PathListEntry(WireObject):
    """One path of a `path_list` render."""

    __slots__ = ()

    @property
    def path(self) -> str:
        """The path as the model should write it."""
        return self._d.get("path")

    @property
    def kind(self) -> PathKind:
        """Its kind."""
        return self._d.get("kind")

    @property
    def hint(self) -> str | None:
        """A hint, e.g. the matched line."""
        return self._d.get("hint")


class PermissionAnswered(WireObject):
    """Additive: a permission request's answer as the session recorded it, so a conversation opened again (a `sync`, a history page) says who answered each request, as clients said it live from `permission_resolved` (docs/protocol.md, "Recorded permission answers")."""

    __slots__ = ()

    @property
    def request_id(self) -> str:
        """The request answered."""
        return self._d.get("request_id")

    @property
    def tool_call_id(self) -> str | None:
        """The tool call the request was for."""
        return self._d.get("tool_call_id")

    @property
    def tool_name(self) -> str:
        """The tool asked about."""
        return self._d.get("tool_name")

    @property
    def label(self) -> str | None:
        """The chosen choice's label, when the answer was one of the request's choices."""
        return self._d.get("label")

    @property
    def source(self) -> str | None:
        """Who answered, as `permission_resolved.source` said it."""
        return self._d.get("source")

    @property
    def choice_id(self) -> str | None:
        """The choice picked."""
        return self._d.get("choice_id")

    @property
    def decision(self) -> PermissionDecision | None:
        """The decision."""
        return self._d.get("decision")


class PermissionDetail(WireObject):
    """Server-built presentation detail of a permission request."""

    __slots__ = ()

    @property
    def label(self) -> str | None:
        """Label."""
        return self._d.get("label")

    @property
    def value(self) -> str:
        """Value."""
        return self._d.get("value")

    @property
    def format(self) -> DetailFormat | None:
        """Format hint."""
        return self._d.get("format")


class PermissionChoice(WireObject):
    """A server-defined answer to a permission request."""

    __slots__ = ()

    @property
    def id(self) -> str:
        """Opaque, non-empty id."""
        return self._d.get("id")

    @property
    def label(self) -> str:
        """Button label."""
        return self._d.get("label")

    @property
    def description(self) -> str | None:
        """Longer description."""
        return self._d.get("description")

    @property
    def accelerator(self) -> str | None:
        """Keyboard accelerator."""
        return self._d.get("accelerator")

    @property
    def intent(self) -> ChoiceIntent:
        """Its effect."""
        return self._d.get("intent")


class PermissionRequest(Event):
    """`permission_request`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id (the requesting agent, also for delegated requests)."""
        return self._d.get("agent_id")

    @property
    def request_id(self) -> str:
        """Random request id."""
        return self._d.get("request_id")

    @property
    def tool_name(self) -> str:
        """Tool."""
        return self._d.get("tool_name")

    @property
    def input(self) -> Any:
        """Tool input."""
        return self._d.get("input")

    @property
    def prompt(self) -> str:
        """Question for the user."""
        return self._d.get("prompt")

    @property
    def options(self) -> list[PermissionDecision]:
        """Legacy options."""
        return self._d.get("options")

    @property
    def details(self) -> list[PermissionDetail] | None:
        """Presentation details."""
        return _list(lambda x: _obj(PermissionDetail, x), self._d.get("details"))

    @property
    def choices(self) -> list[PermissionChoice] | None:
        """Server-built choices."""
        return _list(lambda x: _obj(PermissionChoice, x), self._d.get("choices"))

    @property
    def tool_call_id(self) -> str | None:
        """Additive: the tool call this request gates (the `tool_call_id` of its `message_delta`/`tool_call` events), so a client matches the two exactly."""
        return self._d.get("tool_call_id")


class UiRequest(Event):
    """`ui_request`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def request_id(self) -> str:
        """Random request id."""
        return self._d.get("request_id")

    @property
    def kind(self) -> UiKind:
        """Dialog kind."""
        return self._d.get("kind")

    @property
    def title(self) -> str | None:
        """Title."""
        return self._d.get("title")

    @property
    def message(self) -> str | None:
        """Message."""
        return self._d.get("message")

    @property
    def options(self) -> list[str] | None:
        """Options of a select."""
        return self._d.get("options")

    @property
    def placeholder(self) -> str | None:
        """Placeholder of an input."""
        return self._d.get("placeholder")

    @property
    def prefill(self) -> str | None:
        """Prefill of an input or editor."""
        return self._d.get("prefill")

    @property
    def notify_type(self) -> NotifyType | None:
        """Severity of a notify."""
        return self._d.get("notify_type")


class Sync(Event):
    """`sync`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def status(self) -> AgentStatus:
        """Agent status."""
        return self._d.get("status")

    @property
    def mode(self) -> str:
        """Active mode."""
        return self._d.get("mode")

    @property
    def capabilities(self) -> list[str] | None:
        """The runtime's capabilities."""
        return self._d.get("capabilities")

    @property
    def runtime_epoch(self) -> int | None:
        """Runtime generation."""
        return self._d.get("runtime_epoch")

    @property
    def session_id(self) -> str | None:
        """Additive (§16 item 2): the agent's session."""
        return self._d.get("session_id")

    @property
    def live_window(self) -> LiveWindow:
        """Live window."""
        return _obj(LiveWindow, self._d.get("live_window"))

    @property
    def pending_requests(self) -> list[PendingRequest] | None:
        """Requests still waiting for an answer."""
        return _list(lambda x: _tagged(_PENDINGREQUEST, x), self._d.get("pending_requests"))


class StatusEvent(Event):
    """`status`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def status(self) -> AgentStatus:
        """New status."""
        return self._d.get("status")

    @property
    def detail(self) -> str | None:
        """Detail."""
        return self._d.get("detail")


class TurnStart(Event):
    """`turn_start`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def turn_id(self) -> str:
        """Turn id."""
        return self._d.get("turn_id")


class MessageDelta(Event):
    """`message_delta`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def message_id(self) -> str:
        """Message being streamed."""
        return self._d.get("message_id")

    @property
    def block_index(self) -> int:
        """Block index."""
        return self._d.get("block_index")

    @property
    def kind(self) -> DeltaKind:
        """Block kind."""
        return self._d.get("kind")

    @property
    def text_delta(self) -> str | None:
        """Text to append (text, thinking)."""
        return self._d.get("text_delta")

    @property
    def tool_call_id(self) -> str | None:
        """Tool call id (first delta of a tool_call block)."""
        return self._d.get("tool_call_id")

    @property
    def name(self) -> str | None:
        """Tool name (first delta of a tool_call block)."""
        return self._d.get("name")

    @property
    def args_delta(self) -> str | None:
        """JSON fragment of the arguments."""
        return self._d.get("args_delta")


class MessageComplete(Event):
    """`message_complete`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def message_id(self) -> str:
        """Message id."""
        return self._d.get("message_id")

    @property
    def message(self) -> Message:
        """The whole message."""
        return _obj(Message, self._d.get("message"))


class ToolCallEvent(Event):
    """`tool_call`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def tool_call_id(self) -> str:
        """Call id."""
        return self._d.get("tool_call_id")

    @property
    def name(self) -> str:
        """Tool name."""
        return self._d.get("name")

    @property
    def args(self) -> dict[str, Any]:
        """Arguments."""
        return self._d.get("args")

    @property
    def render(self) -> RenderDescriptor | None:
        """Start-time render."""
        return _tagged(_RENDERDESCRIPTOR, self._d.get("render"))

    @property
    def read_only(self) -> bool | None:
        """True for read-only tools."""
        return self._d.get("read_only")


class ToolResultEvent(Event):
    """`tool_result`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def tool_call_id(self) -> str:
        """Call id."""
        return self._d.get("tool_call_id")

    @property
    def content(self) -> ToolResultContent:
        """Output."""
        return _tagged(_TOOLRESULTCONTENT, self._d.get("content"))

    @property
    def is_error(self) -> bool:
        """True on failure or refusal."""
        return self._d.get("is_error")

    @property
    def exit_code(self) -> int | None:
        """Exit code of a process."""
        return self._d.get("exit_code")

    @property
    def duration_ms(self) -> int | None:
        """Wall-clock duration."""
        return self._d.get("duration_ms")

    @property
    def render(self) -> RenderDescriptor | None:
        """Result render."""
        return _tagged(_RENDERDESCRIPTOR, self._d.get("render"))

    @property
    def images(self) -> list[Image] | None:
        """Additive: images that come with the result beside `content` (an MCP tool answering text and a screenshot); the model saw them too."""
        return _list(lambda x: _obj(Image, x), self._d.get("images"))


class Usage(WireObject):
    """Token usage and cost of one provider call or of a whole turn."""

    __slots__ = ()

    @property
    def input(self) -> int:
        """Input tokens, excluding cache reads and writes."""
        return self._d.get("input")

    @property
    def output(self) -> int:
        """Output tokens (reasoning included)."""
        return self._d.get("output")

    @property
    def cache_read(self) -> int | None:
        """Tokens read from the prompt cache."""
        return self._d.get("cache_read")

    @property
    def cache_write(self) -> int | None:
        """Tokens written to the prompt cache."""
        return self._d.get("cache_write")

    @property
    def cost(self) -> float | None:
        """Cost in US dollars, when the model's prices are known."""
        return self._d.get("cost")

    @property
    def context_tokens(self) -> int | None:
        """Tokens in the context after this call."""
        return self._d.get("context_tokens")

    @property
    def model(self) -> str | None:
        """Model id."""
        return self._d.get("model")


class TurnEnd(Event):
    """`turn_end`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def turn_id(self) -> str:
        """Turn id."""
        return self._d.get("turn_id")

    @property
    def usage(self) -> Usage | None:
        """Total usage of the turn."""
        return _obj(Usage, self._d.get("usage"))

    @property
    def interrupted(self) -> bool | None:
        """Additive: `true` when the turn was aborted (Esc, Ctrl-C, `abort`) rather than finished, so every client can say "interrupted" where it stopped."""
        return self._d.get("interrupted")

    @property
    def stop_reason(self) -> str | None:
        """Additive (0.1.x): how the turn ended — the last model call's stop (`end_turn`, `max_tokens`, `refusal`, …), `aborted`, or `error`. Editor bridges (ACP) answer a prompt with it."""
        return self._d.get("stop_reason")


class UsageEvent(Event):
    """`usage`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def input(self) -> int:
        """Input tokens, excluding cache reads and writes."""
        return self._d.get("input")

    @property
    def output(self) -> int:
        """Output tokens (reasoning included)."""
        return self._d.get("output")

    @property
    def cache_read(self) -> int | None:
        """Tokens read from the prompt cache."""
        return self._d.get("cache_read")

    @property
    def cache_write(self) -> int | None:
        """Tokens written to the prompt cache."""
        return self._d.get("cache_write")

    @property
    def cost(self) -> float | None:
        """Cost in US dollars, when the model's prices are known."""
        return self._d.get("cost")

    @property
    def context_tokens(self) -> int | None:
        """Tokens in the context after this call."""
        return self._d.get("context_tokens")

    @property
    def model(self) -> str | None:
        """Model id."""
        return self._d.get("model")


class CompactionEvent(Event):
    """`compaction`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def index(self) -> int:
        """Compaction index."""
        return self._d.get("index")

    @property
    def tokens_before(self) -> int:
        """Tokens before."""
        return self._d.get("tokens_before")

    @property
    def tokens_after(self) -> int:
        """Tokens after."""
        return self._d.get("tokens_after")

    @property
    def first_kept_entry_id(self) -> str:
        """First entry kept."""
        return self._d.get("first_kept_entry_id")

    @property
    def message_range(self) -> list[str]:
        """`[first, last]` ids summarized."""
        return self._d.get("message_range")


class ErrorEvent(Event):
    """`error`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def code(self) -> ErrorCode:
        """Code."""
        return self._d.get("code")

    @property
    def message(self) -> str:
        """Message."""
        return self._d.get("message")

    @property
    def fatal(self) -> bool | None:
        """The agent cannot continue."""
        return self._d.get("fatal")

    @property
    def kind(self) -> ProviderErrorKind | None:
        """Additive, on `PROVIDER_ERROR`: what kind of provider failure it was."""
        return self._d.get("kind")

    @property
    def retry_after_ms(self) -> int | None:
        """Additive, on `PROVIDER_ERROR` of kind `rate_limited`: the wait the provider asked for, in milliseconds, when it named one."""
        return self._d.get("retry_after_ms")


class PermissionResolved(Event):
    """`permission_resolved`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def request_id(self) -> str:
        """Request id."""
        return self._d.get("request_id")

    @property
    def source(self) -> str | None:
        """Who answered."""
        return self._d.get("source")

    @property
    def choice_id(self) -> str | None:
        """The choice picked."""
        return self._d.get("choice_id")

    @property
    def decision(self) -> PermissionDecision | None:
        """The decision."""
        return self._d.get("decision")


class UiResolved(Event):
    """`ui_resolved`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def request_id(self) -> str:
        """Request id."""
        return self._d.get("request_id")

    @property
    def value(self) -> Any:
        """The answer."""
        return self._d.get("value")


class ErrorBody(WireObject):
    """The `error` object of a failed `response`."""

    __slots__ = ()

    @property
    def code(self) -> ErrorCode:
        """Code."""
        return self._d.get("code")

    @property
    def message(self) -> str:
        """Human-readable message."""
        return self._d.get("message")

    @property
    def data(self) -> Any:
        """Typed detail."""
        return self._d.get("data")


class Response(Event):
    """`response` (§9.3); `id` and `command` are absent only when the command's id could not be read (§16 item 1)."""

    __slots__ = ()

    @property
    def id(self) -> str | None:
        """The command's id."""
        return self._d.get("id")

    @property
    def command(self) -> str | None:
        """The command's type."""
        return self._d.get("command")

    @property
    def success(self) -> bool:
        """Outcome."""
        return self._d.get("success")

    @property
    def data(self) -> Any:
        """Result data."""
        return self._d.get("data")

    @property
    def error(self) -> ErrorBody | None:
        """Failure."""
        return _obj(ErrorBody, self._d.get("error"))


class ModelDescriptor(WireObject):
    """A model as the catalog describes it to clients; never carries a secret."""

    __slots__ = ()

    @property
    def id(self) -> str:
        """Catalog id, `provider/model`."""
        return self._d.get("id")

    @property
    def provider(self) -> str:
        """Provider name, e.g. `anthropic`."""
        return self._d.get("provider")

    @property
    def model(self) -> str:
        """The model name the provider knows."""
        return self._d.get("model")

    @property
    def context_window(self) -> int | None:
        """Context window in tokens, when known."""
        return self._d.get("context_window")


class ModelChanged(Event):
    """`model_changed`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def previous(self) -> ModelDescriptor:
        """Previous model."""
        return _obj(ModelDescriptor, self._d.get("previous"))

    @property
    def active(self) -> ModelDescriptor:
        """New model."""
        return _obj(ModelDescriptor, self._d.get("active"))

    @property
    def effective(self) -> Effective:
        """When it applies."""
        return self._d.get("effective")

    @property
    def capabilities(self) -> list[str] | None:
        """The runtime's capabilities after the switch."""
        return self._d.get("capabilities")


class ModeChanged(Event):
    """`mode_changed`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def previous_mode(self) -> str:
        """Previous mode."""
        return self._d.get("previous_mode")

    @property
    def mode(self) -> str:
        """New mode."""
        return self._d.get("mode")


class ReasoningLevelChanged(Event):
    """`reasoning_level_changed`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def model(self) -> ModelDescriptor:
        """The model."""
        return _obj(ModelDescriptor, self._d.get("model"))

    @property
    def previous(self) -> str:
        """Previous level."""
        return self._d.get("previous")

    @property
    def active(self) -> str:
        """New level."""
        return self._d.get("active")

    @property
    def effective(self) -> Effective:
        """When it applies."""
        return self._d.get("effective")


class McpServerStatus(WireObject):
    """An MCP server's state in a `tools_changed` event."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """The server's name (the `SERVER` of `mcp__SERVER__TOOL`)."""
        return self._d.get("name")

    @property
    def state(self) -> str:
        """`starting`, `ready`, `failed`, `stopped` or `not_approved`."""
        return self._d.get("state")

    @property
    def message(self) -> str | None:
        """Why it failed or is not started (never a secret)."""
        return self._d.get("message")

    @property
    def restarting(self) -> bool | None:
        """A failed server is being restarted (with backoff)."""
        return self._d.get("restarting")

    @property
    def tools(self) -> list[str] | None:
        """Its tools now (`mcp__SERVER__TOOL` names)."""
        return self._d.get("tools")


class ToolsChanged(Event):
    """`tools_changed` (additive): the whole tool list now, and which MCP server caused the change and its state, so a client can show "server X failed: why"."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def tools(self) -> list[str]:
        """Every tool the model is offered now, in order."""
        return self._d.get("tools")

    @property
    def server(self) -> McpServerStatus | None:
        """The MCP server whose change this is."""
        return _obj(McpServerStatus, self._d.get("server"))


class WorkspaceInfo(WireObject):
    """A workspace as clients see it: no common-dir or git-dir paths."""

    __slots__ = ()

    @property
    def workspace_id(self) -> str:
        """Opaque id."""
        return self._d.get("workspace_id")

    @property
    def label(self) -> str | None:
        """Label."""
        return self._d.get("label")

    @property
    def cwd(self) -> str:
        """The worktree directory."""
        return self._d.get("cwd")

    @property
    def repository_cwd(self) -> str | None:
        """The original project's main checkout root."""
        return self._d.get("repository_cwd")

    @property
    def branch(self) -> str:
        """Branch."""
        return self._d.get("branch")

    @property
    def base_ref(self) -> str | None:
        """Base ref."""
        return self._d.get("base_ref")

    @property
    def integration_target(self) -> str | None:
        """Integration target."""
        return self._d.get("integration_target")

    @property
    def lifecycle(self) -> WorkspaceLifecycle:
        """Lifecycle."""
        return self._d.get("lifecycle")

    @property
    def agent_ids(self) -> list[str] | None:
        """Agents launched in it."""
        return self._d.get("agent_ids")

    @property
    def created_at(self) -> int:
        """Creation, ms since the epoch."""
        return self._d.get("created_at")

    @property
    def retired_at(self) -> int | None:
        """Retirement, ms since the epoch."""
        return self._d.get("retired_at")

    @property
    def host(self) -> str | None:
        """Additive: the `[hosts.NAME]` the repository and worktree are on, where the workspace's git and agents run; `cwd` and `repository_cwd` are paths there (absent: the daemon's machine)."""
        return self._d.get("host")


class WorkspaceEvent(Event):
    """`workspace_created` / `workspace_retired`."""

    __slots__ = ()

    @property
    def workspace(self) -> WorkspaceInfo:
        """The workspace projection."""
        return _obj(WorkspaceInfo, self._d.get("workspace"))


class WorkspaceAttached(Event):
    """`workspace_attached`."""

    __slots__ = ()

    @property
    def workspace(self) -> WorkspaceInfo:
        """The workspace projection."""
        return _obj(WorkspaceInfo, self._d.get("workspace"))

    @property
    def agent_id(self) -> str:
        """The new agent (payload)."""
        return self._d.get("agent_id")

    @property
    def session_id(self) -> str:
        """Its session."""
        return self._d.get("session_id")


class WorkspaceConflict(Event):
    """`workspace_conflict`."""

    __slots__ = ()

    @property
    def workspace_id(self) -> str:
        """The workspace."""
        return self._d.get("workspace_id")

    @property
    def reason(self) -> str:
        """Sanitized reason."""
        return self._d.get("reason")


class AgentInfo(WireObject):
    """An agent as the registry describes it."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """Durable agent id."""
        return self._d.get("agent_id")

    @property
    def name(self) -> str | None:
        """Display name."""
        return self._d.get("name")

    @property
    def cwd(self) -> str:
        """Working directory."""
        return self._d.get("cwd")

    @property
    def model(self) -> str | None:
        """Model id."""
        return self._d.get("model")

    @property
    def provider(self) -> str | None:
        """Provider name."""
        return self._d.get("provider")

    @property
    def mode(self) -> str | None:
        """Active mode."""
        return self._d.get("mode")

    @property
    def status(self) -> AgentStatus:
        """Agent status."""
        return self._d.get("status")

    @property
    def runtime_state(self) -> RuntimeState:
        """Runtime state."""
        return self._d.get("runtime_state")

    @property
    def created_at(self) -> int:
        """Creation time, milliseconds since the Unix epoch."""
        return self._d.get("created_at")

    @property
    def usage(self) -> Usage | None:
        """Cumulative usage."""
        return _obj(Usage, self._d.get("usage"))

    @property
    def parent_agent_id(self) -> str | None:
        """Parent, for a subagent."""
        return self._d.get("parent_agent_id")

    @property
    def alias(self) -> str | None:
        """Friendly alias (display only)."""
        return self._d.get("alias")

    @property
    def definition_name(self) -> str | None:
        """Definition it was launched from."""
        return self._d.get("definition_name")

    @property
    def display_name(self) -> str | None:
        """`definition_name · alias`."""
        return self._d.get("display_name")

    @property
    def session_id(self) -> str | None:
        """Additive (§16 item 2): the agent's session."""
        return self._d.get("session_id")

    @property
    def host(self) -> str | None:
        """Additive: the `[hosts.NAME]` its Runtime runs on; absent for the daemon's machine."""
        return self._d.get("host")

    @property
    def archived(self) -> bool | None:
        """Additive: the agent was archived (`agent.archive`); clients list it only on request."""
        return self._d.get("archived")


class AgentSpawned(Event):
    """`agent_spawned`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """The agent (payload)."""
        return self._d.get("agent_id")

    @property
    def info(self) -> AgentInfo:
        """Its info."""
        return _obj(AgentInfo, self._d.get("info"))


class AgentArchived(Event):
    """`agent_archived`: another client archived the agent, so every list drops it (the session is kept; `agent.list` with archived agents still shows it)."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """The agent (payload)."""
        return self._d.get("agent_id")


class AgentExited(Event):
    """`agent_exited`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """The agent (payload)."""
        return self._d.get("agent_id")

    @property
    def runtime_state(self) -> RuntimeState:
        """Always `failed`."""
        return self._d.get("runtime_state")

    @property
    def reason(self) -> str:
        """Why."""
        return self._d.get("reason")

    @property
    def exit_code(self) -> int | None:
        """Exit code."""
        return self._d.get("exit_code")


class AgentStatusChanged(Event):
    """`agent_status_changed`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """The agent (payload)."""
        return self._d.get("agent_id")

    @property
    def status(self) -> AgentStatus:
        """Agent status."""
        return self._d.get("status")

    @property
    def runtime_state(self) -> RuntimeState:
        """Runtime state."""
        return self._d.get("runtime_state")

    @property
    def detail(self) -> str | None:
        """Detail."""
        return self._d.get("detail")


class AgentActivity(Event):
    """`agent_activity`: never a prompt, text, argument, result or path."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """The agent (payload)."""
        return self._d.get("agent_id")

    @property
    def timestamp(self) -> int:
        """Milliseconds since the epoch."""
        return self._d.get("timestamp")

    @property
    def phase(self) -> ActivityPhase:
        """Phase."""
        return self._d.get("phase")

    @property
    def status(self) -> AgentStatus:
        """Status."""
        return self._d.get("status")

    @property
    def tool_name(self) -> str | None:
        """Tool name during `tool`."""
        return self._d.get("tool_name")


class SubagentRunChanged(Event):
    """`subagent_run_changed`."""

    __slots__ = ()

    @property
    def parent_agent_id(self) -> str:
        """Owning parent (payload)."""
        return self._d.get("parent_agent_id")

    @property
    def job_id(self) -> str:
        """Job."""
        return self._d.get("job_id")

    @property
    def run_id(self) -> str:
        """Run."""
        return self._d.get("run_id")

    @property
    def agent_id(self) -> str | None:
        """Child agent."""
        return self._d.get("agent_id")

    @property
    def alias(self) -> str | None:
        """Alias."""
        return self._d.get("alias")

    @property
    def definition_name(self) -> str | None:
        """Definition name."""
        return self._d.get("definition_name")

    @property
    def display_name(self) -> str | None:
        """Display name."""
        return self._d.get("display_name")

    @property
    def state(self) -> RunState:
        """New state."""
        return self._d.get("state")

    @property
    def previous_state(self) -> RunState | None:
        """Previous state."""
        return self._d.get("previous_state")

    @property
    def error(self) -> str | None:
        """Error text."""
        return self._d.get("error")

    @property
    def ended_at(self) -> int | None:
        """End, ms since the epoch."""
        return self._d.get("ended_at")


class UserMessage(Event):
    """`user_message` (additive in 0.1.x): a user message entered the conversation — a prompt as its turn starts, a steer as it is delivered, a follow-up as its turn starts — and was persisted. It exists so every attached client shows what another client typed at once, not at its next `sync`; a client that does not know it ignores it and sees the message in `sync` as before."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def message_id(self) -> str:
        """Message id (the transcript entry's id, as in `sync`)."""
        return self._d.get("message_id")

    @property
    def message(self) -> Message:
        """The whole message (`role: "user"`, its text and images)."""
        return _obj(Message, self._d.get("message"))


class FileRequest(Event):
    """`file_request` (additive, 0.1.x): after `client_files`, the Runtime's file tools ask the client for a file (its editor buffer, saved or not) or to write one, and wait for a `file_response` with the same `request_id`. Only after the permission gate allowed the tool call."""

    __slots__ = ()

    @property
    def agent_id(self) -> str | None:
        """Routing id."""
        return self._d.get("agent_id")

    @property
    def request_id(self) -> str:
        """Random request id."""
        return self._d.get("request_id")

    @property
    def op(self) -> FileOp:
        """What to do."""
        return self._d.get("op")

    @property
    def path(self) -> str:
        """Absolute path."""
        return self._d.get("path")

    @property
    def content(self) -> str | None:
        """The new text (write)."""
        return self._d.get("content")


class AgentsData(WireObject):
    """`agent.list` and `agent.status`."""

    __slots__ = ()

    @property
    def agents(self) -> list[AgentInfo]:
        """The agents."""
        return _list(lambda x: _obj(AgentInfo, x), self._d.get("agents"))

    @property
    def next_after(self) -> str | None:
        """Additive: present when an `agent.list` with a `limit` left agents out; pass it as `after` for the next page. Opaque."""
        return self._d.get("next_after")


class AgentCreated(WireObject):
    """`agent.create`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """New agent."""
        return self._d.get("agent_id")

    @property
    def notice(self) -> str | None:
        """Additive: one line the user should see, e.g. that the chosen model is not in the catalog (its price is unknown and its context window assumed)."""
        return self._d.get("notice")


class AttachData(WireObject):
    """`agent.attach`."""

    __slots__ = ()

    @property
    def status(self) -> AgentStatus:
        """Status."""
        return self._d.get("status")

    @property
    def info(self) -> AgentInfo:
        """Info."""
        return _obj(AgentInfo, self._d.get("info"))


class WorkspaceLaunched(WireObject):
    """`workspace.create` / `workspace.attach` success data: the fresh agent and session the daemon launched in the workspace, with the workspace itself."""

    __slots__ = ()

    @property
    def workspace(self) -> WorkspaceInfo:
        """The workspace."""
        return _obj(WorkspaceInfo, self._d.get("workspace"))

    @property
    def agent_id(self) -> str:
        """The new agent."""
        return self._d.get("agent_id")

    @property
    def session_id(self) -> str:
        """Its new session."""
        return self._d.get("session_id")


class WorkspaceListData(WireObject):
    """`workspace.list` success data."""

    __slots__ = ()

    @property
    def repositories(self) -> list[WorkspaceGroup]:
        """One group per repository, ordered by host (this machine first), then `repository_cwd`."""
        return _list(lambda x: _obj(WorkspaceGroup, x), self._d.get("repositories"))


class WorkspaceGroup(WireObject):
    """The workspaces of one repository, so clients group sibling worktrees by project."""

    __slots__ = ()

    @property
    def repository_cwd(self) -> str:
        """The main checkout of the repository."""
        return self._d.get("repository_cwd")

    @property
    def host(self) -> str | None:
        """Additive: the `[hosts.NAME]` that checkout is on (absent: the daemon's machine); the same path on two machines is two groups."""
        return self._d.get("host")

    @property
    def workspaces(self) -> list[WorkspaceInfo]:
        """Its workspaces, oldest first."""
        return _list(lambda x: _obj(WorkspaceInfo, x), self._d.get("workspaces"))


class WorkspaceStatusData(WireObject):
    """`workspace.status` success data: what git and the registry say now."""

    __slots__ = ()

    @property
    def workspace(self) -> WorkspaceInfo:
        """The workspace."""
        return _obj(WorkspaceInfo, self._d.get("workspace"))

    @property
    def missing(self) -> bool:
        """The worktree directory is gone (removed by hand); it is never recreated."""
        return self._d.get("missing")

    @property
    def head_branch(self) -> str | None:
        """The branch the worktree has checked out now (absent: detached HEAD or missing)."""
        return self._d.get("head_branch")

    @property
    def branch_tip(self) -> str | None:
        """The workspace branch's tip commit (absent: the branch no longer exists)."""
        return self._d.get("branch_tip")

    @property
    def ahead(self) -> int | None:
        """Commits on the branch that the integration target lacks."""
        return self._d.get("ahead")

    @property
    def behind(self) -> int | None:
        """Commits on the integration target that the branch lacks."""
        return self._d.get("behind")

    @property
    def dirty_files(self) -> int | None:
        """Changed tracked files plus untracked, not ignored, files."""
        return self._d.get("dirty_files")

    @property
    def live_agents(self) -> list[str]:
        """Agents of the workspace whose Runtime is live."""
        return self._d.get("live_agents")

    @property
    def busy_agents(self) -> list[str]:
        """Agents of the workspace in the middle of a turn."""
        return self._d.get("busy_agents")


class WorkspaceRetiredData(WireObject):
    """`workspace.retire` success data."""

    __slots__ = ()

    @property
    def workspace(self) -> WorkspaceInfo:
        """The workspace, now retired."""
        return _obj(WorkspaceInfo, self._d.get("workspace"))

    @property
    def branch_deleted(self) -> bool:
        """The branch was deleted."""
        return self._d.get("branch_deleted")

    @property
    def branch_tip(self) -> str | None:
        """The branch tip recorded before any deletion."""
        return self._d.get("branch_tip")

    @property
    def restore(self) -> str | None:
        """How to bring a deleted branch back (`git branch NAME SHA` in `repository_cwd`)."""
        return self._d.get("restore")

    @property
    def already_retired(self) -> bool | None:
        """It was already retired; nothing was done."""
        return self._d.get("already_retired")


class WorkspaceConflictData(WireObject):
    """Typed `data` of a workspace `CONFLICT` response."""

    __slots__ = ()

    @property
    def kind(self) -> WorkspaceConflictKind:
        """Which refusal."""
        return self._d.get("kind")

    @property
    def workspace_id(self) -> str:
        """The workspace."""
        return self._d.get("workspace_id")

    @property
    def reason(self) -> str:
        """Sanitized reason (no git-dir paths)."""
        return self._d.get("reason")

    @property
    def confirmation_disposition(self) -> BranchDisposition | None:
        """For `confirmation_required`: the disposition that confirms (`delete_confirmed`)."""
        return self._d.get("confirmation_disposition")


class TerminateData(WireObject):
    """`agent.terminate`."""

    __slots__ = ()

    @property
    def deferred(self) -> bool:
        """True when active work finishes first."""
        return self._d.get("deferred")


class SetModeData(WireObject):
    """`set_mode`."""

    __slots__ = ()

    @property
    def previous_mode(self) -> str:
        """Mode before."""
        return self._d.get("previous_mode")

    @property
    def mode(self) -> str:
        """Mode now."""
        return self._d.get("mode")


class ListModesData(WireObject):
    """`list_modes`."""

    __slots__ = ()

    @property
    def modes(self) -> list[ModeDescriptor]:
        """Every mode, built-ins first."""
        return _list(lambda x: _obj(ModeDescriptor, x), self._d.get("modes"))

    @property
    def active(self) -> str:
        """Active mode."""
        return self._d.get("active")


class ModeDescriptor(WireObject):
    """A mode as listed by `list_modes` (docs/protocol.md §16 item 3)."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """Mode name, e.g. `build`."""
        return self._d.get("name")

    @property
    def description(self) -> str:
        """One line for pickers."""
        return self._d.get("description")


class ListModelsData(WireObject):
    """`list_models`."""

    __slots__ = ()

    @property
    def models(self) -> list[ModelDescriptor]:
        """Catalog."""
        return _list(lambda x: _obj(ModelDescriptor, x), self._d.get("models"))

    @property
    def active(self) -> ModelDescriptor:
        """Active selection."""
        return _obj(ModelDescriptor, self._d.get("active"))


class SetModelData(WireObject):
    """`set_model`."""

    __slots__ = ()

    @property
    def previous(self) -> ModelDescriptor:
        """Before."""
        return _obj(ModelDescriptor, self._d.get("previous"))

    @property
    def active(self) -> ModelDescriptor:
        """After."""
        return _obj(ModelDescriptor, self._d.get("active"))

    @property
    def effective(self) -> Effective:
        """When it applies."""
        return self._d.get("effective")

    @property
    def notice(self) -> str | None:
        """Additive: one line the user should see, e.g. that the model is not in the catalog (its price is unknown and its context window assumed)."""
        return self._d.get("notice")


class ReasoningLevelsData(WireObject):
    """`list_reasoning_levels`."""

    __slots__ = ()

    @property
    def model(self) -> ModelDescriptor:
        """Active model."""
        return _obj(ModelDescriptor, self._d.get("model"))

    @property
    def levels(self) -> list[ReasoningLevel]:
        """Levels."""
        return _list(lambda x: _obj(ReasoningLevel, x), self._d.get("levels"))

    @property
    def active(self) -> str:
        """Active level."""
        return self._d.get("active")

    @property
    def effective(self) -> Effective:
        """When it applies."""
        return self._d.get("effective")


class ReasoningLevel(WireObject):
    """A reasoning level of the catalog."""

    __slots__ = ()

    @property
    def id(self) -> str:
        """Id to send back."""
        return self._d.get("id")

    @property
    def label(self) -> str:
        """Label."""
        return self._d.get("label")

    @property
    def description(self) -> str | None:
        """Description."""
        return self._d.get("description")


class SetReasoningLevelData(WireObject):
    """`set_reasoning_level`."""

    __slots__ = ()

    @property
    def model(self) -> ModelDescriptor:
        """Active model."""
        return _obj(ModelDescriptor, self._d.get("model"))

    @property
    def previous(self) -> str:
        """Before."""
        return self._d.get("previous")

    @property
    def active(self) -> str:
        """After."""
        return self._d.get("active")

    @property
    def effective(self) -> Effective:
        """When it applies."""
        return self._d.get("effective")


class SessionListData(WireObject):
    """`session_op list` and `session.list`."""

    __slots__ = ()

    @property
    def sessions(self) -> list[SessionSummary]:
        """Newest first."""
        return _list(lambda x: _obj(SessionSummary, x), self._d.get("sessions"))


class SessionSummary(WireObject):
    """One session of `session_op list` and `session.list`."""

    __slots__ = ()

    @property
    def session_id(self) -> str:
        """Session id."""
        return self._d.get("session_id")

    @property
    def title(self) -> str:
        """The first prompt, shortened."""
        return self._d.get("title")

    @property
    def created_at(self) -> int:
        """Creation, ms since the epoch."""
        return self._d.get("created_at")

    @property
    def updated_at(self) -> int:
        """Last change, ms since the epoch."""
        return self._d.get("updated_at")

    @property
    def entry_count(self) -> int:
        """Entries in the transcript."""
        return self._d.get("entry_count")

    @property
    def current(self) -> bool:
        """The Runtime's own session."""
        return self._d.get("current")

    @property
    def message_count(self) -> int | None:
        """Additive: messages in the transcript (prompts, answers, tool results)."""
        return self._d.get("message_count")

    @property
    def cost(self) -> float | None:
        """Additive: the recorded cost of its model calls, US dollars."""
        return self._d.get("cost")

    @property
    def forked_from(self) -> ForkProvenance | None:
        """Additive: where a fork came from; absent for an original session."""
        return _obj(ForkProvenance, self._d.get("forked_from"))


class ForkProvenance(WireObject):
    """Where a forked session came from (`session_op fork`)."""

    __slots__ = ()

    @property
    def fork_id(self) -> str:
        """The fork's id."""
        return self._d.get("fork_id")

    @property
    def source_session_id(self) -> str:
        """The session it was split from."""
        return self._d.get("source_session_id")

    @property
    def source_entry_id(self) -> str:
        """The entry it was split at."""
        return self._d.get("source_entry_id")


class SessionActivated(WireObject):
    """`session.activate`."""

    __slots__ = ()

    @property
    def session_id(self) -> str:
        """The session the agent's next Runtime generation opens."""
        return self._d.get("session_id")

    @property
    def previous_session_id(self) -> str:
        """The session it was on."""
        return self._d.get("previous_session_id")

    @property
    def runtime_stopping(self) -> bool:
        """True when a live idle Runtime was asked to stop (it ends on the old session; the next attach or prompt starts a generation on the new one)."""
        return self._d.get("runtime_stopping")


class ForkData(WireObject):
    """`session_op fork`."""

    __slots__ = ()

    @property
    def fork_id(self) -> str:
        """Fork id."""
        return self._d.get("fork_id")

    @property
    def session_id(self) -> str:
        """New session."""
        return self._d.get("session_id")

    @property
    def head_entry_id(self) -> str:
        """Its head entry."""
        return self._d.get("head_entry_id")


class CompactData(WireObject):
    """`session_op compact`."""

    __slots__ = ()

    @property
    def compacted(self) -> bool:
        """Always false."""
        return self._d.get("compacted")

    @property
    def index(self) -> int | None:
        """Compaction index."""
        return self._d.get("index")

    @property
    def tokens_before(self) -> int | None:
        """Tokens before."""
        return self._d.get("tokens_before")

    @property
    def tokens_after(self) -> int | None:
        """Tokens after."""
        return self._d.get("tokens_after")

    @property
    def first_kept_entry_id(self) -> str | None:
        """First entry kept."""
        return self._d.get("first_kept_entry_id")

    @property
    def message_range(self) -> list[str] | None:
        """Summarized span."""
        return self._d.get("message_range")

    @property
    def reason(self) -> str | None:
        """Why, e.g. `no_safe_cut`."""
        return self._d.get("reason")


class SubagentCreated(WireObject):
    """`subagent.create`."""

    __slots__ = ()

    @property
    def job_id(self) -> str:
        """Job."""
        return self._d.get("job_id")

    @property
    def strategy(self) -> JobStrategy:
        """Strategy."""
        return self._d.get("strategy")

    @property
    def runs(self) -> list[CreatedRun]:
        """Runs."""
        return _list(lambda x: _obj(CreatedRun, x), self._d.get("runs"))


class CreatedRun(WireObject):
    """A run of `subagent.create`."""

    __slots__ = ()

    @property
    def run_id(self) -> str:
        """Run."""
        return self._d.get("run_id")

    @property
    def index(self) -> int:
        """Position."""
        return self._d.get("index")

    @property
    def name(self) -> str:
        """Definition name."""
        return self._d.get("name")

    @property
    def state(self) -> RunState:
        """Always `queued`."""
        return self._d.get("state")

    @property
    def agent_id(self) -> str:
        """Child agent."""
        return self._d.get("agent_id")

    @property
    def alias(self) -> str:
        """Alias."""
        return self._d.get("alias")

    @property
    def definition_name(self) -> str | None:
        """Definition name."""
        return self._d.get("definition_name")

    @property
    def display_name(self) -> str | None:
        """Display name."""
        return self._d.get("display_name")


class SubagentWaitData(WireObject):
    """`subagent.wait`. The fields are in the order the daemon has always sent them."""

    __slots__ = ()

    @property
    def aggregate_state(self) -> AggregateState:
        """Aggregate state."""
        return self._d.get("aggregate_state")

    @property
    def runs(self) -> list[RunSnapshot]:
        """Every run, in order."""
        return _list(lambda x: _obj(RunSnapshot, x), self._d.get("runs"))

    @property
    def timed_out(self) -> bool:
        """The wait timed out."""
        return self._d.get("timed_out")


class RunSnapshot(WireObject):
    """A run as reported to its owner; never carries the private task text."""

    __slots__ = ()

    @property
    def job_id(self) -> str:
        """Job."""
        return self._d.get("job_id")

    @property
    def run_id(self) -> str:
        """Run."""
        return self._d.get("run_id")

    @property
    def index(self) -> int:
        """Position in the job."""
        return self._d.get("index")

    @property
    def name(self) -> str:
        """Definition name."""
        return self._d.get("name")

    @property
    def agent_id(self) -> str | None:
        """Child agent."""
        return self._d.get("agent_id")

    @property
    def alias(self) -> str | None:
        """Alias."""
        return self._d.get("alias")

    @property
    def definition_name(self) -> str | None:
        """Definition name."""
        return self._d.get("definition_name")

    @property
    def display_name(self) -> str | None:
        """Display name."""
        return self._d.get("display_name")

    @property
    def state(self) -> RunState:
        """State."""
        return self._d.get("state")

    @property
    def deadline(self) -> int | None:
        """Deadline, ms since the epoch."""
        return self._d.get("deadline")

    @property
    def final_text(self) -> str | None:
        """Final assistant text, only to the owning parent."""
        return self._d.get("final_text")

    @property
    def usage(self) -> RunUsage | None:
        """Usage."""
        return _obj(RunUsage, self._d.get("usage"))

    @property
    def error(self) -> str | None:
        """Error text."""
        return self._d.get("error")

    @property
    def started_at(self) -> int | None:
        """Start, ms since the epoch."""
        return self._d.get("started_at")

    @property
    def ended_at(self) -> int | None:
        """End, ms since the epoch."""
        return self._d.get("ended_at")

    @property
    def steers(self) -> int | None:
        """Steers the run's turn took, from the parent and from people (additive)."""
        return self._d.get("steers")

    @property
    def last_action(self) -> RunAction | None:
        """The latest steer or abort from outside the coordinator (additive)."""
        return _obj(RunAction, self._d.get("last_action"))


class RunUsage(WireObject):
    """Token counts of a run."""

    __slots__ = ()

    @property
    def input(self) -> int:
        """Input tokens."""
        return self._d.get("input")

    @property
    def output(self) -> int:
        """Output tokens."""
        return self._d.get("output")


class RunAction(WireObject):
    """The latest outside action on a run, recorded so that the parent sees in `subagent.status` that a person steered or aborted its child (additive)."""

    __slots__ = ()

    @property
    def action(self) -> RunActionKind:
        """What was done."""
        return self._d.get("action")

    @property
    def by(self) -> RunActor:
        """Who did it."""
        return self._d.get("by")

    @property
    def status(self) -> SteerOutcome | None:
        """For a steer: whether the turn took it."""
        return self._d.get("status")

    @property
    def at(self) -> int:
        """When, ms since the epoch."""
        return self._d.get("at")


class SubagentSteerData(WireObject):
    """`subagent.steer`."""

    __slots__ = ()

    @property
    def status(self) -> SteerOutcome:
        """Outcome."""
        return self._d.get("status")

    @property
    def run_id(self) -> str:
        """Run."""
        return self._d.get("run_id")

    @property
    def turn_id(self) -> str | None:
        """Turn."""
        return self._d.get("turn_id")

    @property
    def correlation_id(self) -> str:
        """Correlation id."""
        return self._d.get("correlation_id")


class SteerData(WireObject):
    """Response data of a strict `steer` (additive): whether the Runtime put the message into a turn, so a coordinator can tell the sender without guessing from events."""

    __slots__ = ()

    @property
    def status(self) -> SteerOutcome:
        """`injected`: the message is in the transcript of turn `turn_id`; `conflict`: it was dropped (no such turn ran, or it ended first)."""
        return self._d.get("status")

    @property
    def turn_id(self) -> str | None:
        """The turn that took the message, or the one that ended without taking it."""
        return self._d.get("turn_id")


class SubagentRelaunched(WireObject):
    """`subagent.relaunch`."""

    __slots__ = ()

    @property
    def job_id(self) -> str:
        """New job."""
        return self._d.get("job_id")

    @property
    def run_id(self) -> str:
        """New run."""
        return self._d.get("run_id")

    @property
    def agent_id(self) -> str:
        """The same agent."""
        return self._d.get("agent_id")

    @property
    def alias(self) -> str:
        """Alias."""
        return self._d.get("alias")

    @property
    def definition_name(self) -> str | None:
        """Definition name."""
        return self._d.get("definition_name")

    @property
    def display_name(self) -> str | None:
        """Display name."""
        return self._d.get("display_name")

    @property
    def state(self) -> RunState:
        """Always `queued`."""
        return self._d.get("state")


class SubagentStatusData(WireObject):
    """`subagent.status`."""

    __slots__ = ()

    @property
    def agents(self) -> list[SubagentAgentStatus]:
        """Agents."""
        return _list(lambda x: _obj(SubagentAgentStatus, x), self._d.get("agents"))

    @property
    def jobs(self) -> list[JobSnapshot] | None:
        """Jobs, when no targets were given."""
        return _list(lambda x: _obj(JobSnapshot, x), self._d.get("jobs"))


class SubagentAgentStatus(WireObject):
    """One agent of `subagent.status`."""

    __slots__ = ()

    @property
    def agent_id(self) -> str:
        """Agent."""
        return self._d.get("agent_id")

    @property
    def alias(self) -> str | None:
        """Alias."""
        return self._d.get("alias")

    @property
    def definition_name(self) -> str | None:
        """Definition name."""
        return self._d.get("definition_name")

    @property
    def display_name(self) -> str | None:
        """Display name."""
        return self._d.get("display_name")

    @property
    def parent_agent_id(self) -> str | None:
        """Parent."""
        return self._d.get("parent_agent_id")

    @property
    def run(self) -> RunSnapshot | None:
        """Current or latest run."""
        return _obj(RunSnapshot, self._d.get("run"))


class JobSnapshot(WireObject):
    """A job as reported to its owner; the private task specs are omitted."""

    __slots__ = ()

    @property
    def job_id(self) -> str:
        """Job."""
        return self._d.get("job_id")

    @property
    def parent_agent_id(self) -> str:
        """Owner."""
        return self._d.get("parent_agent_id")

    @property
    def strategy(self) -> JobStrategy:
        """Strategy."""
        return self._d.get("strategy")

    @property
    def state(self) -> JobState:
        """State."""
        return self._d.get("state")

    @property
    def runs(self) -> list[RunSnapshot]:
        """Runs in order."""
        return _list(lambda x: _obj(RunSnapshot, x), self._d.get("runs"))

    @property
    def chain_step(self) -> int | None:
        """Current chain step."""
        return self._d.get("chain_step")

    @property
    def stopped_at(self) -> int | None:
        """When stopped, ms since the epoch."""
        return self._d.get("stopped_at")

    @property
    def created_at(self) -> int:
        """Creation, ms since the epoch."""
        return self._d.get("created_at")

    @property
    def ended_at(self) -> int | None:
        """End, ms since the epoch."""
        return self._d.get("ended_at")


class SubagentStopData(WireObject):
    """`subagent.stop`."""

    __slots__ = ()

    @property
    def cancelled(self) -> list[CancelledRun]:
        """Runs cancelled."""
        return _list(lambda x: _obj(CancelledRun, x), self._d.get("cancelled"))

    @property
    def job_id(self) -> str | None:
        """Job; `null` when the handle named an agent with no run to stop (the daemon has always sent the key)."""
        return self._d.get("job_id")


class CancelledRun(WireObject):
    """A cancelled run of `subagent.stop`."""

    __slots__ = ()

    @property
    def run_id(self) -> str:
        """Run."""
        return self._d.get("run_id")

    @property
    def agent_id(self) -> str | None:
        """Agent."""
        return self._d.get("agent_id")

    @property
    def state(self) -> RunState:
        """State after cancellation."""
        return self._d.get("state")


class RuntimeAuthData(WireObject):
    """The data of a successful `runtime.auth`."""

    __slots__ = ()

    @property
    def principal(self) -> AuthPrincipal:
        """`"runtime"`."""
        return self._d.get("principal")

    @property
    def agent_id(self) -> str:
        """The agent the connection now acts for."""
        return self._d.get("agent_id")


ContentBlock = Union[ContentBlockText, ContentBlockToolCall, ContentBlockToolResult, ContentBlockThinking, ContentBlockImage]
"""A block of message content."""

_CONTENTBLOCK: tuple[str, dict[str, type[WireObject]]] = ("type", {
    "text": ContentBlockText,
    "tool_call": ContentBlockToolCall,
    "tool_result": ContentBlockToolResult,
    "thinking": ContentBlockThinking,
    "image": ContentBlockImage,
})


ToolResultContent = Union[ToolResultContentText, ToolResultContentJson, ToolResultContentError, ToolResultContentImage]
"""The output of a tool."""

_TOOLRESULTCONTENT: tuple[str, dict[str, type[WireObject]]] = ("kind", {
    "text": ToolResultContentText,
    "json": ToolResultContentJson,
    "error": ToolResultContentError,
    "image": ToolResultContentImage,
})


RenderDescriptor = Union[RenderDescriptorText, RenderDescriptorKv, RenderDescriptorDiff, RenderDescriptorTree, RenderDescriptorProgress, RenderDescriptorStatus, RenderDescriptorCommand, RenderDescriptorPathList, RenderDescriptorCode]
"""Presentation data for a tool call or result; the client decides how to show it."""

_RENDERDESCRIPTOR: tuple[str, dict[str, type[WireObject]]] = ("kind", {
    "text": RenderDescriptorText,
    "kv": RenderDescriptorKv,
    "diff": RenderDescriptorDiff,
    "tree": RenderDescriptorTree,
    "progress": RenderDescriptorProgress,
    "status": RenderDescriptorStatus,
    "command": RenderDescriptorCommand,
    "path_list": RenderDescriptorPathList,
    "code": RenderDescriptorCode,
})


PendingRequest = Union[PermissionRequest, UiRequest]
"""A pending request re-shown in `sync`."""

_PENDINGREQUEST: tuple[str, dict[str, type[WireObject]]] = ("type", {
    "permission_request": PermissionRequest,
    "ui_request": UiRequest,
})


UiValue = str | list[str]
"""The answer to a UI request: a string, a list of strings, or null."""

ErrorCode = str
"""Error code; the registry is extensible, so clients accept other strings."""

ProviderErrorKind = str
"""Kind of a PROVIDER_ERROR; extensible, so clients accept other strings."""

AggregateState = JobState | MixedTag
"""Aggregate state of `subagent.wait`: a job state or `"mixed"`."""


EVENT_CLASSES: dict[str, type[Event]] = {
    "hello": Hello,
    "sync": Sync,
    "status": StatusEvent,
    "turn_start": TurnStart,
    "message_delta": MessageDelta,
    "message_complete": MessageComplete,
    "tool_call": ToolCallEvent,
    "tool_result": ToolResultEvent,
    "turn_end": TurnEnd,
    "usage": UsageEvent,
    "compaction": CompactionEvent,
    "error": ErrorEvent,
    "permission_request": PermissionRequest,
    "permission_resolved": PermissionResolved,
    "ui_request": UiRequest,
    "ui_resolved": UiResolved,
    "response": Response,
    "model_changed": ModelChanged,
    "mode_changed": ModeChanged,
    "reasoning_level_changed": ReasoningLevelChanged,
    "tools_changed": ToolsChanged,
    "workspace_created": WorkspaceEvent,
    "workspace_attached": WorkspaceAttached,
    "workspace_retired": WorkspaceEvent,
    "workspace_conflict": WorkspaceConflict,
    "agent_spawned": AgentSpawned,
    "agent_archived": AgentArchived,
    "agent_exited": AgentExited,
    "agent_status_changed": AgentStatusChanged,
    "agent_activity": AgentActivity,
    "subagent_run_changed": SubagentRunChanged,
    "user_message": UserMessage,
    "file_request": FileRequest,
}
"""The class of each event type the schema names (unknown types use ``Event``)."""

ROUTED_EVENT_TYPES: frozenset[str] = frozenset({"sync", "status", "turn_start", "message_delta", "message_complete", "tool_call", "tool_result", "turn_end", "usage", "compaction", "error", "permission_request", "permission_resolved", "ui_request", "ui_resolved", "model_changed", "mode_changed", "reasoning_level_changed", "tools_changed", "user_message", "file_request"})
"""Per-agent events, whose ``agent_id`` routes them to an attached agent."""

COMMAND_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "prompt": (("message",), ("agent_id", "message", "images", "streaming_behavior")),
    "steer": (("message",), ("agent_id", "message", "images", "strict", "turn_id")),
    "abort": ((), ("agent_id",)),
    "set_mode": (("mode",), ("agent_id", "mode")),
    "list_modes": ((), ("agent_id",)),
    "list_models": ((), ("agent_id",)),
    "set_model": (("model",), ("agent_id", "model")),
    "list_reasoning_levels": ((), ("agent_id",)),
    "set_reasoning_level": (("model", "effort"), ("agent_id", "model", "effort")),
    "session_op": (("op",), ("agent_id", "op", "args")),
    "permission_response": (("request_id",), ("agent_id", "request_id", "reason", "source", "choice_id", "decision")),
    "ui_response": (("request_id",), ("agent_id", "request_id", "value")),
    "request_sync": ((), ("agent_id",)),
    "client_files": (("read", "write"), ("agent_id", "read", "write")),
    "file_response": (("request_id",), ("agent_id", "request_id", "content", "error")),
    "agent.list": ((), ("limit", "after")),
    "session.list": (("cwd",), ("cwd",)),
    "session.activate": (("agent_id", "session_id"), ("agent_id", "session_id")),
    "agent.create": (("cwd",), ("cwd", "session_id", "model", "provider", "mode", "tools", "skills", "headless_policy", "mcp_servers", "name", "parent_agent_id", "system_prompt", "depth", "launch_policy", "alias", "definition_name", "display_name", "names", "host")),
    "agent.attach": (("agent_id",), ("agent_id", "role")),
    "agent.detach": (("agent_id",), ("agent_id",)),
    "agent.terminate": (("agent_id",), ("agent_id",)),
    "agent.kill": (("agent_id",), ("agent_id", "force")),
    "agent.archive": (("agent_id",), ("agent_id",)),
    "agent.status": ((), ("agent_id",)),
    "daemon.shutdown": ((), ("force",)),
    "workspace.create": (("cwd",), ("version", "cwd", "label", "branch", "base_ref", "integration_target", "title", "name", "model", "provider", "mode", "host")),
    "workspace.attach": (("workspace_id",), ("version", "workspace_id", "title", "name", "model", "provider", "mode")),
    "workspace.list": ((), ("version", "cwd", "include_retired", "host")),
    "workspace.status": (("workspace_id",), ("version", "workspace_id")),
    "workspace.retire": (("workspace_id",), ("version", "workspace_id", "branch_disposition")),
    "subagent.create": (("parent_agent_id",), ("parent_agent_id", "name", "task", "tasks", "strategy", "model", "provider", "mode")),
    "subagent.wait": (("parent_agent_id", "handles"), ("parent_agent_id", "handles", "mode", "timeout")),
    "subagent.steer": (("parent_agent_id", "target", "message"), ("parent_agent_id", "target", "message")),
    "subagent.relaunch": (("parent_agent_id", "target", "task"), ("parent_agent_id", "target", "task")),
    "subagent.status": (("parent_agent_id",), ("parent_agent_id", "targets")),
    "subagent.stop": (("parent_agent_id", "handle"), ("parent_agent_id", "handle")),
}
"""Each command type: (required fields, every field), ``type`` and ``id`` aside."""
