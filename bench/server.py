"""Server benchmark: solrace next to a bare websockets echo server, driven by one harness.

Load phases, then two idle phases, each on a fresh server process (pinned to one core;
the harness pinned to another when the machine has two):

``echo load``     ``--players`` connections send a frame the size of a move request and
                  wait for it to come back, over and over (closed loop).
``solrace load``  the same number of players in ``--rooms`` rooms race (countdown 0, undo
                  on): each sends a move (``d``, then ``u``, then ``d``... which stays
                  legal for ever), waits for its ack, repeats. The server acks a move
                  with a ``delta`` of the player's view, not the whole view; the harness
                  reads only the ack's ``rev`` and works out its next move itself. Every
                  player also reads its room's ``progress`` events, which count as
                  received frames, not replies: the server batches them per room, one
                  per room per progress interval (0.25 s by default) to each member, so
                  events/s is about rooms x 4 members x 4 per second (rooms of 4, the
                  default). A deal that leaves nothing but draws makes every player
                  ``stuck`` at once and ends the race; the room's host then asks for a
                  rematch.
``echo idle``     ``--idle`` connections each exchange one hello-sized frame, then idle.
``solrace idle``  ``--idle`` players say hello and join rooms of the same size, then idle.

The load phases run ``--rounds`` times each, alternating (echo, solrace, echo,
solrace...), so that a slow drift of the machine between phases affects both kinds
alike. Each load phase warms up, then counts round trips and times each one for
``--seconds``; it also reads the server's CPU time from /proc, so each rate is given
twice: per second of wall clock, and per CPU-second of the server (the rate a whole
core would give, which holds still when other work shares the machine). A kind's rounds
are combined into one result (counts and seconds summed, CPU shares weighted by
seconds, percentiles over every round trip of its rounds), which the table and the
headline ratios use; a line per round gives that round's ratios too. Idle phases read
the server's VmRSS from /proc before connecting and after settling.

The harness speaks just enough websocket by hand (binary frames masked with a zero key,
ping, close) on ``asyncio.Protocol`` connections, with msgpack payloads, so that a
harness core can keep up with a server core. Every address is loopback; the solrace
server is configured like ``solrace serve`` on the embedded backend, except that the
message rates and the budgets are lifted (a closed loop from one address would otherwise
measure the limiter's policy, not the server).

A readable table and progress lines go to stderr; the last line of stdout holds the
headline figures as ``key=value`` pairs.

    python3 bench/server.py [--players 1000] [--rooms 250] [--seconds 10] [--idle 5000]
                            [--rounds 3] [--legal] [--profile FILE]
                            [--loop {auto,uvloop,asyncio}]

``--loop`` picks the servers' event loop (both of them, echo and solrace) as ``solrace
serve --loop`` does: ``auto``, the default, is uvloop where it imports. The harness runs
on asyncio's own loop whatever the servers', so that its cost stays the same.

``--legal`` makes the solrace players' hello ask for ``legal_moves``: the server then
adds the list of legal moves to every move's ack, which costs it time. By default they
are not asked for: the harness, like the browser page, works out what it needs itself.

``--profile FILE`` also records a cProfile (CPU time) of the solrace server during the
load window of the first solrace round (slower; that round's figures, and so the
combined ones, are then not comparable) and prints the top entries.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
from wire import client_frame, upgrade_request

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HOST = "127.0.0.1"
SUBPROTOCOL = "solrace.v1.msgpack"
REQUEST_TIMEOUT = 30.0
SETUP_CONCURRENCY = 64  # rooms (or echo connections) being set up at once
IDLE_SETTLE_S = 2.0
TARGETS = {"moves_ratio": (">=", 0.8), "p50_ratio": ("<=", 1.25), "kib_per_idle": ("<=", 40.0)}
# Frames that answer a request; the echo server's replies are the requests themselves.
REPLY_TYPES = frozenset({"ack", "error", "welcome", "room", "ok", "pong", "move", "hello"})
# Refusals that mean the player's race (or game) ended; the room's host then deals again.
RACE_ENDED = frozenset({"race_over", "game_over", "race_not_started", "stale_revision"})


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def machine_busy_s() -> float:
    """CPU seconds every process on the machine has used (all cores), from /proc/stat."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def raise_nofile() -> None:
    """Lift the open-files soft limit to the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = 1 << 20 if hard == resource.RLIM_INFINITY else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


# -- the server process ----------------------------------------------------------------


def websockets_settings() -> dict[str, Any]:
    """``serve()`` settings as SolraceServer.start's, for a bare websockets server."""
    from solrace.server import ServerConfig

    defaults = ServerConfig()
    return {
        "compression": None,
        "max_size": defaults.limits.max_frame_bytes,
        "max_queue": 32,
        "ping_interval": defaults.ping_interval_s,
    }


