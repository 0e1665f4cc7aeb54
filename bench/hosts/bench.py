#!/usr/bin/env python3
"""Agents on a host over loopback SSH (docs/hosts.md), against a given `shard` binary and
a real OpenSSH server on 127.0.0.1 this script starts (generated keys, strict
known_hosts), with a local agent measured in the same run as the reference.

1. create -> first event (`agent.create` sent -> the `sync` of `agent.attach`), with the
   host's connection cold (a fresh daemon: ssh handshake + version check) and warm.
2. N agents on one host, the server at sshd's default MaxSessions (10): memory,
   descriptors and connections on both ends (the daemon opens a connection per 9 agents).
3. Fan-out of one agent's deltas to 10 observer clients: remote vs local agent.

Usage: bench/hosts/bench.py [path/to/shard] [agents=100]
"""
import json, os, socket, subprocess, sys, tempfile, threading, time

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/debug/shard")
AGENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 100
SSHD = "/usr/sbin/sshd"


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.n = 0
        self.line()  # hello

    def send(self, obj):
        self.n += 1
        obj["id"] = f"r{self.n}"
        self.s.sendall((json.dumps(obj) + "\n").encode())
        return obj["id"]

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise EOFError
            self.buf += chunk
        l, self.buf = self.buf.split(b"\n", 1)
        return json.loads(l)

    def until(self, pred):
        while True:
            v = self.line()
            if pred(v):
                return v

    def call(self, obj):
        i = self.send(obj)
        r = self.until(lambda v: v.get("type") == "response" and v.get("id") == i)
        if not r.get("success"):
            raise RuntimeError(r)
        return r.get("data")


