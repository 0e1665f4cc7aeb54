#!/usr/bin/env python3
"""Benchmarks of the Python SDK (sdk/python).

1. Overhead of ``query()`` over a raw ``shard agent`` pipe on the end-to-end task of
   bench/e2e/run.py (a mock Anthropic server streams read → bash → a 2,000-word answer):
   the same task, driven alternately by a minimal raw client (Popen, readline, answer the
   one permission request, stop at turn_end) and by ``shard_sdk.query``; wall time from
   spawn to the agent's exit, and the driver's own CPU time.
2. Events per second through ``session.prompt``:
   (a) end to end: a real ``shard daemon`` and scripted Runtime streaming N deltas to an
       attached ``ShardClient`` (bounded by what the Runtime and daemon produce on the
       same cores);
   (b) the SDK alone: the same recorded event lines replayed as fast as a socket carries
       them by a peer process, so the figure is the SDK's own consumption rate.

Usage: bench/python-sdk/run.py [path/to/shard] [runs] [deltas]
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "sdk" / "python" / "src"))

from shard_sdk import ShardClient, query  # noqa: E402


def load_e2e():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_e2e", ROOT / "bench" / "e2e" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


# ----- 1. query() against a raw pipe ---------------------------------------------------------
def raw_pipe(binary: str, work: str, env: dict[str, str]) -> None:
    p = subprocess.Popen(
        [binary, "agent", "--cwd", work, "--provider", "anthropic", "--model", "claude-sonnet-4-5"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )
    assert p.stdin and p.stdout
    p.stdin.write(b'{"type":"prompt","id":"p","message":"summarize notes.txt"}\n')
    p.stdin.flush()
    for line in p.stdout:
        if b'"permission_request"' in line:
            req = json.loads(line)
            p.stdin.write(json.dumps({"type": "permission_response", "id": "a", "request_id": req["request_id"], "choice_id": "allow"}).encode() + b"\n")
            p.stdin.flush()
        elif b'"turn_end"' in line:
            break
    p.stdin.close()
    p.stdout.read()
    p.wait()


async def sdk_query(binary: str, work: str, env: dict[str, str]) -> None:
    async for _ev in query("summarize notes.txt", cwd=work, provider="anthropic", model="claude-sonnet-4-5",
                           permission=lambda req: "allow", shard_binary=binary, env=env):
        pass


def bench_query(binary: str, runs: int) -> dict[str, float]:
    e2e = load_e2e()
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), e2e.Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tmp = tempfile.mkdtemp(prefix="shard-pysdk-")
    home, work = os.path.join(tmp, "home"), os.path.join(tmp, "work")
    os.makedirs(home)
    os.makedirs(work)
    Path(work, "notes.txt").write_text("remember to benchmark\n" * 20)
    env = dict(os.environ, SHARD_HOME=home, ANTHROPIC_API_KEY="sk-bench",
               ANTHROPIC_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}")
    env.pop("OPENAI_API_KEY", None)
    raw_wall, raw_cpu, sdk_wall, sdk_cpu = [], [], [], []
    loop = asyncio.new_event_loop()
    for i in range(runs + 2):  # two warm-up rounds, then alternate A/B
        for which in ("raw", "sdk"):
            c0, t0 = time.process_time(), time.perf_counter()
            if which == "raw":
                raw_pipe(binary, work, env)
            else:
                loop.run_until_complete(sdk_query(binary, work, env))
            wall, cpu = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
            if i >= 2:
                (raw_wall if which == "raw" else sdk_wall).append(wall)
                (raw_cpu if which == "raw" else sdk_cpu).append(cpu)
    loop.close()
    server.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "raw_wall_ms": statistics.median(raw_wall), "sdk_wall_ms": statistics.median(sdk_wall),
        "raw_cpu_ms": statistics.median(raw_cpu), "sdk_cpu_ms": statistics.median(sdk_cpu),
        "raw_wall_min": min(raw_wall), "sdk_wall_min": min(sdk_wall),
    }


# ----- 2. events per second ------------------------------------------------------------------
def start_daemon(binary: str, home: str) -> subprocess.Popen[bytes]:
    p = subprocess.Popen([binary, "daemon", "--port", "0"], env=dict(os.environ, SHARD_HOME=home),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert p.stderr
    for line in p.stderr:
        if b"listening on" in line:
            break
    threading.Thread(target=lambda: p.stderr.read(), daemon=True).start()  # type: ignore[union-attr]
    return p


async def daemon_stream(binary: str, deltas: int, runs: int) -> tuple[list[float], list[float], list[bytes]]:
    tmp = tempfile.mkdtemp(prefix="shard-pysdk-ev-")
    home, work = os.path.join(tmp, "home"), os.path.join(tmp, "work")
    os.makedirs(home, mode=0o700)
    os.makedirs(work)
    script = os.path.join(tmp, "s.json")
    turn = {"steps": [{"text": "abcdefgh", "repeat": deltas}]}
    Path(script).write_text(json.dumps({"turns": [turn]}))
    d = start_daemon(binary, home)
    rates: list[float] = []
    cpu_rates: list[float] = []
    recorded: list[bytes] = []
    try:
        client = await ShardClient.connect(home=home)
        for i in range(runs + 1):
            # A fresh agent each run: a long conversation would be compacted, which costs
            # a model call of its own.
            agent = await client.create_agent(cwd=work, script=script)
            session = await client.attach(agent)
            n = 0
            t0, c0 = time.perf_counter(), time.process_time()
            async for ev in session.prompt("stream"):
                if ev.type == "message_delta":
                    n += 1
                if i == 0:
                    recorded.append(json.dumps(ev.to_dict(), separators=(",", ":")).encode())
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            if n != deltas:
                raise SystemExit(f"expected {deltas} deltas, got {n}")
            if i > 0:
                rates.append(n / dt)
                cpu_rates.append(n / dc)
            await client.kill(agent)
        await client.close()
    finally:
        d.terminate()
        d.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return rates, cpu_rates, recorded


REPLAY = r'''
import json, socket, sys
path, lines_file = sys.argv[1], sys.argv[2]
body = open(lines_file, "rb").read()
srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(1)
print("ready", flush=True)
conn, _ = srv.accept()
conn.sendall(b'{"type":"hello","protocol_version":"0.1.0","server_version":"replay","capabilities":[]}\n')
buf = b""
while True:
    data = conn.recv(65536)
    if not data:
        break
    buf += data
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        cmd = json.loads(line)
        resp = {"type": "response", "id": cmd["id"], "command": cmd["type"], "success": True}
        out = [json.dumps(resp).encode() + b"\n"]
        if cmd["type"] == "agent.attach":
            out.append(json.dumps({"type": "sync", "agent_id": cmd["agent_id"], "status": "idle", "mode": "build",
                                   "live_window": {"messages": []}, "pending_requests": []}).encode() + b"\n")
        elif cmd["type"] == "prompt":
            out.append(body)
        conn.sendall(b"".join(out))
'''


async def replay_stream(recorded: list[bytes], runs: int) -> tuple[list[float], list[float]]:
    tmp = tempfile.mkdtemp(prefix="shard-pysdk-replay-")
    sock = os.path.join(tmp, "daemon.sock")
    lines = os.path.join(tmp, "lines.jsonl")
    Path(lines).write_bytes(b"\n".join(recorded) + b"\n")
    deltas = sum(1 for r in recorded if b'"message_delta"' in r)
    rates, cpu_rates = [], []
    try:
        for _ in range(runs):
            p = subprocess.Popen([sys.executable, "-c", REPLAY, sock, lines], stdout=subprocess.PIPE)
            assert p.stdout
            p.stdout.readline()
            client = await ShardClient.connect(home=tmp)
            agent_id = json.loads(recorded[0]).get("agent_id") or "agent-x"
            session = await client.attach(agent_id)
            n = 0
            t0, c0 = time.perf_counter(), time.process_time()
            async for ev in session.prompt("stream"):
                if ev.type == "message_delta":
                    n += 1
            rates.append(n / (time.perf_counter() - t0))
            cpu_rates.append(n / (time.process_time() - c0))
            assert n == deltas
            await client.close()
            p.wait()
            os.unlink(sock)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rates, cpu_rates


def main() -> None:
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target" / "release" / "shard")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    # Under the daemon's per-client queue cap (65,536 messages): a consumer slower than the
    # Runtime on a loaded machine must not be dropped as CLIENT_TOO_SLOW mid-measurement.
    deltas = int(sys.argv[3]) if len(sys.argv) > 3 else 50_000
    print(f"python {sys.version.split()[0]}, binary {binary}, nproc {os.cpu_count()}, load {os.getloadavg()[0]:.2f}")
    q = bench_query(binary, runs)
    print(f"e2e task, {runs} alternating runs (median): raw pipe wall {q['raw_wall_ms']:.1f} ms, "
          f"query() wall {q['sdk_wall_ms']:.1f} ms -> overhead {q['sdk_wall_ms'] - q['raw_wall_ms']:+.1f} ms "
          f"(min {q['raw_wall_min']:.1f} / {q['sdk_wall_min']:.1f}); driver CPU raw {q['raw_cpu_ms']:.1f} ms, "
          f"query() {q['sdk_cpu_ms']:.1f} ms -> {q['sdk_cpu_ms'] - q['raw_cpu_ms']:+.1f} ms")
    def fmt(rs: list[float]) -> str:
        return f"{statistics.median(rs):,.0f} events/s (runs: {', '.join(f'{r:,.0f}' for r in rs)})"

    rates, cpu_rates, recorded = asyncio.run(daemon_stream(binary, deltas, 3))
    print(f"session.prompt via a real daemon, {deltas} deltas: wall {fmt(rates)}; per CPU second of the SDK {fmt(cpu_rates)}")
    replay, replay_cpu = asyncio.run(replay_stream(recorded, 3))
    print(f"session.prompt, SDK alone (replayed lines), {len(recorded)} events: wall {fmt(replay)}; "
          f"per CPU second {fmt(replay_cpu)}")


if __name__ == "__main__":
    main()
