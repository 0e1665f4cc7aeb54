"""``ShardClient`` on a real ``shard daemon``: the fixed API, a second client sharing an
agent, steer and follow-up, errors and a daemon that dies."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest
from conftest import Daemon, Sandbox, arun, need

from shard_sdk import ConnectionClosed, PermissionRequest, ShardClient, ShardError


def gated_script(sb: Sandbox, text: str = "all done"):  # type: ignore[no-untyped-def]
    """Turn 1 asks permission to run bash; turn 2 answers; turn 3 serves a follow-up."""
    return sb.script(
        [{"text": "working", "chunk_chars": 2}, {"tool_call": {"id": "c1", "name": "bash", "args": {"command": "echo ok > out.txt"}}}],
        [{"text": text, "chunk_chars": 3}],
        [{"text": "followed up"}],
    )


def test_the_fixed_api_on_the_daemon(daemon: Daemon, sandbox: Sandbox) -> None:
    async def main() -> None:
        client = await ShardClient.connect(home=sandbox.home)
        assert "unix-socket" in client.hello.capabilities
        agent_id = await client.create_agent(cwd=sandbox.work, script=gated_script(sandbox), name="sdk")
        assert agent_id.startswith("agent-")
        agents = await client.list_agents()
        assert [a.agent_id for a in agents] == [agent_id]
        assert agents[0].name == "sdk" and agents[0].cwd == str(sandbox.work)
        asked: list[PermissionRequest] = []

        def decide(req: PermissionRequest) -> str:
            asked.append(req)
            return "allow"

        session = await client.attach(agent_id, permission=decide)
        assert session.sync is not None and session.sync.status == "idle"
        events = [ev async for ev in session.prompt("run the tests and fix what fails")]
        assert events[-1].type == "turn_end"
        assert all(ev.agent_id == agent_id for ev in events)
        text = "".join(ev.text_delta or "" for ev in events if ev.type == "message_delta" and ev.kind == "text")
        assert text == "workingall done"
        assert [r.tool_name for r in asked] == ["bash"]
        assert (sandbox.work / "out.txt").read_text() == "ok\n"
        await client.close()
        assert client.conn.closed

    arun(main())


def test_a_second_client_shares_the_agent(daemon: Daemon, sandbox: Sandbox) -> None:
    async def main() -> None:
        a = await ShardClient.connect(home=sandbox.home)
        b = await ShardClient.connect(home=sandbox.home)
        agent_id = await a.create_agent(cwd=sandbox.work, script=gated_script(sandbox))
        a_callback = asyncio.Event()
        a_cancelled = asyncio.Event()

        async def slow_human(req: PermissionRequest) -> str:
            a_callback.set()
            try:
                await asyncio.Event().wait()  # never answers
            except asyncio.CancelledError:
                a_cancelled.set()
                raise
            return "deny"

        sa = await a.attach(agent_id, permission=slow_human)
        sb_ = await b.attach(agent_id, permission=lambda req: "allow")
        watch = sb_.events()
        events = [ev async for ev in sa.prompt("go")]
        # B answered; A saw the resolution and its pending callback was withdrawn.
        resolved = next(ev for ev in events if ev.type == "permission_resolved")
        assert resolved.choice_id == "allow" and resolved.source.startswith("client-")
        assert a_callback.is_set()
        await asyncio.wait_for(a_cancelled.wait(), 30)
        assert (sandbox.work / "out.txt").exists()
        # B saw the same stream, in the same order.
        seen = []
        async for ev in watch:
            seen.append(ev)
            if ev.type == "turn_end":
                break
        assert [e.to_dict() for e in seen] == [e.to_dict() for e in events]
        # An observer sees everything and answers nothing.
        c = await ShardClient.connect(home=sandbox.home)
        sc = await c.attach(agent_id, role="observer")
        assert sc.sync is not None and len(sc.sync.live_window.messages) >= 3
        with pytest.raises(ShardError) as e:
            async for _ in sc.prompt("observers may not prompt"):
                pass
        assert e.value.code == "PERMISSION_DENIED"
        for cl in (a, b, c):
            await cl.close()

    arun(main())


def test_steer_and_follow_up_while_busy(daemon: Daemon, sandbox: Sandbox) -> None:
    async def main() -> None:
        client = await ShardClient.connect(home=sandbox.home)
        agent_id = await client.create_agent(cwd=sandbox.work, script=gated_script(sandbox))
        gate = asyncio.Event()

        async def decide(req: PermissionRequest) -> str:
            await gate.wait()
            return "allow"

        session = await client.attach(agent_id, permission=decide)
        everything = session.events()
        turn = []
        async for ev in session.prompt("start"):
            turn.append(ev)
            if ev.type == "permission_request":
                # Busy: a plain prompt is refused; steer and follow_up are accepted.
                with pytest.raises(ShardError) as e:
                    async for _ in session.prompt("plain"):
                        pass
                assert e.value.code == "CONFLICT"
                assert await session.steer("a steer") is None
                await session.follow_up("a follow-up")
                gate.set()
        users = [ev.message.content[0].text for ev in turn if ev.type == "user_message"]
        assert users == ["start", "a steer"]
        # The follow-up runs as the next turn on its own (`everything` began before the
        # first turn, so it holds that turn first).
        later = []
        async for ev in everything:
            if ev.type == "turn_end" and ev.turn_id != turn[-1].turn_id:
                break
            later.append(ev)
        first_end = [e.type for e in later].index("turn_end")
        follow = [ev.message.content[0].text for ev in later[first_end:] if ev.type == "user_message"]
        assert follow == ["a follow-up"]
        await client.close()

    arun(main())


def test_typed_daemon_errors(daemon: Daemon, sandbox: Sandbox) -> None:
    async def main() -> None:
        client = await ShardClient.connect(home=sandbox.home)
        with pytest.raises(ShardError) as e:
            await client.attach("agent-00000000000000000000000000")
        assert e.value.code == "NOT_FOUND"
        with pytest.raises(ShardError) as e:
            await client.create_agent(cwd=sandbox.work, provider="no-such-provider")
        assert e.value.code == "INVALID_REQUEST" and "no-such-provider" in e.value.message
        assert await client.list_agents() == []
        agent_id = await client.create_agent(cwd=sandbox.work, script=gated_script(sandbox))
        session = await client.attach(agent_id)
        with pytest.raises(ShardError) as e:
            await client.attach(agent_id)
        assert e.value.code == "CONFLICT"
        await session.detach()
        with pytest.raises(ShardError) as e:
            await session.list_modes()
        assert e.value.code == "NOT_ATTACHED"
        with pytest.raises(ValueError):
            await client.call("agent.create", cwdd="/tmp")
        # The generic call reaches commands that have no method.
        assert (await client.call("agent.status", agent_id=agent_id))["agents"][0]["agent_id"] == agent_id
        await client.kill(agent_id)
        info = (await client.agent_status(agent_id))[0]
        assert info.runtime_state in ("stopped", "stopping")
        await client.close()

    arun(main())


def test_the_daemon_dying_breaks_the_connection(daemon: Daemon, sandbox: Sandbox) -> None:
    async def main() -> None:
        client = await ShardClient.connect(home=sandbox.home)
        script = sandbox.script([{"text": "started"}, {"delay_ms": 600000}])
        agent_id = await client.create_agent(cwd=sandbox.work, script=script)
        session = await client.attach(agent_id)
        with pytest.raises(ConnectionClosed) as e:
            async for ev in session.prompt("slow"):
                if ev.type == "message_delta":
                    daemon.kill9()
        assert e.value.code == "CONNECTION_CLOSED"
        with pytest.raises(ConnectionClosed):
            await client.list_agents()
        await client.close()

    arun(main())


def test_no_daemon_is_a_clear_error(shard_binary: str, sandbox: Sandbox) -> None:
    with pytest.raises(ShardError) as e:
        arun(ShardClient.connect(home=sandbox.home))
    assert e.value.code == "CONNECTION_CLOSED" and "shard daemon" in e.value.message


def test_workspaces_as_typed_methods(daemon: Daemon, sandbox: Sandbox) -> None:
    if shutil.which("git") is None:
        need("git is not installed")
    repo = sandbox.work
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)

    async def main() -> None:
        client = await ShardClient.connect(home=sandbox.home)
        script = sandbox.script([{"text": "hi"}])
        launched = await client.create_workspace(repo, label="sdk test", provider="scripted", model=str(script))
        ws = launched.workspace
        assert ws.workspace_id.startswith("ws-") and launched.agent_id.startswith("agent-")
        listed = await client.list_workspaces(repo)
        assert [w.workspace_id for g in listed.repositories for w in g.workspaces] == [ws.workspace_id]
        status = await client.workspace_status(ws.workspace_id)
        assert status.workspace.workspace_id == ws.workspace_id and not status.missing
        await client.kill(launched.agent_id)
        retired = await client.retire_workspace(ws.workspace_id, branch_disposition="keep")
        assert retired.workspace.lifecycle == "retired"
        await client.close()

    arun(main())
