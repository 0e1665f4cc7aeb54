// Start-up of ACP agents, measured the way an editor sees it: spawn → `initialize`
// answered, then `session/new` answered, over raw JSON-RPC lines on stdio. Shard is
// measured direct (`shard acp --no-daemon`) and through a running daemon; peer agents
// installed from npm (see bench/acp/README.md) are measured in the same run, as far as
// they go without network keys.
//
// Usage: node bench/acp/bench.mjs [--runs N] [--shard path/to/shard] [--peers DIR] [--install]
//   DIR holds node_modules/.bin of the peers (default /tmp/acp-peers); --install first
//   installs the pinned peers that are missing there (npm). The last lines say which peers
//   were measured and which could not be installed.

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const RUNS = Number(opt("--runs", "20"));
const SHARD = resolve(opt("--shard", "target/release/shard"));
const PEERS = resolve(opt("--peers", "/tmp/acp-peers"));
const TIMEOUT = 20_000;

/** One start: spawn, initialize, session/new; times in ms, or the error seen. */
function once(cmd, argv, env, cwd) {
  return new Promise((done) => {
    const t0 = performance.now();
    const child = spawn(cmd, argv, { env, cwd, stdio: ["pipe", "pipe", "pipe"], detached: true });
    let buf = "";
    let stderr = "";
    const out = { init: undefined, newSession: undefined, error: undefined };
    const finish = () => {
      clearTimeout(timer);
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
      done(out);
    };
    const timer = setTimeout(() => {
      out.error = out.error ?? `timeout after ${TIMEOUT} ms (stderr: ${stderr.slice(-200).trim()})`;
      finish();
    }, TIMEOUT);
    child.on("error", (e) => {
      out.error = String(e);
      finish();
    });
    child.stderr.on("data", (d) => (stderr += d));
    child.on("exit", (code) => {
      if (out.newSession === undefined && !out.error) {
        out.error = `exited ${code} (stderr: ${stderr.slice(-300).trim()})`;
        finish();
      }
    });
    let t1;
    child.stdout.on("data", (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          continue;
        }
        if (msg.id === 1) {
          out.init = performance.now() - t0;
          if (msg.error) {
            out.error = `initialize: ${JSON.stringify(msg.error)}`;
            return finish();
          }
          t1 = performance.now();
          child.stdin.write(
            JSON.stringify({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd, mcpServers: [] } }) + "\n",
          );
        } else if (msg.id === 2) {
          if (msg.error) out.error = `session/new: ${JSON.stringify(msg.error).slice(0, 200)}`;
          else out.newSession = performance.now() - t1;
          return finish();
        }
      }
    });
    child.stdin.write(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } } },
      }) + "\n",
    );
  });
}

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return "—";
  const med = s[Math.floor(s.length / 2)];
  return `median ${med.toFixed(1)} ms (min ${s[0].toFixed(1)}, max ${s[s.length - 1].toFixed(1)}, n=${s.length})`;
}

async function measure(label, cmd, argv, env, cwd) {
  const inits = [];
  const news = [];
  let error;
  for (let i = 0; i < RUNS; i++) {
    const r = await once(cmd, argv, env, cwd);
    if (r.init !== undefined) inits.push(r.init);
    if (r.newSession !== undefined) news.push(r.newSession);
    if (r.error) error = r.error;
  }
  console.log(`| ${label} | ${stats(inits)} | ${stats(news)} | ${error ? error.replace(/\|/g, "/") : ""} |`);
  return { inits, news, error };
}

const dir = mkdtempSync(join(tmpdir(), "acp-bench-"));
const home = join(dir, "shard-home");
const peerHome = join(dir, "peer-home");
const work = join(dir, "work");
for (const d of [home, peerHome, work]) mkdirSync(d, { mode: 0o700 });
const script = join(dir, "script.json");
await import("node:fs").then((fs) => fs.writeFileSync(script, JSON.stringify({ turns: [] })));
const base = { ...process.env };
for (const k of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "CODEX_API_KEY"]) delete base[k];
const shardEnv = { ...base, SHARD_HOME: home };
// Peers get an empty HOME: no credentials, no user configuration.
const peerEnv = { ...base, HOME: peerHome, XDG_CONFIG_HOME: join(peerHome, ".config") };

console.log(`ACP start-up, ${RUNS} runs each; shard = ${SHARD}`);
console.log("| agent | spawn → initialize answered | session/new answered | note |");
console.log("|---|---|---|---|");
const shardArgs = ["acp", "--provider", "scripted", "--script", script];
await measure("shard acp (direct)", SHARD, [...shardArgs, "--no-daemon"], shardEnv, work);

// Through a daemon.
const daemon = spawn(SHARD, ["daemon", "--port", "0"], { env: shardEnv, stdio: ["ignore", "ignore", "pipe"], detached: true });
await new Promise((ok, bad) => {
  let log = "";
  daemon.stderr.on("data", (d) => {
    log += d;
    if (log.includes("listening on")) ok(undefined);
  });
  daemon.on("exit", () => bad(new Error(`daemon exited: ${log}`)));
});
await measure("shard acp (through the daemon)", SHARD, shardArgs, shardEnv, work);
try {
  process.kill(-daemon.pid, "SIGTERM");
} catch {}

// Peers: measured when installed under PEERS (`--install` installs the pinned versions
// there first with npm); each one that is missing says so.
const PEER_LIST = [
  { pkg: "@zed-industries/claude-code-acp@0.16.2", bin: "claude-code-acp", argv: [] },
  { pkg: "@zed-industries/codex-acp@0.16.0", bin: "codex-acp", argv: [] },
  { pkg: "@google/gemini-cli@0.61.0", bin: "gemini", argv: ["--experimental-acp"] },
];
const bin = (name) => join(PEERS, "node_modules/.bin", name);
const missing = (p) => !existsSync(bin(p.bin));
const notInstalled = new Map();
if (args.includes("--install") && PEER_LIST.some(missing)) {
  mkdirSync(PEERS, { recursive: true });
  for (const p of PEER_LIST.filter(missing)) {
    const r = spawnSync("npm", ["install", "--prefix", PEERS, "--no-audit", "--no-fund", p.pkg], { encoding: "utf8", timeout: 600_000 });
    if (r.status !== 0) notInstalled.set(p.pkg, `npm install failed: ${(r.stderr || String(r.error)).trim().split("\n").slice(-1)[0]}`);
  }
}
const measured = [];
for (const p of PEER_LIST) {
  const label = `${p.pkg}${p.argv.length ? " " + p.argv.join(" ") : ""}`;
  if (missing(p)) {
    const why = notInstalled.get(p.pkg) ?? `not installed (${bin(p.bin)} is absent; run with --install)`;
    notInstalled.set(p.pkg, why);
    console.log(`| ${label} | — | — | ${why.replace(/\|/g, "/")} |`);
    continue;
  }
  await measure(label, bin(p.bin), p.argv, peerEnv, work);
  measured.push(p.pkg);
}
console.log("");
console.log(`Peers measured: ${measured.length ? measured.join(", ") : "none"}.`);
console.log(
  `Peers not installed: ${notInstalled.size ? [...notInstalled].map(([k, v]) => `${k} (${v})`).join("; ") : "none"}.`,
);
rmSync(dir, { recursive: true, force: true });
