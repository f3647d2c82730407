// The page: identity and account, lobby, room, race, spectating, results and the daily
// challenge over one websocket.

import { BoardView, applyDelta, drawBoard, reducedMotion } from "./board.js";
import { celebrate, playSound } from "./effects.js";
import { Connection, wsUrl } from "./net.js";
import {
  CERTIFIABLE,
  COMMON_RULES,
  DEFAULT_VARIANT,
  GAME_INFO,
  VARIANTS,
  finishingMoves,
  safeMove,
  variantTitle,
} from "./rules.js";
import { aRank, counted, errorText, moveWords, plural, rankWord, readMove } from "./words.js";

const STORE_KEY = "solrace.identity";
const DAILY_VARIANT_KEY = "solrace.daily.variant";
const CREATE_VARIANT_KEY = "solrace.create.variant";
const PREFS_KEY = "solrace.prefs";
const HISTORY_ROWS = 10;
const BEST_ROWS = 10;
const $ = (testid, root = document) => root.querySelector(`[data-testid="${testid}"]`);

// -- state ---------------------------------------------------------------------------------

const state = {
  identity: loadIdentity(), // {name, token, account}: account is the account's name, or null
  conn: null,
  me: null, // the welcome: player_id, name, token, room
  room: null, // code, state, host, settings, members, race, you {player_id, role}
  seq: 0,
  view: null,
  rev: 0,
  players: [], // player_id, name, banked, moves, status, elapsed_ms, place (a winner's)
  heldAt: null, // when the clock stopped showing time pass: offline, or a snapshot awaited
  boards: {}, // spectators: player_id -> view
  results: null,
  seed: null,
  par: null, // a winnable room's: the length of the solver's winning line
  lastResults: null,
  endAt: null, // a `first` room after its first win: performance.now() at the race's end
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
  prefs: loadPrefs(), // {theme: system|light|dark, sound, autoMove, autoFinish}
  offer: null, // {code, state}: a room racing when its link was opened, offered to watch
  raceSpectators: null, // the spectator setting the race that ended was played under
  celebrated: null, // "CODE:RACE" of the last win celebrated
};

// The player's settings of this browser: colours, sounds, auto-move; all off (the
// system's colours) until chosen.
function loadPrefs() {
  const prefs = { theme: "system", sound: false, autoMove: false, autoFinish: false };
  try {
    const data = JSON.parse(localStorage.getItem(PREFS_KEY) || "{}");
    if (["system", "light", "dark"].includes(data.theme)) prefs.theme = data.theme;
    prefs.sound = data.sound === true;
    prefs.autoMove = data.autoMove === true;
    prefs.autoFinish = data.autoFinish === true;
  } catch {
    // Nothing kept: the defaults.
  }
  return prefs;
}

function savePrefs() {
  try {
    localStorage.setItem(PREFS_KEY, JSON.stringify(state.prefs));
  } catch {
    // A browser that keeps nothing starts from the defaults next time.
  }
}

function loadIdentity() {
  try {
    const data = JSON.parse(localStorage.getItem(STORE_KEY) || "{}");
    return { name: data.name || "", token: data.token || null, account: data.account || null };
  } catch {
    return { name: "", token: null, account: null };
  }
}

// The identity a welcome proves: its token is kept in this browser (an account's too: the
// page keeps its session until it logs out).
function takeIdentity(welcome) {
  state.identity = { name: welcome.name, token: welcome.token, account: welcome.account?.name || null };
  saveIdentity();
}

const isAccount = () => Boolean(state.me?.account);

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

// "/?ghost=CODE/RACE/PLAYER" (or daily/DATE/VARIANT/PLAYER), from a replay page: a run to
// race alone against, as a ghost.
function ghostFromUrl() {
  const ref = new URLSearchParams(window.location.search).get("ghost") || "";
  const race = /^[A-Za-z0-9]{1,16}\/\d{1,10}\/[0-9a-f]{1,64}$/;
  const daily = /^daily\/\d{4}-\d{2}-\d{2}\/[a-z-]{1,32}\/[0-9a-f]{1,64}$/;
  return race.test(ref) || daily.test(ref) ? ref : null;
}

function showGhost(ref) {
  $("ghost-setting").value = ref || "";
  $("ghost-notice").hidden = !ref;
  $("ghost-text").textContent = ref
    ? "You race alone against a ghost: the recorded run " +
      (ref.startsWith("daily/") ? `of the daily deal of ${ref.split("/")[1]}` : `of room ${ref.split("/")[0]}`) +
      ", on its own deal, its progress moving on at its own times. Its game decides the room's game."
    : "";
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
    if (!VARIANTS.some(([id]) => id === variant)) variant = DEFAULT_VARIANT;
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
    outcome: null, // the last attempt: {date, variant, attempt, ranked, unranked, held, flag, result, rank, count}
    needsAccount: false, // the server answered account_required: a guest does not play it
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

// A refusal or a problem, in plain words (words.js): the codes stay in data attributes.
// `context` says what the page was doing (the room asked for, the move sent).
let toastTimer = null;
function showError(error, context = {}) {
  const toast = $("error");
  $("error-message").textContent = context.plain ? String(error.message) : errorText(error, context);
  toast.dataset.code = error.code || "";
  toast.dataset.reason = error.reason || "";
  toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    toast.hidden = true;
  }, 6000);
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

// This browser's token no longer works: say why, and show the name screen, where the
// player logs in again or picks a name.
function signedOut(message) {
  const account = state.identity.account;
  leaveIdentity(state.identity.name, message);
  if (account) $("login-name").value = account;
}

// This browser lets its identity go (logged out, revoked, deleted): no connection, no
// token; the name screen says why.
function leaveIdentity(name, note) {
  dropConnection();
  state.identity = { name: name || "", token: null, account: null };
  saveIdentity();
  state.me = null;
  state.room = null;
  state.seq = 0;
  clearRace();
  state.results = null;
  state.lastResults = null;
  hideBanner();
  renderMe();
  setConnStatus("idle");
  setUrl(state.page === "daily" ? dailyUrl() : "/");
  $("name-input").value = name || "";
  const line = $("name-note");
  line.textContent = note || "";
  line.hidden = !note;
  showScreen("name-screen");
}

function revokedMessage(account, reason) {
  if (!account) return "The server no longer knows this player: pick a name to play again.";
  const why = reason ? ` (${reason})` : " (its password changed, it was logged out everywhere, or it was deleted)";
  return `This browser was logged out of the account ${account}${why}: log in again.`;
}

function onConnectionClosed({ code, reason, error }) {
  if (error?.code === "bad_token") {
    // The server no longer takes this token: revoked, or its data was reset.
    signedOut(revokedMessage(state.identity.account, null));
    return;
  }
  if (code === 4003) {
    signedOut(revokedMessage(state.identity.account || state.me?.account?.name, reason));
    return;
  }
  if (code === 4001) {
    const where = isAccount() ? "another tab or device" : "another tab";
    showBanner("closed", `This player connected again elsewhere (${where}?).`, "Play here");
  } else if (code === 1008) {
    showBanner("closed", "The server closed the connection: the page sent too much too fast.", "Reconnect");
  } else {
    showBanner("closed", "Disconnected from the server.", "Reconnect");
  }
}

// Let the connection go on purpose: nothing it still says is heard.
function dropConnection() {
  const conn = state.conn;
  state.conn = null;
  if (conn) conn.close();
}

function newConnection() {
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
  return conn;
}

