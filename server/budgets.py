"""Budgets that hold across connections: per identity and per client address.

A client that reconnects, or comes back as a fresh identity from the same address, must
find its budgets as it left them. So nothing here belongs to a connection:

- **Message rates** are token buckets kept by the node, one per identity and one per
  address (a connection that has not said hello yet has one of its own). A bucket is
  forgotten only once no connection uses it and it is full again, when a new one would be
  the same.
- **Counted budgets** (rooms created, joins, identities made, races and daily attempts
  started) go through the backend (:meth:`Backend.spend`), so that they hold across the
  nodes too.
- **Requests to the JSON API** (HTTP, ``/api/``) are a token bucket per address kept by
  the node, as the message rates are; a large answer counts as a request for each
  :data:`API_BYTES_PER_REQUEST` of it.
- **Connections and held rooms per address** are counted by the node.

The addresses are the keys of :func:`client_key`: an IPv6 address counts by its /64, so
that one machine cannot walk through its prefix.
"""

from __future__ import annotations

import functools
import ipaddress
import math
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..protocol import ErrorCode, ProtocolError, RateLimiter
from .config import ServerConfig

if TYPE_CHECKING:
    from websockets.datastructures import Headers

    from .backends import Backend
    from .session import Session

__all__ = [
    "API_BYTES_PER_REQUEST",
    "ROOM_SHARE_RETRY_AFTER_S",
    "Budget",
    "Guard",
    "client_address",
    "client_key",
    "forwarded_client",
    "is_trusted",
    "trusted_networks",
]

MIN_ROOMS_PER_ADDRESS = 10
API_BYTES_PER_REQUEST = 64 * 1024
"""Bytes of an answer of the JSON API that count as one request against the address's
``api_requests_per_second``: a board or a person's race is well under it."""
#: The ``retry_after`` of a room refused for ``room_share_per_address``: the address's
#: rooms free up when their members leave, at no time the node can tell, so it is a pause
#: long enough for a lobby to fill or a race to end.
ROOM_SHARE_RETRY_AFTER_S = 60.0


def client_key(address: str) -> str:
    """The key an address's budgets are kept under (an IPv6 address by its /64)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address or "local"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def forwarded_client(
    peer: str, forwarded_for: str | None, real_ip: str | None, trusted: tuple[str, ...]
) -> str:
    """The client's address: the peer's, or the one a trusted proxy reports.

    A proxy in ``trusted`` (addresses or CIDR networks) is believed: its ``X-Real-IP``, or
    else the right-most address of ``X-Forwarded-For`` that is not itself a trusted proxy.
    Any other peer is taken at its own address, whatever it claims.
    """
    if not is_trusted(peer, trusted):
        return peer
    if real_ip and _valid(real_ip):
        return real_ip.strip()
    hops = [hop.strip() for hop in (forwarded_for or "").split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _valid(hop):
            break
        if not is_trusted(hop, trusted):
            return hop
    return peer


def is_trusted(address: str, trusted: tuple[str, ...]) -> bool:
    """Whether ``address`` is a proxy of ``trusted`` (addresses or CIDR networks)."""
    networks = trusted_networks(trusted)
    if not networks:
        return False
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in network for network in networks)


@functools.lru_cache(maxsize=8)
def trusted_networks(
    trusted: tuple[str, ...],
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """The networks of ``trusted`` (addresses or CIDR networks), parsed once for a node's
    setting rather than at every connection; ValueError names an entry that is neither."""
    return tuple(ipaddress.ip_network(t.strip(), strict=False) for t in trusted)


def client_address(peer: str, headers: Headers | None, trusted: tuple[str, ...]) -> str:
    """The key of a request's client address (:func:`client_key`): the peer's, or what a
    trusted proxy reports in the request's ``headers``."""
    forwarded = ",".join(headers.get_all("X-Forwarded-For")) if headers is not None else None
    real_ip = headers.get("X-Real-IP") if headers is not None else None
    return client_key(forwarded_client(peer, forwarded, real_ip, trusted))


def _valid(address: str) -> bool:
    try:
        ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Budget:
    """One counted budget: its name (the error's ``reason``), count and period."""

    name: str
    count: int
    period_s: float
    subject: str  # "identity", "address" or "account": what it is counted for
    describe: str  # what is refused, for the error's sentence

    def key(self, session: Session, account: str | None = None) -> str:
        """The budget's key for the session's identity or address (or the account named)."""
        if self.subject == "account":
            subject = account
        else:
            subject = session.player_id if self.subject == "identity" else session.address
        return f"{self.name}:{subject or session.conn_id}"


