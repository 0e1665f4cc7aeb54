#!/usr/bin/env python3
"""Subagent benchmark against a real `shard daemon` with scripted agents.

1. Fan-out: a parent whose scripted model calls the `subagent` tool 7 times (8+8+8+8+8+8+2
   tasks: launch_policy allows 8 per job) starts 50 children. Measured on a client attached
   to the parent: from the first `subagent.create` tool call to the 50th run `active`
   (`subagent_run_changed`), and the daemon's resident memory then.
2. Report latency: one child; from its run's `completed` event to the parent's next
   `turn_start` (the injected report turn), both seen on the same client connection.

Usage: bench/subagents/run.py [path/to/shard]   (default target/release/shard)
The daemon runs with SHARD_HOME in a temporary folder; only processes started here are
stopped (by pid).
"""
import json, os, shutil, socket, subprocess, sys, tempfile, time

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/shard"


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.s.settimeout(60)
        self.f = self.s.makefile("rb")
        self.n = 0
        self.hello = self.line()

    def line(self):
        raw = self.f.readline()
        if not raw:
            raise SystemExit("daemon closed the connection")
        return json.loads(raw), time.monotonic()

    def send(self, cmd):
        self.n += 1
        cmd["id"] = f"b{self.n}"
        self.s.sendall((json.dumps(cmd) + "\n").encode())
        return cmd["id"]

    def call(self, cmd):
        i = self.send(cmd)
        while True:
            v, _ = self.line()
            if v.get("type") == "response" and v.get("id") == i:
                if not v.get("success"):
                    raise SystemExit(f"{cmd['type']} failed: {v}")
                return v


def script(dir, name, turns):
    p = os.path.join(dir, name)
    with open(p, "w") as f:
        json.dump({"turns": turns}, f)
    return p


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
    return 0


def start_daemon(home):
    # Its log goes to a file: a pipe nobody drains would stall the daemon.
    log = open(os.path.join(home, "daemon-bench.log"), "wb")
    d = subprocess.Popen([BIN, "daemon", "--port", "0"], env={**os.environ, "SHARD_HOME": home},
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    sock = os.path.join(home, "daemon.sock")
    for _ in range(600):
        if os.path.exists(sock):
            return d
        time.sleep(0.05)
    raise SystemExit("the daemon did not start")


def parent(c, home, turns):
    ps = script(home, f"p{c.n}.json", turns)
    r = c.call({"type": "agent.create", "cwd": home, "provider": "scripted", "model": ps})
    pid = r["data"]["agent_id"]
    c.call({"type": "agent.attach", "agent_id": pid})
    c.call({"type": "prompt", "agent_id": pid, "message": "go"})
    return pid


def fanout(home, sock, daemon):
    cs = script(home, "c.json", [{"steps": [{"text": "child done"}]}])
    sizes = [8, 8, 8, 8, 8, 8, 2]
    turns = [{"steps": [{"tool_call": {"id": f"call-{j}", "name": "subagent", "args": {
        "action": "create", "strategy": "parallel", "model": cs,
        "tasks": [{"name": "general", "task": f"task {j}-{i}"} for i in range(n)]}}}]}
        for j, n in enumerate(sizes)]
    turns.append({"steps": [{"text": "launched"}]})
    turns += [{"steps": [{"text": "ok"}]} for _ in range(60)]
    c = Conn(sock)
    parent(c, home, turns)
    first = None
    active = set()
    seen = {}
    limit = time.monotonic() + 120
    while len(active) < 50:
        if time.monotonic() > limit:
            raise SystemExit(f"only {len(active)} runs seen active; events: {seen}")
        try:
            v, t = c.line()
        except (socket.timeout, TimeoutError):
            raise SystemExit(f"only {len(active)} runs seen active; events: {seen}")
        seen[v.get("type")] = seen.get(v.get("type"), 0) + 1
        if v.get("type") == "tool_call" and first is None:
            first = t
        if v.get("type") == "subagent_run_changed" and v.get("state") == "active":
            active.add(v["run_id"])
    took = time.monotonic() - first
    return took, rss_kb(daemon.pid)


def report_latency(home, sock):
    cs = script(home, "c1.json", [{"steps": [{"text": "child done"}]}])
    turns = [{"steps": [{"tool_call": {"id": "call-1", "name": "subagent",
                                        "args": {"action": "create", "task": "one", "model": cs}}}]},
             {"steps": [{"text": "launched"}]}, {"steps": [{"text": "got it"}]}]
    c = Conn(sock)
    pid = parent(c, home, turns)
    done_at = None
    turns_seen = 0
    while True:
        v, t = c.line()
        if v.get("type") == "subagent_run_changed" and v.get("state") == "completed":
            done_at = t
        if v.get("type") == "turn_start" and v.get("agent_id") == pid:
            turns_seen += 1
            if done_at is not None and turns_seen >= 2:
                return t - done_at


def main():
    home = tempfile.mkdtemp(prefix="shard-bench-sub-")
    daemon = start_daemon(home)
    sock = os.path.join(home, "daemon.sock")
    done = False
    try:
        took, rss = fanout(home, sock, daemon)
        print(f"50 children: create → all active {took*1000:.0f} ms; daemon RSS {rss/1024:.1f} MiB")
        lat = [report_latency(home, sock) for _ in range(5)]
        lat.sort()
        print(f"report latency (run completed → parent turn_start), 5 runs: "
              f"median {lat[2]*1000:.1f} ms, max {lat[-1]*1000:.1f} ms")
        done = True
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        # 50 agents' sessions per run: kept only when the run failed, for its daemon log.
        if done:
            shutil.rmtree(home, ignore_errors=True)
        else:
            print(f"# kept {home} (daemon-bench.log)", file=sys.stderr)


if __name__ == "__main__":
    main()
