"""Canfield as the Solo Cards program plays it: draw three, unlimited redeals."""

from __future__ import annotations

from collections.abc import Iterable

from ..cards import RANK, RED, SUIT
from ..game import Game, T
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
        """The cards that drawing and redealing alone would bring to the top of the waste."""
        stock, waste = list(self.stock), list(self.waste)
        tops: list[int] = []
        for _ in range(2):
            while stock:
                for _ in range(min(self.draw_count, len(stock))):
                    waste.append(stock.pop())
                tops.append(waste[-1])
            stock, waste = waste[::-1], []
        return tops

    def _playable(self, card: int) -> bool:
        rank, suit, red = RANK[card], SUIT[card], RED[card]
        for f in self.foundations:
            if (not f and rank == 1) or (f and SUIT[f[-1]] == suit and RANK[f[-1]] + 1 == rank):
                return True
        for target in self.tableau:
            if target:
                top = target[-1]
                if RANK[top] == rank + 1 and RED[top] != red:
                    return True
            elif not self.reserve:
                return True
        return False

    def _is_stuck(self) -> bool:
        for _ in self._progress_moves():
            return False
        return not any(self._playable(card) for card in self.cycle_tops())
