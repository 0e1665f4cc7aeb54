// Pending `permission_request` and `ui_request` dialogs of one agent. Keyed by request_id
// so a re-sent request (after a reconnect) never shows twice; disabled while the
// connection is down and live again once `sync` or a re-sent request confirms them;
// dismissed on `permission_resolved` / `ui_resolved`, saying where they were answered.

import { h, clear } from "./dom.js";

/** @typedef {import("./protocol").PermissionRequest} PermissionRequest */
/** @typedef {import("./protocol").UiRequest} UiRequest */
/** @typedef {{el: HTMLElement, title: string, answeredHere: string | null, choices: Map<string, string>}} Pending */

const LEGACY = /** @type {Record<string, {label: string, accelerator: string}>} */ ({
  allow: { label: "Allow once", accelerator: "y" },
  allow_always: { label: "Always allow", accelerator: "a" },
  deny: { label: "Deny", accelerator: "n" },
});

export class Requests {
  /**
   * @param {(cmd: Record<string, unknown>) => Promise<unknown>} send
   * @param {(text: string) => void} note
   */
  constructor(send, note) {
    this.send = send;
    this.note = note;
    this.el = h("div", { class: "requests" });
    /** @type {Map<string, Pending>} */
    this.pending = new Map();
    this.live = true;
  }

  get size() {
    return this.pending.size;
  }

  /**
   * Shows a request, or confirms (re-enables) one already shown.
   * @param {any} req a PermissionRequest or UiRequest
   */
  show(req) {
    const have = this.pending.get(req.request_id);
    if (have) {
      if (!have.answeredHere) setDisabled(have.el, !this.live);
      return;
    }
    const p = "tool_name" in req ? this.permission(req) : this.ui(req);
    if (!p) return;
    this.pending.set(req.request_id, p);
    this.el.appendChild(p.el);
    setDisabled(p.el, !this.live);
    const active = document.activeElement;
    if (!active || active === document.body || (active instanceof HTMLTextAreaElement && active.value === "")) {
      /** @type {HTMLElement | null} */ (p.el.querySelector("button, input, textarea, select"))?.focus();
    }
  }

  /**
   * The authoritative pending set from `sync`: shows and confirms those, drops the rest.
   * @param {any[]} list
   */
  syncPending(list) {
    const ids = new Set(list.map((r) => r.request_id));
    for (const [id, p] of this.pending) {
      if (!ids.has(id)) {
        p.el.remove();
        this.pending.delete(id);
        this.note(`${p.title}: answered elsewhere while this page had no link to the daemon.`);
      }
    }
    for (const r of list) this.show(r);
  }

  /**
   * Marks every dialog live or disabled (the connection is down).
   * @param {boolean} live
   */
  setLive(live) {
    this.live = live;
    for (const p of this.pending.values()) setDisabled(p.el, !live || !!p.answeredHere);
  }

  /**
   * `permission_resolved` / `ui_resolved`: dismisses and says where it was answered.
   * @param {any} ev
   */
  resolved(ev) {
    const p = this.pending.get(ev.request_id);
    if (!p) return;
    p.el.remove();
    this.pending.delete(ev.request_id);
    const answer = ev.choice_id ? p.choices.get(ev.choice_id) ?? ev.choice_id : ev.decision ? LEGACY[ev.decision]?.label ?? ev.decision : ev.value !== undefined ? JSON.stringify(ev.value) : "";
    const where = p.answeredHere ? "here" : whereFrom(ev.source);
    this.note(`${p.title}: ${answer ? "“" + answer + "”, " : ""}answered ${where}.`);
  }

  /**
   * @param {string} id @param {Pending} p @param {Record<string, unknown>} answer @param {string} label
   */
  answer(id, p, answer, label) {
    p.answeredHere = label;
    setDisabled(p.el, true);
    p.el.classList.add("answering");
    // An answer that never arrived (refused, or the socket dropped) gives the dialog back:
    // the request is still pending and someone must be able to answer it.
    this.send({ request_id: id, ...answer }).catch(() => {
      if (this.pending.get(id) !== p) return;
      p.answeredHere = null;
      p.el.classList.remove("answering");
      setDisabled(p.el, !this.live);
    });
  }

