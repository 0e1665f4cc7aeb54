// The browser client's entry: one Connection, the overview, the open agents' panes, the
// connection state and the keyboard shortcuts. Speaks only the protocol (docs/protocol.md §9, §10).

import { h, clear } from "./dom.js";
import { Connection } from "./conn.js";
import { Overview } from "./overview.js";
import { Pane } from "./pane.js";

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

const ORCHESTRATOR = new Set(["agent_spawned", "agent_archived", "agent_exited", "agent_status_changed", "agent_activity", "workspace_created", "workspace_attached", "workspace_retired", "workspace_conflict"]);
const WORKSPACE_CHANGES = new Set(["workspace_created", "workspace_attached", "workspace_retired"]);

class App {
  constructor() {
    /** @type {Map<string, Pane>} */
    this.panes = new Map();
    /** @type {string | null} */
    this.active = null;
    this.connWord = h("span", { class: "conn-word" });
    this.connDetail = h("span", { class: "conn-detail" });
    this.retry = h("button", { type: "button", class: "retry", hidden: true, onclick: () => this.conn.retryNow() }, "Retry now");
    $("conn").append(this.connWord, this.connDetail, this.retry);
    this.conn = new Connection({
      onState: (s, detail) => this.onState(s, detail),
      onHello: () => void this.onHello(),
      onEvent: (ev) => this.onEvent(ev),
    });
    this.overview = new Overview($("overview"), {
      open: (id) => this.open(id),
      create: (req) => this.create(req),
      terminate: (id) => void this.conn.request({ type: "agent.terminate", agent_id: id }).catch((e) => alertLine(e)),
      kill: (id) => void this.conn.request({ type: "agent.kill", agent_id: id }).catch((e) => alertLine(e)),
    });
    this.split = h("button", { type: "button", class: "split", "aria-pressed": "false", onclick: () => this.toggleSplit() }, "Side by side");
    $("tabs").after(this.split);
    this.help = helpDialog();
    document.body.appendChild(this.help);
    $("help-btn").addEventListener("click", () => this.help.showModal());
    document.addEventListener("keydown", (e) => this.onKey(e));
    this.paintTabs();
    this.conn.start();
  }

  /** Workspaces group the overview's agents by repository and worktree (docs/workspaces.md). */
  async loadWorkspaces() {
    try {
      this.overview.setWorkspaces(await this.conn.request({ type: "workspace.list" }));
    } catch (_e) {
      // An older daemon without workspaces: the overview groups by cwd alone.
    }
  }

  /** @param {import("./conn.js").ConnState} s @param {string} detail */
  onState(s, detail) {
    this.connWord.textContent = s;
    this.connDetail.textContent = detail ? " — " + detail : "";
    $("conn").className = "conn conn-" + s;
    this.retry.hidden = s !== "offline";
    for (const p of this.panes.values()) p.setLive(false);
  }

  async onHello() {
    try {
      const d = await this.conn.request({ type: "agent.list" });
      this.overview.replaceAll(d.agents);
    } catch (_e) {
      return;
    }
    void this.loadWorkspaces();
    for (const p of this.panes.values()) {
      p.refreshTitle();
      void p.attach();
    }
  }

  /** @param {any} ev */
  onEvent(ev) {
    if (ORCHESTRATOR.has(ev.type)) {
      if (WORKSPACE_CHANGES.has(ev.type)) void this.loadWorkspaces();
      if (ev.type === "agent_spawned") this.overview.upsert(ev.info);
      else if (ev.type === "agent_activity") this.overview.update(ev.agent_id, { activity: { phase: ev.phase, tool_name: ev.tool_name }, status: ev.status });
      else if (ev.type === "agent_status_changed") this.overview.update(ev.agent_id, { status: ev.status, runtime_state: ev.runtime_state });
      else if (ev.type === "agent_archived") this.overview.remove(ev.agent_id);
      else if (ev.type === "agent_exited") this.overview.update(ev.agent_id, { runtime_state: "failed" });
      return;
    }
    if (typeof ev.agent_id !== "string") return;
    const p = this.panes.get(ev.agent_id);
    if (ev.type === "status" || ev.type === "sync") this.overview.update(ev.agent_id, { status: ev.status });
    if (ev.type === "mode_changed") this.overview.update(ev.agent_id, { mode: ev.mode });
    if (ev.type === "model_changed") this.overview.update(ev.agent_id, { model: ev.active?.id });
    // Summed before the pane sees the event: the pane reads the session's totals from here.
    if (ev.type === "usage") this.overview.addUsage(ev.agent_id, ev);
    p?.onEvent(ev);
  }

