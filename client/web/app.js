// The page: identity, lobby, room, race, spectating, results and the daily challenge
// over one websocket.

import { BoardView, applyDelta, drawBoard } from "./board.js";
import { Connection, wsUrl } from "./net.js";
import { VARIANTS, variantTitle } from "./rules.js";

const STORE_KEY = "solrace.identity";
const DAILY_VARIANT_KEY = "solrace.daily.variant";
const HISTORY_ROWS = 10;
const BEST_ROWS = 10;
const $ = (testid, root = document) => root.querySelector(`[data-testid="${testid}"]`);

// -- state ---------------------------------------------------------------------------------

const state = {
  identity: loadIdentity(), // {name, token}
  conn: null,
  me: null, // the welcome: player_id, name, token, room
  room: null, // code, state, host, settings, members, race, you {player_id, role}
  seq: 0,
  view: null,
  rev: 0,
  players: [], // player_id, name, banked, moves, status, elapsed_ms
  boards: {}, // spectators: player_id -> view
  results: null,
  seed: null,
  lastResults: null,
  startAt: null, // performance.now() at the race's start
  timeLimit: null,
  countdownEnd: null,
  finishedAt: null,
  link: linkFromUrl(),
  syncing: false,
  online: false, // the connection is up (welcomed)
  awaitingSnapshot: false, // back after a drop, the room's snapshot not yet here
  resumeNote: null, // {restarted}: what to say once that snapshot is here
  page: pageFromUrl(), // "home" or "daily": what shows when the player is in no room
  daily: dailyFromUrl(),
};

function loadIdentity() {
  try {
    const data = JSON.parse(localStorage.getItem(STORE_KEY) || "{}");
    return { name: data.name || "", token: data.token || null };
  } catch {
    return { name: "", token: null };
  }
}

function saveIdentity() {
  localStorage.setItem(STORE_KEY, JSON.stringify(state.identity));
}

// "/r/CODE" (with "?as=spectator" to watch) names a room to join.
function linkFromUrl() {
  const match = /^\/r\/([A-Za-z0-9]+)\/?$/.exec(window.location.pathname);
  if (!match) return null;
  const params = new URLSearchParams(window.location.search);
  const spectator = params.get("as") === "spectator" || params.has("spectate");
  return { code: match[1].toUpperCase(), role: spectator ? "spectator" : "player" };
}

function pageFromUrl() {
  return /^\/daily\/?$/.test(window.location.pathname) ? "daily" : "home";
}

// "/daily?variant=canfield&date=2026-11-30&top=25": the game, a past day, the board's length.
function dailyFromUrl() {
  const params = new URLSearchParams(window.location.search);
  let variant = params.get("variant");
  if (!VARIANTS.some(([id]) => id === variant)) {
    variant = localStorage.getItem(DAILY_VARIANT_KEY);
    if (!VARIANTS.some(([id]) => id === variant)) variant = VARIANTS[0][0];
  }
  const date = /^\d{4}-\d{2}-\d{2}$/.test(params.get("date") || "") ? params.get("date") : null;
  const top = Math.min(100, Math.max(1, Number.parseInt(params.get("top"), 10) || 10));
  return {
    variant,
    date, // null: today's board
    top,
    today: null, // the server's UTC date, from today's board
    board: null,
    best: null,
    loads: 0, // answers to older loads are dropped
    outcome: null, // the last attempt: {date, variant, attempt, ranked, result, rank, count}
  };
}

function dailyUrl() {
  const daily = state.daily;
  const params = new URLSearchParams({ variant: daily.variant });
  if (daily.date) params.set("date", daily.date);
  if (daily.top !== 10) params.set("top", String(daily.top));
  return `/daily?${params}`;
}

function roomUrl(code, role = "player") {
  const suffix = role === "spectator" ? "?as=spectator" : "";
  return `${window.location.origin}/r/${code}${suffix}`;
}

function setUrl(path) {
  if (window.location.pathname + window.location.search !== path) {
    history.replaceState(null, "", path);
  }
}

const isPlayer = () => state.room?.you?.role === "player";
const isDailyRoom = () => Boolean(state.room?.settings?.daily);
const isSpectator = () => state.room?.you?.role === "spectator";
const inRace = () => isPlayer() && state.players.some((p) => p.player_id === state.me?.player_id);

// -- messages to the person ----------------------------------------------------------------

let toastTimer = null;
function showError(error) {
  const toast = $("error");
  $("error-message").textContent = error.message || String(error);
  const reason = error.reason || (error.code && error.code !== "illegal_move" ? error.code : "");
  $("error-reason").textContent = reason || "";
  $("error-reason").hidden = !reason;
  toast.dataset.code = error.code || "";
  toast.dataset.reason = error.reason || "";
  toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    toast.hidden = true;
  }, 5000);
}

let noticeTimer = null;
function showNotice(text) {
  const notice = $("notice");
  notice.textContent = text;
  notice.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => {
    notice.hidden = true;
  }, 2500);
}

// -- connection ----------------------------------------------------------------------------

// The banner under the top bar says what the connection is doing: lost and coming back,
// given up (with a button to try again), closed, or back (a note that goes away).
const BANNER_HIDE_MS = { restarted: 8000, reconnected: 3000 };
let bannerTimer = null;

function showBanner(kind, text, button = null) {
  const banner = $("conn-banner");
  clearTimeout(bannerTimer);
  banner.dataset.state = kind;
  const line = $("conn-banner-text");
  // The same words again would be announced again: leave them be.
  if (line.textContent !== text) line.textContent = text;
  const retry = $("conn-retry");
  retry.hidden = !button;
  if (button) retry.textContent = button;
  if (BANNER_HIDE_MS[kind]) bannerTimer = setTimeout(hideBanner, BANNER_HIDE_MS[kind]);
}

function hideBanner() {
  clearTimeout(bannerTimer);
  $("conn-banner").dataset.state = "idle";
  $("conn-banner-text").textContent = "";
  $("conn-retry").hidden = true;
}

