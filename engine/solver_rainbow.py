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
alike, so the key sorts them.

Dead positions, cut without a search: a pile that holds a card above a card of the same
suit that its foundation needs earlier. A card leaves a tableau pile only to a
foundation, from the top, or with its whole pile (RC-9, RC-11), so the upper card can
never be banked before the lower one, which the foundation needs first.

Safe moves to the foundations (taken alone, without trying anything else): a card ``c``
that a foundation takes, at the top of a tableau pile, of the reserve or of the waste,
whose rank is not the lead rank and when the four cards one rank below it are all on the
foundations. Proof: only a card one rank below ``c`` ever goes on ``c`` (RC-8, RC-10: for a
whole pile, its bottom card) and no card leaves a foundation (RC-22), so no card is ever
put on ``c`` again. Take any winning line ``w`` from the position ``S`` and let ``w'`` be ``c`` to
the foundation, then ``w`` without the moves of ``c`` alone (a whole pile that held ``c`` on
its top moves with one card fewer and the same bottom card). By induction along ``w``, the
position of ``w'`` is that of ``w`` with ``c`` on the foundations: every kept move is legal
there, since none puts a card on ``c``, every other pile's top, the reserve's top and the
waste's top are the same where ``w`` uses them (while ``c`` is still on the reserve or
under the waste's top in ``w``, ``w`` plays no card from under it), a pile that ``c`` alone
held is empty in ``w'`` (which only adds moves: an empty pile takes the same cards in both,
RC-15 and RC-16, with the reserve empty in ``w'`` no later than in ``w``), and the stock is
the same. ``w'`` ends won and is no longer than ``w`` (which banks ``c``), so from the new
position a win is at least one move shorter than from ``S``, which makes taking the move
alone sound for the search (:mod:`.solver`).
"""

from __future__ import annotations

from typing import Final

from .cards import RANK, SUIT
from .game import Game

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


class RainbowModel:
    """Rainbow Canfield for the search."""

    def __init__(self, game: Game) -> None:
        base = game.base_rank
        self.rel: tuple[int, ...] = tuple((RANK[c] - base) % 13 for c in range(52))
        self.reserve = bytes(game.reserve)
        self.stock = bytes(reversed(game.stock))  # the next card to draw first
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
        piles, found, rc, sp, waste = state
        return b"\xff".join(sorted(piles)) + b"\xfe" + bytes((*found, rc, sp)) + waste

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

    def _settle(self, state: State, actions: list[Action]) -> State:
        """Take the safe foundation moves (module docstring) until none is left."""
        piles, found, rc, sp, waste = state
        rel = self.rel
        reserve = self.reserve
        while True:
            m = min(found)
            changed = False
            for i, pile in enumerate(piles):
                if pile:
                    c = pile[-1]
                    r = rel[c]
                    if 0 < r <= m and found[SUIT[c]] == r:
                        pl = list(piles)
                        pl[i] = pile[:-1]
                        piles = tuple(pl)
                        changed = True
                        break
            else:
                if rc:
                    c = reserve[rc - 1]
                    r = rel[c]
                    if 0 < r <= m and found[SUIT[c]] == r:
                        rc -= 1
                        changed = True
                if not changed and waste:
                    c = waste[-1]
                    r = rel[c]
                    if 0 < r <= m and found[SUIT[c]] == r:
                        waste = waste[:-1]
                        changed = True
            if not changed:
                return piles, found, rc, sp, waste
            f = list(found)
            f[SUIT[c]] += 1
            found = tuple(f)
            actions.append((c, 1, TO_FOUNDATION))

    def _child(self, out: list[Child], action: Action, state: State) -> None:
        actions = [action]
        state = self._settle(state, actions)
        out.append((tuple(actions), state, self.key(state)))

    def expand(self, state: State) -> list[Child]:
        piles, found, rc, sp, waste = state
        rel = self.rel
        reserve = self.reserve
        out: list[Child] = []
        top_r = reserve[rc - 1] if rc else -1
        top_w = waste[-1] if waste else -1
        # 1. to the foundations
        for i, pile in enumerate(piles):
            if pile:
                c = pile[-1]
                if found[SUIT[c]] == rel[c]:
                    f = list(found)
                    f[SUIT[c]] += 1
                    pl = list(piles)
                    pl[i] = pile[:-1]
                    self._child(out, (c, 1, TO_FOUNDATION), (tuple(pl), tuple(f), rc, sp, waste))
        if rc and found[SUIT[top_r]] == rel[top_r]:
            f = list(found)
            f[SUIT[top_r]] += 1
            self._child(out, (top_r, 1, TO_FOUNDATION), (piles, tuple(f), rc - 1, sp, waste))
        if waste and found[SUIT[top_w]] == rel[top_w]:
            f = list(found)
            f[SUIT[top_w]] += 1
            self._child(out, (top_w, 1, TO_FOUNDATION), (piles, tuple(f), rc, sp, waste[:-1]))
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
                self._child(out, (top_r, 1, target), (tuple(pl), found, rc - 1, sp, waste))
        # 3. whole piles onto another pile
        for i, pile in enumerate(piles):
            if not pile:
                continue
            fits = _FITS[pile[0]]
            for j, tg in enumerate(piles):
                if j != i and tg and fits[tg[-1]]:
                    new = tg + pile
                    if self._dead(new):
                        continue
                    pl = list(piles)
                    pl[i] = b""
                    pl[j] = new
                    self._child(
                        out, (pile[0], len(pile), tg[-1]), (tuple(pl), found, rc, sp, waste)
                    )
        # 4. the waste to the tableau
        if waste:
            fits = _FITS[top_w]
            card = waste[-1:]
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
                self._child(out, (top_w, 1, target), (tuple(pl), found, rc, sp, waste[:-1]))
        # 5. a draw
        if sp < len(self.stock):
            self._child(
                out, DRAW_ACTION, (piles, found, rc, sp + 1, waste + self.stock[sp : sp + 1])
            )
        return out
