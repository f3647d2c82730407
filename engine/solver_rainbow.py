"""The solver's model of Rainbow Canfield: a compact state and its moves.

A state is ``(piles, found, rc, sp, waste)``:

- ``piles``: the four tableau piles as ``bytes`` (bottom card first);
- ``found``: how many cards each suit's foundation holds (by suit, C D H S); a suit's
  foundation takes the card whose rank is that many above the lead rank (wrapping);
- ``rc``: how many cards the reserve still holds (its top ``rc`` cards of the deal);
- ``sp``: how many cards have been drawn from the stock (there is no redeal, so the
  stock is the deal's stock less its first ``sp`` cards);
- ``waste``: the waste as ``bytes``, bottom card first.

Nothing fills an empty pile by itself (RC-14), and every rule treats the four piles
alike, so the key sorts them. The key leaves the waste out: it is fixed by the rest. No
card ever goes back to the stock, the reserve or the waste (RC-18 to RC-22), so the waste
holds exactly the cards that have come to it (the deal's waste, then the stock's first
``sp`` cards) and are neither banked (the foundations' counts name them) nor in a pile,
in the order they came.

Draws are folded into the waste's moves. A draw changes nothing but the stock and the
waste, and no move other than a draw or a move of the waste's top card depends on the
waste or the stock (an empty pile takes the waste's top only once the reserve is empty,
RC-16, and that is a move of the waste's top). So in any winning line a draw may be
put off, past every move that does not touch the waste, until just before the next
draw or move of the waste's top; the line keeps its length and its end. Every winning
line therefore has a form of the same length in which each run of draws is followed at
once by a move of the card drawn last (a won game has nothing left in the stock, and
its last move banks a card). The model's moves are those of that form: besides the
moves of the tableau, the reserve and the waste's top, "draw ``k`` cards (``k >= 1``) and
move the last one drawn", to a foundation or to the tableau; a position just after a
draw is never a state. The search (:mod:`.solver`) is complete over the model because
from every state with a win, a win of that form starts with one of the model's moves.

A whole pile moves onto another only when no pile is empty, and together with a fill of
the pile it empties (the reserve's top card, or with the reserve empty the waste's top or
the last of ``k`` cards drawn): one move of the model. A whole-pile move of ``A`` onto
``B`` changes nothing but those two piles: it covers ``B``'s top card (one place fewer for
a card to go, RC-8), makes ``A``'s bottom card one that can never move again (RC-9), and
empties a pile, which serves only to be filled (RC-15, RC-16) and takes nothing else
meanwhile. So in a winning line the move may be put off until just before a fill that
finds no other pile empty, with the moves between played on ``A`` and ``B`` as they were
on the merged pile: a card put on it goes on ``A`` (same top card); a card banked from it
comes off ``A``, or off ``B`` once ``A`` is gone (``A``'s pile is then empty already, and
its move is dropped); a move of the merged pile onto ``C`` is ``B``'s move onto ``C`` (same
bottom card), ``A`` following onto ``B`` when its own move is due (``B``'s top card has not
changed: it was covered). A move whose pile is never filled is dropped. Putting moves off
makes no move of the line illegal (``B``'s top card stays free longer, ``A``'s bottom
card stays movable), and the line keeps its end and is no longer.

Dead positions, cut without a search: a pile that holds a card above a card of the same
suit that its foundation needs earlier. A card leaves a tableau pile only to a
foundation, from the top, or with its whole pile (RC-9, RC-11), so the upper card can
never be banked before the lower one, which the foundation needs first.

More generally, a card in a pile is banked before the card under it (the same reason),
and a foundation banks its cards in order: a position is dead when these "banked before"
relations, over the cards not banked, make a cycle (:meth:`RainbowModel._cyclic`). A pile
builds down by one rank, so a card lies on a card one rank above it, and each relation
goes from a card to one a rank above it (relative to the lead rank) except where a card
just below the lead rank lies on one of the lead rank (a "wrap"): every cycle passes a
wrap. From each wrap's lower card (lead rank, suit ``b``), the check follows the
relations up the thirteen ranks, as the set of suits reached at each rank (a foundation
keeps its suit, the card under a card reached adds that card's suit), to the wraps whose
upper card is reached, and so to other lead cards; a cycle among the (at most four) lead
cards found so is a cycle of the relations, hence no win. The per-pile test above is the
case of one pile and one suit, and a cycle can only appear when a pile gains a card or a
pile, so the check runs then, and only when some pile holds a wrap.

Safe moves to the foundations (taken alone, without trying anything else): a card ``c``
that its foundation takes, at the top of a tableau pile, of the reserve or of the waste,
when none of the four cards one rank below it can ever be put on it: each of them is on
the foundations, or lies in a tableau pile above that pile's bottom card. Only a card one
rank below ``c`` ever goes on ``c`` (RC-8; a whole pile by its bottom card, RC-10), and
only as the reserve's or the waste's top card or as a pile's bottom card; no card leaves
a foundation (RC-22), and a card above a pile's bottom card stays above it (a pile loses
cards only from its top, RC-11, and moves whole onto another pile, RC-9), so none of
those four is ever put on ``c``. Take any winning line ``w`` from the position ``S`` and let
``w'`` be ``c`` to the foundation, then ``w`` without the moves of ``c`` (a whole pile that held
``c`` on its top moves with one card fewer and the same bottom card; one that ``c`` alone
held is not moved). By induction along ``w``, the position of ``w'`` is that of ``w`` with
``c`` on the foundations: every kept move is legal there, since none puts a card on ``c``;
every other pile's top, and the reserve's and the waste's top, are the same where ``w``
uses them (while ``c`` is still on the reserve or the waste in ``w``, ``w`` plays no card
from under it); a pile that ``c`` alone held is empty in ``w'``, which only adds moves (an
empty pile takes the same cards in both, RC-15 and RC-16, with the reserve empty in ``w'``
no later than in ``w``); and the stock is the same. ``w'`` ends won and is no longer than
``w`` (which banks ``c``), so from the new position a win is at least one move shorter
than from ``S``, which makes taking the move alone sound for the search.

The search (:meth:`RainbowModel.search`) expands the states best first, by a score
that favours a short waste and reserve and many cards banked (:func:`_score`): winning
lines keep the waste short, while a depth-first search, which draws first, spends its
budget on positions with most of the stock in the waste. From the heap's best state it
dives: it expands the state, then that state's best new child, and so on, ``DIVE`` states
at most, putting every other new child on the heap, and the last best child when the dive
ends (a winning line often has to cross a hump of the score, such as drawing the stock's
last cards, which a plain best-first search reaches only after every state below it). It
records every state it queues or dives to and expands each once, so when its heap runs
out, no win exists, as with the depth-first search of :mod:`.solver`; a line it finds is
checked by the engine like any other (:func:`.solver.certificate`).
"""

