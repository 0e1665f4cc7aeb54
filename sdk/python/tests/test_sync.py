"""The blocking façade for scripts: the same behaviour without ``async``."""

from __future__ import annotations

import pytest
from conftest import Daemon, Sandbox

from shard_sdk import ShardError
from shard_sdk import sync


def test_sync_query_streams_and_answers_permissions(shard_binary: str, sandbox: Sandbox) -> None:
    script = sandbox.script(
        [{"tool_call": {"id": "c1", "name": "bash", "args": {"command": "echo sync > out.txt"}}}],
        [{"text": "done synchronously", "chunk_chars": 5}],
    )
    events = list(sync.query("go", cwd=sandbox.work, script=script, home=sandbox.home, permission=lambda r: "allow"))
    assert events[-1].type == "turn_end"
    assert "".join(e.text_delta or "" for e in events if e.type == "message_delta" and e.kind == "text") == "done synchronously"
    assert (sandbox.work / "out.txt").read_text() == "sync\n"


def test_breaking_out_of_a_sync_prompt_aborts_the_turn(shard_binary: str, sandbox: Sandbox) -> None:
    script = sandbox.script([{"text": "started"}, {"delay_ms": 600000}], [{"text": "next"}])
    client = sync.ShardClient.spawn(cwd=sandbox.work, script=script, home=sandbox.home)
    try:
        for ev in client.agent.prompt("slow"):
            if ev.type == "message_delta":
                break  # closing the iterator aborts the ten-minute turn
        assert client.agent.status == "idle"
        assert client.agent.run("again").text == "next"
    finally:
        client.close()


def test_sync_client_on_the_daemon(daemon: Daemon, sandbox: Sandbox) -> None:
    script = sandbox.script([{"text": "one"}], [{"text": "two"}])
    with sync.ShardClient.connect(home=sandbox.home) as client:
        agent_id = client.create_agent(cwd=sandbox.work, script=script)
        assert [a.agent_id for a in client.list_agents()] == [agent_id]
        session = client.attach(agent_id)
        assert [e.type for e in session.prompt("first")][-1] == "turn_end"
        assert session.run("second").text == "two"
        assert session.list_modes().active == "build"  # forwarded coroutine method
        with pytest.raises(ShardError) as e:
            client.attach("agent-00000000000000000000000000")
        assert e.value.code == "NOT_FOUND"


def test_sync_spawn(shard_binary: str, sandbox: Sandbox) -> None:
    client = sync.ShardClient.spawn(cwd=sandbox.work, script=sandbox.script([{"text": "direct"}]), home=sandbox.home)
    try:
        assert client.agent.run("x").text == "direct"
    finally:
        client.close()
