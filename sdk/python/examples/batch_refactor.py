#!/usr/bin/env python3
"""A batch refactor over many repositories, each agent fanning its work out to subagents.

    shard daemon &          # the agents live in the daemon
    python3 batch_refactor.py --task "Rename fetch_user to load_user everywhere" \\
        --model anthropic/claude-sonnet-4-5 --concurrency 3 ~/src/svc-a ~/src/svc-b ~/src/svc-c

For each repository the script creates an agent on the daemon (``--workspace``: in a fresh
git worktree and branch, so the checkout is untouched), asks it to split the change with
its ``subagent`` tool, and follows the children: their run changes reach the parent's
session, and their permission requests — delegated to the nearest attached ancestor — are
answered by the parent session's callback. At the end it prints each repository's outcome.

``--script FILE`` runs the offline ``scripted`` provider instead of a model (a demo).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass, field

from shard_sdk import PermissionRequest, ShardClient, ShardError

def policy(req: PermissionRequest) -> str:
    """Edits are what a refactor is; `git diff`/`git status` let agents check their work.
    Anything else is refused."""
    if req.tool_name in ("edit", "write"):
        return "allow"
    if req.tool_name == "bash":
        cmd = str((req.input or {}).get("command", "")).strip()
        if cmd in ("git diff", "git status", "git diff --stat"):
            return "allow"
    return "deny"


@dataclass
class Outcome:
    repo: str
    agent_id: str = ""
    answer: str = ""
    runs: dict[str, str] = field(default_factory=dict)
    error: str = ""


async def refactor(client: ShardClient, repo: str, args: argparse.Namespace, gate: asyncio.Semaphore) -> Outcome:
    out = Outcome(repo)
    async with gate:
        try:
            if args.workspace:
                launched = await client.create_workspace(
                    repo, label="batch refactor", model=args.model or (os.path.abspath(args.script) if args.script else None),
                    provider="scripted" if args.script else args.provider,
                )
                out.agent_id = launched.agent_id
            else:
                out.agent_id = await client.create_agent(
                    repo, args.model, provider=args.provider, script=args.script, name="batch refactor"
                )
            session = await client.attach(out.agent_id, permission=policy)
            events = session.events()  # everything from here on: this turn, children, reports
            prompt = (
                f"{args.task}\n\nSplit the work with the `subagent` tool: one child per independent "
                "part of the code (strategy `parallel`), then check the combined result."
            )
            async for _ in session.prompt(prompt, timeout=args.turn_timeout):
                pass  # `events` sees the same stream
            await follow(events, out, args.turn_timeout)
            await client.kill(out.agent_id)
        except ShardError as e:
            out.error = f"{e.code}: {e.message}"
        except asyncio.TimeoutError:
            out.error = "timed out waiting for the subagents"
    return out


async def follow(events, out: Outcome, timeout: float) -> None:  # type: ignore[no-untyped-def]
    """Reads the parent's events (its first turn included) until every child the parent
    launched has reported back and the parent finished the turn that took the report.

    Runs come from the `subagent` tool's result; each finished run reaches the parent as a
    user message starting with ``[subagent report]`` (docs/subagents.md)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    subagent_calls: set[str] = set()
    expected: set[str] = set()
    reports = 0
    turns_done = 0
    busy = True
    async with events:
        while True:
            if not busy and turns_done and reports >= len(expected):
                return
            ev = await asyncio.wait_for(events.__anext__(), max(deadline - loop.time(), 0))
            t = ev.type
            if t == "tool_call" and ev.name == "subagent" and (ev.args or {}).get("action") == "create":
                subagent_calls.add(ev.tool_call_id)
            elif t == "tool_result" and ev.tool_call_id in subagent_calls and not ev.is_error:
                created = json.loads(ev.content.text) if ev.content.kind == "text" else ev.content.value
                expected |= {r["run_id"] for r in created.get("runs", [])}
            elif t == "subagent_run_changed":
                out.runs[ev.run_id] = ev.state
                print(f"  {os.path.basename(out.repo)}: {ev.alias or ev.run_id} {ev.previous_state} -> {ev.state}")
            elif t == "user_message":
                busy = True
                text = "".join(b.text for b in ev.message.content if b.type == "text")
                if text.startswith("[subagent report]"):
                    reports += 1
            elif t == "turn_start":
                busy = True
            elif t == "turn_end":
                busy = False
                turns_done += 1
            elif t == "message_complete" and ev.message.role == "assistant":
                texts = [b.text for b in ev.message.content if b.type == "text"]
                if texts:
                    out.answer = "".join(texts)


async def main_async(args: argparse.Namespace) -> int:
    client = await ShardClient.connect(home=args.home)
    gate = asyncio.Semaphore(args.concurrency)
    try:
        outcomes = await asyncio.gather(*(refactor(client, r, args, gate) for r in args.repos))
    finally:
        await client.close()
    failed = 0
    for o in outcomes:
        runs = ", ".join(f"{s}" for s in o.runs.values()) or "no subagents"
        if o.error:
            failed += 1
            print(f"{o.repo}: FAILED {o.error}")
        else:
            print(f"{o.repo}: {o.agent_id} ({runs}): {o.answer.strip()[:200]}")
    return 1 if failed else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("repos", nargs="+")
    p.add_argument("--task", required=True)
    p.add_argument("--model")
    p.add_argument("--provider")
    p.add_argument("--script", help="offline scripted provider script (demo)")
    p.add_argument("--home", help="SHARD_HOME of the daemon (default: $SHARD_HOME or ~/.shard)")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--workspace", action="store_true", help="work in a new git worktree per repository")
    p.add_argument("--turn-timeout", type=float, default=3600)
    return asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
