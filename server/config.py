"""The server's settings, every limit with its default."""

from __future__ import annotations

import ast
import inspect
import itertools
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..protocol import Limits
from .backends.base import COMMIT_WINDOW_S

__all__ = ["Budgets", "ServerConfig", "field_docs"]


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass of this module, by field name."""
    tree = ast.parse(inspect.getsource(cls))
    docs: dict[str, str] = {}
    body = tree.body[0].body  # type: ignore[attr-defined]
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs


@dataclass(frozen=True, slots=True)
class Budgets:
    """What one identity, and one client address, may do: across all their connections.

    A budget is spent by the identity (the player id its token proves) or by the client
    address (the peer's address, or the one a trusted proxy reports; an IPv6 address
    counts by its /64), never by the connection: reconnecting renews nothing, and a fresh
    identity from the same address shares the address's budget. Each ``per_hour``,
    ``per_minute`` or ``per_day`` budget allows that many at once, then one more each
    ``period / count``. A request over a budget is refused with ``over_budget`` (``reason``
    names the budget, ``retry_after`` says in how many seconds it would be taken); one
    over the message rate with ``rate_limited``. Each field is a ``serve`` flag
    (``--budget-`` and its name with dashes) and a row of docs/protocol.md.
    """

    address_messages_per_second: float = 300.0
    """Frames per second from one address, all its connections and identities together
    (the identity's own rate is ``Limits.messages_per_second``)."""
    address_burst: int = 600
    """Frames an address may send at once before its rate applies."""
    heavy_request_cost: int = 10
    """Messages a leaderboard request or a ``revoke_tokens`` counts as, against both rates
    (each reads or writes the store at length)."""
    connections_per_address: int = 64
    """Open connections from one address; one more gets an ``over_budget`` error (retry
    after 1 s) and is closed with 1013, try again later."""
    address_connections_per_second: float = 20.0
    """New connections one address may open in a second (websockets and page requests
    together), counted as each is accepted; one more is answered ``429`` before its
    request is read. A page's files come over a dozen connections as it loads."""
    address_connection_burst: int = 120
    """New connections an address may open at once before its rate applies: a household
    or a class behind one address opening the page together."""
    rooms_per_hour: int = 60
    """Rooms one identity may create in an hour (a daily attempt's room included)."""
    address_rooms_per_hour: int = 300
    """Rooms one address may create in an hour."""
    room_share_per_address: float = 0.05
    """The share of ``max_rooms_per_node`` that the connections of one address may hold at
    once (at least 10 rooms). One more is refused with a ``retry_after`` of 60 s: a room
    is let go when its last member from the address leaves it, which no one can foretell."""
    joins_per_minute: int = 30
    """Joins and leaves of one identity in a minute, spectators' included."""
    address_joins_per_minute: int = 120
    """Joins and leaves of one address in a minute."""
    identities_per_hour: int = 30
    """New identities (a hello without a token) one address may make in an hour."""
    daily_starts_per_day: int = 20
    """Daily attempts one identity may start in a day (every game together)."""
    address_daily_starts_per_day: int = 200
    """Daily attempts one address may start in a day."""
    logins_per_minute: int = 10
    """Password checks (a login, ``change_password``, ``delete_account``) one address may
    ask for in a minute, right or wrong."""
    account_logins_per_hour: int = 30
    """Password checks of one account in an hour, from every address together, but for the
    addresses its password was given right from lately (its claim, its logins: the last
    8), which spend only their own ``logins_per_minute``: guesses from elsewhere cannot
    lock its owner out at home."""
    accounts_per_day: int = 5
    """Accounts one address may claim in a day."""
    races_per_hour: int = 60
    """Races one identity may start in an hour: its ``start``, or its ``ready`` that has
    every player ready (a ``rematch`` starts none). A race takes minutes, so friends who
    race again and again never meet it; a loop of start, resign and rematch does, and a
    winnable-only room's every race takes a certified deal that a solver worker must
    replace. Refused before the deal is taken."""
    address_races_per_hour: int = 240
    """Races one address may start in an hour: enough for 16 rooms (64 connections in
    fours) to race every four minutes. Once it is spent, the address takes four certified
    deals a minute, far fewer than one solver worker certifies."""
    address_winnable_races_per_hour: int = 60
    """Races of rooms of winnable deals only that one address may start in an hour: each
    takes a certified deal, which the solver workers replace, and a Rainbow Canfield deal
    takes them seconds (a batch up to about 10 s). Rooms of three addresses looping start,
    resign and rematch took them faster than that, and everyone else's race waited up to
    a minute for its deal; 60 is a race a minute, enough for several rooms racing for real.
    Refused before the deal is taken; a room of any deal is not counted."""
    api_requests_per_second: float = 10.0
    """Requests to the JSON API (``/api/``: each reads the store) from one address in a
    second, all its pages together; one more is answered ``429`` with ``Retry-After``. A
    page asks for one or two as it opens (the daily page its best board, a replay its race)."""
    api_burst: int = 60
    """Requests to the JSON API an address may make at once before its rate applies: a
    class behind one address opening the daily page together."""
    members_interval_s: float = 0.5
    """The shortest time between two ``members`` events of a room sent by one node to its
    members: a room whose members come and go fast gets the latest list, not every one."""

    @classmethod
    def lifted(cls) -> Budgets:
        """Budgets out of the way, for a benchmark or a load test against a node of one's
        own (its many clients come from one address); never for a node people use."""
        big = 1 << 30
        values: dict[str, Any] = {}
        for f in fields(cls):
            default: Any = f.default  # a float or an int, never MISSING: every field has one
            if f.name != "heavy_request_cost":
                values[f.name] = 0.0 if f.name == "members_interval_s" else type(default)(big)
        return cls(**values)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Settings of one node. Each limit is documented in docs/protocol.md."""

    host: str = "127.0.0.1"
    port: int = 8765
    data_dir: Path = Path("data")
    redis_url: str | None = None
    """The Redis backend's URL: ``redis://``, ``rediss://`` (TLS), or ``redis+cluster://`` and
    ``rediss+cluster://`` for any node of a Redis Cluster; None runs the embedded backend.
    With TLS, ``?ssl_ca_certs=FILE`` names a CA of one's own to verify Redis by, and
    ``ssl_certfile`` and ``ssl_keyfile`` the node's client certificate."""
    redis_socket_timeout_s: float = 2.0
    """The longest wait for a Redis reply; also how long a pub/sub ping may go unanswered."""
    redis_connect_timeout_s: float = 1.0
    """The longest wait to open a connection to Redis."""
    redis_retries: int = 1
    """Retries of a Redis command after a timeout or a lost connection, so that a request
    is refused as ``unavailable`` within about ``redis_socket_timeout_s * (retries + 1)``."""
    redis_max_connections: int = 64
    """Command connections to Redis (to each primary of a cluster)."""
    redis_pool_timeout_s: float = 2.0
    """How long a command waits for a free connection (one Redis; a cluster does not wait)."""
    redis_ready_timeout_s: float = 0.5
    """How long ``/readyz`` waits for Redis to answer a PING."""
    redis_poll_interval_s: float = 1.0
    """How long one read of the pub/sub connection waits for an event."""
    redis_ping_interval_s: float = 5.0
    """Silence on a pub/sub connection before it is pinged to tell a quiet one from a dead one."""
    redis_subscribe_timeout_s: float = 2.0
    """How long joining a room waits for Redis to confirm the room's subscription."""
    redis_reconnect_delay_s: float = 0.05
    """The first pause before a lost pub/sub connection is opened again (it then doubles)."""
    redis_max_reconnect_delay_s: float = 2.0
    """The longest pause between attempts to open a lost pub/sub connection."""
    redis_room_ttl_s: float | None = 24 * 3600.0
    """A room untouched this long is dropped from Redis with its logs; None keeps it."""
    limits: Limits = field(default_factory=Limits)
    budgets: Budgets = field(default_factory=Budgets)
    trusted_proxies: tuple[str, ...] = ()
    """Addresses or networks (CIDR) of proxies whose ``X-Forwarded-For`` / ``X-Real-IP``
    names the client; a request from any other peer is taken at its own address."""
    allowed_origins: tuple[str, ...] = ()
    """Origins (``https://host[:port]``) whose pages may open a websocket, besides the
    request's own host; a browser's request from any other is refused (403)."""
    metrics_host: str = "127.0.0.1"
    """Where the metrics and admin listener listens (with ``metrics_port``)."""
    metrics_port: int | None = None
    """A second port for ``/metrics`` and the admin API; None: no such listener."""
    metrics_token: str | None = None
    """A bearer token that opens ``/metrics`` on the main port too; None: it is not served
    there."""
    admin_token: str | None = None
    """The bearer token of the admin API (on the metrics listener); None: no admin API."""
    guest_ttl_s: float = 30 * 24 * 3600.0
    """A guest identity not seen for this long is forgotten (its token stops working)."""
    password_hashers: int = 2
    """Threads of a node that hash passwords (argon2id, 64 MiB each), off the event loop;
    more password checks at once wait their turn."""
    max_connections: int = 30000
    """TCP connections the node holds at once (websockets, page requests and handshakes
    under way together), lowered to what its limit of open files allows (``solrace
    serve`` raises that to the system's most); one more is answered ``503`` and closed
    before its request is read."""
    max_rooms_per_node: int = 2000
    """Rooms with a member on this node; creating or joining one more is refused."""
    max_players_per_room: int = 8
    """The highest ``max_players`` a room may ask for."""
    max_spectators_per_room: int = 32
    spectators_default: str = "after"
    """The spectator setting of a room whose creator names none (or sends the old ``true``):
    ``live``, ``delayed``, ``after`` or ``off``. A room's code is a link anyone may be sent,
    and ``after`` is the one setting that shows no board of a running race."""
    winnable_default: bool = True
    """Whether a room of a game the solver certifies (Canfield, Rainbow Canfield, American
    Canister) deals only certified-winnable deals unless its creator says otherwise."""
    race_retention_days: float = 30.0
    """How long a finished race is kept for its replay (every move with its time); 0 keeps
    none."""
    daily_winnable: bool = True
    """Whether the daily deal of a game the solver certifies is certified winnable (the
    first of the day's candidate seeds it certifies), its par revealed with its seed."""
    deal_pool_size: int = 8
    """Certified-winnable deals kept warm per game (in the store, shared by the nodes), so
    that a winnable-only race starts at once; 0 certifies each when a race starts."""
    solver_budget_s: float = 2.0
    """CPU seconds the solver spends on one deal before giving up on it as unknown."""
    solver_workers: int = 1
    """Worker processes that certify deals (each a Python process of its own)."""
    max_spectator_delay_s: int = 300
    """The longest ``spectator_delay`` a room may ask for (the shortest is 10 seconds)."""
    resume_grace_s: float = 60.0
    """How long a dropped player may resume before counting as resigned."""
    node_silent_s: float = 15.0
    """Where nodes share Redis: how long a node goes unnoted before the others take it
    for dead and let go of the members it held (each then has the resume grace)."""
    max_time_limit_s: int = 3600
    """The longest race time limit a room may set."""
    max_countdown_s: int = 30
    commit_window_s: float = COMMIT_WINDOW_S
    """How long the first write of a group waits for others before the group goes to the
    store, and with it the acks of its moves (0: at the end of the event loop's pass):
    one SQLite commit on the embedded backend, one round trip on Redis. Longer windows
    cost less a move at a person's pace."""
    progress_interval_s: float = 0.25
    """The shortest time between two progress events of one room on this node: the
    standings its players reached in between are reported together, each player's latest
    (a finished game at once), so a room costs a few frames a second, not one per move
    and member. 0 reports every move."""
    progress_interval_max_s: float = 1.0
    """The longest the progress interval stretches to while the node is busy (its CPU
    near a whole core, or its event loop late): twice as long each busy second, half as
    long each idle one, so that a node near its capacity spends its CPU on the moves'
    acks rather than on telling standings more often. At most ``progress_interval_s``:
    never stretched."""
    daily_time_limit_s: int = 1800
    """The time limit of an attempt at the daily deal."""
    daily_account_age_days: int = 1
    """A new account's daily attempts are ranked from this many days (UTC dates) after the
    day it was made (1: from its second day); before, they are kept, unranked."""
    daily_flag_median_ms: int = 150
    """A person's ranked daily attempt with nine gaps between moves in ten (the median, and
    more) under this many ms, or an average gap under it (over ``daily_flag_min_moves``
    moves or more), is flagged: kept off the board until an operator reviews it. Quick
    bursts of cards the page sends home by itself are not enough. 0 flags none."""
    daily_flag_min_moves: int = 20
    """The fewest moves an attempt needs before its pace can flag it."""
    daily_ranked_per_address: int = 3
    """Attempts at a day's deal of a game that may be ranked, from the accounts at one
    client address together (an IPv6 address counts by its /64); one more is played and
    kept, unranked (``address_limit``). More than 1: a household, or a mobile carrier's
    customers, share an address. A ranked attempt that starts after another account's
    attempt at the deal from the same address is flagged for review. Clients on the
    node's own machine (loopback) are not counted. 0 turns these rules off."""
    max_write_buffer: int = 1 << 20
    """Bytes waiting to be sent to one client before it is closed with 1013 (it may
    resume)."""
    listen_backlog: int = 1024
    """Connections the kernel keeps waiting for the node to accept them (capped by the
    system's ``net.core.somaxconn``): after a restart every client reconnects at once,
    and a short queue drops their handshakes, which then wait seconds to be sent again."""
    ping_interval_s: float | None = 20.0
    """Seconds a connection may send nothing before the server pings it (None: never);
    a client that sends anything (a move, say) is never pinged."""
    ping_timeout_s: float = 20.0
    """Seconds after a ping without a byte from the client before it is closed (1011)."""
    log_format: str = "json"
