#!/usr/bin/env python3
"""Tool-step cost of the sandbox: `shard run` against a local mock
Anthropic server whose model asks for STEPS `bash` calls in a row, then answers.

Measured at the mock, per tool step:
- step: one model request's arrival to the next one's (the model's streamed tool call,
  the Runtime's parse, the gate, the `bash` spawn and run, the result and the next request);
- tool gap: the end of the model's response to the arrival of the next request (the same
  minus the mock's own streaming).

The run alternates the sandbox on (default `auto`) and off (`[sandbox] mode = "off"`)
ROUNDS times, each run a fresh `shard run` with STEPS steps; the first step of each run is
dropped (first-call costs, e.g. the private temp dir). Prints medians, p90 and the ratio.

Usage: bench/sandbox/tool_step.py [path/to/shard] [rounds] [steps]
COMMAND: the bash command of every step (default `echo hello`).
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/shard"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 6
STEPS = int(sys.argv[3]) if len(sys.argv) > 3 else 30
COMMAND = os.environ.get("COMMAND", "echo hello")


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def message(blocks_sse, stop):
    start = sse("message_start", {"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": None, "usage": {"input_tokens": 900, "output_tokens": 1}}})
    end = [sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 30}}),
           sse("message_stop", {"type": "message_stop"})]
    return start + b"".join(blocks_sse) + b"".join(end)


def tool_turn(call_id):
    js = json.dumps({"command": COMMAND})
    blocks = [sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": call_id, "name": "bash", "input": {}}})]
    blocks += [sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": js[i:i + 8]}}) for i in range(0, len(js), 8)]
    blocks.append(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    return message(blocks, "tool_use")


ANSWER = message([sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                  sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}}),
                  sse("content_block_stop", {"type": "content_block_stop", "index": 0})], "end_turn")

arrivals, sent = [], []  # per request of the current run


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # see bench/e2e/run.py

    def log_message(self, *a):
        pass

    def do_POST(self):
        arrivals.append(time.perf_counter())
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        req = json.loads(body)
        results = sum(1 for m in req["messages"] for b in (m["content"] if isinstance(m["content"], list) else []) if b.get("type") == "tool_result")
        payload = tool_turn(f"toolu_{results}") if results < STEPS else ANSWER
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        sent.append(time.perf_counter())


def one_run(env, work):
    arrivals.clear(); sent.clear()
    p = subprocess.run([BIN, "run", "--yes", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "go"],
                       cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0 or len(arrivals) != STEPS + 1:
        print(p.stderr.decode()[-2000:]); sys.exit(1)
    steps = [(arrivals[i + 1] - arrivals[i]) * 1000 for i in range(1, STEPS)]
    gaps = [(arrivals[i + 1] - sent[i]) * 1000 for i in range(1, STEPS)]
    return steps, gaps


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, len(xs) * p // 100)]


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    tmp = tempfile.mkdtemp(prefix="shard-toolstep-")
    arms = {}
    for name, config in (("on", ""), ("off", '[sandbox]\nmode = "off"\n')):
        home, work = os.path.join(tmp, name, "home"), os.path.join(tmp, name, "work")
        os.makedirs(home); os.makedirs(work)
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(config)
        env = dict(os.environ, SHARD_HOME=home, ANTHROPIC_API_KEY="sk-bench", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}")
        env.pop("OPENAI_API_KEY", None)
        arms[name] = (env, work, [], [])
    for _ in range(ROUNDS):
        for name, (env, work, steps, gaps) in arms.items():
            s, g = one_run(env, work)
            steps += s; gaps += g
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} load={os.getloadavg()[0]:.2f} rounds={ROUNDS} steps={STEPS} command={COMMAND!r}")
    for name, (_, _, steps, gaps) in arms.items():
        print(f"sandbox {name:3}: step median={statistics.median(steps):.2f} p90={pct(steps, 90):.2f} ms; "
              f"tool gap median={statistics.median(gaps):.2f} p90={pct(gaps, 90):.2f} ms ({len(steps)} steps)")
    on, off = arms["on"], arms["off"]
    print(f"ratio on/off: step {statistics.median(on[2]) / statistics.median(off[2]):.3f}, "
          f"tool gap {statistics.median(on[3]) / statistics.median(off[3]):.3f}")
    server.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