  /** @param {any} r @returns {Pending} */
  permission(r) {
    const title = "Permission for " + r.tool_name;
    const choices =
      Array.isArray(r.choices) && r.choices.length
        ? r.choices.map((/** @type {any} */ c) => ({ id: String(c.id), label: String(c.label), description: c.description, accelerator: c.accelerator, intent: String(c.intent), answer: { choice_id: c.id } }))
        : (Array.isArray(r.options) ? r.options : []).map((/** @type {string} */ o) => ({ id: o, label: LEGACY[o]?.label ?? o, description: null, accelerator: LEGACY[o]?.accelerator, intent: o === "deny" ? "deny" : "allow", answer: { decision: o } }));
    /** @type {Pending} */
    const p = { el: h("section"), title, answeredHere: null, choices: new Map(choices.map((/** @type {any} */ c) => [c.id, c.label])) };
    const headId = "req-" + r.request_id.replace(/[^\w-]/g, "_");
    /** @type {HTMLButtonElement[]} */
    const buttons = choices.map((/** @type {any} */ c) =>
      h(
        "button",
        { type: "button", class: "choice intent-" + c.intent, "aria-label": c.label, title: c.description ?? false, "data-key": c.accelerator ?? false, onclick: () => this.answer(r.request_id, p, { type: "permission_response", ...c.answer }, c.label) },
        c.label,
        c.accelerator ? h("kbd", { "aria-hidden": "true" }, c.accelerator) : null,
      ),
    );
    const prompt = r.prompt ? String(r.prompt) : "";
    // A command the prompt already shows is not repeated under it.
    const details = (Array.isArray(r.details) ? r.details : []).filter((/** @type {any} */ d) => !(d.format === "command" && String(d.value).trim() !== "" && String(d.value).split("\n").every((l) => prompt.includes(l))));
    p.el = h(
      "section",
      { class: "request permission", role: "dialog", "aria-labelledby": headId, tabindex: "-1" },
      h("h3", { id: headId }, title),
      promptNodes(prompt),
      details.length
        ? h("dl", { class: "details" }, details.map((/** @type {any} */ d) => [d.label ? h("dt", {}, String(d.label)) : null, h("dd", { class: "fmt-" + (d.format ?? "text") }, detailValue(d))]))
        : // The raw input only when the request says nothing else about the call.
          Array.isArray(r.details) && r.details.length
          ? null
          : h("pre", { class: "plain" }, JSON.stringify(r.input, null, 2)),
      h("div", { class: "choices" }, buttons),
    );
    p.el.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLInputElement) return;
      const b = buttons.find((b) => (b.dataset.key ?? "").toLowerCase() === e.key.toLowerCase());
      if (b && !b.disabled) {
        e.preventDefault();
        e.stopPropagation();
        b.click();
      }
    });
    return p;
  }

  /** @param {any} r @returns {Pending | null} */
  ui(r) {
    const title = r.title ? String(r.title) : "The agent asks";
    /** @type {Pending} */
    const p = { el: h("section"), title, answeredHere: null, choices: new Map() };
    const headId = "req-" + r.request_id.replace(/[^\w-]/g, "_");
    /** @param {string | string[] | null} value @param {string} label */
    const reply = (value, label) => this.answer(r.request_id, p, { type: "ui_response", value }, label);
    const body = h("div", { class: "choices" });
    switch (r.kind) {
      case "select":
        for (const o of Array.isArray(r.options) ? r.options : []) body.appendChild(h("button", { type: "button", class: "choice", onclick: () => reply(String(o), String(o)) }, String(o)));
        body.appendChild(h("button", { type: "button", class: "choice intent-deny", onclick: () => reply(null, "dismissed") }, "Dismiss"));
        break;
      case "confirm":
        body.appendChild(h("button", { type: "button", class: "choice intent-allow", onclick: () => reply("yes", "yes") }, "Yes"));
        body.appendChild(h("button", { type: "button", class: "choice intent-deny", onclick: () => reply("no", "no") }, "No"));
        break;
      case "input":
      case "editor": {
        const field = r.kind === "input" ? h("input", { type: "text", "aria-label": "Answer", placeholder: r.placeholder ?? false }) : h("textarea", { rows: 6, "aria-label": "Answer", placeholder: r.placeholder ?? false });
        field.value = r.prefill ?? "";
        const submit = () => reply(field.value, field.value);
        field.addEventListener("keydown", (e) => {
          const ke = /** @type {KeyboardEvent} */ (e);
          if (ke.key === "Enter" && (r.kind === "input" || ke.ctrlKey || ke.metaKey)) {
            ke.preventDefault();
            submit();
          }
        });
        body.appendChild(field);
        body.appendChild(h("button", { type: "button", class: "choice intent-allow", onclick: submit }, "Answer"));
        body.appendChild(h("button", { type: "button", class: "choice intent-deny", onclick: () => reply(null, "dismissed") }, "Dismiss"));
        break;
      }
      case "notify":
        this.note(`${title}: ${r.message ?? ""}`);
        return null;
      default:
        body.appendChild(h("button", { type: "button", class: "choice intent-deny", onclick: () => reply(null, "dismissed") }, "Dismiss"));
    }
    p.el = h("section", { class: "request ui", role: "dialog", "aria-labelledby": headId, tabindex: "-1" }, h("h3", { id: headId }, title), r.message ? h("p", { class: "request-prompt" }, String(r.message)) : null, body);
    return p;
  }

  /** Drops everything (the agent was closed). */
  clear() {
    clear(this.el);
    this.pending.clear();
  }
}

