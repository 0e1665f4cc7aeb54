// End-to-end tests of the browser client in headless Chromium against a real
// `shard daemon --port 0` with scripted-provider agents. Run by
// crates/shard-cli/tests/web/browser.rs; standalone: SHARD_BIN=target/debug/shard node
// tests/browser/e2e.mjs. Screenshots go to $SHARD_ARTIFACTS (default target/browser-artifacts).

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { join } from "node:path";
import { Daemon, launch, enrolledPage, createAgent, textTurn, toolTurn, T } from "./lib.mjs";

const bin = process.env.SHARD_BIN ?? fail("SHARD_BIN is not set");
const artifacts = process.env.SHARD_ARTIFACTS ?? "target/browser-artifacts";
mkdirSync(artifacts, { recursive: true });

/** @param {string} why @returns {never} */
function fail(why) {
  throw new Error(why);
}

/**
 * Polls `get` until `ok` holds (a generous deadline, not a timed expectation).
 * @template V
 * @param {() => Promise<V>} get @param {(v: V) => boolean} ok @param {string} what
 */
async function until(get, ok, what) {
  const end = Date.now() + T;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error("timed out waiting until " + what + "; last: " + (typeof v === "object" ? JSON.stringify(v) : String(v)));
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** @type {[string, () => Promise<void>][]} */
const tests = [];
/** @param {string} name @param {() => Promise<void>} fn */
const test = (name, fn) => tests.push([name, fn]);

const d = await new Daemon(bin).start();
const browser = await launch();
/** @type {string[]} every console error and CSP report of every page */
const problems = [];

/** @param {{width?: number, height?: number}} [size] */
async function page(size) {
  const p = await enrolledPage(browser, d, size);
  p.page.setDefaultTimeout(T);
  p.page.on("console", (m) => {
    if (m.type() === "error" || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  p.page.on("pageerror", (e) => problems.push("pageerror: " + e.message));
  return p;
}

/** @param {import("playwright-core").Page} pg @param {string} name */
async function openAgent(pg, name) {
  await pg.getByRole("button", { name: new RegExp("^" + name) }).first().click();
  await pg.locator(".pane.active .status").filter({ hasText: /idle|streaming|waiting/ }).waitFor();
}

/**
 * `shard attach AGENT` in line mode on the test daemon, its stdout read line by line.
 * @param {string} agent
 */
function attachLines(agent) {
  const child = spawn(bin, ["attach", agent], { env: { ...process.env, SHARD_HOME: d.home }, stdio: ["pipe", "pipe", "ignore"] });
  /** @type {string[]} */
  const lines = [];
  let buf = "";
  child.stdout.on("data", (chunk) => {
    buf += chunk;
    const parts = buf.split("\n");
    buf = parts.pop() ?? "";
    lines.push(...parts);
  });
  return {
    lines,
    /** @param {(l: string) => boolean} ok @param {string} what */
    until: async (ok, what) => {
      try {
        return /** @type {string} */ (await until(async () => lines.find(ok), (l) => l !== undefined, what));
      } catch (e) {
        throw new Error((e instanceof Error ? e.message : String(e)) + "; its lines: " + JSON.stringify(lines));
      }
    },
    stop: () => {
      child.stdin.end();
      if (child.exitCode === null) child.kill("SIGTERM");
    },
  };
}

/** @param {import("playwright-core").Page} pg */
const prompt = (pg) => pg.locator(".pane.active").getByRole("textbox", { name: "Prompt", exact: true });

test("enrollment through the printed URL, then the first connection", async () => {
  const { page: pg, ctx } = await page();
  assert.equal(new URL(pg.url()).hash, "", "the code left the address bar");
  await pg.getByText("connected", { exact: true }).waitFor();
  const cookies = await ctx.cookies();
  assert.ok(cookies.some((c) => c.name === "shard_session" && c.httpOnly));
  await pg.getByRole("button", { name: "New agent", exact: true }).waitFor();
  await ctx.close();
});

test("the cookie reaches another port, the session key does not; a reload keeps the link, cleared storage enrolls again", async () => {
  const { page: pg, ctx } = await page();
  const key = await pg.evaluate(() => localStorage.getItem("shard.session_key"));
  assert.match(String(key), /^[0-9a-f]{64}$/, "enrollment left the session key in this Origin's storage");
  await pg.reload();
  await pg.getByText("connected", { exact: true }).waitFor();
  // A server on another port of the same host: the browser may send it the cookie, but its
  // page cannot read the door's storage.
  /** @type {string[]} */
  const seen = [];
  const other = createServer((req, res) => {
    seen.push(req.headers.cookie ?? "");
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<!doctype html><title>another port</title>");
  });
  await new Promise((r) => other.listen(0, "127.0.0.1", () => r(undefined)));
  const port = /** @type {import("node:net").AddressInfo} */ (other.address()).port;
  const foreign = await ctx.newPage();
  await foreign.goto(`http://127.0.0.1:${port}/`);
  assert.equal(await foreign.evaluate(() => localStorage.getItem("shard.session_key")), null);
  await foreign.close();
  other.close();
  const cookie = (await ctx.cookies()).find((c) => c.name === "shard_session");
  assert.ok(cookie, "the session cookie");
  console.log(`  (another port received ${seen.some((c) => c.includes("shard_session=")) ? "the" : "no"} session cookie)`);
  // What that server can do with it: replay it with the door's own Origin. No ticket.
  for (const headers of [{ Origin: d.url, Cookie: `shard_session=${cookie.value}` }, { Origin: `http://127.0.0.1:${port}`, Cookie: `shard_session=${cookie.value}` }, { Origin: d.url, Cookie: `shard_session=${cookie.value}`, "X-Shard-Session-Key": "0".repeat(64) }]) {
    const r = await post(d.url + "/bootstrap", headers);
    assert.ok(r.status === 401 || r.status === 400, "no ticket for " + JSON.stringify(Object.keys(headers)) + ": " + r.status);
    assert.ok(!r.body.includes("ticket"), r.body);
  }
  // Storage cleared: the page says to enroll again instead of sending the cookie alone.
  await pg.evaluate(() => localStorage.clear());
  await pg.reload();
  await pg.getByText(/not enrolled/).waitFor();
  await ctx.close();
});

/**
 * A bare HTTP POST with exactly these headers (no browser rules about Origin).
 * @param {string} url @param {Record<string, string>} headers
 * @returns {Promise<{status: number, body: string}>}
 */
function post(url, headers) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", headers: { ...headers, "Content-Length": "0" } }, (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

test("create an agent, prompt it, and see the streamed answer rendered", async () => {
  const { page: pg, ctx } = await page();
  const answer = "Streaming **works**: here is `code`.\n\n```js\nconst x = 1; // note\n```\n\n- one\n- two\n";
  const script = d.script("stream", [textTurn("An earlier answer."), { steps: [{ thinking: "Let me think." }, { text: answer, chunk_chars: 3 }, { usage: { input: 30, output: 12 } }] }]);
  await pg.getByRole("button", { name: "New agent", exact: true }).click();
  await pg.getByRole("combobox", { name: "Working directory" }).fill(d.work);
  await pg.getByRole("textbox", { name: "Name of the new agent" }).fill("streamer");
  await pg.getByRole("textbox", { name: "Provider of the new agent" }).fill("scripted");
  await pg.getByRole("textbox", { name: "Model of the new agent" }).fill(script);
  await pg.getByRole("button", { name: "Create", exact: true }).click();
  await pg.locator(".pane.active .status").filter({ hasText: "idle" }).waitFor();
  const box = prompt(pg);
  const log = pg.locator(".pane.active .log");
  await box.fill("earlier");
  await box.press("Enter");
  await log.getByText("An earlier answer.").waitFor();
  // While the next answer streams, no earlier message may be touched.
  await pg.evaluate(() => {
    const w = /** @type {any} */ (window);
    const earlier = [...document.querySelectorAll(".pane.active .log article")];
    w.__touchedEarlier = 0;
    w.__mutations = 0;
    new MutationObserver((ms) => {
      for (const m of ms) {
        w.__mutations++;
        if (earlier.some((e) => e.contains(m.target))) w.__touchedEarlier++;
      }
    }).observe(document.querySelector(".pane.active .log") ?? document.body, { childList: true, subtree: true, characterData: true });
  });
  await box.fill("first line");
  await box.press("Shift+Enter");
  await box.pressSequentially("second line");
  assert.equal(await box.inputValue(), "first line\nsecond line", "Shift+Enter is a newline");
  await box.press("Enter");
  await log.locator("strong", { hasText: "works" }).waitFor();
  await log.getByText("Turn:").nth(1).waitFor();
  assert.equal(await box.inputValue(), "", "Enter sent and cleared the box");
  assert.equal(await log.locator("article.role-assistant").count(), 2, "one assistant message per turn");
  assert.equal(await log.locator("pre.code .tok-keyword", { hasText: "const" }).count(), 1, "code highlighted");
  assert.equal(await log.locator("li").count(), 2);
  const thinking = log.locator("details.thinking");
  assert.equal(await thinking.getAttribute("open"), null, "thinking is collapsed");
  const seen = await pg.evaluate(() => [/** @type {any} */ (window).__mutations, /** @type {any} */ (window).__touchedEarlier]);
  assert.ok(seen[0] > 0, "the stream was observed");
  assert.equal(seen[1], 0, "no earlier message was touched by the stream");
  await log.getByText("first line").waitFor();
  await pg.locator(".pane.active .usage").filter({ hasText: "session 42 in" }).waitFor();
  await ctx.close();
});

test("a permission answered in one browser context disappears in the other", async () => {
  const a = await page();
  const b = await page();
  const script = d.script("perm", [toolTurn("w1", "write", { path: "notes.txt", content: "alpha\nbeta\n" }), textTurn("Written.")]);
  const writer = await createAgent(a.page, { cwd: d.work, provider: "scripted", model: script, name: "writer" });
  await openAgent(a.page, "writer");
  await openAgent(b.page, "writer");
  // A terminal attached too (`shard attach` in line mode): it must name the browser that answers.
  const term = attachLines(writer);
  await term.until((l) => l.startsWith("attached to"), "shard attach is attached");
  await prompt(a.page).fill("write the notes");
  await prompt(a.page).press("Enter");
  const dlgA = a.page.getByRole("dialog", { name: "Permission for write" });
  const dlgB = b.page.getByRole("dialog", { name: "Permission for write" });
  await dlgA.waitFor();
  await dlgB.waitFor();
  // The change is shown before anyone answers: a coloured diff of the new file.
  const diffBox = dlgB.locator("pre.diff-detail");
  await diffBox.locator(".line-add", { hasText: "+alpha" }).waitFor();
  assert.equal(await diffBox.locator(".line-file").first().textContent(), "--- /dev/null\n");
  assert.equal(await diffBox.locator(".line-add").count(), 2, "two added lines");
  await a.page.screenshot({ path: join(artifacts, "permission-dialog.png") });
  const labels = await dlgB.locator("button").evaluateAll((bs) => bs.map((x) => x.getAttribute("aria-label")));
  assert.ok(labels.length >= 2, "the server's choices: " + labels);
  const allow = await dlgB.locator("button.intent-allow").first().getAttribute("aria-label");
  assert.ok(allow);
  await dlgB.getByRole("button", { name: allow, exact: true }).click();
  await dlgA.waitFor({ state: "detached" });
  await dlgB.waitFor({ state: "detached" });
  const named = await a.page.locator(".pane.active .log").getByText(/answered in another browser \(brw-[^)]+\)/).textContent();
  await b.page.locator(".pane.active .log").getByText(/answered here/).waitFor();
  const brw = /\((brw-[^)]+)\)/.exec(named ?? "")?.[1];
  assert.ok(brw, "the browser is named: " + named);
  const said = await term.until((l) => l.includes("answered by"), "the terminal says who answered");
  assert.equal(said, `[permission for write: “${allow}”, answered by browser ${brw}]`);
  term.stop();
  await a.page.locator(".pane.active .log figure.diff .line-add", { hasText: "+alpha" }).waitFor();
  await a.page.locator(".pane.active .log").getByText("Written.").waitFor();
  // The call's header is a short title, the JSON only on hover.
  const head = a.page.locator(".pane.active .log .tool-head .tool-args").first();
  assert.equal(await head.textContent(), "notes.txt");
  assert.ok((await head.getAttribute("title"))?.includes('"content"'));
  await a.page.screenshot({ path: join(artifacts, "conversation-diff.png") });
  await a.ctx.close();
  await b.ctx.close();
});

test("a long edit diff scrolls inside its dialog and the choices stay in view", async () => {
  const { page: pg, ctx } = await page({ width: 1000, height: 700 });
  const original = Array.from({ length: 300 }, (_, i) => `line ${i}`).join("\n") + "\n";
  writeFileSync(join(d.work, "long.txt"), original);
  const script = d.script("longdiff", [toolTurn("e1", "edit", { path: "long.txt", old_string: "line", new_string: "row", replace_all: true }), textTurn("Edited.")]);
  await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "longdiff" });
  await openAgent(pg, "longdiff");
  await prompt(pg).fill("rename the lines");
  await prompt(pg).press("Enter");
  const dlg = pg.getByRole("dialog", { name: "Permission for edit" });
  const box = dlg.locator("pre.diff-detail");
  await box.locator(".line-del", { hasText: "-line 299" }).waitFor({ state: "attached" });
  await box.locator(".line-add", { hasText: "+row 0" }).waitFor();
  const [scrollH, clientH] = await box.evaluate((el) => [el.scrollHeight, el.clientHeight]);
  assert.ok(scrollH > clientH * 2, `the diff scrolls inside its box (${scrollH} > ${clientH})`);
  assert.ok(await dlg.getByRole("button", { name: "Deny" }).isVisible(), "the choices stay reachable");
  await box.evaluate((el) => el.scrollTo(0, el.scrollHeight));
  await box.locator(".line-add", { hasText: "+row 299" }).waitFor();
  await dlg.getByRole("button", { name: "Deny" }).click();
  await dlg.waitFor({ state: "detached" });
  await ctx.close();
});

