"""Canfield as the Solo Cards program plays it: draw three, unlimited redeals."""

from __future__ import annotations

from collections.abc import Iterable

from ..cards import RANK, RED
from ..game import Game, T, W
from ..moves import IllegalMove, Move, MoveKind, PileKind, Reason

__all__ = ["Canfield"]


class Canfield(Game):
    """Canfield, Solo Cards rules (RULES.md)."""

    variant = "canfield"
    title = "Canfield (Solo Cards)"
    tableau_piles = 4
    has_stock = True
    draw_count = 3
    waste_visible = 3
    foundation_to_tableau = True

    def _deal(self, deck: list[int]) -> None:
        ace = next(i for i, card in enumerate(deck) if RANK[card] == 1)
        self.foundations[0].append(deck[ace])
        rest = deck[:ace] + deck[ace + 1 :]
        self.reserve.extend(rest[0:13])
        for i, pile in enumerate(self.tableau):
            pile.append(rest[13 + i])
        self.stock.extend(rest[17:51])

    def _check_tableau(self, src: PileKind, pile: list[int], dst_index: int, count: int) -> None:
        if src is T:
            self._check_run(pile, count)
        card = pile[-count]
        target = self.tableau[dst_index]
        if not target:
            if self.reserve:
                raise IllegalMove(
                    Reason.EMPTY_PILE_NEEDS_RESERVE,
                    "an empty pile is filled from the reserve while the reserve has cards",
                )
            return
        self._check_alternating(card, target[-1])

    def _auto_fill(self) -> tuple[int, ...]:
        if not self.reserve:
            return ()
        fills = []
        for i, pile in enumerate(self.tableau):
            if not pile and self.reserve:
                pile.append(self.reserve.pop())
                fills.append(i)
        return tuple(fills)

    def _tableau_moves(self) -> Iterable[Move]:
        tableau = self.tableau
        open_space = not self.reserve
        for i, pile in enumerate(tableau):
            for k in range(1, self.run_length(pile) + 1):
                card = pile[-k]
                rank, red = RANK[card], RED[card]
                for j, target in enumerate(tableau):
                    if j == i:
                        continue
                    if target:
                        top = target[-1]
                        if RANK[top] == rank + 1 and RED[top] != red:
                            yield Move(MoveKind.MOVE, T, i, T, j, k)
                    elif open_space:
                        yield Move(MoveKind.MOVE, T, i, T, j, k)
        for kind, index, pile in self._sources():
            if kind is T:
                continue
            card = pile[-1]
            rank, red = RANK[card], RED[card]
            for j, target in enumerate(tableau):
                if target:
                    top = target[-1]
                    if RANK[top] == rank + 1 and RED[top] != red:
                        yield Move(MoveKind.MOVE, kind, index, T, j, 1)
                elif open_space:
                    yield Move(MoveKind.MOVE, kind, index, T, j, 1)

    def cycle_tops(self) -> list[int]:
        """The cards that drawing and redealing alone would bring to the top of the waste.

        The first pass draws what is left of the stock; the redeal then turns the whole
        waste over into a stock that reads ``stock + waste[::-1]`` (top last), and the
        second pass draws all of it. Worked out by position, without playing it.
        """
        stock, waste, n = self.stock, self.waste, self.draw_count
        tops = [stock[max(0, i)] for i in range(len(stock) - n, -n, -n)]
        size = len(stock)
        last = size + len(waste) - 1
        for i in range(last + 1 - n, -n, -n):
            j = max(0, i)
            tops.append(stock[j] if j < size else waste[last - j])
        return tops

    def _playable_cards(self) -> frozenset[int] | None:
        """Every card that could be played now onto a foundation or the tableau (None: any)."""
        cards: set[int] = set()
        for f in self.foundations:
            if not f:
                cards.update(suit * 13 for suit in range(4))  # the aces
            elif RANK[f[-1]] < 13:
                cards.add(f[-1] + 1)
        for target in self.tableau:
            if target:
                top = target[-1]
                if RANK[top] > 1:
                    red = RED[top]
                    cards.update(
                        suit * 13 + RANK[top] - 2 for suit in range(4) if (suit in (1, 2)) != red
                    )
            elif not self.reserve:
                return None
        return frozenset(cards)

    # What only the tableau, foundations and reserve decide, kept for one layout revision.
    _layout_at = -1
    _fixed_progress: bool
    _playable: frozenset[int] | None
    _cycle_stuck: dict[tuple[int, int], bool]

    def _is_stuck(self) -> bool:
        # Moves from the tableau, the reserve and the foundations change only when one of
        # those piles does, and so do the cards that could be played and the order of the
        # cards that draws and redeals go round (``stock + waste[::-1]`` is the same after
        # either): between two such moves, how far the stock has been drawn decides the rest.
        if self._layout_at != self.layout_rev:
            self._layout_at = self.layout_rev
            self._fixed_progress = any(m.src is not W for m in self._progress_moves())
            self._cycle_stuck = {}
            if self._fixed_progress:
                return False
            self._playable = self._playable_cards()
        elif self._fixed_progress:
            return False
        key = (len(self.stock), len(self.waste))
        stuck = self._cycle_stuck.get(key)
        if stuck is None:
            stuck = self._cycle_stuck[key] = self._stuck_in_cycle()
        return stuck

    def _stuck_in_cycle(self) -> bool:
        """No card that draws and redeals bring to the top of the waste can be played."""
        playable = self._playable
        waste = self.waste
        if playable is None:
            return not (waste or self.stock)
        if waste and waste[-1] in playable:
            return False
        return not any(card in playable for card in self.cycle_tops())
