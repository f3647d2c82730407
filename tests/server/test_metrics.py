"""The node's hand-kept move metrics render as prometheus-client's own would."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from solrace.server.metrics import HANDLING_BUCKETS, Metrics

OBSERVED = {
    "move": [0.00005, 0.0001, 0.0001001, 0.0004, 0.003, 0.5, 2.0],
    "hello": [0.00025, 0.02],
}


def samples(text: bytes, prefix: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text.decode()):
        for s in family.samples:
            if s.name.startswith(prefix) and not s.name.endswith("_created"):
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_handling_histogram_matches_prometheus_client() -> None:
    metrics = Metrics()
    reference = CollectorRegistry()
    histogram = Histogram(
        "solrace_handling_seconds", "x", ["type"], buckets=HANDLING_BUCKETS, registry=reference
    )
    for request_type, values in OBSERVED.items():
        for value in values:
            metrics.handled(request_type).observe(value)
            histogram.labels(request_type).observe(value)
    ours = samples(metrics.render(), "solrace_handling_seconds")
    theirs = samples(generate_latest(reference), "solrace_handling_seconds")
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        assert abs(ours[key] - value) < 1e-12, key
    # A value equal to a bound counts in that bound's bucket.
    assert ours[("solrace_handling_seconds_bucket", (("le", "0.0001"), ("type", "move")))] == 2


def test_moves_counter_renders_as_a_counter() -> None:
    metrics = Metrics()
    reference = CollectorRegistry()
    counter = Counter("solrace_moves", "x", registry=reference)
    for _ in range(5):
        metrics.moves.inc()
        counter.inc()
    assert samples(metrics.render(), "solrace_moves_total") == samples(
        generate_latest(reference), "solrace_moves_total"
    )
    assert metrics.registry.get_sample_value("solrace_moves_total") == 5