test("a dropped WebSocket reconnects and shows the pending request again, once", async () => {
  const { page: pg, ctx } = await page();
  const script = d.script("drop", [textTurn("Ready."), toolTurn("b1", "bash", { command: "echo hi" }), textTurn("Done.")]);
  await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "dropper" });
  await openAgent(pg, "dropper");
  await prompt(pg).fill("warm up");
  await prompt(pg).press("Enter");
  await pg.locator(".pane.active .log").getByText("Ready.").waitFor();
  await prompt(pg).fill("run it");
  await prompt(pg).press("Enter");
  const dlg = pg.getByRole("dialog", { name: "Permission for bash" });
  await dlg.waitFor();
  const before = await pg.locator(".pane.active .log article").count();
  await pg.evaluate(() => /** @type {any} */ (window).shard.conn.ws.close());
  await pg.getByText(/^(offline|reconnecting)$/).waitFor();
  assert.ok(await dlg.locator("button").first().isDisabled(), "disabled while the link is down");
  await pg.getByText("connected", { exact: true }).waitFor();
  await pg.locator(".pane.active .request:not(.disabled)").waitFor();
  assert.equal(await pg.getByRole("dialog", { name: "Permission for bash" }).count(), 1, "shown once");
  // The local echo of "run it" is replaced by the stored user message: same count.
  assert.equal(await pg.locator(".pane.active .log article").count(), before, "nothing duplicated");
  assert.equal(await pg.locator(".pane.active .log").getByText("Ready.").count(), 1);
  // Answer with the choice's accelerator key while the dialog has focus.
  const btn = dlg.locator("button[data-key]").first();
  const key = await btn.getAttribute("data-key");
  const label = await btn.getAttribute("aria-label");
  assert.ok(key, "the server gives accelerators");
  await btn.focus();
  await pg.keyboard.press(key);
  await dlg.waitFor({ state: "detached" });
  await pg.locator(".pane.active .log").getByText(new RegExp(label + ".*answered here")).waitFor();
  await ctx.close();
});

