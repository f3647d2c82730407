"""British Canister: eight open piles, single cards, Kings into spaces."""

from __future__ import annotations

from collections.abc import Iterable

from ..cards import RANK, RED
from ..game import KING, Game, T
from ..moves import IllegalMove, Move, MoveKind, PileKind, Reason

__all__ = ["BritishCanister", "deal_canister"]

CANISTER_SIZES = (7, 7, 7, 7, 6, 6, 6, 6)


def deal_canister(game: Game, deck: list[int]) -> None:
    """Deal piles 1–4 seven cards and piles 5–8 six, pile by pile, all face up."""
    start = 0
    for pile, size in zip(game.tableau, CANISTER_SIZES, strict=True):
        pile.extend(deck[start : start + size])
        start += size


class BritishCanister(Game):
    """British Canister (RULES.md)."""

    variant = "british-canister"
    title = "British Canister"
    tableau_piles = 8

    def _deal(self, deck: list[int]) -> None:
        deal_canister(self, deck)

    def _check_tableau(self, src: PileKind, pile: list[int], dst_index: int, count: int) -> None:
        if count != 1:
            raise IllegalMove(Reason.SINGLE_CARD_ONLY, "only the top card moves, never a sequence")
        card = pile[-1]
        target = self.tableau[dst_index]
        if not target:
            if RANK[card] != KING:
                raise IllegalMove(
                    Reason.ONLY_KING_ON_EMPTY, "only a King may move into an empty pile"
                )
        else:
            self._check_alternating(card, target[-1])

    def _tableau_moves(self) -> Iterable[Move]:
        tableau = self.tableau
        for i, pile in enumerate(tableau):
            if not pile:
                continue
            card = pile[-1]
            rank, red = RANK[card], RED[card]
            for j, target in enumerate(tableau):
                if j == i:
                    continue
                if target:
                    top = target[-1]
                    if RANK[top] == rank + 1 and RED[top] != red:
                        yield Move(MoveKind.MOVE, T, i, T, j, 1)
                elif rank == KING:
                    yield Move(MoveKind.MOVE, T, i, T, j, 1)
