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

Cards banked at once, and the positions a state stands for. A card that its foundation
takes and that lies at a pile's top on a card it fits is banked at once, then the next such
card, until none is left (:func:`_canon`): the search's states have none. One move undoes
such a banking: the card goes back from its foundation onto the card it lay on (CF-25: that
card is a pile's top again and the banked card its foundation's top), so the two positions
reach each other. A state ``S`` stands for its *class*: the positions that banking such
cards, one at a time, turns into ``S``. Banking is confluent (banking a card only raises
its foundation and uncovers the card under it, which never keeps another card from being
banked), so each position is in one class, and the class of ``S`` is the positions made
from ``S`` by *bringing down* foundation cards one at a time, each its foundation's top
then, onto a pile's top card it fits (one brought down before included): of the cards
brought down, the one of least rank is at a pile's top, on a card it fits, and its
foundation takes it, so banking them in rank order gives ``S`` back. The positions of a
class reach each other, so they share a verdict; the *shortest win* of a state (for the
proof of :mod:`.solver`) is the least, over its class, of the shortest win of a position
in the model's moves, each one move. The waste's domination below holds position by
position, hence for classes.

Each move from a position ``M`` of the class of ``S`` to ``M'`` either stays in the class,
or ``S`` has a child whose class holds ``M'``; the children are the states that banking
turns the positions reached into. By kind of move:

- banking a card brought down, bringing one down onto a card it fits, or moving a card
  brought down (and those brought down on it) onto a card it fits: ``M'`` is in the class
  (every card brought down still lies on a card it fits);
- banking a tableau card of ``S``, the reserve's top or a card of the waste: its suit has
  no card brought down (one would be above it in the suit while it is not on the
  foundations), so ``S`` banks it too, and ``M'`` is that child's position with the same
  cards brought down;
- a card or run of ``S``'s cards (with any cards brought down on it, which go along and
  still lie on cards they fit) onto a top card of ``S``'s, or into an empty pile, or the
  top card of a foundation with no card brought down into an empty pile: ``S`` has the
  same move, and ``M'`` is in the class of that child. Three such moves are left out: a
  card that may go home, moved alone onto a pile's top, lies on a card it fits and is
  banked at once, so that child is the one that banks it; a foundation's top card onto a
  pile's top card comes back to ``S`` itself; a whole pile into an empty pile changes
  nothing the key sees;
- a card or run of ``S``'s cards onto a card brought down, or, with the reserve empty, a
  foundation card under its foundation's top, or a card brought down with those on it,
  into an empty pile: the
  *combined moves* ("bring down, then move"). Take ``Y`` onto a card ``F`` brought down:
  once the other cards brought down are banked, those left are the *stuck* ones, ``F``,
  the cards under it brought down, and, for each stuck card, the cards above it in its
  suit (its foundation cannot take them first) and the cards those lie on, and theirs in
  turn; each of the others can be banked (the least of them in rank is a top, on a card
  it fits, and no stuck card of its suit is below it). So ``M'`` is in the class of the
  position with only the stuck cards brought down and then ``Y`` put on ``F``. For each
  foundation card ``F`` (not a King) that a card of the tableau, the reserve's top or the
  waste (at a position its moves reach) goes on, the expansion makes every such position
  (:func:`_stuck_down`): ``F`` and the cards above it in its suit, then, from the highest
  rank down, for each a card to lie on, a pile's top card of ``S`` or a foundation card
  (not a King) that then comes down with the cards above it in its suit, each holding
  one card; it brings them down from the highest rank to the lowest (each lies on one of
  higher rank, and the cards above it in its suit come down first), and ``F``, the lowest,
  is a top. With the reserve empty, a foundation card ``G`` under its foundation's top
  goes into an empty pile once the cards above it in its suit are brought down; those
  stay brought down, with the cards they lie on, and the others are banked as above: the
  expansion makes those positions in the same way, then moves ``G``. A card brought down
  moved into an empty pile, with the cards on it, leads into the same class as that card
  from its foundation: the cards on it are of lower rank than every card that stays
  brought down, so none of them stays.

