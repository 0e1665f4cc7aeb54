// The overview: every agent with its live activity, status, model, mode and cost, grouped
// by project (cwd; a workspace agent under its repository's main checkout, then under its
// workspace), subagents nested under their parent; New agent; terminate and kill.
// Rebuilt from the agent map on change, batched to one paint per frame.

import { h, clear, cost } from "./dom.js";

/** @typedef {import("./protocol").AgentInfo} AgentInfo */
/** @typedef {AgentInfo & {activity?: {phase: string, tool_name?: string | null}}} AgentRow */
/** @typedef {import("./protocol").WorkspaceInfo} WorkspaceInfo */

export class Overview {
  /**
   * @param {HTMLElement} el
   * @param {{
   *   open: (id: string) => void,
   *   create: (req: Record<string, string>) => Promise<void>,
   *   terminate: (id: string) => void,
   *   kill: (id: string) => void,
   * }} actions
   */
  constructor(el, actions) {
    this.el = el;
    this.actions = actions;
    /** @type {Map<string, AgentRow>} */
    this.agents = new Map();
    /** @type {string[]} */
    this.recent = [];
    /** @type {HTMLElement | null} */
    this.recentList = null;
    /** @type {Set<string>} */
    this.openIds = new Set();
    /** @type {Map<string, WorkspaceInfo>} agent id → its (active) workspace */
    this.workspaceOf = new Map();
    this.frame = 0;
    this.painted = false;
    this.list = h("div", { class: "agent-groups" });
    this.form = this.createForm();
    this.el.appendChild(h("div", { class: "overview-head" }, h("h2", {}, "Agents"), h("button", { type: "button", class: "new-agent", "aria-keyshortcuts": "n", onclick: () => this.openCreate() }, "New agent")));
    this.el.appendChild(this.list);
    this.el.appendChild(this.form);
  }

  /**
   * The daemon's recent directories — its agents' (archived ones too), newest first — offered
   * by the create form's directory field.
   * @param {AgentInfo[]} agents
   */
  remember(agents) {
    const seen = new Map(this.recent.map((d, i) => [d, -i]));
    for (const a of agents) if (a.cwd) seen.set(a.cwd, Math.max(seen.get(a.cwd) ?? -Infinity, a.created_at ?? 0));
    this.recent = [...seen.entries()].sort((x, y) => y[1] - x[1]).map(([d]) => d).slice(0, 20);
    if (this.recentList) this.recentList.replaceChildren(...this.recent.map((d) => h("option", { value: d })));
  }

  /** @param {AgentInfo[]} agents */
  replaceAll(agents) {
    const old = this.agents;
    this.remember(agents);
    // Archived agents (`shard rm`) are kept by the daemon, not shown here.
    this.agents = new Map(agents.filter((a) => !a.archived).map((a) => [a.agent_id, { ...a, activity: old.get(a.agent_id)?.activity }]));
    this.paint();
  }

  /**
   * @param {string} id
   * @param {Partial<AgentRow>} patch
   */
  update(id, patch) {
    const a = this.agents.get(id);
    if (!a) return;
    Object.assign(a, patch);
    this.paint();
  }

  /**
   * Adds one `usage` event to the agent's session totals. The one place usage is summed:
   * the overview's cost and an open pane's session line both read the result.
   * @param {string} id
   * @param {{input?: number | null, output?: number | null, cost?: number | null}} ev
   */
  addUsage(id, ev) {
    const a = this.agents.get(id);
    if (!a) return;
    const u = a.usage ?? { input: 0, output: 0 };
    this.update(id, { usage: { ...u, input: u.input + (ev.input ?? 0), output: u.output + (ev.output ?? 0), cost: (u.cost ?? 0) + (ev.cost ?? 0) } });
  }

  /** @param {AgentInfo} info */
  upsert(info) {
    this.remember([info]);
    if (info.archived) {
      this.agents.delete(info.agent_id);
      this.paint();
      return;
    }
    this.agents.set(info.agent_id, { ...this.agents.get(info.agent_id), ...info });
    this.paint();
  }

  /**
   * Drops an agent another client archived (`agent_archived`); its directory stays among
   * the recent ones.
   * @param {string} id
   */
  remove(id) {
    if (this.agents.delete(id)) this.paint();
  }

  /** @param {import("./protocol").WorkspaceListData} data `workspace.list` */
  setWorkspaces(data) {
    this.workspaceOf = new Map();
    for (const g of data.repositories) for (const w of g.workspaces) for (const id of w.agent_ids ?? []) this.workspaceOf.set(id, w);
    this.paint();
  }

  /** @param {string} id */
  name(id) {
    const a = this.agents.get(id);
    return a ? a.name ?? a.display_name ?? a.agent_id : id;
  }