// Moves and buttons work only while this holds.
const isLive = () => state.online && !state.awaitingSnapshot;

function setConnStatus(status, detail = {}) {
  const node = $("connection");
  node.dataset.state = status;
  node.textContent =
    {
      connecting: "connecting…",
      connected: "online",
      reconnecting: "reconnecting…",
      offline: "offline",
      closed: "offline",
    }[status] || status;
  state.online = status === "connected";
  document.body.dataset.online = String(state.online);
  const known = Boolean(state.conn?.welcome); // this page had the server once
  const banner = $("conn-banner").dataset.state;
  if (status === "reconnecting" || (status === "connecting" && (detail.attempt || banner !== "idle"))) {
    showBanner("reconnecting", known ? "Connection lost — reconnecting…" : "Cannot reach the server — retrying…");
  } else if (status === "offline") {
    showBanner(
      "offline",
      known ? "Connection lost — the server could not be reached." : "Cannot reach the server.",
      "Try again",
    );
  } else if (status === "connected" && ["reconnecting", "offline", "closed"].includes(banner)) {
    hideBanner(); // what comes back (the welcome, the snapshot) says the rest
  }
  if (document.body.dataset.screen === "race") renderRace();
}

function onConnectionClosed({ code, reason, error }) {
  if (error?.code === "bad_token") {
    // The server no longer knows this player (its data was reset, say).
    hideBanner();
    state.identity.token = null;
    saveIdentity();
    state.me = null;
    state.room = null;
    clearRace();
    showError({ message: "The server no longer knows this player: pick a name to play again." });
    showScreen("name-screen");
    return;
  }
  if (code === 4001) showBanner("closed", "This player connected again elsewhere (another tab?).", "Play here");
  else showBanner("closed", `Disconnected from the server${reason ? `: ${reason}` : ""}.`, "Reconnect");
}

async function connect(hello) {
  if (state.conn) state.conn.close();
  const conn = new Connection(wsUrl(), {
    onEvent: (data) => {
      if (conn === state.conn) onFrame(data);
    },
    onStatus: (status, detail) => {
      if (conn === state.conn) setConnStatus(status, detail);
    },
    onClosed: (closed) => {
      if (conn === state.conn) onConnectionClosed(closed);
    },
  });
  state.conn = conn;
  try {
    const welcome = await conn.open(hello);
    if (conn !== state.conn) return;
    onWelcome(welcome);
  } catch (error) {
    if (conn !== state.conn) return;
    if (error.code === "bad_token") {
      state.identity.token = null;
      saveIdentity();
      showScreen("name-screen");
      return;
    }
    if (error.code === "bad_name") {
      showError(error);
      showScreen("name-screen");
      return;
    }
    if (error.code !== "closed") showError(error); // a closed connection has the banner
  }
}

// Back after a drop: the welcome names the room the player is still in, whose snapshot
// follows; a spectator, who leaves on a drop, joins again.
function onResumed({ welcome, restarted }) {
  const node = $("connection");
  node.dataset.resumes = String(Number(node.dataset.resumes || 0) + 1);
  if (restarted) node.dataset.restarts = String(Number(node.dataset.restarts || 0) + 1);
  state.me = welcome;
  state.identity = { name: welcome.name, token: welcome.token };
  saveIdentity();
  const room = state.room;
  if (welcome.room) {
    awaitSnapshot(restarted);
    return;
  }
  if (room && room.you.role === "spectator") {
    awaitSnapshot(restarted);
    request("join_room", { code: room.code, role: "spectator" }).catch((error) => {
      state.awaitingSnapshot = false;
      state.resumeNote = null;
      leftRoom();
      showError({ ...error, message: `Could not watch room ${room.code} again: ${error.message}` });
    });
    return;
  }
  announceResume(restarted, null);
  if (room) {
    leftRoom();
    showError({ message: `You were away too long and are no longer in room ${room.code}.` });
    return;
  }
  if (state.page === "daily") loadDaily();
}

// The board stays disabled until the room's snapshot is here; a snapshot that does not
// come is asked for.
function awaitSnapshot(restarted) {
  state.awaitingSnapshot = true;
  state.resumeNote = { restarted };
  if (document.body.dataset.screen === "race") renderRace();
  const conn = state.conn;
  setTimeout(() => {
    if (state.awaitingSnapshot && conn === state.conn && conn.ready) sync();
  }, 5000);
}

function announceResume(restarted, room) {
  if (!restarted) {
    showBanner("reconnected", "Reconnected");
    return;
  }
  let text = "The server restarted.";
  if (room && (room.state === "racing" || room.state === "countdown")) {
    text = room.you.role === "player" ? "The server restarted — your race goes on." : "The server restarted — the race goes on.";
  } else if (room) {
    text = "The server restarted — your room is still here.";
  }
  showBanner("restarted", text);
}

function onWelcome(welcome) {
  state.me = welcome;
  state.identity = { name: welcome.name, token: welcome.token };
  saveIdentity();
  $("player-name").textContent = welcome.name;
  $("me").hidden = false;
  if (welcome.room) {
    // The snapshot of the room this player is still in follows the welcome.
    if (state.link && state.link.code !== welcome.room) {
      showNotice(`You are still in room ${welcome.room}: leave it to join ${state.link.code}.`);
      prefillJoin(state.link);
      state.link = null;
    } else {
      state.link = null;
    }
    return;
  }
  state.room = null;
  if (state.link) {
    const link = state.link;
    state.link = null;
    joinRoom(link.code, link.role);
    return;
  }
  render();
  if (state.page === "daily") loadDaily();
}

// Send a request; while the connection is down it is refused at once rather than queued,
// so that nothing the player did goes out unseen later.
function request(type, fields) {
  if (!state.conn || !state.conn.ready) {
    return Promise.reject({
      code: "offline",
      message: "Not connected to the server: wait until the connection is back.",
    });
  }
  return state.conn.request(type, fields);
}

