// A game's board drawn from a view, played with the mouse, a finger or the keyboard.
//
// Piles carry data-pile ("t1".."t8", "f1".."f4", "r", "w", "s") and cards data-card
// ("10H"). A drag (pointer events) carries a card and the cards above it (the whole pile
// in Rainbow Canfield); the piles the rules allow light up. A drop sends the move; the
// cards stay where they were dropped until the server answers, and fly back if it refuses.
//
// Each pile is a labelled group; on the player's board every card that may be picked up,
// and each pile's place when it has none, is a button that takes focus (one at a time
// in the tab order: the arrow keys move the focus, Enter picks up and puts down, F sends
// a card home, D draws, U undoes). Long piles fan tighter, then the cards shrink, so
// that the board fits the window's height; cards that move slide to their new place
// (not when the system asks for reduced motion).

import {
  SUIT_NAMES,
  SUIT_SYMBOLS,
  canDragFrom,
  hasStock,
  legalTargets,
  parseCard,
  sourceCards,
  tableauUnit,
} from "./rules.js";
import { aRank, cardTitle, cardWords, counted, rankWord } from "./words.js";

const DRAG_THRESHOLD = 5;
const DOUBLE_TAP_MS = 450;
const MOVE_MS = 180;
// A pile's cards overlap by at least this much of a card's width before the cards shrink:
// each card's corner (its rank and suit) stays in sight.
const MIN_FAN = 0.3;
const MIN_CARD_PX = 30;

function el(tag, className, attrs = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  return node;
}

export function reducedMotion() {
  return typeof window.matchMedia === "function" && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
}

export function cardElement(name) {
  const card = parseCard(name);
  const symbol = SUIT_SYMBOLS[card.suit];
  const node = el("div", `card face ${card.red ? "red" : "black"}`, {
    "data-card": name,
    "aria-label": `${rankWord(card.rankText)} of ${SUIT_NAMES[card.suit]}`,
    role: "img",
  });
  // The face's rank and suit are drawn by the style sheet (data-text), so that the card's
  // name for a screen reader is its only text: "Queen of spades", not "Q♠ ♠ Q♠".
  const corner = el("span", "corner", { "aria-hidden": "true" });
  corner.append(el("span", "rank", { "data-text": card.rankText }), el("span", "suit", { "data-text": symbol }));
  const pip = el("span", "pip", { "aria-hidden": "true", "data-text": symbol });
  const foot = el("span", "corner foot", { "aria-hidden": "true", "data-text": card.rankText + symbol });
  node.append(corner, pip, foot);
  return node;
}

function backElement() {
  return el("div", "card back", { "aria-hidden": "true" });
}

// A card a spectator is not shown yet: null in a delayed room's boards while the race
// runs, until every player still racing has had it face up (docs/protocol.md, boards).
const FACE_DOWN = "a card face down";

function faceDownElement() {
  return el("div", "card back face-down", { role: "img", "aria-label": FACE_DOWN, "data-face-down": "1" });
}

// The card `name` drawn face up, or its back where the name is withheld (null).
function shownCard(name) {
  return name ? cardElement(name) : faceDownElement();
}

function titleOf(name) {
  return name ? cardTitle(name) : FACE_DOWN;
}

function badge(text, testid) {
  const node = el("span", "badge", { "data-testid": testid, "aria-hidden": "true" });
  node.textContent = String(text);
  return node;
}

function slot(label, name) {
  const node = el("div", "slot", { "data-name": name });
  const text = el("span", "slot-text", { "aria-hidden": "true" });
  text.textContent = label;
  node.append(text);
  return node;
}

function pileElement(id, kind, label, name) {
  return el("div", `pile ${kind}`, { "data-pile": id, "data-label": label || null, role: "group", "aria-label": name });
}

function count(n, word = "card") {
  return counted(n, word);
}

// Draw the board of `view` into a fresh element (no interaction).
const NAMED_PILES = { r: "reserve", s: "stock", w: "waste" };

