"""Bytes waiting to be sent to a client are capped (``max_write_buffer``), pongs included.

A client that does not read is closed with 1013, or aborted when even the close frame
could not go out; while a socket does not take what is written, the node reads nothing
from it either. The flood tests run a real node in a process of its own, so that its
memory can be read from /proc.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT
from connection_support import Peer, client_frame, upgrade_request
from process_support import PLAIN_DEAL_FLAGS
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import Opcode

from solrace.client import Client
from solrace.server import connection as connection_module
from solrace.server.connection import Connection, Cork

ROOT = Path(__file__).resolve().parents[2]
MiB = 1 << 20
FLOOD_BYTES = 200 * MiB
RSS_GROWTH = 16 * MiB  # the most a flood may add to the node's memory
CLOSED_WITHIN = TIMEOUT / 2  # 5 s at the default scale

# A ping with the largest payload a control frame may carry, masked with a zero key (so
# the payload goes as it is): 131 bytes in, 127 bytes of pong out.
PING = bytes((0x89, 0x80 | 125)) + bytes(4) + b"p" * 125
PINGS = PING * (MiB // len(PING))


# -- the cap on one connection ---------------------------------------------------------------


async def test_frames_pushed_past_the_cap_close_the_connection_with_1013() -> None:
    cap = 64 * 1024
    connection = Connection.configured(max_size=1 << 16, max_buffer=cap, cork=Cork())

    async def handler(ws: Any) -> None:
        ws.start_reading()
        await ws.recv()
        for i in range(200):  # 200 KiB in one pass: more than the cap
            ws.push(b"%04d" % i + b"x" * 1020)
        await ws.wait_closed()

    server = await serve(
        handler, "127.0.0.1", 0, create_connection=connection, compression=None, write_limit=cap
    )
    port = int(next(iter(server.sockets)).getsockname()[1])
    try:
        async with (
            asyncio.timeout(TIMEOUT),
            connect(f"ws://127.0.0.1:{port}", max_size=None) as client,
        ):
            await client.send("go")
            got = []
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    got.append(await client.recv())
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
            # The frames within the cap came, in order, and then the close.
            assert 32 < len(got) < 64
            assert got == [b"%04d" % i + b"x" * 1020 for i in range(len(got))]
    finally:
        server.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def idle_server(
    connection: type[Connection], **options: Any
) -> AsyncIterator[tuple[int, list[Connection]]]:
    """A server of ``connection``s that read (pings included) and send nothing of their
    own: its port, and its connections as they come."""
    connections: list[Connection] = []

    async def handler(ws: Any) -> None:
        connections.append(ws)
        ws.start_reading()
        await ws.wait_closed()

    server = await serve(
        handler,
        "127.0.0.1",
        0,
        create_connection=connection,
        compression=None,
        ping_interval=None,
        **options,
    )
    try:
        yield int(next(iter(server.sockets)).getsockname()[1]), connections
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
def pings_unlimited(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pings past their own allowance close a connection first (the test after the next):
    lifted for the tests that fill a connection's writes with pongs."""
    monkeypatch.setattr(connection_module, "PING_BURST", float(1 << 40))


@pytest.mark.usefixtures("pings_unlimited")
async def test_pongs_past_the_cap_abort_the_connection() -> None:
    cap = 64 * 1024
    connection = Connection.configured(max_size=1 << 16, max_buffer=cap, cork=Cork())
    async with idle_server(connection, write_limit=cap) as (port, connections):
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.open(port, rcvbuf=4096)
            ws = connections[0]
            with contextlib.suppress(ConnectionError):
                while not ws.transport.is_closing():  # pings, and never a read
                    peer.writer.write(PINGS[: 64 * len(PING)])
                    await asyncio.sleep(0)
            await ws.wait_closed()  # aborted at once: no closing handshake to wait for
            assert ws.protocol.close_sent is None  # no close frame was sent


async def test_pings_past_their_allowance_close_the_connection_with_1008() -> None:
    """Each ping is a pong to write: a client may send ``PING_BURST`` at once and
    ``PING_RATE`` a second, as a keepalive does; one more closes it with 1008."""
    connection = Connection.configured(max_size=1 << 16, max_buffer=1 << 20, cork=Cork())
    async with (
        idle_server(connection) as (port, connections),
        asyncio.timeout(TIMEOUT),
        connect(f"ws://127.0.0.1:{port}", ping_interval=None) as client,
    ):
        allowed = int(connection_module.PING_BURST)
        for _ in range(allowed):  # a burst: each answered
            await (await client.ping())
        with pytest.raises(ConnectionClosed) as closed:
            for _ in range(allowed):
                await client.ping()
            await client.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
        assert connections[0].protocol.close_sent is not None


def long_form_frame(opcode: Opcode, data: bytes) -> bytes:
    """A client's frame whose length is written in the 64-bit form, small as it is."""
    mask = b"\x01\x02\x03\x04"
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    return bytes((0x80 | opcode, 0x80 | 127)) + len(data).to_bytes(8, "big") + mask + masked


