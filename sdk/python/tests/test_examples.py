"""The examples run end to end (offline, scripted provider), so they cannot rot."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import SDK, Daemon, Sandbox

EXAMPLES = SDK / "examples"


def run_example(name: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, PYTHONPATH=str(SDK / "src"), **env)
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], env=full, capture_output=True, text=True, timeout=300
    )


def test_ci_fixer(shard_binary: str, sandbox: Sandbox) -> None:
    repo = sandbox.work
    (repo / "value.txt").write_text("broken\n")
    script = sandbox.script(
        [{"tool_call": {"id": "w", "name": "write", "args": {"path": "value.txt", "content": "fixed\n"}}}],
        [{"tool_call": {"id": "x", "name": "bash", "args": {"command": "curl https://example.com"}}}],
        [{"tool_call": {"id": "t", "name": "bash", "args": {"command": "grep -q fixed value.txt"}}}],
        [{"text": "fixed it"}],
    )
    r = run_example("ci_fixer.py", "--repo", str(repo), "--test", "grep -q fixed value.txt", "--script", str(script),
                    env={"SHARD_HOME": str(sandbox.home)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert (repo / "value.txt").read_text() == "fixed\n"
    assert "round 1: tests fail" in r.stdout and "tests pass (after 1 fix round(s))" in r.stdout
    assert "denied bash" in r.stderr and "curl" in r.stderr


def test_batch_refactor(daemon: Daemon, sandbox: Sandbox) -> None:
    repos = []
    for name in ("svc-a", "svc-b"):
        repo = sandbox.root / name
        repo.mkdir()
        (repo / "code.txt").write_text("fetch_user()\n")
        repos.append(repo)
    child = sandbox.script(
        [{"tool_call": {"id": "e", "name": "edit", "args": {"path": "code.txt", "old_string": "fetch_user", "new_string": "load_user"}}}],
        [{"text": "renamed"}],
    )
    parent = sandbox.script(
        [{"tool_call": {"id": "s", "name": "subagent", "args": {
            "action": "create", "strategy": "parallel", "model": str(child),
            "tasks": [{"name": "general", "task": "rename in code.txt"}]}}}],
        [{"text": "delegated"}],
        [{"text": "all renamed"}],
    )
    r = run_example("batch_refactor.py", "--task", "rename fetch_user to load_user", "--script", str(parent),
                    "--home", str(sandbox.home), *map(str, repos), env={})
    assert r.returncode == 0, r.stdout + r.stderr
    for repo in repos:
        assert (repo / "code.txt").read_text() == "load_user()\n", r.stdout + r.stderr
        assert f"{repo}: agent-" in r.stdout
    assert r.stdout.count("-> completed") == 2
    assert r.stdout.count("all renamed") == 2


def test_eval_loop(shard_binary: str, sandbox: Sandbox) -> None:
    fixture = sandbox.root / "fixture"
    fixture.mkdir()
    (fixture / "answer.txt").write_text("?\n")
    good = sandbox.script(
        [{"tool_call": {"id": "w", "name": "write", "args": {"path": "answer.txt", "content": "42\n"}}}],
        [{"text": "done"}, {"usage": {"input": 7, "output": 3}}],
    )
    lazy = sandbox.script([{"text": "no idea"}])
    tasks = sandbox.root / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(t) for t in [
        {"id": "solves", "prompt": "write 42 to answer.txt", "check": "grep -qx 42 answer.txt", "script": str(good)},
        {"id": "gives-up", "prompt": "write 42 to answer.txt", "check": "grep -qx 42 answer.txt", "script": str(lazy)},
    ]))
    out = sandbox.root / "results.jsonl"
    r = run_example("eval_loop.py", str(tasks), "--fixture", str(fixture), "--out", str(out), env={})
    assert r.returncode == 1, r.stdout + r.stderr  # one task fails its check
    results = {x["id"]: x for x in map(json.loads, out.read_text().splitlines())}
    assert results["solves"]["passed"] and results["solves"]["tool_calls"] == 1
    assert results["solves"]["usage"]["input"] == 7
    assert not results["gives-up"]["passed"] and results["gives-up"]["error"] is None
    assert "1/2 passed" in r.stdout
    assert (fixture / "answer.txt").read_text() == "?\n"  # the fixture itself is untouched