// The player's view after an ack's delta (docs/protocol.md, ack), as a new object: each
// pile named in delta.piles (t2, f1, r, s, w) replaces its part, every other key replaces
// the view's, and a legal-move list the delta lacks is dropped as out of date. A name
// that is no pile of the view throws.
export function applyDelta(view, delta) {
  const next = { ...view };
  for (const [name, pile] of Object.entries(delta.piles || {})) {
    const kind = name.slice(0, 1);
    const number = name.slice(1);
    if (NAMED_PILES[kind] && number === "") {
      next[NAMED_PILES[kind]] = pile;
      continue;
    }
    const key = { t: "tableau", f: "foundations" }[kind];
    const index = /^[0-9]+$/.test(number) ? Number(number) - 1 : -1;
    if (!key || index < 0 || index >= view[key].length) {
      throw new Error(`a delta names no pile ${JSON.stringify(name)} of this view`);
    }
    if (next[key] === view[key]) next[key] = [...view[key]];
    next[key][index] = pile;
  }
  for (const [key, value] of Object.entries(delta)) {
    if (key !== "piles") next[key] = value;
  }
  if (!("legal" in delta)) delete next.legal;
  return next;
}

// The words a foundation's label says of where it starts: "Ace", or the lead rank.
function startsWith(view) {
  return aRank(view.base_rank || "A");
}

// Draw the board of `view`. Each pile is a group named for a screen reader ("Pile 3 of
// the tableau: 4 cards"), with a visible label on the first of each kind.
export function drawBoard(view) {
  const variant = view.variant;
  const stock = hasStock(variant);
  const board = el("div", `board ${stock ? "layout-canfield" : "layout-canister"}`, {
    "data-testid": "board",
    "data-variant": variant,
    "data-moves": view.moves === undefined ? null : String(view.moves),
  });
  const wraps = variant === "rainbow-canfield";
  const starts = startsWith(view);

  view.foundations.forEach((f, i) => {
    let label = null;
    if (i === 0) label = wraps ? `Foundations · from ${rankWord(view.base_rank)}` : "Foundations · Ace to King";
    const name = f.top || f.count > 0
      ? `Foundation ${i + 1}: ${titleOf(f.top)} on top, ${count(f.count)}`
      : `Foundation ${i + 1}: empty, starts with ${starts}`;
    const pile = pileElement(`f${i + 1}`, "foundation", label, name);
    if (f.top || f.count > 0) {
      const card = shownCard(f.top);
      card.dataset.top = "1";
      pile.append(card, badge(f.count, `count-f${i + 1}`));
    } else {
      pile.append(slot(view.base_rank || "A", `Empty foundation ${i + 1}: starts with ${starts}`));
    }
    pile.style.gridColumn = String(3 + i);
    pile.style.gridRow = "1";
    board.append(pile);
  });

  if (stock) {
    const canRedeal = variant === "canfield" && view.stock.count === 0 && view.waste.count > 0;
    let what = "draw";
    if (view.stock.count === 0) what = canRedeal ? "turn the waste over" : "empty";
    const s = pileElement("s", "stock", "Stock", `Stock: ${count(view.stock.count)}`);
    if (view.stock.count > 0) {
      const back = backElement();
      back.removeAttribute("aria-hidden");
      back.classList.add("stock-back");
      back.dataset.name = `Stock, ${count(view.stock.count)}: draw ${variant === "canfield" ? "three" : "one"}`;
      s.append(back, badge(view.stock.count, "count-s"));
    } else {
      s.append(slot(canRedeal ? "↻" : "∅", canRedeal ? "Stock empty: turn the waste over" : "Stock empty"));
      if (canRedeal) s.classList.add("redeal");
    }
    s.title = what === "draw" ? "stock: click to draw" : what === "empty" ? "stock empty" : "stock empty: click to redeal";
    s.style.gridColumn = "1";
    s.style.gridRow = "1";

    const visible = view.waste.visible;
    const wasteTop = visible.length ? titleOf(visible[visible.length - 1]) : null;
    const w = pileElement(
      "w",
      "waste",
      "Waste",
      view.waste.count ? `Waste: ${count(view.waste.count)}, ${wasteTop} on top` : "Waste: empty",
    );
    visible.forEach((name, i) => {
      const card = shownCard(name);
      card.style.left = `calc(var(--wfan) * ${i})`;
      if (i === visible.length - 1) card.dataset.top = "1";
      w.append(card);
    });
    if (!visible.length) w.append(slot("", "Empty waste"));
    if (view.waste.count > 0) {
      const n = badge(view.waste.count, "count-w");
      n.style.left = `calc(var(--wfan) * ${Math.max(0, visible.length - 1)} + var(--cw) * 0.8)`;
      w.append(n);
    }
    w.style.gridColumn = "2";
    w.style.gridRow = "1";

    const r = pileElement(
      "r",
      "reserve",
      "Reserve",
      view.reserve.count ? `Reserve: ${count(view.reserve.count)}, ${titleOf(view.reserve.top)} on top` : "Reserve: empty",
    );
    if (view.reserve.count > 0) {
      if (view.reserve.count > 1) r.append(backElement());
      const card = shownCard(view.reserve.top);
      card.dataset.top = "1";
      r.append(card, badge(view.reserve.count, "count-r"));
    } else {
      r.append(slot("∅", "Empty reserve"));
    }
    r.style.gridColumn = "1";
    r.style.gridRow = "2";
    board.append(s, w, r);
  }

  let longest = 1;
  view.tableau.forEach((cards, i) => {
    const top = cards.length ? `, ${titleOf(cards[cards.length - 1])} on top` : "";
    const name = cards.length ? `Pile ${i + 1} of the tableau: ${count(cards.length)}${top}` : `Pile ${i + 1} of the tableau: empty`;
    const pile = pileElement(`t${i + 1}`, "tableau", i === 0 ? "Tableau" : null, name);
    if (!cards.length) pile.append(slot("", `Empty pile ${i + 1}`));
    cards.forEach((cardName, j) => {
      const card = shownCard(cardName);
      card.dataset.index = String(j);
      card.style.top = `calc(var(--fan) * ${j})`;
      if (j === cards.length - 1) card.dataset.top = "1";
      pile.append(card);
    });
    longest = Math.max(longest, cards.length);
    pile.style.gridColumn = String(stock ? 3 + i : 1 + i);
    pile.style.gridRow = "2";
    board.append(pile);
  });
  board.style.setProperty("--longest", String(longest));
  board.dataset.longest = String(longest);
  return board;
}

