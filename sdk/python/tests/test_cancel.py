"""Timeouts, cancellation and a broken connection on a direct agent."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from conftest import Sandbox, arun

from shard_sdk import ConnectionClosed, ShardClient, ShardTimeout, query

LONG = 600_000  # a model call that would take ten minutes: only an abort ends it in time


def slow_then_fast(sb: Sandbox):  # type: ignore[no-untyped-def]
    return sb.script([{"text": "started"}, {"delay_ms": LONG}, {"text": "never"}], [{"text": "after"}])


def test_a_turn_timeout_aborts_and_the_agent_stays_usable(shard_binary: str, sandbox: Sandbox) -> None:
    async def main() -> None:
        client = await ShardClient.spawn(cwd=sandbox.work, script=slow_then_fast(sandbox), home=sandbox.home)
        try:
            seen = []
            with pytest.raises(ShardTimeout) as e:
                async for ev in client.agent.prompt("slow", timeout=1.0):
                    seen.append(ev.type)
            assert e.value.code == "TIMEOUT"
            assert "message_delta" in seen
            # The abort ends the turn; the next prompt runs on the same agent.
            result = await client.agent.run("again")
            assert result.text == "after"
        finally:
            await client.close()

    arun(main())


def test_cancelling_the_consumer_aborts_the_turn(shard_binary: str, sandbox: Sandbox) -> None:
    async def main() -> None:
        client = await ShardClient.spawn(cwd=sandbox.work, script=slow_then_fast(sandbox), home=sandbox.home)
        try:
            started = asyncio.Event()

            async def consume() -> None:
                async for ev in client.agent.prompt("slow"):
                    if ev.type == "message_delta":
                        started.set()

            task = asyncio.ensure_future(consume())
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The SDK sent `abort` and waited for the turn to end before re-raising.
            assert client.agent.status == "idle"
            result = await client.agent.run("again")
            assert result.text == "after"
        finally:
            await client.close()

    arun(main())


def test_leaving_query_early_aborts_and_the_agent_exits(shard_binary: str, sandbox: Sandbox) -> None:
    async def main() -> None:
        stream = query("slow", cwd=sandbox.work, script=slow_then_fast(sandbox), home=sandbox.home)
        async for ev in stream:
            if ev.type == "message_delta":
                break
        await stream.aclose()  # within seconds, not the script's ten minutes

    arun(main(), timeout=60)


def test_the_agent_dying_mid_turn_raises_connection_closed(shard_binary: str, sandbox: Sandbox) -> None:
    async def main() -> None:
        client = await ShardClient.spawn(cwd=sandbox.work, script=slow_then_fast(sandbox), home=sandbox.home)
        proc = client.conn.transport.proc
        with pytest.raises(ConnectionClosed) as e:
            async for ev in client.agent.prompt("slow"):
                if ev.type == "message_delta":
                    os.kill(proc.pid, signal.SIGKILL)
        assert e.value.code == "CONNECTION_CLOSED"
        assert "status -9" in e.value.message
        # Everything after fails the same way, at once.
        with pytest.raises(ConnectionClosed):
            await client.agent.list_modes()
        await client.close()

    arun(main())


def test_a_command_timeout(shard_binary: str, sandbox: Sandbox) -> None:
    async def main() -> None:
        client = await ShardClient.spawn(cwd=sandbox.work, script=slow_then_fast(sandbox), home=sandbox.home)
        try:
            proc = client.conn.transport.proc
            os.kill(proc.pid, signal.SIGSTOP)  # alive but silent
            try:
                with pytest.raises(ShardTimeout):
                    await client.agent.list_modes(timeout=0.5)
            finally:
                os.kill(proc.pid, signal.SIGCONT)
            assert (await client.agent.list_modes()).active == "build"
        finally:
            await client.close()

    arun(main())
