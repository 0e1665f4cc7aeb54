"""``ShardClient``: a connection to a daemon (unix socket or WebSocket) or to one direct
``shard agent``, with the orchestrator commands as typed methods."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from ._base import Event
from .connection import Connection, EventStream
from .errors import ShardError
from .session import AgentSession, PermissionCallback, UiCallback
from .transport import find_binary, open_unix, spawn_agent
from .wire import (
    AgentInfo,
    AttachRole,
    Hello,
    HeadlessPolicy,
    SessionListData,
    SubagentCreated,
    SubagentRelaunched,
    SubagentStatusData,
    SubagentSteerData,
    SubagentStopData,
    SubagentWaitData,
    TerminateData,
    WorkspaceLaunched,
    WorkspaceListData,
    WorkspaceRetiredData,
    WorkspaceStatusData,
)

log = logging.getLogger("shard_sdk")


def shard_home(home: str | os.PathLike[str] | None = None) -> Path:
    """``home``, else ``$SHARD_HOME``, else ``~/.shard`` (as the binary resolves it)."""
    if home:
        return Path(home)
    env = os.environ.get("SHARD_HOME")
    if env:
        return Path(env)
    return Path.home() / ".shard"


class ShardClient:
    """A connection to a Shard daemon, or to one direct agent (``spawn``).

    Use ``await ShardClient.connect()`` for the daemon of ``SHARD_HOME``,
    ``connect_remote`` for a daemon's WebSocket, ``spawn`` for a private ``shard agent``.
    ``permission``/``ui`` given here answer requests of agents that no attached session
    owns (a subagent's requests delegated to this client); otherwise they are denied.
    """

    def __init__(
        self,
        conn: Connection,
        *,
        local: bool,
        permission: PermissionCallback | None = None,
        ui: UiCallback | None = None,
    ) -> None:
        self.conn = conn
        self.local = local
        self.permission = permission
        self.ui = ui
        self.agent: AgentSession | None = None
        """The agent of a direct connection (``spawn``); ``None`` on a daemon."""
        self._parents: dict[str, str | None] = {}
        conn.unrouted = self._on_unrouted

    # ----- connecting -------------------------------------------------------------------
    @classmethod
    async def connect(
        cls,
        home: str | os.PathLike[str] | None = None,
        *,
        timeout: float | None = 30.0,
        permission: PermissionCallback | None = None,
        ui: UiCallback | None = None,
    ) -> ShardClient:
        """Connects to the daemon of ``home`` (default ``$SHARD_HOME``, else ``~/.shard``)
        over its unix socket ``daemon.sock``."""
        transport = await open_unix(shard_home(home) / "daemon.sock")
        conn = await Connection.open(transport, timeout)
        return cls(conn, local=True, permission=permission, ui=ui)

    @classmethod
    async def connect_remote(
        cls,
        url: str,
        credentials: Any,
        *,
        origin: str | None = None,
        ssl: Any = None,
        timeout: float | None = 30.0,
        permission: PermissionCallback | None = None,
        ui: UiCallback | None = None,
    ) -> ShardClient:
        """Connects to a daemon's WebSocket as an enrolled browser does: a ticket from
        ``POST /bootstrap`` with the session cookie and key of ``credentials`` (see
        ``shard_sdk.websocket.enroll``), then ``GET /ws``. ``url`` is the daemon's web
        URL (``http://127.0.0.1:7420`` or the public ``https://…``)."""
        from .websocket import open_websocket

        transport = await open_websocket(url, credentials, origin=origin, ssl=ssl, timeout=timeout)
        conn = await Connection.open(transport, timeout)
        return cls(conn, local=False, permission=permission, ui=ui)

    @classmethod
    async def spawn(
        cls,
        *,
        cwd: str | os.PathLike[str] = ".",
        model: str | None = None,
        provider: str | None = None,
        mode: str | None = None,
        session: str | None = None,
        script: str | os.PathLike[str] | None = None,
        tools: Sequence[str] | None = None,
        name: str | None = None,
        system_prompt_file: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        shard_binary: str | os.PathLike[str] | None = None,
        permission: PermissionCallback | None = None,
        ui: UiCallback | None = None,
        timeout: float | None = 30.0,
        wait_ready: bool = True,
    ) -> ShardClient:
        """Starts a private ``shard agent`` (no daemon) and waits until it is ready; its
        session is ``client.agent``. ``script`` selects the offline ``scripted`` provider.
        Closing the client ends the agent's input: it finishes, persists and exits.
        ``wait_ready=False`` returns after ``hello``: commands sent at once queue in the
        agent's input, and a start failure surfaces from the first of them."""
        binary = find_binary(shard_binary)
        args = ["--cwd", os.fspath(cwd)]
        if script is not None:
            provider = provider or "scripted"
            args += ["--script", os.fspath(script)]
        for flag, value in (
            ("--provider", provider),
            ("--model", model),
            ("--mode", mode),
            ("--session", session),
            ("--name", name),
            ("--system-prompt-file", os.fspath(system_prompt_file) if system_prompt_file else None),
        ):
            if value is not None:
                args += [flag, value]
        if tools is not None:
            args += ["--tools", ",".join(tools)]
        full_env = dict(env or {})
        if home is not None:
            full_env["SHARD_HOME"] = os.fspath(home)
        transport = await spawn_agent(binary, args, full_env)
        try:
            conn = await Connection.open(transport, timeout)
        except BaseException:
            await transport.close()
            raise
        client = cls(conn, local=True)
        client.agent = AgentSession(conn, None, permission=permission, ui=ui, owner=client)
        if wait_ready:
            try:
                await client.agent.wait_ready(timeout)
            except BaseException:
                await client.close()
                raise
        return client

    @property
    def hello(self) -> Hello:
        """The server's ``hello`` (protocol version, capabilities)."""
        return self.conn.hello

    async def close(self) -> None:
        """Closes the connection (a direct agent: ends its input and waits for it)."""
        if not self.conn.closed:
            for s in list(self.conn.sessions.values()):
                await s._settle()
        await self.conn.close()

    async def __aenter__(self) -> ShardClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----- generic ----------------------------------------------------------------------
    async def call(self, type_: str, timeout: float | None = 60.0, **fields: Any) -> Any:
        """Any command by its wire type; returns the response's ``data`` or raises
        ``ShardError``. Fields are checked against the schema before sending."""
        return await self.conn.call(type_, fields, timeout)

    def events(self) -> EventStream:
        """Events no attached session takes, from the moment of the call: orchestrator
        events (``agent_spawned``, ``agent_status_changed``, ``agent_activity``, workspace
        events, …)."""
        return EventStream(self.conn.global_feeds, self.conn.loop)

    # ----- agents -----------------------------------------------------------------------
    def _cwd(self, cwd: str | os.PathLike[str]) -> str:
        # The daemon resolves nothing against the client's directory; over a WebSocket the
        # path is the remote machine's and is passed as given.
        return os.path.abspath(cwd) if self.local else os.fspath(cwd)

    async def create_agent(
        self,
        cwd: str | os.PathLike[str] = ".",
        model: str | None = None,
        *,
        provider: str | None = None,
        mode: str | None = None,
        name: str | None = None,
        tools: Sequence[str] | None = None,
        headless_policy: HeadlessPolicy | None = None,
        session_id: str | None = None,
        script: str | os.PathLike[str] | None = None,
        timeout: float | None = 120.0,
    ) -> str:
        """``agent.create``; returns the new agent's id. ``script`` selects the offline
        ``scripted`` provider with that script file."""
        if script is not None:
            provider, model = provider or "scripted", os.path.abspath(script)
        data = await self.conn.call(
            "agent.create",
            {
                "cwd": self._cwd(cwd),
                "model": model,
                "provider": provider,
                "mode": mode,
                "name": name,
                "tools": list(tools) if tools is not None else None,
                "headless_policy": headless_policy,
                "session_id": session_id,
            },
            timeout,
        )
        return data["agent_id"]

    async def list_agents(self, *, timeout: float | None = 60.0) -> list[AgentInfo]:
        """``agent.list``."""
        data = await self.conn.call("agent.list", {}, timeout)
        agents = [AgentInfo(a) for a in data.get("agents", [])]
        for a in agents:
            self._parents[a.agent_id] = a.parent_agent_id
        return agents

    async def agent_status(self, agent_id: str | None = None, *, timeout: float | None = 60.0) -> list[AgentInfo]:
        """``agent.status`` (one agent, or all)."""
        data = await self.conn.call("agent.status", {"agent_id": agent_id}, timeout)
        return [AgentInfo(a) for a in data.get("agents", [])]

    async def attach(
        self,
        agent_id: str,
        *,
        permission: PermissionCallback | None = None,
        ui: UiCallback | None = None,
        role: AttachRole = "interactive",
        timeout: float | None = 60.0,
    ) -> AgentSession:
        """``agent.attach``; returns once the agent's ``sync`` arrived (the Runtime is
        started if it was stopped)."""
        if agent_id in self.conn.sessions:
            raise ShardError("CONFLICT", f"this client is already attached to {agent_id}")
        session = AgentSession(self.conn, agent_id, permission=permission, ui=ui, role=role)
        try:
            await self.conn.call("agent.attach", {"agent_id": agent_id, "role": role}, timeout)
            await session.wait_ready(timeout)
        except BaseException:
            if self.conn.sessions.get(agent_id) is session:
                del self.conn.sessions[agent_id]
            raise
        return session

    async def terminate(self, agent_id: str, *, timeout: float | None = 60.0) -> TerminateData:
        """``agent.terminate``: stops the Runtime once idle; the agent stays."""
        return TerminateData(await self.conn.call("agent.terminate", {"agent_id": agent_id}, timeout))

    async def kill(self, agent_id: str, *, force: bool = False, timeout: float | None = 60.0) -> None:
        """``agent.kill``: aborts and stops the Runtime now (returns once it exited)."""
        await self.conn.call("agent.kill", {"agent_id": agent_id, "force": force or None}, timeout)

    async def shutdown_daemon(self, *, force: bool = False, timeout: float | None = 120.0) -> None:
        """``daemon.shutdown``."""
        await self.conn.call("daemon.shutdown", {"force": force or None}, timeout)

    # ----- sessions of a directory ----------------------------------------------------------
    async def list_sessions(self, cwd: str | os.PathLike[str], *, timeout: float | None = 60.0) -> SessionListData:
        """``session.list``: the sessions of a working directory, newest first."""
        return SessionListData(await self.conn.call("session.list", {"cwd": self._cwd(cwd)}, timeout))

    async def activate_session(self, agent_id: str, session_id: str, *, timeout: float | None = 60.0) -> dict[str, Any]:
        """``session.activate``: the agent's next Runtime opens ``session_id``."""
        return await self.conn.call(
            "session.activate", {"agent_id": agent_id, "session_id": session_id}, timeout
        )

    # ----- workspaces ---------------------------------------------------------------------
    async def create_workspace(
        self,
        cwd: str | os.PathLike[str],
        *,
        label: str | None = None,
        branch: str | None = None,
        base_ref: str | None = None,
        integration_target: str | None = None,
        title: str | None = None,
        name: str | None = None,
        model: str | None = None,
        provider: str | None = None,
        mode: str | None = None,
        timeout: float | None = 120.0,
    ) -> WorkspaceLaunched:
        """``workspace.create``: a git worktree of ``cwd``'s repository and a fresh agent in it."""
        fields = dict(
            cwd=self._cwd(cwd), label=label, branch=branch, base_ref=base_ref,
            integration_target=integration_target, title=title, name=name, model=model,
            provider=provider, mode=mode,
        )
        return WorkspaceLaunched(await self.conn.call("workspace.create", fields, timeout))

    async def attach_workspace(
        self,
        workspace_id: str,
        *,
        title: str | None = None,
        name: str | None = None,
        model: str | None = None,
        provider: str | None = None,
        mode: str | None = None,
        timeout: float | None = 120.0,
    ) -> WorkspaceLaunched:
        """``workspace.attach``: a fresh agent in an existing workspace."""
        fields = dict(workspace_id=workspace_id, title=title, name=name, model=model, provider=provider, mode=mode)
        return WorkspaceLaunched(await self.conn.call("workspace.attach", fields, timeout))

    async def list_workspaces(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        include_retired: bool | None = None,
        timeout: float | None = 60.0,
    ) -> WorkspaceListData:
        """``workspace.list``."""
        fields = {"cwd": self._cwd(cwd) if cwd is not None else None, "include_retired": include_retired}
        return WorkspaceListData(await self.conn.call("workspace.list", fields, timeout))

    async def workspace_status(self, workspace_id: str, *, timeout: float | None = 60.0) -> WorkspaceStatusData:
        """``workspace.status``."""
        return WorkspaceStatusData(await self.conn.call("workspace.status", {"workspace_id": workspace_id}, timeout))

    async def retire_workspace(
        self, workspace_id: str, *, branch_disposition: str | None = None, timeout: float | None = 120.0
    ) -> WorkspaceRetiredData:
        """``workspace.retire`` (a ``CONFLICT`` carries its reason in ``ShardError.data``)."""
        fields = {"workspace_id": workspace_id, "branch_disposition": branch_disposition}
        return WorkspaceRetiredData(await self.conn.call("workspace.retire", fields, timeout))

    # ----- subagent jobs ---------------------------------------------------------------------
    async def children(self, parent_agent_id: str, *, timeout: float | None = 60.0) -> list[AgentInfo]:
        """The subagents whose parent is ``parent_agent_id`` (from ``agent.list``). Attach
        to one to watch it; a ``steer``/``abort`` sent to a leased child goes through its
        job's coordinator (docs/subagents.md)."""
        return [a for a in await self.list_agents(timeout=timeout) if a.parent_agent_id == parent_agent_id]

    async def authenticate_runtime(self, agent_id: str, token: str, *, timeout: float | None = 60.0) -> None:
        """``runtime.auth``: makes this connection the Runtime of ``agent_id`` (with its
        ``SHARD_AGENT_TOKEN``), which the ``subagent_*`` methods need: the daemon accepts
        ``subagent.*`` only from the parent's own Runtime."""
        await self.conn.call("runtime.auth", {"agent_id": agent_id, "token": token}, timeout)

    async def subagent_create(
        self,
        parent_agent_id: str,
        *,
        task: str | None = None,
        tasks: Sequence[Mapping[str, str]] | None = None,
        name: str | None = None,
        strategy: str | None = None,
        model: str | None = None,
        provider: str | None = None,
        mode: str | None = None,
        timeout: float | None = 120.0,
    ) -> SubagentCreated:
        """``subagent.create`` (a Runtime-authenticated connection only)."""
        fields = dict(
            parent_agent_id=parent_agent_id, task=task, tasks=[dict(t) for t in tasks] if tasks else None,
            name=name, strategy=strategy, model=model, provider=provider, mode=mode,
        )
        return SubagentCreated(await self.conn.call("subagent.create", fields, timeout))

    async def subagent_wait(
        self,
        parent_agent_id: str,
        handles: Sequence[str],
        *,
        mode: str | None = None,
        wait_timeout: float | None = None,
        timeout: float | None = None,
    ) -> SubagentWaitData:
        """``subagent.wait`` (a Runtime-authenticated connection only)."""
        fields = dict(
            parent_agent_id=parent_agent_id, handles=list(handles), mode=mode,
            timeout=float(wait_timeout) if wait_timeout is not None else None,
        )
        return SubagentWaitData(await self.conn.call("subagent.wait", fields, timeout))

    async def subagent_steer(
        self, parent_agent_id: str, target: str, message: str, *, timeout: float | None = 120.0
    ) -> SubagentSteerData:
        """``subagent.steer`` (a Runtime-authenticated connection only)."""
        fields = dict(parent_agent_id=parent_agent_id, target=target, message=message)
        return SubagentSteerData(await self.conn.call("subagent.steer", fields, timeout))

    async def subagent_relaunch(
        self, parent_agent_id: str, target: str, task: str, *, timeout: float | None = 120.0
    ) -> SubagentRelaunched:
        """``subagent.relaunch`` (a Runtime-authenticated connection only)."""
        fields = dict(parent_agent_id=parent_agent_id, target=target, task=task)
        return SubagentRelaunched(await self.conn.call("subagent.relaunch", fields, timeout))

    async def subagent_status(
        self, parent_agent_id: str, targets: Sequence[str] | None = None, *, timeout: float | None = 60.0
    ) -> SubagentStatusData:
        """``subagent.status`` (a Runtime-authenticated connection only)."""
        fields = dict(parent_agent_id=parent_agent_id, targets=list(targets) if targets is not None else None)
        return SubagentStatusData(await self.conn.call("subagent.status", fields, timeout))

    async def subagent_stop(
        self, parent_agent_id: str, handle: str, *, timeout: float | None = 120.0
    ) -> SubagentStopData:
        """``subagent.stop`` (a Runtime-authenticated connection only)."""
        fields = dict(parent_agent_id=parent_agent_id, handle=handle)
        return SubagentStopData(await self.conn.call("subagent.stop", fields, timeout))

    # ----- requests of agents nobody here is attached to ----------------------------------------
    def _on_unrouted(self, ev: Event) -> None:
        asyncio.ensure_future(self._answer_unrouted(ev))

    async def _answer_unrouted(self, ev: Event) -> None:
        """A delegated request of a subagent: the nearest attached ancestor's session
        answers it with its callbacks; else this client's own; else it is denied."""
        owner = await self._ancestor_session(ev.agent_id)
        if owner is None:
            owner = self._fallback_session()
            if ev.type == "permission_request":
                owner._on_permission(ev, self.permission)  # type: ignore[arg-type]
            else:
                owner._on_ui(ev, self.ui)  # type: ignore[arg-type]
            return
        if ev.type == "permission_request":
            owner._on_permission(ev)  # type: ignore[arg-type]
        else:
            owner._on_ui(ev)  # type: ignore[arg-type]

    async def _ancestor_session(self, agent_id: str | None) -> AgentSession | None:
        seen: set[str] = set()
        current = agent_id
        refreshed = False
        while current and current not in seen:
            seen.add(current)
            if current != agent_id and current in self.conn.sessions:
                return self.conn.sessions[current]
            if current not in self._parents and not refreshed:
                refreshed = True
                try:
                    await self.list_agents(timeout=30)
                except ShardError:
                    return None
            current = self._parents.get(current)
        return None

    def _fallback_session(self) -> AgentSession:
        # Answers with the client's own callbacks; registered under a key no agent id
        # can equal, so no event is ever routed to it.
        s = self.conn.sessions.get(_CLIENT_KEY)
        if s is None:
            s = AgentSession(self.conn, _CLIENT_KEY)
        return s


_CLIENT_KEY = "\0client"
