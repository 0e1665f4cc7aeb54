"""A blocking façade over the asyncio API, for scripts.

All asyncio work runs on one event loop in a background thread that the first call starts;
each blocking call submits a coroutine there and waits for it. Event streams become plain
iterators. Callbacks (``permission=``, ``ui=``) run on that loop's thread: a blocking one
(``input()``) holds up only the SDK's own loop.

    from shard_sdk.sync import query, ShardClient
    for ev in query("explain src/main.rs", permission=lambda req: "allow"):
        print(ev.type)
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any, AsyncIterator, Awaitable, Iterator, TypeVar

from ._base import Event
from .client import ShardClient as _AsyncClient
from .query import query as _async_query
from .session import AgentSession as _AsyncSession, TurnResult

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _the_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=run, name="shard-sdk-loop", daemon=True).start()
            ready.wait()
            _loop = loop
        return _loop


def run(coro: Awaitable[T], timeout: float | None = None) -> T:
    """Runs a coroutine on the SDK's loop and returns its result (re-raising its error)."""
    loop = _the_loop()
    if _in_loop_thread(loop):
        raise RuntimeError("shard_sdk.sync called from the SDK's own loop (inside a callback?)")
    fut = asyncio.run_coroutine_threadsafe(_as_coro(coro), loop)
    try:
        return fut.result(timeout)
    except BaseException:
        fut.cancel()
        raise


def _in_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def _as_coro(aw: Awaitable[T]) -> T:
    return await aw


def iterate(agen: AsyncIterator[T]) -> Iterator[T]:
    """A blocking iterator over an async iterator running on the SDK's loop. Leaving the
    loop early (``break``, an exception) closes the async iterator, which for a turn
    aborts it."""
    try:
        while True:
            try:
                item = run(agen.__anext__())
            except StopAsyncIteration:
                return
            yield item
    finally:
        aclose = getattr(agen, "aclose", None)
        if aclose is not None:
            run(aclose())


async def _on_loop(make: Any) -> Any:
    return make()


def query(prompt: str, **kwargs: Any) -> Iterator[Event]:
    """``shard_sdk.query`` as a blocking iterator (same arguments)."""
    return iterate(_async_query(prompt, **kwargs))


class _Wrapper:
    """Forwards attribute access to the async object, running coroutines to completion
    and turning async iterators into iterators."""

    _inner: Any

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *a, **k: _wrap_result(run(attr(*a, **k)))
        if inspect.isasyncgenfunction(attr):
            return lambda *a, **k: iterate(attr(*a, **k))
        return attr


def _wrap_result(v: Any) -> Any:
    if isinstance(v, _AsyncSession):
        return AgentSession(v)
    if isinstance(v, _AsyncClient):
        return ShardClient(v)
    return v


class AgentSession(_Wrapper):
    """The blocking twin of ``shard_sdk.AgentSession``: every method blocks; ``prompt``
    and ``events`` are plain iterators."""

    def __init__(self, inner: _AsyncSession) -> None:
        self._inner = inner

    def prompt(self, message: str, **kwargs: Any) -> Iterator[Event]:
        """Sends a prompt; iterates the turn's events until ``turn_end``."""
        return iterate(self._inner.prompt(message, **kwargs))

    def run(self, message: str, **kwargs: Any) -> TurnResult:
        """Runs one turn to its end."""
        return run(self._inner.run(message, **kwargs))

    def events(self) -> Iterator[Event]:
        """Every event of the agent from now on."""
        return iterate(run(_on_loop(self._inner.events)))

    def close(self) -> None:
        """Closes what the session owns (see ``AgentSession.close``)."""
        run(self._inner.close())


class ShardClient(_Wrapper):
    """The blocking twin of ``shard_sdk.ShardClient``."""

    def __init__(self, inner: _AsyncClient) -> None:
        self._inner = inner

    @classmethod
    def connect(cls, home: Any = None, **kwargs: Any) -> ShardClient:
        """``ShardClient.connect``."""
        return cls(run(_AsyncClient.connect(home, **kwargs)))

    @classmethod
    def connect_remote(cls, url: str, credentials: Any, **kwargs: Any) -> ShardClient:
        """``ShardClient.connect_remote``."""
        return cls(run(_AsyncClient.connect_remote(url, credentials, **kwargs)))

    @classmethod
    def spawn(cls, **kwargs: Any) -> ShardClient:
        """``ShardClient.spawn``."""
        return cls(run(_AsyncClient.spawn(**kwargs)))

    @property
    def agent(self) -> AgentSession | None:
        """The agent of a direct connection."""
        a = self._inner.agent
        return AgentSession(a) if a is not None else None

    def attach(self, agent_id: str, **kwargs: Any) -> AgentSession:
        """``ShardClient.attach``."""
        return AgentSession(run(self._inner.attach(agent_id, **kwargs)))

    def create_agent(self, cwd: Any = ".", model: str | None = None, **kwargs: Any) -> str:
        """``ShardClient.create_agent``."""
        return run(self._inner.create_agent(cwd, model, **kwargs))

    def list_agents(self, **kwargs: Any) -> list[Any]:
        """``ShardClient.list_agents``."""
        return run(self._inner.list_agents(**kwargs))

    def events(self) -> Iterator[Event]:
        """``ShardClient.events``."""
        return iterate(run(_on_loop(self._inner.events)))

    def close(self) -> None:
        """``ShardClient.close``."""
        run(self._inner.close())

    def __enter__(self) -> ShardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
