"""``solrace loadtest``: bots that play real games at a person's pace, to size a deployment.

Each bot is one websocket connection that says it is a bot, joins a room of
``rooms_of`` players (the first of each room creates it and starts the race), and makes
a legal move every ``pace`` seconds (with jitter), choosing among the legal moves its
acks list: a draw when there is one about half the time, now and then a move that is not
legal (``illegal_rate``), as a person misplays. When its game ends it waits for the race
to end; the room's host then asks for a rematch and starts again. Spectators join the
rooms too (one each, round the rooms). The bots speak just enough websocket by hand on
``asyncio.Protocol`` connections, so that one process drives thousands; several
processes (``processes``) drive more.

The report: connected players, moves a second, the round trip of a move (from sending
it to its ack or refusal) at p50, p95 and p99, errors by code, and the server's RSS and
CPU read from its Prometheus metrics (``--metrics URL``, the node's metrics port).

A load test from one machine is one client address: run it against a node whose budgets
do not count it as one person (docs/operations.md, "Sizing a deployment").
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextlib
import gc
import itertools
import json
import math
import multiprocessing
import os
import random
import re
import time
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import msgpack

__all__ = ["LoadTest", "Report", "run_load_test"]

SUBPROTOCOL = "solrace.v1.msgpack"
# Round-trip histogram: 1 ms to 60 s in steps of 5%, merged exactly across processes.
_BOUNDS = [0.001 * 1.05**k for k in range(int(math.log(60_000) / math.log(1.05)) + 1)]
_ILLEGAL = ("f1-t1", "t1-t1", "w-t4", "r-f")  # moves seldom legal, as a misplay


@dataclass
class LoadTest:
    """What to run."""

    url: str
    players: int
    pace_s: float = 2.0
    duration_s: float = 300.0
    rooms_of: int = 4
    spectators: int = 0
    processes: int = 1
    variant: str = "canfield"
    illegal_rate: float = 0.03
    jitter: float = 0.5
    addresses: bool = False
    """Give each bot an ``X-Real-IP`` of its own (10.x.y.z), for a node that trusts the
    load generator as a proxy (``--trusted-proxy``): the budgets then count each bot as
    a person at an address of its own."""
    metrics_url: str | None = None
    ramp_s: float = 10.0
    time_limit_s: int = 3600
    """Each race's time limit (10 to 3600 s). Bots playing at random rarely finish a game,
    so a race mostly ends at its limit; a shorter one deals again as often as people do."""
    winnable: bool = False
    """Whether the rooms ask for certified winnable deals. Off by default: a load test's
    rooms start together, and hundreds of rooms starting in one second would measure the
    node's warm pool of certified deals (and its solver workers refilling it), not the
    node; people's rooms start spread out."""
    handshake_timeout_s: float = 30.0
    """How long a bot waits for the server's answer to its websocket handshake; past it
    the bot counts as failed to connect and its connection is closed."""
    joining: int = 64
    """Bots joining at once, at most (from its connect until its room answers), over all
    the processes: the ramp goes no faster than the server takes them. A real crowd's
    clients back off and retry; bots that all connect on the ramp's schedule to a server
    that takes them more slowly pile up in its listen queue, which then drops their
    connections, and the test measures a connection storm instead of what the server
    holds. 0: no bound (the ramp's schedule alone)."""


@dataclass
class Report:
    """What one interval (or the whole run) saw."""

    connected: int = 0
    spectators: int = 0
    moves: int = 0
    refused: int = 0
    seconds: float = 0.0
    histogram: list[int] = field(default_factory=lambda: [0] * (len(_BOUNDS) + 1))
    errors: Counter[str] = field(default_factory=Counter)
    rss_mib: float | None = None
    cpu: float | None = None
    lag_ms: float = 0.0
    """The longest the load process's own event loop was late in the interval: a round
    trip measured across it counts the tester's stall, not the server's."""

    def add(self, other: Report) -> None:
        self.lag_ms = max(self.lag_ms, other.lag_ms)
        self.connected += other.connected
        self.spectators += other.spectators
        self.moves += other.moves
        self.refused += other.refused
        self.errors.update(other.errors)
        for index, count in enumerate(other.histogram):
            self.histogram[index] += count

    def percentile(self, p: float) -> float:
        """The round trip (ms) under which ``p`` of the moves' fell."""
        total = sum(self.histogram)
        if total == 0:
            return math.nan
        rank = p * total
        running = 0
        for index, count in enumerate(self.histogram):
            running += count
            if running >= rank:
                return _BOUNDS[min(index, len(_BOUNDS) - 1)] * 1000
        return _BOUNDS[-1] * 1000

    def figures(self) -> dict[str, Any]:
        """The report as plain numbers."""
        return {
            "connected": self.connected,
            "spectators": self.spectators,
            "moves": self.moves,
            "moves_per_s": round(self.moves / self.seconds, 1) if self.seconds else 0.0,
            "refused": self.refused,
            "p50_ms": round(self.percentile(0.50), 2),
            "p95_ms": round(self.percentile(0.95), 2),
            "p99_ms": round(self.percentile(0.99), 2),
            "errors": dict(self.errors),
            "server_rss_mib": self.rss_mib,
            "server_cpu": self.cpu,
            "load_lag_ms": round(self.lag_ms, 1),
        }


