// The replay page, /replay/CODE/RACE: a finished race read from /api/race, every player's
// board dealt from the seed and played move by move (replay_engine.js), side by side on
// one time slider; play, pause, x1 / x4 / x16, step move by move. A room that showed its
// boards to no spectator keeps its replay for its players: the page sends the token this
// browser's player keeps (the lobby's, read here, never written).

import { drawBoard } from "./board.js";
import { PAR_ID, RaceReplay, parseRecord, variantTitle } from "./replay_engine.js";
import { counted } from "./words.js";

const STORE_KEY = "solrace.identity"; // the lobby's (app.js): {name, token, account}
const ROOM_MARK_KEY = "solrace.room"; // the lobby's (app.js): {code, at}, the room it is in
// A mark no page has renewed for this long is stale: the server's seat grace (60 s) is
// over, and the room has let the player go (the lobby renews it every 20 s).
const ROOM_MARK_FRESH_MS = 120_000;
const RACE_FORMAT = "solrace-race/1";
const SPEEDS = [1, 4, 16];
const STATUS_TEXT = {
  playing: "playing",
  won: "won",
  stuck: "stuck",
  resigned: "resigned",
  out_of_time: "out of time",
};

const $ = (testid, root = document) => root.querySelector(`[data-testid="${testid}"]`);

function el(tag, className, attrs = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  return node;
}