async def closed_for_pings(peer: Peer, frame: bytes, count: int) -> bytes:
    """Send ``count`` copies of ``frame`` at once; what the server sent until it closed."""
    peer.writer.write(frame * count)
    with contextlib.suppress(ConnectionError):
        await peer.writer.drain()
    return await peer.reader.read()  # up to the end: the server dropped the connection


@pytest.mark.parametrize("before", ["nothing", "a frame with a 64-bit length"])
@pytest.mark.parametrize("opcode", [Opcode.PING, Opcode.PONG])
async def test_pings_and_pongs_unasked_for_share_one_allowance(opcode: Opcode, before: str) -> None:
    """A pong costs a parse as a ping does: unasked for, pongs past the allowance close
    the connection with 1008 too, and so do either after a frame whose length is written
    in 64 bits (that frame once handed the connection to websockets' parser for good, and
    nothing counted the pings after it)."""
    connection = Connection.configured(max_size=1 << 16, max_buffer=1 << 20, cork=Cork())
    async with idle_server(connection) as (port, connections), asyncio.timeout(TIMEOUT):
        peer = await Peer.open(port)
        if before != "nothing":
            peer.writer.write(long_form_frame(Opcode.BINARY, b"\x80"))  # msgpack's {}
        sent = await closed_for_pings(
            peer, client_frame(opcode, b"x"), 4 * int(connection_module.PING_BURST)
        )
        assert b"\x88" in sent, sent[-40:]  # a close frame came
        assert (1008).to_bytes(2, "big") + b"too many pings" in sent
        await connections[0].wait_closed()


async def test_a_client_that_does_not_read_its_1013_is_dropped_after_the_close_timeout() -> None:
    cap = 64 * 1024
    connection = Connection.configured(max_size=1 << 16, max_buffer=cap, cork=Cork())
    connections: list[Connection] = []

    async def handler(ws: Any) -> None:
        connections.append(ws)
        ws.start_reading()
        await ws.recv()
        while ws.state.name == "OPEN":  # a frame each pass to a client that does not read
            ws.push(b"x" * 4096)
            await asyncio.sleep(0)
        await ws.wait_closed()

    server = await serve(
        handler,
        "127.0.0.1",
        0,
        create_connection=connection,
        compression=None,
        write_limit=cap,
        close_timeout=TIMEOUT / 20,
    )
    port = int(next(iter(server.sockets)).getsockname()[1])
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.open(port, rcvbuf=4096)
            await peer.write(client_frame(Opcode.TEXT, b"go"), [64])
            while not connections:
                await asyncio.sleep(0)
            ws = connections[0]
            await ws.wait_closed()
            assert ws.protocol.close_sent is not None  # sent, never answered: dropped
            assert ws.protocol.close_sent.code == 1013
            assert ws.transport.get_write_buffer_size() == 0
            await peer.close()
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.usefixtures("pings_unlimited")
async def test_reading_pauses_while_writes_are_paused() -> None:
    # Writes pause here well below the cap, so that the pause itself can be watched.
    connection = Connection.configured(max_size=1 << 16, max_buffer=64 * MiB, cork=Cork())
    connections: list[Connection] = []

    async def handler(ws: Any) -> None:
        connections.append(ws)
        ws.start_reading()
        await ws.wait_closed()

    server = await serve(
        handler,
        "127.0.0.1",
        0,
        create_connection=connection,
        compression=None,
        write_limit=16 * 1024,
        ping_interval=None,
    )
    port = int(next(iter(server.sockets)).getsockname()[1])
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.open(port, rcvbuf=4096)
            ws = connections[0]
            sent = 0
            writer = peer.writer
            while ws.transport.is_reading():  # pings, and never a read
                writer.write(PINGS[: 64 * len(PING)])
                sent += 64
                await asyncio.sleep(0)
            assert ws.paused  # websockets' own flow control saw the pause too
            waiting = ws.transport.get_write_buffer_size()
            assert 16 * 1024 < waiting < 16 * 1024 + 200 * 1024  # a read or so past it
            # The client reads again: writes resume, reading too, and every ping is answered.
            pongs = 0
            while pongs < sent:
                opcode, data = await peer.frame()
                assert (opcode, data) == (Opcode.PONG, b"p" * 125)
                pongs += 1
            assert ws.transport.is_reading() and not ws.paused
            await peer.close()
    finally:
        server.close()
        await server.wait_closed()


class _Transport:
    def __init__(self) -> None:
        self.reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True


def test_reading_resumes_only_once_every_reason_to_pause_is_gone() -> None:
    ws = Connection.__new__(Connection)
    transport = _Transport()
    ws.transport = transport  # type: ignore[assignment]
    ws._hold(1)  # the queue is full
    ws._hold(2)  # writes are paused
    assert not transport.reading
    ws._release(2)  # writes resume, but the queue is still full
    assert not transport.reading
    ws._release(2)
    assert not transport.reading
    ws._release(1)
    assert transport.reading


# -- a node in a process of its own ------------------------------------------------------------


