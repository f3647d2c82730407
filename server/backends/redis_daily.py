"""The daily challenge's boards in Redis: sorted sets for order, hashes for entries.

A day's keys share the hash tag ``{daily:DATE:VARIANT}``, a variant's all-time boards
``{best:VARIANT}`` and a player's history ``{history:PLAYER}``, so every command touches
one Redis Cluster slot.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import replace
from typing import Any

from ..daily import ADDRESS_KEEP_DAYS, DAY_MS, Entry, judged

__all__ = ["RedisDailyMixin"]

# KEYS: the hash of the players who started the day's deal from one address (each the
# '1' or '0' of whether its first start there may be ranked); ARGV: player id, '1' or '0',
# time to live (ms). How many of its starts may be ranked, then the other players.
_NOTE_START = """
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local all = redis.call('HGETALL', KEYS[1])
local found = {0}
for i = 1, #all, 2 do
  if all[i] ~= ARGV[1] then found[#found + 1] = all[i] end
  if all[i + 1] == '1' then found[1] = found[1] + 1 end
end
return found
"""


class RedisDailyMixin:
    """Daily-challenge storage for :class:`~.redis.RedisBackend`.

    A day's keys: ``attempts`` (a hash of attempt counts), ``all`` (every attempt),
    ``board`` and ``entries`` (the people's board: a sorted set and its entries),
    ``bots:board`` and ``bots:entries`` (the bots'), ``flagged`` (ranked entries waiting
    for review), ``rooms`` (the rooms of attempts not yet known to be over),
    ``verdicts`` (what the address rules said of first attempts) and ``address:TAG``
    (the players who started from an address, for a few days). A key of its own,
    ``daily:flagged``, lists the days and players with an entry in review.
    """

    prefix: str
    _redis: Any

    def _guard(self) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def _day(self, date: str, variant: str, kind: str) -> str:
        return f"{self.prefix}:{{daily:{date}:{variant}}}:{kind}"

    def _board(self, date: str, variant: str, board: str, kind: str) -> str:
        """A day's board key (``board`` or ``entries``): the people's keep the old names."""
        return self._day(date, variant, kind if board == "people" else f"{board}:{kind}")

    def _best(self, variant: str, kind: str, board: str = "people") -> str:
        return (
            f"{self.prefix}:{{best:{variant}}}:{kind if board == 'people' else f'{board}:{kind}'}"
        )

    def _history(self, player_id: str) -> str:
        return f"{self.prefix}:{{history:{player_id}}}:daily"

    def _in_review(self) -> str:
        return f"{self.prefix}:daily:flagged"

    @staticmethod
    def _load(raw: Any) -> Entry:
        return Entry.from_dict(json.loads(raw))

    async def daily_attempt(self, date: str, variant: str, player_id: str) -> int:
        """HINCRBY the player's attempts of the day."""
        with self._guard():
            return int(
                await self._redis.hincrby(self._day(date, variant, "attempts"), player_id, 1)
            )

    async def note_daily_start(
        self, date: str, variant: str, player_id: str, address: str, *, ranked: bool
    ) -> tuple[int, list[str]]:
        """One script over the address's hash of players, which expires a few days on."""
        scripts: dict[str, Any] = self.__dict__.setdefault("_daily_scripts", {})
        if "note_start" not in scripts:
            scripts["note_start"] = self._redis.register_script(_NOTE_START)
        key = self._day(date, variant, f"address:{address}")
        args = [player_id, "1" if ranked else "0", ADDRESS_KEEP_DAYS * DAY_MS]
        with self._guard():
            counted, *others = await scripts["note_start"](keys=[key], args=args)
        return int(counted), sorted(o.decode() if isinstance(o, bytes) else o for o in others)

    async def keep_daily_verdict(
        self, date: str, variant: str, player_id: str, unranked: str | None, flag: str | None
    ) -> None:
        """HSET in the day's verdicts."""
        with self._guard():
            await self._redis.hset(
                self._day(date, variant, "verdicts"), player_id, json.dumps([unranked, flag])
            )

    async def daily_verdict(
        self, date: str, variant: str, player_id: str
    ) -> tuple[str | None, str | None] | None:
        """HGET in the day's verdicts."""
        with self._guard():
            raw = await self._redis.hget(self._day(date, variant, "verdicts"), player_id)
        if raw is None:
            return None
        unranked, flag = json.loads(raw)
        return unranked, flag

    async def save_daily_entry(self, entry: Entry) -> Entry:
        """Every attempt goes to the day's and the player's hashes; a ranked one also to its
        board's sorted sets of the day and of the variant, or, flagged, into review."""
        if entry.ranked:
            with self._guard():
                verdict = await self._redis.hget(
                    self._day(entry.date, entry.variant, "verdicts"), entry.player_id
                )
            if verdict is not None:
                entry = judged(entry, *json.loads(verdict))
        data = json.dumps(entry.to_dict())
        public = json.dumps(entry.public())  # boards and histories hold no move log
        member = f"{entry.player_id}:{entry.attempt}"
        with self._guard():
            await self._redis.hsetnx(self._day(entry.date, entry.variant, "all"), member, data)
            await self._redis.hsetnx(
                self._history(entry.player_id),
                f"{entry.date}:{entry.variant}:{entry.attempt}",
                public,
            )
            if not entry.ranked:
                return entry
            if entry.held:
                await self._redis.hsetnx(
                    self._day(entry.date, entry.variant, "flagged"), entry.player_id, data
                )
                await self._redis.sadd(
                    self._in_review(), f"{entry.date}|{entry.variant}|{entry.player_id}"
                )
                return entry
            await self._put_on_board(entry, public)
        return entry

    async def _put_on_board(self, entry: Entry, data: str) -> None:
        board = entry.board
        await self._redis.hsetnx(
            self._board(entry.date, entry.variant, board, "entries"), entry.player_id, data
        )
        await self._redis.zadd(
            self._board(entry.date, entry.variant, board, "board"),
            {entry.player_id: entry.score},
            nx=True,
        )
        best = f"{entry.date}:{entry.player_id}"
        await self._redis.hsetnx(self._best(entry.variant, "entries", board), best, data)
        await self._redis.zadd(
            self._best(entry.variant, "board", board), {best: entry.score}, nx=True
        )

    async def _hash_entries(self, key: str, members: list[Any]) -> list[Entry]:
        if not members:
            return []
        with self._guard():
            raws = await self._redis.hmget(key, members)
        return [self._load(raw) for raw in raws if raw is not None]

    async def daily_top(
        self, date: str, variant: str, offset: int, limit: int, board: str = "people"
    ) -> list[Entry]:
        """ZRANGE of the day's board, then the entries."""
        if limit <= 0:
            return []
        with self._guard():
            members = await self._redis.zrange(
                self._board(date, variant, board, "board"), offset, offset + limit - 1
            )
        return await self._hash_entries(self._board(date, variant, board, "entries"), members)

    async def daily_index(
        self, date: str, variant: str, player_id: str, board: str = "people"
    ) -> int | None:
        """ZRANK on the day's board."""
        with self._guard():
            index = await self._redis.zrank(self._board(date, variant, board, "board"), player_id)
        return None if index is None else int(index)

    async def daily_better(
        self, date: str, variant: str, score: float, board: str = "people"
    ) -> int:
        """ZCOUNT below the score."""
        with self._guard():
            return int(
                await self._redis.zcount(
                    self._board(date, variant, board, "board"), "-inf", f"({score!r}"
                )
            )

    async def daily_count(self, date: str, variant: str, board: str = "people") -> int:
        """ZCARD of the day's board."""
        with self._guard():
            return int(await self._redis.zcard(self._board(date, variant, board, "board")))

    async def daily_entries(self, date: str, variant: str) -> list[Entry]:
        """Every attempt of the day: the boards' order first (people, then bots), then the
        rest."""
        place: dict[tuple[str, str], int] = {}
        with self._guard():
            raws = await self._redis.hvals(self._day(date, variant, "all"))
            for board in ("people", "bots"):
                members = await self._redis.zrange(
                    self._board(date, variant, board, "board"), 0, -1
                )
                for member in members:
                    player = member.decode() if isinstance(member, bytes) else member
                    place[(board, player)] = len(place)
        entries = [self._load(raw) for raw in raws]

        def key(e: Entry) -> tuple[int, int, float, str, int]:
            spot = place.get((e.board, e.player_id)) if e.ranked else None
            return (0 if spot is not None else 1, spot or 0, e.score, e.player_id, e.attempt)

        return sorted(entries, key=key)

    async def player_history(self, player_id: str) -> list[Entry]:
        """The player's hash of attempts, oldest first."""
        with self._guard():
            raws = await self._redis.hvals(self._history(player_id))
        return sorted(
            (self._load(raw) for raw in raws), key=lambda e: (e.date, e.variant, e.attempt)
        )

    async def daily_entry(
        self, date: str, variant: str, player_id: str, attempt: int
    ) -> Entry | None:
        """HGET of the day's every attempt (whole, its log with it)."""
        with self._guard():
            raw = await self._redis.hget(self._day(date, variant, "all"), f"{player_id}:{attempt}")
        return None if raw is None else self._load(raw)

    async def best_entries(self, variant: str, limit: int, board: str = "people") -> list[Entry]:
        """ZRANGE of the variant's all-time board."""
        if limit <= 0:
            return []
        with self._guard():
            members = await self._redis.zrange(self._best(variant, "board", board), 0, limit - 1)
        return await self._hash_entries(self._best(variant, "entries", board), members)

    async def remove_daily_entry(
        self, date: str, variant: str, player_id: str, reason: str
    ) -> bool:
        """Take the entry off its sorted sets, or out of review, and log the reason."""
        with self._guard():
            removed = False
            for board in ("people", "bots"):
                if await self._redis.zrem(self._board(date, variant, board, "board"), player_id):
                    removed = True
                    await self._redis.hdel(self._board(date, variant, board, "entries"), player_id)
                    best = f"{date}:{player_id}"
                    await self._redis.zrem(self._best(variant, "board", board), best)
                    await self._redis.hdel(self._best(variant, "entries", board), best)
            if await self._redis.hdel(self._day(date, variant, "flagged"), player_id):
                removed = True
                await self._redis.srem(self._in_review(), f"{date}|{variant}|{player_id}")
            if not removed:
                return False
            record = {
                "date": date,
                "variant": variant,
                "player_id": player_id,
                "reason": reason,
                "at": time.time(),
            }
            await self._redis.rpush(f"{self.prefix}:daily:removals", json.dumps(record))
        return True

    async def daily_flagged(self) -> list[Entry]:
        """The entries the review list names, each from its day's ``flagged`` hash."""
        with self._guard():
            members = await self._redis.smembers(self._in_review())
            entries: list[Entry] = []
            for member in members:
                text = member.decode() if isinstance(member, bytes) else member
                date, variant, player_id = text.split("|", 2)
                raw = await self._redis.hget(self._day(date, variant, "flagged"), player_id)
                if raw is None:  # reviewed meanwhile
                    await self._redis.srem(self._in_review(), member)
                    continue
                entries.append(self._load(raw))
        return sorted(entries, key=lambda e: (e.date, e.variant, e.score, e.player_id))

    async def keep_daily_entry(
        self, date: str, variant: str, player_id: str, reason: str
    ) -> Entry | None:
        """Move the entry from review to its board, with the reason in its data."""
        flagged = self._day(date, variant, "flagged")
        with self._guard():
            raw = await self._redis.hget(flagged, player_id)
            if raw is None:
                return None
            kept = replace(self._load(raw), kept=reason)
            data = json.dumps(kept.to_dict())
            public = json.dumps(kept.public())
            await self._put_on_board(kept, public)
            await self._redis.hset(
                self._day(date, variant, "all"), f"{player_id}:{kept.attempt}", data
            )
            await self._redis.hset(
                self._history(player_id), f"{date}:{variant}:{kept.attempt}", public
            )
            await self._redis.hdel(flagged, player_id)
            await self._redis.srem(self._in_review(), f"{date}|{variant}|{player_id}")
        return kept

    async def add_daily_room(self, date: str, variant: str, code: str) -> None:
        """SADD to the day's rooms."""
        with self._guard():
            await self._redis.sadd(self._day(date, variant, "rooms"), code)

    async def daily_rooms(self, date: str, variant: str) -> list[str]:
        """SMEMBERS of the day's rooms."""
        with self._guard():
            members = await self._redis.smembers(self._day(date, variant, "rooms"))
        return sorted(m.decode() if isinstance(m, bytes) else m for m in members)

    async def drop_daily_rooms(self, date: str, variant: str, codes: list[str]) -> None:
        """SREM from the day's rooms."""
        if codes:
            with self._guard():
                await self._redis.srem(self._day(date, variant, "rooms"), *codes)
