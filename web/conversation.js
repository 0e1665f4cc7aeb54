// The message log of one agent. Streaming deltas append to the one block they belong to
// (re-rendered at most once per animation frame); `message_complete` and `sync` replace a
// message by id, so nothing is ever shown twice. Long logs stay cheap: messages live in
// chunks of CHUNK, each with `content-visibility: auto` (app.css), so the browser skips
// laying out and painting off-screen chunks and tracks a few hundred boxes, not one per
// message (per-message containment made Chrome's visibility observer the hot spot).

import { h, clear } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { renderDescriptor, renderResultContent, renderImage, exitLine } from "./render.js";
import { subagentCards, reportCard, renderCard, reportNotice } from "./cards.js";

/** @typedef {import("./protocol").Message} Message */
/** @typedef {import("./protocol").ContentBlock} ContentBlock */

/**
 * @typedef {{kind: "text" | "thinking", el: HTMLElement, body: HTMLElement, text: string}} TextBlock
 * @typedef {{kind: "tool_call", el: HTMLElement, tool: ToolView}} ToolBlock
 * @typedef {{kind: "other", el: HTMLElement}} OtherBlock
 * @typedef {TextBlock | ToolBlock | OtherBlock} Block
 * @typedef {{el: HTMLElement, blocks: Block[]}} MsgView
 * @typedef {{el: HTMLElement, head: HTMLElement, args: HTMLElement, preview: HTMLElement, result: HTMLElement, argsText: string, name: string}} ToolView
 */

const CHUNK = 50;

export class Conversation {
  constructor() {
    this.el = h("div", { class: "log", role: "log", "aria-label": "Conversation" });
    /** @type {Map<string, MsgView>} */
    this.messages = new Map();
    /** @type {Map<string, ToolView>} */
    this.tools = new Map();
    /** @type {Set<TextBlock>} */
    this.dirty = new Set();
    this.frame = 0;
    /** the role of the message `build` is drawing (a report is a user message) */
    this.role = "";
    /** @type {HTMLElement | null} the chunk new messages go into */
    this.tail = null;
    /** Whether the view follows new output (the user has not scrolled up). */
    this.follow = true;
    /** @type {{el: HTMLElement, text: string}[]} local echoes awaiting their `user_message` */
    this.pending = [];
    /** @type {string | null} the oldest shown message id while older ones exist */
    this.truncatedBefore = null;
    /** Bumped by `reset`, so a history page asked for an older window is dropped. */
    this.gen = 0;
    this.loadingOlder = false;
    /** @type {((before: string) => Promise<{messages: Message[], truncated_before?: string | null, interrupted_after?: string[] | null}>) | null} */
    this.fetchOlder = null;
    /** The scroll offset at the last scroll event. */
    this.lastTop = 0;
    this.el.addEventListener("scroll", () => {
      // Only a move up stops following: output that grew below the offset we set before
      // this event arrived is no reason to leave the bottom.
      const top = this.el.scrollTop;
      if (this.el.scrollHeight - top - this.el.clientHeight < 40) this.follow = true;
      else if (top < this.lastTop) this.follow = false;
      this.lastTop = top;
      if (top < 40) void this.loadOlder();
    });
  }

  /**
   * Scrolled to the top with older messages on the server: asks for the page before the
   * oldest shown message (`session_op history`) and prepends it, keeping the view still.
   */
  async loadOlder() {
    const before = this.truncatedBefore;
    if (!before || this.loadingOlder || !this.fetchOlder) return;
    this.loadingOlder = true;
    const gen = this.gen;
    try {
      const page = await this.fetchOlder(before);
      if (gen !== this.gen) return;
      this.prepend(page.messages ?? [], page.interrupted_after ?? []);
      this.truncatedBefore = page.truncated_before ?? null;
    } catch (e) {
      if (gen === this.gen) {
        this.truncatedBefore = null;
        this.note("Older messages could not be loaded: " + (e instanceof Error ? e.message : String(e)), "error");
      }
    } finally {
      if (gen === this.gen) this.loadingOlder = false;
    }
    if (gen === this.gen) this.fillView();
  }

  /** Loads older pages while the log does not fill its box (no scroll event would come). */
  fillView() {
    if (this.truncatedBefore && this.el.scrollHeight <= this.el.clientHeight + 40) void this.loadOlder();
  }

