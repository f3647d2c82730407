"""The protocol's limits and the per-connection rate limiter, with explicit times."""

from __future__ import annotations

import dataclasses

import pytest

from solrace.protocol import Limits, RateLimiter
from solrace.protocol.limits import VIOLATION_QUIET_S


def test_the_documented_defaults() -> None:
    assert dataclasses.asdict(Limits()) == {
        "max_frame_bytes": 4096,
        "max_str_len": 256,
        "max_array_len": 16,
        "max_map_len": 16,
        "max_depth": 3,
        "max_name_len": 24,
        "messages_per_second": 30.0,
        "burst": 60,
        "max_moves_per_game": 10000,
        "max_rate_violations": 50,
    }


def test_limits_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Limits().burst = 1  # type: ignore[misc]


def test_a_burst_passes_at_once_and_no_more() -> None:
    limiter = RateLimiter(rate=2.0, burst=5, now=100.0)
    assert [limiter.allow(100.0) for _ in range(5)] == [True] * 5
    assert limiter.violations == 0
    assert limiter.allow(100.0) is False
    assert limiter.violations == 1


def test_tokens_refill_at_the_rate() -> None:
    limiter = RateLimiter(rate=2.0, burst=3, now=0.0)
    for _ in range(3):
        assert limiter.allow(0.0)
    assert not limiter.allow(0.25)  # half a token
    assert limiter.allow(0.5)  # one whole token: 0.5 s at 2 per second
    assert not limiter.allow(0.5)
    assert limiter.allow(1.0) and not limiter.allow(1.0)
    assert limiter.allow(2.0) and limiter.allow(2.0) and not limiter.allow(2.0)


def test_part_tokens_add_up_across_refusals() -> None:
    limiter = RateLimiter(rate=4.0, burst=1, now=0.0)
    assert limiter.allow(0.0)
    assert not limiter.allow(0.125)  # half a token
    assert limiter.allow(0.25)  # the other half: refusals keep what had refilled


def test_the_bucket_holds_no_more_than_the_burst() -> None:
    limiter = RateLimiter(rate=10.0, burst=4, now=0.0)
    assert limiter.allow(0.0)
    results = [limiter.allow(3600.0) for _ in range(5)]
    assert results == [True, True, True, True, False]


def test_a_steady_sender_at_the_rate_is_never_refused() -> None:
    limiter = RateLimiter(rate=8.0, burst=1, now=0.0)
    assert all(limiter.allow(i / 8) for i in range(1000))
    assert limiter.violations == 0


def test_violations_count_every_refusal_and_never_reset() -> None:
    limiter = RateLimiter(rate=1.0, burst=2, now=0.0)
    assert limiter.allow(0.0) and limiter.allow(0.0)
    for _ in range(7):
        assert not limiter.allow(0.0)
    assert limiter.violations == 7
    assert limiter.allow(10.0)
    assert limiter.violations == 7
    assert limiter.allow(10.0) and not limiter.allow(10.0)
    assert limiter.violations == 8


def test_a_clock_that_steps_back_neither_refills_nor_drains() -> None:
    limiter = RateLimiter(rate=1.0, burst=2, now=10.0)
    assert limiter.allow(10.0)
    assert limiter.allow(5.0)  # the token left is still there
    assert not limiter.allow(5.0)
    assert not limiter.allow(10.5)  # no refill for the time already counted
    assert limiter.allow(11.0)


def test_the_default_limits_make_a_working_limiter() -> None:
    limits = Limits()
    limiter = RateLimiter(limits.messages_per_second, limits.burst, now=0.0)
    assert sum(limiter.allow(0.0) for _ in range(limits.burst + 10)) == limits.burst
    assert limiter.violations == 10
    assert sum(limiter.allow(1.0) for _ in range(100)) == int(limits.messages_per_second)


def test_take_counts_no_violation_and_agrees_with_allow() -> None:
    limiter = RateLimiter(rate=1.0, burst=2, now=0.0)
    twin = RateLimiter(rate=1.0, burst=2, now=0.0)
    for now in (0.0, 0.0, 0.0, 0.5, 1.0, 1.0, 3.0):
        assert limiter.take(now) is twin.allow(now)
    assert limiter.violations == 0
    assert twin.violations == 3


def test_take_with_takes_from_both_buckets_or_from_neither() -> None:
    own = RateLimiter(rate=1.0, burst=2, now=0.0)
    shared = RateLimiter(rate=4.0, burst=1, now=0.0)
    assert own.take_with(shared, 0.0) == 0.0  # one token each
    # The shared bucket is empty: a quarter second until it refills; nothing is taken.
    assert own.take_with(shared, 0.0) == pytest.approx(0.25)
    assert own.wait(0.0) == 0.0  # own still holds its second token
    assert own.take_with(shared, 0.25) == 0.0
    # Now own holds half a token (half a second to go), the shared one a whole: the
    # longer wait counts.
    assert own.take_with(shared, 0.5) == pytest.approx(0.5)
    assert shared.wait(0.5) == 0.0  # the refusal took nothing from it either
    assert own.take_with(None, 1.25) == 0.0  # no shared bucket: own alone
    assert own.take_with(None, 1.25, cost=3) == pytest.approx(2.75)  # 0.25 held, 2.75 to go


def test_take_with_a_bucket_of_no_rate_waits_for_ever() -> None:
    own = RateLimiter(rate=0.0, burst=1, now=0.0)
    assert own.take_with(None, 0.0) == 0.0
    assert own.take_with(None, 100.0) == float("inf")


def test_refusals_count_again_after_a_quiet_minute() -> None:
    """A flood's refusals add up to a close; a long session's occasional ones never do."""
    limiter = RateLimiter(rate=1.0, burst=1, now=0.0)
    now = 0.0
    for _ in range(200):  # one refusal every 70 s, over four hours
        now += VIOLATION_QUIET_S + 10
        assert limiter.allow(now) and not limiter.allow(now)
    assert limiter.violations == 1
    for step in range(1, 11):  # then a refusal every 50 s: each counts
        now += VIOLATION_QUIET_S - 10
        assert limiter.allow(now) and not limiter.allow(now)
        assert limiter.violations == 1 + step


def test_a_client_that_waits_as_told_is_never_counted_and_one_that_does_not_is() -> None:
    """A client that sends, is refused, waits the refusal's ``retry_after`` and sends
    again at once, over and over, was closed with 1008 after 50 refusals in two seconds
    though it did all it was told."""
    obeying = RateLimiter(rate=10.0, burst=5, now=0.0)
    now, refused = 0.0, 0
    for _ in range(2000):
        wait = obeying.take_with(None, now)
        if wait > 0:
            refused += 1
            obeying.violated(now, wait)
            now += round(wait, 3)  # as the error frame gives it
    assert refused > 900 and obeying.violations == 1  # the first: it was told nothing before
    eager = RateLimiter(rate=10.0, burst=5, now=0.0)
    now = 0.0
    for step in range(200):
        now = step * 0.01  # ten times the rate: back long before the time it was told
        wait = eager.take_with(None, now)
        if wait > 0:
            eager.violated(now, wait)
    assert eager.violations > 140  # of about 175 refused: all but those at its time