REPLAY_MOVES_PER_MESSAGE = 100
"""Moves of a game rebuilt from its log that cost a message of the rates (about 0.4 ms of
CPU): an address's 300 messages a second buy at most about a tenth of a core of rebuilds."""


class _Bucket(RateLimiter):
    __slots__ = ("users",)

    def __init__(self, rate: float, burst: int, now: float) -> None:
        super().__init__(rate, burst, now)
        self.users = 0

    def owe(self, now: float, cost: float) -> None:
        """Take ``cost`` more tokens for what was done already, below empty if need be:
        the bucket's next takers wait until it has refilled past the debt."""
        self._tokens = self._tokens_at(now) - cost
        self._last = max(self._last, now)


class Guard:
    """A node's view of every budget."""

    def __init__(self, config: ServerConfig, backend: Backend) -> None:
        self.config = config
        self.backend = backend
        self._buckets: dict[str, _Bucket] = {}
        self.connections: Counter[str] = Counter()
        self._rooms: dict[str, Counter[str]] = {}  # by address: held rooms, by code
        b = config.budgets
        hour, minute, day = 3600.0, 60.0, 86400.0
        self.rooms = (
            Budget("rooms_per_hour", b.rooms_per_hour, hour, "identity", "made all the rooms"),
            Budget(
                "address_rooms_per_hour",
                b.address_rooms_per_hour,
                hour,
                "address",
                "made all the rooms",
            ),
        )
        self.joins = (
            Budget("joins_per_minute", b.joins_per_minute, minute, "identity", "joined or left"),
            Budget(
                "address_joins_per_minute",
                b.address_joins_per_minute,
                minute,
                "address",
                "joined or left",
            ),
        )
        self.identities = (
            Budget(
                "identities_per_hour",
                b.identities_per_hour,
                hour,
                "address",
                "made all the new players",
            ),
        )
        self.dailies = (
            Budget(
                "daily_starts_per_day",
                b.daily_starts_per_day,
                day,
                "identity",
                "started all the daily attempts",
            ),
            Budget(
                "address_daily_starts_per_day",
                b.address_daily_starts_per_day,
                day,
                "address",
                "started all the daily attempts",
            ),
        )
        self.logins = (
            Budget(
                "logins_per_minute",
                b.logins_per_minute,
                minute,
                "address",
                "tried all the passwords",
            ),
            Budget(
                "account_logins_per_hour",
                b.account_logins_per_hour,
                hour,
                "account",
                "tried all the passwords",
            ),
        )
        self.accounts = (
            Budget("accounts_per_day", b.accounts_per_day, day, "address", "made all the accounts"),
        )
        self.races = (
            Budget("races_per_hour", b.races_per_hour, hour, "identity", "started all the races"),
            Budget(
                "address_races_per_hour",
                b.address_races_per_hour,
                hour,
                "address",
                "started all the races",
            ),
        )

        self.winnable_races = (
            Budget(
                "address_winnable_races_per_hour",
                b.address_winnable_races_per_hour,
                hour,
                "address",
                "started all the races of winnable deals",
            ),
        )

    # -- message rates -------------------------------------------------------------------

    def _bucket(self, key: str, rate: float, burst: int, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(rate, burst, now)
        return bucket

    def bind(self, session: Session, now: float) -> None:
        """Give the session its address's bucket (at its first message, or on hello its
        identity's); it keeps using them until :meth:`unbind`."""
        if session.address_rate is None:
            b = self.config.budgets
            bucket = self._bucket(
                "a:" + session.address, b.address_messages_per_second, b.address_burst, now
            )
            bucket.users += 1
            session.address_rate = bucket
        if session.player_id is not None and session.rate is None:
            limits = self.config.limits
            bucket = self._bucket(
                "i:" + session.player_id, limits.messages_per_second, limits.burst, now
            )
            bucket.users += 1
            session.rate = bucket

    def owe_replay(self, session: Session, moves: int, now: float) -> None:
        """Charge the session's message rates (its identity's and its address's) for a game
        of ``moves`` moves rebuilt from its log for it: one message for each
        :data:`REPLAY_MOVES_PER_MESSAGE` moves, owed (the next messages wait). A resume or
        a sync that rebuilds a long game costs the node that much CPU on its event loop,
        and reconnecting again and again would otherwise buy it for one hello each."""
        cost = moves / REPLAY_MOVES_PER_MESSAGE
        if cost < 1:
            return
        for bucket in (session.rate, session.address_rate):
            if isinstance(bucket, _Bucket):
                bucket.owe(now, cost)

    def unbind(self, session: Session) -> None:
        """The connection is gone: its buckets may be forgotten once full."""
        for bucket in (session.rate, session.address_rate):
            if isinstance(bucket, _Bucket):
                bucket.users -= 1
        session.rate = session.address_rate = None

    def take(
        self, session: Session, now: float, cost: int = 1, *, count: bool = True
    ) -> float | None:
        """Take ``cost`` messages from the session's rates; None if taken, else the
        seconds until they would be (nothing is taken then, and with ``count`` the refusal
        counts against the connection)."""
        own = session.rate if session.rate is not None else session.limiter
        wait = own.take_with(session.address_rate, now, cost)
        if wait > 0:
            if count:
                session.limiter.violated(now, wait)
            return wait
        return None

    def take_connection(self, address: str, now: float) -> bool:
        """Take one new connection from the address's rate (``address``: a key of
        :func:`client_key`); whether it was taken."""
        b = self.config.budgets
        bucket = self._bucket(
            "c:" + address, b.address_connections_per_second, b.address_connection_burst, now
        )
        return bucket.take_with(None, now) <= 0

    def take_api(self, address: str, now: float) -> float | None:
        """Take one request to the JSON API from the address's rate (``address``: a key of
        :func:`client_key`); None if taken, else the seconds until it would be."""
        wait = self._api_bucket(address, now).take_with(None, now)
        return wait if wait > 0 else None

    def charge_api(self, address: str, now: float, size: int) -> None:
        """Spend, once an answer of the JSON API is made, one more request of the address's
        API rate for each :data:`API_BYTES_PER_REQUEST` bytes of it past the first: reading
        and writing out a large answer (a long race's replay) costs the node what as many
        small ones do, and until it is read the answer is held in the node's memory."""
        extra = size // API_BYTES_PER_REQUEST
        if extra > 0:
            self._api_bucket(address, now).owe(now, extra)

    def _api_bucket(self, address: str, now: float) -> _Bucket:
        b = self.config.budgets
        return self._bucket("h:" + address, b.api_requests_per_second, b.api_burst, now)

    def prune(self, now: float) -> int:
        """Forget the buckets no connection uses that are full again; how many went."""
        gone = [k for k, b in self._buckets.items() if b.users <= 0 and b.full(now)]
        for key in gone:
            del self._buckets[key]
        return len(gone)

    # -- counted budgets -----------------------------------------------------------------

    async def spend(
        self,
        session: Session,
        budgets: tuple[Budget, ...],
        now_ms: int,
        *,
        force: bool = False,
        account: str | None = None,
    ) -> None:
        """Spend one of each budget, all or none; raise OVER_BUDGET if one is spent.

        With ``force`` the budgets are spent even past their end (a leave is never
        refused, but it counts against the next join). ``account`` keys the budgets
        counted per account (a login's, by the account's name).
        """
        keys = [(b.key(session, account), b.count, b.period_s) for b in budgets]
        refused = await self.backend.spend(keys, now_ms, force=force)
        if refused is None:
            return
        index, retry_after = refused
        budget = budgets[index]
        whose = {"address": "this address", "account": "this account"}.get(budget.subject, "you")
        raise ProtocolError(
            ErrorCode.OVER_BUDGET,
            f"{whose} {'have' if whose == 'you' else 'has'} {budget.describe} "
            f"allowed for now: try again in {math.ceil(retry_after)} s",
            reason=budget.name,
            retry_after=retry_after,
        )

    # -- connections and rooms per address -----------------------------------------------

    def room_cap(self) -> int:
        """How many rooms the connections of one address may hold on this node."""
        share = self.config.budgets.room_share_per_address * self.config.max_rooms_per_node
        return max(MIN_ROOMS_PER_ADDRESS, int(share))

    def check_room(self, session: Session, code: str | None) -> None:
        """Refuse a room the session's address would hold past its share of the node's."""
        held = self._rooms.get(session.address)
        if held is None or (code is not None and code in held):
            return
        if len(held) >= self.room_cap():
            raise ProtocolError(
                ErrorCode.OVER_BUDGET,
                "this address holds all the rooms it may on this server: leave one first, "
                f"or try again in {ROOM_SHARE_RETRY_AFTER_S:g} s",
                reason="room_share_per_address",
                retry_after=ROOM_SHARE_RETRY_AFTER_S,
            )

    def hold(self, session: Session, code: str) -> None:
        """A connection of the session's address is a member of the room here."""
        self._rooms.setdefault(session.address, Counter())[code] += 1

    def release(self, session: Session, code: str) -> None:
        """That connection is no longer a member of it."""
        held = self._rooms.get(session.address)
        if held is None:
            return
        held[code] -= 1
        if held[code] <= 0:
            del held[code]
        if not held:
            del self._rooms[session.address]