from __future__ import annotations

import gc
import heapq
import time
from collections.abc import Callable
from typing import Any, Final

from .cards import RANK, SUIT
from .game import Game
from .native import extension

__all__ = ["RainbowModel"]

State = tuple[tuple[bytes, ...], tuple[int, ...], int, int, bytes]
Action = tuple[int, int, int]
Child = tuple[tuple[Action, ...], State, bytes]

TO_FOUNDATION: Final = -2
TO_EMPTY: Final = -1
DRAW_ACTION: Final = (-1, 0, 0)

# _FITS[c][t]: card c goes on card t (one rank below, any suit, a King on an Ace).
_FITS: Final[tuple[tuple[bool, ...], ...]] = tuple(
    tuple(RANK[c] % 13 + 1 == RANK[t] for t in range(52)) for c in range(52)
)
# The rank one above each card's (wrapping): the rank of the cards it may go on.
_UP: Final[tuple[int, ...]] = tuple(RANK[c] % 13 + 1 for c in range(52))
# The states a dive of the search expands at most (:meth:`RainbowModel.search`).
DIVE: Final = 40
# The share of the search's budget spent best first, before it goes depth first.
BEST_FIRST_SHARE: Final = 0.3
# The memory (1.5 GiB) the search in C may hold (its table and queue) before it ends as
# unknown: at about 32 to 46 bytes a state, some 35 to 50 million states.
MAX_BYTES: Final = 3 << 29
# The actions of k draws, by k.
_DRAWS: Final[tuple[tuple[Action, ...], ...]] = tuple((DRAW_ACTION,) * k for k in range(53))
# The four cards one rank below each card (wrapping): those that may go on it.
_BELOW: Final[tuple[tuple[int, ...], ...]] = tuple(
    tuple(s * 13 + (RANK[c] - 2) % 13 for s in range(4)) for c in range(52)
)


