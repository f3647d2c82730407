"""Every protocol limit, with its default, and the token bucket behind the message rates."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VIOLATION_QUIET_S", "Limits", "RateLimiter"]


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
    """Sustained messages per second of one identity, all its connections together (a
    connection that has not said ``hello`` yet has a rate of its own)."""
    burst: int = 60
    """Messages an identity may send at once before its rate applies."""
    max_moves_per_game: int = 10000
    """Moves one player's game may hold (draws and undos count); one more is refused with
    ``move_limit``. A person's longest games stay far below it; a script at the message
    rate would otherwise fill an hour's race with 108,000, which every resume, restart,
    replay and board then reads."""
    max_rate_violations: int = 50
    """Refused-for-rate messages after which the connection is closed (1008), each within
    :data:`VIOLATION_QUIET_S` of the one before: a minute without one starts the count
    again, so that a long session's occasional refusals never add up to a close. A
    message sent once the last refusal's ``retry_after`` has passed is not counted if it
    is refused (:meth:`RateLimiter.violated`)."""


INF = float("inf")
VIOLATION_QUIET_S = 60.0
"""Seconds without a refused-for-rate message after which their count starts again."""


RETRY_SLACK_S = 0.001
"""How much sooner than its ``retry_after`` a client may come back and still have waited as
told: the error frame gives the wait rounded to the millisecond."""


class RateLimiter:
    """A token bucket: ``allow(now)`` says whether one more message fits. Pure: the caller passes time."""

    __slots__ = ("_last", "_rate", "_retry_at", "_size", "_tokens", "_violated_at", "violations")

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self._rate = rate
        self._size = float(burst)
        self._tokens = float(burst)
        self._last = now
        self.violations = 0
        self._violated_at = now
        # When the last refusal told the client to come back (none yet: the first refusal
        # counts, as the client was told nothing before it).
        self._retry_at = INF

    def violated(self, now: float, wait: float | None = None) -> int:
        """Count a message refused for the rate; return the count, which starts again
        after :data:`VIOLATION_QUIET_S` without one.

        With ``wait``, the seconds this refusal tells the client to wait: a refusal that
        comes once the wait told with the one before has passed is not counted. A client
        that waits as told (sends, is refused, waits ``retry_after``, sends again at
        once) is refused at most every other message and never closed for it; one that
        sends again before its wait is up is counting towards the close."""
        if wait is not None:
            waited = now >= self._retry_at
            self._retry_at = now + wait - RETRY_SLACK_S
            if waited:
                return self.violations
        if now - self._violated_at > VIOLATION_QUIET_S:
            self.violations = 0
        self._violated_at = max(self._violated_at, now)
        self.violations += 1
        return self.violations

    def _tokens_at(self, now: float) -> float:
        # Written out (no max, no min): every message of every connection comes here.
        elapsed = now - self._last
        if elapsed <= 0.0:  # a clock that steps back refills nothing
            return self._tokens
        tokens = self._tokens + elapsed * self._rate
        size = self._size
        return size if tokens > size else tokens

    def take(self, now: float, cost: int = 1) -> bool:
        """Take ``cost`` tokens if there are; if not, change nothing (no violation counted)."""
        tokens = self._tokens_at(now)
        if tokens < cost:
            return False
        self._tokens = tokens - cost
        self._last = max(self._last, now)
        return True

    def take_with(self, other: RateLimiter | None, now: float, cost: int = 1) -> float:
        """Take ``cost`` tokens from this bucket and ``other`` if both have them (0.0);
        else change nothing and return the seconds until both would have them."""
        tokens = self._tokens_at(now)
        missing = cost - tokens
        wait = 0.0 if missing <= 0 else (missing / self._rate if self._rate > 0 else INF)
        if other is not None:
            other_tokens = other._tokens_at(now)
            missing = cost - other_tokens
            if missing > 0:
                wait = max(wait, missing / other._rate if other._rate > 0 else INF)
        if wait > 0:
            return wait
        self._tokens = tokens - cost
        if now > self._last:
            self._last = now
        if other is not None:
            other._tokens = other_tokens - cost
            if now > other._last:
                other._last = now
        return 0.0

    def wait(self, now: float, cost: int = 1) -> float:
        """Seconds until ``cost`` tokens are there (0 if they are now); nothing is taken."""
        missing = cost - self._tokens_at(now)
        if missing <= 0:
            return 0.0
        return missing / self._rate if self._rate > 0 else float("inf")

    def full(self, now: float) -> bool:
        """Whether the bucket is full: no different from a new one."""
        return self._tokens_at(now) >= self._size

    def allow(self, now: float) -> bool:
        """Take a token if there is one; count a violation if not."""
        if self.take(now):
            return True
        self.violated(now)
        return False
