// Benchmarks of the browser client in headless Chromium:
//  1. navigation → overview painted with 50 agents (a real daemon with 50 scripted
//     agents, their Runtimes stopped so the machine is not running 50 processes);
//  2. frame time while 1,000 message deltas a second stream into a conversation that
//     already holds 10,000 messages. The events are fed to the client's own dispatch
//     (JSON text parsed by the same code path as a WebSocket frame), because no real
//     session yields a 10,000-message sync window (it is byte-bounded) and a scripted
//     provider cannot pace deltas exactly;
//  3. memory of the tab after that (JS heap and DOM nodes, from the DevTools protocol);
//  4. the main thread's work per frame during the same stream (a second conversation),
//     from a DevTools trace: wall and CPU time of each frame's rendering and of the tasks
//     before it.
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

  // 2. Streaming into a 10,000-message conversation, at the display's pace (vsync).
  out.streaming = await page.evaluate(streamInto, "agent-bench");

  // 3. Memory of the tab.
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("HeapProfiler.collectGarbage");
  await cdp.send("Performance.enable");
  const { metrics } = await cdp.send("Performance.getMetrics");
  const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
  out.memory = { js_heap_used_mb: +(m.JSHeapUsedSize / 1048576).toFixed(1), js_heap_total_mb: +(m.JSHeapTotalSize / 1048576).toFixed(1), dom_nodes: m.Nodes, renderer_rss_mb: rendererRssMb() };
  await ctx.close();

  // 4. The main thread's work per frame during the same stream, from a DevTools trace of a
  //    second conversation: every task the renderer's main thread ran, cut into frames at
  //    each BeginMainFrame (rendering: frame callbacks, style, layout, paint, commit). A
  //    frame's work is its BeginMainFrame plus every task since the previous one (handling
  //    the deltas that arrived). Chromium without vsync is no help: a frame with nothing to
  //    draw still waits for the next 60 Hz tick, so its rAF interval mixes work and waiting.
  const traced = await enrolledPage(browser, d);
  await browser.startTracing(traced.page, { categories: ["toplevel", "devtools.timeline", "disabled-by-default-devtools.timeline.frame", "blink.user_timing", "benchmark"] });
  const during = await traced.page.evaluate(streamInto, "agent-bench-traced");
  out.main_thread_work_per_frame = { ...frameWork(JSON.parse((await browser.stopTracing()).toString("utf8"))), rAF_interval_while_traced: during.interval };
  await traced.ctx.close();
} finally {
  await browser.close();
  await d.cleanup();
}
console.log(JSON.stringify(out, null, 2));

/**
 * Per-frame main-thread work between the marks `shard:stream-start` and `shard:stream-end`
 * of a trace (see part 4).
 * @param {any} trace
 */
function frameWork(trace) {
  const events = trace.traceEvents ?? trace;
  const mainThreads = new Set(events.filter((/** @type {any} */ e) => e.ph === "M" && e.name === "thread_name" && e.args?.name === "CrRendererMain").map((/** @type {any} */ e) => e.pid + ":" + e.tid));
  const mark = (/** @type {string} */ n) => events.find((/** @type {any} */ e) => e.name === n)?.ts;
  const from = mark("shard:stream-start");
  const to = mark("shard:stream-end");
  if (from === undefined || to === undefined) return { error: "the trace has no stream marks" };
  // The page's main thread is the one that recorded the marks.
  const markEv = events.find((/** @type {any} */ e) => e.name === "shard:stream-start");
  const thread = markEv.pid + ":" + markEv.tid;
  const on = events.filter((/** @type {any} */ e) => e.ph === "X" && e.pid + ":" + e.tid === (mainThreads.has(thread) ? thread : [...mainThreads][0]) && e.ts >= from && e.ts + (e.dur ?? 0) <= to);
  const tasks = on.filter((/** @type {any} */ e) => e.name === "ThreadControllerImpl::RunTask").sort((/** @type {any} */ a, /** @type {any} */ b) => a.ts - b.ts);
  const frames = on.filter((/** @type {any} */ e) => e.name === "ProxyMain::BeginMainFrame").sort((/** @type {any} */ a, /** @type {any} */ b) => a.ts - b.ts);
  // Wall time (`dur`) counts time the thread was preempted on a loaded machine; thread time
  // (`tdur`) is the CPU the main thread itself spent.
  /** @type {number[]} */
  const work = [];
  /** @type {number[]} */
  const workCpu = [];
  /** @type {number[]} */
  const render = [];
  /** @type {number[]} */
  const renderCpu = [];
  let t = 0;
  for (const f of frames) {
    let sum = 0;
    let cpu = 0;
    for (; t < tasks.length && tasks[t].ts <= f.ts; t++) {
      sum += tasks[t].dur ?? 0;
      cpu += tasks[t].tdur ?? 0;
    }
    work.push(sum / 1000);
    workCpu.push(cpu / 1000);
    render.push((f.dur ?? 0) / 1000);
    renderCpu.push((f.tdur ?? 0) / 1000);
  }
  const stats = (/** @type {number[]} */ xs) => {
    const s = [...xs].sort((a, b) => a - b);
    if (!s.length) return { frames: 0 };
    const p = (/** @type {number} */ q) => +s[Math.min(s.length - 1, Math.floor(q * s.length))].toFixed(2);
    return { frames: s.length, p50_ms: p(0.5), p95_ms: p(0.95), p99_ms: p(0.99), max_ms: +s[s.length - 1].toFixed(2), over_16_ms: s.filter((x) => x > 16).length };
  };
  const busy = tasks.reduce((a, x) => a + (x.dur ?? 0), 0) / 1000;
  return { seconds: +((to - from) / 1e6).toFixed(2), main_thread_busy_pct: Math.round((100 * busy * 1000) / (to - from)), work_wall: stats(work), work_cpu: stats(workCpu), rendering_wall: stats(render), rendering_cpu: stats(renderCpu) };
}