test("a mode switch made in one context appears in the other", async () => {
  const a = await page();
  const b = await page();
  const script = d.script("modes", [textTurn("ok")]);
  await createAgent(a.page, { cwd: d.work, provider: "scripted", model: script, name: "moder" });
  await openAgent(a.page, "moder");
  await openAgent(b.page, "moder");
  const modeA = a.page.getByRole("combobox", { name: "Mode", exact: true });
  const modeB = b.page.getByRole("combobox", { name: "Mode", exact: true });
  // Locators and polling only: page.waitForFunction evaluates strings, which the CSP forbids.
  await b.page.locator(".pane.active select[aria-label=Mode] option").nth(1).waitFor({ state: "attached" });
  assert.equal(await modeB.inputValue(), "build");
  await a.page.locator(".pane.active select[aria-label=Mode] option").nth(1).waitFor({ state: "attached" });
  await modeA.selectOption("plan");
  await until(() => modeB.inputValue(), (v) => v === "plan", "the other context shows plan");
  assert.equal(await a.page.getByRole("combobox", { name: "Model", exact: true }).count(), 1);
  await a.ctx.close();
  await b.ctx.close();
});

test("a provider failure shows PROVIDER_ERROR with its kind and what to do", async () => {
  const { page: pg, ctx } = await page();
  const script = d.script("limited", [{ steps: [{ error: "slow down", kind: "rate_limited", status: 429, retry_after_ms: 2500 }] }]);
  await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "limited" });
  await openAgent(pg, "limited");
  await prompt(pg).fill("go");
  await prompt(pg).press("Enter");
  const note = pg.locator(".pane.active .log").getByText("Error (PROVIDER_ERROR, rate_limited): slow down");
  await note.waitFor();
  const text = await note.textContent();
  assert.ok(text?.includes("wait, then prompt again") && text.includes("retry in 3 s"), String(text));
  await ctx.close();
});

test("a prompt typed in one context appears in the other before the answer, once in each", async () => {
  const a = await page();
  const b = await page();
  const script = d.script("echo", [{ steps: [{ text: "Slowly", chunk_chars: 3 }, { delay_ms: 120000 }, { text: " never" }] }]);
  await createAgent(a.page, { cwd: d.work, provider: "scripted", model: script, name: "echoer" });
  await openAgent(a.page, "echoer");
  await openAgent(b.page, "echoer");
  await prompt(a.page).fill("shared words");
  await prompt(a.page).press("Enter");
  const logA = a.page.locator(".pane.active .log");
  const logB = b.page.locator(".pane.active .log");
  // The answer never completes: B can only know the prompt from `user_message`.
  await logB.locator("article.role-user", { hasText: "shared words" }).waitFor();
  await logB.getByText("Slowly").waitFor();
  assert.equal(await logB.getByText("Turn:").count(), 0, "the turn is still running");
  // The sender's echo is replaced by the stored message, not doubled.
  await until(() => logA.locator("article.local").count(), (n) => n === 0, "the echo is confirmed");
  assert.equal(await logA.locator("article.role-user", { hasText: "shared words" }).count(), 1);
  assert.equal(await logB.locator("article.role-user", { hasText: "shared words" }).count(), 1);
  await a.page.locator(".pane.active").getByRole("button", { name: "Abort", exact: true }).click();
  await a.page.locator(".pane.active .status").filter({ hasText: "idle" }).waitFor();
  await a.ctx.close();
  await b.ctx.close();
});

test("an aborted turn says interrupted where it stopped, live and after a reload", async () => {
  const { page: pg, ctx } = await page();
  const script = d.script("interrupt", [{ steps: [{ text: "Half an answer", chunk_chars: 4 }, { delay_ms: 120000 }, { text: " never" }] }, textTurn("Next one.")]);
  await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "interrupted" });
  await openAgent(pg, "interrupted");
  await prompt(pg).fill("start");
  await prompt(pg).press("Enter");
  const log = pg.locator(".pane.active .log");
  await log.getByText("Half an answer").waitFor();
  await pg.locator(".pane.active").getByRole("button", { name: "Abort", exact: true }).click();
  await log.locator("p.note.interrupted").waitFor();
  // Right after the partial answer, before the next prompt.
  const order = await log.evaluate((el) => [...el.querySelectorAll("article, p.note.interrupted")].map((n) => (n.classList.contains("interrupted") ? "interrupted" : n.textContent?.includes("Half an answer") ? "partial" : "other")));
  assert.deepEqual(order.slice(-2), ["partial", "interrupted"], "order: " + order);
  await prompt(pg).fill("again");
  await prompt(pg).press("Enter");
  await log.getByText("Next one.").waitFor();
  await pg.reload();
  await pg.getByText("connected", { exact: true }).waitFor();
  await openAgent(pg, "interrupted");
  const after = pg.locator(".pane.active .log");
  await after.getByText("Next one.").waitFor();
  const reloaded = await after.evaluate((el) => [...el.querySelectorAll("article, p.note.interrupted")].map((n) => (n.classList.contains("interrupted") ? "interrupted" : n.textContent?.includes("Half an answer") ? "partial" : n.textContent?.includes("again") ? "again" : "other")));
  const at = reloaded.indexOf("interrupted");
  assert.ok(at > 0 && reloaded[at - 1] === "partial" && reloaded[at + 1] === "again", "after reload: " + reloaded);
  assert.equal(reloaded.filter((x) => x === "interrupted").length, 1);
  await ctx.close();
});