// The piles of a board in rows, for the arrow keys: [[top row], [bottom row]], each
// pile with its grid column.
function rowsOf(view) {
  const foundations = view.foundations.map((_, i) => ({ id: `f${i + 1}`, column: 3 + i }));
  if (hasStock(view.variant)) {
    return [
      [{ id: "s", column: 1 }, { id: "w", column: 2 }, ...foundations],
      [{ id: "r", column: 1 }, ...view.tableau.map((_, i) => ({ id: `t${i + 1}`, column: 3 + i }))],
    ];
  }
  return [foundations, view.tableau.map((_, i) => ({ id: `t${i + 1}`, column: 1 + i }))];
}

// An interactive board for the player: calls `onMove(text)` (a promise of true when the
// server accepted the move), `onUndo()` for U, and `onSay(text)` with what a screen
// reader should hear of a pick-up.
export class BoardView {
  constructor(host, { onMove, onUndo = () => {}, onSay = () => {} }) {
    this.host = host;
    this.onMove = onMove;
    this.onUndo = onUndo;
    this.onSay = onSay;
    this.view = null;
    this.board = null;
    this.busy = false;
    this.drag = null;
    this.press = null;
    this.selected = null;
    this.lastTap = null;
    this.ignoreDblclickUntil = 0;
    this.enabled = true;
    this.focusKey = null; // {pile, index}: what has (or last had) the keyboard's focus
    this._onPointerMove = (event) => this.pointerMove(event);
    this._onPointerUp = (event) => this.pointerUp(event);
    this._onPointerCancel = () => this.cancelPress();
    host.addEventListener("pointerdown", (event) => this.pointerDown(event));
    host.addEventListener("dblclick", (event) => this.doubleClick(event));
    host.addEventListener("keydown", (event) => this.keyDown(event));
    host.addEventListener("focusin", (event) => this.focusIn(event));
    let fitting = 0;
    window.addEventListener("resize", () => {
      cancelAnimationFrame(fitting);
      fitting = requestAnimationFrame(() => this.fit());
    });
  }