# -- one bot -------------------------------------------------------------------------------


def _frame(payload: bytes, opcode: int = 0x2) -> bytes:
    """A client frame, masked with a zero key (so the payload goes as it is)."""
    n = len(payload)
    if n < 126:
        head = bytes((0x80 | opcode, 0x80 | n))
    elif n < 65536:
        head = bytes((0x80 | opcode, 0x80 | 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 0x80 | 127)) + n.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


class _Bot(asyncio.Protocol):
    """One player's (or spectator's) connection, driven by callbacks."""

    def __init__(self, run: _Run, address: str | None) -> None:
        self.run = run
        self.address = address
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.upgraded = False
        self.ids = itertools.count(1)
        self.replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.opened = asyncio.get_running_loop().create_future()
        self.legal: list[str] = []
        self.rev = 0
        self.racing = False
        self.sent: dict[int, tuple[float, int]] = {}  # move id -> sent at, in which race
        self.race = 0  # counts the races this bot has been dealt
        self.host = False
        self.watching = False  # a spectator
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        url = urllib.parse.urlsplit(self.run.test.url)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            f"GET {url.path or '/'} HTTP/1.1",
            f"Host: {url.netloc}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            f"Sec-WebSocket-Protocol: {SUBPROTOCOL}",
        ]
        if self.address:
            lines.append(f"X-Real-IP: {self.address}")
        transport.write(("\r\n".join(lines) + "\r\n\r\n").encode())

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(ConnectionError("closed during the handshake"))
        for reply in self.replies.values():
            if not reply.done():
                reply.set_exception(ConnectionError("connection lost"))
        if self.timer is not None:
            self.timer.cancel()
        self.run.lost(self)

    def data_received(self, data: bytes) -> None:
        buf = self.buffer
        buf += data
        if not self.upgraded:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(buf[:end]).split(b"\r\n", 1)[0]
            del buf[: end + 4]
            if self.opened.done():  # given up on (the handshake timed out): too late now
                if self.transport is not None:
                    self.transport.close()
                return
            if b" 101 " not in status:
                self.opened.set_exception(ConnectionError(status.decode(errors="replace")))
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
                self._message(msgpack.unpackb(payload, raw=False))
            elif opcode == 0x9 and self.transport is not None:
                self.transport.write(_frame(payload, 0xA))
            elif opcode == 0x8 and self.transport is not None:
                self.transport.close()
                break
        del buf[:pos]

    def send(self, data: dict[str, Any]) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(_frame(msgpack.packb(data)))

    async def request(self, data: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self.ids)
        reply = self.replies[request_id] = asyncio.get_running_loop().create_future()
        self.send({**data, "id": request_id})
        try:
            return await asyncio.wait_for(reply, 30)
        finally:
            self.replies.pop(request_id, None)

    def _message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        request_id = message.get("id")
        sent = self.sent.pop(request_id, None) if request_id is not None else None
        if sent is not None:  # a move's answer
            sent_at, race = sent
            self.run.answered(time.perf_counter() - sent_at, message)
            if race != self.race:
                # A move of a race that has ended since: its revision, its legal moves
                # and its "race over" are that race's, not the one dealt since.
                self._schedule()
                return
            if kind == "ack":
                self.rev = message["rev"]
                delta = message.get("delta") or {}
                self.legal = list(delta.get("legal", self.legal))
                if delta.get("status", "playing") != "playing":
                    self.racing = False
            else:
                if message.get("rev") is not None:
                    self.rev = message["rev"]
                if message.get("code") in ("race_over", "game_over", "race_not_started"):
                    self.racing = False  # until the next race starts
            self._schedule()
            return
        reply = self.replies.get(request_id) if request_id is not None else None
        if reply is not None:
            if not reply.done():
                reply.set_result(message)
            return
        if kind == "race_started" and "view" in message:
            self.race += 1
            self.rev = message.get("rev", 0)
            self.legal = list(message["view"].get("legal", []))
            self.racing = message["view"].get("status") == "playing"
            self._schedule()
        elif kind == "room" and "view" in message.get("room", {}).get("you", {}):
            you = message["room"]["you"]
            self.race += 1
            self.rev, self.legal = you["rev"], list(you["view"].get("legal", []))
        elif kind == "race_over" and self.host and self.run.running:
            self.run.spawn(self._again())

    def _schedule(self) -> None:
        # One move in flight and one timer at a time: a race that starts again (a
        # rematch) while a move is in flight or a timer runs must not start a second
        # chain of moves beside the first.
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if not self.racing or not self.run.running or self.sent:
            return
        pace = self.run.test.pace_s
        delay = pace * (1 + self.run.test.jitter * (2 * random.random() - 1))
        self.timer = asyncio.get_running_loop().call_later(max(0.0, delay), self._move)

    def _move(self) -> None:
        self.timer = None
        if not self.racing or not self.run.running:
            return
        if random.random() < self.run.test.illegal_rate or not self.legal:
            move = random.choice(_ILLEGAL)
        else:
            draws = [m for m in self.legal if m in ("d", "rd")]
            others = [m for m in self.legal if m not in ("d", "rd")]
            move = random.choice(
                draws if draws and (not others or random.random() < 0.5) else others
            )
        request_id = next(self.ids)
        self.sent[request_id] = (time.perf_counter(), self.race)
        self.send({"type": "move", "id": request_id, "move": move, "rev": self.rev})

    async def _again(self) -> None:
        with contextlib.suppress(ConnectionError, TimeoutError):
            await self.request({"type": "rematch"})
            await asyncio.sleep(0.5)  # the others see the lobby
            await self.request({"type": "start"})


