"""The Redis backend: several nodes share rooms, move logs, players and results.

Every key of a room carries the room code as a hash tag, and so does its channel, so that
one Redis Cluster slot holds all of a room: the Lua scripts touch a single slot, and a
sharded SPUBLISH reaches the shard that SSUBSCRIBE listens on.

=====================================  ==========================================
key                                    holds
=====================================  ==========================================
``P:secret``                           the token secret, set once by the first node
``P:player:{ID}``                      hash: ``name``, ``room``, ``gen``; an account's also
                                       ``account``, ``password``, ``created_ms``
``P:{accounts}:names``                 hash: each form of an account's name -> player id
``P:{CODE}:room``                      hash: ``v`` (version), ``data`` (the record)
``P:{CODE}:logs``                      set of the room's move-log keys
``P:{CODE}:log:RACE:PLAYER``           stream: move number ``rev`` has id ``0-(rev+1)``
``P:{CODE}:log:RACE:PLAYER:over``      set once the log takes no more moves (a resignation,
                                       or the race over and its log deleted)
``P:{CODE}:results``                   hash: race number -> ranked results (30 days)
``P:{CODE}:boards``                    hash: player id -> [race, spectator view]
``P:{CODE}:events``                    sharded pub/sub channel of the room's events
``P:{budgets}:NAME:SUBJECT``           when the budget's next one is due (ms), expiring then
=====================================  ==========================================

``P`` is the key prefix (``solrace``). Records, results and events are msgpack.

A room record is changed by compare-and-set: read it with its version, apply the pure
change in Python, write it back with a Lua script that checks the version first, and on
a conflict read and apply again. A move log refuses a gap or a rewrite in one script that
compares the move number with the stream's length before XADD.

Pub/sub is at most once. A reader task holds a pub/sub connection of its own, reads with
short polls, dispatches each event to its room's handler in order, and when the
connection fails it reconnects with backoff and subscribes to its rooms again. Events
published while it was away are lost: once Redis confirms a subscription made again, the
backend calls the resync handler with the room's code, and the node sends the room's
members a fresh snapshot from the store.

Redis Cluster is named by a ``redis+cluster://HOST:PORT`` URL (``rediss+cluster://`` for
TLS), HOST:PORT being any node of the cluster. Commands then go through redis-py's
cluster client, which follows the slots. A sharded channel is served only by the primary
that owns its slot, so the node keeps one pub/sub connection, with its own reader, per
primary that owns a room it subscribes to. (redis-py's cluster pub/sub waits on each
node's connection in turn for the whole read timeout, which would hold one room's events
behind another node's quiet channels.) When the slot map changes, a placer task moves
channels to their new primary from a fresh map: after a reader's connection fails, after
a MOVED reply to SSUBSCRIBE, and when Redis drops a subscription because its slot
migrated; a channel moved this way is resynced like one subscribed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import urllib.parse
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any, cast

import msgpack
import structlog
from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import parse_url
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import (
    AuthenticationError,
    ClusterError,
    MovedError,
    NoScriptError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import (
    ConnectionError as RedisConnectionError,
)
from redis.exceptions import (
    TimeoutError as RedisTimeoutError,
)

from ...protocol import ErrorCode, Progress, ProtocolError
from ..aio import KeyedLock, cancel_until_done
from ..room import Outcome, Room
from .base import (
    MAX_COMMIT_WINDOW_S,
    Backend,
    BackendUnavailable,
    EventHandler,
    ResyncHandler,
    RoomUpdate,
)
from .redis_accounts import RedisAccountsMixin
from .redis_daily import RedisDailyMixin

__all__ = ["RedisBackend", "RedisNotUsable", "cluster_url", "url_problem"]

log = structlog.get_logger("solrace.server")

RESULTS_KEEP_MS = 30 * 86_400_000
"""How long a room's results outlive its last race (as kept races do by default): each
race's results were kept for ever, a row an address could add at its races' rate."""

#: Errors that mean "Redis cannot be reached or cannot write now", never a bug of ours.
UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (
    RedisConnectionError,
    RedisTimeoutError,
    ReadOnlyError,
    ClusterError,  # ClusterDownError too: the cluster is failing over or lacks a slot
    RedisClusterException,  # no node of the cluster answers, or a slot has no node now
    TryAgainError,
    OSError,
    asyncio.TimeoutError,
)

ROOM_RECORDS_KEPT = 5_000
"""Room records (with their versions) a node keeps as it last read or wrote them."""

_CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}

# A code that could be a room's (the node makes 8 characters of [2-9A-Z]); anything else
# names no room, and never reaches a key where a brace would move its hash tag.
_ROOM_CODE = re.compile(r"[0-9A-Za-z_-]{1,64}")

_RELEASE_START = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""

_FORGET_ROOM = """
if redis.call('HGET', KEYS[1], 'room') == ARGV[1] then
    return redis.call('HDEL', KEYS[1], 'room')
end
return 0
"""

_TAKE_NODE = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) >= tonumber(ARGV[2]) then return false end
redis.call('ZREM', KEYS[1], ARGV[1])
local held = redis.call('SMEMBERS', KEYS[2])
redis.call('DEL', KEYS[2])
return held
"""