async function sync() {
  if (state.syncing || !state.room) return;
  state.syncing = true;
  try {
    await request("sync");
  } catch (error) {
    if (error.code === "not_in_room" || error.code === "room_not_found") leftRoom();
  } finally {
    state.syncing = false;
  }
}

// -- frames from the server ----------------------------------------------------------------

function onFrame(data) {
  switch (data.type) {
    case "room":
      takeSnapshot(data.room);
      return;
    case "resumed":
      onResumed(data);
      return;
    case "error":
      if (data.code !== "stale_revision") showError(data);
      return;
    default:
      break;
  }
  if (!state.room || data.room !== state.room.code || typeof data.seq !== "number") return;
  if (data.seq <= state.seq) return;
  // A members event may stand for a run of them (`since`: the first): then none was lost.
  const since = typeof data.since === "number" ? data.since : data.seq;
  const gap = data.seq > state.seq + 1 && since > state.seq + 1;
  state.seq = data.seq;
  const handler = EVENTS[data.type];
  if (handler) handler(data);
  if (gap) sync();
  render();
}

function takeSnapshot(room) {
  const now = performance.now();
  state.room = {
    code: room.code,
    state: room.state,
    host: room.host,
    settings: room.settings,
    members: room.members,
    race: room.race,
    you: { player_id: room.you.player_id, role: room.you.role },
  };
  state.seq = room.seq;
  state.countdownEnd = room.state === "countdown" ? now + (room.starts_in_ms || 0) : null;
  if (room.state === "racing" || room.state === "finished") {
    state.players = room.players || [];
    state.startAt = now - (room.elapsed_ms || 0);
    state.timeLimit = room.time_limit || room.settings.time_limit;
    state.view = room.you.view || null;
    state.rev = room.you.rev || 0;
    state.boards = room.boards || {};
  } else {
    clearRace();
  }
  if (room.state === "finished") {
    state.results = room.results;
    state.seed = room.seed;
    state.finishedAt = now;
  } else {
    state.results = null;
    state.seed = null;
  }
  const role = room.you.role;
  if (room.settings.daily) {
    state.page = "daily";
    state.daily.variant = room.settings.variant;
    state.daily.date = null;
    setUrl(dailyUrl());
    if (room.state === "finished") dailyFinished(room.settings, room.results);
  } else {
    state.page = "home";
    setUrl(`/r/${room.code}${role === "spectator" ? "?as=spectator" : ""}`);
  }
  boardShown = null;
  state.awaitingSnapshot = false;
  if (state.resumeNote) {
    announceResume(state.resumeNote.restarted, state.room);
    state.resumeNote = null;
  }
  render();
}

function clearRace() {
  state.players = [];
  state.view = null;
  state.rev = 0;
  state.boards = {};
  state.startAt = null;
  state.finishedAt = null;
}

function leftRoom() {
  state.room = null;
  state.seq = 0;
  clearRace();
  state.results = null;
  state.lastResults = null;
  if (state.page === "daily") {
    setUrl(dailyUrl());
    render();
    loadDaily();
    return;
  }
  setUrl("/");
  render();
}

const EVENTS = {
  members(event) {
    const room = state.room;
    const wasFinished = room.state === "finished";
    room.state = event.state;
    room.host = event.host;
    room.members = event.members;
    room.settings = event.settings;
    if (!event.members.some((m) => m.player_id === state.me.player_id)) {
      if (event.closed) showError({ message: `The room was closed: ${event.closed}` });
      leftRoom();
      return;
    }
    if (event.state === "lobby") {
      if (wasFinished && state.results) state.lastResults = { results: state.results, seed: state.seed };
      state.results = null;
      state.seed = null;
      state.countdownEnd = null;
      clearRace();
    }
  },
  countdown(event) {
    state.room.state = "countdown";
    state.countdownEnd = performance.now() + event.seconds * 1000;
    state.results = null;
    state.seed = null;
    clearRace();
  },
  race_started(event) {
    const room = state.room;
    room.state = "racing";
    room.race = event.race;
    state.countdownEnd = null;
    state.startAt = performance.now();
    state.timeLimit = event.time_limit;
    state.boards = event.boards || {};
    if (event.view) {
      state.view = event.view;
      state.rev = event.rev || 0;
    }
    const dealt = event.view
      ? event.view.banked
      : Object.values(state.boards)[0]?.banked || 0;
    state.players = event.players.map((p) => ({
      player_id: p.player_id,
      name: p.name,
      banked: state.boards[p.player_id]?.banked ?? dealt,
      moves: 0,
      status: "playing",
      elapsed_ms: 0,
    }));
    boardShown = null;
  },
  progress(event) {
    for (const standing of event.players) {
      const player = state.players.find((p) => p.player_id === standing.player_id);
      if (player) {
        player.banked = standing.banked;
        player.moves = standing.moves;
        player.status = standing.status;
        player.elapsed_ms = standing.elapsed_ms;
      }
      if (standing.view) state.boards[standing.player_id] = standing.view;
    }
  },
  race_over(event) {
    state.room.state = "finished";
    $("error").hidden = true;
    state.results = event.results;
    state.seed = event.seed ?? null;
    state.finishedAt = performance.now();
    for (const result of event.results) {
      const player = state.players.find((p) => p.player_id === result.player_id);
      if (player) Object.assign(player, { status: result.status, banked: result.banked, moves: result.moves });
    }
    if (event.daily) {
      dailyFinished({ daily: event.daily, variant: event.variant, attempt: event.attempt }, event.results);
    }
  },
};

// -- actions ---------------------------------------------------------------------------------

async function joinRoom(code, role) {
  try {
    await request("join_room", { code, role });
  } catch (error) {
    showError(error);
    prefillJoin({ code, role: error.code === "wrong_state" ? "spectator" : role });
    setUrl("/");
    render();
  }
}

function prefillJoin(link) {
  $("join-code").value = link.code;
  $("join-spectator").checked = link.role === "spectator";
}

