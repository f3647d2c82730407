"""How a player fares while someone attacks the node: latency under each attack.

A node runs as a child process with ``solrace serve``'s defaults, but for
``--trusted-proxy 127.0.0.1`` (so that each attack comes from an address of its own, as
through a proxy). A canary races in a room of its own (a draw and its undo every
``--pace`` seconds, a ping every fourth move) first alone, as the baseline, then during
each attack of bench/attacks.py: a ping flood that never reads, 3,000 connections from
one address that never finish their request, the page asked for flat out from one
address, 2,000 rooms from one address, an identity
reconnecting to renew its rate, 150 connections asking for leaderboards, spectators
churning in the canary's room, and identities minted flat out.
For each it prints the canary's move p50 and p99, its ping p99, how many of its moves
were refused (0 is the bound), and the p99s as ratios to the baseline's of the same run.

    python3 bench/abuse.py [--redis] [--moves 60] [--pace 0.05]

The last line of stdout holds ``key=value`` pairs: ``baseline_move_p99_ms`` and, for each
attack, ``<attack>_move_p99_ms``, ``<attack>_move_p99_ratio``, ``<attack>_ping_p99_ms``
and ``<attack>_refused``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, Path(__file__).resolve().parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import attacks  # noqa: E402
from fanout import free_port  # noqa: E402
from spectator_sync import redis_server  # noqa: E402

Attack = Callable[[str, int, asyncio.Event, asyncio.Future[str]], Awaitable[attacks.Tally]]


async def _churn(
    url: str, port: int, stop: asyncio.Event, room: asyncio.Future[str]
) -> attacks.Tally:
    return await attacks.spectator_churn(url, stop, await room)


ATTACKS: dict[str, Attack] = {
    "ping_flood": lambda url, port, stop, room: attacks.ping_flood(port, stop),
    "half_open": lambda url, port, stop, room: attacks.half_open(port, stop),
    "page_flood": lambda url, port, stop, room: attacks.page_flood(port, stop),
    "room_flood": lambda url, port, stop, room: attacks.room_flood(url, stop),
    "renew_rate": lambda url, port, stop, room: attacks.renew_rate(url, stop, seconds=60),
    "leaderboard_flood": lambda url, port, stop, room: attacks.leaderboard_flood(url, stop),
    "spectator_churn": _churn,
    "mint_identities": lambda url, port, stop, room: attacks.mint_identities(url, stop, seconds=60),
}


@contextlib.asynccontextmanager
async def node(workdir: Path, redis_url: str | None) -> AsyncIterator[int]:
    """``solrace serve`` with its defaults and a trusted proxy on loopback: its port."""
    port = free_port()
    command = [sys.executable, "-m", "solrace", "serve", "--port", str(port)]
    command += ["--data-dir", str(workdir / "data"), "--trusted-proxy", "127.0.0.1"]
    command += ["--no-winnable-default"]  # the canary's latency, not a solver worker's CPU
    if redis_url:
        command += ["--redis", redis_url]
    log = (workdir / "node.log").open("wb")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            await asyncio.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


async def run_one(
    name: str | None, port: int, args: argparse.Namespace
) -> tuple[attacks.Canary, attacks.Tally | None]:
    """The canary's race, during ``name``'s attack (alone with None)."""
    url = f"ws://127.0.0.1:{port}/"
    stop = asyncio.Event()
    room: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = None
    if name is not None:
        task = asyncio.ensure_future(ATTACKS[name](url, port, stop, room))
        await asyncio.sleep(0.5)  # under way before the canary starts
    try:
        canary = await attacks.canary_race(url, moves=args.moves, pace=args.pace, room=room)
    finally:
        stop.set()
    tally = await asyncio.wait_for(task, 120) if task is not None else None
    return canary, tally


def _ms(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.2f}"


async def main(args: argparse.Namespace) -> None:
    figures: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        redis_cm = redis_server(workdir) if args.redis else contextlib.nullcontext(None)
        with redis_cm as redis_url:
            rows = []
            for name in (None, *ATTACKS):
                # A node of its own for each, so that one attack's budgets spent do not
                # fall on the next.
                run_dir = workdir / (name or "baseline")
                run_dir.mkdir()
                async with node(run_dir, redis_url) as port:
                    print(f"{name or 'baseline'}...", file=sys.stderr, flush=True)
                    canary, tally = await run_one(name, port, args)
                rows.append((name or "baseline", canary.summary(), tally))
    base = rows[0][1]
    figures["baseline_move_p99_ms"] = _ms(base["move_p99_ms"])
    figures["baseline_move_p50_ms"] = _ms(base["move_p50_ms"])
    print(
        f"{'attack':20} {'move p50':>9} {'move p99':>9} {'x base':>7} {'ping p99':>9} "
        f"{'refused':>8}  attack got",
        file=sys.stderr,
    )
    for name, summary, tally in rows:
        ratio = summary["move_p99_ms"] / base["move_p99_ms"]
        got = "" if tally is None else ", ".join(f"{k} {v}" for k, v in tally.replies.most_common())
        print(
            f"{name:20} {_ms(summary['move_p50_ms']):>9} {_ms(summary['move_p99_ms']):>9} "
            f"{ratio:>7.2f} {_ms(summary['ping_p99_ms']):>9} {int(summary['refused']):>8}  {got}",
            file=sys.stderr,
        )
        if name != "baseline":
            figures[f"{name}_move_p99_ms"] = _ms(summary["move_p99_ms"])
            figures[f"{name}_move_p99_ratio"] = f"{ratio:.2f}"
            figures[f"{name}_ping_p99_ms"] = _ms(summary["ping_p99_ms"])
            figures[f"{name}_refused"] = str(int(summary["refused"]))
    figures["backend"] = "redis" if args.redis else "embedded"
    figures["cpus"] = str(os.cpu_count())
    print(" ".join(f"{k}={v}" for k, v in figures.items()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", action="store_true", help="run the node on Redis")
    parser.add_argument("--moves", type=int, default=60, help="the canary's moves (60)")
    parser.add_argument("--pace", type=float, default=0.05, help="seconds between moves")
    parsed = parser.parse_args()
    if parsed.redis and shutil.which("redis-server") is None:
        parser.error("redis-server is not installed")
    asyncio.run(main(parsed))
