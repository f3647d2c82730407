// Cards, and the fit checks of the four games (docs: RULES.md), read from a player's view.
//
// The server is the authority on every move; these checks only light up the piles a
// dragged card may go to. A drop on any other pile is still sent, and the server's
// refusal is shown.

// Canfield first: the game a new player is offered (most of its deals can be won).
export const VARIANTS = [
  ["canfield", "Canfield (Solo Cards)"],
  ["rainbow-canfield", "Rainbow Canfield"],
  ["american-canister", "American Canister"],
  ["british-canister", "British Canister"],
];

export const DEFAULT_VARIANT = "canfield";

// The games whose deals the server's solver certifies winnable: their rooms may deal only
// such deals (British Canister's are almost never winnable).
export const CERTIFIABLE = new Set(["canfield", "rainbow-canfield", "american-canister"]);

// Each game in plain words (docs/rules.md states every rule): a paragraph that says what
// the game is like, and its rules as short points.
export const GAME_INFO = {
  canfield: {
    description:
      "The classic patience: bring all 52 cards home to four foundations, Ace to King in each suit, " +
      "from a 13-card reserve, four tableau piles and a stock turned three cards at a time, as often " +
      "as you like. Most deals can be won, and a winnable room deals only deals the solver has won: " +
      "the results then show its line's length as par.",
    rules: [
      ["The deal", "The first Ace starts a foundation. Thirteen cards form the reserve (only its top card is face up), one card goes face up on each of the four tableau piles, and the other 34 are the stock."],
      ["Foundations", "Each foundation starts with an Ace and builds up in its suit to the King."],
      ["Tableau", "Build down in alternating colours: a red 9 on a black 10. A run in order, or the end of one, moves as a unit. A King never goes on an Ace."],
      ["Gaps", "An emptied tableau pile is filled at once with the reserve's top card; once the reserve is empty, any card or run may fill a gap."],
      ["Stock", "Click the stock to turn three cards onto the waste; only the waste's top card plays. When the stock is empty, click it to turn the waste over again: there is no limit."],
      ["Taking back", "A foundation's top card may come back down onto the tableau."],
      ["The end", "You win when all 52 cards are home. You are stuck when nothing is left to play but the stock and a full turn of it brings up no card that fits."],
    ],
    auto:
      "Auto-move sends a card home only when no card could still want to go on it: Aces and 2s at once, any other card once both foundations of the other colour have reached one rank below it (a red 6 once the black 5s are home).",
  },
  "rainbow-canfield": {
    description:
      "Canfield's harder cousin: the stock gives one card at a time and is never turned over, the " +
      "foundations start at a rank the deal picks and wrap from King to Ace, and the tableau builds " +
      "down in any suit, moving only whole piles. Fewer deals can be won; a winnable room deals only " +
      "deals the solver has won, with par in the results.",
    rules: [
      ["The deal", "Thirteen cards form the reserve (its top card face up). The next card starts the first foundation: its rank is the lead rank. One card goes face up on each of the four tableau piles; the other 34 are the stock."],
      ["Foundations", "Each foundation starts with a card of the lead rank and builds up in its suit, wrapping from King to Ace, thirteen cards in all."],
      ["Tableau", "Build down by one rank in any suit or colour, a King on an Ace too. Only a whole pile moves onto another pile."],
      ["Gaps", "An empty pile stays empty until you fill it: with the reserve's top card while the reserve lasts, then with the waste's top card."],
      ["Stock", "Click the stock to turn one card onto the waste; its top card plays to a foundation or the tableau. There is no second pass."],
      ["The end", "You win when all 52 cards are home; you are stuck when the stock is empty and no move is left."],
    ],
    auto:
      "Auto-move sends a card home only when no card could still want to go on it. Any card a rank below goes on a tableau card here, so a card goes once all four cards a rank below it are home; the card after the lead rank goes at once, and a lead-rank card never goes by itself (the rank below the lead rank is the last to go home).",
  },
  "american-canister": {
    description:
      "Every card is dealt face up on eight piles: nothing is hidden, and runs in alternating colours " +
      "move as a unit. Plan ahead, free the Aces and make room for the Kings. Few deals can be won; a " +
      "winnable room deals only deals the solver has won, with par in the results.",
    rules: [
      ["The deal", "All 52 cards face up: seven on each of the first four piles and six on each of the other four. There is no stock or reserve."],
      ["Foundations", "Each foundation starts with an Ace and builds up in its suit to the King. No card comes back."],
      ["Tableau", "Build down in alternating colours. A run in order, or the end of one, moves as a unit onto a card one rank higher of the other colour."],
      ["Gaps", "An empty pile takes only a King, or a run that starts with a King."],
      ["The end", "You win when all 52 cards are home; you are stuck when no move is left."],
    ],
    auto:
      "Auto-move sends a card home only when no card could still want to go on it: Aces and 2s at once, any other card once both foundations of the other colour have reached one rank below it (a red 6 once the black 5s are home).",
  },
  "british-canister": {
    description:
      "Every card is dealt face up on eight piles, and only one card moves at a time. Its deals are " +
      "almost never winnable (about one in a million), so its races are about cards banked: whoever " +
      "brings the most cards home, soonest, comes first.",
    rules: [
      ["The deal", "All 52 cards face up: seven on each of the first four piles and six on each of the other four. There is no stock or reserve."],
      ["Foundations", "Each foundation starts with an Ace and builds up in its suit to the King. No card comes back."],
      ["Tableau", "Move one card at a time onto a card one rank higher of the other colour: a red 9 on a black 10."],
      ["Gaps", "An empty pile takes only a King."],
      ["The end", "You are stuck when no move is left. The results rank everyone by cards banked, and for as many cards, by who got there first."],
    ],
    auto:
      "Auto-move sends a card home only when no card could still want to go on it: Aces and 2s at once, any other card once both foundations of the other colour have reached one rank below it (a red 6 once the black 5s are home).",
  },
};

