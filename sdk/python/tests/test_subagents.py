"""Subagent jobs seen from the SDK: a parent delegates, the child's permission request is
answered by the parent's session callback, run changes reach the parent's session, and
``subagent.*`` stays reserved to the parent's own Runtime."""

from __future__ import annotations

from conftest import Daemon, Sandbox, arun

import pytest
from shard_sdk import PermissionRequest, ShardClient, ShardError


def test_a_parent_delegates_and_its_session_answers_the_child(daemon: Daemon, sandbox: Sandbox) -> None:
    child_script = sandbox.script(
        [{"tool_call": {"id": "c1", "name": "bash", "args": {"command": "echo child-output > child.txt"}}}],
        [{"text": "child done"}],
    )
    parent_script = sandbox.script(
        [{"tool_call": {"id": "call-1", "name": "subagent",
                        "args": {"action": "create", "task": "write child.txt", "model": str(child_script)}}}],
        [{"text": "launched"}],
        [{"text": "noted the report"}],
    )

    async def main() -> None:
        client = await ShardClient.connect(home=sandbox.home)
        parent = await client.create_agent(cwd=sandbox.work, script=parent_script)
        asked: list[PermissionRequest] = []

        def decide(req: PermissionRequest) -> str:
            asked.append(req)
            return "allow"

        session = await client.attach(parent, permission=decide)
        everything = session.events()
        first = [ev async for ev in session.prompt("delegate")]
        result = next(ev for ev in first if ev.type == "tool_result")
        assert not result.is_error and "job-" in str(result.content.to_dict())
        # The report of the finished child wakes the parent for another turn.
        runs = []
        async for ev in everything:
            if ev.type == "subagent_run_changed":
                runs.append(ev)
            if ev.type == "message_complete" and ev.message.content[0].text == "noted the report":
                break
        assert (sandbox.work / "child.txt").read_text() == "child-output\n"
        child_id = asked[0].agent_id
        assert [r.tool_name for r in asked] == ["bash"] and child_id != parent
        assert runs and all(r.parent_agent_id == parent and r.agent_id == child_id for r in runs)
        assert runs[-1].state == "completed"
        children = await client.children(parent)
        assert [c.agent_id for c in children] == [child_id]
        # subagent.* is the parent Runtime's own door: a client is refused.
        with pytest.raises(ShardError) as e:
            await client.subagent_status(parent)
        assert e.value.code == "PERMISSION_DENIED"
        await client.close()

    arun(main())
