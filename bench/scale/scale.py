#!/usr/bin/env python3
"""Many agents on one daemon: the real `shard daemon` with the offline `scripted` provider,
driven over its unix socket. Figures for docs/performance.md ("Thousands of agents").

Usage: bench/scale/scale.py SCENARIO [N ...]   (env BIN=path/to/shard, default
target/release/shard; DAEMON_ARGS=extra daemon flags)

Scenarios:
  fds N            live agents, then descriptors the daemon holds (/proc/<pid>/fd)
  creates N        N creates one after another (Runtimes reaped when idle); median of the
                   last 100 against the first 100
  sync S           start -> sync of one new agent with 0 and with S sessions on disk (two
                   daemons measured in alternation, the sessions flushed to disk first)
  list N           agent.list p99 with N agents registered (manifests written to disk)
  attach N         attach -> sync p99 with N agents registered (cold: the Runtime starts;
                   warm: it is live)
  stream A         total message_delta/s with A agents streaming, one client each; daemon CPU
                   in all and per thread (how the broker's work spreads over the cores)
  rss A C          daemon peak and after-burst RSS, A agents streaming to C clients each
  ulimit N         N live agents with the daemon under `ulimit -n 1024`
Each run uses a fresh SHARD_HOME under /tmp and ends the daemon it started (by pid).
"""
import json, os, random, resource, selectors, shutil, signal, socket, subprocess, sys, tempfile, time

BIN = os.environ.get("BIN", "target/release/shard")
B32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
TICK = os.sysconf("SC_CLK_TCK")


def new_id(prefix):
    return prefix + "-" + "".join(random.choice(B32) for _ in range(26))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, len(xs) * p // 100)] if xs else float("nan")


def median(xs):
    return pct(xs, 50)


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.line()  # hello

    def send(self, obj):
        self.s.sendall((json.dumps(obj) + "\n").encode())

    def raw_line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError
            self.buf += chunk
        l, self.buf = self.buf.split(b"\n", 1)
        return l

    def line(self):
        return json.loads(self.raw_line())

    def until(self, pred):
        while True:
            v = self.line()
            if pred(v):
                return v

    def call(self, obj):
        self.send(obj)
        v = self.until(lambda v: v.get("type") == "response" and v.get("id") == obj["id"])
        if not v.get("success"):
            raise RuntimeError(f"{obj['type']} failed: {v.get('error')}")
        return v.get("data")


