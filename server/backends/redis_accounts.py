"""Accounts in Redis: fields of the player's hash, and one hash of the names taken.

An account is a player whose hash ``P:player:{ID}`` also has ``account`` (its name),
``password`` (the argon2id hash) and ``created_ms``; such a hash has no time to live. The
forms of every account's name that another name must not share (:func:`..names.name_keys`)
are the fields of ``P:{accounts}:names``, each naming its player id, so that two accounts
never look alike.

A claim reserves the name's forms first (one script, all or none), then makes the
player's hash an account (a second script: it refuses a player that is gone or already an
account, and takes the time to live away); if the second fails, the reservation is given
back. Deleting an account rewrites its daily entries day by day (one script per day's
keys, safe to run again), then gives its names back and deletes the player's hash.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections import defaultdict
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from .base import LOGIN_ADDRESSES, AccountRecord

__all__ = ["RedisAccountsMixin"]

# KEYS: the names hash; ARGV: player id, then the name's forms. 1 once all are the
# player's; 0 (nothing changed) if one is another player's.
_RESERVE = """
for i = 2, #ARGV do
  local owner = redis.call('HGET', KEYS[1], ARGV[i])
  if owner and owner ~= ARGV[1] then return 0 end
end
for i = 2, #ARGV do redis.call('HSET', KEYS[1], ARGV[i], ARGV[1]) end
return 1
"""

# KEYS: the names hash; ARGV: player id, then forms: each form of that player's goes.
_RELEASE = """
for i = 2, #ARGV do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[1] then redis.call('HDEL', KEYS[1], ARGV[i]) end
end
return 1
"""

# KEYS: the player's hash; ARGV: name, password hash, created_ms. 1 once the guest is an
# account (kept for good); 0 if the player is unknown or an account already.
_MAKE_ACCOUNT = """
if redis.call('HEXISTS', KEYS[1], 'name') == 0 then return 0 end
if redis.call('HEXISTS', KEYS[1], 'created_ms') == 1 then return 0 end
redis.call('HSET', KEYS[1], 'name', ARGV[1], 'account', ARGV[1], 'password', ARGV[2],
           'created_ms', ARGV[3])
redis.call('PERSIST', KEYS[1])
return 1
"""

# KEYS: the player's hash; ARGV: old hash, new hash, '1' to move the generation on.
# The generation now, or -1 if the hash was another.
_SET_PASSWORD = """
if redis.call('HGET', KEYS[1], 'password') ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[1], 'password', ARGV[2])
if ARGV[3] == '1' then return redis.call('HINCRBY', KEYS[1], 'gen', 1) end
return tonumber(redis.call('HGET', KEYS[1], 'gen') or '0')
"""

# KEYS: the player's hash; ARGV: time to live (ms). An account's hash keeps no time to live.
_TOUCH = """
if redis.call('HEXISTS', KEYS[1], 'created_ms') == 1 then return redis.call('PERSIST', KEYS[1]) end
return redis.call('PEXPIRE', KEYS[1], ARGV[1])
"""

# KEYS: a day's hashes keyed by player id (NH of them), its sorted sets keyed by player id
# (NZ), then its hash of every attempt; ARGV: old id, new id, NH, NZ, each hash's value
# under the new id ('' keeps the stored one), then attempt number and rewritten entry
# pairs. What is no longer under the old id (a run before this one) is left as it is.
_ANONYMISE_DAY = """
local old, new = ARGV[1], ARGV[2]
local nh, nz = tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 1, nh do
  local value = redis.call('HGET', KEYS[i], old)
  if value then
    redis.call('HDEL', KEYS[i], old)
    if ARGV[4 + i] ~= '' then value = ARGV[4 + i] end
    redis.call('HSET', KEYS[i], new, value)
  end
end
for i = nh + 1, nh + nz do
  local score = redis.call('ZSCORE', KEYS[i], old)
  if score then
    redis.call('ZREM', KEYS[i], old)
    redis.call('ZADD', KEYS[i], score, new)
  end
end
local all = KEYS[nh + nz + 1]
for j = 5 + nh, #ARGV, 2 do
  if redis.call('HDEL', all, old .. ':' .. ARGV[j]) == 1 then
    redis.call('HSET', all, new .. ':' .. ARGV[j], ARGV[j + 1])
  end
