"""The moves of each game, as they are typed: the one table that both terminal clients
(the line client, :mod:`solrace.client.terminal`, and the full-screen one,
:mod:`solrace.client.tui`) take their help, their examples and their refusals' examples
from, so that neither suggests a move its game has no use for."""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "DEFAULT_GAME",
    "GAME_MOVES",
    "GameMove",
    "brief_examples",
    "move_examples",
    "moves_text",
]


class GameMove(NamedTuple):
    """One kind of move a game takes: as it is typed, what it does, and whether it is
    among the game's few examples where there is room for only a few (a prompt)."""

    notation: str
    meaning: str
    brief: bool = False


DEFAULT_GAME = "canfield"
"""The game whose moves are given where the game is not known (the server's default)."""

GAME_MOVES: dict[str, tuple[GameMove, ...]] = {
    "canfield": (
        GameMove("t1-t3", "the top card of pile 1 onto pile 3", brief=True),
        GameMove("t1-t3x2", "two cards"),
        GameMove("t2-f", "to a foundation"),
        GameMove("r-t1", "from the reserve"),
        GameMove("w-f", "from the waste", brief=True),
        GameMove("f2-t4", "back from a foundation"),
        GameMove("d", "draw", brief=True),
        GameMove("rd", "redeal"),
    ),
    "rainbow-canfield": (
        GameMove(
            "t1-t3xN",
            "the whole of pile 1, its N cards, onto pile 3: t1-t3 for a pile of one card",
            brief=True,
        ),
        GameMove("t2-f", "to a foundation"),
        GameMove("r-t1", "from the reserve"),
        GameMove("w-f", "from the waste", brief=True),
        GameMove("d", "draw; no redeal", brief=True),
    ),
    "american-canister": (
        GameMove("t1-t3", "the top card of pile 1 onto pile 3", brief=True),
        GameMove("t1-t3x2", "two cards", brief=True),
        GameMove("t2-f", "to a foundation", brief=True),
    ),
    "british-canister": (
        GameMove("t1-t3", "the top card of pile 1 onto pile 3", brief=True),
        GameMove("t2-f", "to a foundation", brief=True),
    ),
}
"""Every kind of move each game makes, and no other (tests/client/test_tui.py checks them
against the engine's legal moves); undo (``u``) is the room's, not the game's."""


def _moves(variant: str | None) -> tuple[GameMove, ...]:
    return GAME_MOVES.get(variant or DEFAULT_GAME, GAME_MOVES[DEFAULT_GAME])


def moves_text(variant: str | None) -> str:
    """The moves of ``variant``, each with what it does: ``t1-t3 (the top card …), …``."""
    return ", ".join(f"{m.notation} ({m.meaning})" for m in _moves(variant))


def _typed(notation: str) -> str:
    """A move of the table as one would type it (``t1-t3xN`` with a number)."""
    return notation.replace("xN", "x2")


def _listed(moves: list[str]) -> str:
    return moves[0] if len(moves) == 1 else f"{', '.join(moves[:-1])} or {moves[-1]}"


def move_examples(variant: str | None, *, undo: bool = False) -> str:
    """Every kind of move of ``variant`` as typed, ``u`` too where the room allows undo:
    ``t1-t3, t2-f or u``."""
    moves = [_typed(m.notation) for m in _moves(variant)]
    return _listed([*moves, "u"] if undo else moves)


def brief_examples(variant: str | None) -> str:
    """A few moves of ``variant`` as typed, for a line with room for few:
    ``t1-t3, w-f, d``."""
    return ", ".join(_typed(m.notation) for m in _moves(variant) if m.brief)
