// Markdown to DOM nodes, safely: model text only ever becomes text nodes; links are kept
// only for http(s) and mailto URLs (anything else, `javascript:` included, stays text);
// images are shown as their alt text and address, never fetched. The subset: headings,
// paragraphs, fenced code, lists, block quotes, rules, tables, and inline code,
// emphasis, strong, strike-through and links.

import { h } from "./dom.js";
import { highlight } from "./highlight.js";

/**
 * Renders `src` into a fresh fragment.
 * @param {string} src
 * @returns {DocumentFragment}
 */
export function renderMarkdown(src) {
  const frag = document.createDocumentFragment();
  const lines = src.split("\n");
  let i = 0;
  /** @type {string[]} */
  let para = [];
  const flush = () => {
    if (para.length) frag.appendChild(inlineInto(h("p"), para.join("\n")));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s*(```+|~~~+)\s*([\w+-]*)/.exec(line);
    if (fence) {
      flush();
      const close = fence[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(close)) body.push(lines[i++]);
      i++;
      frag.appendChild(codeBlock(body.join("\n"), fence[2]));
      continue;
    }
    if (tableStarts(lines, i)) {
      flush();
      i = table(lines, i, frag);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const level = Math.min(heading[1].length + 2, 6);
      const tag = /** @type {"h3"|"h4"|"h5"|"h6"} */ ("h" + level);
      frag.appendChild(inlineInto(h(tag), heading[2]));
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      frag.appendChild(h("hr"));
      i++;
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const body = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ""));
      const q = h("blockquote");
      q.appendChild(renderMarkdown(body.join("\n")));
      frag.appendChild(q);
      continue;
    }
    const item = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      flush();
      const ordered = /\d/.test(item[2]);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length) {
        const m = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i]);
        if (m) {
          list.appendChild(inlineInto(h("li"), m[3]));
          i++;
        } else if (/^\s{2,}\S/.test(lines[i]) && list.lastChild) {
          inlineInto(/** @type {HTMLElement} */ (list.lastChild), " " + lines[i].trim());
          i++;
        } else break;
      }
      frag.appendChild(list);
      continue;
    }
    if (line.trim() === "") {
      flush();
      i++;
      continue;
    }
    para.push(line);
    i++;
  }
  flush();
  return frag;
}

/**
 * The cells of a table row (`| a | b |`, outer pipes optional, `\\|` escapes a pipe), or
 * null when the line has no pipe.
 * @param {string} line
 * @returns {string[] | null}
 */
function cells(line) {
  let t = line.trim();
  if (!t.includes("|")) return null;
  if (t.startsWith("|")) t = t.slice(1);
  if (t.endsWith("|") && !t.endsWith("\\|")) t = t.slice(0, -1);
  return t.split(/(?<!\\)\|/).map((c) => c.replace(/\\\|/g, "|").trim());
}

/** @param {string} line */
function isDelimiter(line) {
  const cs = cells(line);
  return !!cs && cs.length > 0 && cs.every((c) => /^:?-+:?$/.test(c));
}

/** A row followed by a delimiter row of as many cells. @param {string[]} lines @param {number} i */
function tableStarts(lines, i) {
  const head = cells(lines[i]);
  if (!head || i + 1 >= lines.length || !isDelimiter(lines[i + 1])) return false;
  return cells(lines[i + 1])?.length === head.length;
}

/**
 * Appends the table starting at `lines[i]` to `frag`; returns the index after it.
 * @param {string[]} lines @param {number} i @param {DocumentFragment} frag
 */
function table(lines, i, frag) {
  const head = cells(lines[i]) ?? [];
  const align = (cells(lines[i + 1]) ?? []).map((c) => (c.endsWith(":") ? (c.startsWith(":") ? "center" : "right") : ""));
  const cell = (/** @type {"th" | "td"} */ tag, /** @type {string} */ text, /** @type {number} */ k) =>
    inlineInto(h(tag, align[k] ? { class: "align-" + align[k] } : {}), text);
  const body = h("tbody");
  let j = i + 2;
  for (let row = cells(lines[j] ?? ""); j < lines.length && row; row = cells(lines[++j] ?? "")) {
    body.appendChild(h("tr", {}, head.map((_, k) => cell("td", row?.[k] ?? "", k))));
  }
  frag.appendChild(h("table", { class: "md-table" }, h("thead", {}, h("tr", {}, head.map((c, k) => cell("th", c, k)))), body));
  return j;
}

/**
 * A highlighted code block.
 * @param {string} code
 * @param {string} lang
 */
export function codeBlock(code, lang) {
  const c = h("code", { class: lang ? "lang-" + lang.replace(/[^\w-]/g, "") : "" });
  highlight(c, code, lang);
  return h("pre", { class: "code" }, c);
}

const INLINE =
  /(`+)([\s\S]*?[^`])\1(?!`)|!\[([^\]]*)\]\(([^)\s]*)\)|\[([^\]]+)\]\(([^)\s]*)\)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_|~~([^~]+)~~|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;

/**
 * Whether a link target is safe to follow: only absolute http(s) and mailto URLs.
 * @param {string} href
 */
export function safeHref(href) {
  try {
    const u = new URL(href);
    return u.protocol === "http:" || u.protocol === "https:" || u.protocol === "mailto:";
  } catch (_e) {
    return false;
  }
}

/**
 * Appends inline markdown to `el` and returns it.
 * @template {HTMLElement} E
 * @param {E} el
 * @param {string} text
 * @returns {E}
 */
export function inlineInto(el, text) {
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    const i = m.index ?? 0;
    if (i > last) el.appendChild(document.createTextNode(text.slice(last, i)));
    last = i + m[0].length;
    if (m[1] !== undefined) el.appendChild(h("code", {}, m[2]));
    else if (m[3] !== undefined) el.appendChild(h("span", { class: "img-alt" }, "[image: " + (m[3] || m[4]) + "]"));
    else if (m[5] !== undefined) {
      const href = m[6];
      if (safeHref(href)) el.appendChild(inlineInto(h("a", { href, rel: "noopener noreferrer", target: "_blank" }), m[5]));
      else el.appendChild(document.createTextNode(m[0]));
    } else if (m[7] !== undefined || m[8] !== undefined) el.appendChild(inlineInto(h("strong"), m[7] ?? m[8]));
    else if (m[9] !== undefined || m[10] !== undefined) el.appendChild(inlineInto(h("em"), m[9] ?? m[10]));
    else if (m[11] !== undefined) el.appendChild(inlineInto(h("s"), m[11]));
    else if (m[12] !== undefined) el.appendChild(h("a", { href: m[12], rel: "noopener noreferrer", target: "_blank" }, m[12]));
  }
  if (last < text.length) el.appendChild(document.createTextNode(text.slice(last)));
  return el;
}
