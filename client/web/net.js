// The websocket connection: JSON subprotocol, requests awaited by id, room events, resume.
//
// A request's promise resolves with the server's reply frame (welcome, ok, room, ack,
// pong, account) and rejects with the error frame itself ({code, message, reason, rev}).
// Frames without a request id (room events, the snapshot after a resume, the `boards` of
// a delayed room) go to `onEvent`.
//
// The hello says {name?, token?}, or logs in to an account with {account, password}: the
// password is sent once, then forgotten; a reconnection goes with the welcome's token,
// which `setToken` replaces when the server hands out a fresh one (a claim, a changed
// password, revoked tokens).
//
// When the socket drops for a reason worth retrying (or cannot be opened), the
// connection opens again after a growing pause, says hello with the token, and sends
// the requests still waiting for a reply again, with their ids: the server answers a
// repeated move at most once (an ack with `duplicate: true`, or an error), and a reply
// to a request sent again carries `resent: true`. It keeps trying for `giveUpMs`, longer
// than the server's resume grace period (60 s by default), then waits for `retry()`.
// After each reconnection `onEvent` gets {type: "resumed", welcome, restarted}, before
// the room snapshot that follows a member's welcome: `restarted` is true when the same
// node answered under a new boot, that is the server restarted in between.

export const SUBPROTOCOL = "solrace.v1.json";
const RESUMABLE = new Set([1001, 1006, 1011, 1012, 1013, 1014]);
// A hello refused for these is tried again like a drop; any other refusal is final.
const TRANSIENT = new Set(["rate_limited", "unavailable", "internal_error"]);
export const GIVE_UP_MS = 90_000;
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 4000;
// A connection that has heard nothing for IDLE_MS sends a ping; no answer within
// PING_TIMEOUT_MS and it is taken for dropped (a vanished host closes nothing).
const IDLE_MS = 20_000;
const PING_TIMEOUT_MS = 10_000;
const HEARTBEAT_MS = 5000;

// JSON numbers above 2^53 lose digits in JSON.parse; the race's seed is 64 bits, so its
// digits are read from the frame's text before parsing.
const SEED_RE = /(?<!\\)"seed":(\d+)/;

export function parseFrame(text) {
  const data = JSON.parse(text);
  const match = SEED_RE.exec(text);
  if (match) {
    if (data.seed !== undefined) data.seed = match[1];
    else if (data.room && typeof data.room === "object" && data.room.seed !== undefined) {
      data.room.seed = match[1];
    }
  }
  return data;
}

