"""Variant ids, new games and replay."""

from __future__ import annotations

from collections.abc import Iterable

from .game import Game
from .moves import IllegalMove, Move, parse_move
from .variants import AmericanCanister, BritishCanister, Canfield, RainbowCanfield

__all__ = ["VARIANTS", "ReplayError", "new_game", "replay"]

VARIANTS: dict[str, type[Game]] = {
    cls.variant: cls for cls in (BritishCanister, AmericanCanister, RainbowCanfield, Canfield)
}


def new_game(variant: str, seed: int, *, undo_allowed: bool = True) -> Game:
    """Deal a new game of ``variant`` from ``seed``; raise KeyError for an unknown variant."""
    try:
        cls = VARIANTS[variant]
    except KeyError:
        raise KeyError(f"unknown variant {variant!r}: one of {', '.join(VARIANTS)}") from None
    return cls(seed, undo_allowed=undo_allowed)


class ReplayError(Exception):
    """A replayed move was refused: which one, and why."""

    def __init__(self, index: int, move: Move, error: IllegalMove) -> None:
        super().__init__(f"move {index + 1} ({move}): {error.message}")
        self.index = index
        self.move = move
        self.error = error


def replay(
    variant: str, seed: int, moves: Iterable[Move | str], *, undo_allowed: bool = True
) -> Game:
    """Deal ``variant`` from ``seed`` and apply ``moves`` in order; raise ReplayError on a refusal."""
    game = new_game(variant, seed, undo_allowed=undo_allowed)
    for index, item in enumerate(moves):
        move = parse_move(item) if isinstance(item, str) else item
        try:
            game.apply(move)
        except IllegalMove as error:
            raise ReplayError(index, move, error) from error
    return game
