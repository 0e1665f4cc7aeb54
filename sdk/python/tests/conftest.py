"""Fixtures: the real ``shard`` binary, temporary homes, scripted-provider scripts, and a
real ``shard daemon``.

Tests that need something missing skip with the reason, and fail instead when
``SHARD_TEST_REQUIRE_ALL=1`` (CI sets it), so nothing is skipped there by accident.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, TypeVar

import pytest

HERE = Path(__file__).resolve().parent
SDK = HERE.parent
REPO = SDK.parent.parent
sys.path.insert(0, str(SDK / "src"))
sys.path.insert(0, str(SDK / "scripts"))

T = TypeVar("T")

WAIT = 60.0
"""Generous: the machine is shared; tests wait for events, never for time."""


def need(reason: str) -> None:
    """Skips the test for a missing prerequisite, or fails it in CI."""
    if os.environ.get("SHARD_TEST_REQUIRE_ALL") == "1":
        pytest.fail(f"required but missing: {reason}")
    pytest.skip(reason)


def arun(coro: Awaitable[T], timeout: float = 120.0) -> T:
    """Runs a test coroutine on a fresh loop, bounded so a hang fails instead of blocking."""
    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


@pytest.fixture(scope="session")
def shard_binary() -> str:
    b = os.environ.get("SHARD_BINARY")
    if not b:
        local = REPO / "target" / "debug" / "shard"
        if local.is_file():
            b = str(local)
    if not b or not os.access(b, os.X_OK):
        need("no shard binary: set SHARD_BINARY (cargo build -p shard-cli)")
    os.environ["SHARD_BINARY"] = b  # query() and spawn() find it the documented way
    return b


class Sandbox:
    """A temporary SHARD_HOME and working directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.work = root / "work"
        self.home.mkdir(mode=0o700)
        self.work.mkdir()
        self._n = 0

    def script(self, *turns: list[dict[str, Any]]) -> Path:
        """Writes a scripted-provider script, one list of steps per model call."""
        self._n += 1
        p = self.root / f"script{self._n}.json"
        p.write_text(json.dumps({"turns": [{"steps": t} for t in turns]}))
        return p

    def config(self, text: str) -> None:
        (self.home / "config.toml").write_text(text)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


class Daemon:
    """A real ``shard daemon`` on a sandbox's home (web door on a free port)."""

    def __init__(self, binary: str, sb: Sandbox, *extra: str) -> None:
        self.binary = binary
        self.sb = sb
        env = dict(os.environ, SHARD_HOME=str(sb.home))
        env.pop("ANTHROPIC_API_KEY", None)
        env.pop("OPENAI_API_KEY", None)
        self.proc = subprocess.Popen(
            [binary, "daemon", "--port", "0", *extra],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.log = sb.root / "daemon.log"
        self.url: str | None = None
        ready = threading.Event()

        def drain() -> None:
            assert self.proc.stderr is not None
            with open(self.log, "ab") as f:
                for line in self.proc.stderr:
                    f.write(line)
                    f.flush()
                    text = line.decode("utf-8", "replace")
                    if "shard daemon serving" in text:
                        self.url = text.rsplit(" ", 1)[-1].strip()
                    if "listening on" in text or "serving" in text:
                        if self.url and (sb.home / "daemon.sock").exists():
                            ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if ready.wait(0.05) and self.url:
                break
            if self.proc.poll() is not None:
                break
        if self.proc.poll() is not None or not (sb.home / "daemon.sock").exists() or not self.url:
            raise RuntimeError(f"the daemon did not start; log:\n{self.log.read_text(errors='replace')}")

    def web_enroll_url(self) -> str:
        env = dict(os.environ, SHARD_HOME=str(self.sb.home))
        out = subprocess.run(
            [self.binary, "web"], env=env, capture_output=True, text=True, timeout=WAIT, check=True
        )
        return out.stdout.strip().splitlines()[-1]

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(WAIT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(WAIT)


@pytest.fixture
def daemon(shard_binary: str, sandbox: Sandbox):  # type: ignore[no-untyped-def]
    d = Daemon(shard_binary, sandbox)
    try:
        yield d
    finally:
        d.stop()
