#!/usr/bin/env python3
"""An evaluation loop: run every task of a JSONL file on a fresh copy of a fixture
directory, check the result with the task's own command, and report the pass rate.

    python3 eval_loop.py tasks.jsonl --fixture ./fixture --model anthropic/claude-sonnet-4-5 -j 4

Each line of tasks.jsonl: ``{"id": "t1", "prompt": "...", "check": "pytest -q tests/test_x.py"}``
(optional ``"script"``: a scripted-provider file, for offline runs). The agent may edit
and write files and run commands (the copy is thrown away); the check decides. Results go
to --out as JSON lines, with the turn's token usage and wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shard_sdk import ShardError, ShardTimeout, query


async def run_task(task: dict, args: argparse.Namespace, gate: asyncio.Semaphore) -> dict:
    async with gate:
        work = Path(tempfile.mkdtemp(prefix=f"eval-{task['id']}-"))
        home = Path(tempfile.mkdtemp(prefix="eval-home-"))
        try:
            if args.fixture:
                shutil.copytree(args.fixture, work, dirs_exist_ok=True)
            started = time.monotonic()
            usage, tools, error = None, 0, None
            try:
                async for ev in query(
                    task["prompt"], cwd=work, model=args.model, provider=args.provider,
                    script=task.get("script"), home=home,
                    permission=lambda req: "allow",  # a throwaway copy: let it work
                    timeout=args.timeout,
                ):
                    if ev.type == "tool_call":
                        tools += 1
                    elif ev.type == "turn_end":
                        usage = ev.usage.to_dict() if ev.usage is not None else None
            except ShardTimeout:
                error = "timeout"
            except ShardError as e:
                error = f"{e.code}: {e.message}"
            check = await asyncio.to_thread(
                subprocess.run, task["check"], shell=True, cwd=work, capture_output=True, text=True
            )
            return {
                "id": task["id"], "passed": error is None and check.returncode == 0, "error": error,
                "check_exit": check.returncode, "tool_calls": tools, "usage": usage,
                "seconds": round(time.monotonic() - started, 3),
            }
        finally:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(home, ignore_errors=True)


async def main_async(args: argparse.Namespace) -> int:
    tasks = [json.loads(line) for line in Path(args.tasks).read_text().splitlines() if line.strip()]
    gate = asyncio.Semaphore(args.jobs)
    results = await asyncio.gather(*(run_task(t, args, gate) for t in tasks))
    with open(args.out, "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    passed = sum(r["passed"] for r in results)
    tokens = sum((r["usage"] or {}).get("input", 0) + (r["usage"] or {}).get("output", 0) for r in results)
    for r in results:
        print(f"{r['id']}: {'PASS' if r['passed'] else 'FAIL'}" + (f" ({r['error']})" if r["error"] else ""))
    print(f"{passed}/{len(results)} passed, {tokens} tokens; details in {args.out}")
    return 0 if passed == len(results) else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tasks")
    p.add_argument("--fixture", help="directory copied fresh for every task")
    p.add_argument("--model")
    p.add_argument("--provider")
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--out", default="eval-results.jsonl")
    return asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
