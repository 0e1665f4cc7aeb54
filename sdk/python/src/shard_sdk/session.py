"""One agent seen through a connection: its event stream, the per-agent commands as
typed methods, and the answers to its permission and UI requests."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from typing import Any, AsyncGenerator, Awaitable, Callable, Sequence, Union

from ._base import Event, WireObject
from .connection import SESSION_HOOK_TYPES, Connection, EventStream, Feed
from .errors import ConnectionClosed, ShardError, ShardTimeout
from .wire import (
    AttachRole,
    CompactData,
    ForkData,
    Image,
    ListModelsData,
    ListModesData,
    Message,
    PermissionRequest,
    ReasoningLevelsData,
    SessionListData,
    SetModeData,
    SetModelData,
    SetReasoningLevelData,
    SteerData,
    Sync,
    UiRequest,
    UiValue,
    Usage,
)

log = logging.getLogger("shard_sdk")

PermissionCallback = Callable[[PermissionRequest], Union[str, Awaitable[str]]]
"""Decides a permission request: returns one of ``req.choices``' ids, or an awaitable of
one. Anything else (or an exception) denies the request and is raised from the stream."""

UiCallback = Callable[[UiRequest], Union[UiValue, None, Awaitable[Union[UiValue, None]]]]
"""Answers a UI request (``select``/``confirm``/``input``/``editor``): a string, a list of
strings, or ``None`` to dismiss; directly or as an awaitable."""

ImageInput = Union[Image, "dict[str, Any]"]


class CallbackError(ShardError):
    """A permission or UI callback raised or returned something unusable; the request was
    denied (or dismissed) and this is raised from the event stream."""

    def __init__(self, message: str) -> None:
        super().__init__("CALLBACK_FAILED", message)


def deny_choice(req: PermissionRequest) -> str:
    """The id of the request's denying choice (``"deny"`` when it names none)."""
    for c in req.choices or ():
        if c.intent == "deny":
            return c.id
    return "deny"


class HistoryPage(WireObject):
    """The data of ``session_op history`` (the schema has no named type for it)."""

    __slots__ = ()

    @property
    def messages(self) -> list[Message]:
        """The messages immediately before ``before``, oldest first."""
        return [Message(m) for m in self._d.get("messages") or ()]

    @property
    def truncated_before(self) -> str | None:
        """The page's first message id while older messages remain."""
        return self._d.get("truncated_before")


@dataclasses.dataclass
class TurnResult:
    """What ``AgentSession.run`` collected from one turn."""

    turn_id: str | None
    """The turn's id."""
    text: str
    """The text of the turn's last assistant message (the answer)."""
    messages: list[Message]
    """Every complete message of the turn (assistant messages and tool results)."""
    usage: Usage | None
    """The turn's total usage, from ``turn_end``."""
    errors: list[Event]
    """The ``error`` events seen during the turn."""
    events: list[Event]
    """Every event of the turn, in order."""