async def _echo(ws: Any) -> None:
    async for message in ws:
        await ws.send(message)


async def _serve(args: argparse.Namespace) -> None:
    from websockets.asyncio.server import serve

    from solrace.protocol import Limits
    from solrace.server import Node, ServerConfig, SolraceServer, make_backend
    from solrace.server.config import Budgets
    from solrace.server.logs import configure_logging

    kind, data_dir, profile_path = args.serve, args.data_dir, args.profile
    # Same websocket settings as SolraceServer.start, so only the application differs.
    close: Callable[[], Any]
    if kind == "echo":
        server = await serve(_echo, HOST, 0, **websockets_settings(), server_header=kind)
        port = int(next(iter(server.sockets)).getsockname()[1])

        async def close() -> None:
            server.close(close_connections=True)
            await server.wait_closed()

    else:
        configure_logging("json")
        config = ServerConfig(
            host=HOST,
            port=0,
            data_dir=data_dir,
            limits=Limits(messages_per_second=1e9, burst=1 << 30),
            budgets=Budgets.lifted(),
            winnable_default=False,  # the move path is measured, not a solver worker's CPU
        )
        solrace = SolraceServer(Node(make_backend(config), config), config)
        await solrace.start()
        port = solrace.port
        close = solrace.close

    from solrace.server.app import tune_gc

    tune_gc()  # both servers, as solrace serve does
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    if profile_path:
        import cProfile

        profiler = cProfile.Profile(time.process_time)
        loop.add_signal_handler(signal.SIGUSR1, profiler.enable)

        def dump() -> None:
            profiler.disable()
            profiler.dump_stats(profile_path)

        loop.add_signal_handler(signal.SIGUSR2, dump)
    print(f"port {port}", flush=True)
    await stop.wait()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(close(), 5.0)


def serve_main(args: argparse.Namespace) -> None:
    """Run one server until SIGTERM, printing ``port N`` on stdout once listening."""
    from solrace.server.app import run_on_loop

    raise_nofile()
    run_on_loop(_serve(args), args.loop)


