// One open agent: its header (status, Mode/Model/reasoning pickers gated on
// `sync.capabilities`, usage and the context bar), its conversation, its pending dialogs
// and the prompt box. Routes that agent's events.

import { h, clear, num, cost } from "./dom.js";
import { Conversation } from "./conversation.js";
import { Requests } from "./dialogs.js";
import { Composer } from "./composer.js";

/** @typedef {import("./conn.js").Connection} Connection */
/** @typedef {import("./protocol").AgentInfo} AgentInfo */

const BUSY = new Set(["streaming", "waiting_for_permission", "waiting_for_ui", "compacting"]);

export class Pane {
  /**
   * @param {Connection} conn
   * @param {string} agentId
   * @param {() => AgentInfo | undefined} info
   * @param {(agentId: string) => void} onClose
   */
  constructor(conn, agentId, info, onClose) {
    this.conn = conn;
    this.agentId = agentId;
    this.info = info;
    this.status = "idle";
    this.mode = "";
    /** @type {string[]} */
    this.caps = [];
    /** @type {any} */
    this.activeModel = null;
    /** This turn's usage; the session's totals are the overview's (`Overview.addUsage`). */
    this.turn = { input: 0, output: 0, cost: 0 };
    this.context = 0;
    this.controlsGen = 0;
    this.conv = new Conversation();
    this.conv.fetchOlder = (before) => this.conn.request({ type: "session_op", agent_id: this.agentId, op: "history", args: { before } });
    this.requests = new Requests((cmd) => this.fire(cmd), (t) => this.conv.note(t, "resolution"));
    this.composer = new Composer({
      send: (text, images, how) => this.prompt(text, images, how),
      abort: () => this.fire({ type: "abort" }),
      busy: () => BUSY.has(this.status),
    });
    this.title = h("h2", { class: "pane-title" });
    this.statusEl = h("span", { class: "status" });
    this.modeSel = picker("Mode", (v) => this.set({ type: "set_mode", mode: v }));
    this.modelSel = picker("Model", (v) => this.set({ type: "set_model", model: v }));
    this.effortSel = picker("Reasoning", (v) => this.set({ type: "set_reasoning_level", model: this.activeModel?.id ?? "", effort: v }));
    this.usageEl = h("span", { class: "usage" });
    this.ctxBar = h("meter", { class: "context", min: 0, max: 1, value: 0, "aria-label": "Context used" });
    this.ctxText = h("span", { class: "context-text" });
    this.controls = h("div", { class: "controls" });
    this.el = h(
      "section",
      { class: "pane", role: "tabpanel", "data-agent": agentId },
      h("header", { class: "pane-head" }, this.title, this.statusEl, h("button", { type: "button", class: "icon close", "aria-label": "Close conversation", onclick: () => onClose(agentId) }, "×")),
      this.controls,
      h("div", { class: "usage-line" }, this.usageEl, this.ctxBar, this.ctxText),
      this.conv.el,
      this.requests.el,
      this.composer.el,
    );
    this.refreshTitle();
  }

  refreshTitle() {
    const i = this.info();
    this.title.textContent = i ? i.name ?? i.display_name ?? i.agent_id : this.agentId;
  }

  /** Attaches (again, after a reconnect); `sync` follows. */
  async attach() {
    try {
      await this.conn.request({ type: "agent.attach", agent_id: this.agentId, role: "interactive" });
    } catch (e) {
      this.conv.note("Cannot attach: " + (e instanceof Error ? e.message : String(e)), "error");
    }
  }

  detach() {
    void this.conn.request({ type: "agent.detach", agent_id: this.agentId }).catch(() => {});
  }

  /** @param {boolean} live */
  setLive(live) {
    this.requests.setLive(live);
    this.composer.setLive(live);
    for (const s of [this.modeSel, this.modelSel, this.effortSel]) s.disabled = !live || s.options.length < 2;
  }

  /**
   * A per-agent command whose refusal is shown in the log; the returned promise still
   * rejects, for callers that must undo something.
   * @param {Record<string, unknown>} cmd
   * @returns {Promise<unknown>}
   */
  fire(cmd) {
    const sent = this.conn.request({ ...cmd, agent_id: this.agentId });
    sent.catch((e) => this.conv.note(`${cmd.type}: ${e.message}`, "error"));
    return sent;
  }

  /**
   * A picker change; the authoritative value comes back as an event or response.
   * @param {Record<string, unknown>} cmd
   */
  async set(cmd) {
    try {
      const data = await this.conn.request({ ...cmd, agent_id: this.agentId });
      if (cmd.type === "set_mode" && data?.mode) this.setMode(data.mode);
      if (cmd.type === "set_model" && data?.active) this.setModel(data.active);
      if (typeof data?.notice === "string") this.conv.note(data.notice);
      if (cmd.type === "set_reasoning_level" && data?.active) this.effortSel.value = data.active;
    } catch (e) {
      this.conv.note(`${cmd.type}: ${e instanceof Error ? e.message : e}`, "error");
      this.setMode(this.mode);
      if (this.activeModel) this.setModel(this.activeModel);
    }
  }

