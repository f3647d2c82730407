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

The key of a state sorts the tableau piles: while the reserve has cards no pile is ever
empty (an emptied pile is filled at once, so at most one is empty at a time and the fill
order never matters), and once the reserve is empty every empty pile is the same; the
rules treat the piles alike otherwise.

Safe moves to the foundations (taken alone, without trying anything else). Let ``m`` be
the lowest of the four foundations' heights. A card ``c`` of rank ``r = m + 1`` at the top
of a tableau pile whose foundation takes it, and which is not the pile's only card unless
the reserve is empty, goes to the foundation at once. Proof: every card of rank below
``r`` is on the foundations. Take any winning line ``w`` from the position ``S``; call a
card *low* if its rank is below ``r``. Low cards only ever lie on low cards or on cards of
rank ``r`` (the tableau builds down), so in every pile the low cards, if any, are the top
of it, and no low card is ever a pile's bottom card while the reserve has cards (they
are all on the foundations at ``S``, and only the reserve fills a pile then). Let ``w'`` be
``c`` to the foundation, then ``w`` without the moves of low cards and of ``c`` (runs that
carried low cards or ``c`` on their top carry fewer cards). By induction along ``w``, the
position of ``w'`` is that of ``w`` with every low card and ``c`` on the foundations: every
kept move is legal there (it moves a card of rank ``r`` or more, other than ``c``, onto a
card of rank above ``r``, onto an empty pile, which is empty in both, or onto a
foundation whose height is the same in both), the reserve fills the same piles at the
same moves (a pile empties only when its bottom card leaves, and bottom cards are neither
low nor ``c`` while the reserve has cards), and the stock and waste never differ. ``w'``
ends won and is no longer than ``w``, since ``w`` banks ``c`` somewhere; so from the new
position a win is at least one move shorter than from ``S``, which is what makes taking the
move alone sound for the search (:mod:`.solver`).
"""

from __future__ import annotations

from typing import Final

from .cards import RANK, RED, SUIT
from .game import Game

__all__ = ["CanfieldModel"]

State = tuple[tuple[bytes, ...], tuple[int, ...], int, bytes, int]
Action = tuple[int, int, int]
Child = tuple[tuple[Action, ...], State, bytes]

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
        actions: list[Action] = []
        self.root: State = self._settle(
            (piles, tuple(found), len(game.reserve), seq, _cycle(len(game.waste), len(seq))),
            actions,
        )
        self.root_actions: tuple[Action, ...] = tuple(actions)

    def key(self, state: State) -> bytes:
        piles, found, rc, seq, p = state
        return b"\xff".join(sorted(piles)) + b"\xfe" + bytes((*found, rc, p)) + seq

    @staticmethod
    def won(state: State) -> bool:
        return sum(state[1]) == 52

    def _settle(self, state: State, actions: list[Action]) -> State:
        """Take the safe foundation moves (module docstring) until none is left."""
        piles, found, rc, seq, p = state
        while True:
            m = min(found)
            i = -1
            for index, pile in enumerate(piles):
                if pile:
                    i = index
                    c = pile[-1]
                    if RANK[c] == m + 1 and found[SUIT[c]] == m and (len(pile) > 1 or not rc):
                        break
            else:
                return (piles, found, rc, seq, p)
            f = list(found)
            f[SUIT[c]] += 1
            found = tuple(f)
            pl = list(piles)
            pl[i] = pile[:-1]
            piles = tuple(pl)
            actions.append((c, 1, TO_FOUNDATION))

    def _child(self, out: list[Child], action: Action, state: State) -> None:
        actions = [action]
        state = self._settle(state, actions)
        out.append((tuple(actions), state, self.key(state)))

    def expand(self, state: State) -> list[Child]:
        piles, found, rc, seq, p = state
        reserve = self.reserve
        out: list[Child] = []
        n = len(seq)
        top_r = reserve[rc - 1] if rc else -1

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
        # 1. to the foundations
        for i, pile in enumerate(piles):
            if pile:
                c = pile[-1]
                if found[SUIT[c]] == RANK[c] - 1:
                    pl, nrc = taken(i, 1)
                    f = list(found)
                    f[SUIT[c]] += 1
                    self._child(out, (c, 1, TO_FOUNDATION), (tuple(pl), tuple(f), nrc, seq, p))
        if rc and found[SUIT[top_r]] == RANK[top_r] - 1:
            f = list(found)
            f[SUIT[top_r]] += 1
            self._child(out, (top_r, 1, TO_FOUNDATION), (piles, tuple(f), rc - 1, seq, p))
        for q in qs:
            c = seq[q - 1]
            if found[SUIT[c]] == RANK[c] - 1:
                f = list(found)
                f[SUIT[c]] += 1
                nseq = seq[: q - 1] + seq[q:]
                self._child(
                    out, (c, 1, TO_FOUNDATION), (piles, tuple(f), rc, nseq, _cycle(q - 1, n - 1))
                )
        # 2. the reserve to the tableau
        if rc:
            fits = _FITS[top_r]
            for j, tg in enumerate(piles):
                if tg and fits[tg[-1]]:
                    pl = list(piles)
                    pl[j] = tg + reserve[rc - 1 : rc]
                    self._child(out, (top_r, 1, tg[-1]), (tuple(pl), found, rc - 1, seq, p))
        # 3. whole piles onto another pile (the reserve refills them)
        if rc:
            for i, pile in enumerate(piles):
                if not pile or _run_length(pile) < len(pile):
                    continue
                fits = _FITS[pile[0]]
                for j, tg in enumerate(piles):
                    if j != i and fits[tg[-1]]:
                        pl, nrc = taken(i, len(pile))
                        pl[j] = tg + pile
                        self._child(
                            out, (pile[0], len(pile), tg[-1]), (tuple(pl), found, nrc, seq, p)
                        )
        # 4. the waste to the tableau
        for q in qs:
            c = seq[q - 1]
            fits = _FITS[c]
            nseq = b""
            empty_done = False
            for j, tg in enumerate(piles):
                if tg:
                    if not fits[tg[-1]]:
                        continue
                    target = tg[-1]
                elif rc or empty_done:
                    continue
                else:
                    empty_done = True
                    target = TO_EMPTY
                if not nseq:
                    nseq = seq[: q - 1] + seq[q:]
                pl = list(piles)
                pl[j] = tg + bytes((c,))
                self._child(out, (c, 1, target), (tuple(pl), found, rc, nseq, _cycle(q - 1, n - 1)))
        # 5. other runs between tableau piles
        for i, pile in enumerate(piles):
            size = len(pile)
            for k in range(1, _run_length(pile) + 1 if pile else 1):
                c = pile[-k]
                fits = _FITS[c]
                empty_done = False
                for j, tg in enumerate(piles):
                    if j == i:
                        continue
                    if tg:
                        if not fits[tg[-1]] or (k == size and rc):
                            continue
                        target = tg[-1]
                    elif rc or k == size or empty_done:
                        continue
                    else:
                        empty_done = True
                        target = TO_EMPTY
                    pl, nrc = taken(i, k)
                    pl[j] = tg + pile[-k:]
                    self._child(out, (c, k, target), (tuple(pl), found, nrc, seq, p))
        # 6. foundations back to the tableau
        for s in range(4):
            h = found[s]
            if not h:
                continue
            c = s * 13 + h - 1
            fits = _FITS[c]
            empty_done = False
            for j, tg in enumerate(piles):
                if tg:
                    if not fits[tg[-1]]:
                        continue
                    target = tg[-1]
                elif rc or empty_done:
                    continue
                else:
                    empty_done = True
                    target = TO_EMPTY
                pl = list(piles)
                pl[j] = tg + bytes((c,))
                f = list(found)
                f[s] -= 1
                self._child(out, (c, 1, target), (tuple(pl), tuple(f), rc, seq, p))
        return out