  update(view, { slide = true } = {}) {
    const before = slide && this.board && !reducedMotion() ? this.cardRects() : null;
    const focused = this.board && this.board.contains(document.activeElement);
    this.view = view;
    this.clearSelection();
    const board = drawBoard(view);
    board.classList.add("interactive");
    this.makeFocusable(board);
    if (this.board) this.board.replaceWith(board);
    else this.host.append(board);
    this.board = board;
    board.classList.toggle("disabled", !this.enabled);
    board.setAttribute("aria-disabled", String(!this.enabled));
    this.fit();
    this.rove(focused);
    if (before) this.slide(before);
  }

  // A disabled board takes no press, drag, double-click or key; a press not yet sent as
  // a move is dropped (its cards fly back).
  setEnabled(enabled) {
    this.enabled = enabled;
    if (this.board) {
      this.board.classList.toggle("disabled", !enabled);
      this.board.setAttribute("aria-disabled", String(!enabled));
    }
    if (!enabled) {
      if (this.press) this.cancelPress();
      this.clearSelection();
    }
  }

  // -- fitting the window --------------------------------------------------------------------

  // Fan the longest tableau pile tighter (and, past MIN_FAN, shrink the cards) so that the
  // board's bottom stays inside the window.
  fit() {
    const board = this.board;
    if (!board || !board.isConnected) return;
    board.style.removeProperty("--fan");
    board.style.removeProperty("--cw");
    const longest = Number(board.dataset.longest || 1);
    const pile = board.querySelector(".pile.tableau");
    if (!pile) return;
    const cw = pile.offsetWidth;
    if (!cw) return;
    const ch = cw * 1.4;
    const top = board.getBoundingClientRect().top + window.scrollY;
    const pileTop = pile.getBoundingClientRect().top - board.getBoundingClientRect().top;
    // A board that starts far down the page (many players above it) fits a screenful.
    const room = Math.max(window.innerHeight - top - 24, window.innerHeight * 0.6);
    const natural = pileTop + ch + (longest - 1) * cw * 0.4 + 10;
    board.dataset.fit = "natural";
    if (longest <= 1 || natural <= room) return;
    // The fan that fits at this card size, if it is no tighter than MIN_FAN.
    const fan = (room - pileTop - ch - 10) / (longest - 1);
    if (fan >= cw * MIN_FAN) {
      board.style.setProperty("--fan", `${fan.toFixed(2)}px`);
      board.dataset.fit = "fan";
      return;
    }
    // Smaller cards: the row above the tableau and the pile scale with the card width, the
    // board's padding and the gap between the rows do not.
    const fixed = pileTop - ch;
    const smaller = Math.max(MIN_CARD_PX, Math.floor((room - 10 - fixed) / (2.8 + (longest - 1) * MIN_FAN)));
    if (smaller < cw) {
      board.style.setProperty("--cw", `${smaller}px`);
      board.style.setProperty("--fan", `${(smaller * MIN_FAN).toFixed(2)}px`);
      board.dataset.fit = "small";
    }
  }

  // -- cards sliding to their new place --------------------------------------------------

  cardRects() {
    const rects = new Map();
    for (const node of this.board.querySelectorAll(".card[data-card]")) {
      if (!node.classList.contains("lifted")) rects.set(node.dataset.card, node.getBoundingClientRect());
    }
    // Cards being dragged start from where they were dropped.
    if (this.drag) {
      for (const node of this.drag.layer.querySelectorAll(".card[data-card]")) {
        rects.set(node.dataset.card, node.getBoundingClientRect());
      }
    }
    const stock = this.board.querySelector('[data-pile="s"]');
    if (stock) rects.set("stock", stock.getBoundingClientRect());
    return rects;
  }

  slide(before) {
    if (typeof Element.prototype.animate !== "function") return;
    const stock = before.get("stock");
    for (const node of this.board.querySelectorAll(".card[data-card]")) {
      let from = before.get(node.dataset.card);
      // A card that was face down in the stock comes from the stock.
      if (!from && stock && node.closest('[data-pile="w"]')) from = stock;
      if (!from) continue;
      const to = node.getBoundingClientRect();
      const dx = from.left - to.left;
      const dy = from.top - to.top;
      if (Math.abs(dx) < 1 && Math.abs(dy) < 1) continue;
      node.classList.add("moving");
      const animation = node.animate(
        [{ transform: `translate(${dx}px, ${dy}px)` }, { transform: "translate(0px, 0px)" }],
        { duration: MOVE_MS, easing: "cubic-bezier(0.2, 0.7, 0.3, 1)" },
      );
      const done = () => node.classList.remove("moving");
      animation.addEventListener("finish", done);
      animation.addEventListener("cancel", done);
    }
  }

