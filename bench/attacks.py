"""Attacks on a running node, as a script would make them, and the canary that must not feel them.

Each attack runs until it is told to stop (or has done what it came to do) and returns
what it got out of the node. Attackers pass for other addresses through the node's
trusted proxy (``--trusted-proxy 127.0.0.1``, the ``X-Real-IP`` header a proxy sets),
one address per attack, so that the canary (who sends no such header) is its own
address. Used by ``bench/abuse.py`` (latency figures) and ``tests/server/test_abuse.py``
(the bounds).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Subprotocol

from solrace.client import Client, ServerError

SUBPROTOCOL = "solrace.v1.msgpack"
PING_FRAME = bytes((0x89, 0x80 | 125)) + bytes(4) + b"p" * 125  # a masked 125-byte ping
PINGS = PING_FRAME * ((1 << 20) // len(PING_FRAME))  # 1 MiB of them


# -- a bare connection ---------------------------------------------------------------------


class Raw:
    """A websocket that sends requests and counts what comes back."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.token = ""
        self.player_id = ""

    @classmethod
    async def open(cls, url: str, address: str | None) -> Raw:
        headers = {"X-Real-IP": address} if address else None
        ws = await connect(
            url,
            subprotocols=[Subprotocol(SUBPROTOCOL)],
            compression=None,
            additional_headers=headers,
            open_timeout=10,
        )
        return cls(ws)

    async def request(self, data: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self.ids)
        await self.ws.send(msgpack.packb({**data, "id": request_id}))
        while True:
            reply = msgpack.unpackb(await self.ws.recv(), raw=False)
            if reply.get("id") == request_id:
                return dict(reply)

    async def hello(self, name: str | None = None, token: str | None = None) -> dict[str, Any]:
        reply = await self.request({"type": "hello", "name": name, "token": token})
        if reply["type"] == "welcome":
            self.token, self.player_id = reply["token"], reply["player_id"]
        return reply

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), 2)


@dataclass
class Tally:
    """What an attack got: replies by kind, and anything it wants to say."""

    replies: Counter[str] = field(default_factory=Counter)
    figures: dict[str, float] = field(default_factory=dict)

    def count(self, reply: dict[str, Any]) -> None:
        kind = reply["type"]
        self.replies[reply.get("code", kind) if kind == "error" else kind] += 1


def _address(n: int) -> str:
    return f"203.0.113.{n}"


# -- the attacks ---------------------------------------------------------------------------


