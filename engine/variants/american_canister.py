"""American Canister: British Canister's deal, with runs that move as a unit."""

from __future__ import annotations

from collections.abc import Iterable

from ..cards import RANK, RED
from ..game import KING, Game, T
from ..moves import IllegalMove, Move, MoveKind, PileKind, Reason
from .british_canister import deal_canister

__all__ = ["AmericanCanister"]


class AmericanCanister(Game):
    """American Canister (RULES.md)."""

    variant = "american-canister"
    title = "American Canister"
    tableau_piles = 8

    def _deal(self, deck: list[int]) -> None:
        deal_canister(self, deck)

    def _check_tableau(self, src: PileKind, pile: list[int], dst_index: int, count: int) -> None:
        self._check_run(pile, count)
        card = pile[-count]
        target = self.tableau[dst_index]
        if not target:
            if RANK[card] != KING:
                raise IllegalMove(
                    Reason.ONLY_KING_ON_EMPTY,
                    "an empty pile takes only a King or a run that starts with a King",
                )
        else:
            self._check_alternating(card, target[-1])

    def _tableau_moves(self) -> Iterable[Move]:
        tableau = self.tableau
        for i, pile in enumerate(tableau):
            run = self.run_length(pile)
            for k in range(1, run + 1):
                card = pile[-k]
                rank, red = RANK[card], RED[card]
                for j, target in enumerate(tableau):
                    if j == i:
                        continue
                    if target:
                        top = target[-1]
                        if RANK[top] == rank + 1 and RED[top] != red:
                            yield Move(MoveKind.MOVE, T, i, T, j, k)
                    elif rank == KING:
                        yield Move(MoveKind.MOVE, T, i, T, j, k)