// Shared by the four games: undo, resigning and the end of a race.
export const COMMON_RULES = [
  ["Moving", "Drag a card (and the cards on it) to where it goes, or click it and then its new pile; double-click a card to send it to a foundation. On a phone, tap a card, then the pile it goes to; tap a card twice to send it home."],
  ["Keyboard", "Tab to the board, then the arrow keys move between piles and cards. Enter (or Space) picks up the card in focus with the cards on it, and Enter on another pile puts them there; Escape puts them back. F sends the card in focus to a foundation, D draws from the stock, U undoes."],
  ["Auto-move", "In the settings (⚙), Auto-move sends cards home by itself when it is safe, and Auto-finish plays the last cards home once every card is face up and nothing else is left to do. Both are off at first; each such move is a move like any other, and counts."],
  ["Undo", "Where the room allows it, Undo takes back your last move. If no move is left, undo a move or resign: your game is over only then."],
  ["The race", "Everyone plays the same deal. Winners rank by time, then everyone else by cards banked. A room may end the race a set time after the first win."],
];

export function variantTitle(id) {
  const found = VARIANTS.find(([key]) => key === id);
  return found ? found[1] : id;
}

const RANKS = { A: 1, J: 11, Q: 12, K: 13 };
export const SUIT_SYMBOLS = { C: "♣", D: "♦", H: "♥", S: "♠" };
export const SUIT_NAMES = { C: "clubs", D: "diamonds", H: "hearts", S: "spades" };

export function rankOf(text) {
  return RANKS[text] || Number.parseInt(text, 10);
}

// "10H" -> {name, rankText: "10", rank: 10, suit: "H", red: true}
export function parseCard(name) {
  const rankText = name.slice(0, -1);
  const suit = name.slice(-1);
  return { name, rankText, rank: rankOf(rankText), suit, red: suit === "D" || suit === "H" };
}

export function hasStock(variant) {
  return variant === "rainbow-canfield" || variant === "canfield";
}

// Whether whole piles (Rainbow Canfield), runs (American Canister, Canfield) or single
// cards (British Canister) move between tableau piles.
export function tableauUnit(variant) {
  if (variant === "rainbow-canfield") return "pile";
  if (variant === "british-canister") return "card";
  return "run";
}

function wraps(variant) {
  return variant === "rainbow-canfield";
}

function nextRank(variant, rank) {
  return wraps(variant) ? (rank % 13) + 1 : rank + 1;
}