  // -- the keyboard -----------------------------------------------------------------------

  // The element of a pile that takes the focus: a card (the one at `index` in a tableau
  // pile, else the top card), or the pile's place when it has no card to pick up.
  focusTarget(board, pileId, index = null) {
    const pile = board.querySelector(`[data-pile="${pileId}"]`);
    if (!pile) return null;
    if (pileId[0] === "t") {
      const cards = [...pile.querySelectorAll(".card[data-card]")];
      if (!cards.length) return pile.querySelector(".slot");
      const at = index === null || index >= cards.length ? cards.length - 1 : Math.max(0, index);
      return cards[at];
    }
    if (pileId === "s") return pile.querySelector(".stock-back, .slot");
    return pile.querySelector('.card[data-top="1"]') || pile.querySelector(".slot");
  }

  makeFocusable(board) {
    for (const pile of board.querySelectorAll("[data-pile]")) {
      const id = pile.dataset.pile;
      const targets = id[0] === "t" ? [...pile.querySelectorAll(".card[data-card]")] : [];
      const own = this.focusTarget(board, id);
      if (own && !targets.includes(own)) targets.push(own);
      for (const node of targets) {
        node.setAttribute("role", "button");
        node.setAttribute("tabindex", "-1");
        if (node.dataset.name) node.setAttribute("aria-label", node.dataset.name);
        node.classList.add("focusable");
      }
    }
  }

  // One element of the board is in the tab order: the one the focus was on, or the first
  // tableau pile's top card. `focused`: the board had the focus before it was drawn again.
  rove(focused) {
    const board = this.board;
    let key = this.focusKey;
    if (!key || !board.querySelector(`[data-pile="${key.pile}"]`)) key = { pile: "t1", index: null };
    const target = this.focusTarget(board, key.pile, key.index);
    for (const node of board.querySelectorAll('[tabindex="0"]')) node.setAttribute("tabindex", "-1");
    if (!target) return;
    target.setAttribute("tabindex", "0");
    if (focused) target.focus({ preventScroll: true });
  }

  // Put the keyboard's focus on the board (the race has started, say).
  focus() {
    if (!this.board) return;
    this.rove(false);
    const node = this.board.querySelector('[tabindex="0"]');
    if (node) node.focus({ preventScroll: true });
  }

  focusIn(event) {
    if (!this.board || !this.board.contains(event.target)) return;
    const pile = event.target.closest("[data-pile]");
    if (!pile) return;
    // The top card stays the focus's place as cards come and go on the pile.
    const index = event.target.dataset.top === "1" || event.target.dataset.index === undefined ? null : Number(event.target.dataset.index);
    this.focusKey = { pile: pile.dataset.pile, index };
    for (const node of this.board.querySelectorAll('[tabindex="0"]')) {
      if (node !== event.target) node.setAttribute("tabindex", "-1");
    }
    event.target.setAttribute("tabindex", "0");
  }

  moveFocus(pileId, index = null) {
    const cards = pileId[0] === "t" ? sourceCards(this.view, pileId) : [];
    this.focusKey = { pile: pileId, index: index !== null && index < cards.length - 1 ? index : null };
    this.rove(true);
  }

  // The arrow keys: left and right along a row of piles, up and down through a tableau
  // pile's cards, and on to the row above or below.
  arrow(key) {
    const view = this.view;
    const rows = rowsOf(view);
    const current = this.focusKey || { pile: "t1", index: null };
    const row = rows.findIndex((r) => r.some((p) => p.id === current.pile));
    if (row < 0) return this.moveFocus("t1");
    const place = rows[row].findIndex((p) => p.id === current.pile);
    const column = rows[row][place].column;
    const cards = current.pile[0] === "t" ? sourceCards(view, current.pile) : [];
    const index = current.index === null || current.index >= cards.length ? cards.length - 1 : current.index;
    const nearest = (r) =>
      rows[r].reduce((best, p) => (Math.abs(p.column - column) < Math.abs(best.column - column) ? p : best));
    if (key === "ArrowLeft" && place > 0) return this.moveFocus(rows[row][place - 1].id);
    if (key === "ArrowRight" && place < rows[row].length - 1) return this.moveFocus(rows[row][place + 1].id);
    if (key === "ArrowUp") {
      if (cards.length && index > 0) return this.moveFocus(current.pile, index - 1);
      if (row > 0) return this.moveFocus(nearest(row - 1).id);
    }
    if (key === "ArrowDown") {
      if (cards.length && index < cards.length - 1) return this.moveFocus(current.pile, index + 1);
      if (row < rows.length - 1) return this.moveFocus(nearest(row + 1).id);
    }
    return undefined;
  }