@dataclass
class ServerProcess:
    """A server child process: its pid, port and resource readings."""

    kind: str
    proc: asyncio.subprocess.Process
    port: int
    log_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def rss_kib(self) -> int:
        """VmRSS from /proc, in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS line")

    def cpu_s(self) -> float:
        """User plus system CPU seconds so far."""
        stat = Path(f"/proc/{self.pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 10.0)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


async def start_server(
    kind: str, args: argparse.Namespace, workdir: Path, profile_path: str | None = None
) -> ServerProcess:
    cpu = args.server_cpu
    data_dir = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=workdir))
    log_path = data_dir / "server.log"
    command = [sys.executable, str(Path(__file__).resolve()), "--serve", kind]
    command += ["--data-dir", str(data_dir), "--loop", args.loop]
    if profile_path:
        command += ["--profile", profile_path]
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=log
        )
    if cpu is not None:
        os.sched_setaffinity(proc.pid, {cpu})
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 30.0)
    except TimeoutError:
        line = b""
    if not line.startswith(b"port "):
        proc.kill()
        await proc.wait()
        tail = log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"the {kind} server did not start:\n{tail}")
    return ServerProcess(kind, proc, int(line.split()[1]), log_path)


# -- the harness ---------------------------------------------------------------------------


@dataclass
class Stats:
    """Counters shared by every connection of one phase."""

    running: bool = False
    recording: bool = False
    replies: int = 0
    events: int = 0
    frames_in: int = 0
    bytes_in: int = 0
    errors: int = 0
    races_ended: int = 0
    error_samples: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def error(self, text: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(text)


class WsClient(asyncio.Protocol):
    """One websocket connection, driven by callbacks so the harness stays cheap.

    Replies are matched to requests by id: the closed loop's move (``loop_id``) or the
    one awaited request (``waiter``). Anything without an id is a room event.
    """

    def __init__(self, stats: Stats, port: int) -> None:
        loop = asyncio.get_running_loop()
        self.stats = stats
        self.port = port
        self.transport: asyncio.Transport | None = None
        self.opened: asyncio.Future[None] = loop.create_future()
        self.started: asyncio.Future[None] = loop.create_future()
        self.waiter: asyncio.Future[dict[str, Any]] | None = None
        self.waiter_id = -1
        self.upgraded = False
        self.buffer = bytearray()
        self.ids = 0
        self.rev = 0
        self.sent_at = 0.0
        self.looping = False
        self.loop_id: int | None = None  # the move in flight, if any
        self.restart = False  # a new race began while a move was in flight
        self.host = False

    # transport events

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(upgrade_request(HOST, self.port, SUBPROTOCOL))

    def connection_lost(self, exc: Exception | None) -> None:
        for future in (self.opened, self.started):
            future.cancel()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("connection closed"))
        if self.looping and self.stats.running:
            self.stats.error("connection lost while racing")
        self.looping = False
        self.loop_id = None

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
                assert self.transport is not None
                self.transport.close()
                return
            self.upgraded = True
            self.opened.set_result(None)
        pos, size = 0, len(buf)
        while size - pos >= 2:
            length = buf[pos + 1] & 0x7F
            start = pos + 2
            if length == 126:
                if size - pos < 4:
                    break
                length = int.from_bytes(buf[pos + 2 : pos + 4], "big")
                start = pos + 4
            elif length == 127:
                if size - pos < 10:
                    break
                length = int.from_bytes(buf[pos + 2 : pos + 10], "big")
                start = pos + 10
            end = start + length
            if end > size:
                break
            opcode = buf[pos] & 0x0F
            payload = bytes(buf[start:end])
            pos = end
            if opcode == 0x2:
                self._message(payload)
            elif opcode == 0x9 and self.transport is not None:
                self.transport.write(client_frame(payload, 0xA))
            elif opcode == 0x8 and self.transport is not None:
                self.transport.close()
                break
        del buf[:pos]

    # messages

    def _message(self, payload: bytes) -> None:
        stats = self.stats
        stats.frames_in += 1
        stats.bytes_in += len(payload)
        message = msgpack.unpackb(payload)
        kind = message.get("type")
        request_id = message.get("id")
        if kind in REPLY_TYPES and request_id is not None:
            if request_id == self.loop_id:
                self.loop_id = None
                self._looped_reply(kind, message)
            elif request_id == self.waiter_id and self.waiter is not None:
                waiter, self.waiter = self.waiter, None
                if not waiter.done():
                    waiter.set_result(message)
            return
        stats.events += 1
        if kind == "race_started":
            self.rev = message.get("rev", 0)
            if not self.started.done():
                self.started.set_result(None)
            if self.looping and stats.running:
                if self.loop_id is None:
                    self._fire()
                else:
                    self.restart = True
        elif kind == "race_over" and self.host and self.looping and stats.running:
            # Every player is done (a deal can leave no move but draws): deal again.
            task = asyncio.ensure_future(self._rematch())
            stats.tasks.add(task)
            task.add_done_callback(stats.tasks.discard)

    def send(self, data: dict[str, Any]) -> None:
        assert self.transport is not None
        self.transport.write(client_frame(msgpack.packb(data)))

    async def request(self, data: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for the frame that answers it."""
        self.ids += 1
        data["id"] = self.waiter_id = self.ids
        self.waiter = asyncio.get_running_loop().create_future()
        self.send(data)
        return await asyncio.wait_for(self.waiter, REQUEST_TIMEOUT)

    async def _rematch(self) -> None:
        try:
            _expect(await self.request({"type": "rematch"}), "ok")
            _expect(await self.request({"type": "start"}), "ok")
        except (RuntimeError, TimeoutError, ConnectionError) as error:
            if self.stats.running:
                self.stats.error(f"rematch failed: {error}")

    # the closed loop

    def begin_loop(self) -> None:
        self.looping = True
        self._fire()

    def _fire(self) -> None:
        self.ids += 1
        self.loop_id = request_id = self.ids
        move = "d" if self.rev % 2 == 0 else "u"
        payload = msgpack.packb({"type": "move", "id": request_id, "move": move, "rev": self.rev})
        assert self.transport is not None
        self.sent_at = time.perf_counter()
        self.transport.write(client_frame(payload))

    def _looped_reply(self, kind: str, message: dict[str, Any]) -> None:
        stats = self.stats
        restart, self.restart = self.restart, False
        if kind == "ack" or kind == "move":  # an echo server returns the move itself
            now = time.perf_counter()
            stats.replies += 1
            if stats.recording:
                stats.latencies.append(now - self.sent_at)
            self.rev = message["rev"] if kind == "ack" else self.rev + 1
        elif kind == "error" and message.get("code") in RACE_ENDED:
            stats.races_ended += 1
            if not restart:
                return  # wait for the next race_started
        else:
            stats.error(f"{message.get('code')}: {message.get('message')}")
            self.looping = False
            return
        if stats.running:
            self._fire()
        else:
            self.looping = False

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def connect(stats: Stats, port: int) -> WsClient:
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(lambda: WsClient(stats, port), HOST, port)
    await asyncio.wait_for(client.opened, REQUEST_TIMEOUT)
    return client