def _score(state: State) -> int:
    """The search's order, lowest first: a short waste and reserve, many cards banked."""
    _, found, rc, _, waste = state
    return 15 * len(waste) + 2 * rc - 10 * sum(found)


class RainbowModel:
    """Rainbow Canfield for the search."""

    def __init__(self, game: Game) -> None:
        base = game.base_rank
        self.rel: tuple[int, ...] = tuple((RANK[c] - base) % 13 for c in range(52))
        # The card of each suit and rank above the lead rank: at[suit * 13 + rel].
        at = [0] * 52
        for c in range(52):
            at[SUIT[c] * 13 + self.rel[c]] = c
        self.at: tuple[int, ...] = tuple(at)
        # byte 1 for the cards of the lead rank, 0 for the others (for bytes.translate).
        self.leads: bytes = bytes(1 if c < 52 and self.rel[c] == 0 else 0 for c in range(256))
        self.reserve = bytes(game.reserve)
        self.stock = bytes(reversed(game.stock))  # the next card to draw first
        # The search in C (:meth:`search`), or None: its Python code then runs, as it does
        # for a model whose methods a test replaces (set it to None there).
        self.native: Any = extension("_rainbow")
        found = [0, 0, 0, 0]
        for f in game.foundations:
            if f:
                found[SUIT[f[-1]]] = len(f)
        actions: list[Action] = []
        self.root: State = self._settle(
            (
                tuple(bytes(p) for p in game.tableau),
                tuple(found),
                len(game.reserve),
                0,
                bytes(game.waste),
            ),
            actions,
        )
        self.root_actions: tuple[Action, ...] = tuple(actions)

    @staticmethod
    def key(state: State) -> bytes:
        piles, found, rc, sp, _ = state
        return b"\xff".join(sorted(piles)) + b"\xfe" + bytes((*found, rc, sp))

    @staticmethod
    def table() -> Callable[[bytes], bool]:
        """A table of the states seen: ``fresh(key)`` is False for a state seen before."""
        seen: set[bytes] = set()
        add = seen.add

        def fresh(key: bytes) -> bool:
            if key in seen:
                return False
            add(key)
            return True

        return fresh

    def search(
        self, max_nodes: int | None, deadline: float | None
    ) -> tuple[list[Action] | None, int, bool]:
        """The search: (the winning actions or None, states expanded, exhausted).

        Best first for the first ``BEST_FIRST_SHARE`` of its budget (of states, or of CPU
        time up to ``deadline``): the states in the order of their score (:func:`_score`),
        each with a dive of up to ``DIVE`` states along its best new children. Then depth
        first from each queued state in turn, lowest score first, over the same table of
        states seen (module docstring). Each state once: the table holds every state queued,
        dived to or reached depth first. It ends when a child is won, the queue is empty
        (``exhausted``: every successor of every state expanded has been expanded, so no
        win exists, as for the depth-first search of :mod:`.solver`), it has expanded
        ``max_nodes`` states, or the process's CPU clock passes ``deadline``. In C where the
        build made ``_rainbow`` (the same search, state for state, about twenty times as fast and
        in about 40 bytes a position against some 800; it also ends as unknown before its
        memory passes ``MAX_BYTES``).
        """
        if self.won(self.root):
            return list(self.root_actions), 0, False
        switch_nodes = None if max_nodes is None else int(max_nodes * BEST_FIRST_SHARE)
        switch_at = None
        if deadline is not None:
            now = time.process_time()
            switch_at = now + max(0.0, deadline - now) * BEST_FIRST_SHARE
        if self.native is not None:
            piles, found, rc, sp, waste = self.root
            line, nodes, exhausted, _ = self.native.search(
                bytes(self.rel),
                self.reserve,
                self.stock,
                piles,
                found,
                rc,
                sp,
                waste,
                -1 if max_nodes is None else max_nodes,
                -1.0 if deadline is None else deadline,
                -1 if switch_nodes is None else switch_nodes,
                -1.0 if switch_at is None else switch_at,
                MAX_BYTES,
            )
            if line is not None:
                line = [*self.root_actions, *line]
            return line, nodes, exhausted
        # The search makes millions of small tuples and no cycles: the cyclic collector
        # would only rescan them (a third of the time on some deals).
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._search(max_nodes, deadline, switch_nodes, switch_at)
        finally:
            if collecting:
                gc.enable()

    def _search(
        self,
        max_nodes: int | None,
        deadline: float | None,
        switch_nodes: int | None,
        switch_at: float | None,
    ) -> tuple[list[Action] | None, int, bool]:
        root = self.root
        clock = time.process_time
        expand = self.expand
        won = self.won
        # Each state queued or expanded: the state it came from and the actions to it.
        parent: dict[bytes, tuple[bytes, tuple[Action, ...]]] = {}
        root_key = self.key(root)
        parent[root_key] = (b"", self.root_actions)

        def line(key: bytes) -> list[Action]:
            steps: list[tuple[Action, ...]] = []
            while key:
                key, step = parent[key]
                steps.append(step)
            return [a for step in reversed(steps) for a in step]

        heap: list[tuple[int, int, bytes, State]] = [(0, 0, root_key, root)]
        push = heapq.heappush
        pop = heapq.heappop
        count = 0
        nodes = 0
        while heap:
            if (switch_nodes is not None and nodes >= switch_nodes) or (
                switch_at is not None and clock() > switch_at
            ):
                break
            _, _, at, state = pop(heap)
            # A dive: expand the state, then its best new child, and so on, DIVE states at
            # most; every other new child goes on the heap, and so does the last best one.
            for _ in range(DIVE):
                if nodes == max_nodes:
                    return None, nodes, False
                nodes += 1
                if deadline is not None and nodes % 8 == 0 and clock() > deadline:
                    return None, nodes, False
                best: tuple[int, bytes, State] | None = None
                for actions, child, key in expand(state):
                    if key in parent:
                        continue
                    parent[key] = (at, actions)
                    if won(child):
                        return line(key), nodes, False
                    score = _score(child)
                    if best is None or score < best[0]:
                        if best is not None:
                            count -= 1
                            push(heap, (best[0], count, best[1], best[2]))
                        best = (score, key, child)
                    else:
                        count -= 1
                        push(heap, (score, count, key, child))
                if best is None:
                    break
                _, at, state = best
            else:
                count -= 1
                push(heap, (_score(state), count, at, state))
        # Depth first from each queued state, lowest score first: every state recorded
        # from here on is expanded before the next one is taken from the queue.
        while heap:
            _, _, at, state = pop(heap)
            if nodes == max_nodes:
                return None, nodes, False
            nodes += 1
            if deadline is not None and nodes % 8 == 0 and clock() > deadline:
                return None, nodes, False
            stack = [expand(state)]
            index = [0]
            ats = [at]
            while stack:
                children = stack[-1]
                i = index[-1]
                if i == len(children):
                    stack.pop()
                    index.pop()
                    ats.pop()
                    continue
                index[-1] = i + 1
                actions, child, key = children[i]
                if key in parent:
                    continue
                parent[key] = (ats[-1], actions)
                if won(child):
                    return line(key), nodes, False
                if nodes == max_nodes:
                    return None, nodes, False
                nodes += 1
                if deadline is not None and nodes % 8 == 0 and clock() > deadline:
                    return None, nodes, False
                stack.append(expand(child))
                index.append(0)
                ats.append(key)
        return None, nodes, True

    @staticmethod
    def won(state: State) -> bool:
        return sum(state[1]) == 52

    def _dead(self, pile: bytes) -> bool:
        """Whether ``pile`` holds a card above one of its suit that must be banked first."""
        rel = self.rel
        low = [13, 13, 13, 13]
        for c in pile:
            s = SUIT[c]
            r = rel[c]
            if r > low[s]:
                return True
            low[s] = r
        return False

    def _wrapped(self, piles: tuple[bytes, ...]) -> bool:
        """Whether a card lies on a card of the lead rank in some pile (a wrap)."""
        leads = self.leads
        return any(1 in p[:-1].translate(leads) for p in piles)

    def _cyclic(self, piles: tuple[bytes, ...]) -> bool:
        """Whether the piles order the banking in a cycle (module docstring)."""
        rel = self.rel
        at = self.at
        below: dict[int, int] = {}
        wraps: list[tuple[int, int]] = []  # (suit above, suit below) of each wrap
        for p in piles:
            for i in range(1, len(p)):
                lo = p[i - 1]
                below[p[i]] = lo
                if rel[lo] == 0:
                    wraps.append((SUIT[p[i]], SUIT[lo]))
        if not wraps:
            return False
        # step[b]: the suits whose lead card follows suit b's lead card in the order,
        # through one pass up the ranks and one wrap.
        step = [0, 0, 0, 0]
        for b in {lo for _, lo in wraps}:
            reach = 1 << b
            for r in range(12):
                more = 0
                for s in range(4):
                    if reach >> s & 1:
                        lo = below.get(at[s * 13 + r], -1)
                        if lo >= 0:
                            more |= 1 << SUIT[lo]
                reach |= more
            for a, lo in wraps:
                if reach >> a & 1:
                    step[b] |= 1 << lo
        for b in range(4):
            seen = step[b]
            for _ in range(3):
                more = 0
                for s in range(4):
                    if seen >> s & 1:
                        more |= step[s]
                seen |= more
            if seen >> b & 1:
                return True
        return False

    def _safe(self, c: int, found: tuple[int, ...], piles: tuple[bytes, ...]) -> bool:
        """Whether ``c`` goes to its foundation as a safe move (module docstring)."""
        rel = self.rel
        if found[SUIT[c]] != rel[c]:
            return False
        for d in _BELOW[c]:
            if found[SUIT[d]] > rel[d]:
                continue  # on the foundations
            for pile in piles:
                if len(pile) > 1 and pile[0] != d and d in pile:
                    break
            else:
                return False
        return True

    def _settle(self, state: State, actions: list[Action]) -> State:
        """Take the safe foundation moves (module docstring) until none is left."""
        piles, found, rc, sp, waste = state
        reserve = self.reserve
        rel = self.rel
        safe = self._safe
        while True:
            for i, pile in enumerate(piles):
                if pile:
                    c = pile[-1]
                    if found[SUIT[c]] == rel[c] and safe(c, found, piles):
                        pl = list(piles)
                        pl[i] = pile[:-1]
                        piles = tuple(pl)
                        break
            else:
                c = reserve[rc - 1] if rc else -1
                if c >= 0 and found[SUIT[c]] == rel[c] and safe(c, found, piles):
                    rc -= 1
                else:
                    c = waste[-1] if waste else -1
                    if c >= 0 and found[SUIT[c]] == rel[c] and safe(c, found, piles):
                        waste = waste[:-1]
                    else:
                        return piles, found, rc, sp, waste
            f = list(found)
            f[SUIT[c]] += 1
            found = tuple(f)
            actions.append((c, 1, TO_FOUNDATION))

    def _child(self, out: list[Child], actions: tuple[Action, ...], state: State) -> None:
        done: list[Action] = []
        state = self._settle(state, done)
        if done:
            actions = (*actions, *done)
        out.append((actions, state, self.key(state)))

    def _play(
        self,
        out: list[Child],
        c: int,
        draws: tuple[Action, ...],
        piles: tuple[bytes, ...],
        found: tuple[int, ...],
        rc: int,
        sp: int,
        waste: bytes,
        wrapped: bool,
    ) -> None:
        """The moves of ``c``, the waste's top card after ``draws``, with ``waste`` below it
        (``wrapped``: whether ``piles`` have a wrap, :meth:`_wrapped`)."""
        rel = self.rel
        s = SUIT[c]
        if found[s] == rel[c]:
            f = list(found)
            f[s] += 1
            self._child(out, (*draws, (c, 1, TO_FOUNDATION)), (piles, tuple(f), rc, sp, waste))
        fits = _FITS[c]
        card = bytes((c,))
        empty_done = False
        for j, tg in enumerate(piles):
            if tg:
                if not fits[tg[-1]]:
                    continue
                target = tg[-1]
                new = tg + card
                if self._dead(new):
                    continue
            elif rc or empty_done:
                continue
            else:
                empty_done = True
                target = TO_EMPTY
                new = card
            pl = list(piles)
            pl[j] = new
            moved = tuple(pl)
            if (wrapped or (target >= 0 and rel[target] == 0)) and self._cyclic(moved):
                continue
            self._child(out, (*draws, (c, 1, target)), (moved, found, rc, sp, waste))

    def expand(self, state: State) -> list[Child]:
        piles, found, rc, sp, waste = state
        rel = self.rel
        reserve = self.reserve
        out: list[Child] = []
        wrapped = self._wrapped(piles)
        top_r = reserve[rc - 1] if rc else -1
        # 1. to the foundations
        for i, pile in enumerate(piles):
            if pile:
                c = pile[-1]
                if found[SUIT[c]] == rel[c]:
                    f = list(found)
                    f[SUIT[c]] += 1
                    pl = list(piles)
                    pl[i] = pile[:-1]
                    self._child(out, ((c, 1, TO_FOUNDATION),), (tuple(pl), tuple(f), rc, sp, waste))
        if rc and found[SUIT[top_r]] == rel[top_r]:
            f = list(found)
            f[SUIT[top_r]] += 1
            self._child(out, ((top_r, 1, TO_FOUNDATION),), (piles, tuple(f), rc - 1, sp, waste))
        # 2. the reserve to the tableau
        if rc:
            fits = _FITS[top_r]
            card = reserve[rc - 1 : rc]
            empty_done = False
            for j, tg in enumerate(piles):
                if tg:
                    if not fits[tg[-1]]:
                        continue
                    target = tg[-1]
                    new = tg + card
                    if self._dead(new):
                        continue
                elif empty_done:
                    continue
                else:
                    empty_done = True
                    target = TO_EMPTY
                    new = card
                pl = list(piles)
                pl[j] = new
                moved = tuple(pl)
                if (wrapped or (target >= 0 and rel[target] == 0)) and self._cyclic(moved):
                    continue
                self._child(out, ((top_r, 1, target),), (moved, found, rc - 1, sp, waste))
        # 3. a whole pile onto another, only when no pile is empty, and at once a card to
        # the pile it empties (module docstring)
        stock = self.stock
        if all(piles) and (rc or waste or sp < len(stock)):
            for i, pile in enumerate(piles):
                fits = _FITS[pile[0]]
                for j, tg in enumerate(piles):
                    if j != i and fits[tg[-1]]:
                        new = tg + pile
                        if self._dead(new):
                            continue
                        pl = list(piles)
                        pl[i] = b""
                        pl[j] = new
                        moved = tuple(pl)
                        if (wrapped or rel[tg[-1]] == 0) and self._cyclic(moved):
                            continue
                        merge = (pile[0], len(pile), tg[-1])
                        if rc:
                            pl[i] = reserve[rc - 1 : rc]
                            self._child(
                                out,
                                (merge, (top_r, 1, TO_EMPTY)),
                                (tuple(pl), found, rc - 1, sp, waste),
                            )
                            continue
                        # The reserve is empty: the waste's top card, or the last of k
                        # cards drawn, fills the pile.
                        if waste:
                            pl[i] = waste[-1:]
                            self._child(
                                out,
                                (merge, (waste[-1], 1, TO_EMPTY)),
                                (tuple(pl), found, rc, sp, waste[:-1]),
                            )
                        for q in range(sp, len(stock)):
                            pl[i] = stock[q : q + 1]
                            self._child(
                                out,
                                (merge, *_DRAWS[q + 1 - sp], (stock[q], 1, TO_EMPTY)),
                                (tuple(pl), found, rc, q + 1, waste + stock[sp:q]),
                            )
        # 4. the waste's top card, then draws of k cards and a move of the last one drawn
        if waste:
            self._play(out, waste[-1], (), piles, found, rc, sp, waste[:-1], wrapped)
        # The ranks a card drawn may go on (one rank above it), to pass over at once the
        # cards that have nowhere to go.
        above = {RANK[p[-1]] for p in piles if p}
        anywhere = not rc and not all(piles)
        draws = _DRAWS
        play = self._play
        for q in range(sp, len(stock)):
            c = stock[q]
            if anywhere or found[SUIT[c]] == rel[c] or _UP[c] in above:
                play(
                    out, c, draws[q + 1 - sp], piles, found, rc, q + 1, waste + stock[sp:q], wrapped
                )
        return out