  keyDown(event) {
    if (!this.view || !this.board || !this.board.contains(event.target)) return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const key = event.key;
    const handled = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Enter", " ", "Escape", "f", "F", "d", "D", "u", "U"];
    if (!handled.includes(key)) return;
    event.preventDefault();
    event.stopPropagation();
    if (key.startsWith("Arrow")) {
      this.arrow(key);
      return;
    }
    if (!this.enabled || this.busy) return;
    const pile = event.target.closest("[data-pile]");
    const pileId = pile ? pile.dataset.pile : null;
    const card = event.target.closest(".card[data-card]");
    if (key === "Escape") {
      if (this.selected) this.onSay("Put back.");
      this.clearSelection();
      return;
    }
    if (key === "d" || key === "D") {
      this.draw();
      return;
    }
    if (key === "u" || key === "U") {
      this.clearSelection();
      this.onUndo();
      return;
    }
    if (key === "f" || key === "F") {
      const selected = this.selected;
      this.clearSelection();
      if (selected && selected.count === 1) {
        this.sendAction(`${selected.src}-f`);
        return;
      }
      if (pileId && ["t", "r", "w"].includes(pileId[0])) this.sendAction(`${pileId}-f`);
      return;
    }
    // Enter or Space: pick up, or put down.
    if (!pileId) return;
    if (pileId === "s") {
      this.draw();
      return;
    }
    const selected = this.selected;
    if (selected) {
      this.clearSelection();
      if (pileId === selected.src) {
        this.onSay("Put back.");
        return;
      }
      this.send(selected.src, pileId, selected.count);
      return;
    }
    const grabbed = card ? this.grab(pileId, card) : null;
    if (!grabbed) {
      if (pileId[0] === "f" && card && this.view.variant !== "canfield") {
        this.onSay("No card comes back from a foundation in this game.");
      } else {
        this.onSay("Nothing to pick up here.");
      }
      return;
    }
    this.select(grabbed);
    const first = grabbed.elements[0]?.dataset.card;
    const more = grabbed.count > 1 ? ` and ${grabbed.count - 1 === 1 ? "the card" : `the ${counted(grabbed.count - 1, "card")}`} on it` : "";
    const where = legalTargets(this.view, grabbed.src, grabbed.count).length
      ? "Move to the pile it goes to and press Enter; Escape puts it back."
      : "It fits nowhere just now: Escape puts it back.";
    this.onSay(`Picked up ${first ? cardWords(first) : "the cards"}${more}. ${where}`);
  }

  draw() {
    if (!hasStock(this.view.variant) || !this.enabled || this.busy) return;
    this.clearSelection();
    const redeal = this.view.stock.count === 0 && this.view.variant === "canfield" && this.view.waste.count > 0;
    this.sendAction(redeal ? "rd" : "d");
  }

  // -- what a pointer is on ---------------------------------------------------------------

  pileAt(x, y) {
    for (const node of document.elementsFromPoint(x, y)) {
      const pile = node.closest("[data-pile]");
      if (pile && this.board && this.board.contains(pile)) return pile;
    }
    return null;
  }

  // The cards a press on `card` in `pile` would carry: {src, count, start, elements}.
  grab(pileId, card) {
    const view = this.view;
    if (!canDragFrom(view.variant, pileId)) return null;
    const pileEl = this.board.querySelector(`[data-pile="${pileId}"]`);
    if (pileId[0] === "t") {
      const cards = sourceCards(view, pileId);
      if (!cards.length) return null;
      let start = Number(card.dataset.index);
      if (tableauUnit(view.variant) === "pile") start = 0;
      const elements = [...pileEl.querySelectorAll(".card[data-card]")].filter(
        (node) => Number(node.dataset.index) >= start,
      );
      return { src: pileId, count: cards.length - start, start, elements };
    }
    if (card.dataset.top !== "1") return null;
    return { src: pileId, count: 1, start: 0, elements: [card] };
  }