// 83456 -> "1:23.4"; an hour or more -> "1:02:03.4".
export function clockText(ms) {
  const tenths = Math.floor(Math.max(0, ms) / 100);
  const seconds = Math.floor(tenths / 10);
  const s = String(seconds % 60).padStart(2, "0");
  const minutes = Math.floor(seconds / 60);
  const tail = `${s}.${tenths % 10}`;
  if (minutes < 60) return `${minutes}:${tail}`;
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, "0")}:${tail}`;
}

function storedToken() {
  try {
    const data = JSON.parse(localStorage.getItem(STORE_KEY) || "{}");
    return typeof data.token === "string" && data.token ? data.token : null;
  } catch {
    return null;
  }
}

// The room this browser's player is in (the lobby's mark, while fresh), or null.
function roomNow() {
  try {
    const mark = JSON.parse(localStorage.getItem(ROOM_MARK_KEY) || "null");
    if (mark && typeof mark.code === "string" && Date.now() - Number(mark.at) < ROOM_MARK_FRESH_MS) return mark.code;
  } catch {
    // (no mark to read: no room)
  }
  return null;
}

// "/replay/CODE/RACE" -> {room, race}, or null.
function linkFromPath(path) {
  // A ranked daily attempt, once its day's seed is out: /replay/daily/DATE/VARIANT/PLAYER.
  const daily = /^\/replay\/daily\/(\d{4}-\d{2}-\d{2})\/([a-z-]{1,32})\/([0-9a-f]{1,64})\/?$/.exec(path);
  if (daily) {
    const [, date, variant, player] = daily;
    return { api: `/api/race?daily=${date}&variant=${variant}&player=${player}` };
  }
  const match = /^\/replay\/([A-Za-z0-9]{1,16})\/([0-9]{1,10})\/?$/.exec(path);
  if (!match || Number(match[2]) < 1) return null;
  const room = match[1].toUpperCase();
  const race = Number(match[2]);
  return { room, race, api: `/api/race?room=${encodeURIComponent(room)}&race=${race}` };
}

// -- what the page says when there is nothing to play ------------------------------------------

const PROBLEMS = {
  forbidden: [
    "This replay is its players' alone",
    "This room showed no boards to its spectators, so the replay of its race is for the " +
      "players who raced it: log in as one of them in this browser (from the lobby), then " +
      "open this link again.",
  ],
  forbidden_daily: [
    "Not yet",
    "A day's attempts are replayed once its seed is out: after the day ends (UTC) and the " +
      "last attempt of it can no longer run. Come back then.",
  ],
  not_found: [
    "No such replay",
    "This race is not kept, or there is no such race: a finished race's replay is kept for " +
      "a while (30 days unless the server says otherwise), then forgotten.",
  ],
  bad_link: [
    "Not a replay link",
    "A replay's link reads /replay/CODE/RACE: the room's code and the race's number.",
  ],
  unreadable: ["This replay cannot be read", "The server sent a race this page does not read."],
  unavailable: ["The replay could not be loaded", "The server did not answer: try again in a moment."],
};

function showProblem(code, detail) {
  const [title, text] = PROBLEMS[code] || PROBLEMS.unavailable;
  $("replay-loading").hidden = true;
  $("replay").hidden = true;
  const box = $("replay-error");
  box.dataset.code = code;
  $("replay-error-title").textContent = title;
  $("replay-error-text").textContent = detail ? `${text} (${detail})` : text;
  $("replay-retry").hidden = code !== "unavailable";
  box.hidden = false;
  document.title = `${title} · Solitaire Race`;
}

async function load(link) {
  const headers = { Accept: "application/json" };
  const token = storedToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const url = link.api;
  let response;
  let text;
  try {
    response = await fetch(url, { headers, cache: "no-store", credentials: "omit" });
    text = await response.text();
  } catch {
    showProblem("unavailable");
    return;
  }
  if (response.status === 403) return showProblem(link.room ? "forbidden" : "forbidden_daily");
  if (response.status === 404) return showProblem("not_found");
  if (response.status === 400) return showProblem("bad_link");
  if (!response.ok) return showProblem("unavailable", `HTTP ${response.status}`);
  let record;
  let replay;
  try {
    record = parseRecord(text);
    if (record.format !== RACE_FORMAT) throw new Error(`not ${RACE_FORMAT}`);
    replay = new RaceReplay(record);
  } catch (problem) {
    showProblem("unreadable", problem.message);
    return;
  }
  new ReplayPage(replay).show();
}

// -- the page of one race ----------------------------------------------------------------------

// The ghost reference of a player's run (create_room's `ghost`), or null for the solver's
// line and for a ghost's own run (race the run it came from instead).
function ghostRef(record, playerId) {
  if (playerId === PAR_ID) return null;
  const result = (record.results || []).find((r) => r.player_id === playerId);
  if (!result || result.ghost) return null;
  const room = String(record.room);
  return room.startsWith("daily/") ? `${room}/${playerId}` : `${room}/${record.race}/${playerId}`;
}

class ReplayPage {
  constructor(replay) {
    this.replay = replay;
    this.t = 0;
    this.speed = 1;
    this.playing = false;
    this.lastFrame = null;
    this.frame = null;
    this.panels = new Map(); // player id -> {node, step, status, board parts}
    this.ghosts = []; // {race, busy}: each run's ghost link, and what is said instead
    this.slider = $("replay-slider");
    this.playButton = $("replay-play");
  }

  show() {
    const { replay } = this;
    const record = replay.record;
    $("replay-variant").textContent = variantTitle(replay.variant);
    $("replay-race").textContent = String(record.race);
    $("replay-room").textContent = String(record.room);
    $("replay-seed").textContent = replay.seed.toString();
    $("replay-duration").textContent = clockText(replay.duration);
    this.slider.max = String(replay.duration);
    document.title = `Replay: ${variantTitle(replay.variant)}, room ${record.room} · Solitaire Race`;
    const root = $("replay");
    root.dataset.variant = replay.variant;
    root.dataset.duration = String(replay.duration);
    root.dataset.moves = String(replay.moveTimes.length);

    const boards = $("replay-boards");
    boards.replaceChildren();
    boards.dataset.players = String(replay.players.length);
    for (const player of replay.players) boards.append(this.panel(player));
    this.showGhosts();
    window.addEventListener("storage", (event) => {
      if (event.key === ROOM_MARK_KEY || event.key === null) this.showGhosts();
    });
    this.results();
    this.wire();
    $("replay-loading").hidden = true;
    root.hidden = false;
    this.render();
  }

  panel(player) {
    const node = el("article", "replay-player", {
      "data-testid": "replay-player",
      "data-player-id": player.id,
    });
    const head = el("header", "rp-head");
    const name = el("span", "p-name", { "data-testid": "rp-name" });
    name.textContent = player.name;
    name.title = player.name; // (a phone may show only some of a long one)
    const stats = el("span", "p-stats");
    const banked = el("span", "rp-banked", { "data-testid": "rp-banked" });
    const moves = el("span", "rp-moves", { "data-testid": "rp-moves" });
    const status = el("span", "status", { "data-testid": "rp-status" });
    stats.append(banked, moves, status);
    head.append(name, stats);
    const bar = el("div", "bar", { "aria-hidden": "true" });
    const fill = el("span", "fill");
    bar.append(fill);
    const host = el("div", "board-host");
    node.append(head, bar, host);
    const ref = ghostRef(this.replay.record, player.id);
    if (ref) {
      // Race alone against this run, on its deal, its progress moving on its own times.
      const race = el("a", "button-link rp-ghost", {
        href: `/?ghost=${encodeURIComponent(ref)}`,
        "data-testid": "rp-ghost",
      });
      race.textContent = `Race ${player.name}'s run as a ghost`;
      // A player in a room cannot race a ghost (its link would lead back to the room).
      const busy = el("p", "hint rp-ghost-busy", { "data-testid": "rp-ghost-busy" });
      node.append(race, busy);
      this.ghosts.push({ race, busy });
    }
    if (player.error) {
      const note = el("p", "rp-error", { "data-testid": "rp-error" });
      note.textContent =
        `Move ${player.error.index + 1} (${player.error.move}) could not be replayed: ` +
        `${player.error.message}. The board stops before it.`;
      node.append(note);
    }
    this.panels.set(player.id, { node, banked, moves, status, fill, host, step: -1, shown: "" });
    return node;
  }

  // The ghost links, but for a player in a room: what to do first, instead.
  showGhosts() {
    const room = roomNow();
    for (const { race, busy } of this.ghosts) {
      race.hidden = Boolean(room);
      busy.hidden = !room;
      busy.textContent = room ? `You are in room ${room}: leave it to race this run as a ghost.` : "";
    }
    // (a mark left by a page closed in a room goes stale with no event to say so)
    clearTimeout(this.ghostTimer);
    if (room) this.ghostTimer = setTimeout(() => this.showGhosts(), 30_000);
  }

  results() {
    const { record } = this.replay;
    const rows = $("replay-result-rows");
    rows.replaceChildren();
    const results = Array.isArray(record.results) ? record.results : [];
    for (const result of results) {
      const row = el("tr", "", {
        "data-testid": "replay-result-row",
        "data-player-id": String(result.player_id),
        "data-status": String(result.status),
      });
      const cells = [
        String(result.rank),
        String(result.name),
        STATUS_TEXT[result.status] || String(result.status),
        `${result.banked}/52`,
        String(result.moves),
        clockText(Number(result.time_ms) || 0),
      ];
      for (const text of cells) {
        const cell = el("td");
        cell.textContent = text;
        row.append(cell);
      }
      rows.append(row);
    }
    const par = $("replay-par");
    if (Number.isInteger(record.par)) {
      par.textContent = `Par: ${counted(record.par, "move")}, the solver's winning line of this deal.`;
      par.dataset.par = String(record.par);
      par.hidden = false;
    }
  }

  wire() {
    this.playButton.addEventListener("click", () => this.toggle());
    $("replay-prev").addEventListener("click", () => this.step(-1));
    $("replay-next").addEventListener("click", () => this.step(1));
    $("replay-start").addEventListener("click", () => this.seek(0));
    $("replay-end").addEventListener("click", () => this.seek(this.replay.duration));
    for (const button of $("replay-speeds").querySelectorAll("[data-speed]")) {
      button.addEventListener("click", () => this.setSpeed(Number(button.dataset.speed)));
    }
    this.slider.addEventListener("input", () => {
      this.t = Number(this.slider.value);
      this.render();
    });
    document.addEventListener("keydown", (event) => this.key(event));
    // A space on a focused button would press it as well: the page's own space is enough.
    document.addEventListener("keyup", (event) => {
      if (event.key === " " && event.target instanceof HTMLButtonElement) event.preventDefault();
    });
  }

  key(event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const actions = {
      " ": () => this.toggle(),
      ArrowRight: () => this.step(1),
      ArrowLeft: () => this.step(-1),
      Home: () => this.seek(0),
      End: () => this.seek(this.replay.duration),
    };
    const action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    if (!event.repeat || event.key !== " ") action();
  }

  setSpeed(speed) {
    if (!SPEEDS.includes(speed)) return;
    this.speed = speed;
    for (const button of $("replay-speeds").querySelectorAll("[data-speed]")) {
      button.setAttribute("aria-pressed", String(Number(button.dataset.speed) === speed));
    }
    $("replay").dataset.speed = String(speed);
  }

  toggle() {
    if (this.playing) this.pause();
    else this.play();
  }

  play() {
    if (this.t >= this.replay.duration) this.t = 0;
    this.playing = true;
    this.lastFrame = null;
    this.frame = requestAnimationFrame((now) => this.tick(now));
    this.render();
  }

  pause() {
    this.playing = false;
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
    this.render();
  }

  tick(now) {
    this.frame = null;
    if (!this.playing) return;
    if (this.lastFrame !== null) {
      this.t = Math.min(this.replay.duration, this.t + (now - this.lastFrame) * this.speed);
    }
    this.lastFrame = now;
    if (this.t >= this.replay.duration) {
      this.pause();
      return;
    }
    this.render();
    this.frame = requestAnimationFrame((next) => this.tick(next));
  }

  // To the next (or previous) moment a move was made, by anyone.
  step(direction) {
    if (this.playing) this.pause();
    this.seek(direction > 0 ? this.replay.nextTime(this.t) : this.replay.previousTime(this.t));
  }

  seek(t) {
    if (this.playing) this.pause();
    this.t = Math.max(0, Math.min(this.replay.duration, t));
    this.render();
  }

  render() {
    const { replay } = this;
    const t = this.t;
    const root = $("replay");
    const atEnd = t >= replay.duration;
    root.dataset.playing = String(this.playing);
    root.dataset.atEnd = String(atEnd);
    this.playButton.textContent = this.playing ? "Pause" : "Play";
    this.playButton.setAttribute("aria-pressed", String(this.playing));
    const time = $("replay-time");
    time.textContent = clockText(t);
    time.dataset.ms = String(Math.round(t));
    this.slider.value = String(Math.round(t));
    this.slider.setAttribute("aria-valuetext", `${clockText(t)} of ${clockText(replay.duration)}`);
    $("replay-prev").disabled = t <= 0;
    $("replay-next").disabled = atEnd;
    for (const { player, step, view, status } of replay.at(t)) {
      const panel = this.panels.get(player.id);
      const node = panel.node;
      node.dataset.step = String(step);
      node.dataset.banked = String(view.banked);
      node.dataset.moves = String(view.moves);
      node.dataset.status = status;
      panel.banked.textContent = `${view.banked}/52`;
      panel.moves.textContent = counted(view.moves, "move");
      panel.status.textContent = STATUS_TEXT[status] || status;
      panel.status.className = `status s-${status}`;
      panel.fill.style.width = `${(view.banked / 52) * 100}%`;
      if (panel.step !== step) {
        panel.step = step;
        panel.host.replaceChildren(drawBoard(view));
      }
    }
  }
}

// -- start -------------------------------------------------------------------------------------

function start() {
  $("replay-retry").addEventListener("click", () => window.location.reload());
  const link = linkFromPath(window.location.pathname);
  if (!link) {
    showProblem("bad_link");
    return;
  }
  load(link);
}

start();
