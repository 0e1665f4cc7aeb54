"""Byte transports the protocol runs over: a unix socket, a ``shard agent`` child's pipes,
or a WebSocket (``websocket.py``). Each hands the connection raw bytes holding whole or
partial JSONL lines; framing is the connection's job.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import struct
from collections import deque
from pathlib import Path
from typing import Mapping, Sequence

from .errors import ShardError

READ_CHUNK = 1 << 18


class Transport:
    """What a connection needs from its carrier."""

    kind = "abstract"

    async def read(self) -> bytes:
        """The next bytes; ``b""`` at end of stream."""
        raise NotImplementedError

    async def write(self, data: bytes) -> None:
        """Writes whole lines (one or more, each ending in ``\\n``)."""
        raise NotImplementedError

    async def close(self) -> None:
        """Ends the conversation; idempotent."""
        raise NotImplementedError

    def diagnostics(self) -> str:
        """What the peer said on the side (an agent's standard error), for error messages."""
        return ""

    async def ended(self) -> None:
        """Called once the stream ended: lets ``diagnostics`` see how (bounded wait)."""


class StreamTransport(Transport):
    """An asyncio stream pair: a unix socket, or pipes."""

    kind = "stream"

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._closed = False

    async def read(self) -> bytes:
        return await self._reader.read(READ_CHUNK)

    async def write(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._writer.close()
            await self._writer.wait_closed()


async def open_unix(path: str | os.PathLike[str]) -> StreamTransport:
    """Connects to a daemon's unix socket, served by this user only.

    A socket another user bound (a ``SHARD_HOME`` on a shared folder, a squatter after
    the daemon died) would receive every prompt and could answer every permission
    request, so the kernel-reported credentials of the other end must be ours.
    """
    try:
        reader, writer = await asyncio.open_unix_connection(os.fspath(path), limit=READ_CHUNK)
    except (FileNotFoundError, ConnectionRefusedError) as e:
        raise ShardError(
            "CONNECTION_CLOSED",
            f"no daemon running at {path}; start one with `shard daemon` ({e.strerror})",
        ) from e
    try:
        peer_uid = _peer_uid(writer)
    except OSError as e:
        writer.close()
        raise ShardError(
            "PERMISSION_DENIED", f"cannot tell who serves {path}: {e.strerror}"
        ) from e
    if peer_uid != os.geteuid():
        writer.close()
        raise ShardError(
            "PERMISSION_DENIED",
            f"{path} is served by user id {peer_uid}, not by you ({os.geteuid()}): "
            "refusing to talk to it",
        )
    return StreamTransport(reader, writer)


def _peer_uid(writer: asyncio.StreamWriter) -> int:
    """The user id of the process at the other end of a unix socket (``SO_PEERCRED``)."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        raise OSError(0, "no socket")
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


def find_binary(shard_binary: str | os.PathLike[str] | None = None) -> str:
    """The ``shard`` executable: the argument, else ``$SHARD_BINARY``, else ``PATH``."""
    for candidate in (shard_binary, os.environ.get("SHARD_BINARY")):
        if candidate:
            p = Path(candidate)
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
            raise ShardError("BINARY_NOT_FOUND", f"{p} is not an executable file")
    found = shutil.which("shard")
    if not found:
        raise ShardError(
            "BINARY_NOT_FOUND",
            "no `shard` binary: pass shard_binary=, set SHARD_BINARY, or put shard on PATH",
        )
    return found


class ProcessTransport(Transport):
    """A ``shard agent`` child: the protocol on its stdin/stdout, its stderr kept (last
    8 KiB) for the error message when it dies."""

    kind = "stdio"

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        assert proc.stdin is not None and proc.stdout is not None
        self._stdin = proc.stdin
        self._stdout = proc.stdout
        self._stderr_tail: deque[bytes] = deque()
        self._stderr_size = 0
        self._stderr_task = (
            asyncio.ensure_future(self._drain_stderr()) if proc.stderr is not None else None
        )
        self._closed = False

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        while True:
            chunk = await self.proc.stderr.read(8192)
            if not chunk:
                return
            self._stderr_tail.append(chunk)
            self._stderr_size += len(chunk)
            while self._stderr_size > 8192 and len(self._stderr_tail) > 1:
                self._stderr_size -= len(self._stderr_tail.popleft())

    async def read(self) -> bytes:
        return await self._stdout.read(READ_CHUNK)

    async def write(self, data: bytes) -> None:
        self._stdin.write(data)
        await self._stdin.drain()

    async def ended(self) -> None:
        # Standard output closes a moment before the exit status is known.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), 2)
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1)

    def diagnostics(self) -> str:
        text = b"".join(self._stderr_tail).decode("utf-8", "replace").strip()
        code = self.proc.returncode
        parts = []
        if code is not None:
            parts.append(f"shard agent exited with status {code}")
        if text:
            parts.append(text[-2000:])
        return "; ".join(parts)

    async def close(self, grace: float = 10.0) -> None:
        """Ends input (the agent finishes its turn, persists and exits), then waits;
        terminates and finally kills a process that does not exit in time."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), grace)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except asyncio.TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()
        if self._stderr_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._stderr_task, 2)


async def spawn_agent(
    binary: str,
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
) -> ProcessTransport:
    """Starts ``binary agent ARGS…`` with the protocol on its stdio."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    try:
        proc = await asyncio.create_subprocess_exec(
            binary,
            "agent",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=full_env,
            limit=READ_CHUNK,
        )
    except OSError as e:
        raise ShardError("BINARY_NOT_FOUND", f"could not start {binary}: {e}") from e
    return ProcessTransport(proc)
