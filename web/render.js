// Tool calls and results drawn from their data: `RenderDescriptor` kinds
// (docs/protocol.md §11), tool result content, and images. Every string is a text node.

import { h, num } from "./dom.js";
import { codeBlock } from "./markdown.js";
import { highlight } from "./highlight.js";

/** @typedef {import("./protocol").RenderDescriptor} RenderDescriptor */
/** @typedef {import("./protocol").ToolResultContent} ToolResultContent */
/** @typedef {import("./protocol").TreeNode} TreeNode */

const LANG_BY_EXT = /** @type {Record<string, string>} */ ({ rs: "rust", py: "python", sh: "sh", toml: "toml", yml: "yaml", yaml: "yaml", rb: "ruby" });

/**
 * One descriptor as DOM; an unknown kind is shown as its JSON text.
 * @param {RenderDescriptor | {kind: string}} d
 * @returns {HTMLElement}
 */
export function renderDescriptor(d) {
  const r = /** @type {any} */ (d);
  switch (r.kind) {
    case "text":
      return h("pre", { class: "plain" }, String(r.text));
    case "code":
      return codeWithLines(String(r.text), r.path, r.lang);
    case "diff":
      return diff(String(r.path), Array.isArray(r.hunks) ? r.hunks : []);
    case "path_list":
      return h(
        "ul",
        { class: "paths" },
        (Array.isArray(r.paths) ? r.paths : []).map((/** @type {any} */ p) =>
          h("li", { class: "path-" + (p.kind === "dir" ? "dir" : "file") }, h("span", { class: "path" }, p.kind === "dir" ? String(p.path).replace(/\/+$/, "") : String(p.path)), p.hint ? h("span", { class: "hint" }, " " + String(p.hint)) : null),
        ),
      );
    case "command":
      return h(
        "div",
        { class: "command" },
        h("code", {}, "$ " + String(r.command)),
        exitLine(r.exitCode, r.durationMs),
      );
    case "kv":
      return h(
        "dl",
        { class: "kv" },
        (Array.isArray(r.pairs) ? r.pairs : []).map((/** @type {any} */ p) => [h("dt", {}, String(p.k)), h("dd", {}, String(p.v))]),
      );
    case "tree":
      return h("ul", { class: "tree" }, treeNode(r.root));
    case "progress": {
      const bar = h("progress", { max: r.total ?? 1, value: r.total ? r.current : undefined, "aria-label": String(r.label) });
      return h("div", { class: "progress" }, String(r.label) + " ", bar, r.total ? ` ${r.current}/${r.total}` : ` ${r.current}`);
    }
    case "status":
      return h("div", { class: "tone tone-" + String(r.tone) }, String(r.label));
    default:
      return h("pre", { class: "plain unknown-kind" }, JSON.stringify(d, null, 2));
  }
}

/**
 * `exit 0 · 12 ms`, coloured by success.
 * @param {number | undefined | null} code
 * @param {number | undefined | null} ms
 */
export function exitLine(code, ms) {
  if ((code === undefined || code === null) && (ms === undefined || ms === null)) return null;
  const parts = [];
  if (code !== undefined && code !== null) parts.push("exit " + code);
  if (ms !== undefined && ms !== null) parts.push(ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(1) + " s");
  return h("div", { class: "exit " + (code ? "exit-bad" : "exit-ok") }, parts.join(" · "));
}

/**
 * @param {string} text @param {string | undefined} path @param {string | undefined} lang
 */
function codeWithLines(text, path, lang) {
  const ext = path ? path.split(".").pop() ?? "" : "";
  const language = lang ?? LANG_BY_EXT[ext] ?? ext;
  const lines = text.split("\n");
  const gutter = h("div", { class: "gutter", "aria-hidden": "true" }, lines.map((_, i) => String(i + 1) + "\n").join(""));
  const code = h("code");
  highlight(code, text, language);
  return h("figure", { class: "code-file" }, path ? h("figcaption", {}, path) : null, h("div", { class: "numbered" }, gutter, h("pre", { class: "code" }, code)));
}

/** @param {string} path @param {any[]} hunks */
function diff(path, hunks) {
  return h(
    "figure",
    { class: "diff" },
    h("figcaption", {}, path),
    hunks.map((hk) =>
      h(
        "pre",
        { class: "hunk" },
        h("span", { class: "hunk-head" }, `@@ -${hk.old_start},${hk.old_lines} +${hk.new_start},${hk.new_lines} @@\n`),
        (Array.isArray(hk.lines) ? hk.lines : []).map((/** @type {string} */ l) => {
          const c = l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : "ctx";
          return h("span", { class: "line-" + c }, l + "\n");
        }),
      ),
    ),
  );
}

/** @param {TreeNode | undefined} n @returns {HTMLElement | null} */
function treeNode(n) {
  if (!n) return null;
  const kids = Array.isArray(n.children) ? n.children : [];
  return h("li", { class: "path-" + (n.kind === "dir" ? "dir" : "file") }, String(n.name), kids.length ? h("ul", {}, kids.map(treeNode)) : null);
}

/**
 * A tool result's content.
 * @param {ToolResultContent | any} c
 */
export function renderResultContent(c) {
  if (!c || typeof c !== "object") return h("pre", { class: "plain" }, String(c));
  switch (c.kind) {
    case "text":
      return h("pre", { class: "plain" }, String(c.text));
    case "json":
      return codeBlock(JSON.stringify(c.value, null, 2), "json");
    case "error":
      return h("pre", { class: "plain tone-error" }, String(c.message));
    case "image":
      return renderImage(String(c.data), String(c.mime_type));
    default:
      return h("pre", { class: "plain" }, JSON.stringify(c, null, 2));
  }
}

const RASTER = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"]);

/**
 * An image from base64 data. The CSP (`default-src 'self'`) forbids data: and blob: image
 * URLs, so raster images are decoded in script and painted on a canvas; anything else
 * (SVG included, which could carry script) is shown only as a labelled chip.
 * @param {string} data
 * @param {string} mime
 */
export function renderImage(data, mime) {
  const label = `image (${mime}, ${num(Math.floor((data.length * 3) / 4))} bytes)`;
  if (!RASTER.has(mime)) return h("span", { class: "chip" }, label);
  const canvas = h("canvas", { class: "image", role: "img", "aria-label": label });
  void (async () => {
    try {
      const bytes = Uint8Array.from(atob(data), (ch) => ch.charCodeAt(0));
      const bmp = await createImageBitmap(new Blob([bytes], { type: mime }));
      canvas.width = bmp.width;
      canvas.height = bmp.height;
      canvas.getContext("2d")?.drawImage(bmp, 0, 0);
    } catch (_e) {
      canvas.replaceWith(h("span", { class: "chip" }, label + " — cannot be decoded"));
    }
  })();
  return canvas;
}
