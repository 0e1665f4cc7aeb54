#!/usr/bin/env python3
"""Benchmarks of the terminal client, driven through tmux like a person.

startup-to-first-paint and keystroke-to-screen latency on a pseudo-terminal read
directly (time from spawn / from writing the key to the bytes that paint it), then CPU
and memory of the client in tmux while a daemon agent streams about 1,000 deltas a
second (the Runtime runs in the daemon, so the client's figures are its own).

usage: bench.py PATH/TO/shard
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

SHARD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/shard")
RUN = [0]


def tmux(*args):
    sock = f"shard-bench-{os.getpid()}-{RUN[0]}"
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True)


def screen(target="t:0"):
    return tmux("capture-pane", "-p", "-t", target).stdout


def wait_for(pred, target="t:0", timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = screen(target)
        if pred(s):
            return time.monotonic()
        time.sleep(0.001)
    raise SystemExit(f"timed out; screen:\n{screen(target)}")


def pane_pid(target="t:0"):
    sh = int(tmux("display-message", "-p", "-t", target, "#{pane_pid}").stdout.strip())
    for _ in range(2000):
        try:
            kids = open(f"/proc/{sh}/task/{sh}/children").read().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.005)
    raise SystemExit("no child")


def start(cmd, env, cwd="/"):
    RUN[0] += 1
    envs = " ".join(f"{k}={v}" for k, v in env.items())
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y", "40",
         f"cd {cwd} && env {envs} {cmd}; sleep 3600")


def stop():
    tmux("kill-server")


class Pty:
    """`shard` on a pseudo-terminal read directly (no tmux in the measurement); answers
    the terminal queries a real terminal answers (device attributes)."""

    def __init__(self, argv, env, cwd):
        import fcntl, pty, struct, termios
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     env={**os.environ, **env, "TERM": "xterm-256color"},
                                     cwd=cwd, start_new_session=True)
        os.close(slave)
        self.buf = b""

    def read_until(self, needle, timeout=30.0):
        import select
        deadline = time.monotonic() + timeout
        while needle not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit(f"timed out waiting for {needle!r}")
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                chunk = os.read(self.master, 65536)
                if b"\x1b[c" in chunk:
                    os.write(self.master, b"\x1b[?62;22c")
                self.buf += chunk
        t = time.monotonic()
        self.buf = self.buf[self.buf.index(needle) + len(needle):]
        return t

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        os.close(self.master)


def startup(home, work, script, n=15):
    env = {"SHARD_HOME": home, "NO_COLOR": "1"}
    argv = [SHARD, "--no-daemon", "--provider", "scripted", "--script", script]
    times = []
    for _ in range(n):
        p = Pty(argv, env, work)
        times.append(p.read_until(b"type a prompt") - p.t0)
        p.close()
    return statistics.median(times) * 1e3, max(times) * 1e3


def keystrokes(home, work, script, n=300):
    env = {"SHARD_HOME": home, "NO_COLOR": "1"}
    argv = [SHARD, "--no-daemon", "--provider", "scripted", "--script", script]
    p = Pty(argv, env, work)
    p.read_until(b"type a prompt")
    lat = []
    for i in range(n):
        # Letters that no escape sequence ends with; a changed cell is painted right
        # after a cursor move ("…H"), which makes the match exact.
        ch = "abcdefgijknopqrstuvwxyz"[i % 23]
        if i % 40 == 0 and i:
            os.write(p.master, b"\x15")  # Ctrl+U clears the input
            p.read_until(b"type a prompt")
        t0 = time.monotonic()
        os.write(p.master, ch.encode())
        lat.append(p.read_until(b"H" + ch.encode()) - t0)
    p.close()
    lat.sort()
    return lat[len(lat) // 2] * 1e3, lat[int(len(lat) * 0.95)] * 1e3, lat[-1] * 1e3


def ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def rss(pid, field="VmRSS"):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return 0.0


def streaming(home, work, tmp, seconds=10):
    steps = []
    for i in range(seconds * 1000):
        steps.append({"text": f"w{i} " if i % 12 else "word\n"})
        if i % 10 == 9:
            steps.append({"delay_ms": 10})
    script = os.path.join(tmp, "stream.json")
    json.dump({"turns": [{"steps": steps}]}, open(script, "w"))
    daemon = subprocess.Popen([SHARD, "daemon", "--port", "0"], env={**os.environ, "SHARD_HOME": home},
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(2000):
            if os.path.exists(os.path.join(home, "daemon.sock")):
                break
            time.sleep(0.01)
        env = {"SHARD_HOME": home, "NO_COLOR": "1"}
        start(f"{SHARD} --provider scripted --script {script}", env, work)
        wait_for(lambda s: "daemon " in s)
        pid = pane_pid()
        idle_rss = rss(pid)
        tmux("send-keys", "-t", "t:0", "-l", "go")
        tmux("send-keys", "-t", "t:0", "Enter")
        wait_for(lambda s: "w1 " in s or "w2 " in s)
        c0, t0 = ticks(pid), time.monotonic()
        wait_for(lambda s: "working" not in s, timeout=seconds * 6)
        c1, t1 = ticks(pid), time.monotonic()
        hz = os.sysconf("SC_CLK_TCK")
        cpu = (c1 - c0) / hz / (t1 - t0) * 100
        peak = rss(pid, "VmHWM")
        stop()
        return cpu, t1 - t0, idle_rss, peak
    finally:
        daemon.terminate()
        daemon.wait()


def main():
    if not shutil.which("tmux"):
        raise SystemExit("tmux is needed (Debian package tmux)")
    tmp = tempfile.mkdtemp(prefix="shard-tui-bench-")
    home, work = os.path.join(tmp, "home"), os.path.join(tmp, "work")
    os.makedirs(home)
    os.makedirs(work)
    script = os.path.join(tmp, "s.json")
    json.dump({"turns": []}, open(script, "w"))
    try:
        first, worst = startup(home, work, script)
        print(f"startup to first paint: median {first:.1f} ms, worst {worst:.1f} ms")
        med, p95, mx = keystrokes(home, work, script)
        print(f"keystroke to screen: median {med:.2f} ms, p95 {p95:.2f} ms, max {mx:.2f} ms")
        cpu, secs, idle, peak = streaming(home, work, tmp)
        print(f"streaming ~1000 deltas/s for {secs:.1f} s: client CPU {cpu:.1f}% of one core; "
              f"RSS idle {idle:.1f} MiB, peak {peak:.1f} MiB")
    finally:
        stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
