"""The four games: cards, seeded deals, moves, views and replay. No I/O, no clock."""

from __future__ import annotations

from .cards import Card, card_name, parse_card
from .game import Change, Game, Position, Status
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
from .views import board_view, full_layout, player_view, spectator_view

__all__ = [
    "DRAW",
    "REDEAL",
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
    "format_move",
    "full_layout",
    "new_game",
    "parse_card",
    "parse_move",
    "player_view",
    "replay",
    "shuffled_deck",
    "spectator_view",
]
