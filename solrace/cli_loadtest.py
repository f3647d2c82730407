"""``solrace loadtest``: bots at a person's pace against a server (see solrace.client.loadtest)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

__all__ = ["register"]


def _seconds(text: str) -> float:
    """A duration: ``90``, ``90s``, ``5m``, ``1h`` or ``500ms``."""
    match = re.fullmatch(r"\s*([0-9.]+)\s*(ms|s|m|h)?\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (say 2s, 5m, 500ms)")
    value = float(match.group(1))
    return value * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}[match.group(2)]


def register(subparsers: Any) -> None:
    """Add the ``loadtest`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "loadtest",
        help="bots that play real games at a person's pace, to size a deployment",
        description=(
            "Bots that play real games at a person's pace against a server, reporting "
            "moves' round trips, errors, and the server's RSS and CPU. See "
            "docs/operations.md, 'Sizing a deployment'."
        ),
    )
    parser.add_argument("url", help="the server's websocket URL (ws://HOST:PORT/)")
    parser.add_argument("--players", type=int, required=True, help="bots that race")
    parser.add_argument("--pace", type=_seconds, default=2.0, help="a move every (2s)")
    parser.add_argument("--duration", type=_seconds, default=300.0, help="how long (5m)")
    parser.add_argument("--rooms-of", type=int, default=4, help="players a room (4)")
    parser.add_argument("--spectators", type=int, default=0, help="spectating bots (0)")
    parser.add_argument("--processes", type=int, default=1, help="processes to drive them (1)")
    parser.add_argument("--variant", default="canfield", help="the game (canfield)")
    parser.add_argument(
        "--illegal-rate", type=float, default=0.03, help="share of moves not legal (0.03)"
    )
    parser.add_argument("--ramp", type=_seconds, default=10.0, help="connect them over (10s)")
    parser.add_argument(
        "--joining",
        type=int,
        default=64,
        help="bots joining at once at most, over all processes: the ramp goes no faster "
        "than the server takes them (64; 0: the ramp's schedule alone)",
    )
    parser.add_argument(
        "--metrics",
        metavar="URL",
        help="the node's /metrics (its metrics port), to read its RSS and CPU",
    )
    parser.add_argument(
        "--addresses",
        action="store_true",
        help="give each bot an X-Real-IP of its own (the node must list this machine in "
        "--trusted-proxy): the budgets then count each as one person",
    )
    parser.add_argument(
        "--winnable",
        action="store_true",
        help="rooms ask for certified winnable deals (off: rooms that all start at once "
        "would measure the node's warm pool of deals, not the node)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=_loadtest)


def _loadtest(args: argparse.Namespace) -> int:
    from .client.loadtest import LoadTest, as_json, format_table, run_load_test

    if args.players < 1 or args.rooms_of < 1 or args.processes < 1:
        print(
            "solrace loadtest: --players, --rooms-of and --processes are at least 1",
            file=sys.stderr,
        )
        return 2
    if args.joining < 0:
        print("solrace loadtest: --joining is 0 (no bound) or more", file=sys.stderr)
        return 2
    metrics = args.metrics
    if metrics and not metrics.rstrip("/").endswith("/metrics"):
        metrics = metrics.rstrip("/") + "/metrics"
    test = LoadTest(
        url=args.url,
        players=args.players,
        pace_s=args.pace,
        winnable=args.winnable,
        duration_s=args.duration,
        rooms_of=args.rooms_of,
        spectators=args.spectators,
        processes=args.processes,
        variant=args.variant,
        illegal_rate=args.illegal_rate,
        addresses=args.addresses,
        metrics_url=metrics,
        ramp_s=args.ramp,
        joining=args.joining,
    )

    def progress(figures: dict[str, Any]) -> None:
        rss = figures["server_rss_mib"]
        cpu = figures["server_cpu"]
        line = (
            f"\r{figures['connected']:>7,} players  {figures['moves_per_s']:>8,.0f} moves/s  "
            f"p50 {figures['p50_ms']:>7} p95 {figures['p95_ms']:>7} p99 {figures['p99_ms']:>7} ms"
            f"  refused {figures['refused']:>5}"
            + (f"  server {rss:.0f} MiB" if rss is not None else "")
            + (f" {cpu:.2f} cpu" if cpu is not None else "")
        )
        print(line, end="", file=sys.stderr, flush=True)

    report, seconds = run_load_test(test, on_second=progress)
    print(file=sys.stderr)
    print(as_json(report, seconds) if args.json else format_table(report))
    if report.moves == 0:
        why = ", ".join(f"{code} {count}" for code, count in sorted(report.errors.items()))
        print(
            f"solrace loadtest: no move was played at {args.url} ({why or 'no player connected'})",
            file=sys.stderr,
        )
        return 1
    return 0
