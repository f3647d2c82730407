"""The floor under a node's cost per move at a person's pace: a bare websockets relay.

``bench/capacity.py`` asks how many players, each moving every 2 s, one node core holds.
This asks how much of a move's cost at that pace is the transport's alone. It runs, in
turn and each pinned to one core (the load on the other):

- **relay**: a bare ``websockets`` server (asyncio API, the node's settings: no
  compression, 4 KiB frames, queue 32, pings every 20 s, the node's collector tuning)
  that does per message what a node does per move in a room of four, and nothing else:
  one ack-sized frame back to the sender and one progress-sized frame to each of the
  four members (``broadcast``, as the node pushes without awaiting);
- **solrace**: a node on the embedded backend, as ``bench/capacity.py`` runs it, under
  ``solrace loadtest``'s bots.

Both get ``--players`` connections in rooms of four, each sending a move every ``--pace``
seconds (+-50% jitter), and the bench reads each server's CPU over a ``--window`` of
seconds once every player is in. Per move: server CPU microseconds, and the players one
whole core would hold at that cost (``players / server CPU``). The solrace node sends a
room's progress at most every 0.25 s, so it sends no more frames a move than the relay.

    python3 bench/relay.py                       # 4,000 players, 20 s windows, 2 rounds

The last line holds ``key=value`` pairs: ``relay_us_per_move``, ``solrace_us_per_move``,
``cost_ratio`` (solrace over relay), ``relay_players_per_core`` and
``solrace_players_per_core`` (at the measured cost), the p99 of each, and the settings.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for _path in (ROOT, BENCH):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


from capacity import cpu_s, harness  # noqa: E402  (bench/server.py: settings, /proc)

HOST = "127.0.0.1"
ROOMS_OF = 4
ACK = b"A" * 96  # about a delta ack's size
PROGRESS = b"P" * 128  # about a progress event's, one standing
MOVE = b"M" * 40  # about a move request's


# -- the relay server ----------------------------------------------------------------------


async def _relay_server() -> None:
    from websockets.asyncio.server import broadcast, serve
    from websockets.exceptions import ConnectionClosed

    from solrace.server.app import tune_gc

    rooms: list[list[Any]] = []

    async def handler(ws: Any) -> None:
        if not rooms or len(rooms[-1]) >= ROOMS_OF:
            rooms.append([])
        members = rooms[-1]
        members.append(ws)
        try:
            async for _message in ws:
                broadcast([ws], ACK)
                broadcast(members, PROGRESS)
        except ConnectionClosed:
            pass
        finally:
            members.remove(ws)

    server = await serve(handler, HOST, 0, **harness.websockets_settings())
    tune_gc()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print(f"port {next(iter(server.sockets)).getsockname()[1]}", flush=True)
    await stop.wait()
    server.close()


def relay_main() -> None:
    from solrace.server.app import run_on_loop

    harness.raise_nofile()
    run_on_loop(_relay_server(), "auto")


def p99_ms(rtts: list[float]) -> float:
    """The 99th percentile of round trips, in ms (0 for fewer than two)."""
    if len(rtts) < 2:
        return 0.0
    return round(statistics.quantiles(rtts, n=100)[98] * 1000, 2)


# -- the relay's load ----------------------------------------------------------------------


async def _relay_load(port: int, players: int, pace: float, ramp: float, seconds: float) -> None:
    """Bots on the relay; prints one JSON line a second: moves, their p99, errors."""
    from websockets.asyncio.client import connect

    rtts: list[float] = []
    errors = 0
    stop_at = time.monotonic() + seconds

    async def bot(index: int) -> None:
        nonlocal errors
        await asyncio.sleep(ramp * index / players)
        try:
            async with connect(f"ws://{HOST}:{port}/", compression=None, max_queue=64) as ws:
                await asyncio.sleep(random.uniform(0, pace))
                while time.monotonic() < stop_at:
                    started = time.perf_counter()
                    await ws.send(MOVE)
                    while (await ws.recv())[:1] != b"A":
                        pass
                    rtts.append(time.perf_counter() - started)
                    await asyncio.sleep(pace * random.uniform(0.5, 1.5))
        except Exception:
            errors += 1

    tasks = [asyncio.create_task(bot(n)) for n in range(players)]
    while time.monotonic() < stop_at:
        await asyncio.sleep(1.0)
        taken, rtts[:] = list(rtts), []
        line = {"moves": len(taken), "p99_ms": p99_ms(taken), "errors": errors}
        print(json.dumps(line), flush=True)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def relay_load_main(args: argparse.Namespace) -> None:
    from solrace.server.app import run_on_loop

    harness.raise_nofile()
    run_on_loop(_relay_load(args.port, args.players, args.pace, args.ramp, args.seconds), "auto")


# -- a measured run ------------------------------------------------------------------------


async def measure(kind: str, args: argparse.Namespace) -> dict[str, float]:
    """Start the server (core 0) and its load (core 1); CPU per move over the window."""
    workdir = tempfile.mkdtemp(prefix=f"relay-{kind}-")
    me = str(Path(__file__).resolve())
    if kind == "relay":
        command = [sys.executable, me, "--serve-relay"]
    else:
        command = [sys.executable, str(BENCH / "capacity.py"), "--node", "--data-dir", workdir]
        command += ["--rooms", str(args.players // ROOMS_OF + 16), "--loop", "auto"]
        command += ["--parser", "auto"]
    server = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    os.sched_setaffinity(server.pid, {0})
    assert server.stdout is not None
    port = int((await server.stdout.readline()).split()[1])
    ramp = max(2.0, args.players / 500)
    total = ramp + args.settle + args.window + 2
    if kind == "relay":
        load_cmd = [sys.executable, me, "--relay-load", "--port", str(port)]
        load_cmd += ["--players", str(args.players), "--pace", str(args.pace)]
        load_cmd += ["--ramp", str(ramp), "--seconds", str(total)]
    else:
        load_cmd = [sys.executable, "-m", "solrace", "loadtest", f"ws://{HOST}:{port}/"]
        load_cmd += ["--players", str(args.players), "--pace", f"{args.pace}s"]
        load_cmd += ["--duration", f"{int(total)}s", "--ramp", f"{ramp}s", "--json"]
    load = await asyncio.create_subprocess_exec(
        *load_cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    os.sched_setaffinity(load.pid, {1})
    await asyncio.sleep(ramp + args.settle)
    c0, t0 = cpu_s(server.pid), time.perf_counter()
    await asyncio.sleep(args.window)
    c1, t1 = cpu_s(server.pid), time.perf_counter()
    out, _ = await load.communicate()
    server.send_signal(signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(server.wait(), 10)
    if server.returncode is None:
        server.kill()
        await server.wait()
    start = int(ramp + args.settle)
    if kind == "relay":
        seconds = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
        window = seconds[start : start + int(args.window)]
        moves = sum(s["moves"] for s in window)
        p99 = max((s["p99_ms"] for s in window), default=float("nan"))
        errors = seconds[-1]["errors"] if seconds else -1
    else:
        report = json.loads(out)
        window = report["seconds"][start : start + int(args.window)]
        moves = sum(s["moves"] + s.get("refused", 0) for s in window)
        p99 = max((s["p99_ms"] for s in window), default=float("nan"))
        errors = sum(n for c, n in report["total"]["errors"].items() if c != "illegal_move")
    cpu = (c1 - c0) / (t1 - t0)
    us = (c1 - c0) / max(moves, 1) * 1e6 * (args.window / (t1 - t0))
    print(
        f"  {kind}: {args.players:,} players, {moves / args.window:,.0f} moves/s, server CPU "
        f"{cpu:.3f}, {us:.0f} us a move, p99 {p99} ms, errors {errors}",
        file=sys.stderr,
        flush=True,
    )
    return {"us": us, "cpu": cpu, "p99": p99, "moves_per_s": moves / args.window}


async def run(args: argparse.Namespace) -> str:
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("bench/relay.py needs two cores")
    results: dict[str, list[dict[str, float]]] = {"relay": [], "solrace": []}
    for _round in range(args.rounds):
        for kind in ("relay", "solrace"):
            results[kind].append(await measure(kind, args))
    relay_us = statistics.mean(r["us"] for r in results["relay"])
    solrace_us = statistics.mean(r["us"] for r in results["solrace"])
    # A player makes 1 / pace moves a second, each costing ``us`` of CPU: one core (1e6 us
    # a second) holds pace * 1e6 / us players at that cost.
    per_core = args.pace * 1e6
    figures = {
        "relay_us_per_move": round(relay_us, 1),
        "solrace_us_per_move": round(solrace_us, 1),
        "cost_ratio": round(solrace_us / relay_us, 3),
        "relay_players_per_core": round(per_core / relay_us),
        "solrace_players_per_core": round(per_core / solrace_us),
        "relay_p99_ms": max(r["p99"] for r in results["relay"]),
        "solrace_p99_ms": max(r["p99"] for r in results["solrace"]),
        "relay_cpu": round(statistics.mean(r["cpu"] for r in results["relay"]), 3),
        "solrace_cpu": round(statistics.mean(r["cpu"] for r in results["solrace"]), 3),
        "players": args.players,
        "pace_s": args.pace,
        "window_s": args.window,
        "rounds": args.rounds,
    }
    return " ".join(f"{k}={v}" for k, v in figures.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--players", type=int, default=4000, help="connections (4000)")
    parser.add_argument("--pace", type=float, default=2.0, help="seconds between moves (2)")
    parser.add_argument("--window", type=float, default=20.0, help="measured seconds (20)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after the ramp (5)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each, alternating (2)")
    parser.add_argument("--serve-relay", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--relay-load", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ramp", type=float, default=8.0, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=30.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_relay:
        relay_main()
        return 0
    if args.relay_load:
        relay_load_main(args)
        return 0
    print(asyncio.run(run(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
