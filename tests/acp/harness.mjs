// The editor's side of `shard acp`, played by the official ACP client library
// (@agentclientprotocol/sdk, stable v1 entry point): spawns the real `shard acp`, records
// every session/update, and answers permission and file requests the way each scenario
// says. Used by tests/acp/run.mjs (the scenarios) and bench/acp/bench.mjs.

import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

export const WAIT_MS = 30_000;

export function fail(msg) {
  throw new Error(msg);
}

export function check(cond, msg) {
  if (!cond) fail(msg);
}

export function eq(a, b, msg) {
  const ja = JSON.stringify(a);
  const jb = JSON.stringify(b);
  if (ja !== jb) fail(`${msg}: expected ${jb}, got ${ja}`);
}

/** A temporary SHARD_HOME and working directory. */
export function sandbox() {
  const dir = mkdtempSync(join(tmpdir(), "shard-acp-"));
  const home = join(dir, "home");
  const work = join(dir, "work");
  mkdirSync(home, { mode: 0o700 });
  mkdirSync(work);
  return {
    dir,
    home,
    work,
    script(name, turns) {
      const p = join(dir, name);
      writeFileSync(p, JSON.stringify({ turns }));
      return p;
    },
  };
}

/** The environment `shard` runs with: no provider keys, this sandbox's home. */
export function env(sb, extra = {}) {
  const e = { ...process.env, SHARD_HOME: sb.home, ...extra };
  delete e.ANTHROPIC_API_KEY;
  delete e.OPENAI_API_KEY;
  return e;
}

export function shardBin() {
  const b = process.env.SHARD_BIN;
  if (!b) fail("SHARD_BIN is not set");
  return b;
}

/**
 * Starts `shard acp ARGS` and connects the client library to it. `handlers` may set
 * `permission(params)` (returns a RequestPermissionResponse, or a promise of one),
 * `readTextFile(params)`, `writeTextFile(params)`; `fs` advertises the editor-file
 * capabilities.
 */
export function startAcp(sb, args, handlers = {}, opts = {}) {
  const child = spawn(shardBin(), ["acp", ...args], {
    cwd: sb.work,
    env: env(sb, opts.env ?? {}),
    stdio: ["pipe", "pipe", "inherit"],
  });
  const updates = [];
  const waiters = [];
  const permissions = [];
  const app = acp
    .client({ name: "shard-acp-tests" })
    .onNotification("session/update", ({ params }) => {
      updates.push(params);
      for (const w of [...waiters]) w();
    })
    .onRequest("session/request_permission", async ({ params }) => {
      permissions.push(params);
      for (const w of [...waiters]) w();
      if (!handlers.permission) fail("unexpected permission request");
      return await handlers.permission(params);
    });
  if (handlers.readTextFile) {
    app.onRequest("fs/read_text_file", async ({ params }) => handlers.readTextFile(params));
  }
  if (handlers.writeTextFile) {
    app.onRequest("fs/write_text_file", async ({ params }) => handlers.writeTextFile(params));
  }
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const conn = app.connect(stream);
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return {
    child,
    conn,
    agent: conn.agent,
    updates,
    permissions,
    exited,
    /** Resolves once `pred()` holds (checked on every update and permission request). */
    until(pred, what, ms = WAIT_MS) {
      return new Promise((resolve, reject) => {
        if (pred()) return resolve(undefined);
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(tick), 1);
          reject(new Error(`timed out waiting for ${what}; updates: ${JSON.stringify(updates).slice(-3000)}`));
        }, ms);
        const tick = () => {
          if (pred()) {
            clearTimeout(timer);
            waiters.splice(waiters.indexOf(tick), 1);
            resolve(undefined);
          }
        };
        waiters.push(tick);
      });
    },
    /** The updates of `sessionId` of one kind. */
    of(sessionId, kind) {
      return updates
        .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind)
        .map((u) => u.update);
    },
    /** Closes the editor's end and waits for `shard acp` to exit. */
    async close() {
      child.stdin.end();
      const r = await withTimeout(exited, WAIT_MS, "shard acp to exit");
      return r;
    },
  };
}

export async function initialize(c, caps = {}) {
  return c.agent.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: caps,
    clientInfo: { name: "shard-acp-tests", version: "1" },
  });
}

export function withTimeout(p, ms, what) {
  let t;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise((_, reject) => {
      t = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]);
}

/** The JSON-RPC error of a rejected request. */
export async function rpcError(p) {
  try {
    await p;
  } catch (e) {
    return e;
  }
  fail("the request succeeded but should have failed");
}

/** Pid of the live `shard agent` process serving `sessionId` (its argv names it). */
export function runtimePid(sessionId) {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let argv;
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    if (argv.includes("agent") && argv.includes(sessionId)) {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state !== "Z" && state !== "X") return Number(name);
    }
  }
  return undefined;
}

/** Text of the agent_message_chunk updates of `sessionId`, joined. */
export function agentText(c, sessionId) {
  return c
    .of(sessionId, "agent_message_chunk")
    .map((u) => u.content.text ?? "")
    .join("");
}

/** Starts `shard daemon` for the sandbox and waits until it listens. */
export async function startDaemon(sb) {
  const child = spawn(shardBin(), ["daemon", "--port", "0"], {
    env: env(sb),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  await withTimeout(
    new Promise((resolve, reject) => {
      child.stderr.on("data", (d) => {
        log += d.toString();
        if (log.includes("listening on")) resolve(undefined);
      });
      child.on("exit", (code) => reject(new Error(`the daemon exited (${code}): ${log}`)));
    }),
    WAIT_MS,
    "the daemon to listen",
  );
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, log: () => log };
}
