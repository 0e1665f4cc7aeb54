#!/usr/bin/env python3
"""End-to-end benchmark of `shard run` against a local mock Anthropic server.

The server streams a three-turn tool conversation: (1) a `read` of notes.txt, (2) `bash`
running `echo hello`, (3) a 2,000-word answer in small chunks. We measure the whole
`shard run` process: wall time, CPU time (user+sys) and peak resident memory, over several
runs, plus the size of the first request body (system prompt + tool schemas). Per run, the
mock also stamps when the first request arrives and when the last response is written, on
the driver's clock: start → first request and last response → exit (start is just before
the driver spawns GNU time, which spawns shard; exit is when that wait returns).

Usage: bench/e2e/run.py [path/to/shard] [runs]
SHARD_BENCH_CONFIG: text written to the benchmark's config.toml (e.g. `[sandbox]
mode = "off"` to compare with the tool sandbox disabled).
SHARD_BENCH_DUMP: a file the first request body is written to (pretty JSON).
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/shard")
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
WORDS = ("the agent reads files runs commands and answers in plain words " * 250).split()[:2000]
first_request_sizes = []
# Per run: driver-clock times of the first request's arrival and of the last response sent.
stamps = {}


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def tool_turn(call_id, name, args):
    out = [sse("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": None, "usage": {"input_tokens": 900, "output_tokens": 1}}}),
           sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}})]
    js = json.dumps(args)
    for i in range(0, len(js), 8):
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": js[i:i + 8]}}))
    out += [sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
            sse("message_stop", {"type": "message_stop"})]
    return b"".join(out)


def answer_turn():
    out = [sse("message_start", {"type": "message_start", "message": {"id": "msg_3", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": None, "usage": {"input_tokens": 1000, "output_tokens": 1}}}),
           sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    for i in range(0, len(WORDS), 3):
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " ".join(WORDS[i:i + 3]) + " "}}))
    out += [sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2700}}),
            sse("message_stop", {"type": "message_stop"})]
    return b"".join(out)


TURNS = [tool_turn("toolu_1", "read", {"path": "notes.txt"}),
         tool_turn("toolu_2", "bash", {"command": "echo hello"}),
         answer_turn()]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; with Nagle on, the second waits for the
    # client's delayed ACK (~40 ms per response), which is the mock's cost, not Shard's.
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def do_POST(self):
        arrived = time.perf_counter()
        if self.headers.get("x-bench-warmup"):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(204)
            self.end_headers()
            return
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        req = json.loads(body)
        results = sum(1 for m in req["messages"] for b in (m["content"] if isinstance(m["content"], list) else []) if b.get("type") == "tool_result")
        if results == 0:
            first_request_sizes.append(len(body))
            stamps.setdefault("first_request", arrived)
            if os.environ.get("SHARD_BENCH_DUMP") and len(first_request_sizes) == 1:
                with open(os.environ["SHARD_BENCH_DUMP"], "w") as f:
                    json.dump(req, f, indent=1)
        payload = TURNS[min(results, 2)]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        stamps["last_response"] = time.perf_counter()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    # One request before the timed runs: the server's first request pays Python's own
    # first-time work, which is not shard's start.
    import http.client
    warm = http.client.HTTPConnection("127.0.0.1", port)
    warm.request("POST", "/warmup", body=b"{}", headers={"x-bench-warmup": "1"})
    warm.getresponse().read()
    warm.close()
    tmp = tempfile.mkdtemp(prefix="shard-e2e-")
    home, work = os.path.join(tmp, "home"), os.path.join(tmp, "work")
    os.makedirs(home); os.makedirs(work)
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write("remember to benchmark\n" * 20)
    if os.environ.get("SHARD_BENCH_CONFIG"):
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(os.environ["SHARD_BENCH_CONFIG"])
    env = dict(os.environ, SHARD_HOME=home, ANTHROPIC_API_KEY="sk-bench", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}")
    env.pop("OPENAI_API_KEY", None)
    walls, cpus, rss, to_first, to_exit, pipes_closed = [], [], [], [], [], []
    # GNU time writes its figures to this file after shard exits and before the driver's
    # wait returns: on a busy disk that write can wait for the file system's journal, which
    # would count as shard's exit. On tmpfs it cannot.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tmp
    timefile = os.path.join(tempfile.mkdtemp(prefix="shard-e2e-time-", dir=shm), "time.txt")
    # Likewise this process's first spawn (about a millisecond more than the next ones).
    subprocess.run(["/usr/bin/time", "-o", timefile, "-f", "%e", "true"], capture_output=True)
    for _ in range(RUNS):
        wrap = os.environ.get("SHARD_BENCH_WRAP", "").split()
        # GNU time measures the shard process itself: getrusage(RUSAGE_CHILDREN) here would
        # count the forked copy of this Python process before exec as the child's peak RSS.
        timed = ["/usr/bin/time", "-o", timefile, "-f", "%e %U %S %M"]
        stamps.clear()
        t0 = time.perf_counter()
        p = subprocess.Popen(wrap + timed + [BIN, "run", "--yes", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "summarize notes.txt"],
                             cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        outs = {}

        def drain(name, f):
            outs[name] = f.read()
            stamps["eof_" + name] = time.perf_counter()
        readers = [threading.Thread(target=drain, args=(n, f)) for n, f in (("stdout", p.stdout), ("stderr", p.stderr))]
        for r in readers:
            r.start()
        p.wait()
        ended = time.perf_counter()
        for r in readers:
            r.join()
        p.stdout, p.stderr = outs["stdout"], outs["stderr"]
        pipes_closed.append((max(stamps["eof_stdout"], stamps["eof_stderr"]) - stamps["last_response"]) * 1000)
        wall = ended - t0
        if p.returncode != 0:
            print(p.stderr.decode()[-2000:]); sys.exit(1)
        _, user, system, maxrss = open(timefile).read().split()[-4:]
        walls.append(wall * 1000)
        cpus.append((float(user) + float(system)) * 1000)
        rss.append(int(maxrss) / 1024)
        to_first.append((stamps["first_request"] - t0) * 1000)
        to_exit.append((ended - stamps["last_response"]) * 1000)
    words = len(p.stdout.split())
    print(f"runs={RUNS} answer_words={words}")
    print(f"wall_ms median={statistics.median(walls):.1f} min={min(walls):.1f}")
    print(f"cpu_ms median={statistics.median(cpus):.1f} min={min(cpus):.1f}")
    print(f"peak_rss_mb max={max(rss):.1f}")
    print("start_to_first_request_ms " + " ".join(f"{x:.1f}" for x in to_first) + f" (median {statistics.median(to_first):.1f})")
    print("last_response_to_exit_ms " + " ".join(f"{x:.1f}" for x in to_exit) + f" (median {statistics.median(to_exit):.1f})")
    print("last_response_to_output_closed_ms " + " ".join(f"{x:.1f}" for x in pipes_closed) + f" (median {statistics.median(pipes_closed):.1f})")
    print(f"first_request_bytes={first_request_sizes[0]}")
    server.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(os.path.dirname(timefile), ignore_errors=True)


if __name__ == "__main__":
    main()
