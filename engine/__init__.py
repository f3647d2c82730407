"""The four games: cards, seeded deals, moves, views and replay. No I/O, no clock."""

from __future__ import annotations

from . import native  # noqa: F401  (first: importing it keeps a stale extension from loading)
from .cards import Card, card_name, parse_card
from .game import STATUS_TEXT, Change, Game, Position, Status
from .moves import (
    DRAW,
    REDEAL,
    UNDO,
    IllegalMove,
    Move,
    MoveKind,
    NotationError,
    PileKind,
    Reason,
    format_move,
    parse_move,
)
from .registry import VARIANTS, ReplayError, new_game, replay
from .rng import SplitMix64, shuffled_deck
from .views import board_view, delta_view, full_layout, pile_view, player_view, spectator_view

__all__ = [
    "DRAW",
    "REDEAL",
    "STATUS_TEXT",
    "UNDO",
    "VARIANTS",
    "Card",
    "Change",
    "Game",
    "IllegalMove",
    "Move",
    "MoveKind",
    "NotationError",
    "PileKind",
    "Position",
    "Reason",
    "ReplayError",
    "SplitMix64",
    "Status",
    "board_view",
    "card_name",
    "delta_view",
    "format_move",
    "full_layout",
    "new_game",
    "parse_card",
    "parse_move",
    "pile_view",
    "player_view",
    "replay",
    "shuffled_deck",
    "spectator_view",
]