# -- one process's bots --------------------------------------------------------------------


class _Run:
    """The bots of one process, and what they saw since the last report."""

    def __init__(self, test: LoadTest, first: int, count: int) -> None:
        self.test = test
        self.first = first
        self.count = count
        self.running = True
        self.bots: list[_Bot] = []
        self.report = Report()
        self.tasks: set[asyncio.Task[Any]] = set()
        share = -(-test.joining // test.processes) if test.joining > 0 else 0
        self.joining = asyncio.Semaphore(share) if share else contextlib.nullcontext()
        self.pending = 0
        """Bots not yet in (or failed to join)."""
        self.ramped = asyncio.Event()
        """Set once every bot of the process is in its room or has failed to join."""

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def answered(self, seconds: float, message: dict[str, Any]) -> None:
        report = self.report
        report.moves += 1
        report.histogram[bisect.bisect_left(_BOUNDS, seconds)] += 1
        if message.get("type") == "error":
            report.refused += 1
            report.errors[str(message.get("code"))] += 1

    def lost(self, bot: _Bot) -> None:
        if self.running:
            self.report.errors["connection_lost"] += 1

    def take(self) -> Report:
        report, self.report = self.report, Report()
        open_ = [
            b for b in self.bots if b.upgraded and b.transport and not b.transport.is_closing()
        ]
        report.connected = sum(1 for b in open_ if not b.watching)
        report.spectators = sum(1 for b in open_ if b.watching)
        return report

    async def connect(self, index: int) -> _Bot:
        url = urllib.parse.urlsplit(self.test.url)
        address = None
        if self.test.addresses:
            address = f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}"
        loop = asyncio.get_running_loop()
        _, bot = await loop.create_connection(
            lambda: _Bot(self, address), url.hostname or "127.0.0.1", url.port or 80
        )
        try:
            await asyncio.wait_for(bot.opened, self.test.handshake_timeout_s)
        except BaseException:
            if bot.transport is not None:
                bot.transport.close()
            raise
        self.bots.append(bot)
        return bot

    async def player(self, index: int) -> None:
        """One bot: connect, hello, create or join its room, race."""
        try:
            room_index, seat = divmod(index, self.test.rooms_of)
            if seat:
                # A guest joins once its host has made the room, so that no guest holds
                # one of the places to join (``joining``) while its host waits for one.
                await asyncio.wait_for(self.made[room_index].wait(), 60)
            async with self.joining:
                bot = await self.connect(index)
                hello = await bot.request(
                    {"type": "hello", "name": f"bot{index}", "bot": True, "legal_moves": True}
                )
                if hello["type"] != "welcome":
                    self.report.errors[str(hello.get("code"))] += 1
                    return
                if seat == 0:
                    bot.host = True
                    made = await bot.request(
                        {
                            "type": "create_room",
                            "variant": self.test.variant,
                            "max_players": self.test.rooms_of,
                            "countdown": 0,
                            "undo": True,
                            "time_limit": self.test.time_limit_s,
                            "spectators": "live" if self.test.spectators else "off",
                            "winnable": self.test.winnable,
                        }
                    )
                    if made["type"] != "room":
                        self.report.errors[str(made.get("code"))] += 1
                        return
                    self.codes[room_index] = made["room"]["code"]
                    self.joined[room_index] = asyncio.Event()
                    self.made[room_index].set()
                else:
                    joined = await bot.request(
                        {"type": "join_room", "code": self.codes[room_index]}
                    )
                    if joined["type"] != "room":
                        self.report.errors[str(joined.get("code"))] += 1
            if seat == 0:
                await asyncio.wait_for(self.joined[room_index].wait(), 60)
                bot.racing = True
                started = await bot.request({"type": "start"})
                if started["type"] == "error":
                    self.report.errors[str(started.get("code"))] += 1
                return
            bot.racing = True
            self.seated[room_index] += 1
            if self.seated[room_index] >= self.seats(room_index) - 1:
                self.joined[room_index].set()
        except (ConnectionError, OSError, TimeoutError) as error:
            self.report.errors[type(error).__name__] += 1
        finally:
            self._in()

    def _in(self) -> None:
        """A bot is racing or watching, or will not be: once every bot is, the ramp is
        over."""
        self.pending -= 1
        if self.pending <= 0:
            self.ramped.set()

    def seats(self, room_index: int) -> int:
        first = self.first + room_index * self.test.rooms_of
        return min(self.test.rooms_of, self.first + self.count - first)

    async def spectator(self, index: int, room_index: int) -> None:
        try:
            await asyncio.wait_for(self.made[room_index].wait(), 60)
            async with self.joining:
                bot = await self.connect(index)
                bot.watching = True
                await bot.request({"type": "hello", "name": f"watch{index}", "bot": True})
                joined = await bot.request(
                    {"type": "join_room", "code": self.codes[room_index], "role": "spectator"}
                )
                if joined["type"] != "room":
                    self.report.errors[str(joined.get("code"))] += 1
        except (ConnectionError, OSError, TimeoutError) as error:
            self.report.errors[type(error).__name__] += 1
        finally:
            self._in()

    async def start(self, spectators: int) -> None:
        rooms = math.ceil(self.count / self.test.rooms_of)
        self.codes: dict[int, str] = {}
        self.made = {r: asyncio.Event() for r in range(rooms)}
        self.joined: dict[int, asyncio.Event] = {}
        self.seated: Counter[int] = Counter()
        self.pending = self.count + spectators
        if not self.pending:
            self.ramped.set()
        step = self.test.ramp_s / max(1, self.count + spectators)
        for offset in range(self.count):
            index = self.first + offset
            self.spawn(self._later(offset * step, self.player(index - self.first)))
        for n in range(spectators):
            self.spawn(
                self._later(
                    (self.count + n) * step, self.spectator(10**6 + self.first + n, n % rooms)
                )
            )

    @staticmethod
    async def _later(delay: float, coro: Any) -> None:
        await asyncio.sleep(delay)
        await coro

    async def stop(self) -> None:
        self.running = False
        for bot in self.bots:
            if bot.transport is not None:
                bot.transport.close()
        for task in list(self.tasks):
            task.cancel()


