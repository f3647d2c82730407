"""Nothing reaches a socket before the backend's writes are durable: every write of a
connection runs its ``before_write`` hook first (the server's is the backend's
``flush_writes``), whichever way the bytes leave."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAIN_DEALS, TIMEOUT
from connection_support import Peer, client_frame
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.frames import Opcode

from solrace.client import Client
from solrace.server import Node, ServerConfig, SolraceServer, make_backend
from solrace.server.connection import Connection, Cork


class Log:
    """Hook calls and socket writes, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def hook(self) -> None:
        self.events.append("hook")

    def watch(self, transport: Any) -> None:
        """Log every write to ``transport``."""
        real = transport.write

        def write(data: bytes) -> None:
            self.events.append("write")
            real(data)

        transport.write = write

    def check(self) -> int:
        """Every write came after a hook call made since the write before it."""
        hooked = False
        writes = 0
        for event in self.events:
            if event == "hook":
                hooked = True
            else:
                assert hooked, f"a write without the hook before it: {self.events}"
                hooked = False
                writes += 1
        return writes


def watched(log: Log, base: type[Connection]) -> type[Connection]:
    """``base`` whose sockets' writes go to ``log``."""

    class Watched(base):  # type: ignore[misc,valid-type]
        def connection_made(self, transport: Any) -> None:
            log.watch(transport)
            super().connection_made(transport)

    return Watched


async def test_every_way_out_runs_the_hook_first() -> None:
    log = Log()
    cork = Cork()
    connection = watched(
        log, Connection.configured(max_size=1 << 16, max_buffer=1 << 20, before_write=log.hook)
    )
    done = asyncio.Event()

    async def handler(ws: Any) -> None:
        ws.start_reading()
        await ws.recv()
        ws.cork = cork
        ws.push(b"pushed")  # through the cork
        await asyncio.sleep(0)
        await ws.send(b"sent")  # awaited
        ws.cork = None
        ws.push(b"broadcast")  # websockets' broadcast, without a cork
        ws.cork = cork
        await ws.recv()  # the client pings meanwhile: pongs
        ws.push(b"last")
        await done.wait()
        await ws.close()  # a close frame

    server = await serve(
        handler, "127.0.0.1", 0, create_connection=connection, compression=None, max_size=1 << 16
    )
    port = int(next(iter(server.sockets)).getsockname()[1])
    try:
        async with asyncio.timeout(TIMEOUT), connect(f"ws://127.0.0.1:{port}") as client:
            await client.send("go")
            assert [await client.recv() for _ in range(3)] == [b"pushed", b"sent", b"broadcast"]
            await (await client.ping())
            await client.send("again")
            assert await client.recv() == b"last"
            done.set()
            await client.wait_closed()
        assert log.check() >= 6  # the handshake response, 3 frames, a pong, last, close
    finally:
        server.close()
        await server.wait_closed()


async def test_frames_read_in_one_pass_wait_for_the_hook_too() -> None:
    """Moves taken on the fast path, a pong and a failure's close, all from one read."""
    log = Log()
    connection = watched(
        log,
        Connection.configured(
            max_size=1 << 16, max_buffer=1 << 20, cork=Cork(), before_write=log.hook
        ),
    )

    async def handler(ws: Any) -> None:
        def take(data: bytes) -> bool:
            ws.push(b"took " + data)
            return True

        ws.start_reading(take)
        await ws.wait_closed()

    server = await serve(
        handler, "127.0.0.1", 0, create_connection=connection, compression=None, max_size=1 << 16
    )
    port = int(next(iter(server.sockets)).getsockname()[1])
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.open(port)
            data = b"".join(client_frame(Opcode.BINARY, b"m%d" % i) for i in range(5))
            await peer.write(data + client_frame(Opcode.PING, b"p"), [1 << 20])
            for i in range(5):
                assert await peer.frame() == (Opcode.BINARY, b"took m%d" % i)
            assert await peer.frame() == (Opcode.PONG, b"p")
            await peer.write(client_frame(Opcode.CONT, b"x"), [1 << 20])
            assert await peer.close_code() == 1002
            await peer.close()
        assert log.check() >= 3
    finally:
        server.close()
        await server.wait_closed()


async def test_the_server_flushes_the_backends_writes_before_each_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = Log()
    real_made = Connection.connection_made

    def connection_made(self: Connection, transport: Any) -> None:
        log.watch(transport)
        real_made(self, transport)

    monkeypatch.setattr(Connection, "connection_made", connection_made)
    config = ServerConfig(
        port=0, data_dir=tmp_path / "data", progress_interval_s=0.0, **PLAIN_DEALS
    )
    config = replace(config, ping_interval_s=None)
    backend = make_backend(config)
    flush = backend.flush_writes

    def flush_writes() -> None:
        flush()
        log.hook()

    monkeypatch.setattr(backend, "flush_writes", flush_writes)
    server = SolraceServer(Node(backend, config), config)
    await server.start()
    try:
        async with asyncio.timeout(TIMEOUT):
            client = Client(f"ws://127.0.0.1:{server.port}/", name="ada", request_timeout=TIMEOUT)
            await client.connect()
            await client.create_room("canfield", countdown=0, undo=True)
            await client.start()
            await client.next_event("race_started", timeout=TIMEOUT)
            for move in ("d", "u", "d", "u", "d"):
                ack = await client.move(move)
                assert ack["type"] == "ack", ack
            await client.close()
        assert log.check() >= 8
    finally:
        await server.close()
