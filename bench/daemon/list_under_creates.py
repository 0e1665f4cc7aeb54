#!/usr/bin/env python3
"""`agent.list` round trip while N `agent.create` start at once, against a
given `shard` binary, without building the Rust bench driver. Same method as
`crates/shard-daemon/benches/daemon.rs` (`list_under_create_load`): one probe connection
sends `agent.list` back to back while the creates run on another connection.

Usage: bench/daemon/list_under_creates.py [path/to/shard] [creates] [repeats]
DAEMON_WRAP: a command prefix for the daemon alone (e.g. `nice -n -10`), to tell CPU
starvation of the daemon (the Runtimes it starts share its 2 cores) from work on its executor.
CONFIG: text of SHARD_HOME/config.toml (`\\n` for newlines), e.g. `[sandbox]\\nmode = "off"`.
DAEMON_ARGS: extra `shard daemon` flags (e.g. `--max-concurrent-starts 1000` for no bound).
"""
import json, os, shutil, socket, subprocess, sys, tempfile, time

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/shard"
CREATES = int(sys.argv[2]) if len(sys.argv) > 2 else 20
REPEATS = int(sys.argv[3]) if len(sys.argv) > 3 else 3


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.line()  # hello

    def send(self, obj):
        self.s.sendall((json.dumps(obj) + "\n").encode())

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        l, self.buf = self.buf.split(b"\n", 1)
        return json.loads(l)

    def response(self, id_):
        while True:
            v = self.line()
            if v.get("type") == "response" and v.get("id") == id_:
                return v


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, len(xs) * p // 100)]


def one(n):
    home = tempfile.mkdtemp(prefix="shard-listbench-")
    script = os.path.join(home, "s.json")
    open(script, "w").write('{"turns":[]}')
    if os.environ.get("CONFIG"):
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(os.environ["CONFIG"].replace("\\n", "\n") + "\n")
        os.chmod(os.path.join(home, "config.toml"), 0o600)
    d = subprocess.Popen(os.environ.get("DAEMON_WRAP", "").split() + [BIN, "daemon", "--port", "0"] + os.environ.get("DAEMON_ARGS", "").split(), env=dict(os.environ, SHARD_HOME=home),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sock = os.path.join(home, "daemon.sock")
        for _ in range(400):
            try:
                probe = Conn(sock)
                break
            except OSError:
                time.sleep(0.025)
        def rtt(i):
            t = time.perf_counter()
            probe.send({"type": "agent.list", "id": f"l{i}"})
            probe.response(f"l{i}")
            return (time.perf_counter() - t) * 1000
        idle = [rtt(i) for i in range(200)]
        creator = Conn(sock)
        creator.s.setblocking(False)
        t0 = time.perf_counter()
        for i in range(n):
            creator.send({"type": "agent.create", "id": f"c{i}", "cwd": home, "provider": "scripted", "model": script})
        done, samples, i, failed = 0, [], 1000, 0
        while done < n:
            samples.append(rtt(i)); i += 1
            try:
                while True:
                    v = creator.line()
                    if v.get("type") == "response":
                        done += 1
                        failed += 0 if v.get("success") else 1
            except (BlockingIOError, EOFError):
                pass
        create_s = time.perf_counter() - t0
        creator.s.setblocking(True)
        creator.send({"type": "daemon.shutdown", "id": "x", "force": True})
        d.wait(timeout=60)
    finally:
        # A failed run must not leave its daemon (and its agents) or its SHARD_HOME behind.
        if d.poll() is None:
            d.kill()
            d.wait()
        shutil.rmtree(home, ignore_errors=True)
    return idle, samples, create_s, failed


def main():
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} bin={BIN} creates={CREATES} wrap={os.environ.get('DAEMON_WRAP', '')!r} args={os.environ.get('DAEMON_ARGS', '')!r} load={os.getloadavg()[0]:.2f}")
    for _ in range(REPEATS):
        idle, s, cs, failed = one(CREATES)
        print(f"samples={len(s)} p50={pct(s, 50):.2f} p99={pct(s, 99):.2f} max={max(s):.2f} ms; "
              f"idle p50={pct(idle, 50):.3f} p99={pct(idle, 99):.3f} ms; creates {cs:.2f} s, failed {failed}; load={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
