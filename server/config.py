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
    max_write_buffer: int = 1 << 20
    """Bytes queued to a slow client before it is closed (it may resume)."""
    ping_interval_s: float | None = 20.0
    log_format: str = "json"
