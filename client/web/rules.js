// Cards, and the fit checks of the four games (docs: RULES.md), read from a player's view.
//
// The server is the authority on every move; these checks only light up the piles a
// dragged card may go to. A drop on any other pile is still sent, and the server's
// refusal is shown.

export const VARIANTS = [
  ["british-canister", "British Canister"],
  ["american-canister", "American Canister"],
  ["rainbow-canfield", "Rainbow Canfield"],
  ["canfield", "Canfield (Solo Cards)"],
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
