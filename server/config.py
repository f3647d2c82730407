"""The server's settings, every limit with its default."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..protocol import Limits

__all__ = ["ServerConfig"]


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Settings of one node. Each limit is documented in docs/protocol.md."""

    host: str = "127.0.0.1"
    port: int = 8765
    data_dir: Path = Path("data")
    redis_url: str | None = None
    """The Redis backend's URL: ``redis://``, ``rediss://`` (TLS), or ``redis+cluster://`` and
    ``rediss+cluster://`` for any node of a Redis Cluster; None runs the embedded backend."""
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
    max_rooms_per_node: int = 2000
    """Rooms with a member on this node; creating or joining one more is refused."""
    max_players_per_room: int = 8
    """The highest ``max_players`` a room may ask for."""
    max_spectators_per_room: int = 32
    resume_grace_s: float = 60.0
    """How long a dropped player may resume before counting as resigned."""
    max_time_limit_s: int = 3600
    """The longest race time limit a room may set."""
    max_countdown_s: int = 30
    progress_interval_s: float = 0.25
    """The shortest time between two progress events of one room on this node: the
    standings its players reached in between are reported together, each player's latest
    (a finished game at once), so a room costs a few frames a second, not one per move
    and member. 0 reports every move."""
    daily_time_limit_s: int = 1800
    """The time limit of an attempt at the daily deal."""
    max_write_buffer: int = 1 << 20
    """Bytes queued to a slow client before it is closed (it may resume)."""
    ping_interval_s: float | None = 20.0
    log_format: str = "json"
