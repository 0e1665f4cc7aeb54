// DOM construction helpers. Everything a model, a tool or a file produced enters the page
// through `text` nodes or `textContent`, never through HTML parsing: that is the whole XSS
// defence, so nothing in web/ may assign innerHTML/outerHTML or call insertAdjacentHTML.

/**
 * @typedef {string | Node | null | undefined | false} Child
 * @typedef {Child | Child[] | Child[][]} Children
 * @typedef {{[k: string]: string | number | boolean | null | undefined | EventListener}} Attrs
 */

/**
 * Creates an element. Attributes named `on…` become listeners; `class` sets className;
 * `false`/`null`/`undefined` attributes are skipped; strings children become text nodes.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...Children} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2), /** @type {EventListener} */ (v));
    } else if (k === "class") {
      el.className = String(v);
    } else if (v === true) {
      el.setAttribute(k, "");
    } else {
      el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

/**
 * Appends children (text or nodes, nested arrays flattened).
 * @param {Node} el
 * @param {Children[]} children
 */
export function append(el, children) {
  for (const c of children) {
    if (Array.isArray(c)) append(el, /** @type {Children[]} */ (c));
    else if (c === null || c === undefined || c === false) continue;
    else el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
}

/**
 * Removes every child of `el`.
 * @param {Node} el
 */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/**
 * A compact human number: 1234 → "1.2k".
 * @param {number} n
 */
export function num(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e4) return Math.round(n / 1e3) + "k";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return String(n);
}

/**
 * A cost in dollars.
 * @param {number | undefined | null} c
 */
export function cost(c) {
  if (c === undefined || c === null) return "";
  return "$" + (c === 0 ? "0.00" : c.toFixed(c < 1 ? 4 : 2));
}