class AgentSession:
    """An agent this client is attached to (or the one agent of a direct connection).

    Events reach the session as they arrive. ``prompt`` streams one turn; ``events``
    streams everything. Permission and UI requests are answered by the callbacks given at
    attach time, whether or not anything is iterating; without a permission callback
    requests are denied, without a UI callback dialogs are dismissed. An ``observer``
    answers nothing.
    """

    def __init__(
        self,
        conn: Connection,
        agent_id: str | None,
        *,
        permission: PermissionCallback | None = None,
        ui: UiCallback | None = None,
        role: AttachRole = "interactive",
        owner: Any = None,
    ) -> None:
        self.conn = conn
        self.agent_id = agent_id
        self.permission = permission
        self.ui = ui
        self.role = role
        self.sync: Sync | None = None
        """The latest ``sync`` snapshot (set once attached)."""
        self.status: str | None = None
        """The agent's status as last reported (``idle``, ``streaming``, …)."""
        self._feeds: list[Feed] = []
        self._answered: set[str] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._deciding: dict[str, asyncio.Task[Any]] = {}
        self._ready: asyncio.Future[Sync] = conn.loop.create_future()
        self._owner = owner
        self._detached = False
        conn.sessions[agent_id] = self

    # ----- incoming ---------------------------------------------------------------------
    def _feed(self, ev: Event) -> None:
        t = ev._d["type"]
        if t in SESSION_HOOK_TYPES:
            self._observe(t, ev)
        for f in self._feeds:
            f.push(ev)

    def _observe(self, t: str, ev: Event) -> None:
        """What the session itself does with an event (the connection calls this for the
        types in ``SESSION_HOOK_TYPES`` only)."""
        if t == "status":
            self.status = ev._d.get("status")
        elif t == "sync":
            self._on_sync(ev)  # type: ignore[arg-type]
        elif t == "permission_request":
            self._on_permission(ev)  # type: ignore[arg-type]
        elif t == "ui_request":
            self._on_ui(ev)  # type: ignore[arg-type]
        elif t == "permission_resolved" or t == "ui_resolved":
            task = self._deciding.pop(ev._d.get("request_id"), None)
            if task is not None and task is not asyncio.current_task():
                task.cancel()  # answered elsewhere (another client, a timeout)
        elif t == "error" and ev._d.get("fatal") and not self._ready.done():
            d = ev._d
            self._ready.set_exception(ShardError(str(d.get("code")), str(d.get("message"))))

    def _on_sync(self, s: Sync) -> None:
        self.sync = s
        self.status = s._d.get("status")
        if not self._ready.done():
            self._ready.set_result(s)
        for req in s.pending_requests or ():
            if isinstance(req, PermissionRequest):
                self._on_permission(req)
            elif isinstance(req, UiRequest):
                self._on_ui(req)

    def _fail(self, exc: BaseException) -> None:
        if not self._ready.done():
            self._ready.set_exception(exc)
            self._ready.exception()  # retrieved: nobody may be waiting
        for f in self._feeds:
            f.fail(exc)

    def _spawn(self, coro: Awaitable[Any], request_id: str | None = None) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if request_id is not None:
            self._deciding[request_id] = task
            task.add_done_callback(lambda _t: self._deciding.pop(request_id, None))

    def _raise_in_streams(self, exc: BaseException) -> None:
        for f in self._feeds:
            f.push(exc)

    def _on_permission(self, req: PermissionRequest, callback: Any = ...) -> None:
        if self.role == "observer" or req.request_id in self._answered:
            return
        self._answered.add(req.request_id)
        self._spawn(self._decide(req, self.permission if callback is ... else callback), req.request_id)

    async def _decide(self, req: PermissionRequest, callback: PermissionCallback | None) -> None:
        ids = [c.id for c in req.choices or ()]
        deny = deny_choice(req)
        choice = deny
        problem: CallbackError | None = None
        if callback is not None:
            try:
                r = callback(req)
                if inspect.isawaitable(r):
                    r = await r
                if (ids and r in ids) or (not ids and r in (req.options or ())):
                    choice = r
                else:
                    problem = CallbackError(
                        f"the permission callback returned {r!r}; the choices are {ids or req.options}"
                        f" (the request was denied)"
                    )
            except asyncio.CancelledError:
                raise
            except Exception as e:
                problem = CallbackError(f"the permission callback raised {e!r} (the request was denied)")
                problem.__cause__ = e
        fields: dict[str, Any] = {"agent_id": req.agent_id or self.agent_id, "request_id": req.request_id}
        if ids:
            fields["choice_id"] = choice
        else:
            fields["decision"] = choice
        if problem is not None:
            log.warning("%s", problem.message)
            self._raise_in_streams(problem)
        try:
            await self.conn.call("permission_response", fields)
        except ConnectionClosed:
            pass
        except ShardError as e:
            self._raise_in_streams(e)

    def _on_ui(self, req: UiRequest, callback: Any = ...) -> None:
        if self.role == "observer" or req.request_id in self._answered or req.kind == "notify":
            return
        self._answered.add(req.request_id)
        self._spawn(self._answer_ui(req, self.ui if callback is ... else callback), req.request_id)

    async def _answer_ui(self, req: UiRequest, callback: UiCallback | None) -> None:
        value: Any = None
        if callback is not None:
            try:
                r = callback(req)
                if inspect.isawaitable(r):
                    r = await r
                if r is None or isinstance(r, str) or (
                    isinstance(r, list) and all(isinstance(x, str) for x in r)
                ):
                    value = r
                else:
                    self._raise_in_streams(
                        CallbackError(f"the UI callback returned {r!r}; expected a string, a list of strings or None")
                    )
            except asyncio.CancelledError:
                raise
            except Exception as e:
                err = CallbackError(f"the UI callback raised {e!r} (the dialog was dismissed)")
                err.__cause__ = e
                self._raise_in_streams(err)
        fields = {"agent_id": req.agent_id or self.agent_id, "request_id": req.request_id, "value": value}
        try:
            await self.conn.call("ui_response", fields, keep=("value",))
        except ConnectionClosed:
            pass
        except ShardError as e:
            self._raise_in_streams(e)

    async def _settle(self, timeout: float = 5.0) -> None:
        """Waits (bounded) for the answers and aborts this session has in flight, so a
        close right after leaving a turn still delivers its abort."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    # ----- streams ----------------------------------------------------------------------
    async def wait_ready(self, timeout: float | None = 30.0) -> Sync:
        """Waits for the first ``sync`` (the agent is attached and ready)."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except asyncio.TimeoutError:
            raise ShardTimeout(f"no sync from the agent within {timeout} s") from None

    def events(self) -> EventStream:
        """Every event of this agent from the moment of the call, until the connection
        ends (then it raises ``ConnectionClosed``) or the stream is closed."""
        return EventStream(self._feeds, self.conn.loop)

    async def prompt(
        self,
        message: str,
        *,
        images: Sequence[ImageInput] | None = None,
        streaming_behavior: str | None = None,
        timeout: float | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Sends a prompt and streams the agent's events until the turn ends.

        The iterator ends after ``turn_end``. With ``streaming_behavior="follow_up"`` it
        also streams the rest of the turn running now, and ends after the turn that takes
        the message; with ``"steer"`` it ends with the turn the message joins.
        A failed ``prompt`` raises ``ShardError``. ``timeout`` bounds the whole turn
        (``ShardTimeout``). Leaving the loop early, a timeout and cancellation abort the
        turn (the agent stops and stays usable).
        """
        loop = self.conn.loop
        feed = Feed(loop)
        self._feeds.append(feed)
        deadline = None if timeout is None else loop.time() + timeout
        accepted = finished = False
        try:
            await self._call(
                "prompt",
                {
                    "message": message,
                    "images": _images(images),
                    "streaming_behavior": streaming_behavior,
                },
                timeout=timeout,
            )
            accepted = True
            wait_for_ours = streaming_behavior == "follow_up"
            items = feed.items
            while True:
                if items:
                    ev = items.popleft()
                    if isinstance(ev, BaseException):
                        raise ev
                elif deadline is None:
                    ev = await feed.next()
                else:
                    left = deadline - loop.time()
                    try:
                        ev = await asyncio.wait_for(feed.next(), max(left, 0))
                    except asyncio.TimeoutError:
                        raise ShardTimeout(f"the turn did not end within {timeout} s (aborted)") from None
                t = ev._d["type"]
                if wait_for_ours and t == "user_message" and _text_of(ev._d.get("message")) == message:
                    wait_for_ours = False
                yield ev
                if t == "turn_end" and not wait_for_ours:
                    finished = True
                    return
        finally:
            try:
                if accepted and not finished and not self.conn.closed and self.role != "observer":
                    await self._abort_and_wait(feed)
            finally:
                self._feeds.remove(feed)

    async def _abort_and_wait(self, feed: Feed, timeout: float = 30.0) -> None:
        """Aborts an abandoned turn and waits (bounded) until the agent is idle again, so
        the next command finds it free."""
        try:
            await self._call("abort", {}, timeout=timeout)
            deadline = self.conn.loop.time() + timeout
            while self.status != "idle":
                ev = await asyncio.wait_for(feed.next(), max(deadline - self.conn.loop.time(), 0))
                if isinstance(ev, Event) and ev._d["type"] == "turn_end":
                    break
        except (ShardError, asyncio.TimeoutError) as e:
            log.debug("abort after an abandoned turn: %s", e)

    async def run(
        self,
        message: str,
        *,
        images: Sequence[ImageInput] | None = None,
        timeout: float | None = None,
    ) -> TurnResult:
        """Runs one turn to its end and returns what it produced."""
        events: list[Event] = []
        messages: list[Message] = []
        errors: list[Event] = []
        turn_id = None
        usage = None
        async for ev in self.prompt(message, images=images, timeout=timeout):
            events.append(ev)
            t = ev.type
            if t == "message_complete":
                messages.append(ev.message)
            elif t == "error":
                errors.append(ev)
            elif t == "turn_end":
                turn_id = ev.turn_id
                usage = ev.usage
        text = ""
        for m in reversed(messages):
            if m.role == "assistant":
                text = "".join(b.text for b in m.content if b.type == "text")
                break
        return TurnResult(turn_id, text, messages, usage, errors, events)

    # ----- per-agent commands -------------------------------------------------------------
    async def _call(self, type_: str, fields: dict[str, Any], timeout: float | None = 60.0) -> Any:
        if self._detached:
            raise ShardError("NOT_ATTACHED", "this session was detached")
        if self.agent_id is not None:
            fields = {"agent_id": self.agent_id, **fields}
        try:
            return await self.conn.call(type_, fields, timeout)
        except ConnectionClosed:
            # An agent that failed to start said why before it closed: raise that.
            if self._ready.done() and not self._ready.cancelled() and self._ready.exception() is not None:
                raise self._ready.exception() from None  # type: ignore[misc]
            raise

    async def steer(
        self,
        message: str,
        *,
        images: Sequence[ImageInput] | None = None,
        strict: bool | None = None,
        turn_id: str | None = None,
        timeout: float | None = 60.0,
    ) -> SteerData | None:
        """``steer``: a message for the running turn (between turns it starts one).
        ``strict``/``turn_id`` join only that turn and answer ``injected``/``conflict``."""
        data = await self._call(
            "steer",
            {"message": message, "images": _images(images), "strict": strict, "turn_id": turn_id},
            timeout,
        )
        return SteerData(data) if isinstance(data, dict) else None

    async def follow_up(
        self, message: str, *, images: Sequence[ImageInput] | None = None, timeout: float | None = 60.0
    ) -> None:
        """Queues a message for when the agent is idle (``prompt`` with
        ``streaming_behavior: follow_up``); returns once accepted."""
        await self._call(
            "prompt",
            {"message": message, "images": _images(images), "streaming_behavior": "follow_up"},
            timeout,
        )

    async def abort(self, *, timeout: float | None = 60.0) -> None:
        """``abort``: cancels the running turn."""
        await self._call("abort", {}, timeout)

    async def list_modes(self, *, timeout: float | None = 60.0) -> ListModesData:
        """``list_modes``."""
        return ListModesData(await self._call("list_modes", {}, timeout))

    async def set_mode(self, mode: str, *, timeout: float | None = 60.0) -> SetModeData:
        """``set_mode``."""
        return SetModeData(await self._call("set_mode", {"mode": mode}, timeout))

    async def list_models(self, *, timeout: float | None = 60.0) -> ListModelsData:
        """``list_models``."""
        return ListModelsData(await self._call("list_models", {}, timeout))

    async def set_model(self, model: str, *, timeout: float | None = 60.0) -> SetModelData:
        """``set_model``: applies at the next provider call."""
        return SetModelData(await self._call("set_model", {"model": model}, timeout))

    async def list_reasoning_levels(self, *, timeout: float | None = 60.0) -> ReasoningLevelsData:
        """``list_reasoning_levels``."""
        return ReasoningLevelsData(await self._call("list_reasoning_levels", {}, timeout))

    async def set_reasoning_level(
        self, model: str, effort: str, *, timeout: float | None = 60.0
    ) -> SetReasoningLevelData:
        """``set_reasoning_level``."""
        data = await self._call("set_reasoning_level", {"model": model, "effort": effort}, timeout)
        return SetReasoningLevelData(data)

    async def sessions(self, *, timeout: float | None = 60.0) -> SessionListData:
        """``session_op list``: the sessions of this agent's working directory."""
        return SessionListData(await self._call("session_op", {"op": "list"}, timeout))

    async def history(
        self, before: str, *, max_bytes: int | None = None, timeout: float | None = 60.0
    ) -> HistoryPage:
        """``session_op history``: the page of messages before message ``before`` (e.g.
        ``sync.live_window.truncated_before``, then each page's own)."""
        args = {"before": before, "max_bytes": max_bytes}
        return HistoryPage(await self._call("session_op", {"op": "history", "args": _compact(args)}, timeout))

    async def compact(
        self, *, keep_recent_tokens: int | None = None, timeout: float | None = 300.0
    ) -> CompactData:
        """``session_op compact``."""
        args = _compact({"keep_recent_tokens": keep_recent_tokens})
        return CompactData(await self._call("session_op", {"op": "compact", "args": args or None}, timeout))

    async def fork(self, *, from_entry_id: str | None = None, timeout: float | None = 60.0) -> ForkData:
        """``session_op fork``: a new session holding this one's history (up to
        ``from_entry_id``)."""
        args = _compact({"from_entry_id": from_entry_id})
        return ForkData(await self._call("session_op", {"op": "fork", "args": args or None}, timeout))

    async def request_sync(self, *, timeout: float | None = 60.0) -> Sync:
        """``request_sync``: asks for a fresh snapshot and returns it."""
        feed = Feed(self.conn.loop)
        self._feeds.append(feed)
        try:
            await self._call("request_sync", {}, timeout)
            while True:
                ev = await asyncio.wait_for(feed.next(), timeout)
                if ev.type == "sync":
                    return ev
        except asyncio.TimeoutError:
            raise ShardTimeout(f"no sync within {timeout} s") from None
        finally:
            self._feeds.remove(feed)

    async def detach(self, *, timeout: float | None = 60.0) -> None:
        """``agent.detach`` (daemon connections): stops this session's stream."""
        if self.agent_id is None:
            raise ShardError("INVALID_REQUEST", "a direct agent cannot be detached; close it")
        await self.conn.call("agent.detach", {"agent_id": self.agent_id}, timeout)
        self._detached = True
        if self.conn.sessions.get(self.agent_id) is self:
            del self.conn.sessions[self.agent_id]
        self._fail(ShardError("NOT_ATTACHED", "this session was detached"))

    async def close(self) -> None:
        """Closes what this session owns: the agent process of a direct connection (which
        finishes its turn, persists and exits); on a daemon, the same as ``detach``."""
        if self._owner is not None:
            await self._owner.close()
        elif not self._detached and not self.conn.closed:
            await self.detach()


def _compact(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _images(images: Sequence[ImageInput] | None) -> list[dict[str, Any]] | None:
    if not images:
        return None
    out = []
    for im in images:
        d = im.to_dict() if isinstance(im, Image) else dict(im)
        d.setdefault("type", "image")
        out.append(d)
    return out


def _text_of(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    return "".join(
        b.get("text", "") for b in message.get("content") or () if isinstance(b, dict) and b.get("type") == "text"
    )