function alternatesOnto(card, onto) {
  return card.rank + 1 === onto.rank && card.red !== onto.red;
}

// Length of the descending, alternating-colour run at the end of a pile of names.
export function runLength(pile) {
  const n = pile.length;
  if (n === 0) return 0;
  let k = 1;
  while (k < n) {
    const upper = parseCard(pile[n - k - 1]);
    const lower = parseCard(pile[n - k]);
    if (!alternatesOnto(lower, upper)) break;
    k += 1;
  }
  return k;
}

// The cards a source holds, bottom first: tableau piles in full, others their top card.
export function sourceCards(view, pile) {
  const kind = pile[0];
  if (kind === "t") return view.tableau[Number(pile.slice(1)) - 1] || [];
  if (kind === "f") {
    const f = view.foundations[Number(pile.slice(1)) - 1];
    return f && f.top ? [f.top] : [];
  }
  if (kind === "r") return view.reserve && view.reserve.top ? [view.reserve.top] : [];
  if (kind === "w") {
    const visible = view.waste ? view.waste.visible : [];
    return visible.length ? [visible[visible.length - 1]] : [];
  }
  return [];
}

// Which foundation (0-based) takes `name` on its own, or -1.
export function foundationFit(view, name, index) {
  const card = parseCard(name);
  const base = rankOf(view.base_rank || "A");
  const check = (f) => {
    if (!f.top) return card.rank === base;
    const top = parseCard(f.top);
    return top.suit === card.suit && card.rank === nextRank(view.variant, top.rank);
  };
  if (index !== undefined) return check(view.foundations[index]) ? index : -1;
  return view.foundations.findIndex(check);
}

// Whether `count` cards from the top of source `src` ("t2", "r", "w", "f1") fit onto
// tableau pile `dst` (0-based index).
export function tableauFit(view, src, count, dst) {
  const variant = view.variant;
  const kind = src[0];
  const pile = sourceCards(view, src);
  if (!pile.length || count > pile.length) return false;
  if (kind === "t" && Number(src.slice(1)) - 1 === dst) return false;
  if (kind !== "t" && count !== 1) return false;
  const target = view.tableau[dst];
  const card = parseCard(pile[pile.length - count]);
  const top = target.length ? parseCard(target[target.length - 1]) : null;
  const reserveLeft = view.reserve ? view.reserve.count : 0;
  if (variant === "british-canister") {
    if (kind !== "t" || count !== 1) return false;
    return top ? alternatesOnto(card, top) : card.rank === 13;
  }
  if (variant === "american-canister") {
    if (kind !== "t" || runLength(pile) < count) return false;
    return top ? alternatesOnto(card, top) : card.rank === 13;
  }
  if (variant === "canfield") {
    if (kind === "t" && runLength(pile) < count) return false;
    if (!top) return reserveLeft === 0;
    return alternatesOnto(card, top);
  }
  if (variant === "rainbow-canfield") {
    if (kind === "f") return false;
    if (kind === "t") {
      if (!top || count !== pile.length) return false;
      return (parseCard(pile[0]).rank % 13) + 1 === top.rank;
    }
    if (!top) return kind === "r" || reserveLeft === 0;
    return (card.rank % 13) + 1 === top.rank;
  }
  return false;
}

// Every pile ("t3", "f2") that the dragged cards may go to.
export function legalTargets(view, src, count) {
  const targets = [];
  view.tableau.forEach((_, i) => {
    if (tableauFit(view, src, count, i)) targets.push(`t${i + 1}`);
  });
  if (count === 1 && src[0] !== "f") {
    const pile = sourceCards(view, src);
    if (pile.length) {
      const name = pile[pile.length - 1];
      view.foundations.forEach((_, i) => {
        if (foundationFit(view, name, i) === i) targets.push(`f${i + 1}`);
      });
    }
  }
  return targets;
}

// Which source piles may start a drag in this variant.
export function canDragFrom(variant, pile) {
  const kind = pile[0];
  if (kind === "t") return true;
  if (kind === "r" || kind === "w") return hasStock(variant);
  if (kind === "f") return variant === "canfield";
  return false;
}