test("a ui_request select, steer or follow-up while busy, Abort, and Kill from the overview", async () => {
  const { page: pg, ctx } = await page();
  const script = d.script("ui", [
    toolTurn("u1", "ask_user", { question: "Which colour?", kind: "select", options: ["red", "blue"] }),
    textTurn("You picked it."),
    { steps: [{ text: "Thinking slowly", chunk_chars: 4 }, { delay_ms: 120000 }, { text: " never" }] },
    textTurn("Followed up."),
  ]);
  await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "asker" });
  await openAgent(pg, "asker");
  await prompt(pg).fill("ask me");
  await prompt(pg).press("Enter");
  const dlg = pg.getByRole("dialog", { name: "The agent asks" });
  await dlg.getByText("Which colour?").waitFor();
  await dlg.getByRole("button", { name: "blue", exact: true }).click();
  await dlg.waitFor({ state: "detached" });
  const log = pg.locator(".pane.active .log");
  await log.getByText("You picked it.").waitFor();
  await log.getByText(/“"blue"”, answered here/).waitFor();
  // Busy: the choice between steer and follow-up is visible; send a follow-up.
  await prompt(pg).fill("go slowly");
  await prompt(pg).press("Enter");
  await log.getByText("Thinking slowly").waitFor();
  const how = pg.locator(".pane.active fieldset.how");
  await how.waitFor();
  await how.getByLabel(/follow-up/).check();
  await prompt(pg).fill("and then this");
  await prompt(pg).press("Enter");
  await log.getByText("you (follow-up)").waitFor();
  const abort = pg.locator(".pane.active").getByRole("button", { name: "Abort", exact: true });
  await abort.click();
  await pg.locator(".pane.active .status").filter({ hasText: "idle" }).waitFor();
  assert.ok(await how.isHidden(), "no choice while idle");
  await pg.getByRole("button", { name: "Kill asker", exact: true }).click();
  await until(() => pg.getByRole("button", { name: "Kill asker", exact: true }).isDisabled(), (x) => x, "the killed agent's Kill is disabled");
  await ctx.close();
});

test("a dropped image rides with the prompt and is painted from the session", async () => {
  const { page: pg, ctx } = await page();
  const script = d.script("img", [textTurn("Nice picture.")]);
  await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "viewer" });
  await openAgent(pg, "viewer");
  // A 1×1 PNG dropped on the composer.
  await pg.evaluate(() => {
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    const bytes = Uint8Array.from(atob(png), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], "dot.png", { type: "image/png" }));
    document.querySelector(".pane.active .composer")?.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await pg.locator(".pane.active .attachments .chip", { hasText: "dot.png" }).waitFor();
  await prompt(pg).fill("look");
  await prompt(pg).press("Enter");
  const log = pg.locator(".pane.active .log");
  await log.getByText("Nice picture.").waitFor();
  // The echo ("1 image") is replaced by the stored message from `user_message`.
  await log.locator("canvas.image[role=img]").waitFor();
  assert.equal(await log.getByText("1 image").count(), 0, "the echo was replaced, not doubled");
  // After a reload the stored user message carries the image, painted on a canvas.
  await pg.reload();
  await pg.getByText("connected", { exact: true }).waitFor();
  await openAgent(pg, "viewer");
  await pg.locator(".pane.active .log canvas.image[role=img]").waitFor();
  await until(() => pg.locator(".pane.active .log canvas.image").evaluate((c) => /** @type {HTMLCanvasElement} */ (c).width), (w) => w === 1, "the image is decoded");
  await ctx.close();
});

const PAYLOADS = [
  "<img src=x onerror=\"window.__pwned=1\">",
  "<script>window.__pwned=2</script>",
  "[click me](javascript:window.__pwned=3)",
  "<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"window.__pwned=4\"><script>window.__pwned=5</script></svg>",
  "<iframe src=\"javascript:window.__pwned=6\"></iframe>",
];

test("model output and a file with script payloads render as inert text", async () => {
  const { page: pg, ctx } = await page();
  const body = PAYLOADS.join("\n\n");
  writeFileSync(join(d.work, "evil.html"), body + "\n");
  const script = d.script("xss", [
    { steps: [{ text: body, chunk_chars: 11 }, { tool_call: { id: "r1", name: "read", args: { path: "evil.html" } } }] },
    textTurn("Also: " + PAYLOADS.join(" ")),
  ]);
  await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "xss" });
  await openAgent(pg, "xss");
  await prompt(pg).fill(PAYLOADS[0]);
  await prompt(pg).press("Enter");
  const log = pg.locator(".pane.active .log");
  await log.getByText("Also:").waitFor();
  await log.locator(".tool.done").first().waitFor();
  const found = await log.evaluate((el) => ({
    dangerous: el.querySelectorAll("img, script, svg, iframe, object, embed, [onerror], [onload]").length,
    jsLinks: [...el.querySelectorAll("a")].filter((a) => !/^(https?|mailto):/.test(a.getAttribute("href") ?? "")).length,
    pwned: /** @type {any} */ (window).__pwned,
    text: el.textContent ?? "",
  }));
  assert.equal(found.dangerous, 0, "no element from a payload");
  assert.equal(found.jsLinks, 0, "no javascript: link");
  assert.equal(found.pwned, undefined, "no payload ran");
  for (const p of ["<img src=x onerror=", "<script>window.__pwned=2</script>", "javascript:window.__pwned=3", "<svg xmlns="]) {
    assert.ok(found.text.includes(p), "shown as text: " + p);
  }
  await ctx.close();
});

test("the overview at 390 px: nested subagents, no horizontal scrolling, shortcuts under ?", async () => {
  const { page: pg, ctx } = await page({ width: 390, height: 844 });
  // Only the daemon's subagent machinery makes a child: the parent's model delegates.
  const kid = d.script("kid", [textTurn("hi")]);
  const script = d.script("kids", [
    toolTurn("c1", "subagent", { action: "create", name: "child", task: "say hi", model: kid }),
    textTurn("launched"),
    textTurn("noted"),
  ]);
  const parent = await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "parent" });
  assert.ok(parent);
  await openAgent(pg, "parent");
  await prompt(pg).fill("go");
  await prompt(pg).press("Enter");
  await pg.locator(".pane.active").getByText("noted").waitFor();
  await pg.reload();
  await pg.getByText("connected", { exact: true }).waitFor();
  await pg.locator(".subagents .agent-name", { hasText: "child" }).waitFor();
  const overflow = await pg.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, "no horizontal overflow: " + overflow);
  await pg.screenshot({ path: join(artifacts, "overview-390.png") });
  await pg.keyboard.press("?");
  await pg.getByRole("dialog", { name: "Keyboard shortcuts" }).waitFor();
  await pg.keyboard.press("Escape");
  await openAgent(pg, "parent");
  await prompt(pg).waitFor();
  await pg.screenshot({ path: join(artifacts, "conversation-390.png") });
  await ctx.close();
});