  /**
   * @param {string} text @param {{data: string, mime_type: string}[]} images @param {"steer" | "follow_up" | ""} how
   */
  async prompt(text, images, how) {
    /** @type {Record<string, unknown>} */
    const cmd = { type: "prompt", agent_id: this.agentId, message: text };
    if (images.length) cmd.images = images.map((i) => ({ type: "image", ...i }));
    if (how) cmd.streaming_behavior = how;
    try {
      await this.conn.request(cmd);
      this.conv.echo(text, images.length, how === "steer" ? "steer" : how === "follow_up" ? "follow-up" : "");
      return true;
    } catch (e) {
      this.conv.note("Not sent: " + (e instanceof Error ? e.message : String(e)), "error");
      return false;
    }
  }

  /** @param {string} s */
  setStatus(s) {
    this.status = s;
    this.statusEl.textContent = s.replace(/_/g, " ");
    this.statusEl.className = "status st-" + s;
    this.composer.setBusy(BUSY.has(s));
  }

  /** @param {string} m */
  setMode(m) {
    this.mode = m;
    if (![...this.modeSel.options].some((o) => o.value === m)) this.modeSel.appendChild(h("option", { value: m }, m));
    this.modeSel.value = m;
  }

  /** @param {any} d a ModelDescriptor */
  setModel(d) {
    this.activeModel = d;
    if (![...this.modelSel.options].some((o) => o.value === d.id)) this.modelSel.appendChild(h("option", { value: d.id }, d.id));
    this.modelSel.value = d.id;
    this.paintUsage();
  }

  /** Builds the controls the runtime advertises, from its catalogs. */
  async loadControls() {
    // A newer sync may start another load while this one awaits: only the latest builds.
    const gen = ++this.controlsGen;
    clear(this.controls);
    const caps = this.caps;
    if (caps.includes("mode-catalog")) {
      this.controls.appendChild(labelled("Mode", this.modeSel));
      try {
        const d = await this.conn.request({ type: "list_modes", agent_id: this.agentId });
        if (gen !== this.controlsGen) return;
        fill(this.modeSel, d.modes.map((/** @type {any} */ m) => [m.name, m.name, m.description]));
        this.setMode(d.active);
      } catch (_e) {
        this.setMode(this.mode);
      }
      this.modeSel.disabled = !caps.includes("mode-switch");
    }
    if (gen !== this.controlsGen) return;
    if (caps.includes("model-catalog")) {
      this.controls.appendChild(labelled("Model", this.modelSel));
      try {
        const d = await this.conn.request({ type: "list_models", agent_id: this.agentId });
        if (gen !== this.controlsGen) return;
        fill(this.modelSel, d.models.map((/** @type {any} */ m) => [m.id, m.id, ""]));
        this.setModel(d.active);
      } catch (_e) {
        /* the runtime may be stopped: the picker stays empty */
      }
      this.modelSel.disabled = !caps.includes("model-switch");
    }
    if (gen !== this.controlsGen) return;
    await this.loadReasoning();
  }

  async loadReasoning() {
    if (!this.caps.includes("reasoning-catalog")) {
      this.effortSel.parentElement?.remove();
      return;
    }
    try {
      const d = await this.conn.request({ type: "list_reasoning_levels", agent_id: this.agentId });
      // Removed only now: two overlapping loads (a sync and a model change) must not
      // leave an empty label behind.
      this.effortSel.parentElement?.remove();
      fill(this.effortSel, d.levels.map((/** @type {any} */ l) => [l.id, l.label, l.description ?? ""]));
      this.effortSel.value = d.active;
      this.effortSel.disabled = !this.caps.includes("reasoning-switch");
      this.controls.appendChild(labelled("Reasoning", this.effortSel));
    } catch (_e) {
      this.effortSel.parentElement?.remove();
    }
  }

  paintUsage() {
    const s = this.info()?.usage ?? { input: 0, output: 0, cost: 0 };
    this.usageEl.textContent = `turn ${num(this.turn.input)} in · ${num(this.turn.output)} out ${cost(this.turn.cost) || ""} — session ${num(s.input)} in · ${num(s.output)} out ${cost(s.cost)}`;
    const win = this.activeModel?.context_window;
    if (win) {
      this.ctxBar.max = win;
      this.ctxBar.value = this.context;
      this.ctxBar.hidden = false;
      this.ctxText.textContent = `context ${num(this.context)} / ${num(win)} (${Math.round((100 * this.context) / win)}%)`;
    } else {
      this.ctxBar.hidden = true;
      this.ctxText.textContent = this.context ? `context ${num(this.context)} tokens` : "";
    }
  }

  /** @param {any} u an AgentInfo.usage, read at `sync` for the context in use */
  setSessionUsage(u) {
    if (u?.context_tokens) this.context = u.context_tokens;
    this.paintUsage();
  }