def sh(*a):
    subprocess.run(a, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_sshd(d):
    for k in ["hostkey", "userkey"]:
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{d}/{k}")
    os.rename(f"{d}/userkey.pub", f"{d}/authorized_keys")
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    open(f"{d}/sshd_config", "w").write(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\nAuthorizedKeysFile {d}/authorized_keys\n"
        f"PidFile {d}/sshd.pid\nUsePAM no\nStrictModes no\nPasswordAuthentication no\n"
        f"PermitRootLogin prohibit-password\nMaxStartups 300\nLogLevel ERROR\n")
    key = " ".join(open(f"{d}/hostkey.pub").read().split()[:2])
    open(f"{d}/known_hosts", "w").write(f"[127.0.0.1]:{port} {key}\n")
    open(f"{d}/ssh_config", "w").write(
        f"Host box\n HostName 127.0.0.1\n Port {port}\n User {user}\n IdentityFile {d}/userkey\n"
        f" IdentitiesOnly yes\n UserKnownHostsFile {d}/known_hosts\n GlobalKnownHostsFile /dev/null\n"
        f" StrictHostKeyChecking yes\n")
    os.makedirs("/run/sshd", exist_ok=True)
    p = subprocess.Popen([SSHD, "-D", "-e", "-f", f"{d}/sshd_config"], stderr=subprocess.DEVNULL)
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            break
        except OSError:
            time.sleep(0.025)
    return p, port


class Daemon:
    def __init__(self, root, ssh_dir):
        self.home = tempfile.mkdtemp(dir=root, prefix="d")
        os.chmod(self.home, 0o700)
        self.rhome = os.path.join(root, "rhome")
        open(f"{self.home}/config.toml", "w").write(
            f'[hosts.box]\nssh = "box"\nssh_options = ["-F", "{ssh_dir}/ssh_config"]\n'
            f'shard = "{BIN}"\nhome = "{self.rhome}"\n')
        self.p = subprocess.Popen([BIN, "daemon", "--port", "0"], env=dict(os.environ, SHARD_HOME=self.home),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sock = os.path.join(self.home, "daemon.sock")
        for _ in range(800):
            try:
                self.c = Conn(sock)
                break
            except OSError:
                time.sleep(0.025)
        self.sock = sock

    def stop(self):
        self.p.terminate()
        self.p.wait(30)


def create_to_sync(c, cwd, script, host):
    t = time.perf_counter()
    req = {"type": "agent.create", "cwd": cwd, "provider": "scripted", "model": script}
    if host:
        req["host"] = "box"
    aid = c.call(req)["agent_id"]
    c.send({"type": "agent.attach", "agent_id": aid, "role": "observer"})
    c.until(lambda v: v.get("type") == "sync" and v.get("agent_id") == aid)
    return (time.perf_counter() - t) * 1000, aid


def med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def proc_rss_kb(pid):
    try:
        for l in open(f"/proc/{pid}/status"):
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
    except OSError:
        pass
    return 0


def proc_pss_kb(pid):
    """Proportional set size: shared pages (the ssh and shard binaries, libraries) counted
    once across the processes that share them."""
    try:
        for l in open(f"/proc/{pid}/smaps_rollup"):
            if l.startswith("Pss:"):
                return int(l.split()[1])
    except OSError:
        pass
    return 0


def fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def cmdline(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def children(pid):
    out = []
    for p in pids():
        try:
            st = open(f"/proc/{p}/stat").read()
            if int(st.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(p)
        except (OSError, ValueError, IndexError):
            pass
    return out


def fanout(d, cwd, host, clients=10):
    text = "x" * 20000
    script = os.path.join(d.home, f"fan-{host}.json")
    open(script, "w").write(json.dumps({"turns": [{"steps": [{"text": text, "chunk_chars": 10}]}]}))
    _, aid = create_to_sync(d.c, cwd, script, host)
    obs = []
    for _ in range(clients):
        o = Conn(d.sock)
        o.send({"type": "agent.attach", "agent_id": aid, "role": "observer"})
        o.until(lambda v: v.get("type") == "sync")
        obs.append(o)
    drv = Conn(d.sock)
    drv.call({"type": "agent.attach", "agent_id": aid, "role": "interactive"})
    done = [None] * clients
    counts = [0] * clients

    def read(i, o):
        def pred(v):
            if v.get("type") == "message_delta":
                counts[i] += 1
            return v.get("type") == "message_complete"
        o.until(pred)
        done[i] = time.perf_counter()

    ts = [threading.Thread(target=read, args=(i, o)) for i, o in enumerate(obs)]
    for t in ts:
        t.start()
    t0 = time.perf_counter()
    drv.send({"type": "prompt", "agent_id": aid, "message": "go"})
    for t in ts:
        t.join(300)
    return (max(done) - t0) * 1000, min(counts)


def main():
    root = tempfile.mkdtemp(prefix="hb", dir="/tmp")
    ssh_dir = os.path.join(root, "ssh"); os.makedirs(ssh_dir)
    cwd = os.path.join(root, "work"); os.makedirs(cwd)
    sshd, port = start_sshd(ssh_dir)
    script = os.path.join(root, "s.json"); open(script, "w").write('{"turns":[]}')
    out = {}
    try:
        cold, local_cold = [], []
        for _ in range(5):
            d = Daemon(root, ssh_dir)
            local_cold.append(create_to_sync(d.c, cwd, script, False)[0])
            cold.append(create_to_sync(d.c, cwd, script, True)[0])
            d.stop()
        d = Daemon(root, ssh_dir)
        create_to_sync(d.c, cwd, script, True)
        warm = [create_to_sync(d.c, cwd, script, True)[0] for _ in range(10)]
        local = [create_to_sync(d.c, cwd, script, False)[0] for _ in range(10)]
        # The floor of a warm create: one bare session over the established connection.
        ctl = os.path.join(d.home, "hosts", "box.0.sock")
        bare = []
        for _ in range(10):
            t = time.perf_counter()
            sh("ssh", "-S", ctl, "-o", "ControlMaster=no", "-F", f"{ssh_dir}/ssh_config", "box", "true")
            bare.append((time.perf_counter() - t) * 1000)
        out["bare_session"] = (med(bare), min(bare), max(bare))
        out["cold"] = (med(cold), min(cold), max(cold))
        out["local_first"] = (med(local_cold), min(local_cold), max(local_cold))
        out["warm"] = (med(warm), min(warm), max(warm))
        out["local"] = (med(local), min(local), max(local))
        # Fan-out, remote then local, same daemon.
        out["fan_remote"] = [fanout(d, cwd, True) for _ in range(3)]
        out["fan_local"] = [fanout(d, cwd, False) for _ in range(3)]
        d.stop()
        # N agents on one host.
        d = Daemon(root, ssh_dir)
        base_rss = proc_rss_kb(d.p.pid)
        t = time.perf_counter()
        for i in range(AGENTS):
            create_to_sync(d.c, cwd, script, True)
        out["n_create_s"] = time.perf_counter() - t
        kids = children(d.p.pid)
        master = [p for p in kids if " -M -S " in cmdline(p)]
        mux = [p for p in kids if cmdline(p).startswith("ssh -S ")]
        sessions = [p for p in children(sshd.pid)]
        sess_all = []
        for s in sessions:
            sess_all.append(s)
            sess_all.extend(children(s))
        sshd_procs = [p for p in sess_all if cmdline(p).startswith("sshd")]
        far = []
        for s in sess_all:
            far.extend(p for p in children(s) if "agent --remote" in cmdline(p))
        tcp = subprocess.run(["ss", "-tn", "state", "established", f"( dport = :{port} )"],
                             capture_output=True, text=True).stdout.strip().splitlines()[1:]
        out["n"] = {
            "daemon_rss_mb": proc_rss_kb(d.p.pid) / 1024, "daemon_rss_before_mb": base_rss / 1024,
            "daemon_fds": fds(d.p.pid),
            "masters": len(master), "master_rss_mb": sum(map(proc_rss_kb, master)) / 1024,
            "master_fds": sum(map(fds, master)),
            "mux_clients": len(mux), "mux_rss_mb": sum(map(proc_rss_kb, mux)) / 1024,
            "mux_fds": sum(map(fds, mux)), "mux_pss_mb": sum(map(proc_pss_kb, mux)) / 1024,
            "tcp_connections": len(tcp), "n_create_per_agent_ms": out["n_create_s"] * 1000 / AGENTS,
            "sshd_procs": len(sshd_procs), "sshd_rss_mb": sum(map(proc_rss_kb, sshd_procs)) / 1024,
            "sshd_fds": sum(map(fds, sshd_procs)),
            "far_runtimes": len(set(far)), "far_rss_mb": sum(map(proc_rss_kb, set(far))) / 1024,
            "far_fds": sum(map(fds, set(far))), "far_pss_mb": sum(map(proc_pss_kb, set(far))) / 1024,
            "daemon_pss_mb": proc_pss_kb(d.p.pid) / 1024,
        }
        d.stop()
    finally:
        sshd.terminate()
        sshd.wait(10)
    print(json.dumps(out, indent=1))


main()
