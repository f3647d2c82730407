"""Soak: the load test at half a node core's capacity for a long while; RSS and p99 a minute.

One node (pinned to one core, run as ``bench/capacity.py`` runs its nodes: like ``solrace
serve`` with the budgets and message rates lifted, the room cap raised to the load's
rooms, and ``winnable_default=False, daily_winnable=False``, a solver worker's CPU not
being what is measured) and ``solrace loadtest``'s bots (pinned to the other core) at a
person's pace: a move every 2 s with jitter, in rooms of 4 that race and deal again.
Bots playing at random rarely finish a game, so a race ends at its time limit
(``--race-minutes``, 5) and the room deals again, as people's rooms do every few
minutes. A running race's moves are held in memory until it ends, so races of an hour
(the loadtest's default) grow the RSS with every move of that hour. ``--players`` sets the load; without it, ``bench/capacity.py``'s search runs first
on the same backend and the soak runs at half its figure.

Each minute (``--interval``) after the ramp, a line on stderr: the node's RSS at the
minute's end, the move round trip's p50 and p99 over the minute, moves/s, errors (any
code but the refusals the bots' own play earns, as in bench/capacity.py), and the node's
and the load's CPU. The last line of stdout holds ``key=value`` pairs: ``rss_growth_pct``
(the RSS at the end against the RSS at the end of minute 5, or of the first interval in
a run of 5 minutes or less: ``rss_base_minute`` says which), ``p99_first_ms`` and
``p99_last_ms`` (the first and the last minute's), and more.

    python3 bench/soak.py [--players N] [--minutes 30] [--backend embedded|redis]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import capacity
from capacity import (
    PACE_S,
    ROOMS_OF,
    PaceLoad,
    Redis,
    harness,
    loadavg,
    progress,
    split_errors,
    start_node,
)

from solrace.client.loadtest import LoadTest, Report

BASE_MINUTE = 5  # RSS growth is counted from the end of this minute


async def half_capacity(args: argparse.Namespace, workdir: Path, redis: Redis | None) -> int:
    """Half of what bench/capacity.py's search finds on this backend."""
    found = await capacity.search(args.backend, args, workdir, redis)
    best = found.best
    if best is None:
        raise SystemExit("the capacity search found no load that holds")
    progress(f"capacity {best.players:,} players: the soak runs {best.players // 2:,}")
    return capacity.rounded(best.players / 2)


async def soak(args: argparse.Namespace, workdir: Path, redis: Redis | None) -> str:
    players = args.players or await half_capacity(args, workdir, redis)
    ramp = max(2.0, players / args.connect_rate)
    start = math.ceil(ramp + args.settle)
    intervals = math.ceil(args.minutes * 60 / args.interval)
    ticks_per = round(args.interval)
    end = start + intervals * ticks_per
    if redis is not None:
        redis.flush()
    node = await start_node(
        args, workdir, redis.url if redis else None, math.ceil(players / ROOMS_OF) + 16
    )
    progress(
        f"soak: {players:,} players on {args.backend} ({node.loop}"
        + (f"/{node.parser}" if redis else "")
        + f"), {intervals} x {ticks_per} s after a {start} s ramp, races of "
        + f"{args.race_minutes:g} min; load average {loadavg()}"
    )
    rows: list[dict[str, float]] = []
    errors: dict[str, int] = {}
    load: PaceLoad | None = None
    try:
        await asyncio.sleep(1.0)
        rss_idle = node.rss_kib()
        test = LoadTest(
            url=f"ws://{capacity.HOST}:{node.port}/",
            players=players,
            pace_s=PACE_S,
            duration_s=end + 1,
            rooms_of=ROOMS_OF,
            ramp_s=ramp,
            time_limit_s=round(args.race_minutes * 60),
        )
        load = PaceLoad(test, args.processes)
        window = Report()
        connected_min = players
        tick = 0
        marks = (0.0, 0.0, 0.0)
        async for report in load.ticks():
            tick += 1
            for code, n in report.errors.items():
                if code not in capacity.REFUSALS:
                    errors[code] = errors.get(code, 0) + n
            if tick < start:
                continue
            if tick == start:
                marks = (node.cpu_s(), load.cpu_s() + time.process_time(), time.perf_counter())
                continue
            if tick > end:
                continue
            window.add(report)
            connected_min = min(connected_min, report.connected)
            if (tick - start) % ticks_per == 0:
                now = (node.cpu_s(), load.cpu_s() + time.process_time(), time.perf_counter())
                wall = now[2] - marks[2]
                figures = window.figures()
                _, errs = split_errors(window)
                row = {
                    "minute": (tick - start) * args.interval / 60 / ticks_per,
                    "rss_mib": node.rss_kib() / 1024,
                    "p50_ms": figures["p50_ms"],
                    "p99_ms": figures["p99_ms"],
                    "moves_per_s": window.moves / wall,
                    "errors": errs,
                    "connected_min": connected_min,
                    "node_cpu": (now[0] - marks[0]) / wall,
                    "load_cpu": (now[1] - marks[1]) / wall,
                }
                rows.append(row)
                progress(
                    f"  {len(rows):3d}/{intervals}  RSS {row['rss_mib']:7.1f} MiB  "
                    f"p50 {row['p50_ms']:6.1f}  p99 {row['p99_ms']:7.1f} ms  "
                    f"{row['moves_per_s']:7,.0f} moves/s  errors {errs}  "
                    f"connected >= {connected_min:,}  node CPU {row['node_cpu']:.2f}  "
                    f"load CPU {row['load_cpu']:.2f}  load average {loadavg()}"
                )
                window, marks, connected_min = Report(), now, players
    finally:
        if load is not None:
            load.close()
        await node.stop()
    if not rows:
        raise SystemExit("the soak ended before its first interval")
    per_minute = 60 / args.interval
    # The end of minute 5; in a run that short, the end of the first interval.
    base_index = round(BASE_MINUTE * per_minute) if args.minutes > BASE_MINUTE else 1
    base = rows[min(len(rows), base_index) - 1]
    last = rows[-1]
    pairs = {
        "rss_growth_pct": f"{(last['rss_mib'] - base['rss_mib']) / base['rss_mib'] * 100:.2f}",
        "p99_first_ms": f"{rows[0]['p99_ms']:.1f}",
        "p99_last_ms": f"{last['p99_ms']:.1f}",
        "p99_max_ms": f"{max(r['p99_ms'] for r in rows):.1f}",
        "p50_last_ms": f"{last['p50_ms']:.1f}",
        "rss_first_mib": f"{rows[0]['rss_mib']:.1f}",
        "rss_base_mib": f"{base['rss_mib']:.1f}",
        "rss_last_mib": f"{last['rss_mib']:.1f}",
        "rss_base_minute": f"{base['minute']:g}",
        "kib_per_player": f"{(last['rss_mib'] * 1024 - rss_idle) / players:.1f}",
        "errors": str(sum(errors.values())),
        "error_codes": ",".join(f"{c}:{n}" for c, n in sorted(errors.items())) or "none",
        "connected_min": str(int(min(r["connected_min"] for r in rows))),
        "moves_per_s": f"{sum(r['moves_per_s'] for r in rows) / len(rows):.0f}",
        "node_cpu": f"{sum(r['node_cpu'] for r in rows) / len(rows):.2f}",
        "load_cpu": f"{sum(r['load_cpu'] for r in rows) / len(rows):.2f}",
        "players": str(players),
        "backend": args.backend,
        "loop": node.loop,
        "minutes": f"{args.minutes:g}",
        "race_minutes": f"{args.race_minutes:g}",
        "interval_s": f"{args.interval:g}",
        "loadavg_after": loadavg(),
    }
    return " ".join(f"{k}={v}" for k, v in pairs.items())