class Daemon:
    """A daemon on a fresh home; `prefix` wraps it (e.g. a `ulimit`)."""

    def __init__(self, args=(), home=None, prefix=None):
        self.home = home or tempfile.mkdtemp(prefix="shard-scale-")
        self.script = os.path.join(self.home, "idle.json")
        if not os.path.exists(self.script):
            with open(self.script, "w") as f:
                f.write('{"turns":[]}')
        cmd = [BIN, "daemon", "--port", "0"] + list(args) + os.environ.get("DAEMON_ARGS", "").split()
        if prefix:
            cmd = ["sh", "-c", prefix + ' && exec "$0" "$@"'] + cmd
        self.p = subprocess.Popen(cmd, env=dict(os.environ, SHARD_HOME=self.home),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        self.sock = os.path.join(self.home, "daemon.sock")
        self.started = time.perf_counter()
        for _ in range(2400):
            try:
                self.conn = Conn(self.sock)
                self.ready_s = time.perf_counter() - self.started
                return
            except OSError:
                if self.p.poll() is not None:
                    raise RuntimeError("the daemon exited at start")
                time.sleep(0.025)
        raise RuntimeError("the daemon did not listen")

    def connect(self):
        return Conn(self.sock)

    def create(self, c=None, model=None, i=[0]):
        i[0] += 1
        return (c or self.conn).call({"type": "agent.create", "id": f"c{i[0]}", "cwd": self.home,
                                      "provider": "scripted", "model": model or self.script})["agent_id"]

    def cpu_s(self):
        f = open(f"/proc/{self.p.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / TICK

    def threads_cpu(self):
        """CPU seconds of each of the daemon's threads, by thread id."""
        out = {}
        for t in os.listdir(f"/proc/{self.p.pid}/task"):
            try:
                f = open(f"/proc/{self.p.pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[t] = (int(f[11]) + int(f[12])) / TICK
        return out

    def status(self, key):
        for l in open(f"/proc/{self.p.pid}/status"):
            if l.startswith(key + ":"):
                return int(l.split()[1]) // 1024  # MiB
        return -1

    def fds(self):
        return len(os.listdir(f"/proc/{self.p.pid}/fd"))

    def close(self, keep_home=False):
        try:
            if self.p.poll() is None:
                c = self.connect()
                c.send({"type": "daemon.shutdown", "id": "x", "force": True})
                self.p.wait(timeout=120)
        except Exception:
            pass
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
            if not keep_home:
                shutil.rmtree(self.home, ignore_errors=True)


def header(name):
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} {name} bin={BIN} "
          f"nproc={os.cpu_count()} load={os.getloadavg()[0]:.2f}", flush=True)


def fds(n):
    header(f"fds {n}")
    d = Daemon(["--idle-runtime-timeout", "100000"])
    try:
        base = d.fds()
        for _ in range(n):
            d.create()
        time.sleep(1)
        live = d.fds()
        print(f"agents={n} daemon fds: {base} before, {live} with {n} live "
              f"({(live - base) / n:.2f} per Runtime)")
    finally:
        d.close()


def creates(n):
    header(f"creates {n}")
    # Runtimes are reaped one second after they idle, so only a few are live at once.
    d = Daemon(["--idle-runtime-timeout", "1", "--attached-idle-timeout", "1"])
    try:
        times = []
        t0 = time.perf_counter()
        for _ in range(n):
            t = time.perf_counter()
            d.create()
            times.append((time.perf_counter() - t) * 1000)
        total = time.perf_counter() - t0
        first, last = median(times[:100]), median(times[-100:])
        print(f"agents={n} total {total:.1f} s; median create first 100 {first:.1f} ms, "
              f"last 100 {last:.1f} ms, ratio {last / first:.2f}")
    finally:
        d.close()


def fake_sessions(home, cwd, count):
    """`count` sessions on disk, copies of a real one under new ids."""
    root = os.path.join(home, "sessions")
    src = next(e for e in os.listdir(root) if e.startswith("sess-"))
    meta = json.load(open(os.path.join(root, src, "meta.json")))
    lines = open(os.path.join(root, src, "session.jsonl")).read()
    for _ in range(count):
        sid = new_id("sess")
        d = os.path.join(root, sid)
        os.makedirs(os.path.join(d, "tool-output"), mode=0o700)
        meta["session_id"] = sid
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f)
        with open(os.path.join(d, "session.jsonl"), "w") as f:
            f.write(lines.replace(src, sid))


def start_to_sync(d, runs):
    """create -> the first sync of a new agent, measured by an attach right after create."""
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        d.create()
        out.append((time.perf_counter() - t) * 1000)
    return out


def sync(s, runs=40):
    """Two daemons side by side, one on an empty home and one on `s` sessions, measured in
    alternation so load drift on a shared machine hits both halves alike. The sessions are
    written and flushed to disk (`sync`) before any timing: a Runtime's first `fsync`
    otherwise waits for the journal to commit the thousands of files just made."""
    header(f"sync {s}")
    empty = Daemon(["--idle-runtime-timeout", "1"])
    full = None
    try:
        empty.create()  # a warm binary
        seed = Daemon(["--idle-runtime-timeout", "1"])
        seed.create()  # one real session to copy
        seed.close(keep_home=True)
        t = time.perf_counter()
        fake_sessions(seed.home, seed.home, s)
        written = time.perf_counter() - t
        t = time.perf_counter()
        os.sync()
        flushed = time.perf_counter() - t
        full = Daemon(["--idle-runtime-timeout", "1"], home=seed.home)
        full.create()  # warm-up
        res = {0: [], s: []}
        for i in range(runs):
            pair = [(0, empty), (s, full)] if i % 2 == 0 else [(s, full), (0, empty)]
            for count, d in pair:
                res[count] += start_to_sync(d, 1)
        a, b = median(res[0]), median(res[s])
        print(f"{s} sessions written in {written:.1f} s, flushed in {flushed:.1f} s; daemon ready "
              f"in {empty.ready_s * 1000:.0f} / {full.ready_s * 1000:.0f} ms")
        print(f"create (start -> sync), alternating, {runs} each: median with 0 sessions {a:.1f} ms, "
              f"with {s} {b:.1f} ms, ratio {b / a:.2f}; p99 {pct(res[0], 99):.1f} / "
              f"{pct(res[s], 99):.1f} ms")
    finally:
        empty.close()
        if full:
            full.close()