  /**
   * One event for this agent.
   * @param {any} ev
   */
  onEvent(ev) {
    switch (ev.type) {
      case "sync":
        this.setStatus(ev.status);
        this.caps = Array.isArray(ev.capabilities) ? ev.capabilities : [];
        this.mode = ev.mode;
        this.conv.reset(ev.live_window?.messages ?? [], ev.live_window?.compaction_index, ev.live_window?.truncated_before, ev.live_window?.interrupted_after, ev.live_window?.permission_answers);
        this.requests.live = true;
        this.requests.syncPending(ev.pending_requests ?? []);
        this.setLive(true);
        this.setSessionUsage(this.info()?.usage);
        void this.loadControls();
        break;
      case "status":
        this.setStatus(ev.status);
        if (ev.status === "error" && ev.detail) this.conv.note(ev.detail, "error");
        break;
      case "turn_start":
        this.turn = { input: 0, output: 0, cost: 0 };
        break;
      case "message_delta":
        this.conv.delta(ev);
        break;
      case "message_complete":
        this.conv.complete(ev.message_id, ev.message);
        break;
      case "user_message":
        this.conv.userMessage(ev.message_id, ev.message);
        break;
      case "tool_call":
        this.conv.toolCall(ev);
        break;
      case "tool_result":
        this.conv.toolResult(ev);
        break;
      case "usage":
        this.turn.input += ev.input ?? 0;
        this.turn.output += ev.output ?? 0;
        this.turn.cost += ev.cost ?? 0;
        if (ev.context_tokens) this.context = ev.context_tokens;
        this.paintUsage();
        break;
      case "turn_end":
        if (ev.interrupted) this.conv.interrupted();
        this.conv.note(`Turn: ${num(this.turn.input)} in · ${num(this.turn.output)} out${this.turn.cost ? " · " + cost(this.turn.cost) : ""}`, "turn");
        break;
      case "error":
        this.conv.note(errorText(ev), "error");
        break;
      case "compaction":
        this.conv.note(`Compacted: ${num(ev.tokens_before)} → ${num(ev.tokens_after)} tokens.`);
        break;
      case "permission_request":
      case "ui_request":
        this.requests.show(ev);
        break;
      case "permission_resolved":
      case "ui_resolved":
        this.requests.resolved(ev);
        break;
      case "mode_changed":
        this.setMode(ev.mode);
        break;
      case "model_changed":
        this.setModel(ev.active);
        if (Array.isArray(ev.capabilities)) {
          this.caps = [...new Set([...this.caps.filter((c) => !c.startsWith("reasoning-")), ...ev.capabilities])];
          void this.loadReasoning();
        }
        break;
      case "reasoning_level_changed":
        this.effortSel.value = ev.active;
        break;
      default:
        break;
    }
  }
}

/**
 * A labelled select; its accessible name is exactly `name`.
 * @param {string} name
 * @param {(value: string) => void} onChange
 */
function picker(name, onChange) {
  const s = h("select", { "aria-label": name, class: "picker" });
  s.addEventListener("change", () => onChange(s.value));
  return s;
}

/** @param {string} text @param {HTMLElement} control */
function labelled(text, control) {
  return h("span", { class: "control" }, h("span", { class: "control-label", "aria-hidden": "true" }, text), control);
}

/** @param {HTMLSelectElement} sel @param {[string, string, string][]} items */
function fill(sel, items) {
  clear(sel);
  for (const [value, label, title] of items) sel.appendChild(h("option", { value, title: title || false }, label));
}

/** What the user can do about a provider failure, by its `kind`. */
const PROVIDER_HINTS = {
  auth: "check the API key and the account",
  rate_limited: "rate limited: wait, then prompt again",
  overloaded: "the provider is overloaded: wait, or switch model",
  context_window_exceeded: "the conversation is too long for the model: compact it or start a new session",
  invalid_request: "the provider refused the request: change the model or the request",
  network: "the provider could not be reached: check the connection",
  server: "the provider failed: try again later",
};

/**
 * One line for an `error` event: the code (a provider failure's kind beside it), the
 * message, and what to do.
 * @param {{code: string, message: string, fatal?: boolean | null, kind?: string | null, retry_after_ms?: number | null}} ev
 */
export function errorText(ev) {
  const head = ev.fatal ? "Fatal error" : "Error";
  const kind = typeof ev.kind === "string" ? ev.kind : "";
  const code = kind ? `${ev.code}, ${kind}` : ev.code;
  /** @type {string[]} */
  const tail = [];
  const hint = /** @type {Record<string, string>} */ (PROVIDER_HINTS)[kind];
  if (hint) tail.push(hint);
  if (typeof ev.retry_after_ms === "number") tail.push(`retry in ${Math.ceil(ev.retry_after_ms / 1000)} s`);
  return `${head} (${code}): ${ev.message}${tail.length ? ` (${tail.join("; ")})` : ""}`;
}
