"""Fan-out benchmark: how fast a move reaches a spectator on another node, and move rates.

A redis-server and two server nodes run as child processes on loopback; one harness
process drives them. Two phases:

``latency``     ``--rooms`` rooms of one player and one spectator, in four kinds at once
                (so that both nodes carry the same load and the machine's noise falls on
                every kind alike): both on node A, both on node B (*single-node*), player
                on A and spectator on B, player on B and spectator on A (*cross-node*).
                Each player plays ``d``, ``u``, ``d``... (legal for ever; undo is on), one
                move every ``--interval`` seconds after its ack. A move's latency runs
                from the harness sending it to the harness reading the first ``progress``
                event to the spectator that counts it (the same clock at both ends). A
                node reports a player's standing at most every ``progress_interval_s``
                (0.25 s by default), so most moves wait for the next report;
                ``--progress-interval 0`` reports every move, which leaves the fan-out
                path alone in the figures.
``throughput``  ``--players`` players in rooms of four, no spectators, each sending its
                next move as soon as the last is acked (closed loop): first all on node A
                (*one node*), then every room split two and two over A and B (*two
                nodes*, so that each progress report also crosses to the other node).
                Acked moves are counted over ``--seconds``.

Each phase warms up first (``--warmup`` seconds), and reads the CPU time that each node
and Redis used from /proc, given as milliseconds per move. The nodes are configured like
``solrace serve --redis URL``, except that the message rates and budgets are lifted (a
closed loop would otherwise measure the limiter's policy) and ``--progress-interval``,
if given, replaces ``progress_interval_s``. Redis keeps nothing on disk here, so that the
figures are the server's and not the disk's.

The harness speaks just enough websocket by hand (binary frames masked with a zero key)
on ``asyncio.Protocol`` connections, with msgpack payloads, so that it costs little next
to the nodes. A table goes to stderr; the last line of stdout holds the headline figures
as ``key=value`` pairs, among them ``cross_p99_ratio`` (cross-node p99 over single-node
p99; the target is at most 2).

    python3 bench/fanout.py [--rooms 40] [--interval 0.1] [--players 64] [--seconds 10]
                            [--progress-interval SECONDS]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgpack
from wire import client_frame, upgrade_request

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HOST = "127.0.0.1"
SUBPROTOCOL = "solrace.v1.msgpack"
START_TIMEOUT = 30.0
REQUEST_TIMEOUT = 30.0
TARGET_RATIO = 2.0
KINDS = (("A", "A"), ("B", "B"), ("A", "B"), ("B", "A"))  # (player's node, spectator's node)


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def cpu_s(pid: int) -> float:
    """User plus system CPU seconds of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


# -- the node process ------------------------------------------------------------------


async def _node(redis_url: str, progress_interval: float | None) -> None:
    from solrace.protocol import Limits
    from solrace.server import Node, ServerConfig, SolraceServer, make_backend
    from solrace.server.config import Budgets
    from solrace.server.logs import configure_logging

    configure_logging("json")
    config = ServerConfig(
        host=HOST,
        port=0,
        redis_url=redis_url,
        limits=Limits(messages_per_second=1e9, burst=1 << 30),
        budgets=Budgets.lifted(),
        winnable_default=False,  # the move path is measured, not a solver worker's CPU
    )
    if progress_interval is not None:
        config = replace(config, progress_interval_s=progress_interval)
    server = SolraceServer(Node(make_backend(config), config), config)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    print(f"port {server.port}", flush=True)
    await stop.wait()
    await asyncio.wait_for(server.close(), 10.0)


@dataclass
class Process:
    """A child process and where its output goes."""

    name: str
    proc: subprocess.Popen[bytes]
    port: int

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_redis(workdir: Path) -> Process:
    port = free_port()
    log = (workdir / "redis.log").open("wb")
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no"],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=workdir,
    )
    log.close()
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with socket.create_connection((HOST, port), timeout=1.0) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(64).startswith(b"+PONG"):
                    return Process("redis", proc, port)
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"redis-server did not start; see {workdir / 'redis.log'}")
        time.sleep(0.05)


def start_node(
    name: str, redis_url: str, workdir: Path, progress_interval: float | None
) -> Process:
    log = (workdir / f"node-{name}.log").open("wb")
    command = [sys.executable, str(Path(__file__).resolve()), "--node", redis_url]
    if progress_interval is not None:
        command += ["--progress-interval", str(progress_interval)]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=log,
        cwd=workdir,
    )
    log.close()
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(b"port "):
        proc.kill()
        raise RuntimeError(f"node {name} did not start; see {workdir / f'node-{name}.log'}")
    return Process(name, proc, int(line.split()[1]))


# -- the harness's connections ---------------------------------------------------------


