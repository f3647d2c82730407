// A game's board drawn from a view, with drag and drop, tap to move and double-click.
//
// Piles carry data-pile ("t1".."t8", "f1".."f4", "r", "w", "s") and cards data-card
// ("10H"). A drag (pointer events) carries a card and the cards above it (the whole pile
// in Rainbow Canfield); the piles the rules allow light up. A drop sends the move; the
// cards stay where they were dropped until the server answers, and fly back if it refuses.

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

const DRAG_THRESHOLD = 5;
const DOUBLE_TAP_MS = 450;

function el(tag, className, attrs = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  return node;
}

export function cardElement(name) {
  const card = parseCard(name);
  const symbol = SUIT_SYMBOLS[card.suit];
  const node = el("div", `card face ${card.red ? "red" : "black"}`, {
    "data-card": name,
    "aria-label": `${card.rankText} of ${SUIT_NAMES[card.suit]}`,
    role: "img",
  });
  const corner = el("span", "corner");
  corner.append(el("span", "rank"), el("span", "suit"));
  corner.firstChild.textContent = card.rankText;
  corner.lastChild.textContent = symbol;
  const pip = el("span", "pip");
  pip.textContent = symbol;
  const foot = el("span", "corner foot");
  foot.textContent = card.rankText + symbol;
  node.append(corner, pip, foot);
  return node;
}

function backElement() {
  return el("div", "card back", { "aria-hidden": "true" });
}

function badge(text, testid) {
  const node = el("span", "badge", { "data-testid": testid });
  node.textContent = String(text);
  return node;
}

function slot(label) {
  const node = el("div", "slot");
  node.textContent = label;
  return node;
}

function pileElement(id, kind, title) {
  return el("div", `pile ${kind}`, { "data-pile": id, title });
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

export function drawBoard(view) {
  const variant = view.variant;
  const stock = hasStock(variant);
  const board = el("div", `board ${stock ? "layout-canfield" : "layout-canister"}`, {
    "data-testid": "board",
    "data-variant": variant,
  });

  view.foundations.forEach((f, i) => {
    const pile = pileElement(`f${i + 1}`, "foundation", `foundation ${i + 1}`);
    if (f.top) {
      const card = cardElement(f.top);
      card.dataset.top = "1";
      pile.append(card, badge(f.count, `count-f${i + 1}`));
    } else {
      pile.append(slot(view.base_rank || "A"));
    }
    pile.style.gridColumn = String((stock ? 3 : 3) + i);
    pile.style.gridRow = "1";
    board.append(pile);
  });

  if (stock) {
    const s = pileElement("s", "stock", "stock: click to draw");
    if (view.stock.count > 0) {
      s.append(backElement(), badge(view.stock.count, "count-s"));
    } else {
      const canRedeal = variant === "canfield" && view.waste.count > 0;
      s.append(slot(canRedeal ? "↻" : "∅"));
      s.title = canRedeal ? "stock empty: click to redeal" : "stock empty";
      if (canRedeal) s.classList.add("redeal");
    }
    s.style.gridColumn = "1";
    s.style.gridRow = "1";

    const w = pileElement("w", "waste", "waste");
    const visible = view.waste.visible;
    visible.forEach((name, i) => {
      const card = cardElement(name);
      card.style.left = `calc(var(--wfan) * ${i})`;
      if (i === visible.length - 1) card.dataset.top = "1";
      w.append(card);
    });
    if (!visible.length) w.append(slot(""));
    if (view.waste.count > 0) {
      const count = badge(view.waste.count, "count-w");
      count.style.left = `calc(var(--wfan) * ${Math.max(0, visible.length - 1)} + var(--cw) * 0.8)`;
      w.append(count);
    }
    w.style.gridColumn = "2";
    w.style.gridRow = "1";

    const r = pileElement("r", "reserve", "reserve");
    if (view.reserve.count > 0) {
      if (view.reserve.count > 1) r.append(backElement());
      const card = cardElement(view.reserve.top);
      card.dataset.top = "1";
      r.append(card, badge(view.reserve.count, "count-r"));
    } else {
      r.append(slot("∅"));
    }
    r.style.gridColumn = "1";
    r.style.gridRow = "2";
    board.append(s, w, r);
  }

  let longest = 1;
  view.tableau.forEach((cards, i) => {
    const pile = pileElement(`t${i + 1}`, "tableau", `pile ${i + 1}`);
    if (!cards.length) pile.append(slot(""));
    cards.forEach((name, j) => {
      const card = cardElement(name);
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
  return board;
}

// An interactive board for the player: calls `onMove(text)` (a promise of true when the
// server accepted the move) and `onStock()` for a click on the stock.
export class BoardView {
  constructor(host, { onMove }) {
    this.host = host;
    this.onMove = onMove;
    this.view = null;
    this.board = null;
    this.busy = false;
    this.drag = null;
    this.press = null;
    this.selected = null;
    this.lastTap = null;
    this.ignoreDblclickUntil = 0;
    this.enabled = true;
    this._onPointerMove = (event) => this.pointerMove(event);
    this._onPointerUp = (event) => this.pointerUp(event);
    this._onPointerCancel = () => this.cancelPress();
    host.addEventListener("pointerdown", (event) => this.pointerDown(event));
    host.addEventListener("dblclick", (event) => this.doubleClick(event));
  }

  update(view) {
    this.view = view;
    this.clearSelection();
    const board = drawBoard(view);
    board.classList.add("interactive");
    if (this.board) this.board.replaceWith(board);
    else this.host.append(board);
    this.board = board;
    board.classList.toggle("disabled", !this.enabled);
    board.setAttribute("aria-disabled", String(!this.enabled));
  }

  // A disabled board takes no press, drag or double-click; a press not yet sent as a move
  // is dropped (its cards fly back).
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
    const layer = el("div", "drag-layer", { "data-testid": "drag-layer" });
    const style = getComputedStyle(this.board);
    for (const name of ["--cw", "--ch", "--fan"]) {
      layer.style.setProperty(name, style.getPropertyValue(name));
    }
    const origins = [];
    for (const node of grabbed.elements) {
      const rect = node.getBoundingClientRect();
      const clone = node.cloneNode(true);
      clone.classList.add("dragging");
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
    const view = this.view;
    const pileId = press.pileId;
    if (pileId === "s") {
      this.clearSelection();
      const redeal = view.stock.count === 0 && view.variant === "canfield";
      this.sendAction(redeal ? "rd" : "d");
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
      const targets = legalTargets(this.view, selected.src, selected.count);
      const other = press.card ? this.grab(pileId, press.card) : null;
      this.clearSelection();
      if (!targets.includes(pileId) && other) {
        // Not a place the selection may go, but a card that may move: pick it instead.
        this.select(other);
        return;
      }
      if (pileId !== "s" && pileId !== "r" && pileId !== "w") {
        this.send(selected.src, pileId, selected.count);
      }
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
  }

  clearSelection() {
    this.selected = null;
    if (!this.board) return;
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
