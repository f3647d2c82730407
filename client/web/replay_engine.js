// The four games in the browser, for replays: the deal from a seed (docs/deals.md), the
// moves in the notation (docs/rules.md), undo, the status, the legal moves and the views,
// exactly as the Python engine (solrace.engine) has them.
//
// A replay applies moves the server already accepted, so a move is not checked against
// every rule; one that cannot be carried out at all (an empty pile, a card no foundation
// takes) throws, naming the move. tests/client/test_web_replay.py plays random games of
// the four in Python and here side by side and compares every card of every pile.

import { counted } from "./words.js";

// -- cards ---------------------------------------------------------------------------------

const SUITS = "CDHS";
const RANK_NAMES = ["", "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
const KING = 13;

const rankOf = (card) => (card % 13) + 1;
const suitOf = (card) => Math.floor(card / 13);
const isRed = (card) => suitOf(card) === 1 || suitOf(card) === 2;

export function cardName(card) {
  return RANK_NAMES[rankOf(card)] + SUITS[suitOf(card)];
}

const names = (pile) => pile.map(cardName);

// -- the deal: SplitMix64 and Fisher-Yates -------------------------------------------------

const MASK64 = (1n << 64n) - 1n;
const TWO64 = 1n << 64n;

// A seed (a decimal or 0x string, a BigInt, or a safe integer) as a BigInt in [0, 2^64).
export function toSeed(seed) {
  let value;
  if (typeof seed === "bigint") value = seed;
  else if (typeof seed === "number" && Number.isSafeInteger(seed)) value = BigInt(seed);
  else if (typeof seed === "string" && /^(?:[0-9]+|0[xX][0-9a-fA-F]+)$/.test(seed.trim())) {
    value = BigInt(seed.trim());
  } else throw new RangeError(`not a seed: ${String(seed)}`);
  if (value < 0n || value > MASK64) {
    throw new RangeError("a seed is an unsigned 64-bit integer");
  }
  return value;
}

export class SplitMix64 {
  constructor(seed) {
    this.state = toSeed(seed);
  }

  next() {
    this.state = (this.state + 0x9e3779b97f4a7c15n) & MASK64;
    let z = this.state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
    return z ^ (z >> 31n);
  }

  // A uniform integer in [0, n), rejecting the outputs of the top, incomplete block.
  below(n) {
    const big = BigInt(n);
    const limit = TWO64 - (TWO64 % big);
    for (;;) {
      const x = this.next();
      if (x < limit) return Number(x % big);
    }
  }
}

// The 52 cards in dealing order (deck[0] is dealt first).
export function shuffledDeck(seed) {
  const deck = Array.from({ length: 52 }, (_, i) => i);
  const rng = new SplitMix64(seed);
  for (let i = 51; i > 0; i -= 1) {
    const j = rng.below(i + 1);
    [deck[i], deck[j]] = [deck[j], deck[i]];
  }
  return deck;
}

// -- moves in the notation -----------------------------------------------------------------

const WORDS = { d: "draw", draw: "draw", rd: "redeal", redeal: "redeal", u: "undo", undo: "undo" };
const MOVE_RE = /^([tfrws])(\d*)-([tfrws])(\d*)(?:x(\d+))?$/;
const SINGLE = new Set(["r", "w", "s"]);

export class NotationError extends Error {}

// A move: {kind: "move", src, srcIndex, dst, dstIndex (null: any foundation), count} or
// {kind: "draw" | "redeal" | "undo"}. Piles are "t", "f", "r", "w", "s"; indices from 0.
export function parseMove(text) {
  if (typeof text !== "string") throw new NotationError("a move is written as text");
  const compact = text.trim().toLowerCase();
  if (WORDS[compact]) return { kind: WORDS[compact] };
  const match = MOVE_RE.exec(compact);
  if (!match) throw new NotationError(`${JSON.stringify(text)} is not a move`);
  const pile = (kind, digits, isDst) => {
    if (SINGLE.has(kind)) {
      if (digits) throw new NotationError(`${JSON.stringify(text)}: ${kind} takes no number`);
      return 0;
    }
    if (!digits) {
      if (isDst && kind === "f") return null;
      throw new NotationError(`${JSON.stringify(text)}: ${kind} needs a number`);
    }
    const number = Number(digits);
    if (number < 1 || number > 99) throw new NotationError(`${JSON.stringify(text)}: bad pile`);
    return number - 1;
  };
  const count = match[5] === undefined ? 1 : Number(match[5]);
  if (count < 1 || count > 52) throw new NotationError(`${JSON.stringify(text)}: bad count`);
  return {
    kind: "move",
    src: match[1],
    srcIndex: pile(match[1], match[2], false),
    dst: match[3],
    dstIndex: pile(match[3], match[4], true),
    count,
  };
}

function pileText(kind, index) {
  return SINGLE.has(kind) || index === null ? kind : `${kind}${index + 1}`;
}

export function formatMove(move) {
  if (move.kind === "draw") return "d";
  if (move.kind === "redeal") return "rd";
  if (move.kind === "undo") return "u";
  const text = `${pileText(move.src, move.srcIndex)}-${pileText(move.dst, move.dstIndex)}`;
  return move.count === 1 ? text : `${text}x${move.count}`;
}

const transfer = (src, srcIndex, dst, dstIndex, count = 1) => ({
  kind: "move",
  src,
  srcIndex,
  dst,
  dstIndex,
  count,
});

// -- the games -----------------------------------------------------------------------------

const CANISTER_SIZES = [7, 7, 7, 7, 6, 6, 6, 6];

const GAMES = {
  "british-canister": { title: "British Canister", tableau: 8 },
  "american-canister": { title: "American Canister", tableau: 8 },
  "rainbow-canfield": {
    title: "Rainbow Canfield",
    tableau: 4,
    stock: true,
    drawCount: 1,
    wasteVisible: 1,
    wraps: true,
  },
  canfield: {
    title: "Canfield (Solo Cards)",
    tableau: 4,
    stock: true,
    drawCount: 3,
    wasteVisible: 3,
    foundationToTableau: true,
  },
};

export const VARIANT_IDS = Object.keys(GAMES);

export function variantTitle(variant) {
  return GAMES[variant] ? GAMES[variant].title : variant;
}

function runLength(pile) {
  const n = pile.length;
  if (n === 0) return 0;
  let k = 1;
  while (k < n) {
    const upper = pile[n - k - 1];
    const lower = pile[n - k];
    if (rankOf(lower) + 1 !== rankOf(upper) || isRed(lower) === isRed(upper)) break;
    k += 1;
  }
  return k;
}

// One player's game: every card of every pile, as solrace.engine.Game holds them.
export class Game {
  constructor(variant, seed, { undoAllowed = true } = {}) {
    const spec = GAMES[variant];
    if (!spec) throw new RangeError(`unknown variant ${JSON.stringify(variant)}`);
    this.variant = variant;
    this.seed = toSeed(seed);
    this.title = spec.title;
    this.hasStock = Boolean(spec.stock);
    this.drawCount = spec.drawCount || 1;
    this.wasteVisible = spec.wasteVisible || 1;
    this.wraps = Boolean(spec.wraps);
    this.foundationToTableau = Boolean(spec.foundationToTableau);
    this.undoAllowed = undoAllowed;
    this.tableau = Array.from({ length: spec.tableau }, () => []);
    this.foundations = [[], [], [], []];
    this.reserve = [];
    this.stock = [];
    this.waste = [];
    this.fan = 0;
    this.baseRank = 1;
    this.moves = 0;
    this.log = [];
    this.history = [];
    this.ended = null; // "won" or "resigned"
    this.deal(shuffledDeck(this.seed));
  }

  deal(deck) {
    const variant = this.variant;
    if (variant === "british-canister" || variant === "american-canister") {
      let start = 0;
      CANISTER_SIZES.forEach((size, i) => {
        this.tableau[i].push(...deck.slice(start, start + size));
        start += size;
      });
    } else if (variant === "rainbow-canfield") {
      this.reserve.push(...deck.slice(0, 13));
      this.foundations[0].push(deck[13]);
      this.baseRank = rankOf(deck[13]);
      this.tableau.forEach((pile, i) => pile.push(deck[14 + i]));
      this.stock.push(...deck.slice(18, 52));
    } else {
      const ace = deck.findIndex((card) => rankOf(card) === 1);
      this.foundations[0].push(deck[ace]);
      const rest = [...deck.slice(0, ace), ...deck.slice(ace + 1)];
      this.reserve.push(...rest.slice(0, 13));
      this.tableau.forEach((pile, i) => pile.push(rest[13 + i]));
      this.stock.push(...rest.slice(17, 51));
    }
  }

  // -- reading the position ----------------------------------------------------------------

  get banked() {
    return this.foundations.reduce((sum, f) => sum + f.length, 0);
  }

  get status() {
    if (this.ended) return this.ended;
    return this.isStuck() ? "stuck" : "playing";
  }

  get canUndo() {
    return this.undoAllowed && this.ended === null && this.history.length > 0;
  }

  visibleWaste() {
    const waste = this.waste;
    if (!waste.length) return [];
    const shown = Math.min(waste.length, Math.max(1, Math.min(this.fan, this.wasteVisible)));
    return waste.slice(waste.length - shown);
  }

  resign() {
    if (this.ended === null) this.ended = "resigned";
  }

  nextRank(rank) {
    return this.wraps ? (rank % 13) + 1 : rank + 1;
  }

  // -- moves ------------------------------------------------------------------------------

  // Apply a move (text in the notation, or a parsed move); throws if it cannot be carried out.
  apply(input) {
    const move = typeof input === "string" ? parseMove(input) : input;
    if (this.ended) throw new Error(`the game is over (${this.ended})`);
    if (move.kind === "move") this.transfer(move);
    else if (move.kind === "draw") this.draw();
    else if (move.kind === "redeal") this.redeal();
    else if (move.kind === "undo") this.undo();
    else throw new NotationError(`not a move: ${JSON.stringify(move)}`);
    this.moves += 1;
    this.log.push(formatMove(move));
  }

  pile(kind, index) {
    if (kind === "t") return this.tableau[index];
    if (kind === "f") return this.foundations[index];
    if (this.hasStock && kind === "r") return this.reserve;
    if (this.hasStock && kind === "w") return this.waste;
    return undefined;
  }

  // The foundation (0-based) that takes `card`: `index` if named, else the first that does.
  foundationFor(card, index) {
    const rank = rankOf(card);
    const takes = (f) =>
      f.length ? suitOf(f[f.length - 1]) === suitOf(card) && rank === this.nextRank(rankOf(f[f.length - 1])) : rank === this.baseRank;
    if (index !== null && index !== undefined) {
      if (index >= 0 && index < 4 && takes(this.foundations[index])) return index;
      throw new Error(`${cardName(card)} does not go on f${index + 1}`);
    }
    if (rank === this.baseRank) {
      const empty = this.foundations.findIndex((f) => !f.length);
      if (empty >= 0) return empty;
    }
    const found = this.foundations.findIndex(
      (f) => f.length && suitOf(f[f.length - 1]) === suitOf(card),
    );
    if (found >= 0 && takes(this.foundations[found])) return found;
    throw new Error(`no foundation takes ${cardName(card)}`);
  }

  transfer(move) {
    const { src, srcIndex: si, dst, count } = move;
    let di = move.dstIndex;
    const pile = this.pile(src, si);
    if (!pile) throw new Error(`no pile ${pileText(src, si)} to take from`);
    if (count < 1 || count > pile.length) {
      throw new Error(`${pileText(src, si)} holds ${counted(pile.length, "card")}, not ${count}`);
    }
    let target;
    if (dst === "f") {
      if (count !== 1) throw new Error("one card at a time goes to a foundation");
      di = this.foundationFor(pile[pile.length - 1], di);
      target = this.foundations[di];
    } else if (dst === "t" && di >= 0 && di < this.tableau.length) {
      if (src === "t" && si === di) throw new Error("a pile cannot move onto itself");
      target = this.tableau[di];
    } else {
      throw new Error(`cards cannot be placed on ${pileText(dst, di)}`);
    }
    target.push(...pile.splice(pile.length - count, count));
    const fan = this.fan;
    if (src === "w" && fan) this.fan = fan - 1;
    const fills = src === "t" ? this.autoFill() : [];
    this.history.push({ kind: "move", src, si, dst, di, count, fills, fan });
    if (dst === "f" && this.banked === 52) this.ended = "won";
  }

  // Canfield fills empty tableau piles from the reserve at once, in pile order (CF-13, 14).
  autoFill() {
    if (this.variant !== "canfield" || !this.reserve.length) return [];
    const fills = [];
    this.tableau.forEach((pile, i) => {
      if (!pile.length && this.reserve.length) {
        pile.push(this.reserve.pop());
        fills.push(i);
      }
    });
    return fills;
  }

  draw() {
    if (!this.hasStock) throw new Error("this game has no stock");
    if (!this.stock.length) throw new Error("the stock is empty");
    const n = Math.min(this.drawCount, this.stock.length);
    for (let i = 0; i < n; i += 1) this.waste.push(this.stock.pop());
    this.history.push({ kind: "draw", n, fan: this.fan });
    this.fan = n;
  }

  redeal() {
    if (!this.hasStock || this.drawCount === 1) throw new Error("this game has no redeal");
    if (this.stock.length) throw new Error("redeal only once the stock is empty");
    if (!this.waste.length) throw new Error("the stock and the waste are both empty");
    this.history.push({ kind: "redeal", fan: this.fan });
    this.waste.reverse();
    this.stock = this.waste;
    this.waste = [];
    this.fan = 0;
  }

  undo() {
    if (!this.undoAllowed) throw new Error("undo is off in this game");
    const record = this.history.pop();
    if (!record) throw new Error("there is no move to undo");
    if (record.kind === "draw") {
      for (let i = 0; i < record.n; i += 1) this.stock.push(this.waste.pop());
    } else if (record.kind === "redeal") {
      this.stock.reverse();
      this.waste = this.stock;
      this.stock = [];
    } else {
      for (const i of [...record.fills].reverse()) this.reserve.push(this.tableau[i].pop());
      const target = this.pile(record.dst, record.di);
      const pile = this.pile(record.src, record.si);
      pile.push(...target.splice(target.length - record.count, record.count));
    }
    this.fan = record.fan;
  }

  // -- legal moves and the stuck test --------------------------------------------------------

  // Every non-empty pile whose top card may move: [kind, index, pile].
  sources() {
    const out = [];
    this.tableau.forEach((pile, i) => {
      if (pile.length) out.push(["t", i, pile]);
    });
    if (this.reserve.length) out.push(["r", 0, this.reserve]);
    if (this.waste.length) out.push(["w", 0, this.waste]);
    if (this.foundationToTableau) {
      this.foundations.forEach((pile, i) => {
        if (pile.length) out.push(["f", i, pile]);
      });
    }
    return out;
  }

  foundationMoves() {
    const moves = [];
    for (const [kind, i, pile] of this.sources()) {
      if (kind === "f") continue;
      const card = pile[pile.length - 1];
      const rank = rankOf(card);
      const fits = this.foundations.some((f) =>
        f.length
          ? suitOf(f[f.length - 1]) === suitOf(card) && rank === this.nextRank(rankOf(f[f.length - 1]))
          : rank === this.baseRank,
      );
      if (fits) moves.push(transfer(kind, i, "f", null));
    }
    return moves;
  }

  tableauMoves() {
    const moves = [];
    const tableau = this.tableau;
    const variant = this.variant;
    const fitsAlternating = (card, target) => {
      const top = target[target.length - 1];
      return rankOf(top) === rankOf(card) + 1 && isRed(top) !== isRed(card);
    };
    if (variant === "british-canister") {
      tableau.forEach((pile, i) => {
        if (!pile.length) return;
        const card = pile[pile.length - 1];
        tableau.forEach((target, j) => {
          if (j === i) return;
          if (target.length ? fitsAlternating(card, target) : rankOf(card) === KING) {
            moves.push(transfer("t", i, "t", j, 1));
          }
        });
      });
    } else if (variant === "american-canister" || variant === "canfield") {
      const openSpace = variant === "canfield" && !this.reserve.length;
      tableau.forEach((pile, i) => {
        const run = runLength(pile);
        for (let k = 1; k <= run; k += 1) {
          const card = pile[pile.length - k];
          tableau.forEach((target, j) => {
            if (j === i) return;
            const fits = target.length
              ? fitsAlternating(card, target)
              : variant === "canfield"
                ? openSpace
                : rankOf(card) === KING;
            if (fits) moves.push(transfer("t", i, "t", j, k));
          });
        }
      });
      if (variant === "canfield") {
        for (const [kind, index, pile] of this.sources()) {
          if (kind === "t") continue;
          const card = pile[pile.length - 1];
          tableau.forEach((target, j) => {
            if (target.length ? fitsAlternating(card, target) : openSpace) {
              moves.push(transfer(kind, index, "t", j, 1));
            }
          });
        }
      }
    } else {
      tableau.forEach((pile, i) => {
        if (!pile.length) return;
        const wanted = (rankOf(pile[0]) % 13) + 1;
        tableau.forEach((target, j) => {
          if (j !== i && target.length && rankOf(target[target.length - 1]) === wanted) {
            moves.push(transfer("t", i, "t", j, pile.length));
          }
        });
      });
      for (const [kind, pile] of [
        ["r", this.reserve],
        ["w", this.waste],
      ]) {
        if (!pile.length) continue;
        const wanted = (rankOf(pile[pile.length - 1]) % 13) + 1;
        tableau.forEach((target, j) => {
          if (target.length) {
            if (rankOf(target[target.length - 1]) === wanted) moves.push(transfer(kind, 0, "t", j, 1));
          } else if (kind === "r" || !this.reserve.length) {
            moves.push(transfer(kind, 0, "t", j, 1));
          }
        });
      }
    }
    return moves;
  }

  // Every move apply accepts now, undo aside, in the engine's order and notation.
  legalMoves() {
    if (this.ended) return [];
    const moves = [...this.foundationMoves(), ...this.tableauMoves()];
    if (this.hasStock) {
      if (this.stock.length) moves.push({ kind: "draw" });
      else if (this.waste.length && this.drawCount > 1) moves.push({ kind: "redeal" });
    }
    return moves.map(formatMove);
  }

  hasLegalMove() {
    if (this.hasStock && (this.stock.length || (this.waste.length && this.drawCount > 1))) {
      return true;
    }
    return this.foundationMoves().length > 0 || this.tableauMoves().length > 0;
  }

  isStuck() {
    if (this.variant !== "canfield") return !this.hasLegalMove();
    // CF-27, CF-28: stuck when nothing but draws and redeals is left to play and no card a
    // full cycle of the stock brings to the top of the waste could be played.
    const fixed = [...this.foundationMoves(), ...this.tableauMoves()].some((m) => m.src !== "w");
    if (fixed) return false;
    const playable = this.playableCards();
    const waste = this.waste;
    if (playable === null) return !(waste.length || this.stock.length);
    if (waste.length && playable.has(waste[waste.length - 1])) return false;
    return !this.cycleTops().some((card) => playable.has(card));
  }

  // Canfield: the cards that drawing and redealing alone would bring to the top of the waste.
  cycleTops() {
    const { stock, waste, drawCount: n } = this;
    const tops = [];
    for (let i = stock.length - n; i > -n; i -= n) tops.push(stock[Math.max(0, i)]);
    const size = stock.length;
    const last = size + waste.length - 1;
    for (let i = last + 1 - n; i > -n; i -= n) {
      const j = Math.max(0, i);
      tops.push(j < size ? stock[j] : waste[last - j]);
    }
    return tops;
  }

  // Canfield: every card that could be played now (null: any card, onto an open space).
  playableCards() {
    const cards = new Set();
    for (const f of this.foundations) {
      if (!f.length) for (let suit = 0; suit < 4; suit += 1) cards.add(suit * 13);
      else if (rankOf(f[f.length - 1]) < 13) cards.add(f[f.length - 1] + 1);
    }
    for (const target of this.tableau) {
      if (target.length) {
        const top = target[target.length - 1];
        if (rankOf(top) > 1) {
          for (let suit = 0; suit < 4; suit += 1) {
            if ((suit === 1 || suit === 2) !== isRed(top)) cards.add(suit * 13 + rankOf(top) - 2);
          }
        }
      } else if (!this.reserve.length) {
        return null;
      }
    }
    return cards;
  }

  // -- views --------------------------------------------------------------------------------

  // The masked board, as solrace.engine.board_view has it: face-down cards only counted.
  boardView() {
    const top = (pile) => (pile.length ? cardName(pile[pile.length - 1]) : null);
    const view = {
      variant: this.variant,
      tableau: this.tableau.map(names),
      foundations: this.foundations.map((f) => ({ top: top(f), count: f.length })),
      base_rank: RANK_NAMES[this.baseRank],
      status: this.status,
      banked: this.banked,
      moves: this.moves,
    };
    if (this.hasStock) {
      view.reserve = { count: this.reserve.length, top: top(this.reserve) };
      view.stock = { count: this.stock.length };
      view.waste = { count: this.waste.length, visible: names(this.visibleWaste()) };
    }
    return view;
  }

  // Every card of every pile, bottom first, with the waste's fan (solrace.engine's
  // full_layout and Game.fan): a dealer's tool, for after the race.
  layout() {
    const layout = {
      variant: this.variant,
      seed: this.seed.toString(),
      tableau: this.tableau.map(names),
      foundations: this.foundations.map(names),
    };
    if (this.hasStock) {
      layout.reserve = names(this.reserve);
      layout.stock = names(this.stock);
      layout.waste = names(this.waste);
    }
    layout.fan = this.fan;
    return layout;
  }
}

export function newGame(variant, seed, options) {
  return new Game(variant, seed, options);
}

// -- a race record -------------------------------------------------------------------------

// The race record's JSON (/api/race) with its seed's exact digits: JSON.parse would round a
// seed above 2^53, so the seed is kept as its text.
export function parseRecord(text) {
  const data = JSON.parse(text, function keepSeed(key, value, context) {
    if (key === "seed" && typeof value === "number" && context && typeof context.source === "string") {
      return context.source;
    }
    return value;
  });
  if (typeof data.seed === "number") {
    const match = /(?<!\\)"seed"\s*:\s*(\d+)/.exec(text);
    data.seed = match ? match[1] : String(data.seed);
  }
  return data;
}

const FINAL = new Set(["resigned", "out_of_time", "stuck"]);
export const PAR_ID = "par";
const PAR_PACE_MS = 250;

// The index of the last time in the ascending `times` that is <= t, plus one: how many
// moves have been played by t.
function playedBy(times, t) {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The race's length as its record has it (ms): when its last player's game ended (each
// person's result's time_ms: when they won, resigned or stuck, or the race's length for one
// out of time), or its last move, if later. A ghost's result is its recorded run's end,
// not this race's (the race ends whenever the people are done): it does not count.
export function raceLength(record) {
  let end = 0;
  for (const result of Array.isArray(record.results) ? record.results : []) {
    if (!result || result.ghost) continue;
    const ms = Number(result.time_ms);
    if (Number.isFinite(ms)) end = Math.max(end, ms);
  }
  const played = record.players && typeof record.players === "object" ? record.players : {};
  for (const entry of Object.values(played)) {
    const moves = Array.isArray(entry?.moves) ? entry.moves : [];
    const times = (Array.isArray(entry?.times) ? entry.times : []).slice(0, moves.length);
    for (const t of times) if (Number.isFinite(Number(t))) end = Math.max(end, Number(t));
  }
  return end;
}

// Every player's board after each of their moves, and their standing at any time of the
// race: {variant, seed, duration, moveTimes, players: [{id, name, result, times, views,
// error}], at(t)}. Players come in the results' order. The duration is the race's length
// (raceLength): the replay ends where the race did.
export class RaceReplay {
  constructor(record) {
    this.record = record;
    this.variant = record.variant;
    this.seed = toSeed(record.seed);
    const undoAllowed = record.undo !== false;
    const results = Array.isArray(record.results) ? record.results : [];
    const played = { ...(record.players && typeof record.players === "object" ? record.players : {}) };
    const ids = [...results.map((r) => r.player_id).filter((id) => id in played)];
    for (const id of Object.keys(played)) if (!ids.includes(id)) ids.push(id);
    const length = raceLength(record);
    // The certified winning line of a winnable deal, watched beside the players: four moves
    // a second (it was found, not played, so it has no times of its own), or faster, evenly
    // over the race, where the race was over sooner: it is played out by the race's end.
    if (Array.isArray(record.par_line) && record.par_line.length && !(PAR_ID in played)) {
      const moves = record.par_line.map(String);
      const pace = Math.min(PAR_PACE_MS, length / moves.length);
      played[PAR_ID] = {
        name: `Par: the solver's line (${counted(moves.length, "move")})`,
        moves,
        times: moves.map((_, i) => Math.min(length, Math.round((i + 1) * pace))),
      };
      ids.push(PAR_ID);
    }
    const moveTimes = new Set();
    this.players = ids.map((id) => {
      const entry = played[id];
      const result = results.find((r) => r.player_id === id) || null;
      const moves = Array.isArray(entry.moves) ? entry.moves : [];
      const times = (Array.isArray(entry.times) ? entry.times : []).slice(0, moves.length);
      const game = new Game(this.variant, this.seed, { undoAllowed });
      const views = [game.boardView()];
      let error = null;
      for (let i = 0; i < times.length; i += 1) {
        try {
          game.apply(moves[i]);
        } catch (problem) {
          error = { index: i, move: moves[i], message: problem.message };
          break;
        }
        views.push(game.boardView());
      }
      const kept = times.slice(0, views.length - 1);
      for (const t of kept) moveTimes.add(t);
      return { id, name: entry.name || result?.name || id, result, times: kept, views, error };
    });
    this.duration = length;
    this.moveTimes = [...moveTimes].sort((a, b) => a - b);
  }

  // Each player's standing at time t (ms in the race): {player, step, view, status}. The
  // status is the board's own (won, stuck, playing) until the player's game ended, and
  // then the result's (resigned, out of time, stuck).
  at(t) {
    return this.players.map((player) => {
      const step = playedBy(player.times, t);
      const view = player.views[step];
      let status = view.status;
      const result = player.result;
      if (
        result &&
        FINAL.has(result.status) &&
        status !== "won" &&
        step === player.views.length - 1 &&
        t >= (Number(result.time_ms) || 0)
      ) {
        status = result.status;
      }
      return { player, step, view, status };
    });
  }

  // The time of the first move after t (or the end), and of the last move before t (or 0).
  nextTime(t) {
    const i = playedBy(this.moveTimes, t);
    return i < this.moveTimes.length ? this.moveTimes[i] : this.duration;
  }

  previousTime(t) {
    let lo = 0;
    let hi = this.moveTimes.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.moveTimes[mid] < t) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 ? this.moveTimes[lo - 1] : 0;
  }
}
