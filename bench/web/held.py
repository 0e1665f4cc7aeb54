#!/usr/bin/env python3
"""The web door under held connections: N half-sent requests (a request head that never
ends) from loopback, then, while they are held, one enrollment (code from `shard web`, then
POST /enroll) and one `shard ls` over the unix socket. Reports how long enrollment and
`shard ls` took, how many held connections the server closed at once (to make room), and
the longest any one stayed open after it was sent (WAIT seconds after the first was sent at
most; the rest are reported as still open).

Usage: bench/web/held.py [path/to/shard ...]   (default target/release/shard; env N=1000,
WAIT=40). Several binaries are measured one after the other, each against its own daemon.
"""
import json, os, re, select, socket, subprocess, sys, tempfile, time

N = int(os.environ.get("N", "1000"))
WAIT = float(os.environ.get("WAIT", "40"))


def start(bin_, home):
    env = dict(os.environ, SHARD_HOME=home, SHARD_LOG="warn")
    p = subprocess.Popen([bin_, "daemon", "--port", "0"], env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port = None
    for line in p.stderr:
        m = re.search(r"serving http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
        if "listening on" in line and port:
            break
    return p, port


def enroll(bin_, home, port):
    out = subprocess.run([bin_, "web"], env=dict(os.environ, SHARD_HOME=home),
                         capture_output=True, text=True, check=True).stdout.strip()
    code = out.split("/enroll#", 1)[1]
    body = json.dumps({"code": code})
    host = f"127.0.0.1:{port}"
    req = (f"POST /enroll HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
           f"Connection: close\r\n\r\n{body}")
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(req.encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    dt = time.perf_counter() - t0
    return dt, data.split(b" ", 2)[1].decode() if data else "none"


def run(bin_):
    home = tempfile.mkdtemp()
    p, port = start(bin_, home)
    held = []
    head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Held: 1\r\n".encode()
    t_open = time.perf_counter()
    sent = {}
    for _ in range(N):
        s = socket.create_connection(("127.0.0.1", port))
        try:
            s.sendall(head)
        except OSError:
            pass
        s.setblocking(False)
        sent[s.fileno()] = time.perf_counter()
        held.append(s)
    opened = time.perf_counter() - t_open
    enroll_s, status = enroll(bin_, home, port)
    t0 = time.perf_counter()
    ls = subprocess.run([bin_, "ls"], env=dict(os.environ, SHARD_HOME=home),
                        capture_output=True)
    ls_s = time.perf_counter() - t0
    open_ = {s.fileno(): s for s in held}
    closed_at = []
    deadline = t_open + WAIT
    while open_ and time.perf_counter() < deadline:
        r, _, _ = select.select(list(open_)[:1000], [], [], 0.2)
        for fd in r:
            s = open_[fd]
            try:
                data = s.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data == b"":
                closed_at.append(time.perf_counter() - sent[fd])
                del open_[fd]
                s.close()
    for s in open_.values():
        s.close()
    p.terminate(); p.wait()
    early = sum(1 for t in closed_at if t <= 1.0)
    last = max(closed_at) if closed_at else float("nan")
    print(f"{bin_}: {N} half-sent opened in {opened:.2f}s; enroll {status} in "
          f"{enroll_s*1000:.0f} ms; shard ls rc={ls.returncode} in {ls_s*1000:.0f} ms; "
          f"closed within 1 s of being sent (room made) {early}; closed {len(closed_at)}/{N}, "
          f"the longest held {last:.1f}s after it was sent; still open {WAIT:.0f}s after "
          f"the first was sent: {len(open_)}")


if __name__ == "__main__":
    print(f"# {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC nproc={os.cpu_count()} "
          f"load={open('/proc/loadavg').read().split()[0]}")
    for b in (sys.argv[1:] or ["target/release/shard"]):
        run(b)