// The move text for `count` cards from `src` to `dst` ("t3", "f2", or "f" for any).
export function moveText(src, dst, count) {
  return `${src}-${dst}${count > 1 ? `x${count}` : ""}`;
}

// -- auto-move ---------------------------------------------------------------------------

// How many cards of each suit are home: {C, D, H, S}.
export function homeBySuit(view) {
  const home = { C: 0, D: 0, H: 0, S: 0 };
  for (const f of view.foundations) {
    if (f.top) home[parseCard(f.top).suit] = f.count;
  }
  return home;
}

// Where a rank comes in a foundation: 0 for the base rank (an Ace, or Rainbow Canfield's
// lead rank), 12 for the last.
function foundationPosition(view, rank) {
  const base = rankOf(view.base_rank || "A");
  return (rank - base + 13) % 13;
}

// Whether sending `name` home is safe: it is its foundation's next card, and no card that
// is not home yet could still want to go on it on the tableau (GAME_INFO's `auto` says it
// in words).
//
// Alternating colours (Canfield, both Canisters): the cards that go on a card of rank r
// are the two of rank r - 1 of the other colour, so the card is safe once both of their
// foundations have reached r - 1. Aces and 2s are always safe: an Ace never needs a
// tableau card under it, since it always has a foundation to go to.
//
// Rainbow Canfield builds down by rank alone, wrapping, and its foundations start at the
// lead rank: the cards that go on a card are the four one rank below it, so it is safe
// once all four of those are home (every foundation holds at least as many cards as its
// own). The card just after the lead rank is always safe (lead cards always have a
// foundation to go to); a lead card never is, since the four of the rank below the lead
// rank go home last.
export function safeHome(view, name) {
  if (foundationFit(view, name) < 0) return false;
  const card = parseCard(name);
  const home = homeBySuit(view);
  if (view.variant === "rainbow-canfield") {
    const position = foundationPosition(view, card.rank);
    if (position === 0) return false;
    if (position === 1) return true;
    return Math.min(home.C, home.D, home.H, home.S) >= position;
  }
  if (card.rank <= 2) return true;
  const other = card.red ? [home.C, home.S] : [home.D, home.H];
  return Math.min(...other) >= card.rank - 1;
}

// The piles a card may go home from, in the order auto-move looks at them.
function homeSources(view) {
  const sources = view.tableau.map((_, i) => `t${i + 1}`);
  if (hasStock(view.variant)) sources.push("r", "w");
  return sources;
}

// The next safe move home ("t3-f", "w-f"), or null.
export function safeMove(view) {
  for (const src of homeSources(view)) {
    const cards = sourceCards(view, src);
    if (cards.length && safeHome(view, cards[cards.length - 1])) return `${src}-f`;
  }
  return null;
}

// Whether every card not yet home is face up in the view: no stock, and no card under the
// reserve's top or under the waste's visible cards.
export function allFaceUp(view) {
  if (!hasStock(view.variant)) return true;
  const reserve = view.reserve ? view.reserve.count : 0;
  return view.stock.count === 0 && reserve <= 1 && view.waste.count === view.waste.visible.length;
}

// The moves home that bring every card home from this position, with no other move, when
// every card is face up; null when they do not (some card would stay).
export function finishingMoves(view) {
  if (!allFaceUp(view)) return null;
  const piles = new Map();
  view.tableau.forEach((cards, i) => piles.set(`t${i + 1}`, [...cards]));
  if (hasStock(view.variant)) {
    piles.set("r", view.reserve && view.reserve.top ? [view.reserve.top] : []);
    piles.set("w", [...view.waste.visible]);
  }
  const home = homeBySuit(view);
  let banked = Object.values(home).reduce((a, b) => a + b, 0);
  const moves = [];
  let moved = true;
  while (moved) {
    moved = false;
    for (const [src, cards] of piles) {
      if (!cards.length) continue;
      const card = parseCard(cards[cards.length - 1]);
      if (foundationPosition(view, card.rank) !== home[card.suit]) continue;
      cards.pop();
      home[card.suit] += 1;
      banked += 1;
      moves.push(`${src}-f`);
      moved = true;
    }
  }
  return banked === 52 ? moves : null;
}