_CREATE_ROOM = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', '1', 'data', ARGV[1])
if tonumber(ARGV[2]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
"""

# KEYS: room; ARGV: expected version, new record ('' deletes), time to live in ms (0: none)
# Returns 1 once the record is swapped, 0 on a conflict. A swap retried after its reply
# was lost finds its own write (or the room gone, for a delete) and succeeds again.
_SWAP_ROOM = """
local v = redis.call('HGET', KEYS[1], 'v')
if v ~= ARGV[1] then
  if not v then
    if ARGV[2] == '' then return 1 end
    return 0
  end
  if tonumber(v) == tonumber(ARGV[1]) + 1 and redis.call('HGET', KEYS[1], 'data') == ARGV[2] then
    return 1
  end
  return 0
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('HINCRBY', KEYS[1], 'v', 1)
redis.call('HSET', KEYS[1], 'data', ARGV[2])
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
"""

# The same, then (KEYS[2]: the room's channel) SPUBLISH of each message in ARGV[4..] once
# the record is swapped: a report of standings and its event in one round trip.
_SWAP_ROOM_PUBLISH = (
    "local swapped = (function()\n"
    + _SWAP_ROOM.strip()
    + "\nend)()\n"
    + """if swapped == 1 then
  for i = 4, #ARGV do redis.call('SPUBLISH', KEYS[2], ARGV[i]) end
end
return swapped
"""
)

# KEYS: log, the room's set of logs; ARGV: rev, rev + 1, move, time to live in ms (0: none),
# the move's time in the race (ms)
# Returns -1 once the move is logged, else the log's length. Repeating the log's last move
# at its own number succeeds, so that a command retried after a lost reply is harmless; an
# older move repeated is refused with the length, as any stale revision: the node that
# sent it held a stale game (the player played on through another node), and an answer
# of "logged" would let it report a standing the log has left behind.
_APPEND_MOVE = """
if redis.call('EXISTS', KEYS[3]) == 1 then return -2 end
local n = redis.call('XLEN', KEYS[1])
local rev = tonumber(ARGV[1])
if rev == n then
  redis.call('XADD', KEYS[1], '0-' .. ARGV[2], 'm', ARGV[3], 't', ARGV[5])
  redis.call('SADD', KEYS[2], KEYS[1])
  if tonumber(ARGV[4]) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
  end
  return -1
end
if rev == n - 1 then
  local entry = redis.call('XRANGE', KEYS[1], '0-' .. ARGV[2], '0-' .. ARGV[2])
  if entry[1] ~= nil and entry[1][2][2] == ARGV[3] then return -1 end
end
return n
"""

# _APPEND_MOVE for several moves at once, in order, on one Redis (never a cluster: the keys
# are named in the argument, not in KEYS, which a cluster would need to route the call).
# ARGV[1] is one msgpack array: the time to live in ms (0: none), then each move's log, its
# room's set of logs, rev, move and time. One argument, not five a move: redis-py packs a
# command's arguments one by one in Python, which cost more than the rest of the call.
# Returns each move's answer as _APPEND_MOVE would, in a list.
_APPEND_MOVES = """
local a = cmsgpack.unpack(ARGV[1])
local ttl = a[1]
local out = {}
local i = 0
for j = 2, #a, 5 do
  i = i + 1
  local log, logs, rev, move = a[j], a[j + 1], a[j + 2], a[j + 3]
  local id = '0-' .. string.format('%d', rev + 1)
  local n = redis.call('XLEN', log)
  out[i] = n
  if redis.call('EXISTS', log .. ':over') == 1 then
    out[i] = -2
  elseif rev == n then
    redis.call('XADD', log, id, 'm', move, 't', string.format('%d', a[j + 4]))
    redis.call('SADD', logs, log)
    if ttl > 0 then
      redis.call('PEXPIRE', log, string.format('%d', ttl))
      redis.call('PEXPIRE', logs, string.format('%d', ttl))
    end
    out[i] = -1
  elseif rev == n - 1 then
    local entry = redis.call('XRANGE', log, id, id)
    if entry[1] ~= nil and entry[1][2][2] == move then out[i] = -1 end
  end
end
return out
"""


# KEYS: the room's boards; ARGV: time to live in ms (0: none), then player, board pairs
_SAVE_BOARDS = """
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
if tonumber(ARGV[1]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1
"""


# KEYS: the room's channel; ARGV: the event. An event goes out with the pass's other script
# calls (one round trip, on a connection the pass holds anyway) rather than on a connection
# of its own.
_PUBLISH = """
return redis.call('SPUBLISH', KEYS[1], ARGV[1])
"""


# KEYS: budget keys (one hash slot); ARGV: now (ms), force ('1'), then count and period
# (ms) of each key. Returns nil once all are spent, else {index, ms until it would be}.
_SPEND = """
local now = tonumber(ARGV[1])
local force = ARGV[2] == '1'
local due = {}
for i, key in ipairs(KEYS) do
  local count = tonumber(ARGV[1 + 2 * i])
  local period = tonumber(ARGV[2 + 2 * i])
  local step = period
  if count > 0 then step = period / count end
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  local next_due = tat + step
  if not force and (count <= 0 or next_due - now > period) then
    if count <= 0 then return {i, period} end
    return {i, math.ceil(next_due - period - now)}
  end
  due[i] = next_due
end
for i, key in ipairs(KEYS) do
  redis.call('SET', key, string.format('%.3f', due[i]), 'PX', math.max(1, math.ceil(due[i] - now)))
end
return nil
"""


_Call = tuple["AsyncScript", list[str], list[Any], "asyncio.Future[Any]"]
"""A script call waiting for its pass's round trip: the script, keys, args, its answer."""


_LOG_CLOSED = -2
"""An append script's answer for a log closed by its player's resignation."""


def _appended(logged: asyncio.Future[None], answer: asyncio.Future[Any]) -> None:
    """Settle an append's future from its script's answer (-1: logged, else the log's
    length), as :meth:`RedisBackend.append_move` would return or raise."""
    if logged.done():
        return
    if answer.cancelled():
        logged.set_exception(BackendUnavailable("redis: the append was cancelled"))
        return
    error = answer.exception()
    if error is None:
        length = int(answer.result())
        if length == _LOG_CLOSED:
            error = ProtocolError(ErrorCode.GAME_OVER, "your game is over (resigned)")
        elif length < 0:
            logged.set_result(None)
            return
        else:
            error = ProtocolError(ErrorCode.STALE_REVISION, f"the log holds {length} moves")
    elif isinstance(error, UNAVAILABLE_ERRORS):
        unavailable = BackendUnavailable(f"redis: {error}")
        unavailable.__cause__ = error
        error = unavailable
    logged.set_exception(error)


def _pack(data: Any) -> bytes:
    packed: bytes = msgpack.packb(data, use_bin_type=True)
    return packed


def _unpack(data: bytes | str) -> Any:
    return msgpack.unpackb(_bytes(data), raw=False)


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else value


def cluster_url(url: str) -> str | None:
    """The plain URL of a Redis Cluster URL (``redis+cluster://``), or None for another URL."""
    scheme, sep, rest = url.partition("://")
    plain = _CLUSTER_SCHEMES.get(scheme.lower()) if sep else None
    return None if plain is None else f"{plain}://{rest}"


REDIS_SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster", "unix")
"""The schemes of a URL that names a Redis (``unix``: a socket's path)."""


def url_problem(url: str) -> str | None:
    """What makes ``url`` no Redis URL a node can use, or None if it is one.

    Never the password: the words come from the URL's form, not its text.
    """
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in REDIS_SCHEMES:
        return "it must begin with redis://, rediss://, redis+cluster:// or rediss+cluster://"
    plain = cluster_url(url) or url
    try:
        parse_url(plain)  # a host, a port that is a port, the query's options
    except ValueError as error:
        reason = str(error)
        return reason[:1].lower() + reason[1:]
    if scheme == "unix":
        return None
    database = urllib.parse.unquote(urllib.parse.urlsplit(plain).path).strip("/")
    if database and not database.isdigit():
        return f"the database must be a number (HOST:PORT/DB), not {database!r}"
    if cluster_url(url) is not None and database not in ("", "0"):
        return "a Redis Cluster has database 0 alone"
    return None


class RedisNotUsable(BackendUnavailable):
    """Redis cannot be used as the URL says, and trying again will not help: the URL is
    not one (``url``), or Redis refuses the node (a password it wants, a database it lacks)."""

    def __init__(self, problem: str, *, url: bool = False) -> None:
        super().__init__(f"redis: {problem}")
        self.problem = problem
        self.url = url

    def said(self, shown_url: str) -> str:
        """The problem in a sentence that names the URL (``shown_url``: its password masked)."""
        if self.url:
            return f"bad Redis URL {shown_url}: {self.problem}"
        return f"Redis at {shown_url} {self.problem}"


class _Shard:
    """One pub/sub connection (to the Redis, or to one cluster primary) and its reader."""

    __slots__ = ("channels", "client", "delay", "leaving", "name", "pubsub", "task")

    def __init__(self, name: str, client: Redis, delay: float) -> None:
        self.name = name
        self.client = client
        self.channels: set[bytes] = set()
        self.leaving: dict[bytes, int] = {}  # SUNSUBSCRIBEs sent, not confirmed yet
        self.pubsub: PubSub | None = None
        self.task: asyncio.Task[None] | None = None
        self.delay = delay


class RedisBackend(RedisDailyMixin, RedisAccountsMixin, Backend):
    """Rooms, logs, players and results in Redis; room events over sharded pub/sub.

    ``url`` names one Redis (``redis://``, ``rediss://``, ``unix://``) or, with
    ``redis+cluster://`` or ``rediss+cluster://``, any node of a Redis Cluster. Its query
    holds redis-py's connection parameters, which reach every connection (commands and
    pub/sub alike): with TLS, ``ssl_ca_certs`` (a CA file to verify Redis by, besides
    the system's), ``ssl_certfile`` and ``ssl_keyfile`` (a client certificate).

    Every timeout is an argument (seconds), chosen so that a node refuses work as
    ``unavailable`` within about ``socket_timeout * (retries + 1)`` when Redis stops
    answering, instead of hanging on it (on a cluster, add the time to ask the other
    nodes for the slot map, each within ``connect_timeout`` and ``socket_timeout``):

    - ``socket_timeout``: the longest wait for a command's reply.
    - ``connect_timeout``: the longest wait to open a connection.
    - ``retries``: how many times a command is retried after a connection error or a
      timeout (the scripts are safe to repeat), with a short backoff.
    - ``max_connections`` and ``pool_timeout``: the command connections of this node (per
      primary on a cluster), and how long a command waits for a free one (a cluster
      client does not wait: with every connection busy, a command is unavailable).
    - ``ready_timeout``: how long :meth:`ready` waits for a PING.
    - ``poll_interval``: how long one pub/sub read waits for a message; the reader's own
      connection is never read without this bound, so ``socket_timeout`` cannot trip on a
      quiet channel.
    - ``ping_interval``: after that much silence the reader pings, and takes the
      connection for dead if no answer comes within ``socket_timeout``.
    - ``subscribe_timeout``: how long :meth:`subscribe` waits for Redis to confirm.
    - ``reconnect_delay`` and ``max_reconnect_delay``: a reader's backoff while Redis is
      away (and, on a cluster, the placer's while no node gives a slot map).
    - ``room_ttl``: a room untouched for that long is dropped with its logs (a room whose
      nodes all died does not stay forever); None keeps rooms until their last member
      leaves.
    - ``max_update_attempts``: compare-and-set rounds before a contended update gives up
      as unavailable.
    """

    name = "redis"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "solrace",
        socket_timeout: float = 2.0,
        connect_timeout: float = 1.0,
        retries: int = 1,
        max_connections: int = 64,
        pool_timeout: float = 2.0,
        ready_timeout: float = 0.5,
        poll_interval: float = 1.0,
        ping_interval: float = 5.0,
        subscribe_timeout: float = 2.0,
        reconnect_delay: float = 0.05,
        max_reconnect_delay: float = 2.0,
        room_ttl: float | None = 24 * 3600.0,
        max_update_attempts: int = 100,
        commit_window_s: float = 0.0,
    ) -> None:
        if not 0.0 <= commit_window_s <= MAX_COMMIT_WINDOW_S:
            raise ValueError(
                f"commit_window_s must be between 0 and {MAX_COMMIT_WINDOW_S:g} second"
            )
        self.commit_window_s = commit_window_s
        self.url = url
        self.prefix = prefix
        self.socket_timeout = socket_timeout
        self.connect_timeout = connect_timeout
        self.ready_timeout = ready_timeout
        self.poll_interval = poll_interval
        self.ping_interval = ping_interval
        self.subscribe_timeout = subscribe_timeout
        self.reconnect_delay = reconnect_delay
        self.max_reconnect_delay = max_reconnect_delay
        self.room_ttl_ms = 0 if room_ttl is None else int(room_ttl * 1000)
        self.max_update_attempts = max_update_attempts
        retry = Retry(ExponentialBackoff(cap=0.2, base=0.02), retries)
        problem = url_problem(url)
        if problem is not None:
            raise RedisNotUsable(problem, url=True)
        self._cluster_url = cluster_url(url)
        self._redis: Redis | RedisCluster
        if self._cluster_url is not None:
            # Without full coverage the rooms on the primaries that answer stay playable.
            self._redis = RedisCluster.from_url(
                self._cluster_url,
                max_connections=max_connections,
                socket_timeout=socket_timeout,
                socket_connect_timeout=connect_timeout,
                retry=retry,
                require_full_coverage=False,
                health_check_interval=0,
            )
        else:
            pool = BlockingConnectionPool.from_url(
                url,
                max_connections=max_connections,
                timeout=pool_timeout,
                socket_timeout=socket_timeout,
                socket_connect_timeout=connect_timeout,
                retry=retry,
                health_check_interval=0,
            )
            self._redis = Redis.from_pool(pool)
        self._create_room = self._redis.register_script(_CREATE_ROOM)
        self._release_start = self._redis.register_script(_RELEASE_START)
        self._forget_room = self._redis.register_script(_FORGET_ROOM)
        self._take_node = self._redis.register_script(_TAKE_NODE)
        self._swap_room = self._redis.register_script(_SWAP_ROOM)
        self._swap_room_publish = self._redis.register_script(_SWAP_ROOM_PUBLISH)
        self._append_move = self._redis.register_script(_APPEND_MOVE)
        self._append_moves = self._redis.register_script(_APPEND_MOVES)
        self._save_boards = self._redis.register_script(_SAVE_BOARDS)
        self._publish = self._redis.register_script(_PUBLISH)
        self._records: dict[str, tuple[bytes, Room]] = {}  # code: (version, record)
        self._updating = KeyedLock()  # by room code
        self._calls: list[_Call] = []  # asked for in this window, not yet sent
        self._calls_timer: asyncio.TimerHandle | asyncio.Handle | None = None
        self._sending: set[asyncio.Task[None]] = set()
        self.append_round_trips = 0
        """How many round trips the appends took (a pass's appends share one)."""
        self.batched_round_trips = 0
        """How many round trips the batched script calls took (appends, swaps, events)."""
        self.swap_round_trips = 0
        """How many of them carried swaps of rooms' records."""
        self._spend = self._redis.register_script(_SPEND)
        self._secret = b""
        self._handlers: dict[bytes, tuple[str, EventHandler]] = {}
        self._confirmations: dict[bytes, asyncio.Future[None]] = {}
        self._resync: ResyncHandler | None = None
        self._shards: dict[str, _Shard] = {}
        self._placed: dict[bytes, _Shard] = {}
        self._live: set[bytes] = set()  # confirmed on a connection that has not failed since
        self._stale: set[bytes] = set()  # events may have been lost: resync once confirmed
        self._unplaced: set[bytes] = set()  # for the placer: find the owner again
        self._placing = asyncio.Event()
        self._placer: asyncio.Task[None] | None = None
        self._started = False
        self._closing = False

    @property
    def cluster(self) -> bool:
        """Whether the URL names a Redis Cluster."""
        return self._cluster_url is not None

    # keys -------------------------------------------------------------------------------

    def _room_key(self, code: str, kind: str) -> str:
        return f"{self.prefix}:{{{code}}}:{kind}"

    def _log_key(self, code: str, race: int, player_id: str) -> str:
        return f"{self.prefix}:{{{code}}}:log:{race}:{player_id}"

    @staticmethod
    def _closed_key(log_key: str) -> str:
        """The log's closed mark (``_APPEND_MOVES`` names it so too)."""
        return f"{log_key}:over"

    def _player_key(self, player_id: str) -> str:
        return f"{self.prefix}:player:{{{player_id}}}"

    def _channel(self, code: str) -> bytes:
        return self._room_key(code, "events").encode()

    @staticmethod
    def _known(code: str) -> bool:
        return _ROOM_CODE.fullmatch(code) is not None

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """Turn Redis being away into BackendUnavailable."""
        try:
            yield
        except UNAVAILABLE_ERRORS as error:
            raise BackendUnavailable(f"redis: {error}") from error

    # life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Read the shared token secret (the first node sets it) and start the readers."""
        key = f"{self.prefix}:secret"
        try:
            await self._redis.set(key, secrets.token_bytes(32), nx=True)
            secret = await self._redis.get(key)
        except AuthenticationError as error:
            if not parse_url(self._cluster_url or self.url).get("password"):
                raise RedisNotUsable(
                    "asks for a password, and the URL gives none (redis://:PASSWORD@HOST:PORT/DB)"
                ) from error
            raise RedisNotUsable(f"refused the URL's user or password: {error}") from error
        except UNAVAILABLE_ERRORS as error:
            raise BackendUnavailable(f"redis: {error}") from error
        except ResponseError as error:
            # Redis answered, and no retry will change its answer: SELECT of a database
            # past its ``databases`` setting, or a user whose ACL forbids the commands.
            if "DB index is out of range" in str(error):
                database = urllib.parse.urlsplit(self.url).path.strip("/")
                raise RedisNotUsable(f"has no database {database}: {error}") from error
            raise RedisNotUsable(f"refused the node: {error}") from error
        if not secret:
            raise BackendUnavailable("redis: the token secret is missing")
        self._secret = _bytes(secret)
        if self._started:
            return
        self._started = True
        self._placer = asyncio.ensure_future(self._place_loop())
        if not self.cluster:
            self._shard("")  # the one connection, open from the start
        for shard in self._shards.values():
            if shard.task is None:
                shard.task = asyncio.ensure_future(self._read(shard))

    async def close(self) -> None:
        """Send the calls waiting for their window, stop the readers and close every
        connection."""
        self.draining()
        if self._sending:
            await asyncio.wait(list(self._sending), timeout=self.socket_timeout)
        self._closing = True
        placer, self._placer = self._placer, None
        tasks = [shard.task for shard in self._shards.values() if shard.task is not None]
        await cancel_until_done([*tasks, *([placer] if placer is not None else [])])
        for shard in list(self._shards.values()):
            await self._drop_pubsub(shard)
            with contextlib.suppress(*UNAVAILABLE_ERRORS):
                await shard.client.aclose()
        self._shards.clear()
        self._placed.clear()
        for future in self._confirmations.values():
            future.cancel()
        self._confirmations.clear()
        self._handlers.clear()
        with contextlib.suppress(*UNAVAILABLE_ERRORS):
            await self._redis.aclose()

    async def ready(self) -> bool:
        """Whether Redis (on a cluster, any primary) answers a PING within ``ready_timeout``.

        Every node shares the cluster: a primary that is down until its failover makes
        its rooms unavailable on every node alike, and no node is readier than another.
        """
        try:
            async with asyncio.timeout(self.ready_timeout):
                primaries = (
                    self._redis.get_primaries() if isinstance(self._redis, RedisCluster) else []
                )
                if not primaries:  # one Redis, or a cluster whose map is not read yet
                    return bool(await self._redis.ping())
                answers = await asyncio.gather(
                    *(self._redis.ping(target_nodes=node) for node in primaries),
                    return_exceptions=True,
                )
                return any(answer is True for answer in answers)
        except UNAVAILABLE_ERRORS:
            return False

    async def secret(self) -> bytes:
        """The token secret read at start, the same on every node."""
        return self._secret

    # budgets ----------------------------------------------------------------------------

    async def spend(
        self, budgets: list[tuple[str, int, float]], now_ms: int, *, force: bool = False
    ) -> tuple[int, float] | None:
        """One script over the budgets' keys, which share a hash slot (``{budgets}``)."""
        keys = [f"{self.prefix}:{{budgets}}:{key}" for key, _, _ in budgets]
        args: list[Any] = [now_ms, "1" if force else "0"]
        for _, count, period_s in budgets:
            args += [count, int(period_s * 1000)]
        with self._guard():
            refused = await self._spend(keys=keys, args=args)
        if not refused:
            return None
        return int(refused[0]) - 1, int(refused[1]) / 1000

    # players ----------------------------------------------------------------------------

    async def save_player(self, player_id: str, name: str) -> None:
        """Insert or rename a player."""
        with self._guard():
            await self._redis.hset(self._player_key(player_id), "name", name)

    async def player(self, player_id: str) -> tuple[str, int] | None:
        """The player's name and token generation."""
        with self._guard():
            name, gen = await self._redis.hmget(self._player_key(player_id), ["name", "gen"])
        text = _text(name)
        return None if text is None else (text, int(gen or 0))

    async def revoke_player(self, player_id: str) -> bool:
        """HINCRBY the generation, if the player is known."""
        key = self._player_key(player_id)
        with self._guard():
            if not await self._redis.hexists(key, "name"):
                return False
            await self._redis.hincrby(key, "gen", 1)
        return True

    async def set_player_room(self, player_id: str, code: str | None) -> None:
        """Remember the player's room, or forget it."""
        key = self._player_key(player_id)
        with self._guard():
            if code is None:
                await self._redis.hdel(key, "room")
            else:
                await self._redis.hset(key, "room", code)

    async def forget_player_room(self, player_id: str, code: str) -> None:
        """HDEL the player's room if it is still ``code`` (one script)."""
        with self._guard():
            await self._forget_room(keys=[self._player_key(player_id)], args=[code])

    async def player_room(self, player_id: str) -> str | None:
        """The player's room, if it still exists."""
        return await self._existing_room(player_id, "room")

    async def set_daily_room(self, player_id: str, code: str) -> None:
        """HSET the player's ``daily`` field."""
        with self._guard():
            await self._redis.hset(self._player_key(player_id), "daily", code)

    async def daily_room(self, player_id: str) -> str | None:
        """The player's ``daily`` field, if that room still exists."""
        return await self._existing_room(player_id, "daily")

    async def _existing_room(self, player_id: str, field: str) -> str | None:
        """The room a field of the player's hash names, if it still exists."""
        with self._guard():
            code = _text(await self._redis.hget(self._player_key(player_id), field))
            if code is None or not self._known(code):
                return None
            exists = await self._redis.exists(self._room_key(code, "room"))
        return code if exists else None

    async def claim_start(self, player_id: str, ttl_ms: int) -> str | None:
        """SET NX PX of a key of the player's own."""
        token = secrets.token_hex(8)
        with self._guard():
            held = await self._redis.set(
                f"{self._player_key(player_id)}:starting", token, nx=True, px=ttl_ms
            )
        return token if held else None

    async def release_start(self, player_id: str, token: str) -> None:
        """Delete the key if it still holds the token (one script)."""
        with self._guard():
            await self._release_start(
                keys=[f"{self._player_key(player_id)}:starting"], args=[token]
            )

    # which node holds whom -------------------------------------------------------------

    # The nodes' sorted set and each node's set of members share one slot (a cluster's
    # script may only touch keys of one slot): small keys, written as members come and go.
    def _nodes_key(self) -> str:
        return f"{self.prefix}:{{nodes}}"

    def _held_key(self, node: str) -> str:
        return f"{self.prefix}:{{nodes}}:held:{node}"

    async def hold_member(self, node: str, entry: str) -> None:
        """SADD to the node's set (taken, with the node, once the node falls silent)."""
        with self._guard():
            await self._redis.sadd(self._held_key(node), entry)

    async def release_member(self, node: str, entry: str) -> None:
        with self._guard():
            await self._redis.srem(self._held_key(node), entry)

    async def note_node(self, node: str, now_ms: int) -> None:
        """The node's score in the sorted set of nodes is the last time it ran."""
        with self._guard():
            await self._redis.zadd(self._nodes_key(), {node: now_ms})

    async def silent_nodes(self, before_ms: int) -> list[str]:
        with self._guard():
            names = await self._redis.zrangebyscore(
                self._nodes_key(), "-inf", f"({before_ms}", start=0, num=100
            )
        return [name.decode() if isinstance(name, bytes) else str(name) for name in names]

    async def take_node(self, node: str, before_ms: int) -> list[str] | None:
        """One script: the node leaves the sorted set if still silent since ``before_ms``
        (so one node wins it), and its set is read and deleted."""
        with self._guard():
            taken = await self._take_node(
                keys=[self._nodes_key(), self._held_key(node)], args=[node, before_ms]
            )
        if taken is None:
            return None
        return [entry.decode() for entry in taken]

    # rooms ------------------------------------------------------------------------------

    async def create_room(self, room: Room) -> bool:
        """Store the room unless its code is taken."""
        if not self._known(room.code):
            raise ValueError(f"not a room code: {room.code!r}")
        with self._guard():
            created = await self._create_room(
                keys=[self._room_key(room.code, "room")],
                args=[_pack(room.to_dict()), self.room_ttl_ms],
            )
        return bool(created)

    async def _read_room(self, code: str) -> tuple[bytes, Room] | None:
        with self._guard():
            version, data = await self._redis.hmget(self._room_key(code, "room"), ["v", "data"])
        if version is None or data is None:
            self._records.pop(code, None)
            return None
        read = _bytes(version), Room.from_dict(_unpack(data))
        self._remember(code, read)
        return read

    def _remember(self, code: str, read: tuple[bytes, Room] | None) -> None:
        """Keep the record (and its version) as this node last read or wrote it."""
        records = self._records
        records.pop(code, None)
        if read is None:
            return
        if len(records) >= ROOM_RECORDS_KEPT:
            del records[next(iter(records))]  # the one kept longest ago
        records[code] = read

    async def load_room(self, code: str) -> Room | None:
        """The room's record, or None."""
        if not self._known(code):
            return None
        read = await self._read_room(code)
        return None if read is None else read[1]

    async def update_room(self, code: str, change: RoomUpdate) -> Outcome:
        return (await self._update_room(code, change, publish=False))[0]

    async def update_room_publishing(self, code: str, change: RoomUpdate) -> tuple[Outcome, bool]:
        """:meth:`update_room`; an outcome whose events are all progress reports has them
        published by the same script call that swaps the record (one round trip)."""
        return await self._update_room(code, change, publish=True)

    async def _update_room(
        self, code: str, change: RoomUpdate, *, publish: bool
    ) -> tuple[Outcome, bool]:
        """:meth:`_compare_and_set`, one at a time for a room on this node.

        A node's own updates of one room (three guests joining at once, a report and a
        ready) would otherwise race each other in Redis: every one but the first met a
        conflict, and paid another read and another swap, each a round trip holding one
        of the pool's connections (past a node's capacity, the pool ran out on them). In
        turn, each applies its change to the record the one before it wrote: one round
        trip each. Updates from other nodes still meet conflicts, as before.
        """
        async with self._updating.hold(code):
            return await self._compare_and_set(code, change, publish=publish)

    async def _compare_and_set(
        self, code: str, change: RoomUpdate, *, publish: bool
    ) -> tuple[Outcome, bool]:
        """Compare-and-set on the record's version; on a conflict, read and apply again.

        The first try applies ``change`` to the record as this node last read or wrote
        it, without reading it again: a swap on that version succeeds only if no one
        changed the record since, so its outcome was decided on the current record (a
        report of standings, most of this path, then costs one round trip, not two). An
        outcome that writes nothing, or a refusal, decided on a remembered record is not
        trusted: the record is read and ``change`` applied again.
        """
        remembered = self._records.get(code)
        for _ in range(self.max_update_attempts):
            read: tuple[bytes, Room] | None = remembered
            trusted = read is None  # read now, not remembered
            remembered = None  # a second try reads the record
            if read is None:
                read = await self._read_room(code) if self._known(code) else None
            if read is None:
                raise ProtocolError(ErrorCode.ROOM_NOT_FOUND, f"no room {code!r}")
            version, room = read
            try:
                outcome = change(room)
            except ProtocolError:
                if trusted:
                    raise
                continue
            if outcome.room is room:
                if trusted:
                    return outcome, False
                continue
            record = b"" if outcome.room is None else _pack(outcome.room.to_dict())
            keys = [self._room_key(code, "room")]
            args: list[Any] = [version, record, self.room_ttl_ms]
            published = (
                publish
                and bool(outcome.events)
                and all(isinstance(event, Progress) for event in outcome.events)
            )
            with self._guard():
                if published:
                    keys.append(self._channel(code).decode())
                    args.extend(_pack(event.to_wire()) for event in outcome.events)
                    swapped = await self._batched(self._swap_room_publish, keys, args)
                else:
                    swapped = await self._batched(self._swap_room, keys, args)
            if swapped:
                after = None if outcome.room is None else (b"%d" % (int(version) + 1), outcome.room)
                self._remember(code, after)
                return outcome, published
        raise BackendUnavailable(f"redis: room {code} changed too often to update")

    async def drop_room_logs(self, code: str) -> None:
        """Delete the room's move logs once the node is done with them."""
        if self._known(code):
            await self._drop_logs(code)

    async def close_log(self, code: str, race: int, player_id: str) -> None:
        """SET the log's closed mark (which the append scripts read), noted with the room's
        logs so that it goes with them."""
        key = self._closed_key(self._log_key(code, race, player_id))
        ttl = self.room_ttl_ms
        with self._guard():
            await self._redis.set(key, 1, px=ttl if ttl > 0 else None)
            await self._redis.sadd(self._room_key(code, "logs"), key)

    async def drop_race_logs(self, code: str, race: int, player_ids: list[str]) -> None:
        """UNLINK the race's log streams (if this fails, their time to live does it), and
        close each: a late move through a node that has not heard the race end is refused,
        not logged into a new stream of a race that is over. The closed marks go with the
        room's logs."""
        if not self._known(code) or not player_ids:
            return
        streams = [self._log_key(code, race, player_id) for player_id in player_ids]
        marks = [self._closed_key(key) for key in streams]
        logs = self._room_key(code, "logs")
        ttl = self.room_ttl_ms
        try:  # one command each (a cluster's pipeline does not queue UNLINK), at a race's end
            for mark in marks:
                await self._redis.set(mark, 1, px=ttl if ttl > 0 else None)
            await self._redis.sadd(logs, *marks)
            await self._redis.srem(logs, *streams)
            await self._redis.unlink(*streams)
        except UNAVAILABLE_ERRORS as error:
            log.warning("race_logs_left", room=code, race=race, error=str(error))

    async def _drop_logs(self, code: str) -> None:
        """Delete a deleted room's move logs (if this fails, their time to live does it)."""
        logs = self._room_key(code, "logs")
        try:
            keys = await self._redis.smembers(logs)
            await self._redis.unlink(logs, self._room_key(code, "boards"), *keys)
        except UNAVAILABLE_ERRORS as error:
            log.warning("room_logs_left", room=code, error=str(error))

    async def room_count(self) -> int:
        """Rooms in Redis, counted with SCAN on every primary (for operators, not a hot path)."""
        return len(await self.room_codes())

    async def room_codes(self, limit: int | None = None) -> list[str]:
        """The rooms' codes, found with SCAN on every primary (for operators, not a hot
        path), at most ``limit`` of them."""
        match = f"{self.prefix}:{{*}}:room"
        codes: list[str] = []
        with self._guard():
            if isinstance(self._redis, RedisCluster):
                keys = self._redis.scan_iter(
                    match=match, count=1000, target_nodes=RedisCluster.PRIMARIES
                )
            else:
                keys = self._redis.scan_iter(match=match, count=1000)
            async for key in keys:
                text = _bytes(key).decode()
                codes.append(text[text.index("{") + 1 : text.index("}")])
                if limit is not None and len(codes) >= limit:
                    break
        return codes

    # move logs --------------------------------------------------------------------------

    async def append_move(
        self, code: str, race: int, player_id: str, rev: int, move: str, at_ms: int = 0
    ) -> None:
        """XADD move number ``rev``, refusing a gap or a rewrite (the same move again is kept).

        The appends asked for in one pass of the event loop go to Redis together, in one
        round trip with the pass's other script calls (:meth:`_batched`); each waits for
        its own answer before it returns.
        """
        await self.append_move_soon(code, race, player_id, rev, move, at_ms)

    def append_move_soon(
        self, code: str, race: int, player_id: str, rev: int, move: str, at_ms: int = 0
    ) -> asyncio.Future[None]:
        """:meth:`append_move` as a future, sent with the pass's other script calls."""
        log_key = self._log_key(code, race, player_id)
        keys = [log_key, self._room_key(code, "logs"), self._closed_key(log_key)]
        args = [rev, rev + 1, move, self.room_ttl_ms, at_ms]
        answer = self._batched(self._append_move, keys, args)
        logged: asyncio.Future[None] = answer.get_loop().create_future()
        answer.add_done_callback(partial(_appended, logged))
        return logged

    def _batched(
        self, script: AsyncScript, keys: list[str], args: list[Any]
    ) -> asyncio.Future[Any]:
        """A script call sent with the others asked for within ``commit_window_s`` of the
        first (0: in the same pass of the event loop).

        Those calls (moves' appends, the swaps of rooms' records that report their
        standings, boards, rooms' events) go in one round trip: a pipeline of EVALSHA
        calls on one Redis, or on a cluster one call each, sent at once. Each call gets
        its own answer, or its own error (a connection error as redis-py raises it). At a
        person's pace a pass carries about one move; a window of a few milliseconds
        gathers dozens into the round trip, whose cost in redis-py is mostly its own.
        """
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Any] = loop.create_future()
        self._calls.append((script, keys, args, answer))
        if len(self._calls) == 1:
            window = self.commit_window_s
            self._calls_timer = (
                loop.call_later(window, self._send_calls)
                if window > 0
                else loop.call_soon(self._send_calls)
            )
        return answer

    def draining(self) -> None:
        self.commit_window_s = 0.0
        if self._calls:
            self._send_calls()

    def has_waiting_calls(self) -> bool:
        """Whether script calls wait for their window (not yet sent)."""
        return bool(self._calls)

    def _send_calls(self) -> None:
        if self._calls_timer is not None:
            self._calls_timer.cancel()
            self._calls_timer = None
        batch, self._calls = self._calls, []
        task = asyncio.ensure_future(self._run_calls(batch))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    def _combined(self, batch: list[_Call]) -> tuple[list[_Call], list[_Call], _Call | None]:
        """The calls to send for ``batch``: on one Redis, its appends as one call of
        ``_APPEND_MOVES`` (one command to pack and one reply to read, not one each), else
        as they are. Also the appends so combined, and the call that holds them."""
        appends = [call for call in batch if call[0] is self._append_move]
        if len(appends) < 2 or isinstance(self._redis, RedisCluster):
            return batch, [], None
        packed: list[Any] = [self.room_ttl_ms]
        for _, (log, logs, _closed), (rev, _, move, _, at_ms), _ in appends:
            packed += (log, logs, rev, move, at_ms)  # the script names the closed mark
        combined: _Call = (
            self._append_moves,
            [],
            [msgpack.packb(packed)],
            asyncio.get_running_loop().create_future(),
        )
        calls = [call for call in batch if call[0] is not self._append_move]
        calls.append(combined)
        return calls, appends, combined

    async def _run_calls(self, batch: list[_Call]) -> None:
        """One round trip for the pass's calls; each answer to its own caller."""
        self.batched_round_trips += 1
        scripts = {id(script) for script, *_ in batch}
        if id(self._append_move) in scripts:
            self.append_round_trips += 1
        if scripts & {id(self._swap_room), id(self._swap_room_publish)}:
            self.swap_round_trips += 1
        try:
            sent, appends, combined = self._combined(batch)
        except Exception as error:  # no caller may wait for ever on an answer
            for *_, answer in batch:
                if not answer.done():
                    answer.set_exception(error)
            raise
        try:
            await self._send_batch(sent)
        finally:
            if combined is not None:
                self._answer_appends(appends, combined[3])

    @staticmethod
    def _answer_appends(appends: list[_Call], combined: asyncio.Future[Any]) -> None:
        """Each combined append's own answer, from the call that held them."""
        error: BaseException | None = None
        results: list[Any] = []
        if not combined.done() or combined.cancelled():
            error = BackendUnavailable("redis: the append was cancelled")
        elif combined.exception() is not None:
            error = combined.exception()
        else:
            results = list(combined.result())
            if len(results) != len(appends):
                error = BackendUnavailable("redis: a short answer to the appends")
        for n, (*_, answer) in enumerate(appends):
            if answer.done():
                continue
            if error is not None:
                answer.set_exception(error)
            else:
                answer.set_result(results[n])

    async def _send_batch(self, batch: list[_Call]) -> None:
        """Send the calls in one round trip and settle each one's answer."""
        try:
            if isinstance(self._redis, RedisCluster):
                answers: list[Any] = await asyncio.gather(
                    *(script(keys=keys, args=args) for script, keys, args, _ in batch),
                    return_exceptions=True,
                )
            else:
                answers = await self._pipelined(batch)
        except BaseException as error:
            for *_, answer in batch:
                if not answer.done():
                    answer.set_exception(
                        error
                        if isinstance(error, Exception)
                        else BackendUnavailable(f"redis: {error!r}")
                    )
            if not isinstance(error, Exception):
                raise
            return
        for (*_, answer), result in zip(batch, answers, strict=True):
            if answer.done():
                continue
            if isinstance(result, BaseException):
                answer.set_exception(result)
            else:
                answer.set_result(result)

    async def _pipelined(self, batch: list[_Call], *, load: bool = True) -> list[Any]:
        """The batch's script calls in one pipeline, by EVALSHA alone.

        (redis-py's scripts in a pipeline first ask SCRIPT EXISTS, a second round trip
        for every batch.) Where Redis does not know a script (restarted, or its scripts
        flushed), it is loaded and the calls it refused are sent again.
        """
        async with self._redis.pipeline(transaction=False) as pipe:
            for script, keys, args, _ in batch:
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            answers: list[Any] = await pipe.execute(raise_on_error=False)
        refused = [i for i, answer in enumerate(answers) if isinstance(answer, NoScriptError)]
        if refused and load:
            for script in {id(batch[i][0]): batch[i][0] for i in refused}.values():
                script.sha = await self._redis.script_load(script.script)
            again = await self._pipelined([batch[i] for i in refused], load=False)
            for i, answer in zip(refused, again, strict=True):
                answers[i] = answer
        return answers

    async def log_length(self, code: str, race: int, player_id: str) -> int:
        """XLEN of the player's stream."""
        with self._guard():
            return int(await self._redis.xlen(self._log_key(code, race, player_id)))

    async def read_timed_moves(self, code: str, race: int, player_id: str) -> list[tuple[str, int]]:
        """The stream's moves, in order, with their times."""
        with self._guard():
            entries = await self._redis.xrange(self._log_key(code, race, player_id))
        return [
            (_bytes((fields or {})[b"m"]).decode(), int((fields or {}).get(b"t") or 0))
            for _, fields in entries or ()
        ]

    # spectator boards -------------------------------------------------------------------

    async def save_boards(self, code: str, race: int, views: dict[str, dict[str, Any]]) -> None:
        """HSET each player's latest board (with its race) in the room's boards hash (with
        the pass's other script calls: the boards of 50 rooms, saved a pass, take one)."""
        if not views or not self._known(code):
            return
        args: list[Any] = [self.room_ttl_ms]
        for player_id, view in views.items():
            args += [player_id, _pack([race, view])]
        with self._guard():
            await self._batched(self._save_boards, [self._room_key(code, "boards")], args)

    async def load_boards(self, code: str, race: int) -> dict[str, dict[str, Any]]:
        """The boards of the room's race."""
        if not self._known(code):
            return {}
        with self._guard():
            stored = await self._redis.hgetall(self._room_key(code, "boards"))
        boards: dict[str, dict[str, Any]] = {}
        for player_id, packed in (stored or {}).items():
            board_race, view = _unpack(packed)
            if board_race == race:
                boards[_bytes(player_id).decode()] = view
        return boards

    # certified deals --------------------------------------------------------------------

    async def save_race(
        self, code: str, race: int, record: dict[str, Any], now_ms: int, keep_ms: int
    ) -> None:
        """SET the record under the room's tag, for Redis to forget after ``keep_ms`` (and
        with the node's time it is kept until, which the nodes read)."""
        kept = {"until_ms": now_ms + keep_ms, "record": record}
        with self._guard():
            await self._redis.set(
                self._room_key(code, f"race:{race}"), _pack(kept), px=max(1, keep_ms)
            )

    async def load_race(self, code: str, race: int, now_ms: int) -> dict[str, Any] | None:
        """GET the record, unless past its time."""
        with self._guard():
            value = await self._redis.get(self._room_key(code, f"race:{race}"))
        if value is None:
            return None
        kept: dict[str, Any] = _unpack(value)
        if kept["until_ms"] <= now_ms:
            return None
        record: dict[str, Any] = kept["record"]
        return record

    def _daily_deal_key(self, date: str, variant: str) -> str:
        return f"{self.prefix}:{{daily:{date}:{variant}}}:deal"

    async def daily_deal(self, date: str, variant: str) -> tuple[int, int | None] | None:
        """GET the day's ``candidate:par``."""
        with self._guard():
            value = await self._redis.get(self._daily_deal_key(date, variant))
        if value is None:
            return None
        candidate, par = _bytes(value).decode().split(":")
        return int(candidate), int(par) if par else None

    async def keep_daily_deal(
        self, date: str, variant: str, candidate: int, par: int | None
    ) -> tuple[int, int | None]:
        """SET NX the day's ``candidate:par``; the one kept."""
        key = self._daily_deal_key(date, variant)
        with self._guard():
            await self._redis.set(key, f"{candidate}:{'' if par is None else par}", nx=True)
        kept = await self.daily_deal(date, variant)
        assert kept is not None
        return kept

    def _certified_key(self, variant: str) -> str:
        return f"{self.prefix}:{{certified}}:{variant}"

    async def put_certified(self, variant: str, seed: int, par: int, line: str) -> None:
        """RPUSH ``seed:par:line`` onto the game's list."""
        with self._guard():
            await self._redis.rpush(self._certified_key(variant), f"{seed}:{par}:{line}")

    async def take_certified(self, variant: str) -> tuple[int, int, str] | None:
        """LPOP one ``seed:par:line`` off the game's list (atomic: no two nodes get one
        twice)."""
        with self._guard():
            item = await self._redis.lpop(self._certified_key(variant))
        if not isinstance(item, bytes | str):  # None: the list is empty
            return None
        seed, par, line = _bytes(item).decode().split(":", 2)
        return int(seed), int(par), line

    def _line_key(self, variant: str, seed: int) -> str:
        return f"{self.prefix}:{{certified}}:line:{variant}:{seed}"

    async def keep_line(
        self, variant: str, seed: int, line: str, now_ms: int, keep_ms: int
    ) -> None:
        """SET the line, for Redis to forget after ``keep_ms``."""
        with self._guard():
            await self._redis.set(self._line_key(variant, seed), line, px=max(1, keep_ms))

    async def certified_line(self, variant: str, seed: int, now_ms: int) -> str | None:
        """GET the line."""
        with self._guard():
            value = await self._redis.get(self._line_key(variant, seed))
        return None if value is None else _bytes(value).decode()

    async def certified_count(self, variant: str) -> int:
        """LLEN of the game's list."""
        with self._guard():
            return int(await self._redis.llen(self._certified_key(variant)))

    # results ----------------------------------------------------------------------------

    async def save_results(
        self, code: str, race: int, variant: str, seed: int, results: list[dict[str, Any]]
    ) -> None:
        """Keep the results in the room's results hash: it outlives the room, by
        :data:`RESULTS_KEEP_MS` after its last race (where rooms expire at all)."""
        record = _pack({"variant": variant, "seed": seed, "results": results})
        key = self._room_key(code, "results")
        with self._guard():
            await self._redis.hset(key, str(race), record)
            if self.room_ttl_ms > 0:
                await self._redis.pexpire(key, max(RESULTS_KEEP_MS, self.room_ttl_ms))

    async def load_results(self, code: str, race: int) -> dict[str, Any] | None:
        """A finished race's results."""
        if not self._known(code):
            return None
        with self._guard():
            record = await self._redis.hget(self._room_key(code, "results"), str(race))
        if record is None:
            return None
        data: dict[str, Any] = _unpack(record)
        return data

    # pub/sub ----------------------------------------------------------------------------

    async def publish(self, code: str, event: dict[str, Any]) -> None:
        """SPUBLISH the event on the room's channel, in the pass's round trip
        (:meth:`_batched`).

        One call each held a connection of the pool for its own round trip: on a node
        behind on its loop (replies read late), a ramp's joins' events kept the pool busy,
        and the calls that found no connection free for 2 s were refused.
        """
        with self._guard():
            await self._batched(self._publish, [self._channel(code).decode()], [_pack(event)])

    def set_resync_handler(self, handler: ResyncHandler | None) -> None:
        """Call ``handler`` with a room's code when its subscription is made again."""
        self._resync = handler

    async def subscribe(self, code: str, handler: EventHandler) -> None:
        """Hand the room's events to ``handler``, once Redis confirms the subscription.

        If Redis does not confirm in time, the room stays wanted: its reader subscribes to
        it when it connects again, and the room is resynced once Redis confirms. This
        never raises.
        """
        channel = self._channel(code)
        self._handlers[channel] = (code, handler)
        if channel in self._live:
            return
        future = self._confirmations.get(channel)
        if future is None or future.done():
            future = asyncio.get_running_loop().create_future()
            self._confirmations[channel] = future
        try:
            await self._place(channel)
        except UNAVAILABLE_ERRORS as error:
            # No slot map names the owner now: the placer finds it when one does.
            log.warning("subscribe_failed", room=code, error=str(error))
            self._replace([channel])
        try:
            async with asyncio.timeout(self.subscribe_timeout):
                await asyncio.shield(future)
        except TimeoutError:
            log.warning("subscribe_unconfirmed", room=code)
            if channel in self._handlers and channel not in self._live:
                self._stale.add(channel)  # events until Redis confirms are lost

    async def unsubscribe(self, code: str) -> None:
        """Stop handing the room's events on, and SUNSUBSCRIBE."""
        channel = self._channel(code)
        self._handlers.pop(channel, None)
        self._records.pop(code, None)
        future = self._confirmations.pop(channel, None)
        if future is not None and not future.done():
            future.cancel()
        self._live.discard(channel)
        self._stale.discard(channel)
        self._unplaced.discard(channel)
        shard = self._placed.pop(channel, None)
        if shard is None:
            return
        shard.channels.discard(channel)
        pubsub = shard.pubsub
        if pubsub is not None:
            shard.leaving[channel] = shard.leaving.get(channel, 0) + 1
            try:
                await pubsub.sunsubscribe(channel)
            except UNAVAILABLE_ERRORS as error:
                # The reader reconnects and subscribes only to the rooms still wanted.
                log.warning("unsubscribe_failed", room=code, error=str(error))

    # pub/sub connections ------------------------------------------------------------------

    def _owner(self, channel: bytes) -> str:
        """The name of the connection that serves the channel ("" for the one Redis)."""
        if not isinstance(self._redis, RedisCluster):
            return ""
        node = self._redis.get_node_from_key(channel.decode())
        if node is None:
            raise RedisClusterException(f"no node serves {channel!r}")
        return str(node.name)

    def _shard(self, name: str) -> _Shard:
        """The connection named ``name``, made (and its reader started) on first use."""
        shard = self._shards.get(name)
        if shard is not None:
            return shard
        timeouts: dict[str, Any] = {
            "socket_timeout": self.socket_timeout,
            "socket_connect_timeout": self.connect_timeout,
            # No retries of its own: the reader reconnects and subscribes again itself.
            "retry": Retry(NoBackoff(), 0),
            "health_check_interval": 0,
        }
        if self._cluster_url is None:
            client = Redis.from_url(self.url, **timeouts)
        else:
            host, _, port = name.rpartition(":")
            options: dict[str, Any] = dict(parse_url(self._cluster_url))
            options.update(host=host, port=int(port), **timeouts)
            client = Redis.from_pool(ConnectionPool(**options))
        shard = self._shards[name] = _Shard(name, client, self.reconnect_delay)
        if self._started and not self._closing:
            shard.task = asyncio.ensure_future(self._read(shard))
        return shard

    async def _place(self, channel: bytes) -> None:
        """Put the channel on its owner's connection, and SSUBSCRIBE there if it is up."""
        shard = self._shard(self._owner(channel))
        old = self._placed.get(channel)
        if old is not shard:
            if old is not None:
                old.channels.discard(channel)
                if channel in self._live:
                    self._live.discard(channel)
                    self._stale.add(channel)
            shard.channels.add(channel)
            self._placed[channel] = shard
        pubsub = shard.pubsub
        if channel in self._live or pubsub is None:
            return  # subscribed already, or the reader subscribes once it connects
        try:
            await pubsub.ssubscribe(channel)
        except UNAVAILABLE_ERRORS as error:
            log.warning("subscribe_failed", node=shard.name or None, error=str(error))

    def _replace(self, channels: Iterable[bytes]) -> None:
        """Have the placer find these channels' owners again."""
        self._unplaced.update(channel for channel in channels if channel in self._handlers)
        if self._unplaced:
            self._placing.set()

    async def _place_loop(self) -> None:
        """The placer: move channels to their owners, from a fresh slot map on a cluster."""
        delay = self.reconnect_delay
        while not self._closing:
            await self._placing.wait()
            self._placing.clear()
            try:
                if isinstance(self._redis, RedisCluster) and self._unplaced:
                    await self._redis.nodes_manager.initialize()
                for channel in list(self._unplaced):
                    if channel in self._handlers:
                        await self._place(channel)
                    self._unplaced.discard(channel)
            except UNAVAILABLE_ERRORS as error:
                log.warning("pubsub_placing_failed", error=str(error), retry_in=delay)
            except Exception:
                log.exception("pubsub_placing_failed", retry_in=delay)
            else:
                delay = self.reconnect_delay
                await asyncio.sleep(self.reconnect_delay)  # at most one map a delay
                continue
            self._placing.set()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_reconnect_delay)

    async def _read(self, shard: _Shard) -> None:
        """A connection's reader: connect, subscribe to its rooms, dispatch, reconnect."""
        while not self._closing:
            try:
                await self._listen(shard)
            except UNAVAILABLE_ERRORS as error:
                log.warning(
                    "pubsub_lost", node=shard.name or None, error=str(error), retry_in=shard.delay
                )
            except Exception:
                log.exception("pubsub_failed", node=shard.name or None, retry_in=shard.delay)
            await self._drop_pubsub(shard)
            if self.cluster:
                if not shard.channels and self._shards.get(shard.name) is shard:
                    # No room of this node lives there now (its slots may have moved).
                    del self._shards[shard.name]
                    with contextlib.suppress(*UNAVAILABLE_ERRORS):
                        await shard.client.aclose()
                    return
                self._replace(shard.channels)  # the primary may have failed over
            await asyncio.sleep(shard.delay)
            shard.delay = min(shard.delay * 2, self.max_reconnect_delay)

    async def _listen(self, shard: _Shard) -> None:
        pubsub = shard.client.pubsub()
        try:
            await pubsub.connect()  # type: ignore[no-untyped-call]
        except BaseException:
            with contextlib.suppress(Exception):
                await cast(Any, pubsub).aclose()  # untyped before redis-py 8.2
            raise
        # From here on subscribe() sends SSUBSCRIBE itself; the rooms wanted before are
        # subscribed below (nothing awaits in between, so none is missed).
        shard.pubsub = pubsub
        for channel in list(shard.channels):
            if channel in shard.channels:
                await pubsub.ssubscribe(channel)
        shard.delay = self.reconnect_delay
        loop = asyncio.get_running_loop()
        heard = pinged = loop.time()
        while not self._closing:
            # A bounded read: a quiet channel returns None here instead of tripping the
            # connection's socket_timeout, which a blocking read would.
            try:
                message = await pubsub.get_message(timeout=self.poll_interval)
            except MovedError as moved:
                # An SSUBSCRIBE (or SUNSUBSCRIBE) reached a primary that lost the slot.
                slot = moved.slot_id
                for channel in [c for c in shard.leaving if self._slot(c) == slot]:
                    del shard.leaving[channel]
                self._replace(c for c in shard.channels if self._slot(c) == slot)
                message = None
            now = loop.time()
            if message is not None:
                heard = now
                self._dispatch(shard, message)
            if pinged > heard and now - pinged > self.socket_timeout:
                raise RedisTimeoutError("the pub/sub connection stopped answering")
            if now - heard >= self.ping_interval and now - pinged >= self.ping_interval:
                await pubsub.ping()
                pinged = now

    def _slot(self, channel: bytes) -> int:
        return self._redis.keyslot(channel) if isinstance(self._redis, RedisCluster) else 0

    def _dispatch(self, shard: _Shard, message: dict[str, Any]) -> None:
        kind = message.get("type")
        channel = message.get("channel")
        if not isinstance(channel, bytes):
            return
        if kind == "ssubscribe":
            if self._placed.get(channel) is shard:
                self._confirmed(channel)
            return
        if kind == "sunsubscribe":
            leaving = shard.leaving.get(channel, 0)
            if leaving > 1:
                shard.leaving[channel] = leaving - 1
            elif leaving:
                del shard.leaving[channel]
            elif channel in self._handlers and self._placed.get(channel) is shard:
                # Redis dropped the subscription: the channel's slot moved to another node.
                if channel in self._live:
                    self._live.discard(channel)
                    self._stale.add(channel)
                self._replace([channel])
            return
        if kind != "smessage":
            return
        entry = self._handlers.get(channel)
        if entry is None:
            return
        code, handler = entry
        try:
            event = _unpack(message["data"])
        except Exception:
            log.warning("bad_event", room=code)
            return
        try:
            handler(code, event)
        except Exception:
            log.exception("event_handler_failed", room=code)

    def _confirmed(self, channel: bytes) -> None:
        """Redis confirmed a subscription: wake subscribe(), and resync a room made again."""
        future = self._confirmations.pop(channel, None)
        if future is not None and not future.done():
            future.set_result(None)
        entry = self._handlers.get(channel)
        if entry is None:
            return
        self._live.add(channel)
        if channel not in self._stale:
            return
        self._stale.discard(channel)
        resync = self._resync
        if resync is not None:
            try:
                resync([entry[0]])
            except Exception:
                log.exception("resync_handler_failed", room=entry[0])

    async def _drop_pubsub(self, shard: _Shard) -> None:
        pubsub, shard.pubsub = shard.pubsub, None
        shard.leaving.clear()
        for channel in shard.channels & self._live:
            self._live.discard(channel)
            self._stale.add(channel)
        if pubsub is not None:
            with contextlib.suppress(Exception):
                await cast(Any, pubsub).aclose()  # untyped before redis-py 8.2