  /** @param {Record<string, string>} req */
  async create(req) {
    const d = await this.conn.request({ type: "agent.create", ...req });
    const list = await this.conn.request({ type: "agent.list" });
    this.overview.replaceAll(list.agents);
    this.open(d.agent_id);
  }

  /** @param {string} id */
  open(id) {
    let p = this.panes.get(id);
    if (!p) {
      p = new Pane(this.conn, id, () => this.overview.agents.get(id), (x) => this.close(x));
      this.panes.set(id, p);
      $("panes").appendChild(p.el);
      p.setLive(false);
      if (this.conn.state === "connected") void p.attach();
    }
    this.activate(id);
    p.composer.focus();
  }

  /** @param {string} id */
  close(id) {
    const p = this.panes.get(id);
    if (!p) return;
    p.detach();
    p.el.remove();
    this.panes.delete(id);
    if (this.active === id) this.active = [...this.panes.keys()].pop() ?? null;
    this.activate(this.active);
  }

  /** @param {string | null} id */
  activate(id) {
    this.active = id;
    for (const [pid, p] of this.panes) p.el.classList.toggle("active", pid === id);
    this.overview.openIds = new Set(this.panes.keys());
    this.overview.paint();
    document.body.classList.toggle("has-pane", id !== null);
    $("empty").hidden = this.panes.size > 0;
    this.paintTabs();
  }

  paintTabs() {
    const tabs = $("tabs");
    clear(tabs);
    for (const [id, p] of this.panes) {
      tabs.appendChild(h("button", { type: "button", role: "tab", "aria-selected": id === this.active ? "true" : "false", class: "tab", onclick: () => this.activate(id) }, this.overview.name(id)));
    }
    if (this.panes.size) tabs.appendChild(h("button", { type: "button", class: "tab back", onclick: () => this.activate(null) }, "All agents"));
  }

  toggleSplit() {
    const on = !$("panes").classList.contains("split");
    $("panes").classList.toggle("split", on);
    this.split.setAttribute("aria-pressed", String(on));
  }

  /** @param {KeyboardEvent} e */
  onKey(e) {
    const t = /** @type {HTMLElement} */ (e.target);
    const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement || t.isContentEditable;
    if (e.key === "Escape" && typing) {
      t.blur();
      return;
    }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    const ids = [...this.panes.keys()];
    const i = this.active ? ids.indexOf(this.active) : -1;
    const pane = this.active ? this.panes.get(this.active) : undefined;
    switch (e.key) {
      case "?":
        this.help.showModal();
        break;
      case "n":
        this.overview.openCreate();
        break;
      case "i":
      case "/":
        pane?.composer.focus();
        break;
      case "]":
        if (ids.length) this.activate(ids[(i + 1) % ids.length]);
        break;
      case "[":
        if (ids.length) this.activate(ids[(i - 1 + ids.length) % ids.length]);
        break;
      case "g":
        this.activate(null);
        /** @type {HTMLElement | null} */ (document.querySelector(".agent-open"))?.focus();
        break;
      case "x":
        if (pane && !pane.composer.abort.disabled) pane.composer.abort.click();
        break;
      case "w":
        if (this.active) this.close(this.active);
        break;
      case "s":
        this.toggleSplit();
        break;
      default:
        return;
    }
    e.preventDefault();
  }
}

/** @param {unknown} e */
function alertLine(e) {
  const msg = e instanceof Error ? e.message : String(e);
  $("overview").appendChild(h("p", { class: "form-error", role: "alert" }, msg));
}

const SHORTCUTS = [
  ["?", "this list"],
  ["n", "create an agent"],
  ["i or /", "focus the prompt box"],
  ["Enter / Shift+Enter", "send / new line (in the prompt box)"],
  ["[ and ]", "previous / next open agent"],
  ["g", "back to all agents"],
  ["x", "abort the current turn"],
  ["w", "close the open agent"],
  ["s", "side by side on a wide screen"],
  ["Esc", "leave a text box; close a dialog"],
  ["a letter on a permission choice", "answer it while the dialog has focus"],
];

function helpDialog() {
  const d = h("dialog", { class: "help", "aria-label": "Keyboard shortcuts" }, h("h2", {}, "Keyboard shortcuts"), h("dl", { class: "kv" }, SHORTCUTS.map(([k, v]) => [h("dt", {}, h("kbd", {}, k)), h("dd", {}, v)])));
  const close = h("button", { type: "button", onclick: () => d.close() }, "Close");
  d.appendChild(close);
  return d;
}

const app = new App();
/** For tests and the benchmark: the running client. */
/** @type {any} */ (window).shard = app;
