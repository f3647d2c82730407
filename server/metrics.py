"""Prometheus metrics of one node, in a registry of its own.

The two metrics touched on every move (the move counter and the handling-time
histogram) are kept as plain numbers and read by a collector at scrape time:
prometheus-client's own take a lock and check the process id on each update, which
costs more than the rest of a move's bookkeeping.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

__all__ = ["Count", "Metrics", "Timings"]

HANDLING_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0)


class Count:
    """A counter that only goes up, read at scrape time."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def inc(self, amount: int = 1) -> None:
        self.value += amount


class Timings:
    """One label's histogram: a count per bucket (the last one past every bound) and a sum."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        # bisect_left: a value equal to a bound falls in that bound's bucket (``le``).
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    def cumulative(self) -> list[tuple[str, float]]:
        """The ``le`` buckets of the exposition format, each counting all below it."""
        out = []
        running = 0
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += count
            out.append((floatToGoString(bound), float(running)))  # type: ignore[no-untyped-call]
        return out


class _HotCollector(Collector):
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self.metrics
        yield CounterMetricFamily("solrace_moves", "Moves applied and acked", m.moves.value)
        doors = m.doors
        if doors is not None:
            held, full, address = doors()
            yield GaugeMetricFamily(
                "solrace_tcp_connections",
                "TCP connections held: websockets, page requests and handshakes under way",
                held,
            )
            refused = CounterMetricFamily(
                "solrace_connections_refused",
                "Connections refused at their accept: the node full (503), or too many"
                " from one address (429)",
                labels=["reason"],
            )
            refused.add_metric(["full"], full)
            refused.add_metric(["address"], address)
            yield refused
        handling = HistogramMetricFamily(
            "solrace_handling_seconds", "Time to handle one request, by type", labels=["type"]
        )
        for request_type, timings in sorted(m._handled.items()):
            handling.add_metric([request_type], timings.cumulative(), timings.total)
        yield handling


class Metrics:
    """The node's counters, gauges and histograms."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        # The process's CPU seconds and resident memory (process_cpu_seconds_total,
        # process_resident_memory_bytes), which a load test reads to size a node.
        ProcessCollector(registry=r)
        # The cyclic collector's runs by generation (python_gc_collections_total): how
        # often the collections that stall every move come (their pauses are logged,
        # ``gc_pause``).
        GCCollector(registry=r)
        self.connections = Gauge("solrace_connections", "Open websocket connections", registry=r)
        self.rooms = Gauge("solrace_rooms", "Rooms with a member on this node", registry=r)
        self.progress_interval = Gauge(
            "solrace_progress_interval_seconds",
            "The progress interval in force: the shortest, or longer while the node is busy",
            registry=r,
        )
        self.races = Counter("solrace_races_started", "Races started", registry=r)
        self.moves = Count()
        self.refused = Counter(
            "solrace_moves_refused", "Moves refused, by reason code", ["reason"], registry=r
        )
        self.errors = Counter("solrace_errors", "Error frames sent, by code", ["code"], registry=r)
        self._handled: dict[str, Timings] = {}
        self.doors: Callable[[], tuple[int, int, int]] | None = None
        """Connections held, refused as the node was full, refused for their address."""
        r.register(_HotCollector(self))

    def handled(self, request_type: str) -> Timings:
        """The handling-time histogram of one request type."""
        timings = self._handled.get(request_type)
        if timings is None:
            timings = self._handled[request_type] = Timings(HANDLING_BUCKETS)
        return timings

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