def fake_agents(home, n):
    os.makedirs(os.path.join(home, "manifests"), mode=0o700, exist_ok=True)
    now = int(time.time() * 1000)
    for i in range(n):
        aid = new_id("agent")
        m = {"version": 1, "agent_id": aid, "session_id": new_id("sess"), "cwd": home,
             "model": os.path.join(home, "idle.json"), "provider": "scripted",
             "headless_policy": "deny", "created_at": now + i, "adopted": False, "started": False}
        p = os.path.join(home, "manifests", aid + ".json")
        with open(p, "w") as f:
            json.dump(m, f)
        os.chmod(p, 0o600)


def registered(n):
    home = tempfile.mkdtemp(prefix="shard-scale-")
    with open(os.path.join(home, "idle.json"), "w") as f:
        f.write('{"turns":[]}')
    fake_agents(home, n)
    return Daemon(["--idle-runtime-timeout", "2"], home=home)


def list_(n):
    header(f"list {n}")
    d = registered(n)
    try:
        c = d.connect()
        samples, size = [], 0
        for i in range(300):
            t = time.perf_counter()
            c.send({"type": "agent.list", "id": f"l{i}"})
            raw = c.raw_line()
            samples.append((time.perf_counter() - t) * 1000)
            size = len(raw)
        page = []
        for i in range(300):
            t = time.perf_counter()
            c.call({"type": "agent.list", "id": f"p{i}", "limit": 100})
            page.append((time.perf_counter() - t) * 1000)
        print(f"agents={n} (daemon ready in {d.ready_s:.2f} s) agent.list p50 {median(samples):.2f} "
              f"p99 {pct(samples, 99):.2f} ms ({size / 1e6:.2f} MB); first page of 100: "
              f"p50 {median(page):.2f} p99 {pct(page, 99):.2f} ms")
    finally:
        d.close()


def attach_once(c, aid, i):
    t = time.perf_counter()
    c.send({"type": "agent.attach", "id": f"a{i}", "agent_id": aid, "role": "observer"})
    c.until(lambda v: v.get("type") == "sync")
    ms = (time.perf_counter() - t) * 1000
    c.call({"type": "agent.detach", "id": f"d{i}", "agent_id": aid})
    return ms


def attach(n):
    header(f"attach {n}")
    d = registered(n)
    try:
        c = d.connect()
        agents = [a["agent_id"] for a in c.call({"type": "agent.list", "id": "l"})["agents"]]
        cold = [attach_once(c, aid, i) for i, aid in enumerate(random.sample(agents, 50))]
        live = d.create()
        warm = [attach_once(c, live, 1000 + i) for i in range(200)]
        print(f"agents={n} attach -> sync: cold (Runtime starts) p50 {median(cold):.1f} p99 "
              f"{pct(cold, 99):.1f} ms; warm p50 {median(warm):.2f} p99 {pct(warm, 99):.2f} ms")
    finally:
        d.close()


