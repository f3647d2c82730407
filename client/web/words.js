// The page's words for people: cards, piles and moves by name, every refusal of a move
// (each engine reason code, docs/rules.md) and every error code of the protocol
// (docs/protocol.md, "Errors") as a sentence. No code and no move notation reaches a
// player's eyes: they stay in data attributes, for tests and bug reports.

import { parseCard, rankOf } from "./rules.js";

const RANK_WORDS = { A: "Ace", J: "Jack", Q: "Queen", K: "King" };
const SUIT_WORDS = { C: "clubs", D: "diamonds", H: "hearts", S: "spades" };
const RANK_TEXT = ["", "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];

// The page's one rule for a count's word: plural(1, "day") -> "day", plural(2, "day") ->
// "days" (and plural(n, "try", "tries") for a word whose plural is not its singular + s).
export function plural(n, one, many = `${one}s`) {
  return n === 1 ? one : many;
}

// counted(1, "move") -> "1 move", counted(3, "move") -> "3 moves".
export function counted(n, one, many = `${one}s`) {
  return `${n} ${plural(n, one, many)}`;
}

// "Q" -> "Queen", "7" -> "7".
export function rankWord(rankText) {
  return RANK_WORDS[rankText] || rankText;
}

// "an Ace", "a 7", "an 8".
export function aRank(rankText) {
  const word = rankWord(rankText);
  return /^(Ace|8)$/.test(word) ? `an ${word}` : `a ${word}`;
}

// "QS" -> "Queen of spades".
export function cardTitle(name) {
  const card = parseCard(name);
  return `${rankWord(card.rankText)} of ${SUIT_WORDS[card.suit]}`;
}

// "QS" -> "the Queen of spades".
export function cardWords(name) {
  return `the ${cardTitle(name)}`;
}

function capital(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}

// "t3" -> "pile 3", "f2" -> "foundation 2", "r" -> "the reserve".
export function pileWords(id) {
  if (id === "r") return "the reserve";
  if (id === "w") return "the waste";
  if (id === "s") return "the stock";
  if (id === "f") return "a foundation";
  if (id[0] === "f") return `foundation ${id.slice(1)}`;
  if (id[0] === "t") return `pile ${id.slice(1)}`;
  return "that pile";
}

// A move in the notation ("t1-t3x2", "w-f", "d"), read: null for other text.
export function readMove(text) {
  const move = String(text || "").trim().toLowerCase();
  if (move === "d" || move === "draw") return { kind: "draw" };
  if (move === "rd" || move === "redeal") return { kind: "redeal" };
  if (move === "u" || move === "undo") return { kind: "undo" };
  const match = /^(t\d+|f\d*|r|w|s)-(t\d+|f\d*|r|w|s)(?:x(\d+))?$/.exec(move);
  if (!match) return null;
  return { kind: "move", src: match[1], dst: match[2], count: match[3] ? Number(match[3]) : 1 };
}

function topOf(view, id) {
  if (!view) return null;
  if (id[0] === "t") {
    const pile = view.tableau?.[Number(id.slice(1)) - 1];
    return pile && pile.length ? pile[pile.length - 1] : null;
  }
  if (id[0] === "f" && id.length > 1) return view.foundations?.[Number(id.slice(1)) - 1]?.top || null;
  if (id === "r") return view.reserve?.top || null;
  if (id === "w") {
    const visible = view.waste?.visible || [];
    return visible.length ? visible[visible.length - 1] : null;
  }
  return null;
}

// The first of the cards a move takes from `src` (the moving run's bottom card).
function movingCard(view, src, count) {
  if (!view) return null;
  if (src[0] === "t") {
    const pile = view.tableau?.[Number(src.slice(1)) - 1] || [];
    return pile.length >= count && count > 0 ? pile[pile.length - count] : null;
  }
  return topOf(view, src);
}

// A move in words, for a sentence about it: "the 9 of hearts onto pile 3", "the draw".
export function moveWords(view, text) {
  const move = readMove(text);
  if (!move) return "your move";
  if (move.kind === "draw") return "the draw from the stock";
  if (move.kind === "redeal") return "turning the waste over";
  if (move.kind === "undo") return "the undo";
  const card = movingCard(view, move.src, move.count);
  const what = card ? cardWords(card) : `the cards of ${pileWords(move.src)}`;
  const more = card && move.count > 1 ? ` and the ${move.count - 1 === 1 ? "card" : counted(move.count - 1, "card")} on it` : "";
  const where = move.dst === "f" || move.dst[0] === "f" ? "to a foundation" : `onto ${pileWords(move.dst)}`;
  return `${what}${more} ${where}`;
}

function baseRankText(view) {
  return view?.base_rank || "A";
}

function nextRankValue(variant, rank) {
  return variant === "rainbow-canfield" ? (rank % 13) + 1 : rank + 1;
}

// The card the foundation of `suit` takes next ("3H"), or null when it is complete.
function nextNeeded(view, suit) {
  const found = (view?.foundations || []).find((f) => f.top && parseCard(f.top).suit === suit);
  if (!found) return `${baseRankText(view)}${suit}`;
  if (found.count >= 13) return null;
  return `${RANK_TEXT[nextRankValue(view.variant, parseCard(found.top).rank)]}${suit}`;
}

function tableauRule(variant) {
  switch (variant) {
    case "rainbow-canfield":
      return "a card goes on one a rank higher, in any suit (a 9 on a 10, a King on an Ace)";
    case "canfield":
      return "a card goes on one a rank higher of the other colour (a red 9 on a black 10), and a King never goes on an Ace";
    default:
      return "a card goes on one a rank higher of the other colour (a red 9 on a black 10)";
  }
}

// Each engine reason code as a sentence; `c` holds what the page knows of the refused
// move: the game, the view before it, the moving card and the card it was put on.
const REASONS = {
  no_such_pile: (c) => (c.move?.kind === "draw" || c.move?.kind === "redeal" ? "This game has no stock to draw from." : "That pile is not part of this game."),
  same_pile: () => "Those cards are on that pile already: pick another pile for them.",
  empty_pile: (c) => `There is no card on ${c.move ? pileWords(c.move.src) : "that pile"} to move.`,
  not_enough_cards: () => "That pile does not hold that many cards.",
  not_a_source: () => "Cards leave the stock only when you draw: click the stock, or press D.",
  not_a_target: (c) =>
    `No card is ever put on ${c.move ? pileWords(c.move.dst) : "the reserve, the waste or the stock"}: cards go on the tableau piles and the foundations.`,
  single_card_only: (c) => {
    const move = c.move;
    if (c.variant === "british-canister" && move?.src[0] === "t" && move?.dst[0] === "t") {
      return "In British Canister one card moves at a time, never a run.";
    }
    if (move && move.dst[0] === "f") return "Only one card at a time goes to a foundation: the top card of a pile.";
    if (move && (move.src === "w" || move.src === "r")) return `Only the top card of ${pileWords(move.src)} plays, one card at a time.`;
    if (move && move.src[0] === "f") return "Only a foundation's top card comes back, one card at a time.";
    return "Only one card may move there at a time.";
  },
  not_a_run: () =>
    "Those cards do not move together: only a run going down one rank at a time in alternating colours moves as a unit.",
  partial_pile_move: () => "In Rainbow Canfield only a whole pile moves onto another pile: pick up its bottom card's pile whole.",
  not_one_rank_lower: (c) => {
    const rule = tableauRule(c.variant);
    if (c.card && c.onto) {
      const pile = c.variant === "rainbow-canfield" && c.move?.src[0] === "t" && c.move.count > 1;
      const what = pile ? `The pile that starts with ${cardWords(c.card)}` : capital(cardWords(c.card));
      return `${what} cannot go on ${cardWords(c.onto)}: ${rule}.`;
    }
    return `${capital(rule)}.`;
  },
  not_alternating_colour: (c) =>
    c.card && c.onto
      ? `${capital(cardWords(c.card))} cannot go on ${cardWords(c.onto)}: a red card goes on a black one, and a black card on a red one.`
      : "A red card goes on a black one, and a black card on a red one.",
  only_king_on_empty: (c) =>
    c.variant === "american-canister"
      ? "An empty pile takes only a King, or a run that starts with a King."
      : "An empty pile takes only a King.",
  empty_pile_needs_reserve: () => "While the reserve has cards, only the reserve's top card fills an empty pile.",
  empty_pile_needs_waste: () => "Once the reserve is empty, only the waste's top card fills an empty pile.",
  tableau_cannot_fill_empty: () =>
    "In Rainbow Canfield no card from the tableau fills an empty pile: the reserve's top card does, and the waste's once the reserve is empty.",
  foundation_needs_base: (c) => {
    const base = baseRankText(c.view);
    const lead = c.variant === "rainbow-canfield" ? ` (this deal's lead rank)` : "";
    if (c.card) {
      const card = parseCard(c.card);
      if (rankOf(card.rankText) !== rankOf(base)) {
        return `${capital(cardWords(c.card))} cannot go home yet: its foundation starts with ${cardWords(`${base}${card.suit}`)}${lead}, which is not home yet.`;
      }
    }
    return `A foundation starts with ${aRank(base)}${lead}.`;
  },
  foundation_wrong_suit: (c) =>
    c.card && c.onto
      ? `${capital(cardWords(c.card))} cannot go on ${cardWords(c.onto)}: a foundation builds up in one suit.`
      : "A foundation builds up in one suit.",
  foundation_wrong_rank: (c) => {
    if (c.card) {
      const card = parseCard(c.card);
      const needed = nextNeeded(c.view, card.suit);
      if (needed && needed !== c.card) {
        return `${capital(cardWords(c.card))} cannot go home yet: the ${SUIT_WORDS[card.suit]} foundation needs ${cardWords(needed)} first.`;
      }
    }
    return "A foundation goes up one rank at a time in its suit.";
  },
  foundation_locked: () => "In this game no card ever comes back from a foundation.",
  foundation_to_tableau_only: () => "A foundation's top card may come back only onto the tableau, not onto another foundation.",
  stock_empty: (c) =>
    c.variant === "canfield" ? "The stock is empty: click it to turn the waste over, then draw again." : "The stock is empty.",
  stock_not_empty: () => "The waste turns over only once the stock is empty.",
  nothing_to_redeal: () => "The stock and the waste are both empty: there is nothing to turn over.",
  no_redeal: () => "Rainbow Canfield's stock is dealt once: the waste never turns over.",
  undo_not_allowed: () => "Undo is off in this game.",
  nothing_to_undo: () => "There is no move to undo.",
  game_over: () => "Your game is over: it takes no more moves.",
};

// The engine's reason codes the page has words for (docs/rules.md's table).
export const REASON_CODES = Object.keys(REASONS);

// A refused move in plain words. `view` is the player's board when the move was sent,
// `text` the move as sent ("t1-t3").
export function refusalText(reason, { view = null, text = null } = {}) {
  const words = REASONS[reason];
  if (!words) return "That move is against the rules of this game.";
  const move = readMove(text);
  const context = { variant: view?.variant, view, move, card: null, onto: null };
  if (move?.kind === "move") {
    context.card = movingCard(view, move.src, move.count);
    context.onto = topOf(view, move.dst);
  }
  return words(context);
}

const BUDGETS = {
  connections_per_address: "Too many connections come from your network just now.",
  rooms_per_hour: "You have made all the rooms you may for now.",
  address_rooms_per_hour: "Your network has made all the rooms it may for now.",
  room_share_per_address: "Your network holds many of the server's rooms already.",
  joins_per_minute: "You have joined rooms too often for now.",
  address_joins_per_minute: "Your network has joined rooms too often for now.",
  identities_per_hour: "Too many new players come from your network for now.",
  daily_starts_per_day: "You have started the daily challenge as often as you may today.",
  address_daily_starts_per_day: "Your network has started the daily challenge as often as it may today.",
  logins_per_minute: "Too many log-ins for now.",
  account_logins_per_hour: "Too many log-ins to this account for now.",
  accounts_per_day: "Your network has claimed as many names as it may today.",
};

function waitWords(error) {
  const seconds = Math.ceil(Number(error.retry_after) || 0);
  return seconds > 0 ? `Try again in ${seconds} s.` : "Try again in a moment.";
}

// The server's own sentence, for the codes whose message is written for people (a name's
// or a password's rule, a setting's range).
function serverSentence(error, fallback) {
  const line = String(error.message || "").trim();
  if (!line) return fallback;
  const first = line[0].toUpperCase() + line.slice(1);
  return /[.!?]$/.test(first) ? first : `${first}.`;
}

// Each error code of the protocol as a sentence; `c` is what the page was doing: `room`
// (a code it asked for), `view` and `text` (a move).
const ERRORS = {
  malformed_frame: () => "The server could not read what the page sent: reload the page.",
  frame_too_large: () => "The page sent more than the server takes at once: reload the page.",
  unknown_type: () => "The server did not understand the page: reload it to get its latest version.",
  bad_field: () => "The server did not take a value the page sent: check the form, or reload the page.",
  rate_limited: () => "That was a lot at once: slow down a little, then try again.",
  over_budget: (c, error) => `${BUDGETS[error.reason] || "You have done that too often for now."} ${waitWords(error)}`,
  not_identified: () => "The page was not connected yet: try again.",
  wrong_password: () => "Wrong account name or password.",
  bad_password: (c, error) => serverSentence(error, "A password has 8 to 128 characters."),
  name_taken: () => "An account already has that name, or one that looks like it: pick another, or log in to the account.",
  already_an_account: () => "This name is an account already.",
  not_an_account: () => "You play as a guest: claim your name first.",
  already_identified: () => "The page said hello twice: reload the page.",
  bad_name: (c, error) => serverSentence(error, "That name cannot be used: pick another."),
  bad_token: () => "The server no longer knows this player: pick a name to play again.",
  unknown_variant: () => "This server does not have that game.",
  account_required: () => "The daily challenge is played by accounts: claim your name or log in first.",
  bad_settings: (c, error) => serverSentence(error, "One of those settings is out of range."),
  room_not_found: (c) => (c.room ? `No room has the code ${c.room}: check it, or ask for the link again.` : "That room is gone."),
  room_full: (c) => `${c.room ? `Room ${c.room}` : "That room"} is full.`,
  too_many_rooms: () => "The server holds all the rooms it can just now: try again in a little while.",
  spectators_not_allowed: (c) =>
    `${c.room ? `Room ${c.room}` : "That room"} takes no spectators: join it as a player between its races.`,
  already_in_room: () => "You are in a room already: leave it first.",
  not_in_room: () => "You are no longer in that room.",
  not_host: () => "Only the room's host may do that.",
  not_a_player: () => "Only the race's players may do that: you are watching.",
  wrong_state: (c, error) => {
    if (c.during === "join" && error?.reason === "racing_no_spectators") {
      return `The race in ${c.room ? `room ${c.room}` : "that room"} has started, and the room takes no spectators: join it between races.`;
    }
    if (c.during === "join") return `The race in ${c.room ? `room ${c.room}` : "that room"} has started: players join between races.`;
    if (c.during === "settings") return "The room's settings change only between races.";
    if (c.during === "rematch") return "The race is not over yet.";
    return "The race has started already.";
  },
  race_not_started: () => "The race has not started yet.",
  race_over: () => "The race is over: it takes no more moves.",
  game_over: () => "Your game is over: it takes no more moves.",
  move_limit: () => "Your game has played as many moves as a game may: resign, or wait for the race to end.",
  stale_revision: () => "Your board was behind the server's: it now shows your game as the server has it.",
  bad_move: () => "The server could not read that move: reload the page.",
  illegal_move: (c, error) => refusalText(error.reason, c),
  unavailable: () => "The server cannot reach its storage just now. Try again in a moment.",
  internal_error: () => "Something went wrong on the server: try again.",
  // The page's own, for a request made while the connection is down.
  offline: () => "Not connected to the server: wait until the connection is back.",
  closed: () => "Not connected to the server: wait until the connection is back.",
};

// The error codes of docs/protocol.md the page has words for.
export const ERROR_CODES = Object.keys(ERRORS);

// An error frame (or the page's own {code, message}) in plain words.
export function errorText(error, context = {}) {
  if (!error) return "";
  const words = ERRORS[error.code];
  if (words) return words(context, error);
  // No code: the page wrote the message itself, in words already.
  if (!error.code && error.message) return String(error.message);
  return "The server refused that.";
}