LAG_EVERY_S = 0.01
"""How often the load process checks its own event loop for a stall."""


async def _watch_lag(run: _Run) -> None:
    """Record in each interval's report the longest its event loop was late."""
    loop = asyncio.get_running_loop()
    while run.running:
        due = loop.time() + LAG_EVERY_S
        await asyncio.sleep(LAG_EVERY_S)
        late = (loop.time() - due) * 1000
        if late > run.report.lag_ms:
            run.report.lag_ms = late


def _quiet_collector() -> None:
    """Keep the cyclic collector from stalling the load process: its bots live for the
    whole test, and a full collection over thousands of them holds every round trip in
    flight (as the node's own tuning, ``solrace.server.app.tune_gc``)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 10)


def _worker(test: LoadTest, first: int, count: int, spectators: int, queue: Any) -> None:
    """A child process: its share of the bots, a report to the parent each second."""

    async def main() -> None:
        _quiet_collector()
        run = _Run(test, first, count)
        await run.start(spectators)
        run.spawn(_watch_lag(run))
        began = time.monotonic()
        frozen = False
        while time.monotonic() - began < test.duration_s:
            await asyncio.sleep(1.0)
            if not frozen and run.ramped.is_set():
                # The bots are in: what they hold is left out of every later scan.
                frozen = True
                gc.freeze()
            queue.put(run.take())
        await run.stop()
        queue.put(None)

    asyncio.run(main())


# -- the whole test ------------------------------------------------------------------------


def _server_figures(metrics_url: str | None) -> tuple[float | None, float | None]:
    """The server's resident memory (MiB) and CPU seconds so far, from its metrics."""
    if not metrics_url:
        return None, None
    try:
        with urllib.request.urlopen(metrics_url, timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return None, None

    def value(name: str) -> float | None:
        match = re.search(rf"^{name}\s+([0-9.e+]+)$", text, re.M)
        return float(match.group(1)) if match else None

    rss = value("process_resident_memory_bytes")
    return (rss / (1 << 20) if rss is not None else None), value("process_cpu_seconds_total")


def run_load_test(test: LoadTest, on_second: Any = None) -> tuple[Report, list[dict[str, Any]]]:
    """Run the test; return the whole run's report and each second's figures.

    ``on_second(figures)`` is called with each second's figures as they come.
    """
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    share, extra = divmod(test.players, test.processes)
    watch_share, watch_extra = divmod(test.spectators, test.processes)
    workers = []
    first = 0
    for n in range(test.processes):
        # Rooms never straddle two processes: shares are whole rooms where they can be.
        count = share + (1 if n < extra else 0)
        count -= count % test.rooms_of if n < test.processes - 1 and count > test.rooms_of else 0
        if n == test.processes - 1:
            count = test.players - first
        worker = context.Process(
            target=_worker,
            args=(test, first, count, watch_share + (1 if n < watch_extra else 0), queue),
            daemon=True,
        )
        worker.start()
        workers.append(worker)
        first += count
    total = Report()
    seconds: list[dict[str, Any]] = []
    cpu_before = _server_figures(test.metrics_url)[1]
    began = time.monotonic()
    last_cpu, last_at = cpu_before, began
    pending = Report()
    got = 0
    done = 0
    while done < len(workers):
        item = queue.get()
        if item is None:
            done += 1
            continue
        pending.add(item)
        got += 1
        if got % len(workers) == 0:
            now = time.monotonic()
            pending.seconds = 1.0
            pending.rss_mib, cpu = _server_figures(test.metrics_url)
            if cpu is not None and last_cpu is not None:
                pending.cpu = round((cpu - last_cpu) / (now - last_at), 3)
            last_cpu, last_at = cpu, now
            figures = pending.figures()
            seconds.append(figures)
            if on_second is not None:
                on_second(figures)
            connected = pending.connected
            spectators_seen = pending.spectators
            total.add(pending)
            total.connected = connected
            total.spectators = spectators_seen
            pending = Report()
    for worker in workers:
        worker.join(5)
    total.seconds = time.monotonic() - began
    total.rss_mib, cpu_after = _server_figures(test.metrics_url)
    if cpu_after is not None and cpu_before is not None:
        total.cpu = round((cpu_after - cpu_before) / total.seconds, 3)
    return total, seconds


def format_table(report: Report) -> str:
    """The final table."""
    figures = report.figures()
    rows = [
        ("players connected", f"{figures['connected']:,}"),
        ("spectators connected", f"{figures['spectators']:,}"),
        ("moves", f"{figures['moves']:,} ({figures['moves_per_s']:,}/s)"),
        (
            "move round trip p50 / p95 / p99",
            f"{figures['p50_ms']} / {figures['p95_ms']} / {figures['p99_ms']} ms",
        ),
        ("moves refused", f"{figures['refused']:,}"),
        ("server RSS", "n/a" if report.rss_mib is None else f"{report.rss_mib:.1f} MiB"),
        ("server CPU (cores)", "n/a" if report.cpu is None else f"{report.cpu:.2f}"),
        ("load's own longest stall", f"{figures['load_lag_ms']} ms"),
    ]
    for code, count in sorted(report.errors.items()):
        rows.append((f"  {code}", f"{count:,}"))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def as_json(report: Report, seconds: list[dict[str, Any]]) -> str:
    """The report and each second's figures, as JSON."""
    return json.dumps({"total": report.figures(), "seconds": seconds}, indent=2)