def _expect(reply: dict[str, Any], kind: str) -> dict[str, Any]:
    if reply.get("type") != kind:
        raise RuntimeError(f"expected {kind!r}, got {reply!r}")
    return reply


async def setup_room(
    index: int, size: int, port: int, stats: Stats, variant: str, start: bool, legal: bool
) -> list[WsClient]:
    """One solrace room: a host creates it, the others join, the host may start the race.

    With ``legal``, each player's hello asks for the legal moves in every ack.
    """
    clients: list[WsClient] = []
    for seat in range(size):
        client = await connect(stats, port)
        clients.append(client)
        hello: dict[str, Any] = {"type": "hello", "name": f"p{index}-{seat}"}
        if legal:
            hello["legal_moves"] = True
        _expect(await client.request(hello), "welcome")
        if seat == 0:
            client.host = True
            reply = await client.request(
                {"type": "create_room", "variant": variant, "max_players": size, "countdown": 0}
            )
            code = _expect(reply, "room")["room"]["code"]
        else:
            _expect(await client.request({"type": "join_room", "code": code}), "room")
    if start:
        _expect(await clients[0].request({"type": "start"}), "ok")
        await asyncio.wait_for(asyncio.gather(*(c.started for c in clients)), REQUEST_TIMEOUT)
    return clients


async def setup_echo(index: int, port: int, stats: Stats, hello: bool) -> list[WsClient]:
    client = await connect(stats, port)
    if hello:
        _expect(await client.request({"type": "hello", "name": f"p{index}"}), "hello")
    return [client]


async def populate(
    kind: str,
    players: int,
    size: int,
    port: int,
    stats: Stats,
    variant: str,
    start: bool,
    legal: bool = False,
) -> list[WsClient]:
    """Connect ``players`` clients (in rooms of ``size`` for solrace), a few at a time."""
    gate = asyncio.Semaphore(SETUP_CONCURRENCY)
    clients: list[WsClient] = []
    started = time.perf_counter()
    next_report = started + 1.0

    async def one(index: int) -> None:
        nonlocal next_report
        async with gate:
            if kind != "solrace":
                group = await setup_echo(index, port, stats, hello=not start)
            else:
                group = await setup_room(index, size, port, stats, variant, start, legal)
        clients.extend(group)
        now = time.perf_counter()
        if now >= next_report:
            next_report = now + 1.0
            progress(f"  {kind}: {len(clients):,}/{players:,} connected")

    groups = players if kind != "solrace" else players // size
    await asyncio.gather(*(one(i) for i in range(groups)))
    progress(
        f"  {kind}: {len(clients):,} connected and set up in {time.perf_counter() - started:.1f} s"
    )
    return clients


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


