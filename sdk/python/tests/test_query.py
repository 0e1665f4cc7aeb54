"""``query()`` and the direct ``shard agent`` connection against the real binary and the
scripted provider: streaming, permissions, UI requests and errors."""

from __future__ import annotations

import asyncio

import pytest
from conftest import Sandbox, arun

from shard_sdk import CallbackError, ShardClient, ShardError, query
from shard_sdk.wire import MessageDelta, PermissionRequest, TurnEnd, UiRequest


async def collect(**kwargs):  # type: ignore[no-untyped-def]
    return [ev async for ev in query(**kwargs)]


def bash_script(sb: Sandbox, command: str):  # type: ignore[no-untyped-def]
    return sb.script(
        [{"tool_call": {"id": "c1", "name": "bash", "args": {"command": command}}}],
        [{"text": "result: {{tool_result:c1}}"}],
    )


def test_query_streams_a_turn_and_ends_after_turn_end(shard_binary: str, sandbox: Sandbox) -> None:
    text = "Streaming through the SDK, one small piece at a time."
    script = sandbox.script([{"text": text, "chunk_chars": 3}, {"usage": {"input": 10, "output": 5}}])
    events = arun(collect(prompt="say it", cwd=sandbox.work, script=script, home=sandbox.home))
    types = [e.type for e in events]
    assert types[-1] == "turn_end", types
    assert types.count("turn_end") == 1
    assert types.index("turn_start") < types.index("message_delta")
    deltas = [e for e in events if e.type == "message_delta"]
    assert all(isinstance(e, MessageDelta) for e in deltas)
    assert len(deltas) == -(-len(text) // 3)
    assert "".join(e.text_delta for e in deltas) == text
    assert deltas[0].tool_name is None  # fields of other events read as None
    end = events[-1]
    assert isinstance(end, TurnEnd) and end.usage is not None and end.usage.input == 10
    user = next(e for e in events if e.type == "user_message")
    assert user.message.content[0].text == "say it"


def test_permission_allowed_by_a_sync_callback(shard_binary: str, sandbox: Sandbox) -> None:
    seen: list[PermissionRequest] = []

    def decide(req: PermissionRequest) -> str:
        seen.append(req)
        return "allow"

    script = bash_script(sandbox, "echo allowed > out.txt")
    events = arun(collect(prompt="write", cwd=sandbox.work, script=script, home=sandbox.home, permission=decide))
    assert (sandbox.work / "out.txt").read_text() == "allowed\n"
    assert len(seen) == 1
    req = seen[0]
    assert req.tool_name == "bash" and req.input == {"command": "echo allowed > out.txt"}
    assert req.request_id.startswith("req-")
    ids = [c.id for c in req.choices]
    assert "allow" in ids and "deny" in ids and all(c.label for c in req.choices)
    resolved = next(e for e in events if e.type == "permission_resolved")
    assert resolved.choice_id == "allow"
    result = next(e for e in events if e.type == "tool_result")
    assert not result.is_error


def test_permission_allowed_by_an_async_callback(shard_binary: str, sandbox: Sandbox) -> None:
    async def decide(req: PermissionRequest) -> str:
        await asyncio.sleep(0)
        return "allow"

    script = bash_script(sandbox, "echo async > out.txt")
    arun(collect(prompt="write", cwd=sandbox.work, script=script, home=sandbox.home, permission=decide))
    assert (sandbox.work / "out.txt").read_text() == "async\n"


def test_permission_denied_by_default_and_the_model_is_told(shard_binary: str, sandbox: Sandbox) -> None:
    script = bash_script(sandbox, "echo nope > out.txt")
    events = arun(collect(prompt="write", cwd=sandbox.work, script=script, home=sandbox.home))
    assert not (sandbox.work / "out.txt").exists()
    resolved = next(e for e in events if e.type == "permission_resolved")
    assert resolved.choice_id == "deny"
    result = next(e for e in events if e.type == "tool_result")
    assert result.is_error
    final = [e for e in events if e.type == "message_complete"][-1]
    assert "result:" in final.message.content[0].text and "den" in final.message.content[0].text.lower()
    assert events[-1].type == "turn_end"


def test_permission_denied_by_the_callback(shard_binary: str, sandbox: Sandbox) -> None:
    script = bash_script(sandbox, "echo nope > out.txt")
    arun(collect(prompt="w", cwd=sandbox.work, script=script, home=sandbox.home, permission=lambda r: "deny"))
    assert not (sandbox.work / "out.txt").exists()


def test_a_bad_callback_answer_denies_and_raises(shard_binary: str, sandbox: Sandbox) -> None:
    script = bash_script(sandbox, "echo nope > out.txt")
    with pytest.raises(CallbackError, match="'sure'"):
        arun(collect(prompt="w", cwd=sandbox.work, script=script, home=sandbox.home, permission=lambda r: "sure"))
    assert not (sandbox.work / "out.txt").exists()

    def boom(req: PermissionRequest) -> str:
        raise RuntimeError("callback bug")

    with pytest.raises(CallbackError, match="callback bug"):
        arun(collect(prompt="w", cwd=sandbox.work, script=script, home=sandbox.home, permission=boom))
    assert not (sandbox.work / "out.txt").exists()


@pytest.mark.parametrize(
    "args,answer,expect",
    [
        ({"question": "Which colour?", "options": ["red", "blue"]}, "blue", "blue"),
        ({"question": "Your name?", "kind": "input"}, "Ada", "Ada"),
        ({"question": "Proceed?", "kind": "confirm"}, "yes", "yes"),
        ({"question": "Commit message?", "kind": "editor", "prefill": "fix:"}, "fix: things\n\nbody", "fix: things"),
    ],
)
def test_ui_requests_go_through_the_callback(shard_binary: str, sandbox: Sandbox, args, answer, expect) -> None:  # type: ignore[no-untyped-def]
    seen: list[UiRequest] = []

    def ui(req: UiRequest) -> str:
        seen.append(req)
        return answer

    script = sandbox.script(
        [{"tool_call": {"id": "ask", "name": "ask_user", "args": args}}],
        [{"text": "answer: {{tool_result:ask}}"}],
    )
    events = arun(collect(prompt="ask me", cwd=sandbox.work, script=script, home=sandbox.home, ui=ui))
    assert len(seen) == 1 and seen[0].message == args["question"]
    assert seen[0].kind == args.get("kind", "select")
    if "options" in args:
        assert seen[0].options == args["options"]
    final = [e for e in events if e.type == "message_complete"][-1]
    assert expect in final.message.content[0].text


def test_ui_request_dismissed_without_a_callback(shard_binary: str, sandbox: Sandbox) -> None:
    script = sandbox.script(
        [{"tool_call": {"id": "ask", "name": "ask_user", "args": {"question": "Pick", "options": ["a", "b"]}}}],
        [{"text": "answer: {{tool_result:ask}}"}],
    )
    events = arun(collect(prompt="ask", cwd=sandbox.work, script=script, home=sandbox.home))
    resolved = next(e for e in events if e.type == "ui_resolved")
    assert resolved.value is None
    assert events[-1].type == "turn_end"


def test_provider_error_is_an_event_and_the_turn_still_ends(shard_binary: str, sandbox: Sandbox) -> None:
    script = sandbox.script([{"text": "partial"}, {"error": "slow down", "kind": "rate_limited"}])
    events = arun(collect(prompt="x", cwd=sandbox.work, script=script, home=sandbox.home))
    err = next(e for e in events if e.type == "error")
    assert err.code == "PROVIDER_ERROR" and err.kind == "rate_limited"
    assert err.message == "slow down" and not err.fatal
    assert events[-1].type == "turn_end"


def test_start_failures_raise_shard_error(shard_binary: str, sandbox: Sandbox) -> None:
    with pytest.raises(ShardError) as e:
        arun(collect(prompt="x", cwd=sandbox.work, provider="no-such-provider", home=sandbox.home))
    assert e.value.code == "INVALID_REQUEST" and "no-such-provider" in e.value.message

    with pytest.raises(ShardError) as e:
        arun(collect(prompt="x", cwd=sandbox.work, script=sandbox.script([]), home=sandbox.home,
                     shard_binary=sandbox.root / "missing"))
    assert e.value.code == "BINARY_NOT_FOUND"


def test_a_failed_command_raises_with_code_and_message(shard_binary: str, sandbox: Sandbox) -> None:
    async def main() -> None:
        script = sandbox.script([{"text": "a"}, {"delay_ms": 60000}], [{"text": "b"}])
        client = await ShardClient.spawn(cwd=sandbox.work, script=script, home=sandbox.home)
        try:
            first = client.agent.prompt("one")
            assert (await first.__anext__()).type in ("status", "turn_start")
            with pytest.raises(ShardError) as e:
                async for _ in client.agent.prompt("two"):
                    pass
            assert e.value.code == "CONFLICT" and "busy" in e.value.message
            with pytest.raises(ShardError) as e:
                await client.agent.set_mode("no-such-mode")
            assert e.value.code in ("INVALID_REQUEST", "NOT_FOUND") and e.value.message
            await first.aclose()
        finally:
            await client.close()

    arun(main())


def test_typed_commands_on_a_direct_agent(shard_binary: str, sandbox: Sandbox) -> None:
    async def main() -> None:
        script = sandbox.script([{"text": "one"}], [{"text": "two"}])
        client = await ShardClient.spawn(cwd=sandbox.work, script=script, home=sandbox.home)
        try:
            agent = client.agent
            assert client.hello.protocol_version == "0.1.0"
            modes = await agent.list_modes()
            assert {m.name for m in modes.modes} >= {"build", "plan"} and modes.active == "build"
            changed = await agent.set_mode("plan")
            assert changed.mode == "plan" and changed.previous_mode == "build"
            models = await agent.list_models()
            assert models.active.provider == "scripted"
            result = await agent.run("first")
            assert result.text == "one" and result.turn_id and result.usage is not None
            sessions = await agent.sessions()
            assert len(sessions.sessions) == 1 and sessions.sessions[0].current
            snap = await agent.request_sync()
            assert snap.status == "idle" and len(snap.live_window.messages) == 2
            first_id = snap.live_window.messages[0].id
            fork = await agent.fork(from_entry_id=first_id)
            assert fork.session_id.startswith("sess-") and fork.fork_id
            again = await agent.run("second")
            assert again.text == "two"
        finally:
            await client.close()
        assert client.conn.transport.proc.returncode == 0

    arun(main())


def test_compaction_and_history(shard_binary: str, sandbox: Sandbox) -> None:
    async def main() -> None:
        script = sandbox.script([{"text": "one " * 50}], [{"text": "two " * 50}], [{"text": "SUMMARY"}])
        client = await ShardClient.spawn(cwd=sandbox.work, script=script, home=sandbox.home)
        try:
            agent = client.agent
            await agent.run("a")
            await agent.run("b")
            with pytest.raises(ShardError) as e:
                await agent.compact(keep_recent_tokens=0)
            assert e.value.code == "INVALID_REQUEST"
            done = await agent.compact(keep_recent_tokens=1)
            assert done.compacted and done.tokens_after < done.tokens_before
            snap = await agent.request_sync()
            first = snap.live_window.messages[0]
            assert "earlier part of this conversation" in first.content[0].text
            page = await agent.history(snap.live_window.messages[1].id)
            assert [m.id for m in page.messages] == [first.id] and page.truncated_before is None
        finally:
            await client.close()

    arun(main())