test("each result kind is drawn as a person reads it, live and after a reload alike", async () => {
  const { page: pg, ctx } = await page({ width: 1280, height: 900 });
  mkdirSync(join(d.work, "kinds-dir"), { recursive: true });
  const kid = d.script("kinds-kid", [textTurn("kid_final_text")]);
  const md = "| crate | tests |\n|---|---:|\n| shard-cli | 185 |\n\n```python\nfor x in y: pass\n```\n\n```\nfor if while\n```\n";
  const script = d.script("kinds", [
    toolTurn("l1", "ls", { path: "." }),
    toolTurn("s1", "subagent", { action: "create", name: "helper_one", task: "say hi", model: kid }),
    textTurn(md),
    textTurn("noted"),
  ]);
  await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "kinds" });
  await openAgent(pg, "kinds");
  await prompt(pg).fill("go");
  await prompt(pg).press("Enter");
  const log = pg.locator(".pane.active .log");
  await log.getByText("noted").waitFor();
  const check = async (/** @type {string} */ when) => {
    await log.locator("ul.paths li", { hasText: "kinds-dir" }).waitFor();
    assert.equal(await log.locator(".tool-head", { hasText: "ls" }).locator(".tool-args").innerText(), ".", when + ": a short title");
    assert.equal(await log.locator(".tool-head", { hasText: "subagent" }).locator(".tool-args").innerText(), "create helper_one", when + ": a short title");
    assert.equal(await log.locator("ul.paths .path", { hasText: "kinds-dir" }).innerText(), "kinds-dir", when + ": one slash, from the stylesheet");
    await log.locator(".tool .run-card .run-alias", { hasText: "helper-one" }).waitFor();
    const report = log.locator("aside.report");
    await report.locator(".run-final", { hasText: "kid_final_text" }).waitFor();
    assert.equal(await report.locator(".run-alias").innerText(), "helper-one", when + ": the alias");
    assert.equal(await log.getByText("[subagent report]").count(), 0, when + ": the report is a notice, not its raw text");
    assert.equal(await log.locator("article.notice .who").count(), 0, when + ": no 'you' on a report");
    assert.equal(await log.locator("table.md-table th").first().innerText(), "crate", when + ": a table");
    assert.equal(await log.locator("table.md-table td.align-right").innerText(), "185");
    const blocks = log.locator("pre.code");
    assert.ok((await blocks.filter({ hasText: "for x in y" }).locator(".tok-keyword").count()) > 0, when + ": python highlighted");
    assert.equal(await blocks.filter({ hasText: "for if while" }).locator(".tok-keyword").count(), 0, when + ": plain text stays plain");
  };
  await check("live");
  await pg.screenshot({ path: join(artifacts, "result-kinds-live.png") });
  await pg.reload();
  await pg.getByText("connected", { exact: true }).waitFor();
  await openAgent(pg, "kinds");
  await check("after a reload");
  await ctx.close();
});

test("an MCP server's tree and images reach the browser through a real Runtime, live and after a reload", async () => {
  // A daemon of its own whose config.toml names the MCP test server (python3, standard
  // library only): its `tree` tool answers with a directory tree as structured content,
  // its `screenshot` tool with text and images.
  const python = (() => {
    try {
      execFileSync("python3", ["--version"]);
      return true;
    } catch (_e) {
      return false;
    }
  })();
  if (!python) {
    console.log("# skipped: python3 is not installed (the MCP test server needs it)");
    return;
  }
  const own = new Daemon(bin);
  /** @type {import("playwright-core").BrowserContext | null} */
  let closeLater = null;
  try {
    // Inside the workspace: servers run in the tool sandbox, which hides the host's /tmp.
    const srv = join(own.work, ".srv");
    mkdirSync(srv, { recursive: true });
    copyFileSync(join(import.meta.dirname, "../../crates/shard-mcp/tests/servers/mcp_test_server.py"), join(srv, "server.py"));
    writeFileSync(join(own.home, "config.toml"), `[mcp]\nstartup_timeout = 120\n\n[mcp.servers.t]\ncommand = "python3"\nargs = ["${join(srv, "server.py")}"]\nread_only = true\n`);
    await own.start();
    const script = own.script("mcp", [toolTurn("t1", "mcp__t__tree", {}), toolTurn("t2", "mcp__t__screenshot", {}), toolTurn("t3", "mcp__t__picture", {}), textTurn("seen both")]);
    const { page: pg, ctx } = await enrolledPage(browser, own);
    closeLater = ctx;
    pg.setDefaultTimeout(T);
    pg.on("pageerror", (e) => problems.push("pageerror: " + e.message));
    await createAgent(pg, { cwd: own.work, provider: "scripted", model: script, name: "mcp" });
    await openAgent(pg, "mcp");
    await prompt(pg).fill("look");
    await prompt(pg).press("Enter");
    const log = pg.locator(".pane.active .log");
    await log.getByText("seen both").waitFor();
    const check = async (/** @type {string} */ when) => {
      const tree = log.locator(".tool", { hasText: "mcp__t__tree" }).locator("ul.tree");
      await tree.waitFor();
      const drawn = await tree.evaluate((t) => ({
        dirs: [...t.querySelectorAll("li.path-dir")].map((e) => e.firstChild?.textContent),
        nested: [...t.querySelectorAll("li.path-dir li.path-dir li.path-file")].map((e) => e.textContent),
      }));
      assert.deepEqual(drawn.dirs, ["src", "util"], when + ": the directories");
      assert.deepEqual(drawn.nested, ["mod.rs"], when + ": children nest under their directory");
      // Text and images: the caption as text, each image painted (or named when it
      // cannot be decoded), an image type the model does not take described in the text.
      const pic = log.locator(".tool", { hasText: "mcp__t__picture" });
      await pic.getByText("A dot").waitFor();
      await until(() => pic.locator("canvas.image[role=img]").evaluate((c) => /** @type {HTMLCanvasElement} */ (c).width), (w) => w === 1, when + ": the PNG is painted");
      const shot = log.locator(".tool", { hasText: "mcp__t__screenshot" });
      await shot.getByText("Page title: Example").waitFor();
      assert.ok((await shot.innerText()).includes("[image: image/tiff, not shown:"), when + ": the TIFF is described");
      const chips = await shot.locator(".chip").allInnerTexts();
      assert.deepEqual(chips.map((c) => c.replace(/,.*/, "")), ["image (image/png", "image (image/gif"], when + ": both images named: " + chips);
    };
    await check("live");
    await pg.screenshot({ path: join(artifacts, "mcp-tree-images.png") });
    await pg.reload();
    await pg.getByText("connected", { exact: true }).waitFor();
    await openAgent(pg, "mcp");
    await check("after a reload");
  } finally {
    await closeLater?.close();
    await own.cleanup();
  }
});

