"""Prometheus metrics of one node, in a registry of its own."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]


class Metrics:
    """The node's counters, gauges and histograms."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.connections = Gauge("solrace_connections", "Open websocket connections", registry=r)
        self.rooms = Gauge("solrace_rooms", "Rooms with a member on this node", registry=r)
        self.races = Counter("solrace_races_started", "Races started", registry=r)
        self.moves = Counter("solrace_moves", "Moves applied and acked", registry=r)
        self.refused = Counter(
            "solrace_moves_refused", "Moves refused, by reason code", ["reason"], registry=r
        )
        self.errors = Counter("solrace_errors", "Error frames sent, by code", ["code"], registry=r)
        self.handling = Histogram(
            "solrace_handling_seconds",
            "Time to handle one request, by type",
            ["type"],
            buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0),
            registry=r,
        )
        self._handled: dict[str, Any] = {}

    def handled(self, request_type: str) -> Any:
        """The handling-time histogram of one request type (its child kept at hand)."""
        child = self._handled.get(request_type)
        if child is None:
            child = self._handled[request_type] = self.handling.labels(request_type)
        return child

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
