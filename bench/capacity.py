"""Capacity: how many players, each moving every 2 s, one node core holds.

On this machine a node runs pinned to one core; ``solrace loadtest``'s bots (its library:
the same bots, processes and per-second reports) run pinned to the other, with the
bench's own process, in ``--processes`` processes (2 by default): a load process's own
stall (a burst of frames, a collection over its thousands of bots) holds up the round
trips of its bots alone, which the report would otherwise lay on the node (at 11,000
players, the same hour: p99 29.0 ms with one process, 12.6 ms with two, the node's CPU
alike). Each *step* starts a fresh node and connects ``N`` players in rooms
of 4 over a ramp (``--connect-rate`` players a second, at most ``solrace loadtest``'s
``--joining`` of them joining at once, so that a node slower to take them than the ramp
sets the pace, and the step measures what it holds, not a connection storm), lets the
races settle
(``--settle`` seconds once every player is in, or once three ramps have passed), then
measures a steady window of ``--window`` seconds: every bot makes a
legal move every 2 s with +-50% jitter (a draw about half the time, 3% of its moves not
legal, as a person misplays), its acks listing the legal moves. A step *holds* when,
over its window, every player stayed connected, the move round trip's p99 was at most
100 ms, and no error came back: refusals that the bots' own play earns (``illegal_move``,
``bad_move``, and ``race_over``, ``game_over`` or ``race_not_started`` around the end of
a race) are counted apart and are not errors; anything else (``rate_limited``,
``over_budget``, ``unavailable``, a timeout, a lost connection) is.

The search doubles ``N`` from ``--start`` until a step does not hold (or ``--max-players``
is reached), then bisects between the last step that held and the first that did not,
down to ``--resolution`` of the figure. It runs once per backend: the embedded one, and
Redis, on a redis-server the bench starts on a free port of loopback, pinned to the load
core (its CPU is reported apart: on a deployment it has a machine of its own). The
figure is the largest ``N`` that held; with it, the node's RSS per player at that load
(VmRSS at the end of its window, less VmRSS before the first player connected, over
``N``), and ``players_per_node_cpu``: ``N`` over the node's CPU (cores) in that window,
the players a whole core would hold at that cost, which holds still when other work
shares the node's core (the p99 bound does not: a node preempted by other processes
misses it with CPU to spare).

Before the searches, closed-loop max-rate phases measure moves/s per backend as
``bench/server.py`` does (its harness: ``--closed-players`` players in rooms of 4 each
send a move, wait for its ack, send the next): ``redis_moves_ratio`` is the Redis-backed
node's moves/s over the embedded node's in the same run. These phases also run the
uvloop/asyncio and hiredis/pure-Python A/B (``--ab``): every combination, each
``--closed-rounds`` times in alternating order, so that a drift of the machine falls on
both arms alike.

Every node runs like ``solrace serve`` (its metrics port on), except that the message
rates and the budgets are lifted (every bot comes from one address: otherwise the
limiter's policy would be measured, not the node), the room cap is raised to the
step's rooms (``--max-rooms-per-node``, 2,000 by default, would cap a node at 8,000
players in rooms of 4), and ``winnable_default=False, daily_winnable=False``: rooms deal
random deals rather than ones a solver certified, because a solver worker's CPU (a
process of its own, filling pools ahead) is not what is measured here.

The load core must not be the bottleneck: the bench reads the CPU of the load
processes (and of redis-server, which shares their core) in every window. A step that
fails while the load core is over ``LOAD_BUSY`` of a core is marked *load-bound*: the
figure is then what one load core can drive, a lower bound of the node's capacity, and
the last line says so (``load_bound_embedded=yes``). Other processes' CPU on the machine
and the load average are reported too.

Progress lines and a table go to stderr; the last line of stdout holds ``key=value``
pairs, among them ``players_per_core_embedded``, ``players_per_core_redis``,
``redis_moves_ratio`` and ``kib_per_player_embedded``.

    python3 bench/capacity.py [--max-players 40000] [--window 20] [--backends embedded,redis]
                              [--loop auto] [--parser auto] [--ab | --no-ab]

A quick run (a few minutes): ``--max-players 4000 --window 5 --closed-seconds 4
--closed-rounds 1``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import math
import multiprocessing
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for _path in (ROOT, BENCH):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def _bench(name: str) -> Any:
    """bench/NAME.py as the module ``bench_NAME`` (``server`` alone would be the package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


harness = _bench("server")  # bench/server.py: its harness, /proc readings and node handling
fanout = _bench("fanout")  # its redis-server and /proc CPU
cpu_s = fanout.cpu_s

from solrace.client.loadtest import LoadTest, Report, _worker  # noqa: E402

HOST = "127.0.0.1"
PACE_S = 2.0
P99_LIMIT_MS = 100.0
ROOMS_OF = 4
LOAD_BUSY = 0.85  # of one core: past it, the load core may be what limits a step
# What the bots' own play earns: a misplay, and a move around the end of a race.
REFUSALS = frozenset({"illegal_move", "bad_move", "race_over", "game_over", "race_not_started"})


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def loadavg() -> str:
    """The 1-minute load average, from /proc/loadavg."""
    return Path("/proc/loadavg").read_text().split()[0]


def rss_kib(pid: int) -> int:
    """VmRSS of a process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS line")


def loop_used(name: str) -> str:
    """The event loop that ``solrace serve --loop NAME`` runs on here."""
    from solrace.server.app import loop_factory

    return "asyncio" if loop_factory(name) is asyncio.new_event_loop else "uvloop"


def parser_used(name: str) -> str:
    """The Redis reply parser a node asked for ``name`` gets here."""
    if name == "python":
        return "python"
    try:
        import hiredis  # noqa: F401
    except ImportError:
        return "python"
    return "hiredis"


# -- the node --------------------------------------------------------------------------


async def _node(args: argparse.Namespace) -> None:
    from redis.asyncio.connection import DefaultParser

    from solrace.protocol import Limits
    from solrace.server import Node, ServerConfig, SolraceServer, app, make_backend
    from solrace.server.app import loop_name, tune_gc
    from solrace.server.config import Budgets
    from solrace.server.logs import configure_logging

    configure_logging("json")
    config = ServerConfig(
        host=HOST,
        port=0,
        data_dir=args.data_dir,
        redis_url=args.redis_url,
        limits=Limits(messages_per_second=1e9, burst=1 << 30),
        budgets=Budgets.lifted(),
        max_rooms_per_node=max(ServerConfig().max_rooms_per_node, args.rooms),
        winnable_default=False,  # the move path is measured, not a solver worker's CPU
        daily_winnable=False,
        **progress_settings(args),
        metrics_host=HOST,
        metrics_port=0,
    )
    server = SolraceServer(Node(make_backend(config), config), config)
    await server.start()
    if args.gc_thaw_s is not None:
        app.GC_THAW_S = args.gc_thaw_s
    tune_gc(freeze_survivors=not args.gc_plain)  # as solrace serve does
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    parser = "hiredis" if "Hiredis" in DefaultParser.__name__ else "python"
    print(f"port {server.port} loop {loop_name()} parser {parser}", flush=True)
    await stop.wait()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(server.close(), 10.0)


def node_main(args: argparse.Namespace) -> None:
    """A node until SIGTERM; ``port N loop L parser P`` on stdout once it listens."""
    if args.parser == "python":
        sys.modules["hiredis"] = None  # type: ignore[assignment]  # as if not installed
    from solrace.server.app import run_on_loop

    harness.raise_nofile()
    run_on_loop(_node(args), args.loop)


@dataclass
class NodeProcess:
    """A node child process (pinned to the node core), with what its first line said."""

    process: harness.ServerProcess
    loop: str
    parser: str

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def pid(self) -> int:
        return self.process.pid

    def rss_kib(self) -> int:
        return self.process.rss_kib()

    def cpu_s(self) -> float:
        return self.process.cpu_s()

    async def stop(self) -> None:
        await self.process.stop()

    def check_alive(self) -> None:
        """Raise, with the end of its log, if the node has ended: the load would only go
        on counting bots that cannot connect."""
        code = self.process.proc.returncode
        if code is not None:
            tail = self.process.log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the node ended (exit status {code}) during the step:\n{tail}")


async def start_node(
    args: argparse.Namespace,
    workdir: Path,
    redis_url: str | None,
    rooms: int,
    loop: str | None = None,
    parser: str | None = None,
) -> NodeProcess:
    data_dir = Path(tempfile.mkdtemp(prefix="node-", dir=workdir))
    log_path = data_dir / "node.log"
    command = [sys.executable, str(Path(__file__).resolve()), "--node"]
    command += ["--data-dir", str(data_dir), "--rooms", str(rooms)]
    parser = {None: args.parser, "-": "auto"}.get(parser, parser)
    command += ["--loop", loop or args.loop, "--parser", parser]
    if redis_url:
        command += ["--redis-url", redis_url]
    if args.gc_plain:
        command.append("--gc-plain")
    for name in NODE_SETTINGS:
        if getattr(args, name) is not None:
            command += ["--" + name.replace("_", "-"), str(getattr(args, name))]
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=log
        )
    if args.node_cpu is not None:
        os.sched_setaffinity(proc.pid, {args.node_cpu})
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 60.0)
    except TimeoutError:
        line = b""
    words = line.decode().split()
    if len(words) != 6 or words[0] != "port":
        with contextlib.suppress(ProcessLookupError):  # it may have ended already
            proc.kill()
        await proc.wait()
        tail = log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"the node did not start:\n{tail}")
    server = harness.ServerProcess("solrace", proc, int(words[1]), log_path)
    return NodeProcess(server, words[3], words[5])


class Redis:
    """A redis-server on a free port of loopback, pinned with the load."""

    def __init__(self, workdir: Path) -> None:
        self.process = fanout.start_redis(workdir)  # inherits this process's core: the load core
        self.url = f"redis://{HOST}:{self.process.port}/0"

    @property
    def pid(self) -> int:
        return self.process.proc.pid

    def command(self, *words: str) -> bytes:
        """One command in RESP, its raw reply."""
        payload = f"*{len(words)}\r\n" + "".join(f"${len(w)}\r\n{w}\r\n" for w in words)
        with socket.create_connection((HOST, self.process.port), timeout=30) as sock:
            sock.sendall(payload.encode())
            return sock.recv(1 << 16)

    def flush(self) -> None:
        if not self.command("FLUSHALL").startswith(b"+OK"):
            raise RuntimeError("redis FLUSHALL failed")

    def stop(self) -> None:
        self.process.stop()


# -- the load: solrace loadtest's bots -------------------------------------------------


def shares(players: int, processes: int) -> list[tuple[int, int]]:
    """(first, count) of each load process: whole rooms each."""
    rooms = math.ceil(players / ROOMS_OF)
    per, extra = divmod(rooms, processes)
    out, first = [], 0
    for n in range(processes):
        count = min(players - first, (per + (1 if n < extra else 0)) * ROOMS_OF)
        if count > 0:
            out.append((first, count))
        first += count
    return out


class PaceLoad:
    """The loadtest's bots in ``processes`` processes, and their per-second reports."""

    def __init__(self, test: LoadTest, processes: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.queue: Any = context.Queue()
        self.workers = [
            context.Process(target=_worker, args=(test, first, count, 0, self.queue), daemon=True)
            for first, count in shares(test.players, processes)
        ]
        for worker in self.workers:
            worker.start()  # inherits this process's core
        self._dead: dict[int, float] = {}

    def cpu_s(self) -> float:
        """CPU seconds of the load processes so far."""
        total = 0.0
        for worker in self.workers:
            assert worker.pid is not None
            with contextlib.suppress(OSError):
                self._dead[worker.pid] = cpu_s(worker.pid)
            total += self._dead.get(worker.pid, 0.0)
        return total

    async def ticks(self) -> AsyncIterator[Report]:
        """One report a second: every process's, added up; ends with the test."""
        done, batch, got = 0, Report(), 0
        while done < len(self.workers):
            try:
                item = await asyncio.to_thread(self.queue.get, True, 15.0)
            except Exception as error:  # queue.Empty: a load process died
                alive = sum(w.is_alive() for w in self.workers)
                raise RuntimeError(f"no report from the load for 15 s ({alive} alive)") from error
            if item is None:
                done += 1
                continue
            batch.add(item)
            got += 1
            if got % len(self.workers) == 0:
                batch.seconds = 1.0
                yield batch
                batch = Report()

    def close(self) -> None:
        for worker in self.workers:
            worker.join(10)
            if worker.is_alive():
                worker.kill()


def split_errors(report: Report) -> tuple[int, int]:
    """(refusals the bots' play earns, errors)."""
    refusals = sum(n for code, n in report.errors.items() if code in REFUSALS)
    return refusals, sum(report.errors.values()) - refusals


@dataclass
class Step:
    """One step of the search: ``players`` at a person's pace for a window."""

    backend: str
    players: int
    connected_min: int = 0
    moves: int = 0
    seconds: float = 0.0
    p50_ms: float = math.nan
    p95_ms: float = math.nan
    p99_ms: float = math.nan
    load_lag_ms: float = 0.0
    refusals: int = 0
    errors: int = 0
    error_codes: dict[str, int] = field(default_factory=dict)
    node_cpu: float = 0.0
    load_cpu: float = 0.0
    redis_cpu: float = 0.0
    other_cpu: float = 0.0
    rss_idle_kib: int = 0
    rss_kib: int = 0
    redis_rss_idle_kib: int = 0
    redis_rss_kib: int = 0
    loadavg: str = ""
    failure: str = ""
    loop: str = ""
    parser: str = ""

    @property
    def held(self) -> bool:
        return not self.failure

    @property
    def moves_per_s(self) -> float:
        return self.moves / self.seconds if self.seconds else 0.0

    @property
    def kib_per_player(self) -> float:
        return (self.rss_kib - self.rss_idle_kib) / self.players

    @property
    def redis_kib_per_player(self) -> float:
        return (self.redis_rss_kib - self.redis_rss_idle_kib) / self.players

    @property
    def load_bound(self) -> bool:
        return self.load_cpu + self.redis_cpu >= LOAD_BUSY

    def judge(self) -> None:
        reasons = []
        if self.connected_min < self.players:
            reasons.append(f"{self.connected_min:,} of {self.players:,} connected")
        if self.errors:
            reasons.append(f"errors {self.error_codes}")
        if not self.p99_ms <= P99_LIMIT_MS:
            reasons.append(f"p99 {self.p99_ms:.1f} ms")
        if self.moves == 0:
            reasons.append("no moves")
        self.failure = ", ".join(reasons)


async def pace_step(
    backend: str,
    players: int,
    args: argparse.Namespace,
    workdir: Path,
    redis: Redis | None,
    loop: str | None = None,
    parser: str | None = None,
) -> Step:
    """A fresh node, ``players`` bots over the ramp, then the measured window."""
    step = Step(backend, players, loadavg=loadavg())
    ramp = max(2.0, players / args.connect_rate)
    # The window starts ``settle`` seconds after the last player is in (players still
    # connecting are the ramp's pace, not the node's capacity), or at the latest once
    # three ramps have passed: a step whose players never all connect does not hold.
    ready_by = math.ceil(3 * ramp + args.settle)
    window_from: int | None = None
    window_to = ready_by + math.ceil(args.settle) + math.ceil(args.window)
    if redis is not None:
        redis.flush()
    rooms = math.ceil(players / ROOMS_OF) + 16
    node = await start_node(args, workdir, redis.url if redis else None, rooms, loop, parser)
    step.loop, step.parser = node.loop, node.parser if redis else "-"
    load: PaceLoad | None = None
    try:
        await asyncio.sleep(1.0)
        step.rss_idle_kib = node.rss_kib()
        if redis is not None:
            step.redis_rss_idle_kib = rss_kib(redis.pid)
        test = LoadTest(
            url=f"ws://{HOST}:{node.port}/",
            players=players,
            pace_s=PACE_S,
            duration_s=window_to + 2,
            rooms_of=ROOMS_OF,
            ramp_s=ramp,
        )
        progress(
            f"  {backend} {players:,} players: ramp {ramp:.0f} s, settle, window "
            f"{math.ceil(args.window)} s (load average {step.loadavg})"
        )
        load = PaceLoad(test, args.processes)
        window = Report()
        whole = Report()
        connected: list[int] = []
        t0 = marks = None
        tick = 0
        async for report in load.ticks():
            node.check_alive()
            tick += 1
            whole.add(report)
            if window_from is None and (
                (report.connected >= players and tick >= ramp) or tick >= ready_by
            ):
                window_from = tick + math.ceil(args.settle)
                window_to = window_from + math.ceil(args.window)
            within = window_from is not None and window_from < tick <= window_to
            if tick == window_from:
                t0 = time.perf_counter()
                marks = (
                    node.cpu_s(),
                    load.cpu_s() + time.process_time(),
                    cpu_s(redis.pid) if redis else 0.0,
                    harness.machine_busy_s(),
                )
            elif within:
                window.add(report)
                connected.append(report.connected)
                if tick == window_to:
                    assert t0 is not None and marks is not None
                    wall = time.perf_counter() - t0
                    node_cpu = node.cpu_s() - marks[0]
                    load_cpu = load.cpu_s() + time.process_time() - marks[1]
                    redis_cpu = (cpu_s(redis.pid) if redis else 0.0) - marks[2]
                    busy = harness.machine_busy_s() - marks[3]
                    step.seconds = wall
                    step.node_cpu = node_cpu / wall
                    step.load_cpu = load_cpu / wall
                    step.redis_cpu = redis_cpu / wall
                    step.other_cpu = max(0.0, busy - node_cpu - load_cpu - redis_cpu) / wall
                    step.rss_kib = node.rss_kib()
                    if redis is not None:
                        step.redis_rss_kib = rss_kib(redis.pid)
            if tick % 5 == 0 or tick == window_to:
                figures = report.figures()
                progress(
                    f"    {tick:3d} s {'window' if within else '      '}"
                    f" {report.connected:>7,} connected {figures['moves_per_s']:>8,.0f} moves/s"
                    f"  p99 {figures['p99_ms']:>7} ms  load lag {figures['load_lag_ms']:>6} ms"
                    f"  errors {dict(report.errors)}"
                )
            if window_from is not None and tick >= window_to:
                break
        figures = window.figures()
        step.connected_min = min(connected) if connected else 0
        step.moves = window.moves
        step.p50_ms, step.p95_ms, step.p99_ms = (
            figures["p50_ms"],
            figures["p95_ms"],
            figures["p99_ms"],
        )
        step.load_lag_ms = window.lag_ms
        step.refusals, _ = split_errors(window)
        step.error_codes = {c: n for c, n in whole.errors.items() if c not in REFUSALS}
        step.errors = sum(step.error_codes.values())
        step.judge()
    finally:
        if load is not None:
            load.close()
        await node.stop()
    progress(
        f"  {backend} {players:,} ({step.loop}"
        + (f"/{step.parser}" if redis else "")
        + f"): {'held' if step.held else 'did not hold: ' + step.failure}; "
        f"{step.moves_per_s:,.0f} moves/s, p50/p95/p99 {step.p50_ms}/{step.p95_ms}/"
        f"{step.p99_ms} ms (the load's own longest stall {step.load_lag_ms:.0f} ms), "
        f"node CPU {step.node_cpu:.2f}, load CPU {step.load_cpu:.2f}"
        + (f", redis CPU {step.redis_cpu:.2f}" if redis else "")
        + f", others {step.other_cpu:.2f}, {step.kib_per_player:.1f} KiB/player"
    )
    return step


def rounded(players: float) -> int:
    """A whole number of rooms of players."""
    return max(ROOMS_OF, int(players) // ROOMS_OF * ROOMS_OF)


@dataclass
class Search:
    backend: str
    steps: list[Step] = field(default_factory=list)

    @property
    def best(self) -> Step | None:
        held = [s for s in self.steps if s.held]
        return max(held, key=lambda s: s.players) if held else None

    @property
    def first_fail(self) -> Step | None:
        best = self.best.players if self.best else 0
        failed = [s for s in self.steps if not s.held and s.players > best]
        return min(failed, key=lambda s: s.players) if failed else None

    @property
    def capped(self) -> bool:
        return self.first_fail is None


async def search(
    backend: str, args: argparse.Namespace, workdir: Path, redis: Redis | None
) -> Search:
    """Double, then bisect, for the most players that hold."""
    progress(f"\n{backend}: searching (doubling from {args.start:,}, at most {args.max_players:,})")
    result = Search(backend)
    low, high = 0, None
    players = rounded(min(args.start, args.max_players))
    while True:
        step = await pace_step(backend, players, args, workdir, redis)
        result.steps.append(step)
        if step.held:
            low = players
            if players >= args.max_players:
                break
            players = rounded(min(players * 2, args.max_players))
        else:
            high = players
            break
    while high is not None and high - low > max(ROOMS_OF, args.resolution * high):
        players = rounded((low + high) / 2)
        if players in (low, high):
            break
        step = await pace_step(backend, players, args, workdir, redis)
        result.steps.append(step)
        if step.held:
            low = players
        else:
            high = players
    return result


# -- closed loop: moves/s at saturation, and the A/B -----------------------------------


@dataclass
class Closed:
    backend: str
    loop: str
    parser: str
    replies: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.backend}/{self.loop}" + (
            f"/{self.parser}" if self.backend == "redis" else ""
        )

    @property
    def per_s(self) -> float:
        return self.replies / self.seconds if self.seconds else 0.0

    @property
    def per_cpu_s(self) -> float:
        return self.replies / self.cpu_s if self.cpu_s else 0.0


async def closed_phase(
    arm: Closed, args: argparse.Namespace, workdir: Path, redis: Redis | None
) -> None:
    """bench/server.py's closed loop against one node; adds to ``arm``."""
    if redis is not None:
        redis.flush()
    players = args.closed_players
    node = await start_node(
        args, workdir, redis.url if redis else None, players // ROOMS_OF + 16, arm.loop, arm.parser
    )
    if (node.loop, node.parser if redis else arm.parser) != (arm.loop, arm.parser):
        await node.stop()
        raise RuntimeError(f"asked for {arm.label}, the node runs {node.loop}/{node.parser}")
    stats = harness.Stats()
    clients: list[harness.WsClient] = []
    try:
        clients = await harness.populate(
            "solrace", players, ROOMS_OF, node.port, stats, "canfield", True, False
        )
        stats.running = True
        for client in clients:
            client.begin_loop()
        await asyncio.sleep(min(2.0, max(0.5, args.closed_seconds / 4)))
        replies0, errors0 = stats.replies, stats.errors
        cpu0, wall0 = node.cpu_s(), time.perf_counter()
        stats.recording = True
        await asyncio.sleep(args.closed_seconds)
        stats.recording = False
        arm.seconds += time.perf_counter() - wall0
        arm.cpu_s += node.cpu_s() - cpu0
        arm.replies += stats.replies - replies0
        arm.errors += stats.errors - errors0
        arm.latencies += stats.latencies
        stats.running = False
        for sample in stats.error_samples:
            progress(f"    {arm.label} error: {sample}")
        await asyncio.sleep(0.5)
    finally:
        for task in stats.tasks:
            task.cancel()
        await harness.close_all(clients)
        await node.stop()
    progress(
        f"  closed loop {arm.label}: {(stats.replies - replies0) / args.closed_seconds:,.0f}"
        f" moves/s (so far {arm.per_s:,.0f}/s, {arm.per_cpu_s:,.0f} per node CPU-s)"
    )


def chosen_arms(args: argparse.Namespace) -> set[tuple[str, str, str]]:
    """(backend, loop, parser) of the nodes the search runs."""
    arms = {("embedded", args.loop_used, "-"), ("redis", args.loop_used, args.parser_used)}
    return {a for a in arms if a[0] in args.backends}


def ab_arms(args: argparse.Namespace) -> set[tuple[str, str, str]]:
    """(backend, loop, parser) of every A/B arm that can run here (none without ``--ab``)."""
    if not args.ab:
        return set()
    loops = ["asyncio"] + (["uvloop"] if args.uvloop else [])
    parsers = ["python"] + (["hiredis"] if args.hiredis else [])
    arms = {("embedded", lp, "-") for lp in loops}
    arms |= {("redis", lp, p) for lp in loops for p in parsers}
    return {a for a in arms if a[0] in args.backends}


async def closed_loops(
    args: argparse.Namespace, workdir: Path, redis: Redis | None
) -> dict[tuple[str, str, str], Closed]:
    """The closed-loop arms: the chosen loop and parser, and the A/B ones with ``--ab``."""
    order = sorted(ab_arms(args) | chosen_arms(args))
    results = {a: Closed(*a) for a in order}
    progress(f"\nclosed loop: {len(order)} arms x {args.closed_rounds} rounds")
    for round_ in range(args.closed_rounds):
        for arm in order if round_ % 2 == 0 else reversed(order):
            await closed_phase(results[arm], args, workdir, redis if arm[0] == "redis" else None)
    return results


async def pace_ab(
    args: argparse.Namespace, workdir: Path, redis: Redis | None
) -> dict[tuple[str, str, str], list[Step]]:
    """The A/B at a person's pace: ``--ab-players`` players on each arm, the node's CPU."""
    arms = sorted(ab_arms(args))
    progress(f"\npace A/B: {args.ab_players:,} players on {len(arms)} arms")
    steps: dict[tuple[str, str, str], list[Step]] = {a: [] for a in arms}
    for round_ in range(args.ab_rounds):
        for arm in arms if round_ % 2 == 0 else reversed(arms):
            backend, loop, parser = arm
            steps[arm].append(
                await pace_step(
                    backend,
                    args.ab_players,
                    args,
                    workdir,
                    redis if backend == "redis" else None,
                    loop,
                    parser,
                )
            )
    return steps


# -- the report ------------------------------------------------------------------------


def table(
    searches: list[Search],
    closed: dict[tuple[str, str, str], Closed],
    paced: dict[tuple[str, str, str], list[Step]],
) -> str:
    lines = [
        f"{'backend':9} {'players':>8} {'held':>5} {'moves/s':>8} {'p50':>6} {'p95':>6} "
        f"{'p99':>7} {'node':>5} {'load':>5} {'redis':>5} {'other':>5} {'KiB/pl':>7}  why not"
    ]
    for result in searches:
        for s in sorted(result.steps, key=lambda s: s.players):
            lines.append(
                f"{s.backend:9} {s.players:>8,} {'yes' if s.held else 'no':>5} "
                f"{s.moves_per_s:>8,.0f} {s.p50_ms:>6.1f} {s.p95_ms:>6.1f} {s.p99_ms:>7.1f} "
                f"{s.node_cpu:>5.2f} {s.load_cpu:>5.2f} {s.redis_cpu:>5.2f} {s.other_cpu:>5.2f} "
                f"{s.kib_per_player:>7.1f}  {s.failure}"
            )
    if closed:
        lines.append("")
        lines.append(f"{'closed loop':28} {'moves/s':>9} {'per CPU-s':>10} {'p50 ms':>7} errors")
        for arm in closed.values():
            ordered = sorted(arm.latencies)
            p50 = harness.percentile(ordered, 0.5) * 1000
            lines.append(
                f"{arm.label:28} {arm.per_s:>9,.0f} {arm.per_cpu_s:>10,.0f} {p50:>7.2f} "
                f"{arm.errors}"
            )
    if paced:
        lines.append("")
        lines.append(
            f"{'at a pace, ' + str(args_players(paced)) + ' players':28} {'node CPU':>9} "
            f"{'moves/CPU-s':>11} {'p99 ms':>7} held"
        )
        for (b, lp, p), steps in paced.items():
            label = f"{b}/{lp}" + (f"/{p}" if b == "redis" else "")
            cpu = mean_cpu(steps)
            lines.append(
                f"{label:28} {cpu:>9.3f} {moves_per_cpu_s(steps):>11,.0f} "
                f"{max(x.p99_ms for x in steps):>7.1f} {all(x.held for x in steps)}"
            )
    return "\n".join(lines)


def args_players(paced: dict[tuple[str, str, str], list[Step]]) -> int:
    return next(iter(paced.values()))[0].players


def mean_cpu(steps: list[Step]) -> float:
    """The node's CPU (cores) over the steps' windows together."""
    seconds = sum(x.seconds for x in steps)
    return sum(x.node_cpu * x.seconds for x in steps) / seconds if seconds else 0.0


def moves_per_cpu_s(steps: list[Step]) -> float:
    """Moves answered per node CPU-second over the steps' windows: the arms of an A/B at
    the same players may answer different numbers of moves (refusals, slow acks), so
    they are compared per move, not per player."""
    cpu_s = sum(x.node_cpu * x.seconds for x in steps)
    return sum(x.moves for x in steps) / cpu_s if cpu_s else 0.0


def ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


async def run(args: argparse.Namespace) -> str:
    cpus = sorted(os.sched_getaffinity(0))
    args.node_cpu = None
    if len(cpus) >= 2:
        args.node_cpu = cpus[0]
        os.sched_setaffinity(0, {cpus[1]})
        progress(f"node pinned to CPU {cpus[0]}; the load, this bench and redis to CPU {cpus[1]}")
    else:
        progress("one CPU only: the node and the load share it")
    busy0 = harness.machine_busy_s()
    await asyncio.sleep(1.0)
    before = harness.machine_busy_s() - busy0
    load_before = loadavg()
    progress(f"other processes use {before:.2f} cores before the run; load average {load_before}")
    progress(
        f"nodes on {args.loop_used}, Redis parser {args.parser_used}; "
        f"the load (solrace loadtest's bots) in {args.processes} process(es)"
    )
    searches: list[Search] = []
    with tempfile.TemporaryDirectory(prefix="solrace-capacity-") as tmp:
        workdir = Path(tmp)
        redis = Redis(workdir) if "redis" in args.backends else None
        try:
            closed = await closed_loops(args, workdir, redis) if args.closed_rounds else {}
            paced = await pace_ab(args, workdir, redis) if args.ab_players and args.ab else {}
            for backend in args.backends if args.search else ():
                searches.append(
                    await search(backend, args, workdir, redis if backend == "redis" else None)
                )
        finally:
            if redis is not None:
                redis.stop()
    progress("\n" + table(searches, closed, paced))
    pairs: dict[str, str] = {}
    for result in searches:
        b = result.backend
        best = result.best
        fail = result.first_fail
        pairs[f"players_per_core_{b}"] = str(best.players if best else 0)
        if best is not None:
            pairs[f"kib_per_player_{b}"] = f"{best.kib_per_player:.1f}"
            pairs[f"p99_ms_{b}"] = f"{best.p99_ms:.1f}"
            pairs[f"moves_per_s_{b}"] = f"{best.moves_per_s:.0f}"
            pairs[f"node_cpu_{b}"] = f"{best.node_cpu:.2f}"
            # Players per node CPU-second: what a whole core would hold at this cost, a
            # figure that holds still when other work shares the node's core.
            pairs[f"players_per_node_cpu_{b}"] = f"{best.players / best.node_cpu:.0f}"
            pairs[f"load_cpu_{b}"] = f"{best.load_cpu:.2f}"
            pairs[f"rss_mib_{b}"] = f"{best.rss_kib / 1024:.0f}"
            if b == "redis":
                pairs["redis_cpu"] = f"{best.redis_cpu:.2f}"
                pairs["redis_kib_per_player"] = f"{best.redis_kib_per_player:.1f}"
            # What one load core would need for 20,000 players at this pace, from this load.
            pairs[f"load_cores_for_20000_{b}"] = f"{best.load_cpu / best.players * 20000:.2f}"
        pairs[f"capped_{b}"] = "yes" if result.capped else "no"
        pairs[f"load_bound_{b}"] = "yes" if fail is not None and fail.load_bound else "no"
        if fail is not None:
            pairs[f"first_fail_{b}"] = str(fail.players)
    loop, parser = args.loop_used, args.parser_used
    if closed:
        embedded = closed.get(("embedded", loop, "-"))
        if embedded is not None:
            pairs["embedded_moves_per_s"] = f"{embedded.per_s:.0f}"
        if embedded is not None and ("redis", loop, parser) in closed:
            on_redis = closed[("redis", loop, parser)]
            pairs["redis_moves_per_s"] = f"{on_redis.per_s:.0f}"
            pairs["redis_moves_ratio"] = f"{ratio(on_redis.per_s, embedded.per_s):.3f}"
            pairs["redis_moves_ratio_cpu"] = f"{ratio(on_redis.per_cpu_s, embedded.per_cpu_s):.3f}"
        for (b, lp, p), arm in closed.items():
            name = f"{b}_{lp}" + (f"_{p}" if b == "redis" else "")
            pairs[f"closed_{name}_per_s"] = f"{arm.per_s:.0f}"
            pairs[f"closed_{name}_per_cpu_s"] = f"{arm.per_cpu_s:.0f}"
        for b, p in (("embedded", "-"), ("redis", parser)):
            a, u = closed.get((b, "asyncio", p)), closed.get((b, "uvloop", p))
            if a and u:
                pairs[f"uvloop_gain_{b}"] = f"{ratio(u.per_cpu_s, a.per_cpu_s):.3f}"
        py, hi = closed.get(("redis", loop, "python")), closed.get(("redis", loop, "hiredis"))
        if py and hi:
            pairs["hiredis_gain"] = f"{ratio(hi.per_cpu_s, py.per_cpu_s):.3f}"
    for (b, lp, p), arm_steps in paced.items():
        name = f"{b}_{lp}" + (f"_{p}" if b == "redis" else "")
        cpu = mean_cpu(arm_steps)
        pairs[f"pace_{name}_node_cpu"] = f"{cpu:.3f}"
        pairs[f"pace_{name}_moves_per_cpu_s"] = f"{moves_per_cpu_s(arm_steps):.0f}"
    for b, p in (("embedded", "-"), ("redis", parser)):
        a_steps, u_steps = paced.get((b, "asyncio", p)), paced.get((b, "uvloop", p))
        if a_steps and u_steps:
            gain = ratio(moves_per_cpu_s(u_steps), moves_per_cpu_s(a_steps))
            pairs[f"uvloop_pace_gain_{b}"] = f"{gain:.3f}"
    py_steps, hi_steps = paced.get(("redis", loop, "python")), paced.get(("redis", loop, "hiredis"))
    if py_steps and hi_steps:
        gain = ratio(moves_per_cpu_s(hi_steps), moves_per_cpu_s(py_steps))
        pairs["hiredis_pace_gain"] = f"{gain:.3f}"
    steps = [s for r in searches for s in r.steps] + [s for v in paced.values() for s in v]
    if steps:
        pairs["load_cpu_max"] = f"{max(s.load_cpu + s.redis_cpu for s in steps):.2f}"
        pairs["other_cpu_max"] = f"{max(s.other_cpu for s in steps):.2f}"
    pairs |= {
        "loop": loop,
        "parser": parser,
        "processes": str(args.processes),
        **{name: f"{value:g}" for name, value in progress_settings(args).items()},
        "pace_s": f"{PACE_S:g}",
        "window_s": f"{args.window:g}",
        "max_players": str(args.max_players),
        "other_cpu_before": f"{before:.2f}",
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
    }
    return " ".join(f"{k}={v}" for k, v in pairs.items())


PROGRESS_SETTINGS = ("progress_interval_s", "progress_interval_max_s")
"""The nodes' settings that are options of their own (``--progress-interval-s``, ...)."""
NODE_SETTINGS = (*PROGRESS_SETTINGS, "gc_thaw_s")
"""The valued options passed on to each node as given (none: the node's default)."""


def progress_settings(args: argparse.Namespace) -> dict[str, float]:
    """The nodes' progress intervals: each as its option gives it, or the server's default."""
    from solrace.server import ServerConfig

    defaults = ServerConfig()
    given = {name: getattr(args, name) for name in PROGRESS_SETTINGS}
    return {n: getattr(defaults, n) if v is None else float(v) for n, v in given.items()}


def add_node_options(parser: argparse.ArgumentParser) -> None:
    """The options of a node (``--loop``, ``--parser``, ``--progress-interval-s``) and of the
    load (``--processes``)."""
    parser.add_argument(
        "--progress-interval-s",
        type=float,
        default=None,
        help="the nodes' shortest progress interval, as solrace serve --progress-interval-s "
        "(default: the server's)",
    )
    parser.add_argument(
        "--progress-interval-max-s",
        type=float,
        default=None,
        help="the longest a busy node stretches it to, as solrace serve "
        "--progress-interval-max-s (default: the server's; the shortest: never stretched)",
    )
    parser.add_argument(
        "--loop",
        choices=("auto", "uvloop", "asyncio"),
        default="auto",
        help="the nodes' event loop, as solrace serve --loop (auto: uvloop where it imports)",
    )
    parser.add_argument(
        "--parser",
        choices=("auto", "hiredis", "python"),
        default="auto",
        help="the Redis reply parser: hiredis (auto: where it imports, as redis-py does) or "
        "redis-py's own pure-Python one",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=2,
        help="load processes, all on the load core (2: a stall of one holds up half the bots)",
    )
    parser.add_argument("--node", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--gc-plain",
        action="store_true",
        help="nodes tune the collector without freezing what outlives a young collection",
    )
    parser.add_argument(
        "--gc-thaw-s",
        type=float,
        default=None,
        help="seconds between the nodes' thaws and full collections (default: the server's)",
    )
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--redis-url", help=argparse.SUPPRESS)
    parser.add_argument("--rooms", type=int, default=0, help=argparse.SUPPRESS)


def resolve_node_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    from solrace.server.app import LoopUnavailable

    try:
        args.loop_used = loop_used(args.loop)
    except LoopUnavailable as error:
        parser.error(str(error))
    args.parser_used = parser_used(args.parser)
    args.uvloop = loop_used("auto") == "uvloop"
    args.hiredis = parser_used("auto") == "hiredis"
    if args.processes < 1:
        parser.error("--processes: at least 1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backends",
        type=lambda s: s.split(","),
        default=["embedded", "redis"],
        help="the backends to search, in order (embedded,redis)",
    )
    parser.add_argument("--start", type=int, default=1000, help="players of the first step")
    parser.add_argument(
        "--max-players", type=int, default=40000, help="players of the largest step (40000)"
    )
    parser.add_argument("--window", type=float, default=20.0, help="measured seconds a step (20)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after the ramp (5)")
    parser.add_argument(
        "--connect-rate", type=float, default=500.0, help="players connected a second (500)"
    )
    parser.add_argument(
        "--resolution",
        type=float,
        default=0.05,
        help="bisect until the bounds are this share of the figure apart (0.05)",
    )
    parser.add_argument(
        "--closed-players", type=int, default=1000, help="players of a closed-loop phase (1000)"
    )
    parser.add_argument(
        "--closed-seconds", type=float, default=8.0, help="measured seconds a phase (8)"
    )
    parser.add_argument(
        "--closed-rounds", type=int, default=2, help="rounds of the closed-loop arms; 0 skips (2)"
    )
    parser.add_argument(
        "--search",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="search for the capacity (on); --no-search runs the closed loop and A/B only",
    )
    parser.add_argument(
        "--ab-players",
        type=int,
        default=2000,
        help="players of the A/B at a person's pace: the node's CPU on each arm; 0 skips (2000)",
    )
    parser.add_argument("--ab-rounds", type=int, default=2, help="rounds of the A/B at a pace (2)")
    parser.add_argument(
        "--ab",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="closed-loop A/B of uvloop against asyncio and hiredis against pure Python (on)",
    )
    add_node_options(parser)
    args = parser.parse_args(argv)
    if args.node:
        node_main(args)
        return 0
    resolve_node_options(parser, args)
    if not set(args.backends) <= {"embedded", "redis"} or not args.backends:
        parser.error("--backends: embedded, redis or both")
    if args.start < ROOMS_OF or args.max_players < args.start:
        parser.error("--start at least 4, --max-players at least --start")
    if args.window <= 0 or args.connect_rate <= 0 or not 0 < args.resolution < 1:
        parser.error("--window and --connect-rate above 0, --resolution between 0 and 1")
    if args.closed_rounds < 0 or args.closed_players % ROOMS_OF:
        parser.error("--closed-rounds at least 0, --closed-players a multiple of 4")
    harness.raise_nofile()
    line = asyncio.run(run(args))
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