So, with shortest wins counted so, the proof of completeness of :mod:`.solver` holds as it
stands: from a state whose shortest win is ``k``, the position of its class with a win of
``k`` moves makes a first move that leaves the class (within it, the win would be
shorter), into the class of a child, whose shortest win is then ``k - 1`` or less. Cards
safe to bank (the solver's other models) need no rule of their own here: a card lying on
a card it fits is banked whenever its foundation takes it.

Dead positions, cut without a search (a position's verdict is its class's): a state,
among those checked (the start, and those
after a move that took a card from the reserve or the waste: the check costs about as
much as a state's moves, and those moves change most what it looks at), whose reserve
holds a card that can never leave it. Number the reserve's cards ``X1`` (the top),
``X2``, … and take any line of play from the state in which ``Xk`` leaves, and the
times ``t1 < t2 < … < tk`` at which ``X1`` to ``Xk`` leave (each is the reserve's top card
from the time the one above it left). Between two of these times no pile empties for
long (CF-13 fills it at once with the reserve's top card, which is then the next to
leave): a bottom card moves, or goes home, only at some ``tj``, the move that empties its
pile, and the reserve's top card ``Xj`` then fills it, and is that pile's bottom card from
then on; no card of the reserve moves but at its own time. :func:`_reserve_leaves` works
out, for ``k = 1, 2, …`` in turn, as least fixed points of monotone rules, sets that hold
every event of such a line before ``tk``, by induction on time (each rule asks only for
events earlier than the one it grants):

- *placeable*, the cards that are at some time the top card of a pile: the tops now; a
  tableau card once the card lying on it gets off it (nothing else uncovers it: a run
  that moves keeps its order); a card on the foundations or in the waste and stock (at a
  position that reaches the waste's top), or *free* (below), once a card it goes on is
  placeable (with no empty pile it can only arrive on a pile's top card, which is then
  one that goes under it; a King never arrives); a free reserve card that may have
  filled a pile. Never a card still in the reserve under ``Xk``, nor ``Xk``.
- *off*, for a tableau card lying on a card ``u``: it moves onto a placeable card it goes
  on other than ``u``, or it goes home.
- *bankable*, in suit order from the foundations' heights: a card of the waste and stock
  at a position that reaches the waste's top; a free card; a tableau card but a bottom
  card, once it is placeable (it goes home from a pile's top). Never a card of the
  reserve under ``Xk``, nor ``Xk``.
- *free*: ``X1`` to ``X(k-1)``, and every bottom card that may have left its pile at one of
  ``t1`` to ``t(k-1)`` (as below, with the sets of that time): once it has left, such a
  card lies on a pile's top card, or in an emptied pile, or on its foundation, so it is
  placeable only when a card it goes on is, or when it filled a pile, and banked only in
  suit order. A bottom card that is not free has never moved nor gone home.
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

The sets for ``Xk`` hold those for ``X(k-1)`` (the rules only grow, and ``free`` too), so each
goes on from the last. ``Xk`` leaves at ``tk`` to its foundation (the card below it in its suit
bankable), onto a placeable card, or into a pile that empties at ``tk``: the pile's bottom
card ``b`` goes onto a placeable card, or goes home (the card below it in its suit
bankable, and ``b`` at the top: the pile is ``b`` alone, or its second card gets off; for a
reserve card that filled the pile, the cards on it are taken to get off). A pile empties
once for each bottom card it has: its first, then each reserve card that fills it. So the
line needs, at each ``tk`` at which ``Xk`` can go neither home nor onto a placeable card, a
pile whose bottom card then may leave, and ``Xk`` becomes that pile's bottom card. Whether
some choice of piles meets every such ``tk`` is decided by taking any pile that fits each
time (:func:`_reserve_leaves` keeps one such line's bottom cards): a bottom card that may
leave at ``tk`` may leave at every later time too (the sets only grow), so two such cards
are alike from then on, and leaving a pile's bottom card where it is, when ``Xk`` can go
elsewhere, keeps a card that may leave instead of ``Xk``, so the choice never loses a
line. When some ``Xk`` cannot leave, no line ever empties the reserve, and the state has
no win.

The piles as runs, just after ``Xk`` leaves (:func:`_packs`; for the search's states, whose
piles are each one run: cards only ever go on a card they fit, and a pile's bottom card
is the one dealt there or a reserve card that filled it). Take the same line, and the
position just after ``tk``. Then:

- four piles, none empty (a pile that empties is filled at once from the reserve, and
  ``Xk``, the reserve's top until ``tk``, fills the one emptied at ``tk``), each one run from
  its bottom card: its cards, from the bottom up, go down one rank at a time and change
  colour each rank, so they share a *class*, the colour of a card and its rank's parity
  together;
- the bottom cards: a pile's bottom card now that has not left it, or a reserve card
  ``Xj`` (``j <= k``) that filled a pile at ``tj``. So among the bottom cards now and the
  reserve cards that may have filled a pile (``lifted``), and every bottom card now that
  is not ``free`` (it has never moved);
- on the piles, every card that is on the tableau now, or is one of ``X1`` to ``Xk``, and
  is neither ``bankable`` nor a card whose foundation may take it (the card below it in
  its suit ``bankable``, or an Ace): such a card leaves the tableau only for its
  foundation, and never goes back to the reserve or the waste, so it is on the tableau
  unless banked before ``tk`` (then ``bankable``) or at ``tk`` (only ``Xk`` and the bottom
  card of the pile emptied then move at ``tk``, each home only if its foundation takes it);
- no card still in the reserve (under ``Xk``) is on the piles;
- ``Xk``, if there and not a bottom card, is its pile's top card: it was just put there.

A run from a bottom card of rank ``R`` holds one card of its class at each rank from ``R``
down to its top card's. :func:`_packs_with` decides, for each choice of four bottom cards,
whether such runs exist: rank by rank from the Kings down, class by class, each card that
must be there needs a run of its own at its rank, a run that goes on through a rank needs
a card of that rank (its class has two) that is neither in the reserve nor a bottom card,
and a run that stops never goes on; runs of a class are alike below their bottom cards, so
only their count matters, and keeping every run that can go on is never worse, since one
may stop at any rank. When no choice of bottom cards fits, no line lets ``Xk`` leave: the
state has no win. With this test the check goes on to the reserve's last card even when
every card left may go home or onto a placeable card (the sets of each card are needed
for its test). The search makes it on its start only: on the states of the search it cut
too few to pay for its cost (about twice the check's).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from math import comb
from typing import Final

from .cards import RANK, RED, SUIT
from .game import Game

__all__ = ["CanfieldModel"]

Pos = tuple[tuple[bytes, ...], tuple[int, ...], int, bytes, int]
# A position and whether its reserve is checked (:func:`_reserve_leaves`) before its moves:
# at the start, and after a move that took a card from the reserve or the waste.
State = tuple[tuple[bytes, ...], tuple[int, ...], int, bytes, int, bool]
Action = tuple[int, int, int]
Key = tuple[bytes, int]
Child = tuple[tuple[Action, ...], State, Key]
# A child of a move that leaves the waste and stock as they were, without ``p``: its
# actions, position, whether its reserve is checked, and its key.
Fixed = tuple[
    tuple[Action, ...], tuple[tuple[bytes, ...], tuple[int, ...], int, bytes], bool, bytes
]
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


# By card, its rank (1 to 13) and its class: its colour and its rank's parity (alike for
# all the cards of a run); by class and rank, the cards of that class and rank (two).
_RANK1: Final[tuple[int, ...]] = tuple(RANK[c] for c in range(52))
_CLASS: Final[tuple[int, ...]] = tuple(int(RED[c]) ^ (RANK[c] & 1) for c in range(52))
_CLASS_RANK: Final[tuple[tuple[int, ...], ...]] = tuple(
    tuple(sum(1 << c for c in range(52) if _CLASS[c] == k and RANK[c] == x) for x in range(14))
    for k in (0, 1)
)
_CLASS_BITS: Final[tuple[int, ...]] = tuple(sum(_CLASS_RANK[k]) for k in (0, 1))


# :func:`_packs` tries each way to choose the piles' bottom cards up to this many ways.
_CHOICES: Final = 6


def _fits_any(cards: int) -> int:
    """The cards that go on some card of ``cards`` (one rank below, the other colour)."""
    red = ((cards >> 13 | cards >> 26) & _RANKS) >> 1
    black = ((cards | cards >> 39) & _RANKS) >> 1
    return red | red << 39 | black << 13 | black << 26


def _reserve_leaves(
    piles: tuple[bytes, ...],
    found: tuple[int, ...],
    reserve: bytes,
    seq: bytes,
    p: int,
    runs: bool = False,
    exact: bool = False,
) -> int:
    """How many of ``reserve``'s cards (not empty), from its top, may leave it in turn: all
    of them when the result is ``len(reserve)``, else ``reserve[-1 - result]`` never leaves.

    For each card ``X`` in turn, the sets are worked out under the hypothesis that ``X``
    never leaves, once the cards above it have (module docstring); sets of cards are bits:
    ``placeable``, the cards ever at the top of a pile; ``bankable``, those ever banked;
    ``off``, the tableau cards that ever get off the card they lie on; ``free``, the cards
    that left the reserve or a pile's bottom. ``acc`` and ``rem`` are sets of positions in
    ``seq``: those ever at the waste's top, those ever played. Each card's sets go on from
    the last card's: the rules only add to them, and a round that adds nothing ends.

    With ``runs`` (piles that are each one run), the piles' test (:func:`_packs`, module
    docstring) follows each card too, and the check goes on to the last card; ``exact``
    has it try every choice of the piles' bottom cards.
    """
    if not all(piles):
        return len(reserve)  # an empty pile takes the reserve's top card
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
    acc = rem = acc_cards = rem_cards = off = free = lifted = 0
    rem_seen = seen_p = seen_b = seen_ep = seen_eb = -1
    ok = emptied = 0
    bots = [pile[0] for pile in piles]  # each pile's bottom card, on one line of play
    dirty = True
    waiting = 0  # the reserve's cards from the one looked at down
    departed = 0  # the reserve's cards above it, and it once it has left
    for c in reserve:
        waiting |= 1 << c
    for i in range(len(reserve) - 1, -1, -1):
        top = reserve[i]
        while dirty:
            p0, b0, r0 = placeable, bankable, rem
            if rem != rem_seen:
                rem_seen = rem
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
            # the cards that go on a placeable card (one rank below, the other colour), to
            # the end of the chain (each card added may take another)
            src = (down | acc_cards | free) & ~placeable
            while src:
                red = ((placeable >> 13 | placeable >> 26) & _RANKS) >> 1
                black = ((placeable | placeable >> 39) & _RANKS) >> 1
                more = src & (red | red << 39 | black << 13 | black << 26)
                if not more:
                    break
                placeable |= more
                src &= ~more
            if inner and (placeable != seen_p or bankable != seen_b):
                seen_p, seen_b = placeable, bankable
                was = off
                for bit, above, under in inner:
                    if bankable & bit or placeable & above:
                        off |= bit
                        placeable |= under
                if off != was:
                    inner = [entry for entry in inner if not off & entry[0]]
            # in suit order: each suit's run of cards from its foundation's height
            x = bankable | acc_cards | free | out & placeable
            y = x & ~_KINGS
            z = (y + _ACES) & ~y  # each suit's lowest card not in ``x`` (a King at most)
            bankable = (z - _ACES) | (z & x & _KINGS)
            played = acc_cards & (bankable | placeable) & ~rem_cards
            if played:
                rem_cards |= played
                while played:
                    low = played & -played
                    played ^= low
                    rem |= 1 << seq.index(low.bit_length() - 1)
            dirty = placeable != p0 or bankable != b0 or rem != r0
        if placeable != seen_ep or bankable != seen_eb:
            seen_ep, seen_eb = placeable, bankable
            # the cards that may go home, or onto a placeable card
            ok = (bankable << 1) & ~_ACES | _ACES | _fits_any(placeable)
            # the bottom cards that may leave now, emptying their pile: onto a placeable
            # card, or home, the pile's other cards off it (taken to get off a reserve card
            # that filled it)
            emptied = 0
            for pile in piles:
                b = pile[0]
                if placeable & _ABOVE_BITS[b] or (
                    (RANK[b] == 1 or bankable >> (b - 1) & 1)
                    and (len(pile) == 1 or off >> pile[1] & 1)
                ):
                    emptied |= 1 << b
        if not runs and not waiting & ~ok:
            return len(reserve)  # each may go home or onto a placeable card
        bit = 1 << top
        waiting &= ~bit
        gone = emptied | lifted & ok
        if not ok & bit:
            # only into a pile that empties: on the line, the first that may
            for j, b in enumerate(bots):
                if gone >> b & 1:
                    bots[j] = top
                    break
            else:
                return len(reserve) - 1 - i
        added = (bit | gone) & ~free
        free |= added
        if gone:
            lifted |= bit
            if not placeable & bit:
                placeable |= bit
                dirty = True
        if added & ok:
            dirty = True
        if runs:
            # the piles just after ``top`` leaves (module docstring, "The piles as runs")
            home = bankable | (bankable << 1) & ~_ACES | _ACES
            departed |= bit
            must = (on_tab | departed) & ~home
            fixed = bottoms & ~free  # never left their pile
            if not _packs(must, fixed, (bottoms | lifted) & ~fixed, waiting, top, exact):
                return len(reserve) - 1 - i
    return len(reserve)


def _packs(must: int, fixed: int, loose: int, gone: int, top: int, exact: bool = True) -> bool:
    """Whether the cards ``must`` may fit in four piles, each one run from its bottom card
    down (one card a rank, the other colour each rank down): the piles' bottom cards
    ``fixed`` and others of ``loose``, four in all, the other cards of the runs any but
    ``gone``, and ``top``, if in ``must`` and not a bottom card, its pile's top card.

    When there is a choice of bottom cards, first with every card of ``loose`` a bottom card
    or not, as suits best (each may start a run, is taken to be where it must be, and may
    stand in a run); then, when that fits, each way to choose: one by one when there are
    at most :data:`_CHOICES`, else, with ``exact`` (the search's start), all at once class
    by class (:func:`_class_counts`), else not at all. A "yes" may be wrong, a "no" never
    is."""
    spare = 4 - fixed.bit_count()
    if spare <= 0 or not loose:
        return _packs_with(must, fixed, 0, gone, top)
    cards = []
    while loose:
        low = loose & -loose
        loose ^= low
        cards.append(low)
    if len(cards) <= spare:
        return _packs_with(must, fixed | sum(cards), 0, gone, top)
    if not _packs_with(must, fixed, sum(cards), gone, top):
        return False
    if comb(len(cards), spare) <= _CHOICES:
        return any(
            _packs_with(must, fixed | sum(chosen), 0, gone, top)
            for chosen in combinations(cards, spare)
        )
    if not exact:
        return True
    # by class, the counts of ``loose`` cards that may be bottom cards (bit ``n``: ``n``)
    loose = sum(cards)
    need = must & ~fixed
    top_rank = _RANK1[top] if need >> top & 1 else 0
    counts = []
    for k in (0, 1):
        mine = loose & _CLASS_BITS[k]
        if not need & _CLASS_BITS[k]:
            counts.append((2 << min(mine.bit_count(), 4)) - 1)
            continue
        counts.append(_class_counts(k, need, fixed, mine, gone, top, top_rank))
    return any(counts[0] >> n & counts[1] >> (spare - n) & 1 for n in range(spare + 1))


def _class_counts(
    k: int, need: int, fixed: int, loose: int, gone: int, top: int, top_rank: int
) -> int:
    """For :func:`_packs`, the runs of class ``k`` with the bottom cards ``fixed`` and some of
    ``loose``: the counts of cards of ``loose`` (bit ``n`` for ``n``, up to 4) for which some
    choice fits, as :func:`_packs_with` decides for each choice, all at once: the most runs
    that may go on, rank by rank, for each count chosen so far (more is never worse)."""
    ranks = _CLASS_RANK[k]
    best = {0: 0}  # cards of ``loose`` chosen: the most runs
    for x in range(13, 0, -1):
        here = ranks[x]
        mine = loose & here
        options: tuple[int, ...]
        if mine:
            low = mine & -mine
            options = (0, low) if low == mine else (0, low, mine ^ low, mine)
        else:
            options = (0,)
        starts = (fixed & here).bit_count()
        after: dict[int, int] = {}
        for used, runs in best.items():
            for chosen in options:
                n = used + chosen.bit_count()
                if n > 4:
                    continue
                room = (here & ~(gone | fixed | chosen)).bit_count()
                runs_here = min(runs, room)
                if (need & here & ~chosen).bit_count() > runs_here:
                    continue
                if x == top_rank and _CLASS[top] == k and not chosen >> top & 1:
                    runs_here -= 1  # ``top``'s run ends with it
                runs_here += starts + chosen.bit_count()
                if after.get(n, -1) < runs_here:
                    after[n] = runs_here
        if not after:
            return 0
        best = after
    out = 0
    for n in best:
        out |= 1 << n
    return out


def _packs_with(must: int, bottoms: int, loose: int, gone: int, top: int) -> bool:
    """:func:`_packs` with the piles' bottom cards ``bottoms``, and ``loose`` cards each of
    which may start a run and stand in one, and is never needed in one. Each run, from its
    bottom card's rank down, goes on as long as there are cards for it; one that ends,
    ends for good. Runs of a class (colour and rank's parity, alike all along a run) take
    the cards of that class; at each rank, each card of ``must`` needs its own run, and
    each run a card of the rank that is not ``gone`` nor a bottom card. Keeping every run
    that may go on is never worse (one may end at any rank), so the count of runs is all
    that matters, rank by rank from the Kings down."""
    room = ~(gone | bottoms)
    need = must & ~bottoms & ~loose
    starts = bottoms | loose
    top_rank = _RANK1[top] if need >> top & 1 else 0
    top_class = _CLASS[top]
    for k in (0, 1):
        mine = need & _CLASS_BITS[k]
        if not mine:
            continue
        # from the highest rank of a card needed or a bottom card down to the lowest needed
        low = (mine | mine >> 13 | mine >> 26 | mine >> 39) & _RANKS
        high = (starts & _CLASS_BITS[k]) | mine
        high = (high | high >> 13 | high >> 26 | high >> 39) & _RANKS
        ranks = _CLASS_RANK[k]
        runs = 0
        for x in range(high.bit_length(), (low & -low).bit_length() - 1, -1):
            here = ranks[x]
            if runs or need & here:
                free = (here & room).bit_count()
                if runs > free:
                    runs = free
                if (need & here).bit_count() > runs:
                    return False
                if x == top_rank and k == top_class:
                    runs -= 1  # ``top``'s run ends with it
            if starts & here:
                runs += (starts & here).bit_count()  # runs from bottom cards of this rank
    return True


def _reserve_stuck(
    piles: tuple[bytes, ...],
    found: tuple[int, ...],
    reserve: bytes,
    seq: bytes,
    p: int,
    runs: bool = False,
) -> bool:
    """Whether some card of ``reserve`` (not empty) can never leave it: then no win."""
    return _reserve_leaves(piles, found, reserve, seq, p, runs) < len(reserve)


def _canon(
    piles: tuple[bytes, ...], found: tuple[int, ...], runs_only: bool, actions: list[Action]
) -> tuple[tuple[bytes, ...], tuple[int, ...]]:
    """Bank every card that its foundation takes and that lies at a pile's top on a card it
    fits, one at a time until none is left (module docstring), adding the moves to
    ``actions``."""
    while True:
        for i in range(len(piles)):
            pile = piles[i]
            if len(pile) > 1:
                c = pile[-1]
                if found[c // 13] == c % 13 and (runs_only or _FITS[c][pile[-2]]):
                    break
        else:
            return piles, found
        f = list(found)
        f[c // 13] += 1
        found = tuple(f)
        pl = list(piles)
        pl[i] = pile[:-1]
        piles = tuple(pl)
        actions.append((c, 1, TO_FOUNDATION))


Member = tuple[tuple[bytes, ...], tuple[int, ...], tuple[Action, ...]]


def _takes_any(cards: int) -> int:
    """The cards that some card of ``cards`` goes on (one rank above, the other colour)."""
    red = ((cards >> 13 | cards >> 26) & _RANKS) << 1 & _RANKS
    black = ((cards | cards >> 39) & _RANKS) << 1 & _RANKS
    return black << 13 | black << 26 | red | red << 39


def _suit_above(found: tuple[int, ...], c: int) -> list[int]:
    """The cards of ``c``'s suit above it that are on its foundation."""
    s = c // 13
    return list(range(c + 1, s * 13 + found[s]))


def _stuck_down(
    piles: tuple[bytes, ...], found: tuple[int, ...], card: int, into_empty: bool = False
) -> list[Member]:
    """The positions of the class of ``(piles, found)`` with only the cards brought down
    that must stay so (module docstring) once a card is put on ``card``, brought down from
    its foundation (it is then a pile's top), or, with ``into_empty``, once ``card`` goes
    from its foundation into an empty pile: ``card`` (not in the second case) and the
    cards above it in its suit, and those each lies on, each, from the highest rank down,
    on a pile's top card of ``piles`` or on one of them, each holding one."""
    if found[card // 13] == 13:
        return []  # its King would have to come down first, and it can lie on nothing
    tops = {pile[-1] for pile in piles if pile}
    out: list[Member] = []
    first = _suit_above(found, card) if into_empty else [card, *_suit_above(found, card)]
    _place(piles, found, tops, out, first, set(first), {}, set())
    return out


def _place(
    piles: tuple[bytes, ...],
    found: tuple[int, ...],
    tops: set[int],
    out: list[Member],
    todo: list[int],
    stuck: set[int],
    on: dict[int, int],
    used: set[int],
) -> None:
    """:func:`_stuck_down`'s positions with the cards ``todo`` still to place, ``on`` the
    card each placed one lies on (a module-level function: a closure that calls itself
    is a reference cycle, left to the cyclic collector, which the search turns off)."""
    if not todo:
        pl = list(piles)
        f = list(found)
        acts: list[Action] = []
        for c in sorted(on, key=lambda c: -(c % 13)):
            t = on[c]
            j = next(j for j, pile in enumerate(pl) if pile and pile[-1] == t)
            pl[j] += bytes((c,))
            f[c // 13] -= 1
            acts.append((c, 1, t))
        out.append((tuple(pl), tuple(f), tuple(acts)))
        return
    c = max(todo, key=lambda c: c % 13)  # the highest rank left: its card to lie on
    rest = [d for d in todo if d != c]
    for a in _ABOVE[c]:
        if a in used:
            continue
        if a in tops or a in stuck:
            _place(piles, found, tops, out, rest, stuck, {**on, c: a}, used | {a})
        elif found[a // 13] > a % 13 and a % 13 < 12:  # on its foundation, not a King
            more = [a, *(d for d in _suit_above(found, a) if d not in stuck)]
            _place(
                piles, found, tops, out, rest + more, stuck | set(more), {**on, c: a}, used | {a}
            )


class CanfieldModel:
    """Canfield for the search: start, moves (best first), key and win test."""

    def __init__(self, game: Game) -> None:
        self.reserve = bytes(game.reserve)
        found = [0, 0, 0, 0]
        for f in game.foundations:
            if f:
                found[SUIT[f[-1]]] = len(f)
        seq = bytes(game.waste) + bytes(reversed(game.stock))
        piles = tuple(bytes(p) for p in game.tableau)
        # In play every pile is one run (cards only ever go on a card they fit); a position
        # set up otherwise has its runs worked out pile by pile.
        self.runs_only = all(not pile or _run_length(pile) == len(pile) for pile in piles)
        actions: list[Action] = []
        piles, nf = _canon(piles, tuple(found), self.runs_only, actions)
        p = _cycle(len(game.waste), len(seq))
        self.root: State = (piles, nf, len(game.reserve), seq, p, True)
        self.root_actions: tuple[Action, ...] = tuple(actions)
        # by piles, foundations and reserve, the children of the state expanded with them
        # but for the waste's moves (without ``p``), and the waste positions played from
        self._memo: dict[bytes, tuple[list[Fixed], set[int]]] = {}

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

    # The search (:mod:`.solver`) dives depth-first 100 states from the start, then 5 at a
    # time from the state it holds with the lowest score: 4 a reserve card, 1 for every 4
    # cards in the waste and stock, less 1 for every 4 cards banked. A win needs the reserve
    # emptied, and a long depth-first search can spend its time in a lost branch.
    dives: tuple[int, int] = (100, 5)

    @staticmethod
    def priority(state: State) -> int:
        return state[2] * 4 + (len(state[3]) - sum(state[1])) // 4

    def expand(self, state: State) -> list[Child]:
        piles, found, rc, seq, p, new = state
        reserve = self.reserve
        if new and rc:
            # the piles' test (:func:`_packs`) at the start only: in the search it cut
            # too few of the states to pay for itself (the root is compared by value: where
            # the model is compiled, a state's tuple is made anew each time it is read)
            start = self.runs_only and state == self.root
            if _reserve_leaves(piles, found, reserve[:rc], seq, p, start, start) < rc:
                return []  # a card of the reserve can never leave it: no win
        runs_only = self.runs_only
        n = len(seq)
        # Waste positions reachable by draws and redeals.
        qs: list[int] = []
        if n:
            if p:
                qs.extend(range(p, n, 3))
            qs.extend(range(3, n, 3))
            qs.append(n)
        # The same piles, foundations and reserve expanded before with another ``p``: the
        # moves but the waste's are the same, to the same states but for ``p``, and the waste's
        # moves from a position seen then lead to the same states as then.
        rest_key = b"\xff".join(sorted(piles)) + b"\xfe" + bytes((*found, rc))
        memo = self._memo.get(rest_key)
        if memo is None:
            fixed: list[Fixed] = []
            self._memo[rest_key] = (fixed, set(qs))
            out: list[Child] = []
            again = False
        else:
            fixed, done = memo
            out = [(a, (*st, p, chk), (k, p)) for a, st, chk, k in fixed]
            qs = [q for q in qs if q not in done]
            done.update(qs)
            again = True
        append = out.append
        keep = fixed.append

        def child(
            actions: list[Action],
            pl: tuple[bytes, ...],
            f: tuple[int, ...],
            nrc: int,
            nseq: bytes,
            np: int,
        ) -> None:
            pl, f = _canon(pl, f, runs_only, actions)
            key = b"\xff".join(sorted(pl)) + b"\xfe" + bytes((*f, nrc))
            check = nrc < rc or len(nseq) < n
            append((tuple(actions), (pl, f, nrc, nseq, np, check), (key, np)))
            if len(nseq) == n:  # not a waste move: kept for this state with another ``p``
                keep((out[-1][0], (pl, f, nrc, nseq), check, key))

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

        def taken(pl: tuple[bytes, ...], i: int, k: int) -> tuple[list[bytes], int]:
            out_pl = list(pl)
            rest = pl[i][:-k]
            nrc = rc
            if not rest and rc:
                rest = reserve[rc - 1 : rc]
                nrc = rc - 1
            out_pl[i] = rest
            return out_pl, nrc

        # 1. to the foundations
        for i, pile in enumerate(piles if not again else ()):
            if pile:
                c = pile[-1]
                if found[c // 13] == c % 13:
                    pl, nrc = taken(piles, i, 1)
                    f = list(found)
                    f[c // 13] += 1
                    child([(c, 1, TO_FOUNDATION)], tuple(pl), tuple(f), nrc, seq, p)
        top_home = rc and found[top_r // 13] == top_r % 13
        if top_home and not again:
            f = list(found)
            f[top_r // 13] += 1
            child([(top_r, 1, TO_FOUNDATION)], piles, tuple(f), rc - 1, seq, p)
        for q in qs:
            c = seq[q - 1]
            if found[c // 13] == c % 13:
                f = list(found)
                f[c // 13] += 1
                nseq = seq[: q - 1] + seq[q:]
                child([(c, 1, TO_FOUNDATION)], piles, tuple(f), rc, nseq, _cycle(q - 1, n - 1))
        # A card that may go home is not moved alone onto the tableau (module docstring).
        # 2. the reserve to the tableau
        if rc and not top_home and not again:
            for j in wanted.get(top_r, ()):
                tg = piles[j]
                pl = list(piles)
                pl[j] = tg + reserve[rc - 1 : rc]
                child([(top_r, 1, tg[-1])], tuple(pl), found, rc - 1, seq, p)
        # 3. whole piles onto another pile (the reserve refills them)
        if rc and not again:
            for i, pile in enumerate(piles):
                if not runs_only and _run_length(pile) < len(pile):
                    continue
                b = pile[0]
                if len(pile) == 1 and found[b // 13] == b % 13:
                    continue
                for j in wanted.get(b, ()):
                    tg = piles[j]
                    pl, nrc = taken(piles, i, len(pile))
                    pl[j] = tg + pile
                    child([(b, len(pile), tg[-1])], tuple(pl), found, nrc, seq, p)
        # 4. the waste to the tableau
        for q in qs:
            c = seq[q - 1]
            js = wanted.get(c, ())
            if (not js and empty < 0) or found[c // 13] == c % 13:
                continue
            nseq = seq[: q - 1] + seq[q:]
            np = _cycle(q - 1, n - 1)
            card = seq[q - 1 : q]
            for j in js:
                tg = piles[j]
                pl = list(piles)
                pl[j] = tg + card
                child([(c, 1, tg[-1])], tuple(pl), found, rc, nseq, np)
            if empty >= 0:
                pl = list(piles)
                pl[empty] = card
                child([(c, 1, TO_EMPTY)], tuple(pl), found, rc, nseq, np)
        # 5. other runs between tableau piles
        for i, pile in enumerate(piles if not again else ()):
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
                if k == 1 and found[c // 13] == c % 13:
                    continue
                whole = k == size
                if whole and rc:
                    continue  # 3. above
                for j in wanted.get(c, ()):
                    tg = piles[j]
                    pl, nrc = taken(piles, i, k)
                    pl[j] = tg + pile[-k:]
                    child([(c, k, tg[-1])], tuple(pl), found, nrc, seq, p)
                if empty >= 0 and not whole:
                    pl = list(piles)
                    pl[i] = pile[:-k]
                    pl[empty] = pile[-k:]
                    child([(c, k, TO_EMPTY)], tuple(pl), found, rc, seq, p)
        # 6. a foundation's top card into an empty pile (onto a pile's top card it would be
        #    banked again at once)
        if empty >= 0 and not again:
            for s in range(4):
                h = found[s]
                if h:
                    pl = list(piles)
                    pl[empty] = bytes((s * 13 + h - 1,))
                    f = list(found)
                    f[s] -= 1
                    child([(s * 13 + h - 1, 1, TO_EMPTY)], tuple(pl), tuple(f), rc, seq, p)
        # 7. moves of the positions that foundation cards brought down stand for: a card or
        #    run onto one of them (only those with a card that may go on them matter)
        onf = (
            _BANKED[0][found[0]]
            | _BANKED[1][found[1]]
            | _BANKED[2][found[2]]
            | _BANKED[3][found[3]]
        )
        # the foundation cards that a card of the tableau, the reserve's top or the waste
        # (where its moves reach) goes on; with the reserve empty, any foundation card may
        # go into an empty pile
        movable = 0
        for pile in piles if not again else ():
            for c in pile:
                movable |= 1 << c
        if rc and not again:
            movable |= 1 << top_r
        for q in qs:
            movable |= 1 << seq[q - 1]
        targets = onf & ~_KINGS & _takes_any(movable)
        if not targets and (empty < 0 or again):
            return out
        members = []
        rest = targets
        while rest:
            low = rest & -rest
            rest ^= low
            members.extend(_stuck_down(piles, found, low.bit_length() - 1))
        base = [len(pile) for pile in piles]
        # where each card that may go on a card brought down lies: (pile, index) in the
        # tableau (the bottom of a run to the top), -1 for the reserve's top, or a waste move
        where: dict[int, list[tuple[int, int]]] = {}
        for i, pile in enumerate(piles if not again else ()):
            for at, c in enumerate(pile):
                if targets & _ABOVE_BITS[c]:
                    where.setdefault(c, []).append((i, at))
        if rc and not again and targets & _ABOVE_BITS[top_r]:
            where.setdefault(top_r, []).append((-1, 0))
        for q in qs:
            c = seq[q - 1]
            if targets & _ABOVE_BITS[c]:
                where.setdefault(c, []).append((-2, q))
        for mp, mf, acts in members:
            for j, pile in enumerate(mp):
                if len(pile) == base[j]:
                    continue
                top = pile[-1]  # brought down: put a card or a run on it
                for y in _BELOW[top]:
                    alone = mf[y // 13] == y % 13  # it may go home: banked again at once
                    for i, at in where.get(y, ()):
                        if i >= 0:
                            if i == j:
                                continue
                            src = mp[i]
                            k = len(src) - at
                            if (k == 1 and alone) or (not runs_only and _run_length(src) < k):
                                continue
                            pl, nrc = taken(mp, i, k)
                            pl[j] = pile + src[at:]
                            child([*acts, (y, k, top)], tuple(pl), mf, nrc, seq, p)
                        elif alone:
                            continue
                        elif i == -1:
                            pl = list(mp)
                            pl[j] = pile + reserve[rc - 1 : rc]
                            child([*acts, (y, 1, top)], tuple(pl), mf, rc - 1, seq, p)
                        else:
                            pl = list(mp)
                            pl[j] = pile + seq[at - 1 : at]
                            nseq = seq[: at - 1] + seq[at:]
                            np = _cycle(at - 1, n - 1)
                            child([*acts, (y, 1, top)], tuple(pl), mf, rc, nseq, np)
        # 8. with the reserve empty, a foundation card under its foundation's top into an
        #    empty pile, the cards above it brought down first
        if empty >= 0 and not again:
            for s in range(4):
                for c in range(s * 13, s * 13 + found[s] - 1):
                    for mp, mf, acts in _stuck_down(piles, found, c, True):
                        pl = list(mp)
                        pl[empty] = bytes((c,))
                        f = list(mf)
                        f[s] -= 1
                        child([*acts, (c, 1, TO_EMPTY)], tuple(pl), tuple(f), rc, seq, p)
        return out