async def run(args: argparse.Namespace) -> str:
    cpus = sorted(os.sched_getaffinity(0))
    args.node_cpu = None
    if len(cpus) >= 2:
        args.node_cpu = cpus[0]
        os.sched_setaffinity(0, {cpus[1]})
        progress(f"node pinned to CPU {cpus[0]}; the load and this bench to CPU {cpus[1]}")
    progress(f"load average {loadavg()} before the run")
    with tempfile.TemporaryDirectory(prefix="solrace-soak-") as tmp:
        workdir = Path(tmp)
        redis = Redis(workdir) if args.backend == "redis" else None
        try:
            return await soak(args, workdir, redis)
        finally:
            if redis is not None:
                redis.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, help="players (default: half the capacity)")
    parser.add_argument("--minutes", type=float, default=30.0, help="how long (30)")
    parser.add_argument(
        "--interval", type=float, default=60.0, help="seconds between report lines (60)"
    )
    parser.add_argument("--backend", choices=("embedded", "redis"), default="embedded")
    parser.add_argument(
        "--race-minutes",
        type=float,
        default=5.0,
        help="each race's time limit, after which the room deals again (5; at most 60)",
    )
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after the ramp (5)")
    parser.add_argument(
        "--connect-rate", type=float, default=500.0, help="players connected a second (500)"
    )
    # For the capacity search that runs without --players.
    parser.add_argument("--start", type=int, default=1000, help=argparse.SUPPRESS)
    parser.add_argument("--max-players", type=int, default=40000, help=argparse.SUPPRESS)
    parser.add_argument("--window", type=float, default=10.0, help=argparse.SUPPRESS)
    parser.add_argument("--resolution", type=float, default=0.05, help=argparse.SUPPRESS)
    capacity.add_node_options(parser)
    args = parser.parse_args(argv)
    if args.node:
        capacity.node_main(args)
        return 0
    capacity.resolve_node_options(parser, args)
    if args.players is not None and args.players < ROOMS_OF:
        parser.error("--players: at least 4")
    if not 10 <= args.race_minutes * 60 <= 3600:
        parser.error("--race-minutes: from 10 s to 60 minutes")
    if args.minutes <= 0 or not 1 <= args.interval <= args.minutes * 60:
        parser.error("--minutes above 0, --interval at least 1 s and at most the soak")
    harness.raise_nofile()
    line = asyncio.run(run(args))
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
