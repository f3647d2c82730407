"""Daily leaderboards as plain data, read through any backend (for HTTP and websockets)."""

from __future__ import annotations

from typing import Any

from ..protocol import ErrorCode, ProtocolError
from .backends import Backend
from .daily import daily_seed, parse_date, rank_entries, seed_is_public, streaks, utc_date
from .room import check_variant

__all__ = ["MAX_LIMIT", "best_board", "day_board", "player_history"]

MAX_LIMIT = 100
AROUND = 2


def _check(variant: str, limit: int) -> None:
    check_variant(variant)
    if not 1 <= limit <= MAX_LIMIT:
        raise ProtocolError(ErrorCode.BAD_FIELD, f"limit: 1 to {MAX_LIMIT}")


async def day_board(
    backend: Backend,
    secret: bytes,
    variant: str,
    date: str | None,
    *,
    now_ms: int,
    limit: int = 20,
    player_id: str | None = None,
) -> dict[str, Any]:
    """A day's board: the top ``limit``, the player's rank and the ranks around it, and the
    seed once the day is over."""
    _check(variant, limit)
    day = parse_date(date) if date else utc_date(now_ms)
    count = await backend.daily_count(day, variant)
    top = await backend.daily_top(day, variant, 0, limit)
    board: dict[str, Any] = {
        "today": utc_date(now_ms),
        "date": day,
        "variant": variant,
        "count": count,
        "top": rank_entries(top),
        "seed": daily_seed(secret, day, variant) if seed_is_public(day, now_ms) else None,
        "you": None,
        "around": [],
    }
    if player_id is not None:
        index = await backend.daily_index(day, variant, player_id)
        if index is not None:
            start = max(0, index - AROUND)
            near = await backend.daily_top(day, variant, start, 2 * AROUND + 1)
            below = await backend.daily_better(day, variant, near[0].score) if near else 0
            around = rank_entries(near, first_rank=start + 1, below=below)
            board["around"] = around
            board["you"] = next((e for e in around if e["player_id"] == player_id), None)
    return board


async def player_history(backend: Backend, player_id: str, *, now_ms: int) -> dict[str, Any]:
    """Every attempt of a player with its streaks (days in a row played and won)."""
    history = await backend.player_history(player_id)
    s = streaks(history, utc_date(now_ms))
    return {
        "player_id": player_id,
        "history": [e.public() for e in history],
        "streaks": {
            "played": s.played,
            "won": s.won,
            "best_played": s.best_played,
            "best_won": s.best_won,
        },
    }


async def best_board(backend: Backend, variant: str, *, limit: int = 20) -> dict[str, Any]:
    """The all-time best ranked attempts of a variant."""
    _check(variant, limit)
    best = await backend.best_entries(variant, limit)
    return {"variant": variant, "best": rank_entries(best)}
