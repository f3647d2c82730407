"""Rainbow Canfield: a lead rank, wrapping foundations, whole-pile tableau moves."""

from __future__ import annotations

from collections.abc import Iterable

from ..cards import RANK
from ..game import Game, R, T, W
from ..moves import IllegalMove, Move, MoveKind, PileKind, Reason

__all__ = ["RainbowCanfield"]


class RainbowCanfield(Game):
    """Rainbow Canfield (RULES.md)."""

    variant = "rainbow-canfield"
    title = "Rainbow Canfield"
    tableau_piles = 4
    has_stock = True
    draw_count = 1
    waste_visible = 1
    wraps = True

    def _deal(self, deck: list[int]) -> None:
        self.reserve.extend(deck[0:13])
        self.foundations[0].append(deck[13])
        self.base_rank = RANK[deck[13]]
        for i, pile in enumerate(self.tableau):
            pile.append(deck[14 + i])
        self.stock.extend(deck[18:52])

    def _check_tableau(self, src: PileKind, pile: list[int], dst_index: int, count: int) -> None:
        target = self.tableau[dst_index]
        if src is T:
            if not target:
                raise IllegalMove(
                    Reason.TABLEAU_CANNOT_FILL_EMPTY,
                    "an empty pile is filled from the reserve (or the waste once the reserve is "
                    "empty), never from the tableau",
                )
            if count != len(pile):
                raise IllegalMove(
                    Reason.PARTIAL_PILE_MOVE,
                    f"only a whole pile moves between tableau piles: this one has {len(pile)} cards",
                )
            card = pile[0]
        else:
            card = pile[-1]
            if not target:
                if src is W and self.reserve:
                    raise IllegalMove(
                        Reason.EMPTY_PILE_NEEDS_RESERVE,
                        "while the reserve has cards, only its top card may fill an empty pile",
                    )
                return
        if RANK[card] % 13 + 1 != RANK[target[-1]]:
            raise IllegalMove(
                Reason.NOT_ONE_RANK_LOWER,
                "the tableau builds down by one, regardless of suit (a King may go on an Ace)",
            )

    def _tableau_moves(self) -> Iterable[Move]:
        tableau = self.tableau
        for i, pile in enumerate(tableau):
            if not pile:
                continue
            wanted = RANK[pile[0]] % 13 + 1
            for j, target in enumerate(tableau):
                if j != i and target and RANK[target[-1]] == wanted:
                    yield Move(MoveKind.MOVE, T, i, T, j, len(pile))
        for kind, pile in ((R, self.reserve), (W, self.waste)):
            if not pile:
                continue
            wanted = RANK[pile[-1]] % 13 + 1
            for j, target in enumerate(tableau):
                if target:
                    if RANK[target[-1]] == wanted:
                        yield Move(MoveKind.MOVE, kind, 0, T, j, 1)
                elif kind is R or not self.reserve:
                    yield Move(MoveKind.MOVE, kind, 0, T, j, 1)