@dataclass
class LoadResult:
    kind: str
    clients: int
    seconds: float
    replies: int
    events: int
    frames_in: int
    bytes_in: int
    errors: int
    refused: int
    p50_ms: float
    p99_ms: float
    server_cpu: float
    harness_cpu: float
    other_cpu: float
    latencies: list[float] = field(default_factory=list, repr=False)  # sorted, in seconds

    @property
    def per_s(self) -> float:
        return self.replies / self.seconds

    @property
    def per_cpu_s(self) -> float:
        """Round trips per CPU-second of the server: the rate one whole core would give."""
        return self.replies / (self.server_cpu * self.seconds) if self.server_cpu else 0.0

    @property
    def frames_in_per_s(self) -> float:
        return self.frames_in / self.seconds


def combine(results: list[LoadResult]) -> LoadResult:
    """One kind's rounds as one result.

    Counts and seconds are summed, CPU shares are means weighted by seconds, and the
    percentiles are taken over the round trips of every round together.
    """
    seconds = sum(r.seconds for r in results)
    latencies = sorted(t for r in results for t in r.latencies)

    def weighted(share: Callable[[LoadResult], float]) -> float:
        return sum(share(r) * r.seconds for r in results) / seconds

    return LoadResult(
        results[0].kind,
        max(r.clients for r in results),
        seconds,
        sum(r.replies for r in results),
        sum(r.events for r in results),
        sum(r.frames_in for r in results),
        sum(r.bytes_in for r in results),
        sum(r.errors for r in results),
        sum(r.refused for r in results),
        percentile(latencies, 0.50) * 1000,
        percentile(latencies, 0.99) * 1000,
        weighted(lambda r: r.server_cpu),
        weighted(lambda r: r.harness_cpu),
        weighted(lambda r: r.other_cpu),
        latencies,
    )


@dataclass
class IdleResult:
    kind: str
    clients: int
    before_kib: int
    after_kib: int

    @property
    def kib_per_client(self) -> float:
        return (self.after_kib - self.before_kib) / self.clients


async def close_all(clients: list[WsClient]) -> None:
    for client in clients:
        client.close()
    await asyncio.sleep(0.2)


async def load_phase(
    kind: str, args: argparse.Namespace, workdir: Path, label: str, profile: str | None = None
) -> LoadResult:
    """One load phase on a fresh server; ``profile`` records the server's load window."""
    progress(
        f"{kind} load{label}: {args.players:,} players"
        + (f" in {args.rooms} rooms" if kind != "echo" else "")
        + (" (profiled)" if profile else "")
    )
    server = await start_server(kind, args, workdir, profile)
    progress(f"  {kind}: server pid {server.pid}")
    stats = Stats()
    clients: list[WsClient] = []
    try:
        size = args.players // args.rooms
        clients = await populate(
            kind, args.players, size, server.port, stats, args.variant, True, args.legal
        )
        stats.running = True
        for client in clients:
            client.begin_loop()
        warmup = min(2.0, max(0.5, args.seconds / 4))
        await asyncio.sleep(warmup)
        if stats.errors:
            raise RuntimeError(f"errors while warming up: {stats.error_samples}")
        if profile:
            server.signal(signal.SIGUSR1)
        base = (
            stats.replies,
            stats.events,
            stats.frames_in,
            stats.bytes_in,
            stats.errors,
            stats.races_ended,
        )
        busy0 = machine_busy_s()
        cpu0, harness0, wall0 = server.cpu_s(), time.process_time(), time.perf_counter()
        stats.recording = True
        last, last_t = stats.replies, wall0
        deadline = wall0 + args.seconds
        while (now := time.perf_counter()) < deadline:
            await asyncio.sleep(min(1.0, deadline - now))
            t = time.perf_counter()
            rate = (stats.replies - last) / (t - last_t)
            progress(f"  {kind}: {t - wall0:4.1f}/{args.seconds:g} s  {rate:10,.0f} round trips/s")
            last, last_t = stats.replies, t
        stats.recording = False
        wall = time.perf_counter() - wall0
        cpu, harness = server.cpu_s() - cpu0, time.process_time() - harness0
        others = max(0.0, machine_busy_s() - busy0 - cpu - harness)
        counts = (
            stats.replies,
            stats.events,
            stats.frames_in,
            stats.bytes_in,
            stats.errors,
            stats.races_ended,
        )
        delta = [b - a for a, b in zip(base, counts, strict=True)]
        if profile:
            server.signal(signal.SIGUSR2)
        stats.running = False
        drain_until = time.perf_counter() + REQUEST_TIMEOUT
        while (waiting := sum(c.loop_id is not None for c in clients)) and (
            time.perf_counter() < drain_until
        ):
            await asyncio.sleep(0.05)
        if waiting:
            progress(f"  {kind}: {waiting} connections still waiting for a reply")
        latencies, stats.latencies = stats.latencies, []
        latencies.sort()
        for sample in stats.error_samples:
            progress(f"  {kind} error: {sample}")
        return LoadResult(
            kind,
            len(clients),
            wall,
            delta[0],
            delta[1],
            delta[2],
            delta[3],
            delta[4],
            delta[5],
            percentile(latencies, 0.50) * 1000,
            percentile(latencies, 0.99) * 1000,
            cpu / wall,
            harness / wall,
            others / wall,
            latencies,
        )
    finally:
        for task in stats.tasks:
            task.cancel()
        await close_all(clients)
        await server.stop()


