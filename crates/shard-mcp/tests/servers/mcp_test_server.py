#!/usr/bin/env python3
"""A small MCP server for Shard's tests, standard library only.

Speaks JSON-RPC over stdio (default) or streamable HTTP (`--http PORT`, JSON responses).
Tools: echo (readOnlyHint), write_note (writes a file), env (reads a variable), crash
(exits mid-call), hang (never answers; logs the cancellation it gets), add_tool (adds
`extra` and sends notifications/tools/list_changed), image (an image result), screenshot
(readOnlyHint; text and two images, like a browser server's screenshot), picture
(readOnlyHint; a caption and a decodable 1x1 PNG), tree
(readOnlyHint; a directory tree as structured content), evil_tree (the same with terminal
escapes in its names).
Set MCP_TEST_LOG to a file to record every message received.
"""
import json
import os
import sys

VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
TOOLS = [
    {"name": "echo", "description": "Echoes its text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "write_note", "description": "Writes text to a file.",
     "inputSchema": {"type": "object", "properties": {"file": {"type": "string"}, "text": {"type": "string"}},
                     "required": ["file", "text"]}},
    {"name": "env", "description": "Reads an environment variable.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
    {"name": "crash", "description": "Exits mid-call.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "add_tool", "description": "Adds the tool `extra`.", "inputSchema": {"type": "object"}},
    {"name": "image", "description": "Returns a tiny image.", "inputSchema": {"type": "object"}},
    {"name": "big", "description": "Returns that many bytes of text.",
     "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}}},
    {"name": "screenshot", "description": "Returns a page title and two images.",
     "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "picture", "description": "Returns a caption and a 1x1 PNG.",
     "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "evil_tree", "description": "Returns a tree whose names carry terminal escapes.",
     "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "tree", "description": "Returns a directory tree as structured content.",
     "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
]
EXTRA = {"name": "extra", "description": "Added later.", "inputSchema": {"type": "object"}}


def log(msg):
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(msg) + "\n")


def text(t, error=False):
    return {"content": [{"type": "text", "text": t}], "isError": error}


def handle(msg, notify):
    """Returns the response (or None), calling notify(msg) for notifications to send."""
    log(msg)
    method = msg.get("method")
    mid = msg.get("id")
    params = msg.get("params") or {}
    if mid is None:
        return None
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in VERSIONS else VERSIONS[0]
        result = {"protocolVersion": version,
                  "capabilities": {"tools": {"listChanged": True}},
                  "serverInfo": {"name": "shard-test-server", "version": "1.0"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            result = text("echo: " + str(args.get("text")))
        elif name == "write_note":
            with open(args["file"], "w") as f:
                f.write(args["text"])
            result = text("wrote " + args["file"])
        elif name == "big":
            result = text("x" * int(args.get("bytes", 0)))
        elif name == "env":
            result = text(os.environ.get(args.get("name", ""), "<unset>"))
        elif name == "crash":
            sys.stderr.write("test server: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        elif name == "hang":
            return None
        elif name == "add_tool":
            if EXTRA not in TOOLS:
                TOOLS.append(EXTRA)
            notify({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            result = text("added extra")
        elif name == "screenshot":
            result = {"content": [
                {"type": "text", "text": "Page title: Example"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "image", "data": "R0lGODlhAQABAAAAACw=", "mimeType": "image/gif"},
                {"type": "image", "data": "AAAA", "mimeType": "image/tiff"},
            ]}
        elif name == "picture":
            result = {"content": [
                {"type": "text", "text": "A dot"},
                {"type": "image", "mimeType": "image/png", "data":
                 "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="},
            ]}
        elif name == "evil_tree":
            result = {"content": [{"type": "text", "text": "a tree"}],
                      "structuredContent": {"name": "\u001b]0;pwned\u0007top", "kind": "dir", "children": [
                          {"name": "\u001b[2Jwiped", "kind": "file"}]}}
        elif name == "tree":
            result = {"content": [{"type": "text", "text": "src/ (2 entries)"}],
                      "structuredContent": {"name": "src", "kind": "dir", "children": [
                          {"name": "main.rs", "kind": "file"},
                          {"name": "util", "kind": "dir", "children": [{"name": "mod.rs", "kind": "file"}]}]}}
        elif name == "image":
            result = {"content": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]}
        elif name == "extra":
            result = text("extra ran")
        else:
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown tool " + str(name)}}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no method " + str(method)}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


def stdio():
    out = sys.stdout

    def send(m):
        out.write(json.dumps(m) + "\n")
        out.flush()

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        resp = handle(json.loads(line), send)
        if resp is not None:
            send(resp)


def http(port):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            self.send_response(405)
            self.end_headers()

        def do_DELETE(self):
            self.send_response(200)
            self.end_headers()

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            msg = json.loads(body)
            log({"headers": {"authorization": self.headers.get("Authorization")}})
            resp = handle(msg, lambda m: None)
            if resp is None:
                self.send_response(202)
                self.end_headers()
                return
            data = json.dumps(resp).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if msg.get("method") == "initialize":
                self.send_header("Mcp-Session-Id", "test-session")
            self.end_headers()
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", port), H)
    sys.stdout.write("listening %d\n" % srv.server_address[1])
    sys.stdout.flush()
    srv.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        http(int(sys.argv[2]))
    else:
        stdio()
