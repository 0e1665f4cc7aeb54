#!/usr/bin/env python3
"""Runtime benchmarks for `shard agent` (issue: the agent Runtime).

Measures, on the release binary:
  1. process start -> first byte of `hello` on stdout (median of N runs)
  2. resident memory (VmRSS) after `sync`, idle
  3. a scripted reply of 100,000 deltas through the Runtime: time and stdout bytes,
     plus 50,000 and 200,000 to show that output grows linearly with the text
  4. opening a 200 MB session: start -> `sync`, with meta.json (fast path) and without
     (full scan), on a warm page cache

Usage: bench/runtime/bench.py [path/to/shard]   (default target/release/shard)
"""
import json, os, random, shutil, statistics, string, subprocess, sys, tempfile, time

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/shard"


def new_id(prefix):
    ms = int(time.time() * 1000)
    v = (ms << 80) | random.getrandbits(80)
    return prefix + "-" + "".join(ALPHABET[(v >> (5 * i)) & 31] for i in range(25, -1, -1))


def spawn(home, work, *extra):
    env = dict(os.environ, SHARD_HOME=home)
    for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env.pop(k, None)
    return subprocess.Popen([BIN, "agent", "--cwd", work, *extra], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 20)


def read_line(p):
    line = p.stdout.readline()
    if not line:
        raise RuntimeError("agent closed stdout")
    return line


def start_to_hello(home, work, runs=40):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = spawn(home, work)
        read_line(p)
        times.append((time.perf_counter() - t0) * 1000)
        p.stdin.close(); p.wait()
    return statistics.median(times), min(times)


def rss_after_sync(home, work):
    p = spawn(home, work)
    read_line(p); read_line(p)
    time.sleep(0.2)
    rss = hwm = 0
    with open(f"/proc/{p.pid}/status") as f:
        for l in f:
            if l.startswith("VmRSS:"): rss = int(l.split()[1])
            if l.startswith("VmHWM:"): hwm = int(l.split()[1])
    p.stdin.close(); p.wait()
    return rss / 1024, hwm / 1024


def deltas(home, work, n):
    script = os.path.join(home, f"deltas-{n}.json")
    with open(script, "w") as f:
        json.dump({"turns": [{"steps": [{"text": "word ", "repeat": n}, {"usage": {"input": 1, "output": n}}]}]}, f)
    p = spawn(home, work, "--provider", "scripted", "--script", script)
    read_line(p); read_line(p)
    total = 0
    count = 0
    t0 = time.perf_counter()
    p.stdin.write(b'{"type":"prompt","message":"go"}\n'); p.stdin.flush()
    while True:
        line = read_line(p)
        total += len(line)
        if b'"message_delta"' in line[:40]:
            count += 1
        if line.startswith(b'{"type":"turn_end"'):
            break
    dt = time.perf_counter() - t0
    p.stdin.close(); p.wait()
    return dt, total, count


def big_session(home, work, target_mb=200):
    sid = new_id("sess")
    d = os.path.join(home, "sessions", sid)
    os.makedirs(d, mode=0o700)
    now = int(time.time() * 1000)
    text = "".join(random.choice(string.ascii_letters + "  ") for _ in range(2000))
    path = os.path.join(d, "session.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps({"type": "header", "version": 1, "session_id": sid,
                            "cwd": os.path.realpath(work), "created_at": now}, separators=(",", ":")) + "\n")
        size, parent, i = 0, None, 0
        while size < target_mb * 1024 * 1024:
            eid = new_id("ent")
            role = "user" if i % 2 == 0 else "assistant"
            line = json.dumps({"type": "message", "id": eid, "parent_id": parent, "timestamp": now + i,
                               "message": {"id": eid, "role": role, "content": [{"type": "text", "text": f"{i} {text}"}]}},
                              separators=(",", ":")) + "\n"
            f.write(line)
            size += len(line); parent = eid; i += 1
    os.chmod(path, 0o600)
    return sid, size, i


def open_session(home, work, sid, runs=5):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = spawn(home, work, "--session", sid)
        read_line(p)
        sync = read_line(p)
        times.append((time.perf_counter() - t0) * 1000)
        p.stdin.close(); p.wait()
    return statistics.median(times), len(sync)


def main():
    tmp = tempfile.mkdtemp(prefix="shard-bench-")
    home = os.path.join(tmp, "home"); work = os.path.join(tmp, "work")
    os.makedirs(home); os.makedirs(work)
    try:
        med, best = start_to_hello(home, work)
        print(f"start_to_hello_ms median={med:.2f} min={best:.2f}")
        rss, hwm = rss_after_sync(home, work)
        print(f"idle_rss_mb={rss:.2f} peak_rss_mb={hwm:.2f}")
        for n in (50_000, 100_000, 200_000):
            dt, total, count = deltas(home, work, n)
            print(f"deltas n={n} seen={count} seconds={dt:.3f} deltas_per_s={count/dt:,.0f} stdout_bytes={total} bytes_per_delta={total/count:.1f}")
        sid, size, entries = big_session(home, work)
        print(f"session bytes={size} entries={entries}")
        med, sync_bytes = open_session(home, work, sid)
        print(f"open_200mb_with_meta_ms median={med:.1f} sync_bytes={sync_bytes}")
        meta = os.path.join(home, "sessions", sid, "meta.json")
        times = []
        for _ in range(3):
            if os.path.exists(meta): os.remove(meta)
            t0 = time.perf_counter()
            p = spawn(home, work, "--session", sid)
            read_line(p); read_line(p)
            times.append((time.perf_counter() - t0) * 1000)
            p.stdin.close(); p.wait()
        print(f"open_200mb_without_meta_ms median={statistics.median(times):.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
