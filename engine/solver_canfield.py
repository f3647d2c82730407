"""The solver's model of Canfield (Solo Cards rules): a compact state and its moves.

A state is ``(piles, found, rc, seq, p)``:

- ``piles``: the four tableau piles as ``bytes`` (bottom card first), in the engine's
  order, so that an empty pile is filled in pile order (CF-13, CF-14);
- ``found``: the height of each suit's foundation (by suit, C D H S), 0 to 13: which
  foundation holds a suit does not matter to the rules (ALL-5, ALL-6);
- ``rc``: how many cards the reserve still holds (nothing is ever put on the reserve, so
  its top ``rc`` cards of the deal are what is left);
- ``seq``: the cards of the waste and the stock as one sequence, the waste's bottom card
  first and the stock's next card after the waste's top (a redeal turns the waste over
  into the stock in its original order, CF-20, so this order never changes; cards only
  leave it);
- ``p``: how many of ``seq`` are on the waste, normalised to its class (below).

Draws and redeals are folded into the waste's moves: between two other moves they only
move ``p``. From ``p`` a draw gives ``min(p + 3, n)`` and at ``p == n`` a redeal gives 0, so
the positions ``0, 3, 6, …`` and ``n`` form a cycle that draws and redeals go round for
ever, and a ``p`` off the cycle (``p % 3 != 0`` and ``p != n``) reaches the cycle but never
comes back. Every ``p`` on the cycle is therefore the same position for the rules (each
reaches the others by draws alone) and is stored as 0; a ``p`` off the cycle is kept.
A waste move is "draw (and redeal) until the card at ``q`` is the waste's top, then play
it", for every ``q`` that ``p`` reaches.

A state with ``p`` off the cycle dominates the states that differ from it only in a ``p``
it reaches by draws alone: the same with ``p + 3``, ``p + 6``, … (below ``n``) or with ``p`` on
the cycle. Its waste moves include theirs, each to the very same state, and each of its
other moves leads to the state that dominates theirs in the same way, so by induction on
their length, its shortest win in the model's moves is no longer than theirs. The table
of states seen (:meth:`CanfieldModel.table`) therefore skips a state when the same piles,
foundations, reserve and ``seq`` were recorded with a ``p`` that reaches its own: any ``p``
when its ``p`` is on the cycle, else one no greater and equal to it modulo 3 (the search,
:mod:`.solver`, explains why that keeps it complete).

The key of a state leaves ``seq`` out (cards only ever leave it, so it holds, in the
start's order, the cards that are not on the tableau, the foundations or the reserve)
and sorts the tableau piles: while the reserve has cards no pile is ever
empty (an emptied pile is filled at once, so at most one is empty at a time and the fill
order never matters), and once the reserve is empty every empty pile is the same; the
rules treat the piles alike otherwise.

Safe moves to the foundations (taken alone, without trying anything else). A card ``c``
of rank ``r`` at the top of a tableau pile, not the pile's only card unless the reserve is
empty, goes to its foundation at once when that foundation takes it, both foundations of
the other colour hold ``r - 1`` cards or more, and the other foundation of ``c``'s colour
holds ``r - 2`` or more. Proof: call *low* the cards of rank ``r - 2`` or less, those of
rank ``r - 1`` but ``c''`` (the one of the other suit of ``c``'s colour), and ``c``; every low
card but ``c`` is on the foundations. A card only ever goes on a card one rank above it
of the other colour, so a card that is not low never goes on a low one (it would have
rank ``r - 1`` and ``c``'s colour, so be ``c''``, and go on a card of rank ``r`` of the other
colour, which is not low): in every pile the low cards, if any, are the top of it, and
no low card is ever a pile's bottom card while the reserve has cards (they are on the
foundations at ``S`` or are ``c``, and only the reserve fills a pile then). On each
foundation, too, the low cards lie below every card that is not low. Take any winning
line ``w`` from the position ``S`` and let ``w'`` be ``c`` to the foundation, then ``w``
without the moves of low cards (runs that carried low cards on their top carry fewer
cards). By induction along ``w``, the position of ``w'`` is that of ``w`` with every low
card on the foundations: every kept move is legal there (it moves cards that are not low
onto a card that is not low, onto an empty pile, which is empty in both, or onto a
foundation whose top card is the same in both, and a card it takes from a foundation is
that foundation's top in both), the reserve fills the same piles at the same moves (a
pile empties only when its bottom card leaves, and bottom cards are not low while the
reserve has cards), and the stock and waste never differ. ``w'`` ends won and is no longer
than ``w``, since ``w`` banks ``c`` somewhere; so from the new position a win is at least one
move shorter than from ``S``, which is what makes taking the move alone sound for the
search.

Moves left out: a card that may go to its foundation, where no safe move follows, is not
also moved alone onto the tableau (from the tableau's top, the reserve or the waste). The
state ``A`` with the card banked reaches the state ``B`` with it on the tableau by one of the
model's moves (back from the foundation onto the same pile, CF-25: that pile's top and
the foundation's are the same in ``A``), so ``B``'s shortest win plus one bounds ``A``'s, and
``A`` has one card more on the foundations. The search stays complete (:mod:`.solver`):
among the expanded states with a win, take one whose shortest win is shortest and, of
those, with the most cards on the foundations; if its best move was one left out, ``A``
is a child of it with a win no longer and one card more banked.

Dead positions, cut without a search: a state, among those checked (the start, and those
after a move that took a card from the reserve or the waste: the check costs about as
much as a state's moves, and those moves change most what it looks at), whose reserve
has a top card ``X`` that can never leave the reserve. Take any line
of play from the state in which ``X`` leaves, and the first time ``t`` it does. Before ``t``
no pile empties (CF-13 would fill it with ``X`` at once): bottom cards neither move nor go
home, and no card of the reserve moves. :func:`_reserve_stuck` works out, as least fixed
points of monotone rules, sets that hold every event of such a line before ``t``, by
induction on time (each rule asks only for events earlier than the one it grants):

- *placeable*, the cards that are at some time the top card of a pile: the tops now; a
  tableau card once the card lying on it gets off it (nothing else uncovers it: a run
  that moves keeps its order); a card on the foundations or in the waste and stock (at a
  position that reaches the waste's top) once a card it goes on is placeable (with no
  empty pile it can only arrive on a pile's top card, which is then one that goes under
  it; a King never arrives). Never a card of the reserve.
- *off*, for a tableau card lying on a card ``u``: it moves onto a placeable card it goes
  on other than ``u``, or it goes home.
- *bankable*, in suit order from the foundations' heights: a card of the waste and stock
  at a position that reaches the waste's top; a tableau card but a bottom card, once it is
  placeable (it goes home from a pile's top). Never a card of the reserve.
- the positions of the waste and stock (``seq``, 0 the waste's bottom card) ever at the
  waste's top, and those ever played (reaching the top, with a card that is bankable or
  goes on a placeable card). A card comes to the top of the waste by a draw, or when the
  next card left above it is played, which needs the next position played. Within the
  current pass, a card played from the waste changes none of the cards that later draws
  turn up (the waste's count and the positions above it both drop by one), so those are
  the positions the model's waste moves reach now (``p``, ``p + 3``, …, and the cycle). After
  a redeal, draws turn up the cards at positions 2, 5, 8, … counted among the cards left,
  and the last card: a card at ``j`` below which ``r`` cards were played is at ``j - r``, so
  it comes up only if ``(j + 1) mod 3`` is at most the number of positions below ``j`` ever
  played, or every position above ``j`` is played.

``X`` leaves at ``t`` only to its foundation (the card below it in its suit bankable), onto
a placeable card, or into a pile that empties at ``t``: its bottom card goes onto a
placeable card, or goes home (the card below it in its suit bankable, and the bottom card
at the top: the pile is that card alone, or its second card gets off). When none of these
holds, no line ever empties the reserve, and the state has no win.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from .cards import RANK, RED, SUIT
from .game import Game

__all__ = ["CanfieldModel"]

Pos = tuple[tuple[bytes, ...], tuple[int, ...], int, bytes, int]
# A position and whether its reserve is checked (:func:`_reserve_stuck`) before its moves:
# at the start, and after a move that took a card from the reserve or the waste.
State = tuple[tuple[bytes, ...], tuple[int, ...], int, bytes, int, bool]
Action = tuple[int, int, int]
Key = tuple[bytes, int]
Child = tuple[tuple[Action, ...], State, Key]
_NONE: Final = 255

TO_FOUNDATION: Final = -2
TO_EMPTY: Final = -1

_FITS: Final[tuple[tuple[bool, ...], ...]] = tuple(
    tuple(RANK[c] + 1 == RANK[t] and RED[c] != RED[t] for t in range(52)) for c in range(52)
)


def _run_length(pile: bytes) -> int:
    """The length of the run at the end of ``pile`` (in play, every pile is one run)."""
    n = len(pile)
    k = 1
    while k < n and _FITS[pile[n - k]][pile[n - k - 1]]:
        k += 1
    return k


def _cycle(p: int, n: int) -> int:
    """``p`` normalised: 0 for every position on the draw cycle."""
    return 0 if p % 3 == 0 or p == n else p


# For the safe moves, by card: its suit, the rank below it, the suits of the other colour,
# and the other suit of its colour.
_SAFE: Final[tuple[tuple[int, int, int, int, int], ...]] = tuple(
    (
        SUIT[c],
        RANK[c] - 1,
        *((0, 3) if RED[c] else (1, 2)),
        {0: 3, 3: 0, 1: 2, 2: 1}[SUIT[c]],
    )
    for c in range(52)
)


def _safe_pile(
    piles: tuple[bytes, ...], found: tuple[int, ...], rc: int, among: Iterable[int]
) -> int:
    """The first pile of ``among`` whose top card goes to its foundation as a safe move
    (module docstring), or -1."""
    for i in among:
        pile = piles[i]
        if pile and (rc == 0 or len(pile) > 1):
            s, need, o1, o2, twin = _SAFE[pile[-1]]
            if (
                found[s] == need
                and found[o1] >= need
                and found[o2] >= need
                and found[twin] >= need - 1
            ):
                return i
    return -1


# The two cards that go on each card (one rank below, the other colour); none on an Ace.
_BELOW: Final[tuple[tuple[int, ...], ...]] = tuple(
    () if RANK[c] == 1 else tuple(s * 13 + RANK[c] - 2 for s in range(4) if (s in (1, 2)) != RED[c])
    for c in range(52)
)

# The two cards a card goes on (one rank above, the other colour), by card; none for Kings.
_ABOVE: Final[tuple[tuple[int, ...], ...]] = tuple(
    () if RANK[c] == 13 else tuple(s * 13 + RANK[c] for s in range(4) if (s in (1, 2)) != RED[c])
    for c in range(52)
)


_RANKS: Final = (1 << 13) - 1
_ACES: Final = 1 | 1 << 13 | 1 << 26 | 1 << 39
_KINGS: Final = _ACES << 12
# By card, the cards it goes on, as a set of bits (card ``c`` is bit ``c``).
_ABOVE_BITS: Final[tuple[int, ...]] = tuple(sum(1 << a for a in _ABOVE[c]) for c in range(52))
# By suit and height, the cards of that suit below that height.
_BANKED: Final[tuple[tuple[int, ...], ...]] = tuple(
    tuple(((1 << h) - 1) << (13 * s) for h in range(14)) for s in range(4)
)
# The positions of the waste and stock (0 the waste's bottom card) by their remainder mod 3.
_MOD3: Final[tuple[int, ...]] = tuple(sum(1 << j for j in range(k, 60, 3)) for k in range(3))


def _fits_any(cards: int) -> int:
    """The cards that go on some card of ``cards`` (one rank below, the other colour)."""
    red = ((cards >> 13 | cards >> 26) & _RANKS) >> 1
    black = ((cards | cards >> 39) & _RANKS) >> 1
    return red | red << 39 | black << 13 | black << 26


def _reserve_stuck(
    piles: tuple[bytes, ...], found: tuple[int, ...], reserve: bytes, seq: bytes, p: int
) -> bool:
    """Whether the top card of ``reserve`` (not empty) can never leave it.

    Everything is worked out under the hypothesis that it never leaves, and the answer is
    True when no way for it to leave is left (module docstring). Sets of cards are bits:
    ``placeable``, the cards ever at the top of a pile; ``bankable``, those ever banked;
    ``off``, the tableau cards that ever get off the card they lie on. ``acc`` and ``rem``
    are sets of positions in ``seq``: those ever at the waste's top, those ever played.
    """
    if not all(piles):
        return False  # an empty pile takes the reserve's top card
    top = reserve[-1]
    tops = {pile[-1] for pile in piles}
    if RANK[top] == 1 or found[SUIT[top]] == RANK[top] - 1 or not tops.isdisjoint(_ABOVE[top]):
        return False  # at once: home, or onto a pile's top card
    for pile in piles:
        if not tops.isdisjoint(_ABOVE[pile[0]]):
            return False  # the pile moves whole onto another: the reserve's top fills it
    placeable = on_tab = bottoms = 0
    inner: list[tuple[int, int, int]] = []  # (card, the cards it may go on, the card under it)
    for pile in piles:
        u = pile[0]
        bottoms |= 1 << u
        on_tab |= 1 << u
        placeable |= 1 << pile[-1]
        for c in pile[1:]:
            on_tab |= 1 << c
            inner.append((1 << c, _ABOVE_BITS[c] & ~(1 << u), 1 << u))
            u = c
    bankable = (
        _BANKED[0][found[0]] | _BANKED[1][found[1]] | _BANKED[2][found[2]] | _BANKED[3][found[3]]
    )
    down = bankable & ~_KINGS  # on the foundations: may come back onto the tableau
    out = on_tab & ~bottoms  # may be banked once at the top of its pile
    n = len(seq)
    full = (1 << n) - 1
    now = 0  # the positions the model's waste moves reach (p, p + 3, ... and the cycle)
    if n:
        if p:
            now = _MOD3[(p - 1) % 3] >> (p - 1) << (p - 1)
        now = (now | _MOD3[2] | 1 << (n - 1)) & full
    acc = rem = acc_cards = rem_cards = off = 0
    while True:
        reach = now | rem >> 1
        if rem:
            low = rem & -rem
            reach |= _MOD3[0] & ~((low << 1) - 1)
            rest = rem & ~low
            if rest:
                reach |= _MOD3[1] & ~(((rest & -rest) << 1) - 1)
        left = full & ~rem
        reach |= full & ~((1 << (left.bit_length() - 1)) - 1) if left else full
        new = reach & full & ~acc
        if new:
            acc |= new
            while new:
                low = new & -new
                new ^= low
                acc_cards |= 1 << seq[low.bit_length() - 1]
        changed = False
        more = (down | acc_cards) & _fits_any(placeable) & ~placeable
        if more:
            placeable |= more
            changed = True
        for bit, above, under in inner:
            if not off & bit and (bankable & bit or placeable & above):
                off |= bit
                placeable |= under
                changed = True
        while True:
            more = ((bankable << 1) & ~_ACES | _ACES) & ~bankable & (acc_cards | out & placeable)
            if not more:
                break
            bankable |= more
            changed = True
        played = acc_cards & (bankable | placeable) & ~rem_cards
        if played:
            rem_cards |= played
            while played:
                low = played & -played
                played ^= low
                rem |= 1 << seq.index(low.bit_length() - 1)
        elif not changed:
            break
    if bankable >> (top - 1) & 1 or placeable & _ABOVE_BITS[top]:
        return False
    for pile in piles:  # a pile that empties takes the reserve's top card
        b = pile[0]
        if placeable & _ABOVE_BITS[b]:
            return False
        if (RANK[b] == 1 or bankable >> (b - 1) & 1) and (len(pile) == 1 or off >> pile[1] & 1):
            return False
    return True


class CanfieldModel:
    """Canfield for the search: start, moves (best first), key and win test."""

    def __init__(self, game: Game) -> None:
        self.reserve = bytes(game.reserve)
        # the sizes of the reserve and of the waste and stock in the state being expanded
        self._rc, self._n = len(game.reserve), 0
        found = [0, 0, 0, 0]
        for f in game.foundations:
            if f:
                found[SUIT[f[-1]]] = len(f)
        seq = bytes(game.waste) + bytes(reversed(game.stock))
        piles = tuple(bytes(p) for p in game.tableau)
        actions: list[Action] = []
        self.root: State = (
            *self._settle(
                (piles, tuple(found), len(game.reserve), seq, _cycle(len(game.waste), len(seq))),
                actions,
            ),
            True,
        )
        self.root_actions: tuple[Action, ...] = tuple(actions)
        # In play every pile is one run (cards only ever go on a card they fit); a position
        # set up otherwise has its runs worked out pile by pile.
        self.runs_only = all(not pile or _run_length(pile) == len(pile) for pile in piles)

    def key(self, state: State) -> Key:
        piles, found, rc, _, p, _ = state
        return b"\xff".join(sorted(piles)) + b"\xfe" + bytes((*found, rc)), p

    @staticmethod
    def table() -> Callable[[Key], bool]:
        """A table of the states seen: ``fresh(key)`` is False for a state seen before or
        one that a state seen before dominates (module docstring), and records the others."""
        best: dict[bytes, list[int]] = {}

        def fresh(key: Key) -> bool:
            rest, p = key
            got = best.get(rest)
            if got is None:
                got = best[rest] = [_NONE, _NONE, _NONE]
                if p:
                    got[p % 3] = p
                return True
            if not p:
                return False
            r = p % 3
            if got[r] <= p:
                return False
            got[r] = p
            return True

        return fresh

    @staticmethod
    def won(state: State) -> bool:
        return sum(state[1]) == 52

    # The search (:mod:`.solver`) dives depth-first 1,000 states from the start, then 10 at a
    # time from the state it holds with the lowest score: 4 a reserve card, 1 for every 4
    # cards in the waste and stock, less 1 for every 4 cards banked. A win needs the reserve
    # emptied, and a long depth-first search can spend its time in a lost branch.
    dives: tuple[int, int] = (1_000, 10)

    @staticmethod
    def priority(state: State) -> int:
        return state[2] * 4 + (len(state[3]) - sum(state[1])) // 4

    def _settle(self, state: Pos, actions: list[Action]) -> Pos:
        """Take the safe foundation moves (module docstring) until none is left."""
        piles, found, rc, seq, p = state
        while True:
            i = _safe_pile(piles, found, rc, range(len(piles)))
            if i < 0:
                return (piles, found, rc, seq, p)
            pile = piles[i]
            c = pile[-1]
            f = list(found)
            f[SUIT[c]] += 1
            found = tuple(f)
            pl = list(piles)
            pl[i] = pile[:-1]
            piles = tuple(pl)
            actions.append((c, 1, TO_FOUNDATION))

    def _child(
        self, out: list[Child], action: Action, state: Pos, check: tuple[int, ...] = ()
    ) -> None:
        """Add the child ``state`` reached by ``action``, after the safe moves. A move that
        leaves the foundations and the reserve as they were passes in ``check`` the piles
        whose top it changed: only those tops may be safe, the state it leaves being settled."""
        actions = [action]
        piles, found, rc, seq, p = state
        if not check or _safe_pile(piles, found, rc, check) >= 0:
            state = self._settle(state, actions)
            piles, found, rc, seq, p = state
        key = b"\xff".join(sorted(piles)) + b"\xfe" + bytes((*found, rc))
        check_next = rc < self._rc or len(seq) < self._n
        out.append((tuple(actions), (piles, found, rc, seq, p, check_next), (key, p)))

    def expand(self, state: State) -> list[Child]:
        piles, found, rc, seq, p, new = state
        reserve = self.reserve
        if new and rc and _reserve_stuck(piles, found, reserve[:rc], seq, p):
            return []  # the reserve's top card can never leave it: no win
        self._rc, self._n = rc, len(seq)
        out: list[Child] = []
        child = self._child
        runs_only = self.runs_only
        n = len(seq)
        top_r = reserve[rc - 1] if rc else -1
        wanted: dict[int, list[int]] = {}  # a card: the piles whose top it goes on
        empty = -1
        for j, tg in enumerate(piles):
            if tg:
                for a in _BELOW[tg[-1]]:
                    wanted.setdefault(a, []).append(j)
            elif empty < 0:
                empty = j
        if rc:
            empty = -1  # CF-15: no move fills a pile while the reserve has cards

        def taken(i: int, k: int) -> tuple[list[bytes], int]:
            pl = list(piles)
            rest = piles[i][:-k]
            nrc = rc
            if not rest and rc:
                rest = reserve[rc - 1 : rc]
                nrc = rc - 1
            pl[i] = rest
            return pl, nrc

        # Waste positions reachable by draws and redeals.
        qs: list[int] = []
        if n:
            if p:
                qs.extend(range(p, n, 3))
            qs.extend(range(3, n, 3))
            qs.append(n)
        # 1. to the foundations; ``home``: the cards banked so with no safe move after
        for i, pile in enumerate(piles):
            if pile:
                c = pile[-1]
                if found[SUIT[c]] == RANK[c] - 1:
                    pl, nrc = taken(i, 1)
                    f = list(found)
                    f[SUIT[c]] += 1
                    child(out, (c, 1, TO_FOUNDATION), (tuple(pl), tuple(f), nrc, seq, p))
        if rc and found[SUIT[top_r]] == RANK[top_r] - 1:
            f = list(found)
            f[SUIT[top_r]] += 1
            child(out, (top_r, 1, TO_FOUNDATION), (piles, tuple(f), rc - 1, seq, p))
        for q in qs:
            c = seq[q - 1]
            if found[SUIT[c]] == RANK[c] - 1:
                f = list(found)
                f[SUIT[c]] += 1
                nseq = seq[: q - 1] + seq[q:]
                child(out, (c, 1, TO_FOUNDATION), (piles, tuple(f), rc, nseq, _cycle(q - 1, n - 1)))
        home = {ch[0][0][0] for ch in out if len(ch[0]) == 1}
        # 2. the reserve to the tableau
        if rc and top_r not in home:
            for j in wanted.get(top_r, ()):
                tg = piles[j]
                pl = list(piles)
                pl[j] = tg + reserve[rc - 1 : rc]
                child(
                    out,
                    (top_r, 1, tg[-1]),
                    (tuple(pl), found, rc - 1, seq, p),
                    (j,) if rc > 1 else (),
                )
        # 3. whole piles onto another pile (the reserve refills them)
        if rc:
            for i, pile in enumerate(piles):
                if not runs_only and _run_length(pile) < len(pile):
                    continue
                if len(pile) == 1 and pile[0] in home:
                    continue
                for j in wanted.get(pile[0], ()):
                    tg = piles[j]
                    pl, nrc = taken(i, len(pile))
                    pl[j] = tg + pile
                    child(
                        out,
                        (pile[0], len(pile), tg[-1]),
                        (tuple(pl), found, nrc, seq, p),
                        (j,) if nrc else (),
                    )
        # 4. the waste to the tableau
        for q in qs:
            c = seq[q - 1]
            js = wanted.get(c, ())
            if (not js and empty < 0) or c in home:
                continue
            nseq = seq[: q - 1] + seq[q:]
            np = _cycle(q - 1, n - 1)
            card = seq[q - 1 : q]
            for j in js:
                tg = piles[j]
                pl = list(piles)
                pl[j] = tg + card
                child(out, (c, 1, tg[-1]), (tuple(pl), found, rc, nseq, np), (j,))
            if empty >= 0:
                pl = list(piles)
                pl[empty] = card
                child(out, (c, 1, TO_EMPTY), (tuple(pl), found, rc, nseq, np), (empty,))
        # 5. other runs between tableau piles
        for i, pile in enumerate(piles):
            if not pile:
                continue
            size = len(pile)
            run = size if runs_only else _run_length(pile)
            if empty < 0:  # only onto a top: the run's card one rank below it, if any
                ks = []
                low = RANK[pile[-1]]
                for tg in piles:
                    if tg:
                        k = RANK[tg[-1]] - low
                        if 0 < k <= run and _FITS[pile[-k]][tg[-1]]:
                            ks.append(k)
                if not ks:
                    continue
                if len(ks) > 1:
                    ks = sorted(set(ks))
            else:
                ks = list(range(1, run + 1))
            for k in ks:
                c = pile[-k]
                if k == 1 and c in home:
                    continue
                whole = k == size
                if whole and rc:
                    continue  # 3. above
                for j in wanted.get(c, ()):
                    tg = piles[j]
                    pl, nrc = taken(i, k)
                    pl[j] = tg + pile[-k:]
                    child(out, (c, k, tg[-1]), (tuple(pl), found, nrc, seq, p), (i, j))
                if empty >= 0 and not whole:
                    pl = list(piles)
                    pl[i] = pile[:-k]
                    pl[empty] = pile[-k:]
                    child(out, (c, k, TO_EMPTY), (tuple(pl), found, rc, seq, p), (i, empty))
        # 6. foundations back to the tableau
        for s in range(4):
            h = found[s]
            if not h:
                continue
            c = s * 13 + h - 1
            js = wanted.get(c, ())
            if not js and empty < 0:
                continue
            f = list(found)
            f[s] -= 1
            nf = tuple(f)
            card = bytes((c,))
            for j in js:
                tg = piles[j]
                pl = list(piles)
                pl[j] = tg + card
                child(out, (c, 1, tg[-1]), (tuple(pl), nf, rc, seq, p), (j,))
            if empty >= 0:
                pl = list(piles)
                pl[empty] = card
                child(out, (c, 1, TO_EMPTY), (tuple(pl), nf, rc, seq, p), (empty,))
        return out
