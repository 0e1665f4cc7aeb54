// End-to-end scenarios of `shard acp`, driven by the official ACP client library against
// the scripted model. `node tests/acp/run.mjs NAME` runs one scenario and exits 0 when it
// passes; crates/shard-cli/tests/cli/acp.rs runs each (SHARD_BIN names the binary).

import { connect } from "node:net";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawn, spawnSync } from "node:child_process";
import {
  agentText,
  check,
  eq,
  env,
  fail,
  initialize,
  rpcError,
  runtimePid,
  sandbox,
  shardBin,
  startAcp,
  startDaemon,
  withTimeout,
  WAIT_MS,
} from "./harness.mjs";

const text = (t, chunk = 3) => ({ steps: [{ text: t, chunk_chars: chunk }, { usage: { input: 10, output: 5 } }] });
const tool = (id, name, args, before = "Working.") => ({
  steps: [{ text: before, chunk_chars: 4 }, { tool_call: { id, name, args }, chunk_chars: 6 }, { usage: { input: 20, output: 8 } }],
});
const allowOnce = (p) => ({ outcome: { outcome: "selected", optionId: p.options.find((o) => o.kind === "allow_once").optionId } });
const rejectOnce = (p) => ({ outcome: { outcome: "selected", optionId: p.options.find((o) => o.kind === "reject_once").optionId } });

/** A copy of the MCP test server inside the workspace (servers run in the tool sandbox,
 * where the host's /tmp is not visible), or undefined without python3. */
function mcpServerCopy(sb) {
  if (spawnSync("python3", ["--version"]).status !== 0) return undefined;
  const src = join(dirname(fileURLToPath(import.meta.url)), "../../crates/shard-mcp/tests/servers/mcp_test_server.py");
  mkdirSync(join(sb.work, ".srv"), { recursive: true });
  const dst = join(sb.work, ".srv", "mcp_test_server.py");
  copyFileSync(src, dst);
  return dst;
}

/** A sandbox with the MCP test server and a fresh secret, or undefined (printed) without
 * python3. */
function mcpSetup() {
  const sb = sandbox();
  const srv = mcpServerCopy(sb);
  if (!srv) {
    console.log("SKIPPED: python3 is not installed");
    return undefined;
  }
  return { sb, srv, secret: `ed-secret-${process.pid}-${Date.now()}` };
}

/** Shuts the sandbox's daemon down (killing it if it does not exit). */
async function stopDaemon(sb, d) {
  const sd = await ShardClient.connect(join(sb.home, "daemon.sock")).catch(() => undefined);
  if (sd) {
    await sd.call({ type: "daemon.shutdown", force: true }).catch(() => undefined);
    sd.close();
  }
  await withTimeout(d.exited, WAIT_MS, "the daemon to exit").catch(() => d.child.kill("SIGKILL"));
}

/** The editor's server `ed`: the test server with a public and a secret variable. */
const edServer = (path, secret) => ({
  name: "ed",
  command: "python3",
  args: [path],
  env: [
    { name: "ED_MODE", value: "editor-mode" },
    { name: "ED_TOKEN", value: secret },
  ],
});

/** True when `shard agent` reports a complete tool sandbox here. */
function sandboxComplete(sb) {
  const r = spawnSync(shardBin(), ["agent", "--cwd", sb.work], { input: "", env: env(sb), encoding: "utf8", timeout: WAIT_MS });
  const hello = JSON.parse(r.stdout.split("\n")[0]);
  const caps = JSON.stringify(hello.capabilities ?? []);
  return caps.includes('"sandbox"') && !caps.includes("sandbox-missing");
}

/** Every file under `dir` whose bytes contain `needle`. */
function filesContaining(dir, needle) {
  const hits = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) hits.push(...filesContaining(p, needle));
    else if (st.isFile() && readFileSync(p).includes(needle)) hits.push(p);
  }
  return hits;
}

/** Asserts the Runtime of `sessionId` holds `secret` in neither its command line nor its
 * readable environment. */
function runtimeHides(sessionId, secret) {
  const pid = runtimePid(sessionId);
  check(pid, "the Runtime's pid");
  check(!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(secret), "the secret is not on the Runtime's command line");
  let environ = "";
  try {
    environ = readFileSync(`/proc/${pid}/environ`, "utf8");
  } catch {
    return pid; // non-dumpable: not readable at all
  }
  check(!environ.includes(secret), "the secret is scrubbed from the Runtime's /proc environ");
  return pid;
}

