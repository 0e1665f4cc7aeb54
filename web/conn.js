// The one WebSocket to the daemon (docs/protocol.md §2.2, §4.1): a fresh single-use ticket from
// POST /bootstrap (the cookie plus the session key kept in localStorage) before every attempt, exponential backoff 1 s … 30 s, request/response
// correlation by `id`. What to do after a (re)connect is the caller's (`onHello`).

/** @typedef {import("./protocol").Response} ProtoResponse */
/** @typedef {"connected" | "reconnecting" | "offline"} ConnState */

const MIN_DELAY_MS = 1000;
/** Where enrollment (/enroll.js) left the session key: this Origin's own storage. */
const SESSION_KEY = "shard.session_key";
const MAX_DELAY_MS = 30000;

/** A command refused by the server (`response.success === false`). */
export class CommandError extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export class Connection {
  /**
   * @param {{
   *   onState: (s: ConnState, detail: string) => void,
   *   onHello: (hello: any) => void,
   *   onEvent: (ev: any) => void,
   * }} handlers
   */
  constructor(handlers) {
    this.h = handlers;
    /** @type {WebSocket | null} */
    this.ws = null;
    this.delay = MIN_DELAY_MS;
    this.nextId = 1;
    /** @type {Map<string, {resolve: (v: any) => void, reject: (e: Error) => void}>} */
    this.pending = new Map();
    /** @type {ConnState} */
    this.state = "offline";
    /** Bumped on every new socket, so late answers of an old one are ignored. */
    this.generation = 0;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
  }

  /** @param {ConnState} s @param {string} [detail] */
  setState(s, detail = "") {
    this.state = s;
    this.h.onState(s, detail);
  }

  start() {
    void this.attempt();
  }

  async attempt() {
    this.timer = null;
    this.setState("reconnecting");
    let ticket;
    /** @type {string | null} */
    let key = null;
    try {
      key = localStorage.getItem(SESSION_KEY);
    } catch (_e) {
      key = null;
    }
    if (!key) {
      // The cookie alone mints nothing (docs/web.md), so it is not even sent.
      this.retryLater("this browser is not enrolled: run `shard web` and open its link");
      return;
    }
    try {
      const r = await fetch("/bootstrap", { method: "POST", credentials: "same-origin", headers: { "X-Shard-Session-Key": key } });
      if (r.status === 401) {
        this.retryLater("this browser is not enrolled: run `shard web` and open its link");
        return;
      }
      if (!r.ok) throw new Error("bootstrap " + r.status);
      ticket = (await r.json()).ticket;
    } catch (_e) {
      this.retryLater("the daemon cannot be reached");
      return;
    }
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
    let ws;
    try {
      ws = new WebSocket(url, ["shard.v1", "shard.ticket." + ticket]);
    } catch (_e) {
      this.retryLater("the daemon refused the connection");
      return;
    }
    const gen = ++this.generation;
    this.ws = ws;
    ws.addEventListener("message", (m) => {
      if (gen !== this.generation) return;
      let msg;
      try {
        msg = JSON.parse(String(m.data));
      } catch (_e) {
        return;
      }
      this.dispatch(msg);
    });
    ws.addEventListener("close", () => {
      if (gen !== this.generation) return;
      this.ws = null;
      this.failPending();
      this.retryLater("connection lost");
    });
  }

  /** @param {any} msg */
  dispatch(msg) {
    if (msg.type === "hello") {
      performance.mark("shard:hello");
      this.delay = MIN_DELAY_MS;
      this.setState("connected");
      this.h.onHello(msg);
    } else if (msg.type === "response" && typeof msg.id === "string" && this.pending.has(msg.id)) {
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (!p) return;
      if (msg.success) p.resolve(msg.data);
      else p.reject(new CommandError(msg.error?.code ?? "ERROR", msg.error?.message ?? "refused"));
    } else {
      this.h.onEvent(msg);
    }
  }

  failPending() {
    for (const p of this.pending.values()) p.reject(new CommandError("DISCONNECTED", "the link to the daemon was lost"));
    this.pending.clear();
  }

  /** @param {string} why */
  retryLater(why) {
    if (this.timer) return;
    const wait = this.delay;
    this.delay = Math.min(this.delay * 2, MAX_DELAY_MS);
    this.setState("offline", why + "; retrying in " + Math.round(wait / 1000) + " s");
    this.timer = setTimeout(() => void this.attempt(), wait);
  }

  /** Retries now (a user asked), resetting the backoff. */
  retryNow() {
    if (this.state !== "offline") return;
    if (this.timer) clearTimeout(this.timer);
    this.delay = MIN_DELAY_MS;
    void this.attempt();
  }

  /** Drops the socket (tests and the "reconnect" shortcut); the backoff reconnects. */
  drop() {
    this.ws?.close();
  }

  /**
   * Sends a command and resolves with its `response.data`.
   * @param {Record<string, unknown>} cmd
   * @returns {Promise<any>}
   */
  request(cmd) {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || this.state !== "connected") {
      return Promise.reject(new CommandError("DISCONNECTED", "no link to the daemon"));
    }
    const id = "w" + this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ ...cmd, id }));
    });
  }
}