def flood_script(home, deltas):
    p = os.path.join(home, "flood.json")
    steps = [{"text": "xxxx", "chunk_chars": 4, "repeat": 1000}] * (deltas // 1000)
    with open(p, "w") as f:
        json.dump({"turns": [{"steps": steps}] * 50}, f)
    return p


def stream_round(d, agents, clients_per_agent, deltas, sample=None):
    """Every agent gets a prompt; each client counts its deltas until message_complete."""
    sel = selectors.DefaultSelector()
    conns = []
    for aid in agents:
        for _ in range(clients_per_agent):
            c = d.connect()
            c.send({"type": "agent.attach", "id": "a", "agent_id": aid, "role": "observer"})
            c.until(lambda v: v.get("type") == "sync")
            c.s.setblocking(False)
            st = {"c": c, "deltas": 0, "done": False, "tail": b""}
            sel.register(c.s, selectors.EVENT_READ, st)
            conns.append(st)
    # A prompt comes from a client attached to the agent: one driver attached to all.
    drv = d.connect()
    for i, aid in enumerate(agents):
        drv.call({"type": "agent.attach", "id": f"da{i}", "agent_id": aid, "role": "interactive"})
    cpu0, t0, th0 = d.cpu_s(), time.perf_counter(), d.threads_cpu()
    for i, aid in enumerate(agents):
        drv.send({"type": "prompt", "id": f"p{i}", "agent_id": aid, "message": "go"})
    # The driver's copy of the stream is read and discarded, so it costs no backlog.
    drv.s.setblocking(False)
    sel.register(drv.s, selectors.EVENT_READ, {"sink": drv})
    left, peak, dropped = len(conns), 0, 0
    last_sample = time.perf_counter()
    while left:
        for key, _ in sel.select(timeout=1):
            st = key.data
            if "sink" in st:
                try:
                    st["sink"].s.recv(1 << 20)
                except BlockingIOError:
                    pass
                continue
            try:
                chunk = st["c"].s.recv(1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                # Dropped (CLIENT_TOO_SLOW: this reader fell behind); counted, not fatal.
                sel.unregister(st["c"].s)
                dropped += 1
                if not st["done"]:
                    st["done"] = True
                    left -= 1
                continue
            data = st["tail"] + chunk
            cut = data.rfind(b"\n") + 1
            body, st["tail"] = data[:cut], data[cut:]
            st["deltas"] += body.count(b'"type":"message_delta"')
            if not st["done"] and b'"type":"message_complete"' in body:
                st["done"] = True
                left -= 1
        if sample and time.perf_counter() - last_sample > 0.2:
            peak = max(peak, sample())
            last_sample = time.perf_counter()
    wall = time.perf_counter() - t0
    cpu = d.cpu_s() - cpu0
    th1 = d.threads_cpu()
    # The threads that did the work, busiest first, as shares of one core.
    busy = sorted(((th1[t] - th0.get(t, 0)) / wall for t in th1), reverse=True)
    stream_round.threads = [b for b in busy if b >= 0.01]
    total = sum(st["deltas"] for st in conns)
    for st in conns:
        st["c"].s.close()
    drv.s.close()
    return total, wall, cpu, peak, dropped


def stream(a):
    header(f"stream {a}")
    d = Daemon(["--idle-runtime-timeout", "100000"])
    try:
        model = flood_script(d.home, 20000)
        agents = [d.create(model=model) for _ in range(a)]
        total, wall, cpu, _, dropped = stream_round(d, agents, 1, 20000)
        threads = " + ".join(f"{b * 100:.0f}%" for b in stream_round.threads)
        print(f"agents={a} clients=1 each ({dropped} dropped): {total} deltas in {wall:.2f} s = "
              f"{total / wall / 1e6:.3f} M deltas/s; daemon CPU {cpu:.2f} s "
              f"({cpu / wall * 100:.0f}% of one core; threads over 1%: {threads})")
    finally:
        d.close()


def rss(a, c):
    header(f"rss {a}x{c}")
    d = Daemon(["--idle-runtime-timeout", "100000"])
    try:
        model = flood_script(d.home, 5000)
        agents = [d.create(model=model) for _ in range(a)]
        before = d.status("VmRSS")
        total, wall, cpu, peak, dropped = stream_round(
            d, agents, c, 5000, sample=lambda: d.status("VmRSS"))
        hwm = d.status("VmHWM")
        time.sleep(5)
        after = d.status("VmRSS")
        print(f"agents={a} clients={c} each ({dropped} dropped): {total} deltas in {wall:.1f} s; daemon RSS "
              f"{before} MiB before, peak {max(peak, hwm)} MiB, {after} MiB 5 s after the burst")
    finally:
        d.close()


def ulimit(n):
    header(f"ulimit {n}")
    d = Daemon(["--idle-runtime-timeout", "100000"], prefix="ulimit -n 1024")
    try:
        lim = [l for l in open(f"/proc/{d.p.pid}/limits") if l.startswith("Max open files")][0].split()
        ok, err = 0, None
        for _ in range(n):
            try:
                d.create()
                ok += 1
            except RuntimeError as e:
                err = str(e)
                break
        live = sum(1 for a in d.conn.call({"type": "agent.list", "id": "l"})["agents"]
                   if a["runtime_state"] == "running")
        print(f"limit soft={lim[3]} hard={lim[4]}: {ok}/{n} creates, {live} live, daemon fds "
              f"{d.fds()}; first failure: {err}")
    finally:
        d.close()


def main():
    # A timeout's SIGTERM still runs the `finally` that ends the daemon.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    name, args = sys.argv[1], [int(x) for x in sys.argv[2:]]
    {"fds": fds, "creates": creates, "sync": sync, "list": list_, "attach": attach,
     "stream": stream, "rss": rss, "ulimit": ulimit}[name](*args)


if __name__ == "__main__":
    main()
