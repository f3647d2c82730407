"""The solver's model of British and American Canister: a compact state and its moves.

A state is ``(piles, found)``: the eight tableau piles as ``bytes`` (bottom card first) and
the height of each suit's foundation (by suit, C D H S). There is no stock, waste or
reserve, and nothing fills an empty pile, so the rules treat the piles alike and the key
sorts them; which foundation holds a suit does not matter either (ALL-5, ALL-6).

Safe moves to the foundations (taken alone, without trying anything else): a card ``c``
at the top of a pile whose foundation takes it goes there at once when it is an Ace, a
2, or a card of rank ``r`` whose two cards of rank ``r - 1`` in the other colour are both on
the foundations. Proof: no card ever leaves a foundation (BC-12, AC-12), so in the last
case no card can ever be put on ``c`` again; and nothing goes on an Ace. Take any winning
line ``w`` from the position ``S`` and let ``w'`` be ``c`` to the foundation, then ``w`` without
the moves of ``c`` alone (a run that carried ``c`` on its top, American Canister, carries
one card fewer: still a run, the same part of a run, with the same first card), and, for
a 2, with each move of an Ace onto ``c`` replaced by that Ace to the foundations (an Ace
always finds one: each suit's foundation is empty until its Ace comes) and that Ace's
later moves dropped likewise. By induction along ``w``, the position of ``w'`` is that of
``w`` with ``c`` (and those Aces) on the foundations: the kept moves are legal there, since
they never put a card on ``c`` or on those Aces, every pile's top other than theirs is the
same, and a pile they alone held is empty in ``w'``, which only matters to a King, whose
moves into empty piles ``w`` already had. ``w'`` ends won and is no longer than ``w`` (which
banks ``c``), so from the new position a win is at least one move shorter than from ``S``,
which makes taking the move alone sound for the search (:mod:`.solver`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .cards import RANK, RED, SUIT
from .game import Game

__all__ = ["CanisterModel"]

State = tuple[tuple[bytes, ...], tuple[int, ...]]
Action = tuple[int, int, int]
Child = tuple[tuple[Action, ...], State, bytes]

TO_FOUNDATION: Final = -2
TO_EMPTY: Final = -1
KING: Final = 13

_FITS: Final[tuple[tuple[bool, ...], ...]] = tuple(
    tuple(RANK[c] + 1 == RANK[t] and RED[c] != RED[t] for t in range(52)) for c in range(52)
)
# The suits of the other colour, by card.
_OPPOSITE: Final[tuple[tuple[int, int], ...]] = tuple(
    (0, 3) if RED[c] else (1, 2) for c in range(52)
)


# The two cards that go on each card: one rank below, of the other colour.
_BELOW: Final[tuple[tuple[int, ...], ...]] = tuple(
    () if RANK[c] == 1 else tuple(s * 13 + RANK[c] - 2 for s in range(4) if (s in (1, 2)) != RED[c])
    for c in range(52)
)


def _run_length(pile: bytes) -> int:
    n = len(pile)
    k = 1
    while k < n and _FITS[pile[n - k]][pile[n - k - 1]]:
        k += 1
    return k


class CanisterModel:
    """British or American Canister for the search."""

    def __init__(self, game: Game) -> None:
        self.runs = game.variant == "american-canister"
        found = [0, 0, 0, 0]
        for f in game.foundations:
            if f:
                found[SUIT[f[-1]]] = len(f)
        actions: list[Action] = []
        self.root: State = self._settle(
            (tuple(bytes(p) for p in game.tableau), tuple(found)), actions
        )
        self.root_actions: tuple[Action, ...] = tuple(actions)

    @staticmethod
    def key(state: State) -> bytes:
        return b"\xff".join(sorted(state[0])) + b"\xfe" + bytes(state[1])

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

    @staticmethod
    def won(state: State) -> bool:
        return sum(state[1]) == 52

    @staticmethod
    def _settle(state: State, actions: list[Action]) -> State:
        """Take the safe foundation moves (module docstring) until none is left."""
        piles, found = state
        while True:
            i = -1
            for index, pile in enumerate(piles):
                if pile:
                    i = index
                    c = pile[-1]
                    r = RANK[c]
                    if found[SUIT[c]] == r - 1:
                        a, b = _OPPOSITE[c]
                        if r <= 2 or (found[a] >= r - 1 and found[b] >= r - 1):
                            break
            else:
                return piles, found
            f = list(found)
            f[SUIT[c]] += 1
            found = tuple(f)
            pl = list(piles)
            pl[i] = pile[:-1]
            piles = tuple(pl)
            actions.append((c, 1, TO_FOUNDATION))

    def _child(self, out: list[Child], action: Action, state: State, src: int = -1) -> None:
        """Add the child ``state`` reached by ``action``, after the safe moves. For a move
        between piles (``src`` the pile it leaves), only the top it uncovers may be safe:
        the other tops and the foundations are those of a settled state."""
        actions = [action]
        if src >= 0:
            pile = state[0][src]
            if pile:
                c = pile[-1]
                r = RANK[c]
                found = state[1]
                if found[SUIT[c]] == r - 1:
                    a, b = _OPPOSITE[c]
                    if r <= 2 or (found[a] >= r - 1 and found[b] >= r - 1):
                        state = self._settle(state, actions)
        else:
            state = self._settle(state, actions)
        out.append((tuple(actions), state, self.key(state)))

    def expand(self, state: State) -> list[Child]:
        piles, found = state
        out: list[Child] = []
        for i, pile in enumerate(piles):
            if pile:
                c = pile[-1]
                if found[SUIT[c]] == RANK[c] - 1:
                    f = list(found)
                    f[SUIT[c]] += 1
                    pl = list(piles)
                    pl[i] = pile[:-1]
                    self._child(out, (c, 1, TO_FOUNDATION), (tuple(pl), tuple(f)))
        wanted: dict[int, list[int]] = {}  # a card: the piles whose top it goes on
        empty = -1
        for j, tg in enumerate(piles):
            if tg:
                for a in _BELOW[tg[-1]]:
                    wanted.setdefault(a, []).append(j)
            elif empty < 0:
                empty = j
        runs = self.runs
        for i, pile in enumerate(piles):
            if not pile:
                continue
            size = len(pile)
            for k in range(_run_length(pile) if runs else 1, 0, -1):
                c = pile[-k]
                for j in wanted.get(c, ()):
                    tg = piles[j]
                    pl = list(piles)
                    pl[i] = pile[:-k]
                    pl[j] = tg + pile[-k:]
                    self._child(out, (c, k, tg[-1]), (tuple(pl), found), i)
                if empty >= 0 and k != size and RANK[c] == KING:
                    pl = list(piles)
                    pl[i] = pile[:-k]
                    pl[empty] = pile[-k:]
                    self._child(out, (c, k, TO_EMPTY), (tuple(pl), found), i)
        return out
