// Subagent runs as cards: the `subagent` tool's create / wait / status answers (JSON text)
// become one card per run — alias, state, final text, usage — and the daemon's
// `[subagent report]` message to the parent becomes a notice holding the run's card, not a
// message the person typed. The same rules as crates/shard-client/src/results.rs.

import { h } from "./dom.js";

/** @typedef {{alias: string, state: string, final_text?: string, usage?: string, error?: string}} Card */

const FAILED = new Set(["failed", "timed_out", "cancelled", "interrupted"]);
const REPORT = "[subagent report]";

/**
 * @param {any} r a run snapshot, a report or an agent status
 * @returns {Card | null}
 */
function card(r) {
  if (!r || typeof r !== "object") return null;
  const s = (/** @type {string} */ k) => (typeof r[k] === "string" && r[k].trim() !== "" ? String(r[k]) : undefined);
  const alias = s("alias") ?? s("display_name") ?? s("name") ?? s("agent_id");
  if (!alias) return null;
  const u = r.usage;
  const usage = u && Number.isFinite(u.input) && Number.isFinite(u.output) ? `${u.input} in · ${u.output} out` : undefined;
  return { alias, state: s("state") ?? "unknown", final_text: s("final_text"), usage, error: s("error") };
}

/**
 * The cards of a `subagent` tool result's text, or null when it is not such an answer.
 * @param {string} tool @param {string} text
 * @returns {Card[] | null}
 */
export function subagentCards(tool, text) {
  if (tool !== "subagent") return null;
  let v;
  try {
    v = JSON.parse(text);
  } catch (_e) {
    return null;
  }
  if (!v || typeof v !== "object") return null;
  /** @type {any[]} */
  const runs = [];
  if (Array.isArray(v.runs)) runs.push(...v.runs);
  if (v.run && typeof v.run === "object") runs.push(v.run);
  if (Array.isArray(v.agents)) for (const a of v.agents) runs.push(a && a.run && typeof a.run === "object" ? a.run : a);
  if (!runs.length && v.run_id && v.state) runs.push(v);
  const cards = runs.map(card).filter((c) => c !== null);
  return cards.length ? /** @type {Card[]} */ (cards) : null;
}

/**
 * The card of a `[subagent report]` message, or null for any other text.
 * @param {string} text
 * @returns {Card | null}
 */
export function reportCard(text) {
  if (!text.startsWith(REPORT)) return null;
  try {
    return card(JSON.parse(text.slice(REPORT.length)).subagent_report);
  } catch (_e) {
    return null;
  }
}

/**
 * One card as DOM (every string a text node).
 * @param {Card} c
 */
export function renderCard(c) {
  return h(
    "div",
    { class: "run-card" + (FAILED.has(c.state) ? " failed" : "") },
    h("div", { class: "run-head" }, h("span", { class: "run-alias" }, c.alias), " ", h("span", { class: "run-state state-" + c.state }, c.state), c.usage ? h("span", { class: "run-usage" }, " · " + c.usage) : null),
    c.error ? h("pre", { class: "plain tone-error" }, c.error) : null,
    c.final_text ? h("pre", { class: "plain run-final" }, c.final_text) : null,
  );
}

/**
 * The notice a report message becomes.
 * @param {Card} c
 */
export function reportNotice(c) {
  return h("aside", { class: "block report", role: "note", "aria-label": "subagent report" }, h("div", { class: "note" }, "subagent report"), renderCard(c));
}