  paint() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.paintNow());
  }

  paintNow() {
    this.frame = 0;
    const byProject = new Map();
    /** @type {Map<string, AgentRow[]>} */
    const children = new Map();
    for (const a of this.agents.values()) {
      if (a.parent_agent_id && this.agents.has(a.parent_agent_id)) {
        const list = children.get(a.parent_agent_id) ?? [];
        list.push(a);
        children.set(a.parent_agent_id, list);
      } else {
        const ws = this.workspaceOf.get(a.agent_id);
        // A host's paths as HOST:PATH, so one path on two machines is two projects.
        const [host, path] = ws?.repository_cwd ? [ws.host, ws.repository_cwd] : [a.host, a.cwd];
        const project = host ? `${host}:${path}` : path;
        const list = byProject.get(project) ?? [];
        list.push(a);
        byProject.set(project, list);
      }
    }
    const frag = document.createDocumentFragment();
    for (const cwd of [...byProject.keys()].sort()) {
      const rows = byProject.get(cwd).sort((/** @type {AgentRow} */ x, /** @type {AgentRow} */ y) => x.created_at - y.created_at);
      const plain = rows.filter((/** @type {AgentRow} */ a) => !this.workspaceOf.has(a.agent_id));
      /** @type {Map<string, {ws: WorkspaceInfo, rows: AgentRow[]}>} */
      const byWorkspace = new Map();
      for (const a of rows) {
        const ws = this.workspaceOf.get(a.agent_id);
        if (!ws) continue;
        const g = byWorkspace.get(ws.workspace_id) ?? { ws, rows: [] };
        g.rows.push(a);
        byWorkspace.set(ws.workspace_id, g);
      }
      const workspaces = [...byWorkspace.values()].map(({ ws, rows: wsRows }) =>
        h(
          "div",
          { class: "workspace", "data-workspace": ws.workspace_id },
          h("h4", { class: "workspace-head", title: ws.cwd }, (ws.label ? ws.label + " · " : "") + ws.branch),
          h("ul", { class: "agents" }, wsRows.map((a) => this.row(a, children))),
        ),
      );
      frag.appendChild(h("section", { class: "project" }, h("h3", { class: "project-cwd", title: cwd }, cwd), plain.length ? h("ul", { class: "agents" }, plain.map((/** @type {AgentRow} */ a) => this.row(a, children))) : null, workspaces));
    }
    if (!this.agents.size) frag.appendChild(h("p", { class: "empty" }, "No agents yet."));
    clear(this.list);
    this.list.appendChild(frag);
    if (this.agents.size && !this.painted) {
      this.painted = true;
      // Navigation → first overview with agents, for bench/web-client.
      requestAnimationFrame(() => performance.mark("shard:overview-painted"));
    }
  }

  /**
   * @param {AgentRow} a
   * @param {Map<string, AgentRow[]>} children
   * @returns {HTMLElement}
   */
  row(a, children) {
    // The accessible name starts with the agent's name, else its display name or id.
    const name = a.name ?? a.display_name ?? a.agent_id;
    const phase = a.activity ? a.activity.phase + (a.activity.tool_name ? " " + a.activity.tool_name : "") : "";
    const kids = children.get(a.agent_id) ?? [];
    const alive = a.runtime_state !== "stopped" && a.runtime_state !== "failed";
    return h(
      "li",
      { class: "agent st-" + a.status + (this.openIds.has(a.agent_id) ? " open" : "") },
      h(
        "button",
        { type: "button", class: "agent-open", "data-agent": a.agent_id, onclick: () => this.actions.open(a.agent_id) },
        h("span", { class: "agent-name" }, name),
        h("span", { class: "agent-meta" }, [a.status.replace(/_/g, " "), phase && phase !== a.status ? phase : "", a.runtime_state !== "running" ? a.runtime_state : "", a.model ?? "", a.mode ?? "", cost(a.usage?.cost ?? undefined)].filter(Boolean).join(" · ")),
      ),
      h(
        "span",
        { class: "agent-actions" },
        h("button", { type: "button", class: "icon", "aria-label": "Terminate " + name, title: "Terminate: stop when its work is done", disabled: !alive, onclick: () => this.actions.terminate(a.agent_id) }, "■"),
        h("button", { type: "button", class: "icon danger", "aria-label": "Kill " + name, title: "Kill now", disabled: !alive, onclick: () => this.actions.kill(a.agent_id) }, "✕"),
      ),
      kids.length ? h("ul", { class: "agents subagents" }, kids.map((k) => this.row(k, children))) : null,
    );
  }

  createForm() {
    const recent = h("datalist", { id: "recent-dirs" });
    this.recentList = recent;
    const cwd = h("input", { name: "cwd", required: true, "aria-label": "Working directory", placeholder: "/path/to/project", list: "recent-dirs", autocomplete: "off" });
    const model = h("input", { name: "model", "aria-label": "Model of the new agent", placeholder: "default" });
    const provider = h("input", { name: "provider", "aria-label": "Provider of the new agent", placeholder: "default" });
    const mode = h("input", { name: "mode", "aria-label": "Mode of the new agent", placeholder: "default" });
    const name = h("input", { name: "name", "aria-label": "Name of the new agent", placeholder: "optional" });
    const error = h("p", { class: "form-error", role: "alert" });
    const dlg = h(
      "dialog",
      { class: "create", "aria-label": "Create an agent" },
      h(
        "form",
        { method: "dialog" },
        h("h2", {}, "Create an agent"),
        h("label", {}, "Directory ", cwd),
        recent,
        h("label", {}, "Name ", name),
        h("label", {}, "Model ", model),
        h("label", {}, "Provider ", provider),
        h("label", {}, "Mode ", mode),
        error,
        h("div", { class: "form-buttons" }, h("button", { type: "submit", value: "create" }, "Create"), h("button", { type: "button", onclick: () => dlg.close() }, "Cancel")),
      ),
    );
    dlg.addEventListener("submit", async (e) => {
      e.preventDefault();
      /** @type {Record<string, string>} */
      const req = {};
      for (const f of [cwd, model, provider, mode, name]) if (f.value.trim()) req[f.name] = f.value.trim();
      error.textContent = "";
      try {
        await this.actions.create(req);
        dlg.close();
      } catch (err) {
        error.textContent = err instanceof Error ? err.message : String(err);
      }
    });
    this.cwdInput = cwd;
    return dlg;
  }

  openCreate() {
    const d = /** @type {HTMLDialogElement} */ (this.form);
    if (!d.open) d.showModal();
    // The most recent directory is the likely one; the list offers the others.
    if (this.cwdInput && !this.cwdInput.value && this.recent.length) /** @type {HTMLInputElement} */ (this.cwdInput).value = this.recent[0];
    this.cwdInput?.focus();
  }
}