class Conn(asyncio.Protocol):
    """One websocket connection: requests matched to replies by id, events to a callback."""

    def __init__(self, port: int, on_event: Callable[[dict[str, Any]], None]) -> None:
        self.port = port
        self.on_event = on_event
        self.transport: asyncio.Transport | None = None
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.buffer = bytearray()
        self.upgraded = False
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.player_id = ""
        self.started: asyncio.Future[dict[str, Any]] | None = None  # the next race_started

    @classmethod
    async def open(cls, port: int, name: str) -> Conn:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(lambda: cls(port, lambda e: None), HOST, port)
        await asyncio.wait_for(conn.opened, REQUEST_TIMEOUT)
        welcome = await conn.request({"type": "hello", "name": name})
        conn.player_id = welcome["player_id"]
        return conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(upgrade_request(HOST, self.port, SUBPROTOCOL))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(ConnectionError("closed during the handshake"))
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("connection closed"))
        self.waiting.clear()

    def data_received(self, data: bytes) -> None:
        buf = self.buffer
        buf += data
        if not self.upgraded:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(buf[:end]).split(b"\r\n", 1)[0]
            del buf[: end + 4]
            if b" 101 " not in status:
                self.opened.set_exception(ConnectionError(status.decode(errors="replace")))
                return
            self.upgraded = True
            self.opened.set_result(None)
        pos, size = 0, len(buf)
        while size - pos >= 2:
            length, start = buf[pos + 1] & 0x7F, pos + 2
            if length == 126:
                if size - pos < 4:
                    break
                length, start = int.from_bytes(buf[pos + 2 : pos + 4], "big"), pos + 4
            elif length == 127:
                if size - pos < 10:
                    break
                length, start = int.from_bytes(buf[pos + 2 : pos + 10], "big"), pos + 10
            if start + length > size:
                break
            opcode = buf[pos] & 0x0F
            payload = bytes(buf[start : start + length])
            pos = start + length
            if opcode == 0x2:
                self._message(msgpack.unpackb(payload))
            elif opcode == 0x9 and self.transport is not None:  # ping: pong
                self.transport.write(bytes((0x8A, 0x80 | len(payload))) + b"\0\0\0\0" + payload)
        del buf[:pos]

    def _message(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        if request_id is not None:
            future = self.waiting.pop(request_id, None)
            if future is not None and not future.done():
                future.set_result(message)
            return
        if message.get("type") == "race_started":
            started, self.started = self.started, None
            if started is not None and not started.done():
                started.set_result(message)
        self.on_event(message)

    def send(self, request: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """Send a request; the future gets its reply."""
        request_id = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[request_id] = future
        assert self.transport is not None
        self.transport.write(client_frame(msgpack.packb({**request, "id": request_id})))
        return future

    async def request(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send a request and return its reply; raise on an error reply."""
        reply = await asyncio.wait_for(self.send(request), REQUEST_TIMEOUT)
        if reply.get("type") == "error":
            raise RuntimeError(f"{request['type']}: {reply.get('code')}: {reply.get('message')}")
        return reply

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


# -- rooms -----------------------------------------------------------------------------


@dataclass
class Player:
    """A player's connection, its revision, and when each of its moves was sent."""

    conn: Conn
    rev: int = 0
    sent: dict[int, float] = field(default_factory=dict)  # move count after it -> time

    async def move(self) -> None:
        """Play the next of d, u, d, u... and wait for the ack."""
        text = "d" if self.rev % 2 == 0 else "u"
        self.sent[self.rev + 1] = time.perf_counter()
        reply = await self.conn.request({"type": "move", "move": text, "rev": self.rev})
        self.rev = reply["rev"]


async def open_room(players: list[Conn], spectators: Sequence[Conn] = ()) -> str:
    """A room of ``players`` (the first hosts) and ``spectators``, its race started.

    A deal with no move but turns of the stock leaves every game stuck at once, which ends
    the race: such a race is resigned and dealt again.
    """
    host = players[0]
    room = await host.request(
        {
            "type": "create_room",
            "variant": "canfield",
            "max_players": len(players),
            "spectators": "live",  # the latency measured is of the boards spectators see
            "undo": True,
            "time_limit": 3600,
            "countdown": 0,
        }
    )
    code: str = room["room"]["code"]
    for conn in players[1:]:
        await conn.request({"type": "join_room", "code": code, "role": "player"})
    for conn in spectators:
        await conn.request({"type": "join_room", "code": code, "role": "spectator"})
    loop = asyncio.get_running_loop()
    for _ in range(20):
        # Every player waits for its own race_started: a node hears of the race through
        # Redis, and refuses a move it has not heard of yet.
        waits: list[asyncio.Future[dict[str, Any]]] = []
        for conn in players:
            conn.started = loop.create_future()
            waits.append(conn.started)
        await host.request({"type": "start"})
        started = await asyncio.wait_for(asyncio.gather(*waits), REQUEST_TIMEOUT)
        if started[0]["view"]["status"] == "playing":
            return code
        # A deal stuck before its first move ends the race at its start; otherwise the
        # players resign it.
        for conn in players:
            reply = await asyncio.wait_for(conn.send({"type": "resign"}), REQUEST_TIMEOUT)
            if reply.get("type") == "error" and reply.get("code") not in ("race_over", "game_over"):
                raise RuntimeError(f"resign: {reply.get('code')}: {reply.get('message')}")
        await host.request({"type": "rematch"})
    raise RuntimeError("every deal was stuck")


async def gather_bounded(coros: list[Any], limit: int = 32) -> list[Any]:
    """Run coroutines with at most ``limit`` at once."""
    gate = asyncio.Semaphore(limit)

    async def run(coro: Any) -> Any:
        async with gate:
            return await coro

    return await asyncio.gather(*(run(c) for c in coros))


@dataclass
class Cpu:
    """CPU seconds of the nodes and Redis between two readings."""

    pids: dict[str, int]
    start: dict[str, float] = field(default_factory=dict)

    def mark(self) -> None:
        self.start = {name: cpu_s(pid) for name, pid in self.pids.items()}

    def used(self) -> dict[str, float]:
        return {name: cpu_s(pid) - self.start[name] for name, pid in self.pids.items()}


# -- phases ----------------------------------------------------------------------------


async def latency_phase(
    ports: dict[str, int], args: argparse.Namespace, cpu: Cpu
) -> dict[str, list[float]]:
    """Move-to-spectator latencies (seconds) of single-node and cross-node rooms."""
    latencies: dict[str, list[float]] = {"single": [], "cross": []}
    recording = False
    rooms: list[tuple[str, Player]] = []

    async def setup(index: int) -> tuple[str, Player]:
        player_node, spectator_node = KINDS[index % len(KINDS)]
        kind = "single" if player_node == spectator_node else "cross"
        player = Player(await Conn.open(ports[player_node], f"p{index}"))
        spectator = await Conn.open(ports[spectator_node], f"s{index}")

        def seen(event: dict[str, Any]) -> None:
            # Every move up to the event's count is now seen (moves made within the
            # server's progress interval are reported together).
            if event.get("type") != "progress":
                return
            now, sent = time.perf_counter(), player.sent
            moves = max(standing["moves"] for standing in event["players"])  # one player
            while sent and (first := next(iter(sent))) <= moves:
                at = sent.pop(first)
                if recording:
                    latencies[kind].append(now - at)

        spectator.on_event = seen
        await open_room([player.conn], [spectator])
        return kind, player

    rooms = await gather_bounded([setup(i) for i in range(args.rooms)])
    stop = asyncio.Event()

    async def play(player: Player) -> None:
        await asyncio.sleep(random.uniform(0, args.interval))  # spread the rooms' moves
        while not stop.is_set():
            await player.move()
            await asyncio.sleep(args.interval)

    tasks = [asyncio.ensure_future(play(p)) for _, p in rooms]
    await asyncio.sleep(args.warmup)
    recording = True
    cpu.mark()
    await asyncio.sleep(args.seconds)
    recording = False
    used = cpu.used()
    stop.set()
    await asyncio.gather(*tasks)
    await asyncio.sleep(0.5)  # the last events
    for _, player in rooms:
        player.conn.close()
    moves = len(latencies["single"]) + len(latencies["cross"])
    progress(
        f"latency: {args.rooms} rooms, {moves / args.seconds:.0f} moves/s seen by spectators, "
        f"CPU s: " + ", ".join(f"{k} {v:.1f}" for k, v in used.items())
    )
    return latencies


async def throughput_phase(
    ports: list[int], args: argparse.Namespace, cpu: Cpu
) -> tuple[float, dict[str, float]]:
    """Acked moves per second of ``--players`` closed-loop players over ``ports``."""
    size = 4
    count = 0
    recording = False

    async def setup(index: int) -> list[Player]:
        # Rooms are split evenly over the ports: with two, two players on each.
        conns = [
            await Conn.open(ports[(seat * len(ports)) // size], f"t{index}-{seat}")
            for seat in range(size)
        ]
        await open_room(conns)
        return [Player(c) for c in conns]

    rooms = await gather_bounded([setup(i) for i in range(args.players // size)])
    players = [p for room in rooms for p in room]
    stop = asyncio.Event()

    async def play(player: Player) -> None:
        nonlocal count
        while not stop.is_set():
            await player.move()
            if recording:
                count += 1

    tasks = [asyncio.ensure_future(play(p)) for p in players]
    await asyncio.sleep(args.warmup)
    recording = True
    cpu.mark()
    started = time.perf_counter()
    await asyncio.sleep(args.seconds)
    recording = False
    elapsed = time.perf_counter() - started
    used = cpu.used()
    stop.set()
    await asyncio.gather(*tasks)
    for player in players:
        player.conn.close()
    return count / elapsed, {k: v * 1000 / max(1, count) for k, v in used.items()}


# -- main ------------------------------------------------------------------------------


async def bench(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    redis = start_redis(workdir)
    url = f"redis://{HOST}:{redis.port}/0"
    nodes: list[Process] = []
    try:
        nodes = [start_node(n, url, workdir, args.progress_interval) for n in ("A", "B")]
        ports = {n.name: n.port for n in nodes}
        cpu = Cpu({**{f"node{n.name}": n.proc.pid for n in nodes}, "redis": redis.proc.pid})

        progress(f"latency phase: {args.rooms} rooms, a move every {args.interval} s each")
        latencies = await latency_phase(ports, args, cpu)

        progress(f"throughput phase: {args.players} players on one node")
        one, one_cpu = await throughput_phase([ports["A"]], args, cpu)
        progress(f"  {one:.0f} moves/s; CPU ms per move: {fmt(one_cpu)}")
        progress(f"throughput phase: {args.players} players on two nodes")
        two, two_cpu = await throughput_phase([ports["A"], ports["B"]], args, cpu)
        progress(f"  {two:.0f} moves/s; CPU ms per move: {fmt(two_cpu)}")
    finally:
        for process in [*nodes, redis]:
            process.stop()

    ms = {
        kind: (percentile(v, 50) * 1000, percentile(v, 99) * 1000, len(v))
        for kind, v in latencies.items()
    }
    from solrace.server.config import ServerConfig

    interval = args.progress_interval
    return {
        "progress_interval_s": ServerConfig().progress_interval_s if interval is None else interval,
        "single_p50_ms": ms["single"][0],
        "single_p99_ms": ms["single"][1],
        "cross_p50_ms": ms["cross"][0],
        "cross_p99_ms": ms["cross"][1],
        "cross_p50_ratio": ms["cross"][0] / ms["single"][0],
        "cross_p99_ratio": ms["cross"][1] / ms["single"][1],
        "samples_single": ms["single"][2],
        "samples_cross": ms["cross"][2],
        "moves_per_s_1node": one,
        "moves_per_s_2nodes": two,
        "two_node_ratio": two / one,
        "node_cpu_ms_per_move_1node": one_cpu["nodeA"] + one_cpu["nodeB"],
        "node_cpu_ms_per_move_2nodes": two_cpu["nodeA"] + two_cpu["nodeB"],
        "redis_cpu_ms_per_move_1node": one_cpu["redis"],
        "redis_cpu_ms_per_move_2nodes": two_cpu["redis"],
    }


def fmt(cpu: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.3f}" for k, v in cpu.items())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rooms", type=int, default=40, help="latency rooms (40)")
    parser.add_argument(
        "--interval", type=float, default=0.1, help="seconds between a latency player's moves"
    )
    parser.add_argument("--players", type=int, default=64, help="throughput players (64)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds a phase")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring")
    parser.add_argument(
        "--progress-interval",
        type=float,
        help="the nodes' progress_interval_s (default: the server's; 0 reports every move)",
    )
    parser.add_argument("--node", metavar="REDIS_URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.node:
        asyncio.run(_node(args.node, args.progress_interval))
        return 0
    with tempfile.TemporaryDirectory(prefix="solrace-fanout-") as tmp:
        figures = asyncio.run(bench(args, Path(tmp)))

    progress("")
    progress("| placement | samples | p50 ms | p99 ms |")
    progress("|---|---:|---:|---:|")
    for kind in ("single", "cross"):
        progress(
            f"| {kind}-node | {figures[f'samples_{kind}']} | {figures[f'{kind}_p50_ms']:.2f} "
            f"| {figures[f'{kind}_p99_ms']:.2f} |"
        )
    progress(
        f"moves/s through one node {figures['moves_per_s_1node']:.0f}, "
        f"through two {figures['moves_per_s_2nodes']:.0f} "
        f"(x{figures['two_node_ratio']:.2f}); cores: {os.cpu_count()}"
    )
    met = figures["cross_p99_ratio"] <= TARGET_RATIO
    progress(f"target: cross_p99_ratio <= {TARGET_RATIO}: {'met' if met else 'NOT met'}")
    figures["target_met"] = int(met)
    print(
        " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