  /**
   * Older messages (oldest first) above everything shown, in chunks of their own.
   * @param {Message[]} messages
   * @param {string[]} [interruptedAfter] ids of messages an aborted turn stopped after
   */
  prepend(messages, interruptedAfter = []) {
    const fresh = messages.filter((m) => m.id && !this.messages.has(m.id));
    if (!fresh.length) return;
    const height = this.el.scrollHeight;
    const top = this.el.scrollTop;
    const first = this.el.querySelector(".chunk");
    let chunk = null;
    for (const m of fresh) {
      if (!chunk || chunk.childElementCount >= CHUNK) {
        chunk = h("div", { class: "chunk older" });
        this.el.insertBefore(chunk, first);
      }
      const v = this.build(m);
      this.messages.set(m.id, v);
      chunk.appendChild(v.el);
      if (interruptedAfter.includes(m.id)) chunk.appendChild(interruptedNote());
    }
    if (!this.tail && chunk) {
      this.tail = chunk;
      chunk.classList.add("tail");
    }
    this.el.scrollTop = top + (this.el.scrollHeight - height);
  }

  /**
   * A `user_message`: a prompt, steer or follow-up entered the conversation, from this
   * browser or another client. It replaces this page's oldest pending echo of the same
   * text (so the sender never sees it twice); otherwise it is appended.
   * @param {string} id
   * @param {Message} message
   */
  userMessage(id, message) {
    if (this.messages.has(id)) return;
    const text = message.content.map((c) => (c.type === "text" ? c.text : "")).join("");
    const v = this.build(message);
    v.el.dataset.id = id;
    const i = this.pending.findIndex((p) => p.text === text);
    if (i >= 0) {
      const [echo] = this.pending.splice(i, 1);
      echo.el.replaceWith(v.el);
    } else {
      this.add(v.el);
    }
    this.messages.set(id, v);
    this.scroll();
  }

  /**
   * Replaces everything with the authoritative window of a `sync`.
   * @param {Message[]} messages
   * @param {number | undefined | null} compactionIndex
   * @param {string | undefined | null} [truncatedBefore]
   * @param {string[] | undefined | null} [interruptedAfter] ids of messages an aborted turn stopped after
   */
  reset(messages, compactionIndex, truncatedBefore, interruptedAfter) {
    clear(this.el);
    this.gen++;
    this.loadingOlder = false;
    this.truncatedBefore = truncatedBefore ?? null;
    this.pending = [];
    this.tail = null;
    this.messages.clear();
    this.tools.clear();
    this.dirty.clear();
    if (compactionIndex !== undefined && compactionIndex !== null) {
      this.add(h("p", { class: "note" }, `Earlier messages were compacted (${compactionIndex + 1} compaction${compactionIndex ? "s" : ""}); the model sees their summary.`));
    }
    for (const m of messages) {
      const v = this.build(m);
      this.messages.set(m.id || "local-" + this.messages.size, v);
      this.add(v.el);
      if (interruptedAfter?.includes(m.id)) this.add(interruptedNote());
    }
    this.follow = true;
    this.scroll();
    requestAnimationFrame(() => this.fillView());
  }

  /**
   * A message snapshot (`message_complete`): replaces the streaming view of that id.
   * @param {string} id
   * @param {Message} message
   */
  complete(id, message) {
    const v = this.build(message);
    const old = this.messages.get(id);
    if (old) {
      for (const b of old.blocks) if (b.kind === "text" || b.kind === "thinking") this.dirty.delete(b);
      old.el.replaceWith(v.el);
    } else {
      this.add(v.el);
    }
    this.messages.set(id, v);
    this.scroll();
  }

  /**
   * A local echo of what this browser sent, shown at once; the `user_message` the runtime
   * emits when it enters the conversation replaces it (a runtime without that event
   * leaves it to the next `sync`).
   * @param {string} text
   * @param {number} images
   * @param {string} how
   */
  echo(text, images, how) {
    const el = h("article", { class: "msg role-user local pending" }, h("div", { class: "who" }, how ? "you (" + how + ")" : "you"), h("div", { class: "block text md" }, renderMarkdown(text)), images ? h("span", { class: "chip" }, `${images} image${images > 1 ? "s" : ""}`) : null);
    this.add(el);
    this.pending.push({ el, text });
    this.follow = true;
    this.scroll();
  }

  /**
   * A line of status in the log (turn usage, errors, resolutions).
   * @param {string} text
   * @param {string} [cls]
   */
  note(text, cls = "") {
    this.add(h("p", { class: "note " + cls }, text));
    this.scroll();
  }

  /** A turn ended by an abort: said where it stopped. */
  interrupted() {
    this.add(interruptedNote());
    this.scroll();
  }