/**
 * Where an answer came from, in words. The daemon names the answering connection
 * (`client-N`) or the headless path; it overwrites whatever a client claims.
 * @param {string | null | undefined} source
 */
function whereFrom(source) {
  if (!source) return "elsewhere";
  // The daemon names the answering connection and, in parentheses, what it is.
  const named = /^client-\d+ \((.+)\)$/.exec(source);
  if (named) return named[1].startsWith("browser ") ? "in another browser (" + named[1].slice(8) + ")" : "in " + named[1];
  if (/^client-/.test(source)) return "in another client (" + source + ")";
  if (source.startsWith("headless")) return "by the headless policy (" + source + ")";
  return "from " + source;
}

/**
 * A permission prompt as paragraphs and command blocks. The Runtime marks each line of a
 * command with `  │ ` so a terminal sets it apart; here those lines are a preformatted
 * block and the bar, which would be a stray glyph on a page, is not drawn.
 * @param {string} prompt
 */
function promptNodes(prompt) {
  /** @type {HTMLElement[]} */
  const out = [];
  /** @type {string[]} */
  let text = [];
  /** @type {string[] | null} */
  let command = null;
  const flush = () => {
    if (text.length && text.some((l) => l.trim())) out.push(h("p", { class: "request-prompt" }, text.join("\n")));
    text = [];
    if (command) out.push(h("pre", { class: "request-command" }, command.join("\n")));
    command = null;
  };
  for (const line of prompt ? prompt.split("\n") : []) {
    const m = /^\s*│ ?(.*)$/.exec(line);
    if (m) {
      if (!command) flush();
      (command ??= []).push(m[1]);
    } else {
      if (command) flush();
      text.push(line);
    }
  }
  flush();
  return out;
}

/**
 * One detail's value: a diff coloured line by line in a box that scrolls when long;
 * commands and code preformatted; the rest as text.
 * @param {any} d
 */
function detailValue(d) {
  const value = String(d.value);
  if (d.format === "diff") {
    return h(
      "pre",
      { class: "diff-detail", tabindex: "0", "aria-label": "proposed change" },
      value.split("\n").map((l, i, all) => {
        if (i === all.length - 1 && l === "") return null;
        const c = l.startsWith("+++") || l.startsWith("---") ? "file" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : "ctx";
        return h("span", { class: c === "hunk" ? "hunk-head" : "line-" + c }, l + "\n");
      }),
    );
  }
  return d.format === "command" || d.format === "code" ? h("pre", {}, value) : value;
}

/** @param {HTMLElement} el @param {boolean} disabled */
function setDisabled(el, disabled) {
  el.classList.toggle("disabled", disabled);
  for (const c of el.querySelectorAll("button, input, textarea, select")) /** @type {HTMLButtonElement} */ (c).disabled = disabled;
}
