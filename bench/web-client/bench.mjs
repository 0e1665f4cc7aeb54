// Benchmarks of the browser client (issue 13) in headless Chromium:
//  1. navigation → overview painted with 50 agents (a real daemon with 50 scripted
//     agents, their Runtimes stopped so the machine is not running 50 processes);
//  2. frame time while 1,000 message deltas a second stream into a conversation that
//     already holds 10,000 messages. The events are fed to the client's own dispatch
//     (JSON text parsed by the same code path as a WebSocket frame), because no real
//     session yields a 10,000-message sync window (it is byte-bounded) and a scripted
//     provider cannot pace deltas exactly;
//  3. memory of the tab after that (JS heap and DOM nodes, from the DevTools protocol).
// usage: node bench/web-client/bench.mjs PATH/TO/shard   (prints JSON)

import { readFileSync, readdirSync } from "node:fs";
import { Daemon, launch, enrolledPage, createAgent, textTurn } from "../../tests/browser/lib.mjs";

/** RSS of the Chromium renderer processes started (indirectly) by this process. */
function rendererRssMb() {
  /** @type {Map<number, number>} */
  const parent = new Map();
  const procs = readdirSync("/proc").filter((x) => /^\d+$/.test(x)).map(Number);
  for (const pid of procs) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      parent.set(pid, Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch (_e) {
      /* gone */
    }
  }
  const mine = (/** @type {number} */ pid) => {
    for (let p = pid, n = 0; p > 1 && n < 20; p = parent.get(p) ?? 0, n++) if (p === process.pid) return true;
    return false;
  };
  let kb = 0;
  for (const pid of procs) {
    try {
      if (!mine(pid) || !readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--type=renderer")) continue;
      kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
    } catch (_e) {
      /* gone */
    }
  }
  return +(kb / 1024).toFixed(1);
}

const bin = process.argv[2] ?? "target/release/shard";
const d = await new Daemon(bin).start();
const browser = await launch();
const out = {};
try {
  const { page, ctx } = await enrolledPage(browser, d);
  const script = d.script("bench", [textTurn("hi")]);
  for (let i = 0; i < 50; i++) {
    const id = await createAgent(page, { cwd: d.work + (i % 5 ? "" : "/.."), provider: "scripted", model: script, name: "agent-" + i });
    await page.evaluate((a) => /** @type {any} */ (window).shard.conn.request({ type: "agent.terminate", agent_id: a }), id);
  }
  // 1. Navigation → overview painted, several runs (the cookie is already set).
  const nav = [];
  for (let run = 0; run < 7; run++) {
    await page.goto(d.url + "/");
    await page.locator(".agent-name").nth(49).waitFor({ timeout: 60000 });
    const t = await page.evaluate(() => {
      const m = performance.getEntriesByName("shard:overview-painted");
      return m.length ? m[0].startTime : NaN;
    });
    if (!Number.isNaN(t)) nav.push(t);
    else {
      await page.waitForTimeout(200);
      nav.push(await page.evaluate(() => performance.getEntriesByName("shard:overview-painted")[0]?.startTime ?? NaN));
    }
  }
  nav.sort((a, b) => a - b);
  out.navigation_marks_ms = await page.evaluate(() => {
    const nav = /** @type {PerformanceNavigationTiming} */ (performance.getEntriesByType("navigation")[0]);
    const mark = (/** @type {string} */ n) => Math.round(performance.getEntriesByName(n)[0]?.startTime ?? NaN);
    return { response_end: Math.round(nav.responseEnd), dom_content_loaded: Math.round(nav.domContentLoadedEventEnd), hello: mark("shard:hello"), overview_painted: mark("shard:overview-painted") };
  });
  out.overview_50_agents_ms = { runs: nav.map((x) => Math.round(x)), median: Math.round(nav[Math.floor(nav.length / 2)]), max: Math.round(nav[nav.length - 1]) };

  // 2. Streaming into a 10,000-message conversation.
  const r = await page.evaluate(async () => {
    const app = /** @type {any} */ (window).shard;
    const agent = "agent-bench";
    app.open(agent);
    const messages = [];
    for (let i = 0; i < 10000; i++) {
      const user = i % 2 === 0;
      messages.push({ id: "m" + i, role: user ? "user" : "assistant", content: [{ type: "text", text: user ? "Question " + i + ": what does `f` do?" : "Message " + i + " explains **this** with a list:\n\n- one\n- two\n\n```rust\nfn f() -> u32 { " + i + " }\n```" }] });
    }
    const t0 = performance.now();
    app.conn.dispatch(JSON.parse(JSON.stringify({ type: "sync", agent_id: agent, status: "streaming", mode: "build", capabilities: [], live_window: { messages }, pending_requests: [] })));
    await new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res)));
    const syncMs = performance.now() - t0;
    // Let the page settle (20 consecutive frames under 20 ms) before measuring streaming.
    await new Promise((res) => {
      let calm = 0;
      let prev = performance.now();
      const f = (/** @type {number} */ now) => {
        calm = now - prev < 20 ? calm + 1 : 0;
        prev = now;
        if (calm >= 20) res(undefined);
        else requestAnimationFrame(f);
      };
      requestAnimationFrame(f);
    });
    const settleMs = performance.now() - t0;
    /** @type {number[]} */
    const frames = [];
    let last = performance.now();
    let running = true;
    const tick = (/** @type {number} */ now) => {
      frames.push(now - last);
      last = now;
      if (running) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
    let sent = 0;
    const start = performance.now();
    const words = ["stream ", "ing ", "**bold** ", "`code` ", "text\n", "more ", "words "];
    await new Promise((res) => {
      const pump = () => {
        const due = Math.floor((performance.now() - start) * 1.0); // 1,000 per second
        for (; sent < due && sent < 5000; sent++) {
          const msg = JSON.stringify({ type: "message_delta", agent_id: agent, message_id: "live-" + Math.floor(sent / 500), block_index: 0, kind: "text", text_delta: words[sent % words.length] });
          app.conn.dispatch(JSON.parse(msg));
        }
        if (sent >= 5000) res(undefined);
        else setTimeout(pump, 4);
      };
      pump();
    });
    const elapsed = performance.now() - start;
    running = false;
    frames.shift();
    const sorted = [...frames].sort((a, b) => a - b);
    const p = (/** @type {number} */ q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    return { sync_10000_ms: Math.round(syncMs), settled_ms: Math.round(settleMs), deltas: sent, seconds: +(elapsed / 1000).toFixed(2), frames: frames.length, frame_p50_ms: +p(0.5).toFixed(1), frame_p95_ms: +p(0.95).toFixed(1), frame_p99_ms: +p(0.99).toFixed(1), frame_max_ms: +sorted[sorted.length - 1].toFixed(1), dom_nodes: document.getElementsByTagName("*").length };
  });
  out.streaming = r;

  // 3. Memory of the tab.
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("HeapProfiler.collectGarbage");
  await cdp.send("Performance.enable");
  const { metrics } = await cdp.send("Performance.getMetrics");
  const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
  out.memory = { js_heap_used_mb: +(m.JSHeapUsedSize / 1048576).toFixed(1), js_heap_total_mb: +(m.JSHeapTotalSize / 1048576).toFixed(1), dom_nodes: m.Nodes, renderer_rss_mb: rendererRssMb() };
  await ctx.close();
} finally {
  await browser.close();
  d.cleanup();
}
console.log(JSON.stringify(out, null, 2));
