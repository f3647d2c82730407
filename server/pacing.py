"""How often a room's progress is told: the configured interval, stretched while the node is busy.

Progress is most of what a node writes at a person's pace: a room of four moving every
two seconds hears a report of its standings after nearly every move at the shortest
interval (0.25 s), one frame to each member. A node short of CPU would rather tell the
standings less often than hold every move behind them: the acks are what a race's
fairness rests on, and a report that comes a little later still carries each player's
latest standing (a finished game is told at once, whatever the interval).

So once a second the node looks at how busy it is and sets the interval between the
shortest (``progress_interval_s``) and the longest (``progress_interval_max_s``): twice as
long when it is busy, half as long when it is idle again, with a band between the two
marks where it stays, so that the interval does not swing back and forth as the lighter
load of a longer interval is measured. Busy is either of:

- the node's own CPU time over the second, as a share of one core (an asyncio node runs
  on one core), at least ``BUSY_CPU``;
- the event loop's lag: how late its own timer ran, the median of the second's ticks, at
  least ``BUSY_LAG_S``. A node on a machine whose other processes take its core is late
  without using much CPU itself.

Idle is both under their lower marks (``IDLE_CPU``, ``IDLE_LAG_S``).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable

__all__ = [
    "BUSY_CPU",
    "BUSY_LAG_S",
    "IDLE_CPU",
    "IDLE_LAG_S",
    "MAX_PROGRESS_INTERVAL_S",
    "SAMPLE_S",
    "TICK_S",
    "ProgressPacer",
    "next_interval",
]

MAX_PROGRESS_INTERVAL_S = 10.0
"""The longest progress interval a node may be given (``solrace serve``): a standing told
later than this would leave a race's standings stale, and its end waits for the last."""
SAMPLE_S = 1.0
"""How often the interval is set again."""
TICK_S = 0.1
"""How often the loop's lag is read (the timer's lateness)."""
BUSY_CPU = 0.8
"""The share of a core the node's CPU time takes at which it is busy."""
IDLE_CPU = 0.6
"""The share under which it is idle (with the lag under ``IDLE_LAG_S``)."""
BUSY_LAG_S = 0.025
"""The loop's median lag at which the node is busy."""
IDLE_LAG_S = 0.005
"""The median lag under which it is idle (with the CPU under ``IDLE_CPU``)."""


def next_interval(
    interval: float, cpu: float, lag_s: float, shortest: float, longest: float
) -> float:
    """The interval after a second with ``cpu`` (share of a core) and ``lag_s`` (median)."""
    if shortest <= 0 or longest <= shortest:
        return shortest  # every move told, or an interval that never stretches
    if cpu >= BUSY_CPU or lag_s >= BUSY_LAG_S:
        return min(longest, interval * 2)
    if cpu <= IDLE_CPU and lag_s <= IDLE_LAG_S:
        return max(shortest, interval / 2)
    return interval


class ProgressPacer:
    """The progress interval of one node, set once a second from how busy the node is."""

    def __init__(
        self,
        shortest: float,
        longest: float,
        *,
        cpu: Callable[[], float] = time.process_time,
        on_change: Callable[[float], None] | None = None,
    ) -> None:
        self.shortest = shortest
        self.longest = longest if 0 < shortest < longest else shortest
        """The longest interval: a standing is told within it, whatever the load."""
        self.interval = shortest
        """The interval in force now."""
        self.cpu = 0.0
        """The node's CPU over the last second, as a share of one core."""
        self.lag_s = 0.0
        """The loop's median lag over the last second."""
        self._cpu_clock = cpu
        self._on_change = on_change
        self._timer: asyncio.TimerHandle | None = None
        self._lags: list[float] = []
        self._due = 0.0  # when the running tick was due (loop time)
        self._sampled_at = 0.0  # loop time and CPU time of the last sample
        self._sampled_cpu = 0.0

    @property
    def adapts(self) -> bool:
        """Whether the interval may stretch (a longest interval over the shortest)."""
        return self.shortest < self.longest

    def start(self) -> None:
        """Read the load from now on (nothing to do for an interval that never stretches)."""
        if not self.adapts or self._timer is not None:
            return
        loop = asyncio.get_running_loop()
        self._sampled_at = loop.time()
        self._sampled_cpu = self._cpu_clock()
        self._due = self._sampled_at + TICK_S
        self._timer = loop.call_at(self._due, self._tick)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self._lags.append(max(0.0, now - self._due))
        if now - self._sampled_at >= SAMPLE_S:
            self._sample(now)
        self._due = now + TICK_S
        self._timer = loop.call_at(self._due, self._tick)

    def _sample(self, now: float) -> None:
        spent = self._cpu_clock()
        self.cpu = (spent - self._sampled_cpu) / (now - self._sampled_at)
        self.lag_s = statistics.median(self._lags) if self._lags else 0.0
        self._lags.clear()
        self._sampled_at, self._sampled_cpu = now, spent
        interval = next_interval(self.interval, self.cpu, self.lag_s, self.shortest, self.longest)
        if interval != self.interval:
            self.interval = interval
            if self._on_change is not None:
                self._on_change(interval)