async function act(type, fields) {
  try {
    return await request(type, fields);
  } catch (error) {
    showError(error);
    return null;
  }
}

// Play a move on the current revision; true once the server accepted it.
async function playMove(text) {
  try {
    const ack = await request("move", { move: text, rev: state.rev });
    if (ack.view) {
      state.view = ack.view; // a duplicate's ack carries the whole view
    } else if (state.view && ack.rev === state.rev + 1) {
      state.view = applyDelta(state.view, ack.delta);
    } else {
      await sync(); // the view held here is older than the move
      return true;
    }
    state.rev = ack.rev;
    if (boardView) {
      boardView.update(state.view);
      boardShown = state.view;
    }
    renderRace();
    return true;
  } catch (error) {
    if (error.resent) {
      // Sent before the connection dropped and again after: the server did not play it.
      const why = error.code === "stale_revision" ? "your game had changed meanwhile" : error.message;
      showError({
        ...error,
        message: `Your move ${text}, sent as the connection dropped, was not played: ${why}. The board shows your game as the server has it.`,
      });
      await sync();
      return false;
    }
    showError(error);
    if (error.code === "stale_revision") await sync();
    return false;
  }
}

// -- rendering -------------------------------------------------------------------------------

const SCREENS = ["name-screen", "home", "daily", "room", "race"];
let boardView = null;
let boardShown = null;

function showScreen(name) {
  $("loading").hidden = true;
  for (const screen of SCREENS) $(screen).hidden = screen !== name;
  document.body.dataset.screen = name;
}

function render() {
  if (!state.me) return;
  if (!state.room) {
    if (state.page === "daily") {
      showScreen("daily");
      renderDaily();
    } else {
      showScreen("home");
    }
    return;
  }
  if (state.room.state === "lobby") {
    showScreen("room");
    renderRoom();
    return;
  }
  showScreen("race");
  renderRace();
}

function formatTime(ms) {
  const total = Math.max(0, Math.floor(ms / 1000));
  const minutes = Math.floor(total / 60);
  const seconds = String(total % 60).padStart(2, "0");
  return `${minutes}:${seconds}`;
}

function settingsText(settings) {
  const parts = [
    `${settings.max_players} player${settings.max_players === 1 ? "" : "s"} max`,
    `${formatTime(settings.time_limit * 1000)} time limit`,
    `${settings.countdown}s countdown`,
    settings.undo ? "undo on" : "undo off",
    settings.spectators ? "spectators welcome" : "no spectators",
  ];
  return parts.join(" · ");
}

function renderRoom() {
  const room = state.room;
  $("room-code").textContent = room.code;
  $("room-variant").textContent = variantTitle(room.settings.variant);
  $("room-link").value = roomUrl(room.code);
  $("room-settings").textContent = settingsText(room.settings);
  const list = $("members");
  list.replaceChildren();
  for (const member of room.members) {
    const item = document.createElement("li");
    item.className = "member";
    item.dataset.testid = "member";
    item.dataset.playerId = member.player_id;
    item.dataset.role = member.role;
    item.dataset.ready = String(member.ready);
    item.dataset.host = String(member.player_id === room.host);
    const name = document.createElement("span");
    name.className = "member-name";
    name.textContent = member.name;
    item.append(name);
    const tag = (text, cls) => {
      const node = document.createElement("span");
      node.className = `tag ${cls}`;
      node.textContent = text;
      item.append(node);
    };
    if (member.player_id === state.me.player_id) tag("you", "you");
    if (member.player_id === room.host) tag("host", "host");
    if (member.role === "spectator") tag("spectator", "spectator");
    else tag(member.ready ? "ready" : "not ready", member.ready ? "ready" : "waiting");
    if (!member.connected) tag("offline", "offline");
    list.append(item);
  }
  const me = room.members.find((m) => m.player_id === state.me.player_id);
  const ready = $("ready");
  ready.hidden = !isPlayer();
  ready.setAttribute("aria-pressed", String(Boolean(me?.ready)));
  ready.textContent = me?.ready ? "Ready ✓ (click to wait)" : "I'm ready";
  ready.classList.toggle("on", Boolean(me?.ready));
  $("start").hidden = room.host !== state.me.player_id;
  const players = room.members.filter((m) => m.role === "player").length;
  $("room-hint").textContent = isSpectator()
    ? "You are watching: the boards appear when the race starts."
    : `The host starts the race, or it starts when every player is ready (${players} player${players === 1 ? "" : "s"} here).`;
  const last = $("last-results");
  last.hidden = !state.lastResults;
  if (state.lastResults) {
    last.querySelector(".results-host").replaceChildren(resultsTable(state.lastResults));
  }
}

function progressRow(player) {
  const item = document.createElement("li");
  item.className = "progress-row";
  item.dataset.testid = "progress-row";
  item.dataset.playerId = player.player_id;
  item.dataset.banked = String(player.banked);
  item.dataset.moves = String(player.moves);
  item.dataset.status = player.status;
  if (player.player_id === state.me.player_id) item.classList.add("mine");
  const name = document.createElement("span");
  name.className = "p-name";
  name.textContent = player.player_id === state.me.player_id ? `${player.name} (you)` : player.name;
  const bar = document.createElement("span");
  bar.className = "bar";
  bar.setAttribute("role", "progressbar");
  bar.setAttribute("aria-valuemin", "0");
  bar.setAttribute("aria-valuemax", "52");
  bar.setAttribute("aria-valuenow", String(player.banked));
  const fill = document.createElement("span");
  fill.className = "fill";
  fill.style.width = `${(player.banked / 52) * 100}%`;
  bar.append(fill);
  const stats = document.createElement("span");
  stats.className = "p-stats";
  const banked = document.createElement("b");
  banked.dataset.testid = "banked";
  banked.textContent = `${player.banked}/52`;
  const moves = document.createElement("span");
  moves.dataset.testid = "moves";
  moves.textContent = `${player.moves} move${player.moves === 1 ? "" : "s"}`;
  const status = document.createElement("span");
  status.className = `status s-${player.status}`;
  status.dataset.testid = "status";
  status.textContent = player.status.replaceAll("_", " ");
  stats.append(banked, moves, status);
  item.append(name, bar, stats);
  return item;
}