@dataclass
class NodeProcess:
    """``solrace serve`` on a free loopback port."""

    proc: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    def rss(self) -> int:
        """The process's resident memory, in bytes."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS in /proc/PID/status")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def node_process(tmp_path: Path) -> Iterator[NodeProcess]:
    """A node started with ``python3 -m solrace serve``, stopped at the end."""
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc")
    port = _free_port()
    with (tmp_path / "node.log").open("wb") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "solrace", "serve"),
                *("--port", str(port), "--data-dir", str(tmp_path / "data")),
                *PLAIN_DEAL_FLAGS,
            ],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert proc.poll() is None, (tmp_path / "node.log").read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                break
            assert time.monotonic() < deadline, "the node did not start listening"
            time.sleep(0.05)
        yield NodeProcess(proc, port)
    finally:
        proc.terminate()
        try:
            proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class RefusedForRate(Exception):
    """The node answered the handshake 429: the address opened connections too fast."""


@dataclass
class Flood:
    """How one flood of pings ended."""

    outcome: str  # "dropped": the node closed or aborted the connection; "stalled"; "sent"
    seconds: float
    sent: int


def flood(port: int, total: int = FLOOD_BYTES, within: float = CLOSED_WITHIN) -> Flood:
    """Connect, do the handshake, then send ``total`` bytes of pings and never read."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        sock.settimeout(TIMEOUT)
        sock.connect(("127.0.0.1", port))
        sock.sendall(upgrade_request(port))
        head = b""
        while b"\r\n\r\n" not in head:
            more = sock.recv(1)  # byte by byte: nothing after the response is read
            assert more, "the node closed the connection during the handshake"
            head += more
        if head.startswith(b"HTTP/1.1 429"):
            raise RefusedForRate(head.decode(errors="replace"))
        assert head.startswith(b"HTTP/1.1 101"), head
        start = time.monotonic()
        deadline = start + within
        sent = 0
        try:
            while sent < total:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                sock.settimeout(left)
                sock.sendall(PINGS)
                sent += len(PINGS)
        except (ConnectionResetError, BrokenPipeError):
            return Flood("dropped", time.monotonic() - start, sent)
        except TimeoutError:
            return Flood("stalled", time.monotonic() - start, sent)
        return Flood("sent", time.monotonic() - start, sent)
    finally:
        sock.close()


class Sampler:
    """Reads a node's resident memory every few milliseconds in a thread; keeps the top."""

    def __init__(self, node: NodeProcess) -> None:
        self.node = node
        self.top = node.rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.002):
            self.top = max(self.top, self.node.rss())

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.top = max(self.top, self.node.rss())


async def warm_up(node: NodeProcess) -> None:
    """A client says hello and plays a little, so that the node has loaded what it uses."""
    async with Client(node.url, name="warm", request_timeout=TIMEOUT) as client:
        await client.create_room("canfield", countdown=0, undo=True)
        await client.start()
        await client.next_event("race_started", timeout=TIMEOUT)
        await client.move("d")


async def test_a_client_that_pings_and_never_reads_is_dropped_and_costs_little_memory(
    node_process: NodeProcess,
) -> None:
    await warm_up(node_process)
    before = node_process.rss()
    with Sampler(node_process) as memory:
        result = await asyncio.to_thread(flood, node_process.port)
    assert result.outcome == "dropped", result
    assert result.seconds < CLOSED_WITHIN
    grown = memory.top - before
    assert grown <= RSS_GROWTH, f"the node grew by {grown / MiB:.1f} MiB ({result})"
    assert node_process.proc.poll() is None
    await warm_up(node_process)  # and it still serves


async def test_a_race_in_another_room_goes_on_while_a_client_floods(
    node_process: NodeProcess,
) -> None:
    stop = threading.Event()
    floods: list[Flood] = []
    flooding = threading.Event()

    def flooder() -> None:
        while not stop.is_set():
            flooding.set()
            try:
                floods.append(flood(node_process.port))
            except RefusedForRate:
                # Dropped floods reconnect faster than an address may: wait as told and
                # flood on (the thread died here, and the race went on without a flood).
                stop.wait(1.0)

    thread = threading.Thread(target=flooder, daemon=True)
    async with Client(node_process.url, name="canary", request_timeout=TIMEOUT) as canary:
        await canary.create_room("canfield", countdown=0, undo=True)
        await canary.start()
        await canary.next_event("race_started", timeout=TIMEOUT)
        thread.start()
        try:
            await asyncio.to_thread(flooding.wait, TIMEOUT)
            moves = ["d", "u"] * 25  # within the rate limit's burst
            async with asyncio.timeout(TIMEOUT):
                for move in moves:
                    ack = await canary.move(move)
                    assert ack["type"] == "ack" and not ack.get("duplicate"), ack
                await canary.resign()
                over = await canary.next_event("race_over", timeout=TIMEOUT)
        finally:
            stop.set()
            await asyncio.to_thread(thread.join, 2 * TIMEOUT)
        assert canary.resumes == 0  # the canary's own connection was never dropped
    assert [r["status"] for r in over["results"]] == ["resigned"]
    assert floods and all(f.outcome == "dropped" for f in floods), floods
