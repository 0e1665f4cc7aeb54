// The recorded event streams of tests/fixtures/event-streams/ through the browser client's
// own reducer: web/pane.js (with its Conversation and Requests) in headless Chromium, fed
// each NAME.jsonl event by event, must hold the view in NAME.view.json, the same file the
// Rust AgentView test reads (crates/shard-client/tests/event_streams.rs). Run by
// crates/shard-cli/tests/web/browser.rs; standalone: node tests/browser/event-streams.mjs.
// The page's modules come from the checkout's web/ through a loopback server of this
// script's own, so nothing else (no daemon, no enrollment) is involved.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { launch, T } from "./lib.mjs";

const repo = join(dirname(fileURLToPath(import.meta.url)), "../..");
const fixtures = join(repo, "tests/fixtures/event-streams");

/** Serves `/` (an empty page) and the files of web/ under `/web/`, read-only. */
function serve() {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end("<!doctype html><meta charset=utf-8><title>event streams</title><body></body>");
      return;
    }
    if (path === "/favicon.ico") {
      res.writeHead(204).end();
      return;
    }
    const m = /^\/web\/([a-z-]+\.js)$/.exec(path);
    if (!m) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = readFileSync(join(repo, "web", m[1]));
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const names = readdirSync(fixtures)
  .filter((f) => f.endsWith(".jsonl"))
  .map((f) => f.slice(0, -".jsonl".length))
  .sort();
assert.ok(names.length >= 5, "fixtures missing in " + fixtures);

const server = /** @type {import("node:http").Server} */ (await serve());
const addr = /** @type {import("node:net").AddressInfo} */ (server.address());
const browser = await launch();
let failed = 0;
try {
  const page = await browser.newPage();
  /** @type {string[]} */
  const problems = [];
  page.on("pageerror", (e) => problems.push("pageerror: " + e.message));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push("console: " + m.text());
  });
  await page.goto(`http://127.0.0.1:${addr.port}/`, { timeout: T });
  for (const name of names) {
    const events = readFileSync(join(fixtures, name + ".jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    const expected = JSON.parse(readFileSync(join(fixtures, name + ".view.json"), "utf8"));
    const got = await page.evaluate(async (evs) => {
      const { Pane } = await import("/web/pane.js");
      // A connection that never answers: the reducer under test is fed events only, and
      // the requests it makes on its own (the mode and model pickers) stay pending.
      const conn = { request: () => new Promise(() => {}), send: () => {} };
      const pane = new Pane(/** @type {any} */ (conn), "agent-fixture", () => undefined, () => {});
      document.body.replaceChildren(pane.el);
      for (const ev of evs) if (ev.type !== "hello" && ev.type !== "response") pane.onEvent(ev);
      // Deltas are painted on the next animation frame; the state is read after it.
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      const messages = [];
      for (const [id, v] of pane.conv.messages) {
        if (!pane.conv.el.contains(v.el)) continue; // replaced, not shown
        messages.push({
          id,
          role: v.el.classList.contains("role-user") ? "user" : "assistant",
          text: v.blocks
            .filter((/** @type {any} */ b) => b && b.kind === "text")
            .map((/** @type {any} */ b) => b.text)
            .join(""),
        });
      }
      const tools = [...pane.conv.tools]
        .filter(([, t]) => pane.conv.el.contains(t.el))
        .map(([id, t]) => ({ id, name: t.head.textContent, done: t.el.classList.contains("done"), is_error: t.el.classList.contains("failed") }))
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const pending = [...pane.requests.pending.keys()].sort();
      return { status: pane.status, mode: pane.mode, messages, tools, pending };
    }, events);
    try {
      assert.deepEqual(got, expected);
      console.log(`ok   ${name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: the browser's view differs from ${name}.view.json\n${e instanceof Error ? e.message : String(e)}`);
    }
  }
  assert.deepEqual(problems, [], "errors in the page");
} finally {
  await browser.close();
  server.close();
}
if (failed) {
  console.log(`${failed} of ${names.length} streams give another view in the browser`);
  process.exit(1);
}
console.log(`all ${names.length} recorded streams give their expected view in the browser`);
