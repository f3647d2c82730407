"""A busy node tells standings less often, down to the longest interval, and goes back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from conftest import TIMEOUT, ServerFactory
from e2e_support import standings, two_racing

from solrace.server.pacing import (
    BUSY_CPU,
    BUSY_LAG_S,
    IDLE_CPU,
    IDLE_LAG_S,
    ProgressPacer,
    next_interval,
)


@pytest.mark.parametrize(
    ("interval", "cpu", "lag", "after"),
    [
        (0.25, BUSY_CPU, 0.0, 0.5),  # busy by CPU: twice as long
        (0.25, 0.0, BUSY_LAG_S, 0.5),  # busy by a late loop: the same
        (0.5, 1.0, 0.0, 1.0),
        (1.0, 1.0, 0.1, 1.0),  # never past the longest
        (1.0, IDLE_CPU, IDLE_LAG_S, 0.5),  # idle: half as long
        (0.5, 0.0, 0.0, 0.25),
        (0.25, 0.0, 0.0, 0.25),  # never under the shortest
        (0.5, (IDLE_CPU + BUSY_CPU) / 2, 0.0, 0.5),  # between the marks: as it is
        (0.5, 0.1, (IDLE_LAG_S + BUSY_LAG_S) / 2, 0.5),
    ],
)
def test_the_interval_doubles_when_busy_halves_when_idle_and_holds_between(
    interval: float, cpu: float, lag: float, after: float
) -> None:
    assert next_interval(interval, cpu, lag, 0.25, 1.0) == after


@pytest.mark.parametrize(("shortest", "longest"), [(0.0, 1.0), (0.25, 0.25), (0.5, 0.25)])
def test_an_interval_that_may_not_stretch_stays_the_shortest(
    shortest: float, longest: float
) -> None:
    assert next_interval(shortest, 1.0, 1.0, shortest, longest) == shortest
    pacer = ProgressPacer(shortest, longest)
    assert not pacer.adapts and pacer.longest == shortest and pacer.interval == shortest


async def _burn(until: Callable[[], bool], timeout: float) -> None:
    """Hold the event loop (150 ms of every 160) until ``until()``. Each hold is longer than
    the pacer's tick, so its timer runs late (about 60 ms) whatever share of a core the
    process gets: on a machine busy with other work the CPU alone may not say busy."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not until():
        assert loop.time() < end, "the node never took itself for busy"
        stop = time.perf_counter() + 0.15
        while time.perf_counter() < stop:
            pass
        await asyncio.sleep(0.01)


async def _idle(until: Callable[[], bool], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not until():
        assert loop.time() < end, "the node never took itself for idle again"
        await asyncio.sleep(0.05)


async def test_a_busy_loop_stretches_the_interval_to_the_longest_and_an_idle_one_brings_it_back() -> (
    None
):
    changes: list[float] = []
    pacer = ProgressPacer(0.25, 1.0, on_change=changes.append)
    pacer.start()
    try:
        await _burn(lambda: pacer.interval == 1.0, timeout=15)
        assert changes == [0.5, 1.0]  # a step a busy second
        assert pacer.cpu >= BUSY_CPU or pacer.lag_s >= BUSY_LAG_S
        await _idle(lambda: pacer.interval == 0.25, timeout=30)
        assert changes[-2:] == [0.5, 0.25]
    finally:
        pacer.stop()


async def test_on_a_busy_node_two_moves_in_one_stretched_interval_are_told_in_one_report(
    start_server: ServerFactory,
) -> None:
    """At the shortest interval (0.25 s) two moves 0.3 s apart are two reports; a node
    that is busy holds the second back for the rest of its longer interval. Its metrics
    say which interval is in force."""
    server, fast, rival = await two_racing(
        start_server, progress_interval_s=0.25, progress_interval_max_s=1.0
    )
    node = server.node
    try:
        await asyncio.sleep(0.3)  # the start's report is out: the next one is due at once
        await _burn(lambda: node.pacer.interval == 1.0, timeout=15)
        assert b"solrace_progress_interval_seconds 1.0" in node.metrics.render()
        # The first idle second may halve the interval: 0.5 s is still longer than the gap.
        loop = asyncio.get_running_loop()
        await fast.move("d")
        heard: list[tuple[float, dict[str, Any]]] = []

        async def hear(moves: int) -> None:
            async with asyncio.timeout(TIMEOUT):
                while not heard or heard[-1][1]["moves"] < moves:
                    event = await rival.next_event("progress")
                    heard.extend((loop.time(), s) for s in standings([event], fast.player_id))

        await hear(1)
        first_at = heard[-1][0]
        await asyncio.sleep(0.3 - (loop.time() - first_at))
        assert node.pacer.interval >= 0.5
        await fast.move("u")
        await hear(2)
        assert [s["moves"] for _, s in heard] == [1, 2]
        assert heard[-1][0] - first_at >= 0.45, "the second move was told at once"
        await _idle(lambda: node.pacer.interval == 0.25, timeout=30)
        assert b"solrace_progress_interval_seconds 0.25" in node.metrics.render()
    finally:
        await fast.close()
        await rival.close()