const scenarios = {
  /** initialize, session/new, prompt blocks, thoughts, set_mode, slash commands, errors. */
  async basics() {
    const sb = sandbox();
    const script = sb.script("s.json", [
      { steps: [{ thinking: "Let me think.", chunk_chars: 5 }, { text: "Hello from Shard.", chunk_chars: 4 }, { usage: { input: 5, output: 5 } }] },
    ]);
    const c = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", script]);
    const init = await initialize(c);
    eq(init.protocolVersion, 1, "protocolVersion");
    eq(init.agentCapabilities.loadSession, true, "loadSession");
    eq(init.agentCapabilities.promptCapabilities.image, true, "image prompts");
    eq(init.agentCapabilities.promptCapabilities.embeddedContext, true, "embedded context");
    eq(init.agentInfo.name, "shard", "agentInfo.name");
    eq(init.authMethods ?? [], [], "no authMethods with a usable provider");

    const s = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [] });
    check(/^sess-[0-9A-Z]{26}$/.test(s.sessionId), `sessionId is a Shard session id: ${s.sessionId}`);
    check(existsSync(join(sb.home, "sessions", s.sessionId)), "the Shard session exists on disk");
    eq(s.modes.currentModeId, "build", "current mode");
    const modeIds = s.modes.availableModes.map((m) => m.id);
    check(modeIds.includes("build") && modeIds.includes("plan"), `modes: ${modeIds}`);
    await c.until(() => c.of(s.sessionId, "available_commands_update").length > 0, "available commands");
    const cmds = c.of(s.sessionId, "available_commands_update")[0].availableCommands.map((x) => x.name);
    check(cmds.includes("compact"), `commands: ${cmds}`);

    const r = await c.agent.request("session/prompt", {
      sessionId: s.sessionId,
      prompt: [
        { type: "text", text: "Explain " },
        { type: "resource_link", name: "main.rs", uri: `file://${sb.work}/main.rs` },
        { type: "resource", resource: { uri: `file://${sb.work}/lib.rs`, text: "pub fn unsaved() {}", mimeType: "text/x-rust" } },
        { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
      ],
    });
    eq(r.stopReason, "end_turn", "stopReason");
    eq(agentText(c, s.sessionId), "Hello from Shard.", "agent text");
    const thought = c.of(s.sessionId, "agent_thought_chunk").map((u) => u.content.text).join("");
    eq(thought, "Let me think.", "thought chunks");
    const transcript = readFileSync(join(sb.home, "sessions", s.sessionId, "session.jsonl"), "utf8");
    check(transcript.includes("pub fn unsaved() {}"), "the embedded resource reached the prompt");
    check(transcript.includes("[@main.rs](file://"), "the resource link reached the prompt");
    check(transcript.includes("image/png"), "the image reached the prompt");

    await c.agent.request("session/set_mode", { sessionId: s.sessionId, modeId: "plan" });
    await c.until(() => c.of(s.sessionId, "current_mode_update").some((u) => u.currentModeId === "plan"), "current_mode_update plan");

    const compact = await c.agent.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: "/compact" }] });
    eq(compact.stopReason, "end_turn", "/compact answers");

    // Errors: unknown method, a missing field, a bad block, an unknown session, a bad mode.
    const e1 = await rpcError(c.agent.request("session/fork_everything", {}));
    eq(e1.code, -32601, "unknown method");
    const e2 = await rpcError(c.agent.request("session/new", { mcpServers: [] }));
    eq(e2.code, -32602, "missing cwd");
    check(JSON.stringify(e2).includes("cwd"), `the error names cwd: ${JSON.stringify(e2)}`);
    const e3 = await rpcError(c.agent.request("session/new", { cwd: "relative/dir", mcpServers: [] }));
    eq(e3.code, -32602, "relative cwd");
    const e4 = await rpcError(c.agent.request("session/prompt", { sessionId: "sess-00000000000000000000000000", prompt: [{ type: "text", text: "x" }] }));
    eq(e4.code, -32602, "unknown session");
    check(JSON.stringify(e4).includes("sessionId"), `the error names sessionId: ${JSON.stringify(e4)}`);
    const e5 = await rpcError(c.agent.request("session/set_mode", { sessionId: s.sessionId, modeId: "no-such-mode" }));
    eq(e5.code, -32602, "unknown mode");
    const e6 = await rpcError(c.agent.request("session/load", { sessionId: "sess-00000000000000000000000000", cwd: sb.work, mcpServers: [] }));
    eq(e6.code, -32002, "unknown session on load");
    // A raw line the library would not send: a prompt block with an unknown type.
    const raw = spawnSync(shardBin(), ["acp", "--no-daemon", "--provider", "scripted", "--script", script], {
      input:
        JSON.stringify({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId: s.sessionId, prompt: [{ type: "hologram" }] } }) +
        "\n" +
        JSON.stringify({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: s.sessionId } }) +
        "\nnot json\n",
      env: env(sb),
      encoding: "utf8",
      timeout: WAIT_MS,
    });
    const answers = raw.stdout.trim().split("\n").map((l) => JSON.parse(l));
    const byId = (id) => answers.find((a) => a.id === id);
    eq(byId(1).error.code, -32602, "bad block type");
    eq(byId(1).error.data.field, "prompt[0].type", "bad block names its field");
    eq(byId(2).error.data.field, "prompt", "missing prompt names its field");
    eq(byId(null).error.code, -32700, "malformed JSON");
    await c.close();

    // No provider usable: initialize offers an auth method.
    const bare = startAcp(sb, ["--no-daemon"]);
    const init2 = await initialize(bare);
    check((init2.authMethods ?? []).length === 1, `authMethods without a key: ${JSON.stringify(init2.authMethods)}`);
    await bare.close();
  },

  /** Tool calls: announced before permission, allow and reject, diffs and bash output. */
  async tools() {
    const sb = sandbox();
    const script = sb.script("s.json", [
      tool("w1", "write", { path: "hello.txt", content: "hi there\n" }),
      text("Wrote it."),
      tool("b1", "bash", { command: "echo should-not-run > ran.txt" }),
      text("Denied, fine."),
      tool("e1", "edit", { path: "hello.txt", old_string: "hi there", new_string: "hello there" }),
      text("Edited."),
      tool("b2", "bash", { command: "echo bash-output-line" }),
      text("Ran it."),
    ]);
    let answer = allowOnce;
    const c = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", script], {
      permission: (p) => answer(p),
    });
    await initialize(c);
    const { sessionId } = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [] });

    // 1. write, allowed once.
    const r1 = await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "write hello" }] });
    eq(r1.stopReason, "end_turn", "write turn");
    eq(readFileSync(join(sb.work, "hello.txt"), "utf8"), "hi there\n", "the file was written");
    const p1 = c.permissions[0];
    eq(p1.toolCall.toolCallId, "w1", "permission names the announced call");
    const kinds = p1.options.map((o) => o.kind);
    check(kinds.includes("allow_once") && kinds.includes("allow_always") && kinds.includes("reject_once"), `option kinds ${kinds}`);
    const always = p1.options.find((o) => o.kind === "allow_always");
    check(/Remembered for this project/.test(always.name), `allow_always says what is remembered: ${always.name}`);
    // The tool_call came before the permission request, with kind, title, locations, rawInput.
    const idx = (pred) => c.updates.findIndex(pred);
    const announced = idx((u) => u.update.sessionUpdate === "tool_call" && u.update.toolCallId === "w1");
    check(announced >= 0, "tool_call w1 announced");
    const call = c.updates[announced].update;
    eq(call.kind, "edit", "write is an edit");
    const detail = c.updates.find((u) => u.update.sessionUpdate === "tool_call_update" && u.update.toolCallId === "w1" && u.update.rawInput);
    check(detail, "w1 got its arguments before running");
    eq(detail.update.rawInput, { path: "hello.txt", content: "hi there\n" }, "rawInput");
    eq(detail.update.title, "Write hello.txt", "title");
    eq(detail.update.locations, [{ path: join(sb.work, "hello.txt") }], "locations");
    const done = c.updates.find((u) => u.update.toolCallId === "w1" && u.update.status === "completed");
    check(done, "w1 completed");
    const diff = done.update.content[0];
    eq([diff.type, diff.path, diff.oldText ?? null, diff.newText], ["diff", join(sb.work, "hello.txt"), null, "hi there\n"], "write diff");
    check(c.updates.some((u) => u.update.toolCallId === "w1" && u.update.status === "in_progress"), "w1 in progress");

    // 2. bash, rejected: nothing runs, the call fails.
    answer = rejectOnce;
    const r2 = await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "run it" }] });
    eq(r2.stopReason, "end_turn", "rejected turn");
    check(!existsSync(join(sb.work, "ran.txt")), "the rejected command did not run");
    eq(c.permissions[1].toolCall.toolCallId, "b1", "second permission names b1");
    check(c.updates.some((u) => u.update.toolCallId === "b1" && u.update.status === "failed"), "b1 failed");
    const b1 = c.of(sessionId, "tool_call").find((u) => u.toolCallId === "b1");
    eq(b1.kind, "execute", "bash is execute");

    // 3. edit, allowed: its diff is the replaced snippet.
    answer = allowOnce;
    await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit" }] });
    eq(readFileSync(join(sb.work, "hello.txt"), "utf8"), "hello there\n", "the edit applied");
    const e1 = c.updates.find((u) => u.update.toolCallId === "e1" && u.update.status === "completed");
    eq(e1.update.content[0].oldText, "hi there", "edit diff old");
    eq(e1.update.content[0].newText, "hello there", "edit diff new");

    // 4. bash, allowed: its output in a console block.
    await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "echo" }] });
    const b2 = c.updates.find((u) => u.update.toolCallId === "b2" && u.update.status === "completed");
    check(b2, "b2 completed");
    check(b2.update.content[0].content.text.includes("bash-output-line"), `bash output: ${JSON.stringify(b2.update.content)}`);
    await c.close();
  },

  /** session/cancel: during streaming, and with a permission request pending. */
  async cancel() {
    const sb = sandbox();
    const script = sb.script("s.json", [
      { steps: [{ text: "Starting a long answer", chunk_chars: 4 }, { delay_ms: 120000 }, { text: " never" }] },
      tool("b1", "bash", { command: "echo ran > ran.txt" }),
      text("after"),
    ]);
    let release;
    const released = new Promise((r) => (release = r));
    const c = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", script], {
      permission: async () => {
        await released;
        return { outcome: { outcome: "cancelled" } };
      },
    });
    await initialize(c);
    const { sessionId } = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [] });
    const p1 = c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
    await c.until(() => agentText(c, sessionId).includes("Starting"), "first chunk");
    const t0 = Date.now();
    await c.agent.notify("session/cancel", { sessionId });
    const r1 = await withTimeout(p1, WAIT_MS, "the cancelled prompt");
    const ms = Date.now() - t0;
    eq(r1.stopReason, "cancelled", "stopReason after cancel");
    console.log(`cancel while streaming answered in ${ms} ms`);
    // The scripted delay is two minutes: the answer came from the cancel, not the turn.
    check(ms < 60000, "the prompt answered before the model would have finished");

    const p2 = c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "run" }] });
    await c.until(() => c.permissions.length === 1, "the permission request");
    const t1 = Date.now();
    await c.agent.notify("session/cancel", { sessionId });
    const r2 = await withTimeout(p2, WAIT_MS, "the prompt cancelled during a permission request");
    console.log(`cancel during a permission request answered in ${Date.now() - t1} ms`);
    eq(r2.stopReason, "cancelled", "stopReason with a pending permission");
    release();
    check(!existsSync(join(sb.work, "ran.txt")), "the tool never ran");
    // The session goes on.
    const r3 = await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "again" }] });
    eq(r3.stopReason, "end_turn", "a prompt after cancels");
    check(agentText(c, sessionId).endsWith("after"), "the next turn streamed");
    await c.close();
  },

  /** session/load replays the history, and the next prompt continues the session. */
  async load() {
    const sb = sandbox();
    writeFileSync(join(sb.work, "notes.txt"), "remember the milk\n");
    const first = sb.script("first.json", [tool("r1", "read", { path: "notes.txt" }, "Reading."), text("The notes mention milk.")]);
    const c1 = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", first]);
    await initialize(c1);
    const { sessionId } = await c1.agent.request("session/new", { cwd: sb.work, mcpServers: [] });
    await c1.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "what do my notes say?" }] });
    await c1.close();

    const second = sb.script("second.json", [
      { steps: [{ wait_for_tool_result: "r1" }, { text: "Still milk: {{tool_result:r1}}" }, { usage: { input: 1, output: 1 } }] },
    ]);
    const c2 = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", second]);
    const init = await initialize(c2);
    eq(init.agentCapabilities.loadSession, true, "loadSession");
    const loaded = await c2.agent.request("session/load", { sessionId, cwd: sb.work, mcpServers: [] });
    eq(loaded.modes.currentModeId, "build", "mode after load");
    const replay = c2.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update);
    const kinds = replay.map((u) => u.sessionUpdate).filter((k) => k !== "available_commands_update");
    eq(kinds.slice(0, 4), ["user_message_chunk", "agent_message_chunk", "tool_call", "agent_message_chunk"], "replayed kinds");
    eq(replay[0].content.text, "what do my notes say?", "replayed prompt");
    const tc = replay.find((u) => u.sessionUpdate === "tool_call");
    eq([tc.toolCallId, tc.status, tc.kind], ["r1", "completed", "read"], "replayed tool call");
    check(JSON.stringify(tc.content).includes("remember the milk"), "the replayed call shows its result");
    check(agentText(c2, sessionId).includes("The notes mention milk."), "replayed answer");
    const before = c2.updates.length;
    const r = await c2.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "and now?" }] });
    eq(r.stopReason, "end_turn", "the continued prompt");
    const after = c2.updates.slice(before).filter((u) => u.update.sessionUpdate === "agent_message_chunk");
    check(after.map((u) => u.update.content.text).join("").includes("Still milk: "), "the model saw the earlier tool result");
    await c2.close();
  },

  /** A Runtime that dies fails the prompt; the next prompt starts a new one on the same session. */
  async runtime_death() {
    const sb = sandbox();
    const script = sb.script("s.json", [{ steps: [{ text: "thinking hard", chunk_chars: 4 }, { delay_ms: 120000 }] }]);
    const c = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", script]);
    await initialize(c);
    const { sessionId } = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [] });
    const p = c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "first prompt" }] });
    await c.until(() => agentText(c, sessionId).includes("thinking"), "first chunk");
    const pid = runtimePid(sessionId);
    check(pid, "the Runtime's pid");
    process.kill(pid, "SIGKILL");
    const err = await rpcError(withTimeout(p, WAIT_MS, "the failed prompt"));
    check(/Runtime/.test(err.message), `the error names the Runtime: ${err.message}`);
    // The next prompt starts a new Runtime (its script starts over: the same long turn,
    // cancelled here once it streams).
    const p2 = c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "second prompt" }] });
    await c.until(() => runtimePid(sessionId) && runtimePid(sessionId) !== pid, "a new Runtime");
    await c.until(() => agentText(c, sessionId).split("thinking").length > 2, "the new turn streams");
    await c.agent.notify("session/cancel", { sessionId });
    eq((await p2).stopReason, "cancelled", "the new Runtime's turn");
    const transcript = readFileSync(join(sb.home, "sessions", sessionId, "session.jsonl"), "utf8");
    check(transcript.includes("first prompt") && transcript.includes("second prompt"), "both prompts are in the session");
    await c.close();
  },

  /** An editor offering fs: reads and writes go through it (unsaved buffers), after the gate. */
  async editor_files() {
    const sb = sandbox();
    writeFileSync(join(sb.work, "doc.txt"), "disk text\n");
    const script = sb.script("s.json", [
      tool("r1", "read", { path: "doc.txt" }),
      { steps: [{ text: "Buffer: {{tool_result:r1}}" }, { usage: { input: 1, output: 1 } }] },
      tool("e1", "edit", { path: "doc.txt", old_string: "unsaved", new_string: "edited" }),
      text("Edited."),
      tool("w1", "write", { path: "new.txt", content: "new file\n" }),
      text("Written."),
      tool("w2", "write", { path: "secret.txt", content: "no\n" }),
      text("Refused."),
    ]);
    const buffers = new Map([[join(sb.work, "doc.txt"), "unsaved buffer text\n"]]);
    const reads = [];
    const writes = [];
    let answer = allowOnce;
    const c = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", script], {
      permission: (p) => answer(p),
      readTextFile: (p) => {
        reads.push(p);
        if (!buffers.has(p.path)) throw new Error(`no buffer for ${p.path}`);
        return { content: buffers.get(p.path) };
      },
      writeTextFile: (p) => {
        writes.push(p);
        buffers.set(p.path, p.content);
        return {};
      },
    });
    await initialize(c, { fs: { readTextFile: true, writeTextFile: true } });
    const { sessionId } = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [] });
    await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "read doc" }] });
    check(agentText(c, sessionId).includes("unsaved buffer text"), `the model read the editor's buffer: ${agentText(c, sessionId)}`);
    eq(reads[0].path, join(sb.work, "doc.txt"), "read by absolute path");
    eq(reads[0].sessionId, sessionId, "read names the session");
    await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit doc" }] });
    eq(buffers.get(join(sb.work, "doc.txt")), "edited buffer text\n", "the edit went to the buffer");
    eq(readFileSync(join(sb.work, "doc.txt"), "utf8"), "disk text\n", "the disk file is untouched");
    await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "write new" }] });
    eq(buffers.get(join(sb.work, "new.txt")), "new file\n", "the write went to the editor");
    check(!existsSync(join(sb.work, "new.txt")), "nothing written to disk");
    answer = rejectOnce;
    const before = writes.length;
    await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "write secret" }] });
    eq(writes.length, before, "a denied write never reaches the editor");
    check(!buffers.has(join(sb.work, "secret.txt")), "no secret buffer");
    await c.close();
  },

  /** Details the other scenarios leave out: a read's location line, `tool_call` before
   * its permission request, a `cancelled` outcome as deny, `max_tokens` and `refusal`. */
  async details() {
    const sb = sandbox();
    writeFileSync(join(sb.work, "notes.txt"), "one\ntwo\nthree\n");
    const script = sb.script("s.json", [
      tool("r1", "read", { path: "notes.txt", offset: 2 }),
      text("Read."),
      tool("b1", "bash", { command: "echo ran > ran.txt" }),
      text("Not run, fine."),
      { steps: [{ text: "Cut off" }, { usage: { input: 1, output: 1 } }], stop_reason: "max_tokens" },
      { steps: [{ text: "I won't" }, { usage: { input: 1, output: 1 } }], stop_reason: "refusal" },
    ]);
    const announcedFirst = [];
    let c;
    c = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", script], {
      permission: (p) => {
        announcedFirst.push(c.updates.some((u) => u.update.sessionUpdate === "tool_call" && u.update.toolCallId === p.toolCall.toolCallId));
        return { outcome: { outcome: "cancelled" } };
      },
    });
    await initialize(c);
    const { sessionId } = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [] });
    const p = (t) => c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: t }] });
    eq((await p("read")).stopReason, "end_turn", "read turn");
    const r1 = c.updates.find((u) => u.update.toolCallId === "r1" && u.update.locations);
    eq(r1.update.locations, [{ path: join(sb.work, "notes.txt"), line: 2 }], "a read's location has its line");
    eq((await p("run")).stopReason, "end_turn", "the turn goes on after a cancelled dialog");
    eq(announcedFirst, [true], "the tool_call came before its permission request");
    check(!existsSync(join(sb.work, "ran.txt")), "a cancelled permission outcome is a deny");
    check(c.updates.some((u) => u.update.toolCallId === "b1" && u.update.status === "failed"), "b1 failed");
    eq((await p("long")).stopReason, "max_tokens", "max_tokens");
    eq((await p("bad")).stopReason, "refusal", "refusal");
    await c.close();
  },

  /** The editor's MCP servers: through the gate, in the tool sandbox, their secrets kept. */
  async mcp() {
    const setup = mcpSetup();
    if (!setup) return;
    const { sb, srv, secret } = setup;
    const escape = join(sb.dir, "escape.txt");
    const script = sb.script("s.json", [
      tool("m1", "mcp__ed__env", { name: "ED_MODE" }),
      { steps: [{ text: "Mode: {{tool_result:m1}}." }, { usage: { input: 1, output: 1 } }] },
      tool("m2", "mcp__ed__write_note", { file: join(sb.work, "in.txt"), text: "in" }),
      text("Noted."),
      tool("m3", "mcp__ed__write_note", { file: escape, text: "out" }),
      text("Tried."),
      tool("b1", "bash", { command: 'echo "[${SHARD_CLIENT_MCP_SERVERS:-}]"' }),
      { steps: [{ text: "Env: {{tool_result:b1}}" }, { usage: { input: 1, output: 1 } }] },
    ]);
    const c = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", script], { permission: allowOnce });
    const init = await initialize(c);
    eq(init.agentCapabilities.mcpCapabilities, { http: true, sse: false }, "MCP capabilities");

    // A bad entry is one -32602 naming its field; nothing starts.
    const bad = async (servers, field) => {
      const e = await rpcError(c.agent.request("session/new", { cwd: sb.work, mcpServers: servers }));
      eq([e.code, e.data?.field], [-32602, field], `bad mcpServers: ${JSON.stringify(e)}`);
      check(e.message.includes(field), `the message names ${field}: ${e.message}`);
      check(!JSON.stringify(e).includes(secret), "the error quotes no secret");
    };
    await bad([edServer(srv, secret), { ...edServer(srv, secret), name: "bad name" }], "mcpServers[1].name");
    await bad([edServer(srv, secret), edServer(srv, secret)], "mcpServers[1].name");
    await bad([{ type: "sse", name: "s", url: "https://mcp.example/sse", headers: [] }], "mcpServers[0].type");
    await bad([{ type: "http", name: "h", url: "file:///etc/passwd", headers: [] }], "mcpServers[0].url");

    const { sessionId } = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [edServer(srv, secret)] });
    // The first prompt waits for the server: its tool is there, and asks first.
    await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "which mode?" }] });
    eq(c.permissions[0]?.toolCall.toolCallId, "m1", "the editor's tool asks through the gate");
    check(agentText(c, sessionId).includes("Mode: editor-mode."), `the server got its env: ${agentText(c, sessionId)}`);
    runtimeHides(sessionId, secret);

    // In the tool sandbox: the workspace is writable, the rest of the host is not.
    await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "note in" }] });
    eq(readFileSync(join(sb.work, "in.txt"), "utf8"), "in", "inside the workspace works");
    await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "note out" }] });
    if (sandboxComplete(sb)) {
      check(!existsSync(escape), "the editor's server could not write outside the workspace");
      const m3 = c.updates.find((u) => u.update.toolCallId === "m3" && ["completed", "failed"].includes(u.update.status));
      check(m3, "m3 finished");
    } else {
      console.log("SKIPPED (sandbox part): the kernel's sandbox is incomplete here");
    }

    // Other tools never see the servers' variable.
    await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "env" }] });
    check(agentText(c, sessionId).includes("Env: []"), `bash saw no SHARD_CLIENT_MCP_SERVERS: ${agentText(c, sessionId)}`);
    await c.close();

    eq(filesContaining(sb.home, secret), [], "no file under SHARD_HOME holds the secret (session, logs)");
    check(!JSON.stringify(c.updates).includes(secret), "no update quotes the secret");
  },

  /** A prompt whose turn waits for an editor's server that never connects (the Runtime's
   * MCP start-up wait) is cancelled at once. */
  async mcp_wait_cancel() {
    const sb = sandbox();
    const script = sb.script("s.json", [text("never sent")]);
    const c = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", script]);
    await initialize(c);
    const mute = { name: "mute", command: "sleep", args: ["600"], env: [] };
    const { sessionId } = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [mute] });
    const p = c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hello" }] });
    // Waiting: nothing streams while the server is connecting.
    const held = await Promise.race([p.then(() => "answered"), new Promise((r) => setTimeout(() => r("held"), 300))]);
    eq(held, "held", "the prompt waits for the editor's server");
    const t0 = Date.now();
    await c.agent.notify("session/cancel", { sessionId });
    eq((await withTimeout(p, WAIT_MS, "the held prompt")).stopReason, "cancelled", "a cancel answers the held prompt");
    console.log(`cancel of a prompt waiting for MCP servers answered in ${Date.now() - t0} ms`);
    eq(agentText(c, sessionId), "", "the prompt never reached the model");
    await c.close();
  },

  /** An editor's streamable-HTTP server: its headers reach it, and stay out of Shard's files. */
  async mcp_http() {
    const setup = mcpSetup();
    if (!setup) return;
    const { sb, srv, secret } = setup;
    const log = join(sb.dir, "http.log");
    const server = spawn("python3", [srv, "--http", "0"], { env: { ...process.env, MCP_TEST_LOG: log }, stdio: ["ignore", "pipe", "inherit"] });
    try {
      const port = await withTimeout(
        new Promise((resolve) => server.stdout.once("data", (d) => resolve(d.toString().trim().replace("listening ", "")))),
        WAIT_MS,
        "the HTTP server's port",
      );
      const script = sb.script("s.json", [
        tool("h1", "mcp__web__echo", { text: "over http" }),
        { steps: [{ text: "Got {{tool_result:h1}}." }, { usage: { input: 1, output: 1 } }] },
      ]);
      const c = startAcp(sb, ["--no-daemon", "--provider", "scripted", "--script", script], { permission: allowOnce });
      await initialize(c);
      const web = { type: "http", name: "web", url: `http://127.0.0.1:${port}/mcp`, headers: [{ name: "Authorization", value: `Bearer ${secret}` }] };
      const { sessionId } = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [web] });
      await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "echo" }] });
      // Its readOnlyHint is not trusted: the editor is asked.
      eq(c.permissions[0]?.toolCall.toolCallId, "h1", "the editor's HTTP tool asks through the gate");
      check(agentText(c, sessionId).includes("Got echo: over http."), `the call went over HTTP: ${agentText(c, sessionId)}`);
      check(readFileSync(log, "utf8").includes(`Bearer ${secret}`), "the editor's header reached the server");
      runtimeHides(sessionId, secret);
      await c.close();
      eq(filesContaining(sb.home, secret), [], "no file under SHARD_HOME holds the header");
      check(!JSON.stringify(c.updates).includes(secret), "no update quotes the header");
    } finally {
      server.kill("SIGKILL");
    }
  },

  /** Through the daemon: the editor's servers reach the daemon agent and every Runtime
   * generation of it; a dying Runtime fails the prompt and the next starts a new one. */
  async mcp_daemon() {
    const setup = mcpSetup();
    if (!setup) return;
    const { sb, srv, secret } = setup;
    const script = sb.script("s.json", [
      tool("m1", "mcp__ed__env", { name: "ED_MODE" }),
      { steps: [{ text: "Mode: {{tool_result:m1}}." }, { usage: { input: 1, output: 1 } }] },
      { steps: [{ text: "thinking hard", chunk_chars: 4 }, { delay_ms: 120000 }] },
    ]);
    const d = await startDaemon(sb);
    try {
      const c = startAcp(sb, ["--provider", "scripted", "--script", script], { permission: allowOnce });
      await initialize(c);
      const { sessionId } = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [edServer(srv, secret)] });
      await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "which mode?" }] });
      eq(c.permissions[0]?.toolCall.toolCallId, "m1", "the daemon agent's MCP call asks the editor");
      check(agentText(c, sessionId).includes("Mode: editor-mode."), `the server got its env: ${agentText(c, sessionId)}`);
      const pid = runtimeHides(sessionId, secret);

      // The manifest keeps the servers for later generations: owner-only.
      const agents = join(sb.home, "manifests");
      eq(statSync(agents).mode & 0o777, 0o700, "manifests/ is owner-only");
      const manifests = readdirSync(agents).filter((f) => f.endsWith(".json"));
      const mine = manifests.map((f) => join(agents, f)).find((f) => readFileSync(f, "utf8").includes(sessionId));
      check(mine, "the agent's manifest");
      eq(statSync(mine).mode & 0o777, 0o600, "the manifest is owner-only");
      const other = await ShardClient.connect(join(sb.home, "daemon.sock"));
      const list = await other.call({ type: "agent.list" });
      check(!JSON.stringify(list).includes(secret), "agent.list does not show the secret");
      other.close();

      // A dying Runtime fails the prompt; the next prompt starts a new generation, with
      // the editor's server again (the script starts over: m1 once more).
      const p = c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "long one" }] });
      await c.until(() => agentText(c, sessionId).includes("thinking"), "the long turn streams");
      process.kill(pid, "SIGKILL");
      const err = await rpcError(withTimeout(p, WAIT_MS, "the failed prompt"));
      check(/Runtime/.test(err.message), `the error names the Runtime: ${err.message}`);
      const before = agentText(c, sessionId).split("Mode: editor-mode.").length;
      const r = await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "which mode now?" }] });
      eq(r.stopReason, "end_turn", "the prompt after the death");
      check(runtimePid(sessionId) !== pid, "a new Runtime serves it");
      eq(agentText(c, sessionId).split("Mode: editor-mode.").length, before + 1, `the new generation has the editor's server: ${agentText(c, sessionId)}`);
      await c.close();
      check(!d.log().includes(secret), "the daemon's log holds no secret");
      const holders = filesContaining(sb.home, secret).filter((f) => f !== mine);
      eq(holders, [], "no file but the owner-only manifest holds the secret");
      check(!JSON.stringify(c.updates).includes(secret), "no update quotes the secret");
    } finally {
      await stopDaemon(sb, d);
    }
  },

  /** With a daemon: the session is a daemon agent that another client lists and answers. */
  async daemon() {
    const sb = sandbox();
    const script = sb.script("s.json", [tool("w1", "write", { path: "shared.txt", content: "from the daemon\n" }), text("Done.")]);
    const d = await startDaemon(sb);
    try {
      let editorAsked;
      const asked = new Promise((r) => (editorAsked = r));
      let editorAnswer;
      const answerLater = new Promise((r) => (editorAnswer = r));
      const buffers = new Map();
      const c = startAcp(sb, ["--provider", "scripted", "--script", script], {
        permission: async (p) => {
          editorAsked(p);
          await answerLater;
          return rejectOnce(p);
        },
        writeTextFile: (p) => {
          buffers.set(p.path, p.content);
          return {};
        },
      });
      // The editor serves writes: through the daemon they reach it too.
      await initialize(c, { fs: { readTextFile: false, writeTextFile: true } });
      const { sessionId } = await c.agent.request("session/new", { cwd: sb.work, mcpServers: [] });

      // `shard ls` lists it.
      const ls = spawnSync(shardBin(), ["ls"], { env: env(sb), encoding: "utf8", timeout: WAIT_MS });
      check(ls.status === 0, `shard ls: ${ls.stderr}`);
      const other = await ShardClient.connect(join(sb.home, "daemon.sock"));
      const list = await other.call({ type: "agent.list" });
      const agent = list.data.agents.find((a) => a.session_id === sessionId);
      check(agent, `the daemon lists the ACP session: ${JSON.stringify(list.data)}`);
      check(ls.stdout.includes(agent.agent_id.slice(0, 12)) || ls.stdout.includes(agent.agent_id), `shard ls shows ${agent.agent_id}: ${ls.stdout}`);

      // Another client attaches and answers the permission request first.
      await other.call({ type: "agent.attach", agent_id: agent.agent_id, role: "interactive" });
      const p = c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "write it" }] });
      const req = await other.until((e) => e.type === "permission_request");
      const editorReq = await withTimeout(asked, WAIT_MS, "the editor's permission request");
      eq(editorReq.toolCall.toolCallId, "w1", "the editor was asked too");
      const allow = req.choices.find((x) => x.intent === "allow");
      const won = await other.call({ type: "permission_response", agent_id: agent.agent_id, request_id: req.request_id, choice_id: allow.id });
      check(won.success, "the other client's answer");
      eq((await withTimeout(p, WAIT_MS, "the prompt")).stopReason, "end_turn", "the turn ended");
      eq(buffers.get(join(sb.work, "shared.txt")), "from the daemon\n", "the first answer (allow) won; the write reached the editor");
      check(!existsSync(join(sb.work, "shared.txt")), "the editor, not the disk, took the write");
      editorAnswer(); // the editor's late reject changes nothing
      await other.until((e) => e.type === "turn_end");
      check(agentText(c, sessionId).includes("Done."), "the editor streamed the answer");
      await c.close();
      // The agent outlives the editor.
      const after = await other.call({ type: "agent.list" });
      check(after.data.agents.some((a) => a.session_id === sessionId), "the agent stays with the daemon");
      other.close();
    } finally {
      await stopDaemon(sb, d);
    }
  },
};

