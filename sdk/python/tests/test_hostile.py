"""A hostile or broken peer: over-long and malformed lines, a WebSocket frame announcing
more than the limit, a server that fakes the upgrade. The SDK drops what it cannot use,
keeps the connection when it can, and never buffers without bound."""

from __future__ import annotations

import asyncio
import struct

import pytest
from conftest import arun

import shard_sdk.connection as connection
from shard_sdk import ConnectionClosed, ShardError, WebCredentials
from shard_sdk.connection import Connection
from shard_sdk.session import AgentSession
from shard_sdk.transport import Transport
from shard_sdk.websocket import WebSocketTransport, open_websocket

HELLO = b'{"type":"hello","protocol_version":"0.1.0","server_version":"x","capabilities":[]}\n'


class Scripted(Transport):
    """Hands out the given chunks, then end of stream."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)
        self.written: list[bytes] = []

    async def read(self) -> bytes:
        await asyncio.sleep(0)
        return self.chunks.pop(0) if self.chunks else b""

    async def write(self, data: bytes) -> None:
        self.written.append(data)

    async def close(self) -> None:
        pass


def delta(text: str) -> bytes:
    return (b'{"type":"message_delta","agent_id":"a","message_id":"m","block_index":0,'
            b'"kind":"text","text_delta":"' + text.encode() + b'"}\n')


def collect(chunks: list[bytes]) -> tuple[list[str], BaseException | None]:
    async def main() -> tuple[list[str], BaseException | None]:
        conn = await Connection.open(Scripted([HELLO, *chunks]))
        session = AgentSession(conn, "a")
        stream = session.events()
        got: list[str] = []
        try:
            async for ev in stream:
                got.append(ev.text_delta)
        except ConnectionClosed as e:
            return got, e
        return got, None

    return arun(main(), timeout=30)


def test_an_over_long_line_is_dropped_and_the_stream_goes_on(monkeypatch) -> None:
    monkeypatch.setattr(connection, "MAX_LINE", 1000)
    huge = b'{"type":"message_delta","text_delta":"' + b"x" * 600
    got, end = collect([delta("before"), huge, huge, huge + b'"}\n' + delta("after")])
    assert got == ["before", "after"]
    assert isinstance(end, ConnectionClosed)


def test_malformed_and_non_object_lines_are_dropped() -> None:
    got, _ = collect([delta("one") + b"{not json\n[1,2]\n\"str\"\n\n   \n" + delta("two"), b'{"type":5}\n' + delta("three")])
    assert got == ["one", "two", "three"]


def test_a_line_split_across_reads_is_reassembled() -> None:
    whole = delta("split") + delta("again")
    got, _ = collect([whole[:7], whole[7:50], whole[50:]])
    assert got == ["split", "again"]


def test_an_unsolicited_response_is_not_taken_for_an_answer() -> None:
    async def main() -> None:
        spoof = b'{"type":"response","id":"c1","success":true,"data":{"agent_id":"agent-evil"}}\n'
        t = Scripted([HELLO])
        conn = await Connection.open(t)
        # A response that arrives before the command was sent answers nothing.
        conn._decode(spoof.rstrip(b"\n"))
        fut = asyncio.ensure_future(conn.call("agent.list", {}, timeout=1))
        with pytest.raises(ShardError) as e:
            await fut
        assert e.value.code in ("TIMEOUT", "CONNECTION_CLOSED")

    arun(main(), timeout=30)


def test_a_server_that_fails_the_handshake_is_refused() -> None:
    async def main() -> None:
        async def fake(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: bogus\r\nSec-WebSocket-Protocol: shard.v1\r\n\r\n")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(fake, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        creds = WebCredentials(url=f"http://127.0.0.1:{port}", cookie="shard_session=x", principal_id="p")
        with pytest.raises(ShardError) as e:
            await open_websocket(creds.url, creds, ticket="t")
        assert e.value.code == "HANDSHAKE_FAILED"
        server.close()

    arun(main(), timeout=30)


def test_a_frame_announcing_more_than_the_limit_is_refused_unread() -> None:
    async def main() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(bytes([0x81, 127]) + struct.pack("!Q", 1 << 40))

        class Writer:
            def write(self, data: bytes) -> None:
                pass

        t = WebSocketTransport(reader, Writer())  # type: ignore[arg-type]
        with pytest.raises(ConnectionClosed, match="over the limit"):
            await t.read()

    arun(main(), timeout=30)


def test_a_fatal_error_before_the_close_is_in_the_reason() -> None:
    too_slow = b'{"type":"error","code":"CLIENT_TOO_SLOW","message":"dropped: queue over its cap","fatal":true}\n'
    got, end = collect([delta("one") + too_slow])
    assert got == ["one"]
    assert isinstance(end, ConnectionClosed) and "CLIENT_TOO_SLOW" in end.message


# A unix socket another user serves: the listener's credentials are taken when it
# listens, so the helper drops to `nobody` before `listen()`.
FOREIGN_LISTENER = r"""
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o777)
os.setgid(65534)
os.setuid(65534)
s.listen(4)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    try:
        c.sendall(b'{"type":"hello","protocol_version":"0.1.0","server_version":"x","capabilities":[]}\n')
    except OSError:
        pass
    c.close()
"""


def test_a_daemon_socket_served_by_another_user_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys

    from conftest import need

    if os.geteuid() != 0:
        need("needs root to start a listener as another user")
        return
    from shard_sdk import ShardClient as Client

    home = tmp_path / "home"
    home.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(home, 0o777)
    proc = subprocess.Popen(
        [sys.executable, "-c", FOREIGN_LISTENER, str(home / "daemon.sock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"

        async def main() -> None:
            await Client.connect(home=home)

        with pytest.raises(ShardError) as err:
            arun(main(), timeout=30)
        assert err.value.code == "PERMISSION_DENIED"
        assert "user id 65534" in str(err.value)
    finally:
        proc.kill()
        proc.wait()
