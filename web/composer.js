// The prompt box: Enter sends, Shift+Enter is a newline; while the agent works a send is
// a steer or a follow-up, a visible choice; Abort; images pasted or dropped ride along.

import { h, clear } from "./dom.js";

/** @typedef {{data: string, mime_type: string, name: string}} Attached */

let group = 0;

export class Composer {
  /**
   * @param {{
   *   send: (text: string, images: {data: string, mime_type: string}[], how: "steer" | "follow_up" | "") => Promise<boolean>,
   *   abort: () => void,
   *   busy: () => boolean,
   * }} actions
   */
  constructor(actions) {
    this.actions = actions;
    /** @type {Attached[]} */
    this.images = [];
    this.live = true;
    this.input = h("textarea", { class: "prompt", rows: 2, "aria-label": "Prompt", placeholder: "Message the agent (Enter sends, Shift+Enter for a new line)" });
    this.send = h("button", { type: "button", class: "send", onclick: () => void this.submit() }, "Send");
    this.abort = h("button", { type: "button", class: "abort", onclick: () => this.actions.abort() }, "Abort");
    const name = "how-" + ++group;
    this.steer = h("input", { type: "radio", name, value: "steer", checked: true });
    this.follow = h("input", { type: "radio", name, value: "follow_up" });
    this.how = h(
      "fieldset",
      { class: "how", hidden: true },
      h("legend", {}, "While the agent works, send as"),
      h("label", {}, this.steer, " steer (now, between tool calls)"),
      h("label", {}, this.follow, " follow-up (after it stops)"),
    );
    this.chips = h("div", { class: "attachments" });
    this.el = h("div", { class: "composer" }, this.how, this.chips, h("div", { class: "composer-row" }, this.input, h("div", { class: "composer-buttons" }, this.send, this.abort)));
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        void this.submit();
      }
    });
    this.input.addEventListener("paste", (e) => this.take(e.clipboardData?.files, e));
    this.el.addEventListener("dragover", (e) => e.preventDefault());
    this.el.addEventListener("drop", (e) => this.take(e.dataTransfer?.files, e));
    this.setBusy(false);
  }

  /** @param {boolean} busy */
  setBusy(busy) {
    this.how.hidden = !busy;
    this.abort.disabled = !busy || !this.live;
  }

  /** @param {boolean} live */
  setLive(live) {
    this.live = live;
    this.send.disabled = !live;
    this.setBusy(this.actions.busy());
  }

  /**
   * @param {FileList | undefined | null} files
   * @param {Event} e
   */
  take(files, e) {
    const imgs = [...(files ?? [])].filter((f) => f.type.startsWith("image/"));
    if (!imgs.length) return;
    e.preventDefault();
    for (const f of imgs) {
      const reader = new FileReader();
      reader.onload = () => {
        const url = String(reader.result);
        this.images.push({ data: url.slice(url.indexOf(",") + 1), mime_type: f.type, name: f.name || "pasted image" });
        this.paintChips();
      };
      reader.readAsDataURL(f);
    }
  }

  paintChips() {
    clear(this.chips);
    this.images.forEach((img, i) =>
      this.chips.appendChild(
        h("span", { class: "chip" }, img.name, h("button", { type: "button", class: "icon", "aria-label": "Remove image " + img.name, onclick: () => { this.images.splice(i, 1); this.paintChips(); } }, "×")),
      ),
    );
  }

  async submit() {
    const text = this.input.value;
    if (!text.trim() && !this.images.length) return;
    if (!this.live) return;
    const how = this.actions.busy() ? (this.follow.checked ? "follow_up" : "steer") : "";
    const images = this.images.map(({ data, mime_type }) => ({ data, mime_type }));
    this.send.disabled = true;
    const ok = await this.actions.send(text, images, how);
    this.send.disabled = !this.live;
    if (ok) {
      this.input.value = "";
      this.images = [];
      this.paintChips();
    }
  }

  focus() {
    this.input.focus();
  }
}
