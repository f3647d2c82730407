"""The only way a game becomes data for a client: the player and spectator views.

Views are plain dicts of str, int, bool, None and lists, ready for msgpack or JSON.
Face-down cards (the reserve under its top card, the stock) appear only as counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .cards import CARD_NAMES, card_name, rank_name
from .game import STATUS_TEXT, Game
from .moves import format_move

__all__ = [
    "board_view",
    "delta_view",
    "full_layout",
    "pile_view",
    "player_view",
    "spectator_view",
]

View = dict[str, Any]


def _top(pile: list[int]) -> str | None:
    return card_name(pile[-1]) if pile else None


def board_view(game: Game) -> View:
    """The masked board: every face-up card, and counts where cards are face down."""
    view: View = {
        "variant": game.variant,
        "tableau": [[card_name(c) for c in pile] for pile in game.tableau],
        "foundations": [{"top": _top(f), "count": len(f)} for f in game.foundations],
        "base_rank": rank_name(game.base_rank),
        "status": game.status.value,
        "banked": game.banked,
        "moves": game.moves,
    }
    if game.has_stock:
        view["reserve"] = {"count": len(game.reserve), "top": _top(game.reserve)}
        view["stock"] = {"count": len(game.stock)}
        view["waste"] = {
            "count": len(game.waste),
            "visible": [card_name(c) for c in game.visible_waste()],
        }
    return view


def _goes_on(game: Game, status: str) -> bool:
    """Whether the player may still move: a stuck game is over where undo is off (no undo,
    no moves), but where undo is allowed the player may undo out of it (or resign)."""
    return status == "playing" or (status == "stuck" and game.undo_allowed)


def player_view(game: Game, *, legal: bool = False) -> View:
    """What the player of ``game`` sees; ``legal`` adds the legal moves in the notation."""
    view = board_view(game)
    playing = _goes_on(game, view["status"])
    view["can_undo"] = playing and game.can_undo
    if legal:
        view["legal"] = [format_move(m) for m in game.legal_moves()] if playing else []
    return view


def pile_view(game: Game, pile: str) -> Any:
    """One pile as :func:`board_view` shows it, named as in the move notation (``t2``, ``w``)."""
    # A delta (one per move) holds one to three of these: card names come from the table.
    kind = pile[0]
    if kind == "t":
        return [CARD_NAMES[c] for c in game.tableau[int(pile[1:]) - 1]]
    if kind == "f":
        f = game.foundations[int(pile[1:]) - 1]
        return {"top": CARD_NAMES[f[-1]] if f else None, "count": len(f)}
    if kind == "r":
        r = game.reserve
        return {"count": len(r), "top": CARD_NAMES[r[-1]] if r else None}
    if kind == "s":
        return {"count": len(game.stock)}
    if kind == "w":
        return {"count": len(game.waste), "visible": [CARD_NAMES[c] for c in game.visible_waste()]}
    raise ValueError(f"no pile {pile!r}")


def delta_view(game: Game, touched: Iterable[str], *, legal: bool = False) -> View:
    """What changed in the player's view after a move that touched ``touched`` piles.

    ``piles`` maps each touched pile's name to its new :func:`pile_view`; the counters,
    status and ``can_undo`` are always there, and ``legal`` too when asked for.
    ``solrace.protocol.apply_delta`` turns the previous view and this into the new one.
    """
    status = STATUS_TEXT[game.status]
    playing = _goes_on(game, status)
    delta: View = {
        "piles": {name: pile_view(game, name) for name in touched},
        "status": status,
        "banked": game.banked,
        "moves": game.moves,
        "can_undo": playing and game.can_undo,
    }
    if legal:
        delta["legal"] = [format_move(m) for m in game.legal_moves()] if playing else []
    return delta


def spectator_view(game: Game) -> View:
    """What a spectator sees of one player's game: the same masking as the player's view."""
    return board_view(game)


def full_layout(game: Game) -> View:
    """Every card of every pile, bottom first: a dealer's tool, never sent during a race."""

    def names(pile: list[int]) -> list[str]:
        return [card_name(c) for c in pile]

    layout: View = {
        "variant": game.variant,
        "seed": game.seed,
        "tableau": [names(p) for p in game.tableau],
        "foundations": [names(f) for f in game.foundations],
    }
    if game.has_stock:
        layout["reserve"] = names(game.reserve)
        layout["stock"] = names(game.stock)
        layout["waste"] = names(game.waste)
    return layout