test("the render modules draw a tree, an MCP text and images, and never paint an SVG", async () => {
  // The same modules the conversation uses, on inputs no server here sends (an SVG).
  const { page: pg, ctx } = await page();
  const drawn = await pg.evaluate(async () => {
    const r = await import("/app/render.js");
    const tree = r.renderDescriptor({ kind: "tree", root: { name: "src", kind: "dir", children: [{ name: "main.rs", kind: "file" }, { name: "util", kind: "dir", children: [] }] } });
    const text = r.renderResultContent({ kind: "text", text: "Page title: Example" });
    const img = r.renderImage("iVBORw0KGgo=", "image/png");
    const svg = r.renderImage("PHN2Zz4=", "image/svg+xml");
    document.body.append(tree, text, img, svg);
    return {
      dirs: [...tree.querySelectorAll("li.path-dir")].map((e) => e.firstChild?.textContent),
      files: [...tree.querySelectorAll("li.path-file")].map((e) => e.textContent),
      nested: tree.querySelector("li.path-dir ul li.path-file")?.textContent,
      text: text.textContent,
      img: img.tagName + " " + img.getAttribute("aria-label"),
      svg: svg.tagName + " " + svg.textContent,
    };
  });
  assert.deepEqual(drawn.dirs, ["src", "util"]);
  assert.deepEqual(drawn.files, ["main.rs"]);
  assert.equal(drawn.nested, "main.rs", "children nest under their directory");
  assert.equal(drawn.text, "Page title: Example");
  assert.match(drawn.img, /^CANVAS image \(image\/png, /);
  assert.match(drawn.svg, /^SPAN image \(image\/svg\+xml/, "an SVG is never painted");
  await ctx.close();
});

test("a saved conversation is drawn exactly as it was live: diffs, code, exit codes, refusals, who answered, no empty gaps", async () => {
  const { page: pg, ctx } = await page({ width: 1280, height: 900 });
  // Another browser answers the first request: both pages must say who answered, live and
  // after a reload, in the same words and the same place.
  const other = await page();
  writeFileSync(join(d.work, "saved.rs"), "fn main() {\n    println!(\"hi\");\n}\n");
  const script = d.script("saved", [
    toolTurn("s1", "edit", { path: "saved.rs", old_string: "hi", new_string: "hello" }),
    toolTurn("s2", "read", { path: "saved.rs" }),
    toolTurn("s3", "bash", { command: "echo out; exit 3" }),
    toolTurn("s4", "bash", { command: "echo refused-one" }),
    textTurn("Done:\n\n```rust\nfn main() {}\n```\n"),
  ]);
  await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "saved" });
  await openAgent(pg, "saved");
  await openAgent(other.page, "saved");
  await prompt(pg).fill("do the four things");
  await prompt(pg).press("Enter");
  const answered = [["edit", "Allow once", other.page], ["bash", "Allow once", pg], ["bash", "Deny", pg]];
  for (const [i, [tool, answer, who]] of answered.entries()) {
    const dlg = /** @type {import("playwright-core").Page} */ (who).getByRole("dialog", { name: "Permission for " + tool });
    await dlg.waitFor();
    await dlg.getByRole("button", { name: answer, exact: true }).click();
    // Each answer is said in both pages before the next request is looked for (two
    // requests in a row may name the same tool).
    for (const p of [pg, other.page]) await p.locator(".pane.active .log p.note.resolution").nth(i).waitFor();
  }
  const log = pg.locator(".pane.active .log");
  await log.getByText("Done:").waitFor();
  await pg.locator(".pane.active .status").filter({ hasText: "idle" }).waitFor();
  /** The messages as drawn (the ids the page keeps aside); the client's own notes (turn
   * usage, who answered) are not messages. */
  const drawn = () =>
    log.evaluate((el) => [...el.querySelectorAll("article:not(.empty)")].map((a) => a.outerHTML.replace(/ data-id="[^"]*"/g, "")));
  /** Each message's place, and after it who answered its requests, in order. */
  const answers = (/** @type {import("playwright-core").Page} */ p) =>
    p.locator(".pane.active .log").evaluate((el) => [...el.querySelectorAll("article:not(.empty), p.note.resolution")].map((n) => (n.tagName === "ARTICLE" ? "message" : n.textContent)));
  await other.page.locator(".pane.active .log").getByText("Done:").waitFor();
  const liveAnswers = await answers(pg);
  const otherAnswers = await answers(other.page);
  assert.equal(liveAnswers.filter((x) => /^Permission for edit: “Allow once”, answered in another browser \(brw-[^)]+\)\.$/.test(x)).length, 1, "the other browser is named: " + liveAnswers);
  assert.equal(liveAnswers.filter((x) => x.endsWith("answered here.")).length, 2, "this page's answers: " + liveAnswers);
  assert.equal(otherAnswers.filter((x) => x === "Permission for edit: “Allow once”, answered here.").length, 1, "the other page answered the edit: " + otherAnswers);
  const live = await drawn();
  await pg.screenshot({ path: join(artifacts, "saved-live.png") });
  assert.ok(live.some((x) => x.includes("line-add")), "a diff was drawn");
  assert.ok(live.some((x) => /exit 3/.test(x)), "an exit code was drawn");
  assert.ok(live.some((x) => x.includes("tok-keyword")), "code was highlighted");
  assert.ok(live.some((x) => x.includes("refused-one")), "the refused call is shown");
  const empty = await log.evaluate((el) => [...el.querySelectorAll("article")].filter((a) => !(a.textContent ?? "").trim() && !a.querySelector("canvas, [role=img]")).length);
  assert.equal(empty, 0, "no empty message boxes");
  await pg.reload();
  await pg.getByText("connected", { exact: true }).waitFor();
  await openAgent(pg, "saved");
  await pg.locator(".pane.active .log").getByText("Done:").waitFor();
  const saved = await drawn();
  await pg.screenshot({ path: join(artifacts, "saved-reloaded.png") });
  assert.equal(saved.length, live.length, "as many messages");
  for (let i = 0; i < live.length; i++) assert.equal(saved[i], live[i], `message ${i} is drawn the same`);
  assert.deepEqual(await answers(pg), liveAnswers, "who answered, in the same words and places");
  await other.page.reload();
  await other.page.getByText("connected", { exact: true }).waitFor();
  await openAgent(other.page, "saved");
  await other.page.locator(".pane.active .log").getByText("Done:").waitFor();
  assert.deepEqual(await answers(other.page), otherAnswers, "the other page too");
  await other.ctx.close();
  await ctx.close();
});

/**
 * What a dialog shows, as a person reads it: its visible words (aria-hidden keycaps listed
 * apart), every pseudo-element's generated content, and every text node that is only
 * symbols outside a labelled element (a glyph with no word to explain it).
 * @param {import("playwright-core").Locator} dlg
 */
async function dialogText(dlg) {
  return dlg.evaluate((root) => {
    /** @type {string[]} */
    const words = [];
    /** @type {string[]} */
    const keycaps = [];
    /** @type {string[]} */
    const pseudo = [];
    /** @type {string[]} */
    const glyphs = [];
    const walk = (/** @type {Node} */ n) => {
      if (n.nodeType === Node.TEXT_NODE) {
        const t = (n.textContent ?? "").trim();
        if (!t) return;
        const el = /** @type {Element} */ (n.parentElement);
        if (el.closest("[aria-hidden=true]")) keycaps.push(t);
        else words.push(t);
        // A key name in <kbd> or an element with its own label is meant; the dialog's
        // own label explains none of its symbols. Box-drawing bars are terminal furniture.
        const labelled = el.closest("[aria-label], [aria-hidden=true], kbd");
        const explained = labelled && labelled !== root;
        if ((!/[\p{L}\p{N}]/u.test(t) && !explained) || /[\u2500-\u257f]/.test(t)) glyphs.push(t);
        return;
      }
      if (n.nodeType !== Node.ELEMENT_NODE) return;
      const el = /** @type {Element} */ (n);
      for (const which of ["::before", "::after"]) {
        const c = getComputedStyle(el, which).content;
        if (c && c !== "none" && c !== "normal") pseudo.push(el.tagName.toLowerCase() + which + " " + c);
      }
      if (getComputedStyle(el).display === "list-item" && getComputedStyle(el).listStyleType !== "none") pseudo.push(el.tagName.toLowerCase() + "::marker");
      for (const k of el.childNodes) walk(k);
    };
    walk(root);
    return { words, keycaps, pseudo, glyphs };
  });
}

test("every dialog shows exactly its words: no stray glyph, icon or leftover text", async () => {
  const { page: pg, ctx } = await page();
  const script = d.script("glyphs", [
    toolTurn("g1", "bash", { command: "echo hi" }),
    toolTurn("g2", "ask_user", { question: "Which colour?", kind: "select", options: ["red", "blue"] }),
    toolTurn("g3", "ask_user", { question: "Proceed?", kind: "confirm" }),
    toolTurn("g4", "ask_user", { question: "Your name?", kind: "input" }),
    textTurn("All asked."),
  ]);
  await createAgent(pg, { cwd: d.work, provider: "scripted", model: script, name: "glyphs" });
  await openAgent(pg, "glyphs");
  await prompt(pg).fill("ask everything");
  await prompt(pg).press("Enter");
  /** @type {Record<string, {words: string[], keycaps: string[], pseudo: string[], glyphs: string[]}>} */
  const seen = {};
  const perm = pg.getByRole("dialog", { name: "Permission for bash" });
  await perm.waitFor();
  seen.permission = await dialogText(perm);
  const keys = await perm.locator("button").evaluateAll((bs) => bs.map((b) => [b.getAttribute("aria-label"), /** @type {HTMLElement} */ (b).dataset.key ?? null, b.querySelector("kbd")?.textContent ?? null]));
  for (const [label, key, cap] of keys) assert.equal(cap, key, `the keycap of ${label} is its accelerator`);
  await pg.screenshot({ path: join(artifacts, "dialog-permission.png") });
  await perm.getByRole("button", { name: "Allow once", exact: true }).click();
  const asks = pg.getByRole("dialog", { name: "The agent asks" });
  await asks.getByText("Which colour?").waitFor();
  seen.select = await dialogText(asks);
  await asks.getByRole("button", { name: "blue", exact: true }).click();
  await asks.getByText("Proceed?").waitFor();
  seen.confirm = await dialogText(asks);
  await asks.getByRole("button", { name: "Yes", exact: true }).click();
  await asks.getByText("Your name?").waitFor();
  seen.input = await dialogText(asks);
  await asks.getByRole("textbox", { name: "Answer" }).fill("Ada");
  await asks.getByRole("button", { name: "Answer", exact: true }).click();
  await pg.locator(".pane.active .log").getByText("All asked.").waitFor();
  await pg.getByRole("button", { name: "New agent", exact: true }).click();
  const create = pg.getByRole("dialog", { name: "Create an agent" });
  await create.waitFor();
  seen.create = await dialogText(create);
  await pg.screenshot({ path: join(artifacts, "dialog-create.png") });
  await create.getByRole("button", { name: "Cancel", exact: true }).click();
  await pg.locator("#help-btn").click();
  const help = pg.getByRole("dialog", { name: "Keyboard shortcuts" });
  await help.waitFor();
  seen.help = await dialogText(help);
  await pg.screenshot({ path: join(artifacts, "dialog-help.png") });
  await help.getByRole("button", { name: "Close", exact: true }).click();
  if (process.env.SHARD_E2E_SHOW) console.log(JSON.stringify(seen, null, 1));
  for (const [name, v] of Object.entries(seen)) {
    assert.deepEqual(v.pseudo, [], name + ": no generated content");
    assert.deepEqual(v.glyphs, [], name + ": no glyph without a word");
  }
  const pw = seen.permission.words;
  assert.deepEqual(pw.slice(0, 3), ["Permission for bash", "Allow bash to run this command?", "echo hi"], "the question, then the command once, as a block");
  assert.match(pw[3], /^"Always allow this command signature" would allow: /);
  assert.deepEqual(pw.slice(4), ["Allow once", "Always allow exactly this", "Always allow this command signature", "Deny"]);
  assert.equal(pw.filter((w) => w.includes("echo hi")).length, 1, "the command is shown once: " + JSON.stringify(pw));
  assert.deepEqual(seen.permission.keycaps, ["y", "a", "s", "n"]);
  assert.deepEqual(seen.select.words, ["The agent asks", "Which colour?", "red", "blue", "Dismiss"]);
  assert.deepEqual(seen.confirm.words, ["The agent asks", "Proceed?", "Yes", "No"]);
  assert.deepEqual(seen.input.words, ["The agent asks", "Your name?", "Answer", "Dismiss"]);
  assert.deepEqual(seen.create.words, ["Create an agent", "Directory", "Name", "Model", "Provider", "Mode", "Create", "Cancel"]);
  assert.equal(seen.help.words[0], "Keyboard shortcuts");
  assert.equal(seen.help.words.at(-1), "Close");
  await ctx.close();
});

test("the create dialog offers the daemon's recent directories, the newest filled in", async () => {
  const { page: pg, ctx } = await page();
  const older = join(d.home, "older-project");
  const newer = join(d.home, "newer-project");
  mkdirSync(older, { recursive: true });
  mkdirSync(newer, { recursive: true });
  const script = d.script("dirs", [textTurn("hi")]);
  await createAgent(pg, { cwd: older, provider: "scripted", model: script, name: "in-older" });
  await createAgent(pg, { cwd: newer, provider: "scripted", model: script, name: "in-newer" });
  await pg.getByRole("button", { name: /^in-newer/ }).first().waitFor();
  await pg.getByRole("button", { name: "New agent", exact: true }).click();
  const cwd = pg.getByRole("combobox", { name: "Working directory" });
  assert.equal(await cwd.inputValue(), realpathSync(newer), "the newest directory is filled in");
  const offered = await pg.locator("datalist#recent-dirs option").evaluateAll((os) => os.map((o) => /** @type {HTMLOptionElement} */ (o).value));
  assert.ok(offered.includes(realpathSync(older)) && offered.includes(realpathSync(newer)), JSON.stringify(offered));
  assert.ok(offered.indexOf(realpathSync(newer)) < offered.indexOf(realpathSync(older)), "newest first");
  assert.equal(await cwd.getAttribute("list"), "recent-dirs");
  await ctx.close();
});

test("workspace agents are grouped under their repository and workspace", async () => {
  const { page: pg, ctx } = await page({ width: 1280, height: 800 });
  const repo = join(d.home, "repo");
  mkdirSync(repo);
  const git = (/** @type {string[]} */ ...args) =>
    execFileSync("git", ["-C", repo, "-c", "user.name=T", "-c", "user.email=t@example.com", ...args]);
  git("init", "-q", "-b", "main");
  writeFileSync(join(repo, "README.md"), "hi\n");
  git("add", ".");
  git("commit", "-q", "-m", "first");
  const script = d.script("ws", [textTurn("hi")]);
  const created = await pg.evaluate(
    async (r) => /** @type {any} */ (window).shard.conn.request({ type: "workspace.create", ...r }),
    { cwd: repo, provider: "scripted", model: script, name: "ws-agent", label: "feature" },
  );
  const group = pg.locator(`.workspace[data-workspace="${created.workspace.workspace_id}"]`);
  await group.locator(".agent-name", { hasText: "ws-agent" }).waitFor();
  assert.match(await group.locator(".workspace-head").innerText(), /^feature · shard\/feature-/);
  const project = await pg.locator("section.project", { has: group }).locator(".project-cwd").innerText();
  assert.equal(project, realpathSync(repo), "grouped under the main checkout, not the worktree");
  await ctx.close();
});

test("scrolling back pages older history in, each message once, without moving the view", async () => {
  // A daemon of its own whose Runtimes keep an 8 KiB live window (SHARD_LIVE_WINDOW_BYTES,
  // docs/daemon.md), so a session of a few dozen turns needs several history pages.
  const small = await new Daemon(bin, { SHARD_LIVE_WINDOW_BYTES: "8192" }).start();
  /** @type {import("playwright-core").BrowserContext | null} */
  let closeLater = null;
  try {
    const TURNS = 48;
    const filler = " This answer is long enough that a few dozen of them fill several pages of history.".repeat(5);
    const turns = [];
    for (let i = 0; i < TURNS; i++) turns.push({ steps: [{ text: `Answer ${i}:${filler}`, chunk_chars: 200 }, { usage: { input: 5, output: 5 } }] });
    turns.push({ steps: [{ text: "Live after paging: ", chunk_chars: 5 }, { text: "still streaming at the bottom.", chunk_chars: 5 }, { usage: { input: 5, output: 5 } }] });
    const script = small.script("long", turns);
    const { page: pg, ctx } = await enrolledPage(browser, small);
    closeLater = ctx;
    pg.setDefaultTimeout(T);
    pg.on("console", (m) => {
      if (m.type() === "error" || /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
    });
    const agent = await createAgent(pg, { cwd: small.work, provider: "scripted", model: script, name: "historian" });
    await openAgent(pg, "historian");
    // Write the session: one prompt per turn, each sent once the previous turn is over.
    await pg.evaluate(
      async ({ agent, turns }) => {
        const app = /** @type {any} */ (window).shard;
        const orig = app.onEvent.bind(app);
        /** @type {(() => void) | null} */
        let done = null;
        app.onEvent = (/** @type {any} */ ev) => {
          orig(ev);
          if (ev.agent_id === agent && ev.type === "status" && ev.status === "idle" && done) done();
        };
        for (let i = 0; i < turns; i++) {
          const idle = new Promise((r) => (done = () => r(undefined)));
          await app.conn.request({ type: "prompt", agent_id: agent, message: `Question ${i}` });
          await idle;
        }
        app.onEvent = orig;
      },
      { agent, turns: TURNS },
    );
    // A fresh page: its `sync` carries only the newest messages.
    await pg.reload();
    await pg.getByText("connected", { exact: true }).waitFor();
    await openAgent(pg, "historian");
    const log = pg.locator(".pane.active .log");
    await log.getByText(`Answer ${TURNS - 1}:`).waitFor();
    /** The labels of the messages shown, in document order. */
    const shown = () => log.evaluate((el) => [...el.querySelectorAll("article.msg")].map((a) => /(Question|Answer) \d+/.exec(a.textContent ?? "")?.[0] ?? "?"));
    const first = await shown();
    assert.ok(first.length < 2 * TURNS / 2, `the sync window is a small part of the session (${first.length} messages)`);
    let pages = 0;
    for (;;) {
      // Scroll to the top, as a user would (the scroll handler asks for the page before),
      // and note which message is then at the top of the view, and where.
      const before = await log.evaluate((el) => {
        const conv = /** @type {any} */ (window).shard.panes.get(/** @type {HTMLElement} */ (el.closest(".pane")).dataset.agent).conv;
        if (conv.truncatedBefore === null) return { more: false, count: 0, offset: NaN };
        el.scrollTo(0, 0);
        const box = el.getBoundingClientRect();
        const top = [...el.querySelectorAll("article.msg")].find((a) => a.getBoundingClientRect().bottom > box.top + 1);
        top?.setAttribute("data-anchor", "");
        return { more: true, count: el.querySelectorAll("article.msg").length, offset: top ? top.getBoundingClientRect().top - box.top : NaN };
      });
      if (!before.more) break;
      assert.ok(pages < 40, "paging ends");
      await until(() => log.evaluate((el) => el.querySelectorAll("article.msg").length), (n) => n > before.count, "an older page is shown");
      pages++;
      // Two frames, so chunks whose size the browser only estimated are laid out.
      await pg.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(undefined)))));
      const after = await log.evaluate((el) => {
        const box = el.getBoundingClientRect();
        const a = /** @type {HTMLElement} */ (el.querySelector("article[data-anchor]"));
        const r = a.getBoundingClientRect();
        a.removeAttribute("data-anchor");
        return { top: r.top - box.top, inView: r.bottom > box.top && r.top < box.bottom, height: box.height };
      });
      assert.ok(after.inView, `page ${pages}: the message at the top stays in view (${JSON.stringify({ before: before.offset, after })})`);
      assert.ok(Math.abs(after.top - before.offset) < 2, `page ${pages}: the view did not jump (${before.offset} → ${after.top})`);
    }
    assert.ok(pages >= 3, `several pages were needed (${pages})`);
    const expected = [];
    for (let i = 0; i < TURNS; i++) expected.push(`Question ${i}`, `Answer ${i}`);
    assert.deepEqual(await shown(), expected, "every message once, in order");
    // Live deltas still land at the bottom; sending scrolled the view there to follow them.
    await prompt(pg).fill("one more");
    await prompt(pg).press("Enter");
    await log.getByText("Live after paging: still streaming at the bottom.").waitFor();
    const tail = await until(
      () =>
        log.evaluate((el) => {
          const all = [...el.querySelectorAll("article.msg")];
          const box = el.getBoundingClientRect();
          const r = all[all.length - 1].getBoundingClientRect();
          return { last: all[all.length - 1].textContent ?? "", prev: all[all.length - 2].textContent ?? "", inView: r.top < box.bottom && r.bottom > box.top, top: r.top - box.top, scrollTop: el.scrollTop, scrollHeight: el.scrollHeight };
        }),
      (t) => t.inView,
      "the view follows the stream to the bottom",
    );
    assert.match(tail.last, /Live after paging: still streaming at the bottom\./);
    assert.match(tail.prev, /one more/);
    assert.deepEqual((await shown()).slice(0, 2 * TURNS), expected, "the history is untouched by the stream");
  } finally {
    await closeLater?.close();
    await small.cleanup();
  }
});

test("the overview on a wide screen", async () => {
  const { page: pg, ctx } = await page({ width: 1280, height: 800 });
  await pg.locator(".agent-name").first().waitFor();
  await pg.screenshot({ path: join(artifacts, "overview.png") });
  await ctx.close();
});

let failed = 0;
try {
  // SHARD_E2E_ONLY=words runs only the tests whose name contains them, `|` between
  // alternatives (while developing).
  const only = process.env.SHARD_E2E_ONLY?.split("|");
  for (const [name, fn] of tests.filter(([n]) => !only || only.some((o) => n.includes(o)))) {
    const t0 = Date.now();
    try {
      await fn();
      console.log(`ok - ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      console.log(`not ok - ${name}\n${e instanceof Error ? e.stack : e}`);
    }
  }
  if (problems.length) {
    failed++;
    console.log("not ok - the CSP holds and no script error is reported:\n" + problems.join("\n"));
  } else {
    console.log("ok - the CSP holds and no script error is reported");
  }
} finally {
  await browser.close();
  if (failed) console.log("daemon log:\n" + d.log);
  await d.cleanup();
}
process.exit(failed ? 1 : 0);