export function wsUrl(loc = window.location) {
  const scheme = loc.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${loc.host}/`;
}

// The pause before reconnection attempt `attempt` (0 first): doubling up to a cap, with
// jitter so that the clients of a restarted node do not all come back at once.
export function retryDelay(attempt, random = Math.random) {
  const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** attempt);
  return Math.round(base * (0.8 + 0.4 * random()));
}

// True when `after` (a welcome's `server`) is the node of `before` under a new boot.
export function serverRestarted(before, after) {
  return Boolean(before && after && before.node === after.node && before.boot !== after.boot);
}

export class Connection {
  constructor(url, { onEvent, onStatus, onClosed, giveUpMs = GIVE_UP_MS } = {}) {
    this.url = url;
    this.onEvent = onEvent || (() => {});
    this.onStatus = onStatus || (() => {});
    this.onClosed = onClosed || (() => {});
    this.giveUpMs = giveUpMs;
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map(); // id -> {frame, resolve, reject, sent, resent}
    this.hello = null;
    this.helloId = null;
    this.welcome = null; // the last welcome
    this.opening = null; // open()'s {resolve, reject} until the first welcome
    this.closing = false;
    this.ready = false;
    this.status = "idle";
    this.attempt = 0;
    this.downSince = null;
    this.timer = null;
    this.heartbeat = null;
    this.lastHeard = 0;
    this.pingSentAt = null;
  }

  // Open the socket and say hello with {name?, token?} or {account, password}. Resolves
  // with the first welcome
  // (retrying while the server cannot be reached); rejects with the error frame when the
  // hello is refused, or when the connection closes for good first.
  open(hello) {
    this.hello = { ...hello };
    this.closing = false;
    return new Promise((resolve, reject) => {
      this.opening = { resolve, reject };
      this._connect();
    });
  }

  // Try again at once: after giving up, or while waiting out a pause between attempts.
  retry() {
    if (this.closing || this.ready || !this.hello) return;
    if (this.ws && this.ws.readyState === WebSocket.CONNECTING) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.attempt = 0;
    this.downSince = null;
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.close(1000);
    }
    this._connect();
  }

  _status(status, detail = {}) {
    this.status = status;
    this.onStatus(status, detail);
  }

  _connect() {
    this.timer = null;
    const ws = new WebSocket(this.url, [SUBPROTOCOL]);
    this.ws = ws;
    if (this.status !== "reconnecting" && this.status !== "connecting") {
      this._status(this.welcome ? "reconnecting" : "connecting", { attempt: this.attempt });
    }
    ws.onopen = () => {
      if (this.ws !== ws) return;
      const id = this.nextId++;
      this.helloId = id;
      const hello = { type: "hello", id };
      if (this.hello.token) {
        hello.token = this.hello.token;
        if (this.hello.name) hello.name = this.hello.name;
      } else if (this.hello.account) {
        hello.account = this.hello.account;
        hello.password = this.hello.password;
      } else if (this.hello.name) {
        hello.name = this.hello.name;
      }
      ws.send(JSON.stringify(hello));
    };
    ws.onmessage = (message) => {
      if (this.ws !== ws || typeof message.data !== "string") return;
      this.lastHeard = Date.now();
      this.pingSentAt = null;
      let data;
      try {
        data = parseFrame(message.data);
      } catch {
        return;
      }
      this._frame(ws, data);
    };
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      this._lost(event.code, event.reason);
    };
  }

  _frame(ws, data) {
    const id = data.id;
    if (id !== undefined && id !== null && id === this.helloId) {
      this.helloId = null;
      if (data.type === "error") this._refused(ws, data);
      else this._welcomed(ws, data);
      return;
    }
    if (id !== undefined && id !== null && this.pending.has(id)) {
      const entry = this.pending.get(id);
      this.pending.delete(id);
      if (entry.resent) data.resent = true;
      if (data.type === "error") entry.reject(data);
      else entry.resolve(data);
      // A reply that carries state (a snapshot) is also state for the page.
      if (data.type === "room") this.onEvent(data);
      return;
    }
    if (data.type === "pong") return; // the heartbeat's
    this.onEvent(data);
  }

  _welcomed(ws, welcome) {
    const before = this.welcome;
    this.welcome = welcome;
    this.hello.token = welcome.token;
    delete this.hello.account; // the token stands for the login from now on
    delete this.hello.password;
    this.ready = true;
    this.attempt = 0;
    this.downSince = null;
    this._startHeartbeat(ws);
    // Requests that waited through a drop go out again, with their ids.
    for (const entry of this.pending.values()) {
      if (entry.sent) entry.resent = true;
      entry.sent = true;
      ws.send(entry.frame);
    }
    if (this.opening) {
      const { resolve } = this.opening;
      this.opening = null;
      this._status("connected");
      resolve(welcome);
      return;
    }
    // The page hears of the resume before the status, so that it can hold the board
    // until the room's snapshot is here.
    const restarted = serverRestarted(before?.server, welcome.server);
    this.onEvent({ type: "resumed", welcome, restarted });
    this._status("connected");
  }

  // The server refused the hello: for a bad token, say, trying again would not help.
  _refused(ws, error) {
    if (TRANSIENT.has(error.code)) {
      ws.close(1000);
      this._lost(1013, error.message);
      return;
    }
    this._drop(ws);
    this.closing = true;
    ws.close(1000);
    if (this.opening) {
      const { reject } = this.opening;
      this.opening = null;
      reject(error);
      return;
    }
    this._failAll(error);
    this._status("closed", { error });
    this.onClosed({ code: 1000, reason: error.message, error });
  }

  _drop(ws) {
    if (this.ws === ws) this.ws = null;
    this.helloId = null;
    this.ready = false;
    this.pingSentAt = null;
    clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  _lost(code, reason) {
    this._drop(this.ws);
    if (this.closing) return;
    if (!RESUMABLE.has(code)) {
      const error = { code: "closed", message: reason || "the connection closed" };
      this._failAll(error);
      this._status("closed", { code, reason });
      if (this.opening) {
        const { reject } = this.opening;
        this.opening = null;
        reject(error);
      }
      this.onClosed({ code, reason });
      return;
    }
    const now = Date.now();
    if (this.downSince === null) this.downSince = now;
    const down = now - this.downSince;
    if (down >= this.giveUpMs) {
      // Requests still waiting are kept: a later retry() sends them again.
      this._status("offline", { downMs: down });
      return;
    }
    const delay = retryDelay(this.attempt);
    this.attempt += 1;
    this._status(this.welcome ? "reconnecting" : "connecting", { attempt: this.attempt, delayMs: delay });
    this.timer = setTimeout(() => {
      if (!this.closing) this._connect();
    }, delay);
  }

  _startHeartbeat(ws) {
    clearInterval(this.heartbeat);
    this.lastHeard = Date.now();
    this.pingSentAt = null;
    this.heartbeat = setInterval(() => {
      if (this.ws !== ws || !this.ready) return;
      const now = Date.now();
      if (this.pingSentAt !== null) {
        if (now - this.pingSentAt >= PING_TIMEOUT_MS) {
          // No answer: the link is gone even if the socket has not said so.
          ws.close(4000, "no answer to ping");
          this._lost(1006, "no answer to ping");
        }
        return;
      }
      if (now - this.lastHeard >= IDLE_MS) {
        this.pingSentAt = now;
        ws.send(JSON.stringify({ type: "ping", id: this.nextId++ }));
      }
    }, HEARTBEAT_MS);
  }

  _failAll(error) {
    for (const entry of this.pending.values()) entry.reject(error);
    this.pending.clear();
  }

  // The token to come back with from now on (the one before stopped working).
  setToken(token) {
    if (this.hello) this.hello.token = token;
    if (this.welcome) this.welcome.token = token;
  }

  // Send a request {type, ...fields}; resolves with the reply, rejects with the error frame.
  // A request made while the connection is down waits and goes out once it is back.
  request(type, fields = {}) {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const frame = JSON.stringify({ type, id, ...fields });
      const entry = { frame, resolve, reject, sent: false, resent: false };
      this.pending.set(id, entry);
      if (this.ready && this.ws && this.ws.readyState === WebSocket.OPEN) {
        this.ws.send(frame);
        entry.sent = true;
      }
    });
  }

  close() {
    this.closing = true;
    clearTimeout(this.timer);
    this.timer = null;
    const ws = this.ws;
    this._drop(ws);
    if (ws) ws.close(1000);
    this._failAll({ code: "closed", message: "the connection closed" });
    if (this.opening) {
      const { reject } = this.opening;
      this.opening = null;
      reject({ code: "closed", message: "the connection closed" });
    }
  }
}
