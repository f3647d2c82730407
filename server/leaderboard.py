"""Daily leaderboards as plain data, read through any backend (for HTTP and websockets)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol import ErrorCode, ProtocolError
from .backends import Backend
from .daily import (
    DayDeal,
    Entry,
    parse_board,
    parse_date,
    rank_entries,
    reveal_ms,
    seed_is_due,
    streaks,
    utc_date,
)
from .room import RoomState, check_variant

__all__ = [
    "MAX_LIMIT",
    "best_board",
    "daily_info",
    "day_board",
    "player_history",
    "ranked_attempt",
    "seed_revealed",
]

MAX_LIMIT = 100
AROUND = 2
RUNNING = (RoomState.COUNTDOWN, RoomState.RACING)


def _check(variant: str, limit: int) -> None:
    check_variant(variant)
    if not 1 <= limit <= MAX_LIMIT:
        raise ProtocolError(ErrorCode.BAD_FIELD, f"limit: 1 to {MAX_LIMIT}")


def _begun(date: str | None, today: str) -> str:
    """The day asked for (today if none), checked; raise ProtocolError(BAD_FIELD) for a
    day not yet begun (UTC)."""
    day = parse_date(date) if date else today
    if day > today:
        raise ProtocolError(ErrorCode.BAD_FIELD, f"{day} has not started yet (UTC)")
    return day


async def seed_revealed(
    backend: Backend,
    date: str,
    variant: str,
    *,
    now_ms: int,
    time_limit_s: int,
    tidy: bool = True,
) -> bool:
    """Whether a day's seed may be shown: no attempt of the day can still be running.

    That is from the day's end (UTC) plus the attempt time limit, unless an attempt of
    the day still runs then: the race clock stops while a node is down, so an attempt
    running through a restart ends later, and the seed waits for it. With ``tidy`` the
    rooms of attempts found over are forgotten.
    """
    if not seed_is_due(date, now_ms, time_limit_s):
        return False
    running = False
    over: list[str] = []
    for code in await backend.daily_rooms(date, variant):
        room = await backend.load_room(code)
        if (
            room is not None
            and room.state in RUNNING
            and room.settings.daily == date
            and room.settings.variant == variant
        ):
            running = True
        else:
            over.append(code)
    if tidy:
        await backend.drop_daily_rooms(date, variant, over)
    return not running


DealOf = Callable[[str, str], Awaitable[DayDeal]]
"""The deal of a day and variant, chosen (and certified) on first use: ``DealPool.daily``."""


async def _day_deal(
    backend: Backend, deal_of: DealOf, day: str, today: str, variant: str
) -> DayDeal | None:
    """Today's deal, or a past day's if one was chosen for it; None for a past day that had
    none (nobody played or asked then: no deal is chosen after the fact, so that asking
    about old days costs no solving)."""
    if day == today or (day < today and await backend.daily_deal(day, variant) is not None):
        return await deal_of(day, variant)
    return None


async def daily_info(
    backend: Backend,
    deal_of: DealOf,
    variant: str,
    date: str | None,
    *,
    now_ms: int,
    time_limit_s: int,
) -> dict[str, Any]:
    """A day's deal as published: its commitment from the start of the day, and once no
    attempt of the day can still be running its seed and nonce."""
    check_variant(variant)
    today = utc_date(now_ms)
    day = _begun(date, today)
    revealed = await seed_revealed(backend, day, variant, now_ms=now_ms, time_limit_s=time_limit_s)
    deal = await _day_deal(backend, deal_of, day, today, variant)
    shown = revealed and deal is not None
    return {
        "date": day,
        "variant": variant,
        "commitment": deal.commitment if deal else None,
        "reveal_ms": reveal_ms(day, time_limit_s),
        "revealed": revealed,
        "seed": deal.seed if shown and deal else None,
        "nonce": deal.nonce if shown and deal else None,
        "par": deal.par if shown and deal else None,
    }


async def day_board(
    backend: Backend,
    deal_of: DealOf,
    variant: str,
    date: str | None,
    *,
    now_ms: int,
    time_limit_s: int,
    limit: int = 20,
    player_id: str | None = None,
    board: str = "people",
) -> dict[str, Any]:
    """A day's board (``people`` or ``bots``): the top ``limit``, the player's rank and the
    ranks around it, the commitment to the seed, and the seed and its nonce once no
    attempt of the day can still be running. A day not yet begun (UTC) is refused, as
    :func:`daily_info` refuses it."""
    _check(variant, limit)
    parse_board(board)
    today = utc_date(now_ms)
    day = _begun(date, today)
    count = await backend.daily_count(day, variant, board)
    top = await backend.daily_top(day, variant, 0, limit, board)
    revealed = await seed_revealed(backend, day, variant, now_ms=now_ms, time_limit_s=time_limit_s)
    deal = await _day_deal(backend, deal_of, day, today, variant)
    shown = deal if revealed else None
    data: dict[str, Any] = {
        "today": today,
        "date": day,
        "variant": variant,
        "board": board,
        "count": count,
        "top": rank_entries(top),
        "commitment": deal.commitment if deal else None,
        "reveal_ms": reveal_ms(day, time_limit_s),
        "seed": shown.seed if shown else None,
        "nonce": shown.nonce if shown else None,
        "par": shown.par if shown else None,
        "you": None,
        "around": [],
    }
    if player_id is not None:
        index = await backend.daily_index(day, variant, player_id, board)
        if index is not None:
            start = max(0, index - AROUND)
            near = await backend.daily_top(day, variant, start, 2 * AROUND + 1, board)
            below = await backend.daily_better(day, variant, near[0].score, board) if near else 0
            around = rank_entries(near, first_rank=start + 1, below=below)
            data["around"] = around
            data["you"] = next((e for e in around if e["player_id"] == player_id), None)
    return data


async def ranked_attempt(backend: Backend, player_id: str, date: str, variant: str) -> Entry | None:
    """The player's ranked attempt at a day's deal, with its move log: found among the
    player's own attempts (not the whole day's: a day of many players is many logs to read
    for one), then read whole."""
    entries = await backend.player_history(player_id)
    found = next((e for e in entries if e.date == date and e.variant == variant and e.ranked), None)
    if found is None:
        return None
    return await backend.daily_entry(date, variant, player_id, found.attempt)


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


async def best_board(
    backend: Backend, variant: str, *, limit: int = 20, board: str = "people"
) -> dict[str, Any]:
    """The all-time best ranked attempts of a variant on a board (``people`` or ``bots``)."""
    _check(variant, limit)
    best = await backend.best_entries(variant, limit, parse_board(board))
    return {"variant": variant, "board": board, "best": rank_entries(best)}