async function connect(hello) {
  if (state.conn) state.conn.close();
  const conn = newConnection();
  state.conn = conn;
  try {
    const welcome = await conn.open(hello);
    if (conn !== state.conn) return;
    onWelcome(welcome);
  } catch (error) {
    if (conn !== state.conn) return;
    if (error.code === "bad_token") {
      if (state.identity.account) {
        signedOut(revokedMessage(state.identity.account, null));
        return;
      }
      state.identity.token = null;
      saveIdentity();
      setConnStatus("idle");
      showScreen("name-screen");
      return;
    }
    if (error.code === "bad_name" || error.code === "name_taken") {
      // name_taken: an account has the name (a guest picks another, or logs in).
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
  takeIdentity(welcome);
  renderMe();
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
      const why = errorText(error, { room: room.code, during: "watch" });
      showError({ code: error.code, message: `Could not watch room ${room.code} again. ${why}` }, { plain: true });
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
  takeIdentity(welcome);
  renderMe();
  if (welcome.room) {
    // The snapshot of the room this player is still in follows the welcome.
    if (state.link && state.link.code !== welcome.room) {
      showNotice(`You are still in room ${welcome.room}: leave it to join ${state.link.code}.`);
      prefillJoin(state.link);
      state.link = null;
    } else {
      state.link = null;
      // A ghost race asked for (a replay's link) waits on the home screen until then.
      if ($("ghost-setting").value) showNotice(`You are still in room ${welcome.room}: leave it to race the ghost.`);
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
    case "boards":
      onHeldBoards(data);
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

// A delayed room's boards, come due: no room event (no `seq`), each board replaces the one
// shown of its player.
function onHeldBoards(data) {
  const room = state.room;
  if (!room || data.room !== room.code || data.race !== room.race || room.state !== "racing") return;
  Object.assign(state.boards, data.boards || {});
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
    // When each first reached their count of cards banked, as the server ranks them.
    state.players = (room.players || []).map((p) => ({
      ...p,
      firsts: typeof p.banked_at_ms === "number" ? { [p.banked]: p.banked_at_ms } : {},
    }));
    state.startAt = now - (room.elapsed_ms || 0);
    state.timeLimit = room.time_limit || room.settings.time_limit;
    state.view = room.you.view || null;
    state.rev = room.you.rev || 0;
    state.boards = room.boards || {};
    // A `first` room whose race has a winner ends sooner than its time limit.
    const won = state.players.some((p) => p.status === "won");
    const first = room.settings.finish === "first";
    state.endAt = room.state === "racing" && first && won && typeof room.left_ms === "number" ? now + room.left_ms : null;
  } else {
    clearRace();
  }
  if (room.state === "finished") {
    state.raceSpectators = spectatorMode(room.settings);
    state.results = room.results;
    state.seed = room.seed;
    state.par = room.par ?? null;
    state.finishedAt = now;
  } else {
    state.results = null;
    state.seed = null;
    state.par = null;
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
  state.endAt = null;
  $("finish-left-note").textContent = "";
}

function leftRoom() {
  state.room = null;
  state.seq = 0;
  clearRace();
  state.results = null;
  state.par = null;
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

// In a `first` room the first win brings the race's end forward to `finish_grace`
// seconds after it (never past the time limit).
function firstWin(standing, player) {
  const room = state.room;
  if (room.state !== "racing" || room.settings.finish !== "first" || state.endAt !== null) return;
  const now = performance.now();
  const grace = (room.settings.finish_grace ?? 30) * 1000;
  // The win came before the news of it: no later than `grace` from now.
  let end = now + grace;
  if (state.startAt !== null) {
    end = Math.min(end, state.startAt + standing.elapsed_ms + grace);
    end = Math.min(end, state.startAt + (state.timeLimit || room.settings.time_limit) * 1000);
  }
  state.endAt = end;
  const who = standing.player_id === state.me?.player_id ? "You" : player?.name || "A player";
  const seconds = Math.max(0, Math.ceil((end - now) / 1000));
  $("finish-left-note").textContent = `${who} finished: the race ends in ${counted(seconds, "second")}.`;
  // The banner names who finished; the winner reads it as the others' time left.
  $("finish-left-label").textContent =
    who === "You" ? "You finished first: the others' race ends in" : `${who} finished: the race ends in`;
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
      const why = event.removed?.[state.me.player_id];
      if (event.closed) showError({ message: `The server's operator closed the room: ${event.closed}` });
      else if (why === "spectators_off") {
        showError({ message: `The host of room ${room.code} turned spectators off: you are no longer watching it.` });
      } else if (why) showError({ message: `You are no longer in room ${room.code}.` });
      leftRoom();
      return;
    }
    if (event.state === "lobby") {
      if (wasFinished && state.results) {
        state.lastResults = {
          results: state.results,
          seed: state.seed,
          par: state.par,
          race: room.race,
          spectators: state.raceSpectators,
        };
      }
      state.results = null;
      state.seed = null;
      state.par = null;
      state.countdownEnd = null;
      clearRace();
    }
  },
  countdown(event) {
    state.room.state = "countdown";
    state.countdownEnd = performance.now() + event.seconds * 1000;
    state.results = null;
    state.seed = null;
    state.par = null;
    clearRace();
  },
  race_started(event) {
    const room = state.room;
    room.state = "racing";
    room.race = event.race;
    state.countdownEnd = null;
    state.startAt = performance.now();
    state.timeLimit = event.time_limit;
    state.endAt = null;
    $("finish-left-note").textContent = "";
    state.boards = event.boards || {};
    if (event.view) {
      state.view = event.view;
      state.rev = event.rev || 0;
    }
    const dealt = event.view
      ? event.view.banked
      : Object.values(state.boards)[0]?.banked || 0;
    state.players = event.players.map((p) => {
      const banked = state.boards[p.player_id]?.banked ?? dealt;
      return {
        player_id: p.player_id,
        name: p.name,
        banked,
        moves: 0,
        status: "playing",
        elapsed_ms: 0,
        firsts: { [banked]: 0 }, // cards banked -> when that count was first reached
      };
    });
    boardShown = null;
  },
  progress(event) {
    for (const standing of event.players) {
      const player = state.players.find((p) => p.player_id === standing.player_id);
      if (player) {
        player.firsts = player.firsts || {};
        if (!(standing.banked in player.firsts)) player.firsts[standing.banked] = standing.elapsed_ms;
        player.banked = standing.banked;
        player.moves = standing.moves;
        player.status = standing.status;
        player.elapsed_ms = standing.elapsed_ms;
        // A winner's place is final at once: a later win is a slower one.
        if (typeof standing.place === "number") player.place = standing.place;
        else delete player.place;
      }
      if (standing.view) state.boards[standing.player_id] = standing.view;
      if (standing.status === "won") firstWin(standing, player);
    }
  },
  race_over(event) {
    state.room.state = "finished";
    state.raceSpectators = spectatorMode(state.room.settings);
    $("error").hidden = true;
    state.results = event.results;
    state.seed = event.seed ?? null;
    state.par = event.par ?? null;
    state.finishedAt = performance.now();
    state.endAt = null;
    // A spectator gets the final boards, whatever the room showed during the race.
    if (event.boards) Object.assign(state.boards, event.boards);
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

// Join a room; a player who comes to a room whose race runs is offered to watch it at
// once (players join between races).
async function joinRoom(code, role) {
  state.offer = null;
  try {
    await request("join_room", { code, role });
  } catch (error) {
    setUrl("/");
    if (error.code === "wrong_state" && role === "player" && error.reason !== "racing_no_spectators") {
      prefillJoin({ code, role: "spectator" });
      state.offer = { code };
      render();
      const watch = $("watch-now");
      if (!watch.hidden) watch.focus();
      return;
    }
    showError(error, { room: code, during: "join" });
    prefillJoin({ code, role });
    render();
  }
}

function renderOffer() {
  const offer = state.offer;
  const box = $("watch-offer");
  box.hidden = !offer;
  if (!offer) return;
  box.dataset.code = offer.code;
  $("watch-offer-title").textContent = `Room ${offer.code} is racing`;
  $("watch-offer-text").textContent =
    "Its race started before you came: players join between races. Watch this one now, and play in the next.";
}

function prefillJoin(link) {
  $("join-code").value = link.code;
  $("join-spectator").checked = link.role === "spectator";
}

// What a request was for, to say its refusal in words.
const DURING = { set_settings: "settings", rematch: "rematch", ready: "start", start: "start", join_room: "join" };

async function act(type, fields) {
  try {
    return await request(type, fields);
  } catch (error) {
    showError(error, { during: DURING[type], room: state.room?.code });
    return null;
  }
}

// Play a move on the current revision; true once the server accepted it. A refusal is
// said in words of the board as it was (the cards, the piles and the rule).
async function playMove(text, { auto = false } = {}) {
  const view = state.view;
  const wasWon = view?.status === "won";
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
    if (state.prefs.sound) playSound(won(state.view) ? "win" : soundOf(text));
    if (!wasWon && won(state.view)) celebrateWin();
    // Auto-move follows the player's moves, never an undo (which would only be undone).
    if (readMove(text)?.kind !== "undo") autoPlaySoon();
    return true;
  } catch (error) {
    if (state.prefs.sound && !auto) playSound("refused");
    if (error.resent) {
      // Sent before the connection dropped and again after: the server did not play it.
      const why =
        error.code === "stale_revision" ? "your game had changed meanwhile" : errorText(error, { view, text }).replace(/\.$/, "");
      showError(
        {
          ...error,
          message: `Your move (${moveWords(view, text)}), sent as the connection dropped, was not played: ${why}. The board shows your game as the server has it.`,
        },
        { plain: true },
      );
      await sync();
      return false;
    }
    showError(error, { view, text });
    if (error.code === "stale_revision") await sync();
    return false;
  }
}

const won = (view) => view?.status === "won";

function soundOf(text) {
  const move = readMove(text);
  if (!move) return "move";
  if (move.kind === "draw" || move.kind === "redeal") return "draw";
  if (move.kind === "move" && move.dst[0] === "f") return "home";
  return "move";
}

// A win: suits rain over the page once per race (or a still glow, for reduced motion).
function celebrateWin() {
  const key = `${state.room?.code}:${state.room?.race}`;
  if (state.celebrated === key) return;
  state.celebrated = key;
  document.body.dataset.celebrated = key;
  celebrate(document.body);
}

// -- auto-move -------------------------------------------------------------------------------

// With auto-move on, safe cards go home (rules.js safeMove); with auto-finish on, once
// every card is face up and nothing is left but sending them home, they all go. Each is
// sent as an ordinary move, one after the other, which the server checks like any.
const AUTO_PAUSE_MS = 140;
let autoRunning = false;
let autoTimer = null;

function autoMoveFor(view) {
  if (!view || view.status !== "playing") return null;
  if (state.prefs.autoMove) {
    const move = safeMove(view);
    if (move) return move;
  }
  if (state.prefs.autoFinish) {
    const moves = finishingMoves(view);
    if (moves && moves.length) return moves[0];
  }
  return null;
}

function autoPlaySoon() {
  if (!state.prefs.autoMove && !state.prefs.autoFinish) return;
  clearTimeout(autoTimer);
  autoTimer = setTimeout(autoPlay, reducedMotion() ? 0 : AUTO_PAUSE_MS);
}

async function autoPlay() {
  if (autoRunning) return;
  const room = state.room;
  if (!room || room.state !== "racing" || !inRace() || !isLive() || !boardView) return;
  if (boardView.busy || boardView.drag || boardView.press) {
    autoPlaySoon(); // the player is in the middle of something: after it
    return;
  }
  const game = myGame(false);
  if (game.over) return;
  const move = autoMoveFor(state.view);
  if (!move) return;
  autoRunning = true;
  boardView.busy = true;
  let played = false;
  try {
    played = await playMove(move, { auto: true });
  } finally {
    boardView.busy = false;
    autoRunning = false;
  }
  // An accepted move plays the next by itself (playMove); a refused one ends the run.
  return played;
}

// -- rendering -------------------------------------------------------------------------------

const SCREENS = ["name-screen", "home", "daily", "room", "race"];
let boardView = null;
let boardShown = null;
let boardRace = null; // "CODE:RACE" of the race the board was last drawn for
let boardWasLive = null; // whether the board took moves when last drawn

function showScreen(name) {
  $("loading").hidden = true;
  const shown = document.body.dataset.screen;
  for (const screen of SCREENS) $(screen).hidden = screen !== name;
  document.body.dataset.screen = name;
  placeAccountForms(name);
  // A screen newly shown takes the keyboard where its first field is (the name screen's
  // name), unless the focus is already in it: keyboard users start typing at once.
  if (shown !== name && name === "name-screen" && !$(name).contains(document.activeElement)) {
    $("name-input")?.focus();
  }
  // Come by a room's link: the name screen says which room comes next.
  if (name === "name-screen") {
    const link = linkFromUrl();
    const line = $("name-room");
    line.hidden = !link;
    if (link) {
      line.textContent = link.role === "spectator" ? `Then you watch room ${link.code}.` : `Then you join room ${link.code}.`;
    }
  }
  // The lobby, come to from the name screen or a room left, starts at its first choice
  // (the game) where the focus was lost with the screen it was on; a focus the user put
  // elsewhere (a link of the header, say) stays.
  const active = document.activeElement;
  const lost = !active || active === document.body || !active.getClientRects().length;
  if (shown !== name && name === "home" && lost) $("variant")?.focus();
}

// The heading of `box` (its first h2 or h3), made one of `level`.
function headingLevel(box, level) {
  const heading = box.querySelector("h2, h3");
  if (!heading || heading.tagName === `H${level}`) return;
  const made = document.createElement(`h${level}`);
  for (const { name, value } of heading.attributes) made.setAttribute(name, value);
  made.append(...heading.childNodes);
  heading.replaceWith(made);
}

// The claim and login forms go where the screen shown wants them: the login form on the
// name screen; both for a guest on the home screen and on the daily page.
function placeAccountForms(screen) {
  const claim = $("claim-form");
  const login = $("login-form");
  const store = document.querySelector(".form-store");
  const slot = (name) => document.querySelector(`.account-slot[data-slot="${name}"]`);
  const guest = Boolean(state.me) && !isAccount();
  let target = null;
  let withClaim = false;
  if (screen === "name-screen" && !state.room) {
    // (A player in a room changes its name here, and does not log in to another.)
    target = slot("name-screen");
  } else if (guest && (screen === "home" || screen === "daily")) {
    target = slot(screen);
    withClaim = true;
  }
  const put = (form, where) => {
    if (form.parentElement !== where) where.append(form);
  };
  if (!target) {
    put(claim, store);
    put(login, store);
    return;
  }
  if (withClaim) put(claim, target);
  else put(claim, store);
  put(login, target);
  // Their headings go one level under the screen's: the home's slot is in "Your account"
  // (a level 2 heading), the others right under the screen's title.
  const level = screen === "home" ? 3 : 2;
  for (const form of [claim, login]) headingLevel(form, level);
  for (const node of claim.querySelectorAll('[data-role="player-name"]')) node.textContent = state.me?.name || "";
  for (const node of claim.querySelectorAll('[data-role="username"]')) node.value = state.me?.name || "";
}

// The top bar: who plays here, and whether the name is an account's.
function renderMe() {
  const me = state.me;
  $("me").hidden = !me;
  if (!me) return;
  $("player-name").textContent = me.name;
  $("player-name").title = me.name; // (a phone may have room for only some of it)
  $("account-badge").hidden = !me.account;
  // An account's name is its own: it does not change from here.
  $("change-name").hidden = Boolean(me.account);
}

function render() {
  if (!state.me) return;
  renderMe();
  if (!state.room) {
    if (state.page === "daily") {
      showScreen("daily");
      renderDaily();
    } else {
      showScreen("home");
      renderOffer();
      renderAccount();
    }
    return;
  }
  state.offer = null;
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
    `${counted(settings.max_players, "player")} max`,
    `${formatTime(settings.time_limit * 1000)} time limit`,
    `${settings.countdown}s countdown`,
    settings.undo ? "undo on" : "undo off",
  ];
  return parts.join(" · ");
}

// Who may watch the room, and what they see while a race runs: everyone in the room is
// shown it.
function spectatorMode(settings) {
  const mode = settings.spectators;
  if (mode === true) return "after"; // an older record: the default
  if (mode === false || settings.daily) return "off";
  return mode;
}

function spectatorsText(settings) {
  switch (spectatorMode(settings)) {
    case "live":
      return "Spectators: every board live, as it is played";
    case "delayed":
      return `Spectators: boards ${settings.spectator_delay} s late`;
    case "after":
      return "Spectators: progress only, the boards once the race is over";
    case "off":
      return "No spectators";
    default:
      return `Spectators: ${settings.spectators}`;
  }
}

function fillSpectatorsLine(node, settings) {
  node.textContent = spectatorsText(settings);
  node.dataset.mode = spectatorMode(settings);
  node.dataset.delay = String(settings.spectator_delay ?? "");
}

// How the race ends, in words everyone in the room is shown.
function finishText(settings) {
  if (settings.finish === "first") {
    return `The race ends ${settings.finish_grace ?? 30} s after the first to finish (or once everyone is done)`;
  }
  return "The race ends when everyone has finished (or at the time limit)";
}

function winnableText(settings) {
  if (settings.ghost) return "The ghost's own deal: the run you race was played on it (the results give par where it was certified)";
  if (!CERTIFIABLE.has(settings.variant)) {
    return `Any deal: ${variantTitle(settings.variant)} deals are almost never winnable, so the race is about cards banked`;
  }
  if (settings.winnable) return "Winnable deals only: the solver has won every deal dealt here, and the results show par";
  return "Any deal: some cannot be won";
}

function fillSettingsLines(settings) {
  const finish = $("room-finish");
  finish.textContent = finishText(settings);
  finish.dataset.finish = settings.finish || "everyone";
  finish.dataset.grace = String(settings.finish_grace ?? "");
  const winnable = $("room-winnable");
  winnable.textContent = winnableText(settings);
  winnable.dataset.winnable = String(Boolean(settings.winnable));
}

// The host's forms to change the room's settings (who may watch, how the race ends): in
// the lobby, and after a race.
function placeSpectatorsForm(where) {
  const room = state.room;
  const host = room && room.host === state.me?.player_id && !room.settings.daily;
  const shown = host && (where === "lobby" || (where === "results" && room.state === "finished"));
  const target = shown
    ? document.querySelector(`.spectators-slot[data-slot="${where}"]`)
    : document.querySelector(".form-store");
  for (const form of [$("spectators-form"), $("finish-form")]) {
    if (form.parentElement !== target) target.append(form);
  }
  // Alone against a ghost, how the race ends is the ghost's run's: nothing to set.
  $("finish-form").hidden = Boolean(room?.settings?.ghost);
  if (!shown) return;
  const editing = (form, save) => form.contains(document.activeElement) && document.activeElement !== save;
  const mode = $("spectators-mode");
  const delay = $("spectators-delay");
  if (!editing($("spectators-form"), $("spectators-save"))) {
    mode.value = spectatorMode(room.settings);
    delay.value = String(room.settings.spectator_delay ?? 30);
  }
  $("spectators-delay-label").hidden = mode.value !== "delayed";
  delay.disabled = mode.value !== "delayed";
  const finish = $("finish-mode");
  const grace = $("finish-mode-grace");
  if (!editing($("finish-form"), $("finish-save"))) {
    finish.value = room.settings.finish === "first" ? "first" : "everyone";
    grace.value = String(room.settings.finish_grace ?? 30);
  }
  grace.max = String(room.settings.time_limit);
  $("finish-mode-grace-label").hidden = finish.value !== "first";
  grace.disabled = finish.value !== "first";
}

async function saveFinish() {
  const finish = $("finish-mode").value;
  const fields = { finish };
  if (finish === "first") fields.finish_grace = Number($("finish-mode-grace").value);
  const reply = await act("set_settings", fields);
  if (reply) showNotice(`${finishText({ ...state.room.settings, ...fields })}.`);
}

async function saveSpectators() {
  const mode = $("spectators-mode").value;
  const fields = { spectators: mode };
  if (mode === "delayed") fields.spectator_delay = Number($("spectators-delay").value);
  const reply = await act("set_settings", fields);
  if (reply) showNotice(`${spectatorsText({ ...state.room.settings, ...fields })}.`);
}

function renderRoom() {
  const room = state.room;
  $("room-code").textContent = room.code;
  $("room-variant").textContent = variantTitle(room.settings.variant);
  $("room-link").value = roomUrl(room.code);
  $("room-settings").textContent = settingsText(room.settings);
  fillSettingsLines(room.settings);
  fillSpectatorsLine($("room-spectators"), room.settings);
  placeSpectatorsForm("lobby");
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
  // A spectator (one who came while a race ran, say) may take a seat for the next race.
  const seats = room.members.filter((m) => m.role === "player").length < room.settings.max_players;
  $("play-next").hidden = !isSpectator() || !seats || isDailyRoom();
  ready.setAttribute("aria-pressed", String(Boolean(me?.ready)));
  ready.textContent = me?.ready ? "Ready ✓ (click to wait)" : "I'm ready";
  ready.classList.toggle("on", Boolean(me?.ready));
  $("start").hidden = room.host !== state.me.player_id;
  const players = room.members.filter((m) => m.role === "player").length;
  let hint = `The host starts the race, or it starts when every player is ready (${counted(players, "player")} here).`;
  if (isSpectator()) hint = lobbyWatchText(room.settings);
  else if (players < 2) hint = "The host starts the race. With two players or more, it also starts when every player is ready.";
  $("room-hint").textContent = hint;
  const last = $("last-results");
  last.hidden = !state.lastResults;
  if (state.lastResults) {
    const table = resultsTable(state.lastResults);
    const { race, spectators } = state.lastResults;
    const played = state.lastResults.results.some((r) => r.player_id === state.me.player_id);
    if (race && (played || spectators === "live" || spectators === "delayed")) {
      const line = document.createElement("p");
      line.className = "replay-line";
      const link = document.createElement("a");
      link.href = `/replay/${encodeURIComponent(room.code)}/${race}`;
      link.dataset.testid = "last-replay-link";
      link.textContent = "Watch the replay";
      line.append(link);
      table.append(line);
    }
    last.querySelector(".results-host").replaceChildren(table);
  }
}

// "1st", "2nd", "3rd", "4th", "11th", "21st".
function ordinal(n) {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return `${n}${{ 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th"}`;
}

// When a player first reached their count of cards banked (as the results rank them):
// from the snapshot, then from the progress heard since.
function reachedMs(player) {
  return player.firsts?.[player.banked] ?? player.banked_at_ms ?? player.elapsed_ms;
}

// The players in the order they stand: once the race is over, by the results' rank;
// before, the winners by place, then everyone else by cards banked (more first), then by
// when they first reached that count (earlier first), then in joining order.
function standings() {
  const order = state.players.map((player, index) => ({ player, index }));
  if (state.results) {
    const rank = new Map(state.results.map((r) => [r.player_id, r.rank]));
    const of = (p) => rank.get(p.player_id) ?? Number.MAX_SAFE_INTEGER;
    order.sort((a, b) => of(a.player) - of(b.player) || a.index - b.index);
    return order.map(({ player }) => player);
  }
  const won = (p) => p.status === "won";
  order.sort((a, b) => {
    const x = a.player;
    const y = b.player;
    if (won(x) !== won(y)) return won(x) ? -1 : 1;
    if (won(x)) return (x.place ?? 99) - (y.place ?? 99) || x.elapsed_ms - y.elapsed_ms || a.index - b.index;
    return y.banked - x.banked || reachedMs(x) - reachedMs(y) || a.index - b.index;
  });
  return order.map(({ player }) => player);
}

function progressRow(player, standing) {
  const item = document.createElement("li");
  item.className = "progress-row";
  item.dataset.testid = "progress-row";
  item.dataset.playerId = player.player_id;
  item.dataset.banked = String(player.banked);
  item.dataset.moves = String(player.moves);
  item.dataset.status = player.status;
  item.dataset.standing = String(standing);
  item.dataset.place = player.status === "won" && player.place ? String(player.place) : "";
  if (player.player_id === state.me.player_id) item.classList.add("mine");
  const name = document.createElement("span");
  name.className = "p-name";
  name.textContent = player.player_id === state.me.player_id ? `${player.name} (you)` : player.name;
  const bar = document.createElement("span");
  bar.className = "bar";
  bar.setAttribute("role", "progressbar");
  bar.setAttribute("aria-label", player.player_id === state.me.player_id ? "Your cards home" : `${player.name}'s cards home`);
  bar.setAttribute("aria-valuemin", "0");
  bar.setAttribute("aria-valuemax", "52");
  bar.setAttribute("aria-valuenow", String(player.banked));
  bar.setAttribute("aria-valuetext", `${player.banked} of 52 cards home`);
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
  moves.textContent = counted(player.moves, "move");
  const status = document.createElement("span");
  status.className = `status s-${player.status}`;
  status.dataset.testid = "status";
  status.textContent = statusWord(player.status, roomFinish());
  if (player.status === "won" && player.place) status.textContent = `won · ${ordinal(player.place)}`;
  stats.append(banked, moves, status);
  // A racer whose connection dropped: the room waits for them to come back (the resume
  // grace), then counts them out; the others see why their row stands still.
  const member = state.room?.members?.find((m) => m.player_id === player.player_id);
  if (member && !member.connected && player.status === "playing") {
    const away = document.createElement("span");
    away.className = "tag offline";
    away.dataset.testid = "racer-offline";
    away.textContent = "offline";
    stats.append(away);
  }
  item.append(name, bar, stats);
  return item;
}

// This player's game in the race: its status, whether it is over, and where it stands.
function myGame(finished) {
  const me = state.players.find((p) => p.player_id === state.me.player_id);
  const result = state.results?.find((r) => r.player_id === state.me.player_id);
  // The board knows first whether the game plays on or is stuck (an undo out of it);
  // the standings, whether it was resigned, won or ran out of time.
  let status = state.view.status;
  if (me && ["won", "resigned", "out_of_time"].includes(me.status)) status = me.status;
  if (finished && result) status = result.status;
  const undo = Boolean(state.room.settings.undo);
  // Where undo is allowed, a stuck player is not done: they may undo, or resign.
  const over = finished || ["won", "resigned", "out_of_time"].includes(status) || (status === "stuck" && !undo);
  const order = standings();
  const count = order.length;
  const standing = order.findIndex((p) => p.player_id === state.me.player_id) + 1;
  const place = result && status === "won" ? result.rank : me?.place ?? null;
  return { status, over, stuckOpen: status === "stuck" && !over, count, standing, place, rank: result?.rank ?? null };
}

// What the page says of the player's own game: [the news, what comes next].
function myGameText(game, finished) {
  const { status, count, standing } = game;
  let head;
  switch (status) {
    case "won":
      if (count <= 1) head = "You won: all 52 cards are home!";
      else if (game.place) head = `You finished ${ordinal(game.place)} of ${count}: all 52 cards are home!`;
      else head = "All 52 cards are home!";
      break;
    case "stuck":
      head = game.stuckOpen ? "No move left — undo a move or resign." : "No legal move is left: your game is over.";
      break;
    case "resigned":
      head = "You resigned.";
      break;
    case "out_of_time":
      head = roomFinish() === "first" ? "Not finished: the first to finish won, and the race is over." : "Out of time: the race is over.";
      break;
    default:
      head = "";
  }
  let next = "";
  if (finished) {
    if (status !== "won" && count > 1 && game.rank) next = `You placed ${ordinal(game.rank)} of ${count}.`;
  } else if (game.over) {
    const soFar = status === "won" || count <= 1 ? "" : `Your standing so far: ${ordinal(standing)} of ${count}. `;
    next = `${soFar}The others play on: follow them here, or leave the room.`;
  } else if (game.stuckOpen && count > 1) {
    next = `Your standing so far: ${ordinal(standing)} of ${count}.`;
  }
  return [head, next];
}

function setText(node, text) {
  // The same words again would be announced again: leave them be.
  if (node.textContent !== text) node.textContent = text;
}

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
    // Whether a first attempt is ranked is known once the day's board has it (a new
    // account's is not, say): until then the label claims nothing.
    const { attempt } = room.settings;
    const ranked = attemptRanked(room.settings);
    let verdict = "";
    if (ranked === true) verdict = ", ranked";
    if (ranked === false) {
      const why = UNRANKED_SHORT[state.daily.outcome?.unranked];
      verdict = `, not ranked${why && attempt === 1 ? ` (${why})` : ""}`;
    }
    dailyLabel.replaceChildren("daily deal of ", nowrap(room.settings.daily), ` · attempt ${attempt}${verdict}`);
    dailyLabel.dataset.attempt = String(attempt);
    dailyLabel.dataset.ranked = ranked === null ? "" : String(ranked);
  }
  $("time-limit-label").textContent = formatTime((state.timeLimit || room.settings.time_limit) * 1000);
  const raceSpectators = $("race-spectators");
  raceSpectators.hidden = daily;
  if (!daily) fillSpectatorsLine(raceSpectators, room.settings);
  // A race that ends soon after its first win says so from the start.
  const raceFinish = $("race-finish");
  raceFinish.hidden = daily || room.settings.finish !== "first" || room.state === "finished";
  if (!raceFinish.hidden) setText(raceFinish, `${finishText(room.settings)}.`);
  const progress = $("progress");
  progress.replaceChildren(...standings().map((player, i) => progressRow(player, i + 1)));
  progress.hidden = !state.players.length;
  tick();

  const finished = room.state === "finished";
  const playerArea = $("player-area");
  const showBoard = inRace() && state.view && room.state !== "countdown";
  playerArea.hidden = !showBoard;
  if (showBoard) {
    if (!boardView) {
      boardView = new BoardView($("board-host"), {
        onMove: (text) => playMove(text),
        onUndo: undoMove,
        onSay: (text) => say(text),
      });
    }
    const raceKey = `${room.code}:${room.race}`;
    const fresh = boardRace !== raceKey;
    boardRace = raceKey;
    if (boardShown !== state.view) {
      // A new race's deal is laid out where it lies: its cards do not fly in from the
      // last race's board.
      boardView.update(state.view, { slide: !fresh });
      boardShown = state.view;
    }
    fillBoardNote(state.view);
    const game = myGame(finished);
    const done = game.over;
    // While the connection is down nothing on the board can be played: no drag, no click,
    // no key; the board says so over it, under the banner.
    const live = isLive();
    boardView.setEnabled(!done && live);
    playerArea.inert = !live;
    playerArea.setAttribute("aria-disabled", String(!live));
    $("board-offline").hidden = live;
    const back = live && boardWasLive === false;
    boardWasLive = live;
    const active = document.activeElement;
    const lost = !active || active === document.body || Boolean(active.closest("[hidden]")) || !active.offsetParent;
    if (back && !done && lost) boardView.focus(); // the focus the offline board lost comes back
    if (fresh && !done && room.state === "racing") {
      // A new race: the keyboard's focus goes to the board, unless the player is busy
      // elsewhere on the page.
      if (lost) boardView.focus();
      autoPlaySoon();
    }
    const undo = $("undo");
    undo.hidden = !room.settings.undo || done;
    undo.disabled = !state.view.can_undo || done || !live;
    $("resign").hidden = done;
    $("resign").disabled = !live;
    // A player whose game is over need not wait on a frozen board.
    $("leave-game").hidden = !done || finished || daily;
    // The banner stays in the page (empty while the game plays on), so that a screen
    // reader hears each change of it.
    const banner = $("game-status");
    banner.hidden = false;
    banner.dataset.status = game.status;
    banner.dataset.over = String(done);
    const [head, next] = myGameText(game, finished);
    setText($("game-status-text"), head);
    setText($("game-status-next"), next);
    boardView.fit(); // what is above the board may have changed its height
  } else {
    $("game-status").hidden = true;
    $("leave-game").hidden = true;
  }

  const spectating = isSpectator() || (isPlayer() && !inRace() && room.state !== "countdown");
  const boards = $("spectator-boards");
  boards.hidden = !spectating || !Object.keys(state.boards).length;
  if (!boards.hidden) renderSpectatorBoards(boards);
  const note = $("spectator-note");
  const noteText = spectating && room.state === "racing" ? watchingText(room.settings) : "";
  note.hidden = !noteText;
  if (note.textContent !== noteText) note.textContent = noteText;

  const results = $("results");
  results.hidden = !finished;
  if (finished && state.results) {
    results
      .querySelector(".results-host")
      .replaceChildren(resultsTable({ results: state.results, seed: state.seed, par: state.par }));
    fillReplayLink(room);
    $("rematch").hidden = !isPlayer() || daily;
    $("leave-race").hidden = daily;
    $("daily-back").hidden = !daily;
    $("results-title").textContent = daily ? "Your result" : "Results";
    const outcome = $("daily-outcome");
    const shown = daily && state.daily.outcome;
    outcome.hidden = !shown;
    if (shown) fillOutcome(outcome, state.daily.outcome);
  }
  placeSpectatorsForm(finished && state.results ? "results" : "none");
}

// The link to the race's replay (replay.html): always for its players; for spectators
// when the room showed its boards as the race ran (live or delayed), since only then is
// the replay public. No daily attempt is kept for a replay.
function fillReplayLink(room) {
  const line = $("replay-line");
  const mode = state.raceSpectators || spectatorMode(room.settings);
  const publicRace = mode === "live" || mode === "delayed";
  const played = state.results?.some((r) => r.player_id === state.me?.player_id);
  const shown = !isDailyRoom() && Boolean(room.race) && (played || publicRace);
  line.hidden = !shown;
  if (!shown) return;
  const link = $("replay-link");
  link.href = `/replay/${encodeURIComponent(room.code)}/${room.race}`;
  line.dataset.public = String(publicRace);
  $("replay-note").textContent = publicRace
    ? "Every move of every player, step by step; anyone with the link may watch it."
    : "Every move of every player, step by step; only the race's players may watch it.";
}

// Rainbow Canfield's lead rank in words, over the board.
function fillBoardNote(view) {
  const note = $("board-note");
  const rainbow = view.variant === "rainbow-canfield";
  note.hidden = !rainbow;
  if (!rainbow) return;
  const lead = view.base_rank;
  const below = { A: "K", K: "Q", Q: "J", J: "10" }[lead] || String(Number(lead) - 1);
  // (from an Ace the foundations go up to a King and never wrap)
  const wrap = lead === "A" ? "" : ", a King followed by an Ace";
  const text = `This deal's lead rank is ${rankWord(lead)}: each foundation starts with ${aRank(lead)} and goes up to ${aRank(below === "1" ? "A" : below)}${wrap}.`;
  if (note.textContent !== text) note.textContent = text;
}

// What a screen reader hears of the board (a pick-up, a put-back).
function say(text) {
  const node = $("board-say");
  node.textContent = "";
  // A change of the text in the next frame is announced even when it is the same words.
  requestAnimationFrame(() => {
    node.textContent = text;
  });
}

function undoMove() {
  if (!boardView || boardView.busy || !isLive()) return;
  if (!state.room?.settings.undo || !state.view?.can_undo) {
    showError({ message: state.room?.settings.undo ? "There is no move to undo." : "Undo is off in this game." });
    return;
  }
  playMove("u");
}

// What a spectator in the lobby will see of the next race, as the room's setting allows
// (only a live room shows the boards from the start).
function lobbyWatchText(settings) {
  switch (spectatorMode(settings)) {
    case "delayed":
      return `You are watching: once the race starts, its progress shows at once and the boards ${settings.spectator_delay} s late.`;
    case "after":
      return "You are watching: once the race starts, its progress shows as it goes, and the boards once the race is over.";
    default:
      return "You are watching: the boards appear when the race starts.";
  }
}

// What a spectator sees of a running race, as the room's setting allows.
function watchingText(settings) {
  switch (spectatorMode(settings)) {
    case "delayed":
      return `This room shows spectators each board ${settings.spectator_delay} s after it was played, and a player's board only once the others have seen its cards (until then, an earlier one). The progress above is live; each board's counts are the board's own, as late as it.`;
    case "after":
      return "This room shows spectators the boards once the race is over: until then, the progress only.";
    default:
      return "";
  }
}

// Each player's board, headed by its counts. A delayed room's board is the one of some
// seconds ago (or older, docs/protocol.md "boards"), so while the race runs its head gives
// the board's own counts and status, as of then, never the progress heard since: the
// counts agree with the cards shown, and the head holds back no less than the board.
function renderSpectatorBoards(host) {
  const panels = [];
  const settings = state.room?.settings;
  const held = Boolean(settings) && spectatorMode(settings) === "delayed" && state.room.state === "racing";
  for (const player of state.players) {
    const view = state.boards[player.player_id];
    if (!view) continue;
    const panel = document.createElement("div");
    panel.className = "spectator-board";
    panel.dataset.testid = "spectator-board";
    panel.dataset.playerId = player.player_id;
    panel.dataset.moves = String(view.moves); // the board's own count: a delayed board's lags
    panel.dataset.held = String(held);
    const head = document.createElement("div");
    head.className = "sb-head";
    const name = document.createElement("b");
    name.textContent = player.name;
    const stats = document.createElement("span");
    stats.className = "muted";
    stats.dataset.testid = "spectator-board-stats";
    const shown = held
      ? { banked: view.banked ?? 0, moves: view.moves ?? 0, status: view.status || "playing" }
      : { banked: player.banked, moves: player.moves, status: player.status };
    const parts = [`${shown.banked}/52 banked`, counted(shown.moves, "move"), statusWord(shown.status, roomFinish())];
    if (held) parts.push(`as of ${settings.spectator_delay} s ago or earlier`);
    stats.textContent = parts.join(" · ");
    head.append(name, stats);
    const wrap = document.createElement("div");
    wrap.className = "board-host small";
    wrap.append(drawBoard(view));
    panel.append(head, wrap);
    panels.push(panel);
  }
  host.replaceChildren(...panels);
}

function resultsTable({ results, seed, par }) {
  const wrap = document.createElement("div");
  const table = document.createElement("table");
  table.className = "results-table";
  table.innerHTML =
    "<thead><tr><th>#</th><th>Player</th><th>Banked</th><th>Moves</th><th>Time</th><th>Status</th></tr></thead>";
  const body = document.createElement("tbody");
  const ranked = [...results].sort((a, b) => a.rank - b.rank);
  for (const result of ranked) {
    const row = document.createElement("tr");
    row.dataset.testid = "result-row";
    row.dataset.playerId = result.player_id;
    row.dataset.rank = String(result.rank);
    const cells = [
      String(result.rank),
      result.name,
      `${result.banked}/52`,
      String(result.moves),
      formatTenths(result.time_ms), // to the tenth, as the terminal and the daily boards give it
      statusWord(result.status, roomFinish()),
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
  wrap.append(table);
  if (typeof par === "number") {
    // A winnable room's deal: the solver's winning line is this long.
    const parLine = document.createElement("p");
    parLine.className = "par-line";
    parLine.dataset.testid = "par";
    parLine.dataset.par = String(par);
    parLine.textContent = `Par: ${counted(par, "move")} — the solver's winning line`;
    wrap.append(parLine);
  }
  wrap.append(seedLine);
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

// In a first-to-finish race a game still being played at the end did not finish: it did
// not run out of the time limit.
function statusWord(status, finish = null) {
  if (status === "out_of_time" && finish === "first") return "not finished";
  return STATUS_WORDS[status] || status.replaceAll("_", " ");
}

function roomFinish() {
  return state.room?.settings?.finish ?? null;
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
  if (date && date > dailyToday()) {
    notOutYet(date);
    return;
  }
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
    if (load !== daily.loads) return;
    // A day not begun yet on the server's clock (UTC), though not on this one's.
    if (date && error.code === "bad_field" && /not started yet/.test(error.message || "")) notOutYet(date);
    else showError(error);
    return;
  }
  const best = await bestLoad;
  if (load !== daily.loads) return;
  daily.best = best;
  if (!state.room) render();
}

// A day picked on the daily page that has not begun (UTC): said plainly, and the board
// goes back to today's.
function notOutYet(date) {
  const message = `The daily for ${date} is not out yet: each day's deal comes out at midnight UTC.`;
  showError({ code: "not_out_yet", message }, { plain: true });
  state.daily.date = null;
  $("daily-date").value = dailyToday(); // (the field keeps the focus: render leaves it be)
  setUrl(dailyUrl());
  if (!state.room) render();
  loadDaily();
}

// Why an attempt is not ranked, in a few words (the race's label).
const UNRANKED_SHORT = {
  new_account: "new account",
  address_limit: "your network's limit",
  guest: "guest",
};

// Whether the daily attempt of `settings` is ranked: true or false once the day's board
// says (a later attempt never is), null while it is not known.
function attemptRanked(settings) {
  if (settings.attempt > 1) return false;
  const outcome = state.daily.outcome;
  const same = outcome && outcome.date === settings.daily && outcome.variant === settings.variant && outcome.attempt === settings.attempt;
  return same ? outcome.ranked : null;
}

// The day's board of a daily attempt just over, with the attempt's entry in its history:
// the results are recorded as the race ends, so the board may not have it at once.
async function boardWithAttempt(outcome) {
  let board = null;
  for (let tries = 0; tries < 5; tries += 1) {
    const reply = await request("get_leaderboard", { variant: outcome.variant, date: outcome.date, limit: state.daily.top });
    board = reply.board;
    const entry = (board.history || []).find(
      (h) => h.date === outcome.date && h.variant === outcome.variant && h.attempt === outcome.attempt,
    );
    if (entry || state.daily.outcome !== outcome) return { board, entry };
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  return { board, entry: null };
}

// A daily attempt is over: note how it went, then find its place on the day's board.
async function dailyFinished(settings, results) {
  const me = results.find((r) => r.player_id === state.me?.player_id);
  const outcome = {
    date: settings.daily,
    variant: settings.variant,
    attempt: settings.attempt,
    // A first attempt's rank is the server's to say (a new account's is not ranked).
    ranked: settings.attempt === 1 ? null : false,
    unranked: settings.attempt === 1 ? null : "later_attempt",
    held: false,
    flag: null,
    result: me || null,
    rank: null,
    count: null,
  };
  state.daily.outcome = outcome;
  state.daily.variant = settings.variant;
  state.daily.date = null;
  try {
    const { board, entry } = await boardWithAttempt(outcome);
    if (state.daily.outcome !== outcome) return;
    // The attempt as the board keeps it: a new account's first one is not ranked yet.
    if (entry) {
      outcome.ranked = Boolean(entry.ranked);
      outcome.unranked = entry.unranked || null;
      outcome.held = Boolean(entry.ranked && entry.flag && !entry.kept);
      outcome.flag = entry.flag || null;
    }
    outcome.rank = outcome.ranked && board.you ? board.you.rank : null;
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
    ? `${r.status === "won" ? "You won" : `You ${statusWord(r.status)}`}: ${r.banked}/52 banked, ${counted(r.moves, "move")}, ${formatTenths(r.time_ms)}.`
    : "Your attempt is over.";
  if (outcome.ranked === null) {
    return [head, ["Whether it is ranked shows once the day's board has it."]];
  }
  if (!outcome.ranked && outcome.unranked === "new_account") {
    return [head, ["Not ranked: a new account's attempts are ranked from its second day (UTC). It is kept in your history."]];
  }
  if (!outcome.ranked && outcome.unranked === "address_limit") {
    return [head, ["Not ranked: enough accounts on your network (your address) have a ranked attempt at today's deal already. It is kept in your history."]];
  }
  if (outcome.ranked && outcome.held) {
    const why = String(outcome.flag || "").startsWith("address:")
      ? "another account on your network (your address) played today's deal too, before or during your attempt"
      : "it was played faster than people play";
    return [head, [`Ranked once reviewed: ${why}, so an operator looks at it before it takes its place on the board. It is kept in your history.`]];
  }
  if (!outcome.ranked && outcome.attempt === 1) {
    return [head, ["Not ranked: this attempt is kept in your history, off the board."]];
  }
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
  node.dataset.ranked = outcome.ranked === null ? "" : String(outcome.ranked);
  node.dataset.attempt = String(outcome.attempt);
  node.dataset.rank = outcome.rank === null ? "" : String(outcome.rank);
  const first = document.createElement("div");
  first.textContent = head;
  const second = document.createElement("div");
  second.className = "verdict";
  second.dataset.testid = "daily-verdict";
  second.append(...verdict);
  node.replaceChildren(first, second);
  node.classList.toggle("ranked", outcome.ranked === true);
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
    const due = board.reveal_ms && board.reveal_ms <= Date.now();
    if (!at) parts.push("The deal's seed is revealed once the day is over (UTC).");
    else if (due) parts.push(`The deal's seed and nonce are revealed at ${at} UTC, once no attempt of the day can still be running: any moment now, and the board shows them by itself.`);
    else parts.push(`The deal's seed and nonce are revealed at ${at} UTC, once no attempt of the day can still be running.`);
    revealSoon(board);
  }
  line.replaceChildren(...parts);
}

// The board asks again once its seed is due (and every minute after, while it is shown
// and the seed is still held back by an attempt running): no reload needed to see it.
let revealTimer = null;
function revealSoon(board) {
  clearTimeout(revealTimer);
  revealTimer = null;
  const wait = board.reveal_ms - Date.now();
  if (!(wait < 86_400_000)) return;
  revealTimer = setTimeout(() => {
    revealTimer = null;
    if (document.body.dataset.screen === "daily" && state.daily.board === board) loadDaily();
  }, Math.max(wait + 1000, 60_000 * (wait <= 0)));
}

// What the board says of today's attempts of a player who has none on it.
function unrankedToday(board, today, variant) {
  const todays = (board.history || []).filter((h) => h.date === today && h.variant === variant);
  const ranked = todays.find((h) => h.ranked);
  if (ranked && ranked.flag && !ranked.kept) return "Your ranked attempt waits for an operator's review before it takes its place on the board.";
  if (ranked) return "Your ranked attempt is still being recorded.";
  const first = todays.find((h) => h.attempt === 1) || todays[0];
  if (first?.unranked === "new_account") {
    return "Your attempt today is not ranked: a new account's attempts are ranked from its second day (UTC). It is kept in your history.";
  }
  if (first?.unranked === "address_limit") {
    return "Your attempt today is not ranked: enough accounts on your network (your address) have a ranked attempt at today's deal already.";
  }
  return "Your attempts today are not ranked. They are kept in your history.";
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
  const guest = !isAccount();
  const newAccount = Boolean(board?.ranked_from && board.ranked_from > today);
  play.dataset.ranked = String(!played && !guest && !newAccount);
  let note = played
    ? `You have played today's ${shortVariant(daily.variant)} deal: another attempt is shown but not ranked.`
    : newAccount
      ? `Your account is new: its attempts are ranked from ${board.ranked_from} (UTC). Today's is kept in your history, not ranked. The clock starts at once.`
      : "Your first attempt of the day is ranked. The clock starts at once.";
  if (guest) note = "The daily challenge is played by accounts: claim your name or log in below.";
  $("daily-play-note").textContent = note;
  const box = $("daily-account");
  box.hidden = !guest;
  box.dataset.refused = String(guest && daily.needsAccount);
  const why = guest
    ? daily.needsAccount
      ? `Only accounts play the daily deal, so that each ranked attempt is a person's first. Claim the name ${state.me.name} with a password, or log in to your account, then play.`
      : `The daily deal is played by accounts, so that each ranked attempt is a person's first. Claim the name ${state.me.name} with a password, or log in to your account.`
    : "";
  const whyLine = $("daily-account-why");
  if (whyLine.textContent !== why) whyLine.textContent = why;

  const last = $("daily-last");
  const outcome = daily.outcome;
  last.hidden = !outcome || outcome.variant !== daily.variant;
  if (!last.hidden) fillOutcome(last, outcome);

  const fresh = board && board.variant === daily.variant;
  $("daily-board-date").textContent = fresh ? `· ${board.date}${board.date === today ? " (today)" : ""}` : "";
  $("daily-count").textContent = fresh
    ? counted(board.count, "ranked player")
    : "loading…";
  const top = fresh ? board.top : [];
  const topTable = $("daily-top");
  topTable.querySelector("tbody").replaceChildren(...boardRows(top, "board-row"));
  topTable.hidden = !top.length;
  const empty = $("daily-empty");
  empty.hidden = !fresh || top.length > 0;
  // (a player's own attempt that is not ranked is said below: "no one" would deny it)
  empty.textContent =
    board?.date !== today
      ? "No ranked attempt at this deal."
      : played
        ? "No ranked attempt at today's deal yet."
        : "No one has a ranked attempt at today's deal yet: be the first.";

  const you = $("daily-you");
  const mineShown = fresh && board.you && top.some((e) => e.player_id === board.you.player_id);
  you.dataset.rank = fresh && board.you ? String(board.you.rank) : "";
  if (!fresh) {
    you.textContent = "";
  } else if (board.you) {
    you.textContent = `Your rank: #${board.you.rank} of ${board.count}`;
  } else if (board.date === today) {
    you.textContent = played ? unrankedToday(board, today, daily.variant) : `You have not played today's ${shortVariant(daily.variant)} deal yet.`;
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
  // The count, and its words after it: "1 day played in a row", "2 days won in a row".
  const streakLabels = {
    played: "played in a row",
    won: "won in a row",
    best_played: "played in a row, at best",
    best_won: "won in a row, at best",
  };
  for (const [key, words] of Object.entries(streakLabels)) {
    const id = `streak-${key.replace("_", "-")}`;
    const n = Number(streaks[key]) || 0;
    $(id).textContent = String(n);
    $(`${id}-label`).textContent = `${plural(n, "day")} ${words}`;
  }

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
    if (error.code === "account_required") {
      // A guest: the controls to become an account are right here.
      state.daily.needsAccount = true;
      render();
      $("daily-account").scrollIntoView({ block: "nearest" });
      $("claim-password").focus();
    } else {
      showError(error);
    }
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
// Which room this browser's player is in, for the replay page (a page of its own, with no
// connection): a ghost race cannot start from a room (the server keeps the player in it),
// so that page offers none meanwhile. Kept fresh while this page is open; the mark of a
// page closed in a room goes stale (replay.js ROOM_MARK_FRESH_MS) after the server's seat
// grace, when the room has let the player go.
const ROOM_MARK_KEY = "solrace.room";
const ROOM_MARK_EVERY_MS = 20_000;
let roomMark = { code: undefined, at: 0 };

function markRoom() {
  const code = state.room?.code || null;
  const now = Date.now();
  if (code === roomMark.code && (!code || now - roomMark.at < ROOM_MARK_EVERY_MS)) return;
  roomMark = { code, at: now };
  try {
    if (code) localStorage.setItem(ROOM_MARK_KEY, JSON.stringify({ code, at: now }));
    else localStorage.removeItem(ROOM_MARK_KEY);
  } catch {
    // (a storage that refuses: the replay page then offers its ghost races as ever)
  }
}

function tick() {
  const now = performance.now();
  markRoom();
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
  const left = $("finish-left");
  const ending = room && room.state === "racing" && state.endAt !== null;
  left.hidden = !ending;
  if (ending) {
    const ms = Math.max(0, state.endAt - now);
    left.dataset.leftMs = String(Math.round(ms));
    $("finish-left-time").textContent = formatTime(Math.ceil(ms / 1000) * 1000);
  }
  // Offline, or waiting for the snapshot that follows a reconnect, the clock holds: the
  // server's stands still while it is down, and the snapshot says where it is.
  if (isLive()) state.heldAt = null;
  else if (state.heldAt == null) state.heldAt = now;
  if (room && state.startAt !== null) {
    const end =
      room.state === "finished" && state.finishedAt !== null ? state.finishedAt : (state.heldAt ?? now);
    const limit = (state.timeLimit || room.settings.time_limit) * 1000;
    $("elapsed").textContent = formatTime(Math.min(limit, end - state.startAt));
  } else if (room) {
    $("elapsed").textContent = "0:00";
  }
}

// -- accounts --------------------------------------------------------------------------------

// A refusal in plain words: the sentence a person reads, whatever the code.
function sentence(text) {
  const line = String(text || "").trim();
  if (!line) return "";
  const first = line[0].toUpperCase() + line.slice(1);
  return /[.!?]$/.test(first) ? first : `${first}.`;
}

function waitText(error) {
  const seconds = Math.ceil(Number(error.retry_after) || 0);
  return seconds > 0 ? ` Try again in ${seconds} s.` : " Try again later.";
}

function accountErrorText(error, during) {
  switch (error.code) {
    case "bad_password":
      return sentence(error.message); // the server's rule: 8 to 128 characters...
    case "wrong_password":
      return during === "login" ? "Wrong account name or password." : "That is not the account's current password.";
    case "name_taken":
      return `An account already has the name ${state.me?.name || "you chose"}, or one that looks like it: change your display name, then claim the new one.`;
    case "already_an_account":
      return "This name is an account already.";
    case "not_an_account":
      return "You play as a guest: claim your name first.";
    case "already_in_room":
      return "Leave your room first, then delete the account.";
    case "bad_name":
      return `That is no account name: ${error.message}.`;
    case "over_budget":
    case "rate_limited":
      return `Too many tries for now.${waitText(error)}`;
    case "offline":
    case "closed":
      return "Not connected to the server: wait until the connection is back.";
    default:
      return errorText(error, { during });
  }
}

function formMessage(testid, text) {
  const node = $(testid);
  node.textContent = text || "";
  node.hidden = !text;
}

function accountMessage(text) {
  const node = $("account-message");
  node.textContent = text || "";
}

// Run a form's request with its submit button held down, and its refusal shown in it.
async function submitting(form, errorId, during, action) {
  const button = form.querySelector('button[type="submit"]');
  formMessage(errorId, "");
  button.disabled = true;
  try {
    return await action();
  } catch (error) {
    formMessage(errorId, accountErrorText(error, during));
    return null;
  } finally {
    button.disabled = false;
  }
}

// An `account` reply: the account's name and when it was made, and the token to come back
// with from now on (the ones before may have stopped working).
function tookAccount(reply) {
  state.me = { ...state.me, token: reply.token, account: { name: reply.name, created_ms: reply.created_ms } };
  if (state.conn) state.conn.setToken(reply.token);
  takeIdentity(state.me);
}

async function claimName(form) {
  const password = $("claim-password").value;
  if (password !== $("claim-password2").value) {
    formMessage("claim-error", "The two passwords differ: type the same password twice.");
    return;
  }
  const reply = await submitting(form, "claim-error", "claim", () => request("claim", { password }));
  if (!reply) return;
  form.reset();
  tookAccount(reply);
  state.daily.needsAccount = false;
  render();
  // The board says, for an account, from which day its attempts rank (a new one's not today).
  if (document.body.dataset.screen === "daily") loadDaily();
  const text = `${reply.name} is your account now: log in with it from any browser.`;
  accountMessage(text);
  showNotice(text);
}

// Log in on a connection of its own: the page moves over to it once the server welcomes
// the account, and stays as it was when the login is refused.
async function logIn(form) {
  const account = $("login-name").value.trim();
  const password = $("login-password").value;
  if (!account) return;
  const welcome = await submitting(form, "login-error", "login", async () => {
    const conn = newConnection();
    try {
      const welcomed = await conn.open({ account, password });
      return { conn, welcomed };
    } catch (error) {
      conn.close();
      throw error;
    }
  });
  if (!welcome) return;
  form.reset();
  const { conn, welcomed } = welcome;
  const before = state.conn;
  state.conn = conn;
  if (before) before.close();
  state.me = null;
  state.room = null;
  clearRace();
  setConnStatus(conn.status);
  state.daily.needsAccount = false;
  hideBanner();
  $("name-note").hidden = true;
  onWelcome(welcomed);
  showNotice(`Logged in as ${welcomed.name}.`);
}

function logOut() {
  const name = state.me?.account?.name || state.me?.name || state.identity.name;
  leaveIdentity(name, `Logged out of ${name}: this browser no longer keeps the account. Log in again, or play as a guest.`);
  $("login-name").value = name;
}

async function revokeTokens() {
  const button = $("revoke-tokens");
  button.disabled = true;
  try {
    tookAccount(await request("revoke_tokens"));
    accountMessage("Every other browser and device is logged out of the account; this one stays logged in.");
  } catch (error) {
    accountMessage(accountErrorText(error, "revoke"));
  } finally {
    button.disabled = false;
  }
}

async function changePassword(form) {
  const old = $("password-old").value;
  const fresh = $("password-new").value;
  if (fresh !== $("password-new2").value) {
    formMessage("password-error", "The two new passwords differ: type the same password twice.");
    return;
  }
  const reply = await submitting(form, "password-error", "password", () => request("change_password", { old, new: fresh }));
  if (!reply) return;
  tookAccount(reply);
  form.reset();
  toggleAccountForm("password-form", false);
  accountMessage("Password changed. Every other browser and device is logged out of the account; this one stays logged in.");
}

async function deleteAccount(form) {
  const password = $("delete-password").value;
  const name = state.me?.account?.name || state.me?.name;
  const conn = state.conn;
  const reply = await submitting(form, "delete-error", "delete", () => request("delete_account", { password }));
  if (!reply) return;
  // The server closes the connection next: it is let go here first.
  if (conn !== state.conn) return;
  form.reset();
  toggleAccountForm("delete-form", false);
  leaveIdentity("", `The account ${name} is deleted. Its daily board entries stay on the boards, anonymised as “deleted player”.`);
}

function toggleAccountForm(testid, open) {
  const form = $(testid);
  const button = $(testid === "password-form" ? "change-password" : "delete-account");
  form.hidden = !open;
  button.setAttribute("aria-expanded", String(open));
  if (!open) {
    form.reset();
    formMessage(testid === "password-form" ? "password-error" : "delete-error", "");
  } else {
    form.querySelector("input:not([hidden])").focus();
  }
}

function renderAccount() {
  const me = state.me;
  if (!me) return;
  const account = me.account;
  $("account-guest").hidden = Boolean(account);
  $("account-owner").hidden = !account;
  if (!account) {
    $("password-form").hidden = true;
    $("delete-form").hidden = true;
    return;
  }
  const since = account.created_ms ? new Date(account.created_ms).toISOString().slice(0, 10) : null;
  $("account-status").textContent = `Logged in to the account ${account.name}${since ? `, made on ${since} (UTC)` : ""}.`;
  for (const node of document.querySelectorAll('[data-role="account-name"]')) node.textContent = account.name;
  for (const node of $("password-form").querySelectorAll('[data-role="username"]')) node.value = account.name;
}

// -- wiring ----------------------------------------------------------------------------------

function formValues(form) {
  const data = new FormData(form);
  const values = {
    variant: data.get("variant"),
    max_players: Number(data.get("max_players")),
    countdown: Number(data.get("countdown")),
    time_limit: Number(data.get("time_limit")),
    spectators: data.get("spectators"),
    undo: data.get("undo") === "on",
    finish: data.get("finish") === "first" ? "first" : "everyone",
  };
  if (data.get("ghost")) values.ghost = String(data.get("ghost"));
  if (values.spectators === "delayed") values.spectator_delay = Number(data.get("spectator_delay"));
  if (values.finish === "first") values.finish_grace = Number(data.get("finish_grace"));
  // Checked, the box leaves the choice to the server's default (winnable deals, unless its
  // operator turned them off); unchecked, it asks for any deal.
  if (CERTIFIABLE.has(values.variant) && data.get("winnable") !== "on") values.winnable = false;
  return values;
}

// The create form's game: its description, its own settings, and the choice kept for
// the next visit.
function syncVariantChoice() {
  const variant = $("variant").value;
  const info = GAME_INFO[variant];
  $("variant-description").textContent = info ? info.description : "";
  const certifiable = CERTIFIABLE.has(variant);
  $("winnable-label").hidden = !certifiable;
  $("winnable-setting").disabled = !certifiable;
  $("winnable-hint").hidden = !certifiable;
}

function rememberVariant(variant) {
  try {
    localStorage.setItem(CREATE_VARIANT_KEY, variant);
  } catch {
    // A browser that keeps nothing offers the default next time.
  }
}

function rememberedVariant() {
  let variant = null;
  try {
    variant = localStorage.getItem(CREATE_VARIANT_KEY);
  } catch {
    variant = null;
  }
  return VARIANTS.some(([id]) => id === variant) ? variant : DEFAULT_VARIANT;
}

// The help panel: a game's rules in plain words, over the page.
let rulesOpener = null;

function openRules(variant, opener) {
  const info = GAME_INFO[variant];
  if (!info) return;
  const panel = $("rules-panel");
  panel.dataset.variant = variant;
  $("rules-title").textContent = `How to play ${variantTitle(variant)}`;
  $("rules-description").textContent = info.description;
  const fill = (list, rules) => {
    const items = [];
    for (const [term, text] of rules) {
      const dt = document.createElement("dt");
      dt.textContent = term;
      const dd = document.createElement("dd");
      dd.textContent = text;
      items.push(dt, dd);
    }
    list.replaceChildren(...items);
  };
  fill($("rules-list"), info.auto ? [...info.rules, ["Auto-move", info.auto]] : info.rules);
  fill($("rules-common"), COMMON_RULES);
  rulesOpener = opener || null;
  if (!panel.open) panel.showModal();
  $("rules-close").focus();
}

function wireRules() {
  const panel = $("rules-panel");
  $("how-to-play").addEventListener("click", (event) => openRules($("variant").value, event.currentTarget));
  $("race-how-to-play").addEventListener("click", (event) => {
    if (state.room) openRules(state.room.settings.variant, event.currentTarget);
  });
  $("rules-close").addEventListener("click", () => panel.close());
  // A click on the backdrop (outside the panel's box) closes it too.
  panel.addEventListener("click", (event) => {
    if (event.target === panel) panel.close();
  });
  panel.addEventListener("close", () => {
    if (rulesOpener && document.contains(rulesOpener)) rulesOpener.focus();
    rulesOpener = null;
  });
}

function wireCreateForm() {
  const select = $("variant");
  select.value = rememberedVariant();
  select.addEventListener("change", () => {
    rememberVariant(select.value);
    syncVariantChoice();
  });
  syncVariantChoice();
  const finish = $("finish-setting");
  const graceLabel = $("finish-grace-label");
  const grace = $("finish-grace");
  const syncFinish = () => {
    graceLabel.hidden = finish.value !== "first";
    grace.disabled = finish.value !== "first";
  };
  finish.addEventListener("change", syncFinish);
  syncFinish();
  // The grace runs no longer than the race.
  const limit = $("time-limit");
  const syncLimit = () => {
    grace.max = limit.value;
  };
  limit.addEventListener("change", syncLimit);
  syncLimit();

  const form = $("finish-form");
  const mode = $("finish-mode");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    saveFinish();
  });
  mode.addEventListener("change", () => {
    const first = mode.value === "first";
    $("finish-mode-grace-label").hidden = !first;
    $("finish-mode-grace").disabled = !first;
    if (form.reportValidity()) saveFinish();
  });
  $("finish-mode-grace").addEventListener("change", () => {
    if (form.reportValidity()) saveFinish();
  });
}

// The delay's field is there (and checked) only for a delayed room.
function syncDelayField(select, label, input) {
  const delayed = select.value === "delayed";
  label.hidden = !delayed;
  input.disabled = !delayed;
}

function wireAccounts() {
  $("claim-form").addEventListener("submit", (event) => {
    event.preventDefault();
    claimName(event.target);
  });
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    logIn(event.target);
  });
  $("password-form").addEventListener("submit", (event) => {
    event.preventDefault();
    changePassword(event.target);
  });
  $("delete-form").addEventListener("submit", (event) => {
    event.preventDefault();
    deleteAccount(event.target);
  });
  $("change-password").addEventListener("click", () => {
    accountMessage("");
    toggleAccountForm("password-form", $("password-form").hidden);
  });
  $("password-cancel").addEventListener("click", () => toggleAccountForm("password-form", false));
  $("delete-account").addEventListener("click", () => {
    accountMessage("");
    toggleAccountForm("delete-form", $("delete-form").hidden);
  });
  $("delete-cancel").addEventListener("click", () => toggleAccountForm("delete-form", false));
  $("logout").addEventListener("click", logOut);
  $("revoke-tokens").addEventListener("click", revokeTokens);
}

function wireSpectators() {
  const create = [$("spectators"), $("spectator-delay-label"), $("spectator-delay")];
  create[0].addEventListener("change", () => syncDelayField(...create));
  syncDelayField(...create);

  const form = $("spectators-form");
  const mode = $("spectators-mode");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    saveSpectators();
  });
  // A new choice applies at once (a delay, once it is typed: on Enter, or leaving the field).
  mode.addEventListener("change", () => {
    syncDelayField(mode, $("spectators-delay-label"), $("spectators-delay"));
    if (form.reportValidity()) saveSpectators();
  });
  $("spectators-delay").addEventListener("change", () => {
    if (form.reportValidity()) saveSpectators();
  });
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
    $("name-note").hidden = true;
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
    rememberVariant($("variant").value);
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
  $("leave-game").addEventListener("click", leave);
  $("rematch").addEventListener("click", () => act("rematch"));
  $("undo").addEventListener("click", undoMove);

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

  $("watch-now").addEventListener("click", () => {
    const offer = state.offer;
    if (offer) joinRoom(offer.code, "spectator");
  });
  $("watch-dismiss").addEventListener("click", () => {
    state.offer = null;
    renderOffer();
  });
  $("play-next").addEventListener("click", async () => {
    const room = state.room;
    if (!room) return;
    const code = room.code;
    const reply = await act("leave_room");
    if (!reply) return;
    leftRoom();
    joinRoom(code, "player");
  });

  wirePrefs();
  wireKeys();
  wireCreateForm();
  wireRules();
  wireDaily();
  wireAccounts();
  wireSpectators();
  setInterval(tick, 250);
}

// -- settings: colours, sounds, auto-move -----------------------------------------------------

const darkQuery = typeof window.matchMedia === "function" ? window.matchMedia("(prefers-color-scheme: dark)") : null;

function darkNow() {
  if (state.prefs.theme === "system") return Boolean(darkQuery?.matches);
  return state.prefs.theme === "dark";
}

// The page's colours: the system's, unless the player chose (html's data-theme).
function applyTheme() {
  const root = document.documentElement;
  if (state.prefs.theme === "system") delete root.dataset.theme;
  else root.dataset.theme = state.prefs.theme;
  const dark = darkNow();
  root.dataset.scheme = dark ? "dark" : "light";
  const toggle = $("theme-toggle");
  toggle.setAttribute("aria-pressed", String(dark));
  toggle.title = dark ? "Light colours" : "Dark colours";
  $("theme-setting").value = state.prefs.theme;
}

function wirePrefs() {
  applyTheme();
  if (darkQuery) {
    const follow = () => applyTheme();
    if (typeof darkQuery.addEventListener === "function") darkQuery.addEventListener("change", follow);
  }
  $("theme-toggle").addEventListener("click", () => {
    // The switch picks the other scheme, and keeps it until changed again.
    state.prefs.theme = darkNow() ? "light" : "dark";
    savePrefs();
    applyTheme();
  });
  $("theme-setting").addEventListener("change", (event) => {
    state.prefs.theme = event.target.value;
    savePrefs();
    applyTheme();
  });
  const checks = [
    ["automove-setting", "autoMove"],
    ["autofinish-setting", "autoFinish"],
    ["sound-setting", "sound"],
  ];
  for (const [testid, key] of checks) {
    const box = $(testid);
    box.checked = state.prefs[key];
    box.addEventListener("change", () => {
      state.prefs[key] = box.checked;
      savePrefs();
      if (key === "sound" && box.checked) playSound("move"); // the first sound needs a click
      if (key !== "sound") autoPlaySoon();
    });
  }
  // A click outside the settings closes them; so does Escape.
  const prefs = $("prefs");
  document.addEventListener("click", (event) => {
    if (prefs.open && !prefs.contains(event.target)) prefs.open = false;
  });
  prefs.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && prefs.open) {
      prefs.open = false;
      $("prefs-open").focus();
    }
  });
}

// D draws and U undoes on the race screen wherever the focus is, but in a field; on the
// board itself the board's own keys answer (board.js).
function wireKeys() {
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) return;
    if (document.body.dataset.screen !== "race" || !boardView || $("player-area").hidden) return;
    const target = event.target;
    if (target instanceof Element && target.closest("input, select, textarea, dialog, details, [contenteditable]")) return;
    const key = event.key.toLowerCase();
    if (key !== "d" && key !== "u") return;
    event.preventDefault();
    if (!isLive()) return;
    if (key === "d") boardView.draw();
    else undoMove();
  });
}

function start() {
  wire();
  if (state.link) prefillJoin(state.link);
  showGhost(ghostFromUrl());
  $("ghost-clear").addEventListener("click", () => showGhost(null));
  $("name-input").value = state.identity.name;
  if (state.identity.token) {
    connect({ token: state.identity.token });
  } else {
    showScreen("name-screen");
    setConnStatus("idle");
  }
}

start();