async def idle_phase(kind: str, args: argparse.Namespace, workdir: Path) -> IdleResult:
    progress(f"{kind} idle: {args.idle:,} connections")
    server = await start_server(kind, args, workdir)
    stats = Stats()
    clients: list[WsClient] = []
    try:
        await asyncio.sleep(0.5)
        before = server.rss_kib()
        size = args.players // args.rooms
        clients = await populate(
            kind, args.idle, size, server.port, stats, args.variant, False, args.legal
        )
        await asyncio.sleep(IDLE_SETTLE_S)
        after = server.rss_kib()
        result = IdleResult(kind, len(clients), before, after)
        progress(
            f"  {kind}: VmRSS {before / 1024:.1f} MiB -> {after / 1024:.1f} MiB, "
            f"{result.kib_per_client:.1f} KiB per connection"
        )
        return result
    finally:
        await close_all(clients)
        await server.stop()


def print_profile(path: str) -> None:
    import io
    import pstats

    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(path, stream=out).sort_stats(order).print_stats(25)
        progress(f"\nsolrace server profile, by {order}:\n{out.getvalue()}")


def report(
    echo: LoadResult, solrace: LoadResult, echo_idle: IdleResult, solrace_idle: IdleResult
) -> dict[str, float]:
    figures = {
        "moves_ratio": solrace.per_s / echo.per_s,
        "p50_ratio": solrace.p50_ms / echo.p50_ms,
        "kib_per_idle": solrace_idle.kib_per_client,
    }
    rows = [
        (
            "round trips/s",
            f"{echo.per_s:,.0f}",
            f"{solrace.per_s:,.0f}",
            figures["moves_ratio"],
            "moves_ratio",
        ),
        (
            "round trips/server CPU-s",
            f"{echo.per_cpu_s:,.0f}",
            f"{solrace.per_cpu_s:,.0f}",
            solrace.per_cpu_s / echo.per_cpu_s,
            "",
        ),
        (
            "p50 round trip, ms",
            f"{echo.p50_ms:.2f}",
            f"{solrace.p50_ms:.2f}",
            figures["p50_ratio"],
            "p50_ratio",
        ),
        (
            "p99 round trip, ms",
            f"{echo.p99_ms:.2f}",
            f"{solrace.p99_ms:.2f}",
            solrace.p99_ms / echo.p99_ms,
            "",
        ),
        (
            "frames in/s (harness)",
            f"{echo.frames_in_per_s:,.0f}",
            f"{solrace.frames_in_per_s:,.0f}",
            solrace.frames_in_per_s / echo.frames_in_per_s,
            "",
        ),
        (
            "  of which events/s",
            f"{echo.events / echo.seconds:,.0f}",
            f"{solrace.events / solrace.seconds:,.0f}",
            None,
            "",
        ),
        (
            "bytes in/s (payload)",
            f"{echo.bytes_in / echo.seconds:,.0f}",
            f"{solrace.bytes_in / solrace.seconds:,.0f}",
            None,
            "",
        ),
        (
            "server CPU (1 = one core)",
            f"{echo.server_cpu:.2f}",
            f"{solrace.server_cpu:.2f}",
            None,
            "",
        ),
        ("harness CPU", f"{echo.harness_cpu:.2f}", f"{solrace.harness_cpu:.2f}", None, ""),
        ("other processes' CPU", f"{echo.other_cpu:.2f}", f"{solrace.other_cpu:.2f}", None, ""),
        ("errors", f"{echo.errors}", f"{solrace.errors}", None, ""),
        ("moves refused: race over", "", f"{solrace.refused}", None, ""),
        (
            f"KiB per idle conn ({echo_idle.clients:,})",
            f"{echo_idle.kib_per_client:.1f}",
            f"{solrace_idle.kib_per_client:.1f}",
            solrace_idle.kib_per_client / echo_idle.kib_per_client,
            "kib_per_idle",
        ),
    ]
    lines = [f"{'':28} {'echo':>12} {'solrace':>12} {'ratio':>8}  target"]
    for label, a, b, ratio, target in rows:
        ratio_text = "" if ratio is None else f"{ratio:.2f}"
        target_text = ""
        if target:
            op, bound = TARGETS[target]
            value = figures[target]
            met = value >= bound if op == ">=" else value <= bound
            target_text = f"{target} {op} {bound:g}: {'met' if met else 'MISSED'}"
        lines.append(f"{label:28} {a:>12} {b:>12} {ratio_text:>8}  {target_text}")
    progress("\n" + "\n".join(lines))
    return figures