const STATUS_TEXT = {
  won: "You won: all 52 cards are home!",
  stuck: "No legal move is left: your game is over.",
  resigned: "You resigned.",
  out_of_time: "Time is up.",
};

function renderRace() {
  const room = state.room;
  if (!room) return;
  $("race-variant").textContent = variantTitle(room.settings.variant);
  $("race-room").textContent = room.code;
  const daily = isDailyRoom();
  $("race-room-label").hidden = daily;
  const dailyLabel = $("race-daily");
  dailyLabel.hidden = !daily;
  if (daily) {
    const { attempt } = room.settings;
    dailyLabel.replaceChildren(
      "daily deal of ",
      nowrap(room.settings.daily),
      ` · attempt ${attempt}, ${attempt === 1 ? "ranked" : "not ranked"}`,
    );
    dailyLabel.dataset.attempt = String(attempt);
    dailyLabel.dataset.ranked = String(attempt === 1);
  }
  $("time-limit-label").textContent = formatTime((state.timeLimit || room.settings.time_limit) * 1000);
  const progress = $("progress");
  progress.replaceChildren(...state.players.map(progressRow));
  progress.hidden = !state.players.length;
  tick();

  const finished = room.state === "finished";
  const playerArea = $("player-area");
  const showBoard = inRace() && state.view && room.state !== "countdown";
  playerArea.hidden = !showBoard;
  if (showBoard) {
    if (!boardView) {
      boardView = new BoardView($("board-host"), { onMove: playMove });
    }
    if (boardShown !== state.view) {
      boardView.update(state.view);
      boardShown = state.view;
    }
    const done = state.view.status !== "playing" || finished;
    // While the connection is down nothing on the board can be played: no drag, no click,
    // no key.
    const live = isLive();
    boardView.setEnabled(!done && live);
    playerArea.inert = !live;
    playerArea.setAttribute("aria-disabled", String(!live));
    const undo = $("undo");
    undo.hidden = !room.settings.undo || done;
    undo.disabled = !state.view.can_undo || done || !live;
    $("resign").hidden = done;
    $("resign").disabled = !live;
    const me = state.players.find((p) => p.player_id === state.me.player_id);
    const status = me && me.status !== "playing" ? me.status : state.view.status;
    const banner = $("game-status");
    banner.hidden = status === "playing";
    banner.dataset.status = status;
    banner.textContent = STATUS_TEXT[status] || status;
    if (!finished && status !== "playing") banner.textContent += " Waiting for the others…";
  } else {
    $("game-status").hidden = true;
  }

  const spectating = isSpectator() || (isPlayer() && !inRace() && room.state !== "countdown");
  const boards = $("spectator-boards");
  boards.hidden = !spectating || !Object.keys(state.boards).length;
  if (!boards.hidden) renderSpectatorBoards(boards);

  const results = $("results");
  results.hidden = !finished;
  if (finished && state.results) {
    results.querySelector(".results-host").replaceChildren(resultsTable({ results: state.results, seed: state.seed }));
    $("rematch").hidden = !isPlayer() || daily;
    $("leave-race").hidden = daily;
    $("daily-back").hidden = !daily;
    $("results-title").textContent = daily ? "Your result" : "Results";
    const outcome = $("daily-outcome");
    const shown = daily && state.daily.outcome;
    outcome.hidden = !shown;
    if (shown) fillOutcome(outcome, state.daily.outcome);
  }
}

function renderSpectatorBoards(host) {
  const panels = [];
  for (const player of state.players) {
    const view = state.boards[player.player_id];
    if (!view) continue;
    const panel = document.createElement("div");
    panel.className = "spectator-board";
    panel.dataset.testid = "spectator-board";
    panel.dataset.playerId = player.player_id;
    const head = document.createElement("div");
    head.className = "sb-head";
    const name = document.createElement("b");
    name.textContent = player.name;
    const stats = document.createElement("span");
    stats.className = "muted";
    stats.textContent = `${player.banked}/52 banked · ${player.moves} moves · ${player.status.replaceAll("_", " ")}`;
    head.append(name, stats);
    const wrap = document.createElement("div");
    wrap.className = "board-host small";
    wrap.append(drawBoard(view));
    panel.append(head, wrap);
    panels.push(panel);
  }
  host.replaceChildren(...panels);
}

function resultsTable({ results, seed }) {
  const wrap = document.createElement("div");
  const table = document.createElement("table");
  table.className = "results-table";
  table.innerHTML =
    "<thead><tr><th>#</th><th>Player</th><th>Banked</th><th>Moves</th><th>Time</th><th>Status</th></tr></thead>";
  const body = document.createElement("tbody");
  for (const result of results) {
    const row = document.createElement("tr");
    row.dataset.testid = "result-row";
    row.dataset.playerId = result.player_id;
    const cells = [
      String(result.rank),
      result.name,
      `${result.banked}/52`,
      String(result.moves),
      formatTime(result.time_ms),
      result.status.replaceAll("_", " "),
    ];
    for (const text of cells) {
      const cell = document.createElement("td");
      cell.textContent = text;
      row.append(cell);
    }
    if (state.me && result.player_id === state.me.player_id) row.classList.add("mine");
    body.append(row);
  }
  table.append(body);
  const seedLine = document.createElement("p");
  seedLine.className = "seed-line";
  if (seed === null || seed === undefined) {
    // The daily deal: its seed is shown on the day's board once the day is over.
    seedLine.textContent = "The deal's seed is revealed on the daily board once the day is over (UTC).";
  } else {
    seedLine.append("Deal seed (replay it to check the deal): ");
    const code = document.createElement("code");
    code.dataset.testid = "seed";
    code.textContent = String(seed);
    seedLine.append(code);
  }
  wrap.append(table, seedLine);
  return wrap;
}