  // -- pointer events ---------------------------------------------------------------------

  pointerDown(event) {
    if (!this.view || !this.enabled || this.busy || this.drag) return;
    if (event.button !== undefined && event.button !== 0) return;
    const pile = event.target.closest("[data-pile]");
    if (!pile || !this.board.contains(pile)) return;
    const card = event.target.closest(".card[data-card]");
    this.press = {
      x: event.clientX,
      y: event.clientY,
      pointerId: event.pointerId,
      pointerType: event.pointerType,
      pileId: pile.dataset.pile,
      card,
    };
    if (card) event.preventDefault();
    window.addEventListener("pointermove", this._onPointerMove);
    window.addEventListener("pointerup", this._onPointerUp);
    window.addEventListener("pointercancel", this._onPointerCancel);
  }

  cancelPress() {
    window.removeEventListener("pointermove", this._onPointerMove);
    window.removeEventListener("pointerup", this._onPointerUp);
    window.removeEventListener("pointercancel", this._onPointerCancel);
    this.press = null;
    if (this.drag) this.snapBack();
  }

  pointerMove(event) {
    const press = this.press;
    if (!press || event.pointerId !== press.pointerId) return;
    if (!this.drag) {
      const dx = event.clientX - press.x;
      const dy = event.clientY - press.y;
      if (Math.hypot(dx, dy) < DRAG_THRESHOLD || !press.card) return;
      const grabbed = this.grab(press.pileId, press.card);
      if (!grabbed) return;
      this.startDrag(grabbed, press);
    }
    const drag = this.drag;
    drag.layer.style.transform = `translate(${event.clientX - press.x}px, ${event.clientY - press.y}px)`;
    const over = this.pileAt(event.clientX, event.clientY);
    if (over !== drag.over) {
      if (drag.over) drag.over.classList.remove("hover");
      drag.over = over;
      if (over && over.dataset.pile !== drag.src) over.classList.add("hover");
    }
  }

  startDrag(grabbed, press) {
    this.clearSelection();
    const layer = el("div", "drag-layer", { "data-testid": "drag-layer", "aria-hidden": "true" });
    const style = getComputedStyle(this.board);
    for (const name of ["--cw", "--ch", "--fan"]) {
      layer.style.setProperty(name, style.getPropertyValue(name));
    }
    const origins = [];
    for (const node of grabbed.elements) {
      const rect = node.getBoundingClientRect();
      const clone = node.cloneNode(true);
      clone.classList.add("dragging");
      clone.removeAttribute("tabindex");
      clone.style.left = `${rect.left}px`;
      clone.style.top = `${rect.top}px`;
      clone.style.width = `${rect.width}px`;
      clone.style.height = `${rect.height}px`;
      layer.append(clone);
      origins.push(node);
      node.classList.add("lifted");
    }
    document.body.append(layer);
    const targets = legalTargets(this.view, grabbed.src, grabbed.count);
    for (const id of targets) {
      const pile = this.board.querySelector(`[data-pile="${id}"]`);
      if (pile) pile.classList.add("target");
    }
    this.drag = { ...grabbed, layer, origins, over: null, startX: press.x, startY: press.y };
  }

  async pointerUp(event) {
    const press = this.press;
    if (!press || event.pointerId !== press.pointerId) return;
    window.removeEventListener("pointermove", this._onPointerMove);
    window.removeEventListener("pointerup", this._onPointerUp);
    window.removeEventListener("pointercancel", this._onPointerCancel);
    this.press = null;
    const drag = this.drag;
    if (!drag) {
      this.tap(press);
      return;
    }
    const over = this.pileAt(event.clientX, event.clientY);
    if (!over || over.dataset.pile === drag.src) {
      this.snapBack();
      return;
    }
    const dst = over.dataset.pile;
    if (dst === "s" || dst === "r" || dst === "w") {
      // Nothing is ever placed on these: a drop there is a miss, not a move.
      this.snapBack();
      return;
    }
    await this.send(drag.src, dst, drag.count);
  }

