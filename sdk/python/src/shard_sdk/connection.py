"""One protocol connection: JSONL framing, command/response correlation by id, and event
routing by ``agent_id`` to the attached sessions.

One reader task owns the incoming side. It decodes every complete line of a read in one
``json.loads`` call (the lines joined as a JSON array; a batch with a bad line falls back
to line by line), so the per-event cost stays a few microseconds.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import logging
from typing import TYPE_CHECKING, Any, Callable

from ._base import Event
from .errors import ConnectionClosed, ShardError, ShardTimeout
from .transport import Transport
from .wire import COMMAND_FIELDS, EVENT_CLASSES, ROUTED_EVENT_TYPES, Hello

SESSION_HOOK_TYPES = frozenset(
    {"status", "sync", "permission_request", "ui_request", "permission_resolved", "ui_resolved", "error"}
)
"""Per-agent events a session acts on itself (state, requests) besides queueing them."""

if TYPE_CHECKING:
    from .session import AgentSession

log = logging.getLogger("shard_sdk")

MAX_LINE = 64 * 1024 * 1024
"""The protocol's one line limit (docs/protocol.md): longer lines are dropped."""

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class Feed:
    """An unbounded queue of events for one consumer; the reader never waits for it."""

    __slots__ = ("items", "_waiter", "_exc", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.items: collections.deque[Any] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._exc: BaseException | None = None
        self._loop = loop

    def push(self, item: Any) -> None:
        self.items.append(item)
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def wake(self) -> None:
        """Wakes the consumer after items were appended directly."""
        w = self._waiter
        if w is not None and not w.done() and self.items:
            w.set_result(None)

    def fail(self, exc: BaseException) -> None:
        """Ends the feed: once drained, ``next`` raises ``exc``."""
        if self._exc is None:
            self._exc = exc
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def next(self) -> Any:
        """The next item; raises the failure once the queue is drained and failed.
        Exceptions pushed as items are raised in order."""
        items = self.items
        while not items:
            if self._exc is not None:
                raise self._exc
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = items.popleft()
        if isinstance(item, BaseException):
            raise item
        return item


class EventStream:
    """An async iterator over a feed that is registered when the stream is created (not
    at the first ``__anext__``), so no event between creating and iterating is missed.
    ``aclose()`` (or ``async with``) unregisters it."""

    def __init__(self, registry: list[Feed], loop: asyncio.AbstractEventLoop) -> None:
        self._registry = registry
        self._feed = Feed(loop)
        registry.append(self._feed)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Any:
        if self._feed not in self._registry:
            raise StopAsyncIteration
        return await self._feed.next()

    async def aclose(self) -> None:
        """Stops the stream."""
        if self._feed in self._registry:
            self._registry.remove(self._feed)

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def check_fields(type_: str, fields: dict[str, Any]) -> None:
    """Refuses a command the schema would refuse for its fields (a typo'd keyword, a
    missing required field) before anything is sent."""
    spec = COMMAND_FIELDS.get(type_)
    if spec is None:
        return
    required, allowed = spec
    unknown = [k for k in fields if k not in allowed]
    if unknown:
        raise ValueError(f"`{type_}` has no field {', '.join(map(repr, unknown))}")
    missing = [k for k in required if k not in fields]
    if missing:
        raise ValueError(f"`{type_}` needs {', '.join(map(repr, missing))}")


class Connection:
    """A live connection. Sessions register under their ``agent_id`` (``None`` for a
    direct ``shard agent`` connection, whose events carry no id)."""

    def __init__(self, transport: Transport, hello: Hello, rest: list[bytes]) -> None:
        self.transport = transport
        self.hello = hello
        self.loop = asyncio.get_running_loop()
        self.sessions: dict[str | None, AgentSession] = {}
        self.global_feeds: list[Feed] = []
        self.unrouted: Callable[[Event], None] | None = None
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._write_lock = asyncio.Lock()
        self._closed: ConnectionClosed | None = None
        self._closing = False
        self._last_error: str | None = None
        self._early = rest
        self._reader = asyncio.ensure_future(self._read_loop())

    # ----- opening --------------------------------------------------------------------
    @classmethod
    async def open(cls, transport: Transport, timeout: float | None = 30.0) -> Connection:
        """Reads the server's ``hello`` (a fatal ``error`` instead raises it)."""
        parts: list[bytes] = []
        try:
            async with _timeout(timeout):
                while True:
                    chunk = await transport.read()
                    if not chunk:
                        why = transport.diagnostics()
                        await transport.close()
                        raise ConnectionClosed(
                            "the server closed the connection before hello" + (f": {why}" if why else "")
                        )
                    parts.append(chunk)
                    data = b"".join(parts)
                    nl = data.find(b"\n")
                    if nl < 0:
                        continue
                    first = json.loads(data[:nl])
                    rest = data[nl + 1 :]
                    break
        except asyncio.TimeoutError:
            await transport.close()
            raise ShardTimeout(f"no hello from the server within {timeout} s") from None
        except ValueError as e:
            await transport.close()
            raise ShardError("HANDSHAKE_FAILED", f"the server's first line is not JSON: {e}") from None
        if not isinstance(first, dict) or first.get("type") != "hello":
            await transport.close()
            if isinstance(first, dict) and first.get("type") == "error":
                raise ShardError(str(first.get("code")), str(first.get("message")))
            raise ShardError("HANDSHAKE_FAILED", "the server did not start with hello")
        early = [rest] if rest else []
        return cls(transport, Hello(first), early)

    # ----- sending --------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        """True once the connection ended."""
        return self._closed is not None

    async def send(self, message: dict[str, Any]) -> None:
        """Writes one message as is (no id, no response awaited)."""
        if self._closed is not None:
            raise self._closed
        line = (_dumps(message) + "\n").encode()
        async with self._write_lock:
            try:
                await self.transport.write(line)
            except (ConnectionError, OSError, RuntimeError) as e:
                raise ConnectionClosed(f"writing to the server failed: {e}") from e

    async def request(
        self,
        type_: str,
        fields: dict[str, Any] | None = None,
        timeout: float | None = None,
        keep: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """Sends a command with a fresh id and returns its ``response`` (success or not).
        Fields that are ``None`` are left out (absent), except those named in ``keep``."""
        body = {k: v for k, v in (fields or {}).items() if v is not None or k in keep}
        check_fields(type_, body)
        if self._closed is not None:
            raise self._closed
        cid = f"c{next(self._ids)}"
        fut: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._pending[cid] = fut
        try:
            await self.send({"type": type_, "id": cid, **body})
            if timeout is None:
                return await fut
            try:
                return await asyncio.wait_for(asyncio.shield(fut), timeout)
            except asyncio.TimeoutError:
                raise ShardTimeout(f"`{type_}` got no response within {timeout} s") from None
        finally:
            self._pending.pop(cid, None)

    async def call(
        self,
        type_: str,
        fields: dict[str, Any] | None = None,
        timeout: float | None = None,
        keep: tuple[str, ...] = (),
    ) -> Any:
        """Like ``request``; a failed response raises ``ShardError``; returns ``data``."""
        r = await self.request(type_, fields, timeout, keep)
        if not r.get("success"):
            err = r.get("error") or {}
            raise ShardError(
                str(err.get("code") or "INTERNAL_ERROR"),
                str(err.get("message") or "failed without an error body"),
                r.get("data"),
            )
        return r.get("data")

    # ----- receiving ------------------------------------------------------------------
    async def _read_loop(self) -> None:
        transport = self.transport
        parts: list[bytes] = []
        partial = 0
        skipping = False
        why = "the server closed the connection"
        try:
            for chunk in self._early:
                self._decode(chunk)
            self._early = []
            while True:
                chunk = await transport.read()
                if not chunk:
                    if parts and not skipping:
                        self._decode(b"".join(parts))
                    await transport.ended()
                    break
                last = chunk.rfind(b"\n")
                if last < 0:
                    if skipping:
                        continue
                    parts.append(chunk)
                    partial += len(chunk)
                    if partial > MAX_LINE + 1:
                        log.warning("dropped a line longer than %d bytes", MAX_LINE)
                        parts, partial, skipping = [], 0, True
                    continue
                if skipping:
                    first_nl = chunk.find(b"\n")
                    chunk, skipping = chunk[first_nl + 1 :], False
                    last = chunk.rfind(b"\n")
                    if last < 0:
                        parts, partial = ([chunk], len(chunk)) if chunk else ([], 0)
                        continue
                if parts:
                    parts.append(chunk[:last])
                    data = b"".join(parts)
                else:
                    data = chunk[:last]
                tail = chunk[last + 1 :]
                parts, partial = ([tail], len(tail)) if tail else ([], 0)
                self._decode(data)
        except asyncio.CancelledError:
            why = "the connection was closed by this client"
            raise
        except (ConnectionError, OSError) as e:
            why = f"reading from the server failed: {e}"
        except Exception as e:  # a bug in routing must not leave callers waiting forever
            log.exception("the reader stopped")
            why = f"the SDK's reader failed: {e!r}"
        finally:
            self._finish(why)

    def _decode(self, data: bytes) -> None:
        try:
            messages = json.loads(b"[" + data.replace(b"\n", b",") + b"]")
        except ValueError:
            messages = []
            for line in data.split(b"\n"):
                if not line.strip():
                    continue
                try:
                    messages.append(json.loads(line))
                except ValueError as e:
                    log.warning("dropped an undecodable line: %s", e)
        # The hot path (a per-agent event for an attached session) is inlined: streaming
        # is bounded by per-event interpreter work. Consumers are woken once per batch;
        # none runs before this returns anyway.
        sessions = self.sessions
        classes = EVENT_CLASSES
        routed = ROUTED_EVENT_TYPES
        hooks = SESSION_HOOK_TYPES
        fed = False
        for m in messages:
            if type(m) is not dict:
                log.warning("dropped a line that is not a JSON object")
                continue
            t = m.get("type")
            if t in routed:
                s = sessions.get(m.get("agent_id"))
                if s is not None:
                    ev = classes[t](m)
                    if t in hooks:
                        s._observe(t, ev)
                    for f in s._feeds:
                        f.items.append(ev)
                    fed = True
                    continue
            self._dispatch(m, t)
        if fed:
            for s in list(sessions.values()):
                for f in s._feeds:
                    f.wake()

    def _dispatch(self, m: dict[str, Any], t: Any) -> None:
        if t == "error" and m.get("fatal") and m.get("agent_id") is None:
            # The server's last word before it closes (e.g. CLIENT_TOO_SLOW): kept for the
            # error every waiter gets.
            self._last_error = f"{m.get('code')}: {m.get('message')}"
        if t == "response":
            fut = self._pending.get(m.get("id"))  # type: ignore[arg-type]
            if fut is not None:
                if not fut.done():
                    fut.set_result(m)
                return
        ev = EVENT_CLASSES.get(t, Event)(m)
        if t in ROUTED_EVENT_TYPES:
            s = self.sessions.get(m.get("agent_id"))
            if s is not None:
                s._feed(ev)
                return
            if t in ("permission_request", "ui_request") and self.unrouted is not None:
                self.unrouted(ev)
                return
        elif t == "subagent_run_changed":
            s = self.sessions.get(m.get("parent_agent_id"))
            if s is not None:
                s._feed(ev)
        for f in self.global_feeds:
            f.push(ev)

    def _finish(self, why: str) -> None:
        if self._last_error:
            why += f" after a fatal error ({self._last_error})"
        diag = self.transport.diagnostics()
        exc = ConnectionClosed(why + (f" ({diag})" if diag else ""))
        self._closed = exc
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self._pending.clear()
        for s in list(self.sessions.values()):
            s._fail(exc)
        for f in self.global_feeds:
            f.fail(exc)

    async def wait_closed(self) -> None:
        """Waits until the reader saw the end of the connection."""
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self._reader)

    async def close(self) -> None:
        """Closes the transport and waits for the reader to finish; idempotent."""
        if self._closing:
            await self.wait_closed()
            return
        self._closing = True
        await self.transport.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), 5)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader


@contextlib.asynccontextmanager
async def _timeout(seconds: float | None):  # type: ignore[no-untyped-def]
    """``asyncio.timeout`` for Python 3.10 (which lacks it)."""
    if seconds is None:
        yield
        return
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    fired = False

    def fire() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    handle = loop.call_later(seconds, fire)
    try:
        yield
    except asyncio.CancelledError:
        if fired:
            if hasattr(task, "uncancel"):
                task.uncancel()
            raise asyncio.TimeoutError from None
        raise
    finally:
        handle.cancel()