// -- the daily challenge ---------------------------------------------------------------------

const STATUS_WORDS = {
  won: "won",
  stuck: "stuck",
  resigned: "resigned",
  out_of_time: "out of time",
  playing: "playing",
};

function statusWord(status) {
  return STATUS_WORDS[status] || status.replaceAll("_", " ");
}

function utcToday() {
  return new Date().toISOString().slice(0, 10);
}

function dailyToday() {
  return state.daily.today || utcToday();
}

// "1:02.4": boards rank equal results by time, so they show tenths of a second.
function formatTenths(ms) {
  const tenths = Math.floor(Math.max(0, ms) / 100) % 10;
  return `${formatTime(ms)}.${tenths}`;
}

function shortVariant(id) {
  return variantTitle(id).replace(/ \(.*\)$/, "");
}

// Today's board (or a past day's), the player's history and streaks, and the all-time best.
async function loadDaily() {
  if (!state.conn || !state.me) return;
  const daily = state.daily;
  const load = ++daily.loads;
  const { variant, date, top } = daily;
  const fields = { variant, limit: top };
  if (date) fields.date = date;
  const bestLoad = fetch(`/api/best?variant=${encodeURIComponent(variant)}&limit=${BEST_ROWS}`)
    .then((response) => (response.ok ? response.json() : null))
    .catch(() => null);
  try {
    const reply = await request("get_leaderboard", fields);
    if (load !== daily.loads) return;
    daily.board = reply.board;
    if (!date) daily.today = reply.board.date;
  } catch (error) {
    if (load === daily.loads) showError(error);
    return;
  }
  const best = await bestLoad;
  if (load !== daily.loads) return;
  daily.best = best;
  if (!state.room) render();
}

// A daily attempt is over: note how it went, then find its place on the day's board.
async function dailyFinished(settings, results) {
  const me = results.find((r) => r.player_id === state.me?.player_id);
  const outcome = {
    date: settings.daily,
    variant: settings.variant,
    attempt: settings.attempt,
    ranked: settings.attempt === 1,
    result: me || null,
    rank: null,
    count: null,
  };
  state.daily.outcome = outcome;
  state.daily.variant = settings.variant;
  state.daily.date = null;
  try {
    const reply = await request("get_leaderboard", { variant: settings.variant, date: settings.daily, limit: state.daily.top });
    const board = reply.board;
    if (state.daily.outcome !== outcome) return;
    outcome.rank = board.you ? board.you.rank : null;
    outcome.count = board.count;
    state.daily.board = board;
    render();
  } catch {
    // The board shows once the player is back on the daily page.
  }
}

function outcomeText(outcome) {
  const r = outcome.result;
  const head = r
    ? `${r.status === "won" ? "You won" : `You ${statusWord(r.status)}`}: ${r.banked}/52 banked, ${r.moves} move${r.moves === 1 ? "" : "s"}, ${formatTenths(r.time_ms)}.`
    : "Your attempt is over.";
  if (!outcome.ranked) {
    return [head, [`Not ranked: this was attempt ${outcome.attempt}, and only your first attempt of the day counts.`]];
  }
  if (outcome.rank !== null) {
    return [head, [`Ranked #${outcome.rank} of ${outcome.count} on the board of `, nowrap(outcome.date), "."]];
  }
  return [head, ["Ranked: your first attempt of the day."]];
}

function nowrap(text) {
  const span = document.createElement("span");
  span.className = "nowrap";
  span.textContent = text;
  return span;
}

function fillOutcome(node, outcome) {
  const [head, verdict] = outcomeText(outcome);
  node.dataset.ranked = String(outcome.ranked);
  node.dataset.attempt = String(outcome.attempt);
  node.dataset.rank = outcome.rank === null ? "" : String(outcome.rank);
  const first = document.createElement("div");
  first.textContent = head;
  const second = document.createElement("div");
  second.className = "verdict";
  second.dataset.testid = "daily-verdict";
  second.append(...verdict);
  node.replaceChildren(first, second);
  node.classList.toggle("ranked", outcome.ranked);
}

function cells(row, texts) {
  for (const text of texts) {
    const cell = document.createElement("td");
    cell.textContent = text;
    row.append(cell);
  }
}

function resultText(entry) {
  return entry.status === "won" ? "won" : `${statusWord(entry.status)}`;
}

function boardRows(entries, testid) {
  return entries.map((entry) => {
    const row = document.createElement("tr");
    row.dataset.testid = testid;
    row.dataset.rank = String(entry.rank);
    row.dataset.playerId = entry.player_id;
    row.dataset.status = entry.status;
    const mine = entry.player_id === state.me?.player_id;
    if (mine) row.classList.add("mine");
    cells(row, [
      String(entry.rank),
      mine ? `${entry.name} (you)` : entry.name,
      resultText(entry),
      `${entry.banked}/52`,
      String(entry.moves),
      formatTenths(entry.time_ms),
    ]);
    row.children[2].className = `st s-${entry.status}`;
    return row;
  });
}

function codeOf(testid, text) {
  const code = document.createElement("code");
  code.dataset.testid = testid;
  code.textContent = text;
  return code;
}

// The day's commitment (SHA-256 of "SEED:NONCE"), published from the start of the day;
// the seed and the nonce once no attempt of the day can still be running.
function fillSeedLine(line, board) {
  if (!board) {
    line.replaceChildren();
    return;
  }
  const parts = [];
  if (board.commitment) {
    parts.push("Commitment to the deal (SHA-256 of seed:nonce): ", codeOf("daily-commitment", board.commitment), document.createElement("br"));
  }
  if (board.seed !== null && board.seed !== undefined) {
    parts.push("Deal seed (replay it to check the board): ", codeOf("daily-seed", String(board.seed)));
    if (board.nonce) parts.push(" · nonce: ", codeOf("daily-nonce", board.nonce));
  } else {
    const at = board.reveal_ms ? new Date(board.reveal_ms).toISOString().slice(0, 16).replace("T", " ") : null;
    parts.push(at ? `The deal's seed and nonce are revealed at ${at} UTC, once no attempt of the day can still be running.` : "The deal's seed is revealed once the day is over (UTC).");
  }
  line.replaceChildren(...parts);
}

