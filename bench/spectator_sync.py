"""What a spectator's ``sync`` costs the node that serves it, however long the game.

A player makes ``--moves`` moves (a draw and its undo, over and over) in a room watched
by a spectator; then the spectator asks for ``--syncs`` snapshots, one after another,
and the benchmark reads the CPU time of the spectator's node process from /proc before
and after. On Redis the player and the spectator are on two different nodes, so the
spectator's node holds no game of the player's: it serves the board kept in the store.
On the embedded backend they share the one node. The baseline, measured in the same run,
is what a snapshot used to cost: rebuilding the player's game by replaying its log.

Each node is a child process (``solrace serve``'s configuration with the rate limit
lifted, as a person could not play ten thousand moves a minute); Redis, if asked for, is
a ``redis-server`` of the benchmark's own on a free port.

    python3 bench/spectator_sync.py [--moves 10000] [--syncs 100] [--backend both]

The last line of stdout holds ``key=value`` pairs: ``sync_cpu_ms_<backend>`` (CPU per
sync on the spectator's node), ``replay_ms`` (CPU to replay the log once, the old cost)
and ``sync_over_replay_<backend>``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fanout import HOST, cpu_s, free_port  # noqa: E402 (bench/ is on the path once ROOT is)

# -- a node process ------------------------------------------------------------------------


async def _serve(port: int, data_dir: str, redis_url: str | None) -> None:
    from solrace.protocol import Limits
    from solrace.server import Node, ServerConfig, SolraceServer, make_backend
    from solrace.server.config import Budgets
    from solrace.server.logs import configure_logging

    configure_logging("json")
    config = ServerConfig(
        host=HOST,
        port=port,
        data_dir=Path(data_dir),
        redis_url=redis_url,
        limits=Limits(messages_per_second=1e9, burst=1 << 30),
        budgets=Budgets.lifted(),
        winnable_default=False,  # the move path is measured, not a solver worker's CPU
    )
    server = SolraceServer(Node(make_backend(config), config), config)
    await server.start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)
    await stop.wait()
    await server.close()


@contextlib.asynccontextmanager
async def node(workdir: Path, redis_url: str | None) -> AsyncIterator[tuple[int, int]]:
    """A node process: its port and pid."""
    port = free_port()
    data_dir = tempfile.mkdtemp(dir=workdir)
    command = [sys.executable, str(Path(__file__).resolve()), "--serve", str(port), data_dir]
    if redis_url:
        command.append(redis_url)
    with (Path(data_dir) / "node.log").open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=log
        )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    if line.strip() != b"ready":
        proc.kill()
        raise RuntimeError((Path(data_dir) / "node.log").read_text()[-2000:])
    try:
        yield port, proc.pid
    finally:
        proc.terminate()
        await proc.wait()


@contextlib.contextmanager
def redis_server(workdir: Path) -> AsyncIterator[str]:  # type: ignore[misc]
    port = free_port()
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            HOST,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection((HOST, port), 0.1):
                break
            time.sleep(0.05)
        yield f"redis://{HOST}:{port}/0"
    finally:
        proc.terminate()
        proc.wait()


# -- the measure ---------------------------------------------------------------------------


async def measure(kind: str, args: argparse.Namespace, workdir: Path) -> float:
    """CPU ms per spectator sync on the spectator's node."""
    from solrace.client import Client
    from solrace.protocol import PlayMove

    redis_cm = redis_server(workdir) if kind == "redis" else contextlib.nullcontext(None)
    with redis_cm as redis_url:
        async with contextlib.AsyncExitStack() as stack:
            play_port, play_pid = await stack.enter_async_context(node(workdir, redis_url))
            watch_port, watch_pid = play_port, play_pid
            if kind == "redis":
                watch_port, watch_pid = await stack.enter_async_context(node(workdir, redis_url))
            ann = Client(f"ws://{HOST}:{play_port}/", name="ann", legal_moves=False)
            eve = Client(f"ws://{HOST}:{watch_port}/", name="eve", legal_moves=False)
            await ann.connect()
            await eve.connect()
            stack.push_async_callback(ann.close)
            stack.push_async_callback(eve.close)
            room = await ann.create_room("canfield", countdown=0, undo=True, spectators="live")
            await eve.join(room["code"], role="spectator")
            await ann.start()
            await ann.next_event("race_started")
            ids = iter(range(10, 1 << 30))
            for start in range(0, args.moves, 100):
                batch = range(start, min(start + 100, args.moves))
                await asyncio.gather(
                    *(
                        ann.request(PlayMove(next(ids), "d" if rev % 2 == 0 else "u", rev))
                        for rev in batch
                    )
                )
                if start % 2000 == 0:
                    print(f"  {kind}: {start:,}/{args.moves:,} moves", file=sys.stderr)
            await asyncio.sleep(2.5)  # every board reported and kept
            snapshot = await eve.sync()
            assert snapshot["boards"][ann.player_id]["moves"] == args.moves, snapshot
            before = cpu_s(watch_pid)
            for _ in range(args.syncs):
                await eve.sync()
            spent = cpu_s(watch_pid) - before
    return spent / args.syncs * 1000


def replay_ms(moves: int) -> float:
    """CPU ms to rebuild a ``moves``-move game from its log (what a sync used to do)."""
    from solrace.engine import new_game, parse_move

    log = ["d" if rev % 2 == 0 else "u" for rev in range(moves)]
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        game = new_game("canfield", 1)
        for text in log:
            game.apply(parse_move(text))
        best = min(best, time.process_time() - started)
    return best * 1000


async def main(args: argparse.Namespace) -> None:
    kinds = ["embedded", "redis"] if args.backend == "both" else [args.backend]
    if "redis" in kinds and shutil.which("redis-server") is None:
        print("redis-server is not installed: embedded only", file=sys.stderr)
        kinds = ["embedded"]
    figures: dict[str, str] = {"moves": str(args.moves), "syncs": str(args.syncs)}
    base = replay_ms(args.moves)
    figures["replay_ms"] = f"{base:.2f}"
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            per_sync = await measure(kind, args, Path(tmp))
            figures[f"sync_cpu_ms_{kind}"] = f"{per_sync:.3f}"
            figures[f"sync_over_replay_{kind}"] = f"{per_sync / base:.4f}"
            print(
                f"{kind}: {per_sync:.3f} ms of CPU per sync of a {args.moves:,}-move game "
                f"(a replay: {base:.2f} ms)",
                file=sys.stderr,
            )
    print(" ".join(f"{k}={v}" for k, v in figures.items()))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        port, data_dir, *rest = sys.argv[2:]
        asyncio.run(_serve(int(port), data_dir, rest[0] if rest else None))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=10_000)
    parser.add_argument("--syncs", type=int, default=100)
    parser.add_argument("--backend", choices=("embedded", "redis", "both"), default="both")
    asyncio.run(main(parser.parse_args()))
