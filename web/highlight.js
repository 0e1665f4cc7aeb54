// A small lexical highlighter: strings, comments, numbers and keywords of the common
// languages (a block of any other language, or none, stays plain text), as <span>
// elements holding text nodes. Good enough to read code at a glance; no grammar, so
// nothing to maintain per language beyond a keyword list.

import { h } from "./dom.js";

const KEYWORDS = new Set(
  (
    "as async await break case catch class const continue def default del do elif else enum " +
    "export extends false final finally fn for from func function go if impl import in " +
    "interface let loop match mod move mut new nil none null package pass pub raise return " +
    "self static struct super switch this throw trait true try type typeof use var void " +
    "where while with yield lambda not and or is echo then fi done esac local"
  ).split(" "),
);

const TOKEN =
  /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`(?:[^`\\]|\\.)*`?)|(\b\d[\d_.xXa-fA-F]*\b)|([A-Za-z_][\w]*)/g;

/** Languages the keyword list fits; any other (or none) is shown as plain text, so
 * English in an unlabelled block is not coloured as code. */
const KNOWN = new Set(
  ("js javascript mjs cjs ts typescript jsx tsx rust rs python py go golang sh bash shell zsh c h cpp cc cxx hpp c++ " +
    "java kotlin kt swift ruby rb toml yaml yml json php cs csharp scala lua perl pl r make makefile dockerfile sql").split(" "),
);

/** Languages whose `#` starts a comment. */
const HASH_COMMENTS = new Set(["sh", "bash", "shell", "zsh", "python", "py", "ruby", "rb", "toml", "yaml", "yml", "perl", "r", "make", "dockerfile"]);

/**
 * Appends `code` to `into` as highlighted text nodes and spans.
 * @param {HTMLElement} into
 * @param {string} code
 * @param {string} [lang]
 */
export function highlight(into, code, lang = "") {
  const hash = HASH_COMMENTS.has(lang.toLowerCase());
  if (code.length > 200000 || !KNOWN.has(lang.toLowerCase())) {
    into.appendChild(document.createTextNode(code));
    return;
  }
  let last = 0;
  const frag = document.createDocumentFragment();
  for (const m of code.matchAll(TOKEN)) {
    const i = m.index ?? 0;
    let cls = "";
    if (m[1] !== undefined) {
      if (m[1].startsWith("#") && !hash) continue;
      // `//` is floor division in Python, a path in shell: a comment only elsewhere.
      if (m[1].startsWith("//") && hash) continue;
      cls = m[1].startsWith("/") || m[1].startsWith("#") ? "tok-comment" : "tok-string";
    } else if (m[2] !== undefined) {
      cls = "tok-number";
    } else if (m[3] !== undefined && KEYWORDS.has(m[3])) {
      cls = "tok-keyword";
    } else {
      continue;
    }
    if (i > last) frag.appendChild(document.createTextNode(code.slice(last, i)));
    frag.appendChild(h("span", { class: cls }, m[0]));
    last = i + m[0].length;
  }
  if (last < code.length) frag.appendChild(document.createTextNode(code.slice(last)));
  into.appendChild(frag);
}
