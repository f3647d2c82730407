// The websocket connection: JSON subprotocol, requests awaited by id, room events, resume.
//
// A request's promise resolves with the server's reply frame (welcome, ok, room, ack,
// pong) and rejects with the error frame itself ({code, message, reason, rev}). Frames
// without a request id (room events, the snapshot after a resume) go to `onEvent`.
// When the socket drops for a reason worth retrying, the connection opens again, says
// hello with the token, and sends the requests still waiting for a reply again (the
// server answers a repeated move idempotently).

export const SUBPROTOCOL = "solrace.v1.json";
const RESUMABLE = new Set([1001, 1006, 1011, 1012, 1013, 1014]);

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

export class Connection {
  constructor(url, { onEvent, onStatus, onClosed } = {}) {
    this.url = url;
    this.onEvent = onEvent || (() => {});
    this.onStatus = onStatus || (() => {});
    this.onClosed = onClosed || (() => {});
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map();
    this.hello = null;
    this.welcome = null;
    this.closing = false;
    this.ready = false;
    this.retryDelay = 250;
  }

  // Open the socket and say hello with {name?, token?}; resolves with the welcome.
  open(hello) {
    this.hello = { ...hello };
    this.closing = false;
    return this._open();
  }

  _open() {
    return new Promise((resolve, reject) => {
      let settled = false;
      const ws = new WebSocket(this.url, [SUBPROTOCOL]);
      this.ws = ws;
      this.onStatus("connecting");
      ws.onopen = () => {
        const id = this.nextId++;
        const hello = { type: "hello", id };
        if (this.hello.token) hello.token = this.hello.token;
        if (this.hello.name) hello.name = this.hello.name;
        this.pending.set(id, {
          frame: null,
          resolve: (welcome) => {
            settled = true;
            this.welcome = welcome;
            this.hello.token = welcome.token;
            this.ready = true;
            this.retryDelay = 250;
            this.onStatus("connected");
            // Requests that waited through a drop go out again, with their ids.
            for (const entry of this.pending.values()) {
              if (entry.frame) ws.send(entry.frame);
            }
            resolve(welcome);
          },
          reject: (error) => {
            settled = true;
            this.closing = true;
            ws.close(1000);
            reject(error);
          },
        });
        ws.send(JSON.stringify(hello));
      };
      ws.onmessage = (message) => {
        if (typeof message.data !== "string") return;
        let data;
        try {
          data = parseFrame(message.data);
        } catch {
          return;
        }
        this._frame(data);
      };
      ws.onclose = (event) => {
        if (this.ws !== ws) return;
        this.ready = false;
        if (!settled) {
          settled = true;
          if (this.closing || !RESUMABLE.has(event.code)) {
            this._failAll({ code: "closed", message: "the connection closed" });
            reject({ code: "closed", message: "could not reach the server" });
            this.onClosed(event.code, event.reason);
            return;
          }
        }
        if (this.closing) return;
        if (!RESUMABLE.has(event.code)) {
          this._failAll({ code: "closed", message: event.reason || "the connection closed" });
          this.onStatus("closed");
          this.onClosed(event.code, event.reason);
          return;
        }
        this.onStatus("reconnecting");
        const delay = this.retryDelay;
        this.retryDelay = Math.min(this.retryDelay * 2, 4000);
        setTimeout(() => {
          if (this.closing) return;
          this._open().then(
            (welcome) => this.onEvent({ type: "resumed", welcome }),
            () => {},
          );
        }, delay);
      };
    });
  }

  _frame(data) {
    const id = data.id;
    if (id !== undefined && id !== null && this.pending.has(id)) {
      const entry = this.pending.get(id);
      this.pending.delete(id);
      if (data.type === "error") entry.reject(data);
      else entry.resolve(data);
      // A reply that carries state (a snapshot, an ack) is also state for the page.
      if (data.type === "room") this.onEvent(data);
      return;
    }
    this.onEvent(data);
  }

  _failAll(error) {
    for (const entry of this.pending.values()) entry.reject(error);
    this.pending.clear();
  }

  // Send a request {type, ...fields}; resolves with the reply, rejects with the error frame.
  request(type, fields = {}) {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const frame = JSON.stringify({ type, id, ...fields });
      this.pending.set(id, { frame, resolve, reject });
      if (this.ready && this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(frame);
    });
  }

  close() {
    this.closing = true;
    this.ready = false;
    if (this.ws) this.ws.close(1000);
    this._failAll({ code: "closed", message: "the connection closed" });
  }
}