/** A minimal Shard protocol client over the daemon's unix socket (JSONL). */
class ShardClient {
  static connect(path) {
    return new Promise((resolve, reject) => {
      const sock = connect(path);
      const c = new ShardClient(sock);
      sock.once("error", reject);
      c.until((e) => e.type === "hello").then(() => resolve(c), reject);
    });
  }
  constructor(sock) {
    this.sock = sock;
    this.events = [];
    this.waiters = [];
    this.next = 0;
    let buf = "";
    sock.on("data", (d) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) {
          this.events.push(JSON.parse(line));
          for (const w of [...this.waiters]) w();
        }
      }
    });
  }
  until(pred, ms = WAIT_MS) {
    return new Promise((resolve, reject) => {
      let seen = 0;
      const timer = setTimeout(() => reject(new Error(`shard client: timed out; events ${JSON.stringify(this.events).slice(-2000)}`)), ms);
      const tick = () => {
        for (; seen < this.events.length; seen++) {
          const e = this.events[seen];
          if (pred(e)) {
            clearTimeout(timer);
            this.waiters.splice(this.waiters.indexOf(tick), 1);
            this.events.splice(seen, 1);
            return resolve(e);
          }
        }
      };
      this.waiters.push(tick);
      tick();
    });
  }
  call(cmd) {
    const id = `t${++this.next}`;
    this.sock.write(JSON.stringify({ ...cmd, id }) + "\n");
    return this.until((e) => e.type === "response" && e.id === id);
  }
  close() {
    this.sock.end();
  }
}

const name = process.argv[2];
const scenario = scenarios[name];
if (!scenario) {
  console.error(`unknown scenario ${name}; known: ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
try {
  await scenario();
  console.log(`ok: ${name}`);
  process.exit(0);
} catch (e) {
  console.error(`FAILED: ${name}: ${e && e.stack ? e.stack : JSON.stringify(e)}`);
  process.exit(1);
}
