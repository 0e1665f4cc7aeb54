#!/usr/bin/env python3
"""MCP benchmarks for `shard agent`, against the standard-library test server
(crates/shard-mcp/tests/servers/mcp_test_server.py):

  1. process start -> first byte of `hello`, with no MCP server and with three stdio
     servers configured (they start in the background; target: unchanged, <= 10 ms)
  2. one MCP call's cost beyond the server's own time: the client-seen time from the
     model's tool-call message (`message_complete`) to `tool_result` (gate, call,
     conversion, persistence, events), minus the median round trip of the same
     `tools/call` sent straight to the same server over a pipe (target: <= 1 ms)

Usage: bench/mcp/bench.py [path/to/shard]   (default target/release/shard)
"""
import json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.path.join(ROOT, "crates/shard-mcp/tests/servers/mcp_test_server.py")
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/shard")
CALLS = 200


def config(home, n):
    with open(os.path.join(home, "config.toml"), "w") as f:
        for i in range(n):
            f.write(f'[mcp.servers.s{i}]\ncommand = "python3"\nargs = ["{SERVER}"]\nread_only = true\n\n')


def spawn(home, work, *extra):
    env = dict(os.environ, SHARD_HOME=home)
    for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env.pop(k, None)
    return subprocess.Popen([BIN, "agent", "--cwd", work, *extra], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)


def start_to_hello(home, work, runs=30):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = spawn(home, work)
        p.stdout.readline()
        times.append((time.perf_counter() - t0) * 1000)
        p.stdin.close()
        p.wait()
        # Let the previous run's servers finish starting and stopping: on 2 cores their
        # Python start-up would otherwise be measured as the next run's CPU contention.
        time.sleep(0.3)
    return statistics.median(times), min(times)


def call_overhead(home, work):
    config(home, 1)
    turns = []
    for i in range(CALLS):
        turns.append({"steps": [{"tool_call": {"id": f"t{i}", "name": "mcp__s0__echo", "args": {"text": "x"}}}]})
    turns.append({"steps": [{"text": "done"}]})
    script = os.path.join(work, "..", "script.json")
    with open(script, "w") as f:
        json.dump({"turns": turns}, f)
    p = spawn(home, work, "--provider", "scripted", "--script", script)
    # Wait for the server's tools.
    while True:
        ev = json.loads(p.stdout.readline())
        if ev["type"] == "tools_changed" and ev["server"]["state"] == "ready":
            break
    p.stdin.write(b'{"type":"prompt","message":"go","id":"1"}\n')
    p.stdin.flush()
    gaps, start = [], None
    while True:
        ev = json.loads(p.stdout.readline())
        t = time.perf_counter()
        if ev["type"] == "message_complete":
            start = t
        elif ev["type"] == "tool_result" and start is not None:
            assert not ev["is_error"], ev
            gaps.append((t - start) * 1000)
            start = None
        elif ev["type"] == "turn_end":
            break
    p.stdin.close()
    p.wait()
    return gaps


def direct_round_trip():
    p = subprocess.Popen(["python3", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)

    def rpc(i, method, params):
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        return json.loads(p.stdout.readline())

    rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}})
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    times = []
    for i in range(CALLS):
        t0 = time.perf_counter()
        rpc(i + 1, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        times.append((time.perf_counter() - t0) * 1000)
    p.stdin.close()
    p.wait()
    return times


def main():
    with tempfile.TemporaryDirectory() as d:
        home, work = os.path.join(d, "home"), os.path.join(d, "work")
        os.makedirs(home)
        os.makedirs(work)
        config(home, 0)
        med0, min0 = start_to_hello(home, work)
        config(home, 3)
        med3, min3 = start_to_hello(home, work)
        print(f"start -> hello, no server:      median {med0:.1f} ms (min {min0:.1f})")
        print(f"start -> hello, 3 stdio servers: median {med3:.1f} ms (min {min3:.1f})")
        gaps = call_overhead(home, work)
        direct = direct_round_trip()
        g, r = statistics.median(gaps), statistics.median(direct)
        print(f"MCP call through shard (message_complete -> tool_result): median {g:.2f} ms, "
              f"p90 {statistics.quantiles(gaps, n=10)[-1]:.2f} ms ({len(gaps)} calls)")
        print(f"same tools/call straight to the server:                   median {r:.2f} ms")
        print(f"overhead beyond the server's own time:                    {g - r:.2f} ms")


if __name__ == "__main__":
    main()