async def run(args: argparse.Namespace) -> str:
    cpus = sorted(os.sched_getaffinity(0))
    args.server_cpu = None
    if len(cpus) >= 2:
        args.server_cpu = cpus[0]
        os.sched_setaffinity(0, {cpus[1]})
        progress(f"server pinned to CPU {cpus[0]}, harness to CPU {cpus[1]}")
    progress(f"servers on the {args.loop_used} event loop, the harness on asyncio's")
    busy0 = machine_busy_s()
    await asyncio.sleep(1.0)
    busy = machine_busy_s() - busy0
    progress(f"other processes use {busy:.2f} cores before the run")
    if busy > 0.2:
        progress("  the machine is busy: rates and latencies will be low and noisy")
    with tempfile.TemporaryDirectory(prefix="solrace-bench-") as tmp:
        workdir = Path(tmp)
        echo_rounds: list[LoadResult] = []
        solrace_rounds: list[LoadResult] = []
        for i in range(args.rounds):
            label = f" {i + 1}/{args.rounds}" if args.rounds > 1 else ""
            echo_rounds.append(await load_phase("echo", args, workdir, label))
            profile = args.profile if i == 0 else None
            solrace_rounds.append(await load_phase("solrace", args, workdir, label, profile))
        round_ratios = []
        for i, (e, r) in enumerate(zip(echo_rounds, solrace_rounds, strict=True)):
            moves, moves_cpu, p50 = (
                ratio(r.per_s, e.per_s),
                ratio(r.per_cpu_s, e.per_cpu_s),
                ratio(r.p50_ms, e.p50_ms),
            )
            round_ratios.append((moves, p50))
            progress(
                f"round {i + 1}/{args.rounds}: moves_ratio {moves:.3f}  "
                f"moves_ratio_cpu {moves_cpu:.3f}  p50_ratio {p50:.3f}"
            )
        echo, solrace = combine(echo_rounds), combine(solrace_rounds)
        echo_idle = await idle_phase("echo", args, workdir)
        solrace_idle = await idle_phase("solrace", args, workdir)
    figures = report(echo, solrace, echo_idle, solrace_idle)
    if args.profile:
        print_profile(args.profile)
    met = all(
        (figures[k] >= bound if op == ">=" else figures[k] <= bound)
        for k, (op, bound) in TARGETS.items()
    )
    pairs = {
        "moves_ratio": f"{figures['moves_ratio']:.3f}",
        "p50_ratio": f"{figures['p50_ratio']:.3f}",
        "kib_per_idle": f"{figures['kib_per_idle']:.1f}",
        "echo_msgs_per_s": f"{echo.per_s:.0f}",
        "solrace_moves_per_s": f"{solrace.per_s:.0f}",
        "echo_p50_ms": f"{echo.p50_ms:.2f}",
        "echo_p99_ms": f"{echo.p99_ms:.2f}",
        "solrace_p50_ms": f"{solrace.p50_ms:.2f}",
        "solrace_p99_ms": f"{solrace.p99_ms:.2f}",
        "echo_kib_per_idle": f"{echo_idle.kib_per_client:.1f}",
        "moves_ratio_cpu": f"{solrace.per_cpu_s / echo.per_cpu_s:.3f}",
        "moves_ratio_min": f"{min(m for m, _ in round_ratios):.3f}",
        "moves_ratio_max": f"{max(m for m, _ in round_ratios):.3f}",
        "p50_ratio_max": f"{max(p for _, p in round_ratios):.3f}",
        "echo_per_server_cpu_s": f"{echo.per_cpu_s:.0f}",
        "solrace_per_server_cpu_s": f"{solrace.per_cpu_s:.0f}",
        "server_cpu": f"{min(echo.server_cpu, solrace.server_cpu):.2f}",
        "other_cpu": f"{max(echo.other_cpu, solrace.other_cpu):.2f}",
        "solrace_events_per_s": f"{solrace.events / solrace.seconds:.0f}",
        "errors": str(echo.errors + solrace.errors),
        "players": str(args.players),
        "rooms": str(args.rooms),
        "idle": str(args.idle),
        "seconds": f"{args.seconds:g}",
        "rounds": str(args.rounds),
        "legal": "yes" if args.legal else "no",
        "loop": args.loop_used,
        "targets_met": "yes" if met else "no",
    }
    return " ".join(f"{k}={v}" for k, v in pairs.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=1000, help="players in the load phases")
    parser.add_argument("--rooms", type=int, default=250, help="rooms the players race in")
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="measured seconds per load phase"
    )
    parser.add_argument("--idle", type=int, default=5000, help="connections in the idle phases")
    parser.add_argument("--variant", default="canfield", help="a game with a stock (canfield)")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="cProfile the load window of the first solrace round into FILE",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="load phases of each kind, alternating echo and solrace (1 to 20)",
    )
    parser.add_argument(
        "--legal",
        action="store_true",
        help="solrace players ask for the legal moves in every ack (hello legal_moves)",
    )
    parser.add_argument(
        "--loop",
        choices=("auto", "uvloop", "asyncio"),
        default="auto",
        help="the servers' event loop, as solrace serve --loop (auto: uvloop where it "
        "imports); the harness runs on asyncio's own either way",
    )
    parser.add_argument("--serve", choices=("echo", "solrace"), help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        args.data_dir = args.data_dir or Path(tempfile.mkdtemp())
        serve_main(args)
        return 0
    from solrace.engine import VARIANTS, new_game

    if args.variant not in VARIANTS or not new_game(args.variant, 1).has_stock:
        parser.error("--variant: a game with a stock, so that draw and undo stay legal")
    if args.rooms < 1 or args.players < args.rooms or args.players % args.rooms:
        parser.error("--players must be a positive multiple of --rooms")
    if args.idle % (args.players // args.rooms):
        parser.error("--idle must be a multiple of the room size (--players / --rooms)")
    if args.seconds <= 0 or args.seconds > 600:
        parser.error("--seconds: more than 0, at most 600")
    if not 1 <= args.rounds <= 20:
        parser.error("--rounds: at least 1, at most 20")
    from solrace.server.app import LoopUnavailable, loop_factory

    try:
        args.loop_used = (
            "asyncio" if loop_factory(args.loop) is asyncio.new_event_loop else "uvloop"
        )
    except LoopUnavailable as error:
        parser.error(str(error))
    raise_nofile()
    line = asyncio.run(run(args))
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
