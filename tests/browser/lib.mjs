// Helpers for the browser tests and benchmarks: a real `shard daemon --port 0` in a
// temporary SHARD_HOME, enrollment through the URL `shard web` prints, scripted-provider
// agents, and headless Chromium through playwright-core. Every process started here is
// stopped by its own PID.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

/** Generous: the machine is small and shared. */
export const T = 60_000;

export const CHROMIUM = process.env.SHARD_CHROMIUM ?? "/usr/bin/chromium";

/** @param {string} why */
export function fail(why) {
  throw new Error(why);
}

export class Daemon {
  /**
   * @param {string} bin the `shard` binary
   * @param {Record<string, string>} [env] extra environment of the daemon (and so of its Runtimes)
   */
  constructor(bin, env = {}) {
    this.bin = bin;
    this.env = env;
    this.home = mkdtempSync(join(tmpdir(), "shard-browser-"));
    this.work = join(this.home, "work");
    mkdirSync(this.work);
    this.log = "";
  }

  async start() {
    this.child = spawn(this.bin, ["daemon", "--port", "0"], {
      env: { ...process.env, SHARD_HOME: this.home, SHARD_LOG: process.env.SHARD_LOG ?? "warn", ...this.env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the daemon did not start:\n" + this.log)), T);
      let buf = "";
      this.child.stderr.on("data", (d) => {
        buf += d;
        this.log += d;
        const m = /shard daemon serving (http:\/\/\S+)/.exec(buf);
        if (m) this.url = m[1].replace(/\/$/, "");
        if (this.url && buf.includes("listening on")) {
          clearTimeout(timer);
          resolve(undefined);
        }
      });
      this.child.on("exit", (c) => reject(new Error("the daemon exited " + c + ":\n" + this.log)));
    });
    return this;
  }

  /** The enrollment URL `shard web` prints. */
  enrollUrl() {
    const out = execFileSync(this.bin, ["web"], { env: { ...process.env, SHARD_HOME: this.home }, encoding: "utf8" });
    const url = out.trim();
    if (!url.includes("/enroll#")) fail("unexpected `shard web` output: " + out);
    return url;
  }

  /**
   * Writes a scripted-provider script; returns its path.
   * @param {string} name @param {any[]} turns
   */
  script(name, turns) {
    const p = join(this.home, name + ".json");
    writeFileSync(p, JSON.stringify({ turns }));
    return p;
  }

  stop() {
    if (this.child && this.child.exitCode === null) this.child.kill("SIGTERM");
  }

  /** Stops the daemon, waits for it (and so for its Runtimes' last writes) to end, then
   * removes its home: removing first raced the shutdown's writes and left the folder. */
  async cleanup() {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), T);
      await exited;
      clearTimeout(timer);
    }
    try {
      rmSync(this.home, { recursive: true, force: true });
    } catch (_e) {
      /* best effort */
    }
  }
}

/** @param {string[]} [args] extra Chromium flags */
export async function launch(args = []) {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", ...args] });
}

/**
 * A fresh browser context enrolled through the printed URL, with the client open and
 * connected. Console CSP violations and page errors are collected in `problems`.
 * @param {import("playwright-core").Browser} browser
 * @param {Daemon} d
 * @param {{width?: number, height?: number}} [size]
 */
export async function enrolledPage(browser, d, size = {}) {
  const ctx = await browser.newContext({ viewport: { width: size.width ?? 1280, height: size.height ?? 800 } });
  const page = await ctx.newPage();
  /** @type {string[]} */
  const problems = [];
  page.on("console", (m) => {
    const t = m.text();
    if (m.type() === "error" || /Content Security Policy/i.test(t)) problems.push(m.type() + ": " + t);
  });
  page.on("pageerror", (e) => problems.push("pageerror: " + e.message));
  await page.goto(d.enrollUrl());
  await page.waitForURL(d.url + "/", { timeout: T });
  await page.getByText("connected", { exact: true }).waitFor({ timeout: T });
  return { ctx, page, problems };
}

/**
 * A scripted agent created through the client's own connection (`agent.create`).
 * @param {import("playwright-core").Page} page
 * @param {Record<string, unknown>} req
 * @returns {Promise<string>}
 */
export async function createAgent(page, req) {
  return page.evaluate(async (r) => {
    const d = await /** @type {any} */ (window).shard.conn.request({ type: "agent.create", ...r });
    return d.agent_id;
  }, req);
}

/** A turn streaming `text` in small pieces. */
export function textTurn(text, chunk = 4) {
  return { steps: [{ text, chunk_chars: chunk }, { usage: { input: 12, output: 7 } }] };
}

/** A turn calling one tool. */
export function toolTurn(id, name, args) {
  return { steps: [{ text: "Working on it.", chunk_chars: 5 }, { tool_call: { id, name, args }, chunk_chars: 9 }, { usage: { input: 20, output: 8 } }] };
}