/**
 * Runs in the page: opens `agent`, feeds it a 10,000-message `sync`, then 5,000 deltas at
 * 1,000 a second through the client's own dispatch (JSON text parsed as a WebSocket frame
 * would be), and measures every animation frame meanwhile:
 * - `interval`: from one frame's start to the next (the display's refresh when the page
 *   keeps up);
 * - `client_frame_callback`: the client's own per-frame re-render of the dirty blocks;
 * - long animation frames (over 50 ms) as the browser reports them, with the script, style
 *   and layout share of the worst.
 * @param {string} agent
 */
async function streamInto(agent) {
  const app = /** @type {any} */ (window).shard;
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
  // The client's own frame callback (re-rendering the dirty blocks), timed on its own.
  const conv = app.panes.get(agent).conv;
  /** @type {number[]} */
  const flushes = [];
  const flush = conv.flush.bind(conv);
  conv.flush = () => {
    const a = performance.now();
    flush();
    flushes.push(performance.now() - a);
  };
  /** @type {any[]} */
  const loafs = [];
  let observer = null;
  try {
    observer = new PerformanceObserver((l) => loafs.push(...l.getEntries()));
    observer.observe({ type: "long-animation-frame", buffered: false });
  } catch (_e) {
    /* a browser without the Long Animation Frames API */
  }
  /** @type {number[]} */
  const intervals = [];
  let last = performance.now();
  let running = true;
  const tick = (/** @type {number} */ now) => {
    intervals.push(now - last);
    last = now;
    if (running) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  let sent = 0;
  performance.mark("shard:stream-start");
  const start = performance.now();
  const words = ["stream ", "ing ", "**bold** ", "`code` ", "text\n", "more ", "words "];
  await new Promise((res) => {
    const pump = () => {
      const due = Math.floor(performance.now() - start); // 1,000 per second
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
  performance.mark("shard:stream-end");
  running = false;
  await new Promise((res) => setTimeout(res, 100));
  observer?.disconnect();
  intervals.shift();
  const stats = (/** @type {number[]} */ xs) => {
    const s = [...xs].sort((a, b) => a - b);
    const p = (/** @type {number} */ q) => +s[Math.min(s.length - 1, Math.floor(q * s.length))].toFixed(1);
    // Over 17.5 ms: longer than one 60 Hz refresh, i.e. at least one frame dropped.
    return { frames: s.length, p50_ms: p(0.5), p95_ms: p(0.95), p99_ms: p(0.99), max_ms: +s[s.length - 1].toFixed(1), over_17_5_ms: s.filter((x) => x > 17.5).length };
  };
  const worst = loafs.reduce((a, b) => (b.duration > (a?.duration ?? 0) ? b : a), null);
  return {
    sync_10000_ms: Math.round(syncMs),
    settled_ms: Math.round(settleMs),
    deltas: sent,
    seconds: +(elapsed / 1000).toFixed(2),
    interval: stats(intervals),
    client_frame_callback: stats(flushes),
    long_animation_frames: observer
      ? {
          count: loafs.length,
          worst: worst && { duration_ms: Math.round(worst.duration), script_ms: Math.round((worst.scripts ?? []).reduce((a, x) => a + x.duration, 0)), style_layout_ms: Math.round(worst.startTime + worst.duration - worst.styleAndLayoutStart), blocking_ms: Math.round(worst.blockingDuration ?? 0) },
        }
      : "unsupported",
    dom_nodes: document.getElementsByTagName("*").length,
  };
}