def _flood_once(port: int, total: int, within: float) -> tuple[str, float]:
    """Send ``total`` bytes of pings after the handshake and never read."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        sock.settimeout(within)
        sock.connect(("127.0.0.1", port))
        sock.sendall(
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            b"X-Real-IP: " + _address(1).encode() + b"\r\n\r\n"
        )
        head = b""
        while b"\r\n\r\n" not in head:
            more = sock.recv(1)
            if not more:
                return "refused", 0.0
            head += more
        start = time.monotonic()
        sent = 0
        try:
            while sent < total:
                sock.sendall(PINGS)
                sent += len(PINGS)
        except (ConnectionResetError, BrokenPipeError):
            return "dropped", time.monotonic() - start
        except TimeoutError:
            return "stalled", time.monotonic() - start
        return "sent", time.monotonic() - start
    finally:
        sock.close()


async def ping_flood(
    port: int, stop: asyncio.Event, total: int = 200 << 20, within: float = 5.0
) -> Tally:
    """Pings and never a read, 200 MiB a connection, again and again until ``stop``."""
    tally = Tally()
    ends: list[float] = []
    halt = threading.Event()

    def run() -> None:
        while not halt.is_set():
            outcome, took = _flood_once(port, total, within)
            tally.replies[outcome] += 1
            ends.append(took)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    await stop.wait()
    halt.set()
    await asyncio.to_thread(thread.join, within + 5)
    tally.figures["longest_s"] = max(ends, default=0.0)
    return tally


async def half_open(
    port: int, stop: asyncio.Event, sockets: int = 3000, source: str = "127.0.0.9"
) -> Tally:
    """``sockets`` connections from one address (``source``, a loopback address that is no
    trusted proxy), each sending the start of a request and never its end, held until
    ``stop``; then whether a newcomer from another address still gets in.

    ``held`` counts those the node kept open; ``refused`` those it answered at once
    (``429``: its address has as many as it may; ``503``: the node is full)."""
    tally = Tally()
    writers: list[asyncio.StreamWriter] = []
    answers: list[asyncio.Task[bytes]] = []
    for _ in range(sockets):
        if stop.is_set():
            break
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, local_addr=(source, 0)
            )
        except OSError:
            tally.replies["connect_failed"] += 1
            continue
        writer.write(b"GET / HTTP/1.1\r\nHost: solrace\r\n")
        writers.append(writer)
        answers.append(asyncio.ensure_future(reader.read(64)))
    await asyncio.sleep(0.5)  # refusals come back at once
    for answer in answers:
        if answer.done() and not answer.cancelled() and answer.exception() is None:
            status = answer.result()[9:12].decode(errors="replace") or "closed"
            tally.replies["refused " + status if status.isdigit() else status] += 1
        else:
            tally.replies["held"] += 1
    newcomer = await Raw.open(f"ws://127.0.0.1:{port}/", None)  # from 127.0.0.1
    tally.figures["newcomer_pong"] = float(
        (await newcomer.request({"type": "ping"}))["type"] == "pong"
    )
    await newcomer.close()
    await stop.wait()
    for answer in answers:
        answer.cancel()
    for writer in writers:
        writer.close()
    return tally


async def page_flood(
    port: int, stop: asyncio.Event, source: str = "127.0.0.9", concurrency: int = 64
) -> Tally:
    """The page (``GET /``) asked for flat out from one address (``source``, no trusted
    proxy), ``concurrency`` at a time, a new connection each, until ``stop``: ``200`` and
    ``429`` count the answers."""
    tally = Tally()
    started = time.monotonic()

    async def one() -> None:
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", port, local_addr=(source, 0)
                )
                writer.write(b"GET / HTTP/1.1\r\nHost: solrace\r\n\r\n")
                head = await reader.read(16)
                writer.close()
            except OSError:
                tally.replies["connect_failed"] += 1
                continue
            tally.replies[head[9:12].decode(errors="replace") or "closed"] += 1

    await asyncio.gather(*(one() for _ in range(concurrency)))
    tally.figures["seconds"] = time.monotonic() - started
    return tally


async def room_flood(url: str, stop: asyncio.Event, attempts: int = 2000) -> Tally:
    """A fresh identity a room, ``attempts`` times from one address (32 at a time)."""
    tally = Tally()

    async def one(n: int) -> None:
        try:
            raw = await Raw.open(url, _address(2))
        except (InvalidStatus, OSError, ConnectionClosed):
            tally.replies["connection_refused"] += 1
            return
        try:
            hello = await raw.hello(f"r{n}")
            tally.count(hello)
            if hello["type"] == "welcome":
                tally.count(await raw.request({"type": "create_room", "variant": "canfield"}))
        except ConnectionClosed:
            tally.replies["closed"] += 1
        finally:
            await raw.close()

    for start in range(0, attempts, 32):  # fewer at once than an address may connect
        if stop.is_set():
            break
        await asyncio.gather(*(one(n) for n in range(start, min(start + 32, attempts))))
    return tally


async def renew_rate(url: str, stop: asyncio.Event, seconds: float = 3.0) -> Tally:
    """One identity that reconnects every 0.2 s to renew its rate, pinging flat out."""
    tally = Tally()
    first = await Raw.open(url, _address(3))
    await first.hello("renewer")
    token = first.token
    await first.close()
    began = time.monotonic()
    while time.monotonic() - began < seconds and not stop.is_set():
        raw = await Raw.open(url, _address(3))
        await raw.hello(token=token)
        until = time.monotonic() + 0.2
        try:
            while time.monotonic() < until:
                tally.count(await raw.request({"type": "ping"}))
        except ConnectionClosed:
            tally.replies["closed"] += 1
        await raw.close()
    tally.figures["pongs_per_s"] = tally.replies["pong"] / (time.monotonic() - began)
    return tally


async def leaderboard_flood(url: str, stop: asyncio.Event, connections: int = 150) -> Tally:
    """``connections`` identities of one address, each asking for a leaderboard at the
    identity's allowed rate (30 a second)."""
    tally = Tally()

    async def one(n: int) -> None:
        try:
            raw = await Raw.open(url, _address(4))
            hello = await raw.hello(f"l{n}")
        except (InvalidStatus, OSError, ConnectionClosed):
            tally.replies["connection_refused"] += 1
            return
        if hello["type"] != "welcome":
            tally.count(hello)
            await raw.close()
            return
        try:
            while not stop.is_set():
                started = time.monotonic()
                tally.count(await raw.request({"type": "get_leaderboard", "variant": "canfield"}))
                await asyncio.sleep(max(0.0, 1 / 30 - (time.monotonic() - started)))
        except ConnectionClosed:
            tally.replies["closed"] += 1
        finally:
            await raw.close()

    await asyncio.gather(*(one(n) for n in range(connections)))
    return tally