  // Send a move; on refusal, the lifted cards fly back.
  async send(src, dst, count) {
    const text = `${src}-${dst}${count > 1 ? `x${count}` : ""}`;
    if (!this.enabled) {
      this.snapBack();
      return false;
    }
    this.busy = true;
    let accepted = false;
    try {
      accepted = await this.onMove(text);
    } finally {
      this.busy = false;
    }
    if (this.drag) {
      if (accepted) this.dropLayer();
      else this.snapBack();
    }
    return accepted;
  }

  dropLayer() {
    const drag = this.drag;
    if (!drag) return;
    drag.layer.remove();
    for (const node of drag.origins) node.classList.remove("lifted");
    if (this.board) {
      for (const pile of this.board.querySelectorAll(".target, .hover")) {
        pile.classList.remove("target", "hover");
      }
    }
    this.drag = null;
  }

  snapBack() {
    const drag = this.drag;
    if (!drag) return;
    this.drag = null;
    const layer = drag.layer;
    layer.classList.add("returning");
    layer.style.transform = "translate(0px, 0px)";
    if (this.board) {
      for (const pile of this.board.querySelectorAll(".target, .hover")) {
        pile.classList.remove("target", "hover");
      }
    }
    const done = () => {
      layer.remove();
      for (const node of drag.origins) node.classList.remove("lifted");
    };
    layer.addEventListener("transitionend", done, { once: true });
    setTimeout(done, 260);
  }

  // -- taps, selection and double-clicks --------------------------------------------------

  tap(press) {
    const pileId = press.pileId;
    if (pileId === "s") {
      this.draw();
      return;
    }
    const now = performance.now();
    if (press.pointerType === "touch" && press.card) {
      const last = this.lastTap;
      this.lastTap = { card: press.card, at: now };
      if (last && last.card === press.card && now - last.at < DOUBLE_TAP_MS) {
        this.lastTap = null;
        this.ignoreDblclickUntil = now + 600;
        this.toFoundation(pileId, press.card);
        return;
      }
    }
    const selected = this.selected;
    if (selected && pileId !== selected.src) {
      // The picked cards go where the tap was; where they may not, the server's refusal
      // says why (in plain words), and nothing else is picked instead.
      this.clearSelection();
      this.send(selected.src, pileId, selected.count);
      return;
    }
    if (press.card) {
      const grabbed = this.grab(pileId, press.card);
      if (selected && grabbed && selected.src === grabbed.src && selected.count === grabbed.count) {
        this.clearSelection();
        return;
      }
      this.clearSelection();
      if (grabbed) this.select(grabbed);
      return;
    }
    this.clearSelection();
  }

  select(grabbed) {
    this.selected = grabbed;
    for (const node of grabbed.elements) node.classList.add("selected");
    for (const id of legalTargets(this.view, grabbed.src, grabbed.count)) {
      const pile = this.board.querySelector(`[data-pile="${id}"]`);
      if (pile) pile.classList.add("target");
    }
    if (this.board) this.board.dataset.holding = grabbed.src;
  }

  clearSelection() {
    this.selected = null;
    if (!this.board) return;
    delete this.board.dataset.holding;
    for (const node of this.board.querySelectorAll(".selected")) node.classList.remove("selected");
    if (!this.drag) {
      for (const node of this.board.querySelectorAll(".target")) node.classList.remove("target");
    }
  }

  doubleClick(event) {
    if (!this.view || !this.enabled || this.busy) return;
    if (performance.now() < this.ignoreDblclickUntil) return;
    const card = event.target.closest(".card[data-card]");
    const pile = event.target.closest("[data-pile]");
    if (!card || !pile || !this.board.contains(pile)) return;
    event.preventDefault();
    this.clearSelection();
    this.toFoundation(pile.dataset.pile, card);
  }

  toFoundation(pileId, card) {
    if (card.dataset.top !== "1" || !["t", "r", "w"].includes(pileId[0])) return;
    if (pileId[0] !== "t" && !hasStock(this.view.variant)) return;
    this.clearSelection();
    this.sendAction(`${pileId}-f`);
  }

  async sendAction(text) {
    if (this.busy || !this.enabled) return false;
    this.busy = true;
    try {
      return await this.onMove(text);
    } finally {
      this.busy = false;
    }
  }
}
