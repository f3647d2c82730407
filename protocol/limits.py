"""Every protocol limit, with its default, and the per-connection rate limiter."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits", "RateLimiter"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits on what a client may send. Each has a documented default (docs/protocol.md)."""

    max_frame_bytes: int = 4096
    """Largest frame a client may send; larger frames close the connection with 1009."""
    max_str_len: int = 256
    """Longest string anywhere in a frame."""
    max_array_len: int = 16
    """Most items in one array."""
    max_map_len: int = 16
    """Most keys in one map."""
    max_depth: int = 3
    """Deepest nesting of maps and arrays (the top-level map counts as 1)."""
    max_name_len: int = 24
    """Longest display name, in characters."""
    messages_per_second: float = 30.0
    """Sustained messages per second per connection."""
    burst: int = 60
    """Messages a connection may send at once before the rate applies."""
    max_rate_violations: int = 50
    """Refused-for-rate messages after which the connection is closed (1008)."""


class RateLimiter:
    """A token bucket: ``allow(now)`` says whether one more message fits. Pure: the caller passes time."""

    __slots__ = ("_last", "_rate", "_size", "_tokens", "violations")

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self._rate = rate
        self._size = float(burst)
        self._tokens = float(burst)
        self._last = now
        self.violations = 0

    def take(self, now: float) -> bool:
        """Take a token if there is one; if not, change nothing (no violation counted)."""
        elapsed = max(0.0, now - self._last)  # a clock that steps back refills nothing
        tokens = min(self._size, self._tokens + elapsed * self._rate)
        if tokens < 1.0:
            return False
        self._tokens = tokens - 1.0
        self._last = max(self._last, now)
        return True

    def allow(self, now: float) -> bool:
        """Take a token if there is one; count a violation if not."""
        if self.take(now):
            return True
        self.violations += 1
        return False