function renderDaily() {
  const daily = state.daily;
  const board = daily.board;
  const today = dailyToday();
  $("daily-variant").value = daily.variant;
  const dateInput = $("daily-date");
  dateInput.max = today;
  if (document.activeElement !== dateInput) dateInput.value = daily.date || today;
  const onToday = !daily.date || daily.date === today;
  $("daily-today").hidden = onToday;

  const played = Boolean(board?.history?.some((h) => h.date === today && h.variant === daily.variant));
  const play = $("daily-play");
  play.dataset.ranked = String(!played);
  $("daily-play-note").textContent = played
    ? `You have played today's ${shortVariant(daily.variant)} deal: another attempt is shown but not ranked.`
    : "Your first attempt of the day is ranked. The clock starts at once.";

  const last = $("daily-last");
  const outcome = daily.outcome;
  last.hidden = !outcome || outcome.variant !== daily.variant;
  if (!last.hidden) fillOutcome(last, outcome);

  const fresh = board && board.variant === daily.variant;
  $("daily-board-date").textContent = fresh ? `· ${board.date}${board.date === today ? " (today)" : ""}` : "";
  $("daily-count").textContent = fresh
    ? `${board.count} ranked player${board.count === 1 ? "" : "s"}`
    : "loading…";
  const top = fresh ? board.top : [];
  const topTable = $("daily-top");
  topTable.querySelector("tbody").replaceChildren(...boardRows(top, "board-row"));
  topTable.hidden = !top.length;
  const empty = $("daily-empty");
  empty.hidden = !fresh || top.length > 0;
  empty.textContent = board?.date === today ? "No one has played today's deal yet: be the first." : "No one played this deal.";

  const you = $("daily-you");
  const mineShown = fresh && board.you && top.some((e) => e.player_id === board.you.player_id);
  you.dataset.rank = fresh && board.you ? String(board.you.rank) : "";
  if (!fresh) {
    you.textContent = "";
  } else if (board.you) {
    you.textContent = `Your rank: #${board.you.rank} of ${board.count}`;
  } else if (board.date === today) {
    you.textContent = played
      ? "Your ranked attempt is still being recorded."
      : `You have not played today's ${shortVariant(daily.variant)} deal yet.`;
  } else {
    you.textContent = "You did not play this deal.";
  }
  const aroundBox = $("daily-around-box");
  aroundBox.hidden = !fresh || !board.you || mineShown || !board.around.length;
  if (!aroundBox.hidden) {
    $("daily-around").querySelector("tbody").replaceChildren(...boardRows(board.around, "around-row"));
  }

  fillSeedLine($("daily-seed-line"), fresh ? board : null);

  const streaks = board?.streaks || { played: 0, won: 0, best_played: 0, best_won: 0 };
  $("streak-played").textContent = String(streaks.played);
  $("streak-won").textContent = String(streaks.won);
  $("streak-best-played").textContent = String(streaks.best_played);
  $("streak-best-won").textContent = String(streaks.best_won);

  const history = (board?.history || []).slice().reverse().slice(0, HISTORY_ROWS);
  const historyRows = history.map((entry) => {
    const row = document.createElement("tr");
    row.dataset.testid = "history-row";
    row.dataset.date = entry.date;
    row.dataset.variant = entry.variant;
    row.dataset.attempt = String(entry.attempt);
    row.dataset.ranked = String(entry.ranked);
    cells(row, [
      entry.date,
      shortVariant(entry.variant),
      entry.ranked ? `${entry.attempt} · ranked` : `${entry.attempt} · not ranked`,
      `${resultText(entry)} · ${entry.banked}/52`,
      formatTenths(entry.time_ms),
    ]);
    if (!entry.ranked) row.classList.add("unranked");
    return row;
  });
  $("daily-history").querySelector("tbody").replaceChildren(...historyRows);
  $("daily-history").hidden = !historyRows.length;
  $("daily-history-empty").hidden = historyRows.length > 0 || !board;

  $("daily-best-variant").textContent = `· ${shortVariant(daily.variant)}`;
  const best = daily.best && daily.best.variant === daily.variant ? daily.best.best : [];
  const bestRows = best.map((entry) => {
    const row = document.createElement("tr");
    row.dataset.testid = "best-row";
    row.dataset.rank = String(entry.rank);
    row.dataset.playerId = entry.player_id;
    if (entry.player_id === state.me?.player_id) row.classList.add("mine");
    cells(row, [
      String(entry.rank),
      entry.name,
      entry.date,
      `${resultText(entry)} · ${entry.banked}/52`,
      formatTenths(entry.time_ms),
    ]);
    return row;
  });
  $("daily-best-table").querySelector("tbody").replaceChildren(...bestRows);
  $("daily-best-table").hidden = !bestRows.length;
  $("daily-best-empty").hidden = bestRows.length > 0 || !daily.best;
}

function openDaily() {
  state.page = "daily";
  const url = dailyUrl();
  if (window.location.pathname + window.location.search !== url) history.pushState(null, "", url);
  render();
  loadDaily();
}

function openHome() {
  state.page = "home";
  if (window.location.pathname !== "/") history.pushState(null, "", "/");
  render();
}

async function playDaily() {
  const play = $("daily-play");
  play.disabled = true;
  state.daily.outcome = null;
  try {
    // The reply is a snapshot of the running race: it shows as the race screen.
    await request("daily", { variant: state.daily.variant });
  } catch (error) {
    showError(error);
  } finally {
    play.disabled = false;
  }
}

