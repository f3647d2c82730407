"""The daily challenge: its seeds, scores, ranks and streaks. Pure: no I/O, no clock.

Every UTC day has one deal per variant, the same for everyone. Its seed comes from the
server secret, the date and the variant, so nobody can compute it ahead; it is shown
only once the day is over. A player's first attempt of a day and variant is ranked.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..engine import VARIANTS, replay
from ..protocol import ErrorCode, ProtocolError

__all__ = [
    "Entry",
    "Streaks",
    "daily_seed",
    "entry_from_log",
    "parse_date",
    "rank_entries",
    "score_of",
    "seed_is_public",
    "streaks",
    "utc_date",
]

SEED_BITS = 53
WIN_BASE = 0.0
LOSS_BASE = 1e13


def utc_date(now_ms: int) -> str:
    """The UTC date (YYYY-MM-DD) of a time in milliseconds since the epoch."""
    return dt.datetime.fromtimestamp(now_ms / 1000, dt.UTC).date().isoformat()


def parse_date(text: str) -> str:
    """A date given as YYYY-MM-DD, checked; raise ProtocolError(BAD_FIELD) otherwise."""
    try:
        return dt.date.fromisoformat(text).isoformat()
    except (TypeError, ValueError):
        raise ProtocolError(ErrorCode.BAD_FIELD, f"not a date (YYYY-MM-DD): {text!r}") from None


def daily_seed(secret: bytes, date: str, variant: str) -> int:
    """The day's seed for a variant: an HMAC of the date and variant under the server secret."""
    digest = hmac.new(secret, f"solrace-daily:{date}:{variant}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


def seed_is_public(date: str, now_ms: int) -> bool:
    """Whether the day is over (in UTC), so that its seeds may be shown."""
    return date < utc_date(now_ms)


def score_of(won: bool, time_ms: int, moves: int, banked: int) -> float:
    """One number that orders attempts, lower first: wins by time then moves; the rest by
    cards banked (more first), then time. Exact in a double, so Redis sorted sets keep it."""
    if won:
        return WIN_BASE + min(time_ms, 99_999_999) * 10_000 + min(moves, 9_999)
    return LOSS_BASE + (52 - banked) * 1e9 + min(time_ms, 999_999_999)


@dataclass(frozen=True, slots=True)
class Entry:
    """One attempt at a daily deal, scored by the server from its move log."""

    date: str
    variant: str
    player_id: str
    name: str
    attempt: int
    status: str
    banked: int
    moves: int
    time_ms: int
    log: list[str] = field(default_factory=list)

    @property
    def ranked(self) -> bool:
        """Only a player's first attempt of the day and variant is ranked."""
        return self.attempt == 1

    @property
    def won(self) -> bool:
        """Whether the attempt won."""
        return self.status == "won"

    @property
    def score(self) -> float:
        """The attempt's ordering number (see :func:`score_of`)."""
        return score_of(self.won, self.time_ms, self.moves, self.banked)

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain data (with its log)."""
        data = asdict(self)
        data["ranked"] = self.ranked
        return data

    def public(self, rank: int | None = None) -> dict[str, Any]:
        """The entry as a leaderboard shows it (no move log)."""
        data = {k: v for k, v in self.to_dict().items() if k != "log"}
        if rank is not None:
            data["rank"] = rank
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entry:
        """The entry from :meth:`to_dict`'s data."""
        return cls(
            date=data["date"],
            variant=data["variant"],
            player_id=data["player_id"],
            name=data["name"],
            attempt=int(data["attempt"]),
            status=data["status"],
            banked=int(data["banked"]),
            moves=int(data["moves"]),
            time_ms=int(data["time_ms"]),
            log=list(data.get("log", [])),
        )


def entry_from_log(
    *,
    date: str,
    variant: str,
    seed: int,
    player_id: str,
    name: str,
    attempt: int,
    log: Sequence[str],
    race_status: str,
    time_ms: int,
) -> Entry:
    """Score an attempt by replaying its move log: the client's word counts for nothing.

    ``race_status`` is how the race ended for the player (``resigned``, ``out_of_time``…);
    a replay that wins or sticks overrides it.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    game = replay(variant, seed, log, undo_allowed=False)
    status = game.status.value
    if status == "playing":
        status = race_status if race_status != "playing" else "out_of_time"
    return Entry(
        date, variant, player_id, name, attempt, status, game.banked, game.moves, time_ms, list(log)
    )


def rank_entries(
    entries: Iterable[Entry], first_rank: int = 1, below: int = 0
) -> list[dict[str, Any]]:
    """Entries in score order with competition ranks (equal scores share a rank).

    ``below`` is how many entries score strictly better than the first one given.
    """
    ranked: list[dict[str, Any]] = []
    previous: float | None = None
    rank = first_rank
    for index, entry in enumerate(entries):
        score = entry.score
        if previous is None:
            rank = below + 1
        elif score != previous:
            rank = first_rank + index
        ranked.append(entry.public(rank))
        previous = score
    return ranked


@dataclass(frozen=True, slots=True)
class Streaks:
    """Days in a row a player played and won (current and best)."""

    played: int
    won: int
    best_played: int
    best_won: int


def _runs(days: set[dt.date], today: dt.date) -> tuple[int, int]:
    """The current run (ending today or yesterday) and the longest run of consecutive days."""
    best = 0
    for day in days:
        if day - dt.timedelta(days=1) not in days:
            length = 1
            while day + dt.timedelta(days=length) in days:
                length += 1
            best = max(best, length)
    current = 0
    day = today if today in days else today - dt.timedelta(days=1)
    while day in days:
        current += 1
        day -= dt.timedelta(days=1)
    return current, best


def streaks(history: Iterable[Entry], today: str) -> Streaks:
    """Streaks over a player's history (any variant): a day counts as played with any
    attempt, and as won with a won attempt."""
    played: set[dt.date] = set()
    won: set[dt.date] = set()
    for entry in history:
        day = dt.date.fromisoformat(entry.date)
        played.add(day)
        if entry.won:
            won.add(day)
    end = dt.date.fromisoformat(today)
    current_played, best_played = _runs(played, end)
    current_won, best_won = _runs(won, end)
    return Streaks(current_played, current_won, best_played, best_won)