  /**
   * One `message_delta`: touches only its block.
   * @param {any} d
   */
  delta(d) {
    let v = this.messages.get(d.message_id);
    if (!v) {
      v = { el: h("article", { class: "msg role-assistant streaming" }, h("div", { class: "who" }, "assistant")), blocks: [] };
      this.messages.set(d.message_id, v);
      this.add(v.el);
    }
    let b = v.blocks[d.block_index];
    if (!b) {
      b = this.newBlock(d.kind === "tool_call" ? { type: "tool_call", id: d.tool_call_id ?? "", name: d.name ?? "", args: {} } : { type: d.kind === "thinking" ? "thinking" : "text", text: "" }, true);
      v.blocks[d.block_index] = b;
      // Keep block order even if a later index arrived first.
      const next = v.blocks.slice(d.block_index + 1).find((x) => x);
      v.el.insertBefore(b.el, next ? next.el : null);
    }
    if (b.kind === "text" || b.kind === "thinking") {
      b.text += d.text_delta ?? "";
      this.markDirty(b);
    } else if (b.kind === "tool_call") {
      if (d.name) b.tool.head.textContent = d.name;
      if (d.args_delta) {
        b.tool.argsText += d.args_delta;
        b.tool.args.textContent = b.tool.argsText;
      }
    }
    this.scroll();
  }

  /**
   * Appends a message or note to the last chunk, opening a new chunk when it is full.
   * @param {HTMLElement} el
   */
  add(el) {
    if (!this.tail || this.tail.childElementCount >= CHUNK) {
      // The chunk output goes into is always laid out (`.tail`): skipped off screen, it
      // would keep its remembered size while it grows, and "scroll to the bottom" would
      // stop short of what was added.
      this.tail?.classList.remove("tail");
      this.tail = h("div", { class: "chunk tail" });
      this.el.appendChild(this.tail);
    }
    this.tail.appendChild(el);
  }

