"""``query()``: one prompt on a private Runtime, in one line."""

from __future__ import annotations

import contextlib
import os
from typing import AsyncGenerator, Mapping, Sequence

from ._base import Event
from .client import ShardClient
from .session import ImageInput, PermissionCallback, UiCallback


async def query(
    prompt: str,
    *,
    cwd: str | os.PathLike[str] = ".",
    model: str | None = None,
    provider: str | None = None,
    permission: PermissionCallback | None = None,
    shard_binary: str | os.PathLike[str] | None = None,
    ui: UiCallback | None = None,
    mode: str | None = None,
    session: str | None = None,
    script: str | os.PathLike[str] | None = None,
    tools: Sequence[str] | None = None,
    images: Sequence[ImageInput] | None = None,
    home: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> AsyncGenerator[Event, None]:
    """Runs ``prompt`` on a private ``shard agent`` (found via ``shard_binary``,
    ``$SHARD_BINARY`` or ``PATH``) and yields its events; the iterator ends after
    ``turn_end`` and the agent exits.

    ``permission(req)`` returns a choice id (``"allow"``, ``"deny"``, …) directly or as an
    awaitable; without it every request is denied and the model is told so. ``ui(req)``
    answers ``select``/``confirm``/``input``/``editor`` dialogs (default: dismissed).
    ``timeout`` bounds the turn. Leaving the loop early or cancelling aborts the turn.
    """
    client = await ShardClient.spawn(
        cwd=cwd,
        model=model,
        provider=provider,
        mode=mode,
        session=session,
        script=script,
        tools=tools,
        home=home,
        env=env,
        shard_binary=shard_binary,
        permission=permission,
        ui=ui,
        # The prompt waits in the agent's input while it starts; a start failure is
        # raised from it.
        wait_ready=False,
    )
    assert client.agent is not None
    try:
        # Leaving early (break, cancel, timeout) aborts the turn inside ``prompt``.
        async with contextlib.aclosing(client.agent.prompt(prompt, images=images, timeout=timeout)) as events:
            async for ev in events:
                yield ev
    finally:
        await client.close()
