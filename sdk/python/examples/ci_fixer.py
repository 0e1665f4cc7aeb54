#!/usr/bin/env python3
"""A CI fixer: run the tests; while they fail, hand the failure to an agent and run again.

    python3 ci_fixer.py --repo . --test "cargo test -q" --model anthropic/claude-sonnet-4-5

The agent may edit files in the repository and run the test command itself; every other
command is refused (the model is told so and works around it). Exit status: 0 once the
tests pass, 1 when they still fail after --attempts rounds.

``--script FILE`` runs the offline ``scripted`` provider instead of a model (a demo).
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import subprocess
import sys

from shard_sdk import PermissionRequest, ShardError, query


def run_tests(repo: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, shell=True, cwd=repo, capture_output=True, text=True)


def make_policy(test_command: str):  # type: ignore[no-untyped-def]
    """Allows edits and the test command itself; denies any other command."""
    allowed = shlex.split(test_command)

    def decide(req: PermissionRequest) -> str:
        if req.tool_name in ("edit", "write"):
            return "allow"
        if req.tool_name == "bash":
            cmd = (req.input or {}).get("command", "")
            try:
                words = shlex.split(cmd)
            except ValueError:
                return "deny"
            if words[: len(allowed)] == allowed and not any(c in cmd for c in ";&|`$<>"):
                return "allow"
        print(f"  denied {req.tool_name}: {req.input}", file=sys.stderr)
        return "deny"

    return decide


async def fix(args: argparse.Namespace) -> int:
    for attempt in range(1, args.attempts + 1):
        result = run_tests(args.repo, args.test)
        if result.returncode == 0:
            print(f"tests pass (after {attempt - 1} fix round(s))")
            return 0
        output = (result.stdout + result.stderr)[-args.max_log :]
        print(f"round {attempt}: tests fail (exit {result.returncode}); asking the agent")
        prompt = (
            f"The test command `{args.test}` fails in this repository. Its output ends with:\n\n"
            f"```\n{output}\n```\n\nFind the cause and fix the code (not the tests, unless a test "
            f"is clearly wrong). You may run `{args.test}` to check your fix."
        )
        try:
            async for ev in query(
                prompt, cwd=args.repo, model=args.model, provider=args.provider, script=args.script,
                permission=make_policy(args.test), timeout=args.turn_timeout,
            ):
                if ev.type == "tool_call":
                    print(f"  tool {ev.name}")
                elif ev.type == "error":
                    print(f"  error {ev.code}: {ev.message}", file=sys.stderr)
                elif ev.type == "turn_end" and ev.usage is not None:
                    print(f"  turn used {ev.usage.input} input / {ev.usage.output} output tokens")
        except ShardError as e:
            print(f"the agent failed: {e.code}: {e.message}", file=sys.stderr)
            return 1
    final = run_tests(args.repo, args.test)
    print("tests pass" if final.returncode == 0 else f"tests still fail after {args.attempts} round(s)")
    return 0 if final.returncode == 0 else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", default=".")
    p.add_argument("--test", required=True, help="the test command, e.g. 'pytest -q'")
    p.add_argument("--model")
    p.add_argument("--provider")
    p.add_argument("--script", help="offline scripted provider script (demo)")
    p.add_argument("--attempts", type=int, default=3)
    p.add_argument("--turn-timeout", type=float, default=1800)
    p.add_argument("--max-log", type=int, default=8000)
    return asyncio.run(fix(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