  /** @param {TextBlock} b */
  markDirty(b) {
    this.dirty.add(b);
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  flush() {
    this.frame = 0;
    for (const b of this.dirty) paintText(b);
    this.dirty.clear();
    if (this.follow) this.el.scrollTop = this.el.scrollHeight;
  }

  scroll() {
    if (this.follow && !this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  /**
   * The `tool_call` event: start-time render descriptor, before the result lands.
   * @param {any} ev
   */
  toolCall(ev) {
    const t = this.tool(ev.tool_call_id, ev.name);
    if (ev.name) t.name = ev.name;
    t.el.classList.toggle("read-only", ev.read_only === true);
    if (ev.args) setArgs(t, ev.args);
    clear(t.preview);
    if (ev.render) t.preview.appendChild(renderDescriptor(ev.render));
    this.scroll();
  }

  /**
   * The `tool_result` event.
   * @param {any} ev
   */
  toolResult(ev) {
    const t = this.tool(ev.tool_call_id, "");
    this.fillResult(t, ev.render, ev.content, ev.is_error, ev.exit_code, ev.duration_ms, ev.images);
    this.scroll();
  }

  /**
   * @param {ToolView} t @param {any} render @param {any} content @param {boolean} isError
   * @param {number | undefined} exit @param {number | undefined} ms
   * @param {{data: string, mime_type: string}[] | null | undefined} [images] beside the content
   */
  fillResult(t, render, content, isError, exit, ms, images) {
    clear(t.result);
    // What only the running call had (its start-time preview, the read-only mark) is not
    // in the session: a finished call looks the same live and after a reload.
    clear(t.preview);
    t.el.classList.remove("read-only");
    t.el.classList.add("done");
    t.el.classList.toggle("failed", !!isError);
    if (render) {
      t.result.appendChild(renderDescriptor(render));
    } else if (content) {
      const cards = !isError && content.kind === "text" ? subagentCards(t.name, String(content.text)) : null;
      if (cards) for (const c of cards) t.result.appendChild(renderCard(c));
      else t.result.appendChild(renderResultContent(content));
    }
    for (const img of images ?? []) t.result.appendChild(renderImage(String(img.data), String(img.mime_type)));
    const line = exitLine(exit, ms);
    if (line) t.result.appendChild(line);
  }

  /**
   * The view of a tool call, created standalone if its message is not shown.
   * @param {string} id @param {string} name
   */
  tool(id, name) {
    let t = this.tools.get(id);
    if (!t) {
      t = newTool(name);
      this.tools.set(id, t);
      this.add(h("article", { class: "msg role-assistant" }, t.el));
    }
    return t;
  }

  /**
   * A message as DOM.
   * @param {Message} m
   * @returns {MsgView}
   */
  build(m) {
    this.role = m.role;
    const blocks = m.content.map((c) => this.newBlock(c, false));
    this.role = "";
    const shown = blocks.filter((b) => b.el.childNodes.length || b.kind !== "other");
    const report = blocks.some((b) => b.el.classList.contains("report"));
    const el = h("article", { class: "msg role-" + m.role + (report ? " notice" : "") }, shown.length && !report && !m.content.every((c) => c.type === "tool_result") ? h("div", { class: "who" }, m.role === "user" ? "you" : "assistant") : null, blocks.map((b) => b.el));
    // A message of only results drawn under their calls (a saved turn's tool results)
    // shows nothing of its own: no empty box between the messages around it.
    if (blocks.every((b) => b.el.hidden)) el.classList.add("empty");
    return { el, blocks };
  }

  /**
   * @param {ContentBlock | any} c
   * @param {boolean} streaming
   * @returns {Block}
   */
  newBlock(c, streaming) {
    switch (c.type) {
      case "text": {
        const report = this.role === "user" ? reportCard(String(c.text ?? "")) : null;
        if (report) return { kind: "other", el: reportNotice(report) };
        const body = h("div", { class: "md" });
        const b = /** @type {TextBlock} */ ({ kind: "text", el: h("div", { class: "block text" }, body), body, text: String(c.text ?? "") });
        if (!streaming) paintText(b);
        return b;
      }
      case "thinking": {
        const body = h("div", { class: "thinking-text" });
        const el = h("details", { class: "block thinking" }, h("summary", {}, "Thinking"), body);
        const b = /** @type {TextBlock} */ ({ kind: "thinking", el, body, text: String(c.text ?? "") });
        if (!streaming) paintText(b);
        return b;
      }
      case "tool_call": {
        let t = this.tools.get(c.id);
        if (!t) {
          t = newTool(c.name);
          if (c.id) this.tools.set(c.id, t);
        }
        if (c.name) t.name = c.name;
        if (c.args && Object.keys(c.args).length) setArgs(t, c.args);
        return { kind: "tool_call", el: t.el, tool: t };
      }
      case "tool_result": {
        const t = this.tools.get(c.tool_call_id);
        if (t) {
          // A saved result carries what the live event did: drawn the same after a reload.
          this.fillResult(t, c.render, c.content, c.is_error, c.exit_code, c.duration_ms, c.images);
          return { kind: "other", el: h("span", { hidden: true }) };
        }
        const shown = [renderResultContent(c.content), ...(c.images ?? []).map((/** @type {any} */ i) => renderImage(String(i.data), String(i.mime_type)))];
        return { kind: "other", el: h("div", { class: "block tool-result" }, ...shown) };
      }
      case "image":
        return { kind: "other", el: h("div", { class: "block" }, renderImage(String(c.data), String(c.mime_type))) };
      default:
        return { kind: "other", el: h("pre", { class: "block plain" }, JSON.stringify(c)) };
    }
  }
}

/** @param {TextBlock} b */
function paintText(b) {
  clear(b.body);
  if (b.kind === "thinking") b.body.textContent = b.text;
  else b.body.appendChild(renderMarkdown(b.text));
}

/** @param {string} name @returns {ToolView} */
function newTool(name) {
  const head = h("span", { class: "tool-name" }, name);
  const args = h("code", { class: "tool-args" });
  const preview = h("div", { class: "tool-preview" });
  const result = h("div", { class: "tool-result" });
  const el = h("div", { class: "block tool" }, h("div", { class: "tool-head" }, head, " ", args), preview, result);
  return { el, head, args, preview, result, argsText: "", name };
}

/**
 * A call's arguments as a person reads them in its header: the command, path or pattern
 * it acts on (`edit notes.txt`, `bash cargo test`), the whole JSON on hover; other calls
 * keep their JSON.
 * @param {ToolView} t @param {Record<string, unknown>} args
 */
function setArgs(t, args) {
  t.argsText = JSON.stringify(args);
  const key = ["command", "path", "file_path", "pattern", "url", "query", "question"].find((k) => typeof args[k] === "string" && args[k] !== "");
  let short = key ? String(args[key]).split("\n")[0] : null;
  if (t.name === "subagent" && typeof args.action === "string") {
    // `create review`, `wait review`, `create 3 tasks` (crates/shard-client/src/results.rs).
    const what = [args.name, args.handle].find((v) => typeof v === "string") ?? (Array.isArray(args.tasks) ? args.tasks.length + " tasks" : "");
    short = (args.action + " " + what).trim();
  }
  t.args.textContent = short ?? t.argsText;
  t.args.title = t.argsText;
  t.args.classList.toggle("short", short !== null);
}

/** The mark an aborted turn leaves, live and after a reload alike. */
function interruptedNote() {
  return h("p", { class: "note interrupted", role: "status" }, "interrupted");
}
