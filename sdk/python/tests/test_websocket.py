"""The WebSocket transport against the daemon's real browser door: enrollment, tickets,
a prompt streamed over it, and the door's refusals."""

from __future__ import annotations

import asyncio
import os
import stat
import struct

import pytest
from conftest import Daemon, Sandbox, arun

from shard_sdk import ShardClient, ShardError, WebCredentials, enroll
from shard_sdk.websocket import WebSocketTransport, _mask, bootstrap, encode_frame, open_websocket


def test_a_remote_client_enrolls_and_drives_an_agent(daemon: Daemon, sandbox: Sandbox) -> None:
    async def main() -> None:
        creds = await enroll(daemon.web_enroll_url())
        assert creds.url == daemon.url and creds.principal_id
        assert "shard_session=" in creds.cookie and creds.cookie not in repr(creds)
        assert creds.session_key and creds.session_key not in repr(creds)
        path = sandbox.root / "creds.json"
        creds.save(path)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        creds = WebCredentials.load(path)

        client = await ShardClient.connect_remote(creds.url, creds, permission=lambda r: "allow")
        assert "websocket" in client.hello.capabilities
        script = sandbox.script(
            [{"tool_call": {"id": "c1", "name": "bash", "args": {"command": "echo ws > out.txt"}}}],
            [{"text": "over the WebSocket", "chunk_chars": 4}],
        )
        # Over a WebSocket paths are the daemon machine's: passed as given.
        agent_id = await client.create_agent(cwd=str(sandbox.work), provider="scripted", model=str(script))
        session = await client.attach(agent_id, permission=lambda r: "allow")
        events = [ev async for ev in session.prompt("hello")]
        assert events[-1].type == "turn_end"
        text = "".join(ev.text_delta or "" for ev in events if ev.type == "message_delta" and ev.kind == "text")
        assert text == "over the WebSocket"
        assert (sandbox.work / "out.txt").read_text() == "ws\n"
        # A local client sees the agent the remote one created.
        local = await ShardClient.connect(home=sandbox.home)
        assert [a.agent_id for a in await local.list_agents()] == [agent_id]
        await local.close()
        await client.close()

    arun(main())


def test_the_door_refuses_what_a_browser_would_be_refused(daemon: Daemon, sandbox: Sandbox) -> None:
    async def main() -> None:
        url = daemon.web_enroll_url()
        creds = await enroll(url)
        # A code works once.
        with pytest.raises(ShardError) as e:
            await enroll(url)
        assert e.value.code == "PERMISSION_DENIED" and "401" in e.value.message
        # A ticket works once.
        ticket = await bootstrap(creds.url, creds)
        t = await open_websocket(creds.url, creds, ticket=ticket)
        await t.close()
        with pytest.raises(ShardError) as e:
            await open_websocket(creds.url, creds, ticket=ticket)
        assert e.value.code == "PERMISSION_DENIED"
        # A foreign Origin gets no ticket and no socket.
        with pytest.raises(ShardError):
            await bootstrap(creds.url, creds, origin="http://evil.example")
        with pytest.raises(ShardError):
            await open_websocket(creds.url, creds, origin="http://evil.example")
        # The cookie alone (as a server on another port of the host receives it) gets no
        # ticket, nor does it with another session's key.
        alone = WebCredentials(url=creds.url, cookie=creds.cookie, principal_id=creds.principal_id)
        with pytest.raises(ShardError) as e:
            await bootstrap(creds.url, alone)
        assert e.value.code == "PERMISSION_DENIED"
        other = await enroll(daemon.web_enroll_url())
        crossed = WebCredentials(
            url=creds.url, cookie=creds.cookie, principal_id=creds.principal_id, session_key=other.session_key
        )
        with pytest.raises(ShardError) as e:
            await bootstrap(creds.url, crossed)
        assert e.value.code == "PERMISSION_DENIED"
        # An unknown cookie gets no ticket.
        forged = WebCredentials(url=creds.url, cookie="shard_session=forged", principal_id="x")
        with pytest.raises(ShardError) as e:
            await ShardClient.connect_remote(creds.url, forged)
        assert e.value.code == "PERMISSION_DENIED"

    arun(main())


def test_frames_round_trip_through_masking() -> None:
    for n in (0, 1, 5, 125, 126, 65535, 65536, 200_000):
        payload = os.urandom(n)
        frame = encode_frame(0x1, payload)
        b0, b1 = frame[0], frame[1]
        assert b0 == 0x81 and b1 & 0x80  # final text frame, masked (client frames must be)
        ln = b1 & 0x7F
        off = 2
        if ln == 126:
            (ln,) = struct.unpack("!H", frame[2:4])
            off = 4
        elif ln == 127:
            (ln,) = struct.unpack("!Q", frame[2:10])
            off = 10
        assert ln == n
        key = frame[off : off + 4]
        assert _mask(frame[off + 4 :], key) == payload


def test_the_reader_joins_fragments_answers_pings_and_stops_at_close() -> None:
    async def main() -> None:
        reader = asyncio.StreamReader()

        def server_frame(fin: bool, op: int, payload: bytes) -> bytes:
            return bytes([(0x80 if fin else 0) | op, len(payload)]) + payload

        reader.feed_data(
            server_frame(False, 0x1, b'{"type":')
            + server_frame(True, 0x9, b"p")  # a ping between fragments
            + server_frame(True, 0x0, b'"hello"}')
            + server_frame(True, 0x8, struct.pack("!H", 1008))
        )
        written: list[bytes] = []

        class Writer:
            def write(self, data: bytes) -> None:
                written.append(data)

        t = WebSocketTransport(reader, Writer())  # type: ignore[arg-type]
        assert await t.read() == b'{"type":"hello"}\n'
        assert await t.read() == b""
        assert t.close_code == 1008 and "1008" in t.diagnostics()
        assert written[0][0] == 0x8A  # the pong
        assert written[1][0] == 0x88  # the close reply

    arun(main())