function wireDaily() {
  const select = $("daily-variant");
  for (const [id, title] of VARIANTS) {
    const option = document.createElement("option");
    option.value = id;
    option.textContent = title;
    select.append(option);
  }
  select.addEventListener("change", () => {
    state.daily.variant = select.value;
    localStorage.setItem(DAILY_VARIANT_KEY, select.value);
    setUrl(dailyUrl());
    render();
    loadDaily();
  });
  $("daily-date").addEventListener("change", (event) => {
    const value = event.target.value;
    state.daily.date = value && value !== dailyToday() ? value : null;
    setUrl(dailyUrl());
    loadDaily();
  });
  $("daily-today").addEventListener("click", () => {
    state.daily.date = null;
    setUrl(dailyUrl());
    render();
    loadDaily();
  });
  $("daily-play").addEventListener("click", playDaily);
  $("daily-back").addEventListener("click", async () => {
    const reply = await act("leave_room");
    if (reply) leftRoom();
  });

  const plainClick = (event) => event.button === 0 && !event.metaKey && !event.ctrlKey && !event.shiftKey && !event.altKey;
  $("daily-link").addEventListener("click", (event) => {
    if (!plainClick(event) || !state.me) return;
    event.preventDefault();
    openDaily();
  });
  $("home-link").addEventListener("click", (event) => {
    if (!plainClick(event) || !state.me || state.room) return;
    event.preventDefault();
    openHome();
  });
  window.addEventListener("popstate", () => {
    if (state.room) return;
    state.page = pageFromUrl();
    if (state.page === "daily") {
      const fromUrl = dailyFromUrl();
      Object.assign(state.daily, { variant: fromUrl.variant, date: fromUrl.date, top: fromUrl.top });
      render();
      loadDaily();
    } else {
      render();
    }
  });
}

// The clock and the countdown, several times a second.
function tick() {
  const now = performance.now();
  const room = state.room;
  const countdown = $("countdown");
  if (room && room.state === "countdown" && state.countdownEnd !== null) {
    countdown.hidden = false;
    const left = Math.max(0, Math.ceil((state.countdownEnd - now) / 1000));
    countdown.querySelector(".countdown-number").textContent = left > 0 ? String(left) : "Go!";
    countdown.dataset.seconds = String(left);
  } else {
    countdown.hidden = true;
  }
  if (room && state.startAt !== null) {
    const end = room.state === "finished" && state.finishedAt !== null ? state.finishedAt : now;
    const limit = (state.timeLimit || room.settings.time_limit) * 1000;
    $("elapsed").textContent = formatTime(Math.min(limit, end - state.startAt));
  } else if (room) {
    $("elapsed").textContent = "0:00";
  }
}

// -- wiring ----------------------------------------------------------------------------------

function formValues(form) {
  const data = new FormData(form);
  return {
    variant: data.get("variant"),
    max_players: Number(data.get("max_players")),
    countdown: Number(data.get("countdown")),
    time_limit: Number(data.get("time_limit")),
    spectators: data.get("spectators") === "on",
    undo: data.get("undo") === "on",
  };
}

function wire() {
  const select = $("variant");
  for (const [id, title] of VARIANTS) {
    const option = document.createElement("option");
    option.value = id;
    option.textContent = title;
    select.append(option);
  }

  $("name-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = $("name-input").value.trim();
    if (!name) return;
    state.identity.name = name;
    saveIdentity();
    $("loading").hidden = false;
    $("name-screen").hidden = true;
    const returning = state.me !== null;
    state.me = null;
    connect({ name, token: state.identity.token }).then(() => {
      if (returning) showNotice(`You now play as ${state.identity.name}.`);
    });
  });

  $("change-name").addEventListener("click", () => {
    $("name-input").value = state.identity.name;
    showScreen("name-screen");
    $("name-input").focus();
  });

  $("create-form").addEventListener("submit", (event) => {
    event.preventDefault();
    act("create_room", formValues(event.target));
  });

  $("join-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const code = $("join-code").value.trim().toUpperCase();
    if (!code) return;
    joinRoom(code, $("join-spectator").checked ? "spectator" : "player");
  });

  $("copy-link").addEventListener("click", async () => {
    const input = $("room-link");
    try {
      await navigator.clipboard.writeText(input.value);
    } catch {
      input.select();
      document.execCommand("copy");
    }
    showNotice("Link copied");
  });

  $("ready").addEventListener("click", () => {
    const me = state.room?.members.find((m) => m.player_id === state.me.player_id);
    act("ready", { ready: !me?.ready });
  });
  $("start").addEventListener("click", () => act("start"));

  const leave = async () => {
    const reply = await act("leave_room");
    if (reply) leftRoom();
  };
  $("leave").addEventListener("click", leave);
  $("leave-race").addEventListener("click", leave);
  $("rematch").addEventListener("click", () => act("rematch"));
  $("undo").addEventListener("click", () => {
    if (boardView && !boardView.busy) playMove("u");
  });

  let resignArmed = null;
  $("resign").addEventListener("click", () => {
    const button = $("resign");
    if (resignArmed) {
      clearTimeout(resignArmed);
      resignArmed = null;
      button.textContent = "Resign";
      button.classList.remove("armed");
      act("resign");
      return;
    }
    button.textContent = "Resign? Click again";
    button.classList.add("armed");
    resignArmed = setTimeout(() => {
      resignArmed = null;
      button.textContent = "Resign";
      button.classList.remove("armed");
    }, 3000);
  });

  $("error").addEventListener("click", () => {
    $("error").hidden = true;
  });

  $("conn-retry").addEventListener("click", () => {
    if (state.conn && !state.conn.closing) state.conn.retry();
    else if (state.identity.token) connect({ token: state.identity.token });
  });
  // The network is back: no need to wait out the pause before the next attempt.
  window.addEventListener("online", () => {
    if (state.conn) state.conn.retry();
  });

  wireDaily();
  setInterval(tick, 250);
}

function start() {
  wire();
  if (state.link) prefillJoin(state.link);
  $("name-input").value = state.identity.name;
  if (state.identity.token) {
    connect({ token: state.identity.token });
  } else {
    showScreen("name-screen");
    setConnStatus("idle");
  }
}

start();