end
return 1
"""

# KEYS: a variant's best entries and board; ARGV: old member, new member, rewritten entry.
_ANONYMISE_BEST = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
if score then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZADD', KEYS[2], score, ARGV[2])
end
return 1
"""


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def _anonymised(data: str, player_id: str, name: str) -> str:
    entry: dict[str, Any] = json.loads(data)
    entry["player_id"], entry["name"] = player_id, name
    return json.dumps(entry)


class RedisAccountsMixin:
    """Account storage for :class:`~.redis.RedisBackend`."""

    prefix: str
    _redis: Any

    if TYPE_CHECKING:  # the backend's own, and the daily mixin's

        def _guard(self) -> contextlib.AbstractContextManager[None]: ...

        def _player_key(self, player_id: str) -> str: ...

        def _day(self, date: str, variant: str, kind: str) -> str: ...

        def _best(self, variant: str, kind: str) -> str: ...

        def _history(self, player_id: str) -> str: ...

    def _names_key(self) -> str:
        return f"{self.prefix}:{{accounts}}:names"

    def _script(self, name: str, source: str) -> Any:
        scripts: dict[str, Any] = self.__dict__.setdefault("_account_scripts", {})
        if name not in scripts:
            scripts[name] = self._redis.register_script(source)
        return scripts[name]

    async def touch_player(self, player_id: str, now_ms: int, ttl_s: float) -> None:
        """PEXPIRE a guest's hash: Redis forgets it once not seen for ``ttl_s``; an
        account's keeps none."""
        with self._guard():
            await self._script("touch", _TOUCH)(
                keys=[self._player_key(player_id)], args=[int(ttl_s * 1000)]
            )

    async def account(self, player_id: str) -> AccountRecord | None:
        """The account fields of the player's hash."""
        with self._guard():
            name, password, created = await self._redis.hmget(
                self._player_key(player_id), ["account", "password", "created_ms"]
            )
        if name is None or password is None or created is None:
            return None
        return AccountRecord(player_id, str(_text(name)), str(_text(password)), int(created))

    async def account_named(self, keys: Collection[str]) -> str | None:
        """HMGET of the names hash."""
        ordered = sorted(keys)
        if not ordered:
            return None
        with self._guard():
            owners = await self._redis.hmget(self._names_key(), ordered)
        return next((str(_text(o)) for o in owners if o is not None), None)

    async def create_account(
        self, player_id: str, name: str, keys: Collection[str], password_hash: str, now_ms: int
    ) -> bool:
        """Reserve the name's forms, then make the player's hash an account."""
        forms = sorted(keys)
        names = self._names_key()
        with self._guard():
            # A form held for a player that is gone (a claim that failed half-way, and
            # its guest since forgotten) is free again.
            owners = {str(_text(o)) for o in await self._redis.hmget(names, forms) if o}
            for owner in owners - {player_id}:
                if not await self._redis.exists(self._player_key(owner)):
                    await self._script("release", _RELEASE)(keys=[names], args=[owner, *forms])
            if not await self._script("reserve", _RESERVE)(keys=[names], args=[player_id, *forms]):
                return False
        made = False
        try:
            with self._guard():
                made = bool(
                    await self._script("make", _MAKE_ACCOUNT)(
                        keys=[self._player_key(player_id)], args=[name, password_hash, now_ms]
                    )
                )
        finally:
            if not made:
                with contextlib.suppress(Exception):
                    await self._script("release", _RELEASE)(keys=[names], args=[player_id, *forms])
        return made

    async def set_password(
        self, player_id: str, old_hash: str, new_hash: str, *, revoke: bool = True
    ) -> int | None:
        """One script: swap the hash if it is still ``old_hash``, move the generation on."""
        with self._guard():
            gen = await self._script("set_password", _SET_PASSWORD)(
                keys=[self._player_key(player_id)],
                args=[old_hash, new_hash, "1" if revoke else "0"],
            )
        return None if int(gen) < 0 else int(gen)

    async def known_login_address(self, player_id: str, tag: str) -> bool:
        """The ``logins`` field of the player's hash: the tags, newest first."""
        with self._guard():
            known = await self._redis.hget(self._player_key(player_id), "logins")
        return known is not None and tag in str(_text(known)).split(",")

    async def note_login_address(self, player_id: str, tag: str, now_ms: int) -> None:
        """Put ``tag`` first in the ``logins`` field, the newest ``LOGIN_ADDRESSES`` kept
        (two logins at once may each keep their own list: the last one written stays)."""
        key = self._player_key(player_id)
        with self._guard():
            known = await self._redis.hget(key, "logins")
            tags = [t for t in str(_text(known) or "").split(",") if t and t != tag]
            await self._redis.hset(key, "logins", ",".join([tag, *tags][:LOGIN_ADDRESSES]))

    async def delete_account(self, player_id: str, name: str) -> bool:
        """Rewrite the daily entries day by day, give the names back, delete the hash."""
        from ..names import name_keys

        record = await self.account(player_id)
        if record is None:
            return False
        history = self._history(player_id)
        with self._guard():
            stored = await self._redis.hgetall(history)
        days: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
        for field, data in (stored or {}).items():
            entry = json.loads(data)
            days[(entry["date"], entry["variant"])][str(_text(field))] = str(_text(data))
        for (date, variant), fields in days.items():
            await self._anonymise_day(player_id, date, variant, fields, name)
        with self._guard():
            await self._script("release", _RELEASE)(
                keys=[self._names_key()], args=[player_id, *sorted(name_keys(record.name))]
            )
            await self._redis.unlink(self._player_key(player_id), history)
        return True

    async def _anonymise_day(
        self, player_id: str, date: str, variant: str, fields: dict[str, str], name: str
    ) -> None:
        """One day's entries of the player under a fresh id and ``name``: every attempt,
        the ranked one on its board (the people's or the bots') or in review."""
        anonymous = secrets.token_hex(8)  # a player id, of no one
        every = self._day(date, variant, "all")
        entries = [self._day(date, variant, f"{board}entries") for board in BOARDS]
        flagged = self._day(date, variant, "flagged")
        hashes = [self._day(date, variant, "attempts"), *entries, flagged]
        boards = [self._day(date, variant, f"{board}board") for board in BOARDS]
        with self._guard():
            attempts: list[str] = []
            for data in fields.values():
                # The day's every-attempt hash holds the attempt whole, its moves with it
                # (the history's copy leaves them out).
                attempt = str(json.loads(data)["attempt"])
                whole = await self._redis.hget(every, f"{player_id}:{attempt}")
                kept = data if whole is None else str(_text(whole))
                attempts += [attempt, _anonymised(kept, anonymous, name)]
            values: list[str] = [""]  # the attempts' count goes as it is
            for key in [*entries, flagged]:
                raw = await self._redis.hget(key, player_id)
                values.append("" if raw is None else _anonymised(str(_text(raw)), anonymous, name))
            await self._script("anonymise_day", _ANONYMISE_DAY)(
                keys=[*hashes, *boards, every],
                args=[player_id, anonymous, len(hashes), len(boards), *values, *attempts],
            )
            if values[-1]:  # the ranked entry waits for review: the review list names it
                review = f"{self.prefix}:daily:flagged"
                if await self._redis.srem(review, f"{date}|{variant}|{player_id}"):
                    await self._redis.sadd(review, f"{date}|{variant}|{anonymous}")
            best_old, best_new = f"{date}:{player_id}", f"{date}:{anonymous}"
            for board in BOARDS:
                best = await self._redis.hget(self._best(variant, f"{board}entries"), best_old)
                if best is not None:
                    await self._script("anonymise_best", _ANONYMISE_BEST)(
                        keys=[
                            self._best(variant, f"{board}entries"),
                            self._best(variant, f"{board}board"),
                        ],
                        args=[best_old, best_new, _anonymised(str(_text(best)), anonymous, name)],
                    )
            await self._redis.hdel(self._history(player_id), *fields)


BOARDS = ("", "bots:")
"""The prefixes of the daily boards' keys (the people's, the bots'), as
:class:`~.redis_daily.RedisDailyMixin` names them: each day, and each variant's best."""
