"""The daily challenge's boards in Redis: sorted sets for order, hashes for entries.

A day's keys share the hash tag ``{daily:DATE:VARIANT}``, a variant's all-time board
``{best:VARIANT}`` and a player's history ``{history:PLAYER}``, so every command touches
one Redis Cluster slot.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from ..daily import Entry

__all__ = ["RedisDailyMixin"]


class RedisDailyMixin:
    """Daily-challenge storage for :class:`~.redis.RedisBackend`."""

    prefix: str
    _redis: Any

    def _guard(self) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def _day(self, date: str, variant: str, kind: str) -> str:
        return f"{self.prefix}:{{daily:{date}:{variant}}}:{kind}"

    def _best(self, variant: str, kind: str) -> str:
        return f"{self.prefix}:{{best:{variant}}}:{kind}"

    def _history(self, player_id: str) -> str:
        return f"{self.prefix}:{{history:{player_id}}}:daily"

    @staticmethod
    def _load(raw: Any) -> Entry:
        return Entry.from_dict(json.loads(raw))

    async def daily_attempt(self, date: str, variant: str, player_id: str) -> int:
        """HINCRBY the player's attempts of the day."""
        with self._guard():
            return int(
                await self._redis.hincrby(self._day(date, variant, "attempts"), player_id, 1)
            )

    async def save_daily_entry(self, entry: Entry) -> None:
        """Every attempt goes to the day's and the player's hashes; a ranked one also to the
        day's and the variant's sorted sets."""
        data = json.dumps(entry.to_dict())
        member = f"{entry.player_id}:{entry.attempt}"
        with self._guard():
            await self._redis.hsetnx(self._day(entry.date, entry.variant, "all"), member, data)
            await self._redis.hsetnx(
                self._history(entry.player_id),
                f"{entry.date}:{entry.variant}:{entry.attempt}",
                data,
            )
            if entry.ranked:
                await self._redis.hsetnx(
                    self._day(entry.date, entry.variant, "entries"), entry.player_id, data
                )
                await self._redis.zadd(
                    self._day(entry.date, entry.variant, "board"),
                    {entry.player_id: entry.score},
                    nx=True,
                )
                best = f"{entry.date}:{entry.player_id}"
                await self._redis.hsetnx(self._best(entry.variant, "entries"), best, data)
                await self._redis.zadd(
                    self._best(entry.variant, "board"), {best: entry.score}, nx=True
                )

    async def _hash_entries(self, key: str, members: list[Any]) -> list[Entry]:
        if not members:
            return []
        with self._guard():
            raws = await self._redis.hmget(key, members)
        return [self._load(raw) for raw in raws if raw is not None]

    async def daily_top(self, date: str, variant: str, offset: int, limit: int) -> list[Entry]:
        """ZRANGE of the day's board, then the entries."""
        if limit <= 0:
            return []
        with self._guard():
            members = await self._redis.zrange(
                self._day(date, variant, "board"), offset, offset + limit - 1
            )
        return await self._hash_entries(self._day(date, variant, "entries"), members)

    async def daily_index(self, date: str, variant: str, player_id: str) -> int | None:
        """ZRANK on the day's board."""
        with self._guard():
            index = await self._redis.zrank(self._day(date, variant, "board"), player_id)
        return None if index is None else int(index)

    async def daily_better(self, date: str, variant: str, score: float) -> int:
        """ZCOUNT below the score."""
        with self._guard():
            return int(
                await self._redis.zcount(self._day(date, variant, "board"), "-inf", f"({score!r}")
            )

    async def daily_count(self, date: str, variant: str) -> int:
        """ZCARD of the day's board."""
        with self._guard():
            return int(await self._redis.zcard(self._day(date, variant, "board")))

    async def daily_entries(self, date: str, variant: str) -> list[Entry]:
        """Every attempt of the day: the board's order first, then the unranked."""
        with self._guard():
            raws = await self._redis.hvals(self._day(date, variant, "all"))
            board = [
                m.decode() if isinstance(m, bytes) else m
                for m in await self._redis.zrange(self._day(date, variant, "board"), 0, -1)
            ]
        entries = [self._load(raw) for raw in raws]
        place = {player: i for i, player in enumerate(board)}
        return sorted(
            entries,
            key=lambda e: (
                0 if e.ranked and e.player_id in place else 1,
                place.get(e.player_id, 0),
                e.score,
                e.player_id,
                e.attempt,
            ),
        )

    async def player_history(self, player_id: str) -> list[Entry]:
        """The player's hash of attempts, oldest first."""
        with self._guard():
            raws = await self._redis.hvals(self._history(player_id))
        return sorted(
            (self._load(raw) for raw in raws), key=lambda e: (e.date, e.variant, e.attempt)
        )

    async def best_entries(self, variant: str, limit: int) -> list[Entry]:
        """ZRANGE of the variant's all-time board."""
        if limit <= 0:
            return []
        with self._guard():
            members = await self._redis.zrange(self._best(variant, "board"), 0, limit - 1)
        return await self._hash_entries(self._best(variant, "entries"), members)

    async def remove_daily_entry(
        self, date: str, variant: str, player_id: str, reason: str
    ) -> bool:
        """Take the entry off both sorted sets and log the reason in a list."""
        with self._guard():
            removed = await self._redis.zrem(self._day(date, variant, "board"), player_id)
            if not removed:
                return False
            await self._redis.hdel(self._day(date, variant, "entries"), player_id)
            best = f"{date}:{player_id}"
            await self._redis.zrem(self._best(variant, "board"), best)
            await self._redis.hdel(self._best(variant, "entries"), best)
            record = {
                "date": date,
                "variant": variant,
                "player_id": player_id,
                "reason": reason,
                "at": time.time(),
            }
            await self._redis.rpush(f"{self.prefix}:daily:removals", json.dumps(record))
        return True