async def spectator_churn(url: str, stop: asyncio.Event, code: str, identities: int = 4) -> Tally:
    """Identities of one address joining and leaving a room as spectators, flat out."""
    tally = Tally()

    async def one(n: int) -> None:
        raw = await Raw.open(url, _address(5))
        try:
            if (await raw.hello(f"s{n}"))["type"] != "welcome":
                return
            while not stop.is_set():
                joined = await raw.request({"type": "join_room", "code": code, "role": "spectator"})
                tally.count(joined)
                if joined["type"] == "room":
                    tally.count(await raw.request({"type": "leave_room"}))
                else:
                    await asyncio.sleep(min(1.0, float(joined.get("retry_after") or 0.1)))
        except ConnectionClosed:
            tally.replies["closed"] += 1
        finally:
            await raw.close()

    await asyncio.gather(*(one(n) for n in range(identities)))
    return tally


async def mint_identities(url: str, stop: asyncio.Event, seconds: float = 2.0) -> Tally:
    """New identities from one address, as fast as a connection gets them."""
    tally = Tally()
    raw = await Raw.open(url, _address(6))
    began = time.monotonic()
    try:
        while time.monotonic() - began < seconds and not stop.is_set():
            try:
                reply = await raw.hello(f"m{sum(tally.replies.values())}")
            except ConnectionClosed:  # the node hung up on it: connect again
                tally.replies["closed"] += 1
                reply = {"type": "closed"}
            else:
                tally.count(reply)
            if reply["type"] in ("welcome", "closed"):  # one identity a connection
                await raw.close()
                raw = await Raw.open(url, _address(6))
    finally:
        await raw.close()
    return tally


# -- the canary ----------------------------------------------------------------------------


@dataclass
class Canary:
    """A race in a room of its own: moves, and a ping now and then, with their latencies."""

    moves_ms: list[float] = field(default_factory=list)
    pings_ms: list[float] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    resumes: int = 0
    events: Counter[str] = field(default_factory=Counter)  # frames it got, by type

    def summary(self) -> dict[str, float]:
        def pct(values: list[float], p: float) -> float:
            if not values:
                return float("nan")
            ordered = sorted(values)
            return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

        return {
            "move_p50_ms": statistics.median(self.moves_ms) if self.moves_ms else float("nan"),
            "move_p99_ms": pct(self.moves_ms, 0.99),
            "ping_p99_ms": pct(self.pings_ms, 0.99),
            "refused": float(len(self.refused)),
        }


class _Counting(Client):
    """A client that counts the frames it gets, by type."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self.kinds: Counter[str] = Counter()

    def _decode(self, frame: bytes | str) -> dict[str, Any]:  # type: ignore[override]
        data = Client._decode(frame)
        self.kinds[str(data.get("type"))] += 1
        return data


async def canary_race(
    url: str, moves: int = 40, pace: float = 0.05, room: asyncio.Future[str] | None = None
) -> Canary:
    """Race alone, a draw and its undo at a person's pace; every move must be acked.

    ``room``, if given, is told the room's code as soon as it exists.
    """
    canary = Canary()
    client = _Counting(url, name="canary", request_timeout=30, legal_moves=False)
    await client.connect()
    try:
        made = await client.create_room("canfield", countdown=0, undo=True)
        if room is not None:
            room.set_result(made["code"])
        await client.start()
        await client.next_event("race_started", timeout=30)
        for n in range(moves):
            started = time.perf_counter()
            try:
                await client.move("u" if n % 2 else "d")
            except ServerError as error:
                canary.refused.append(error.code)
            canary.moves_ms.append((time.perf_counter() - started) * 1000)
            if n % 4 == 0:
                started = time.perf_counter()
                await client.ping()
                canary.pings_ms.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(pace)
        await client.resign()
    finally:
        canary.resumes = client.resumes
        canary.events = client.kinds
        await client.close()
    return canary
