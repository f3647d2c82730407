"""The connection's own frame reader: whole masked binary messages are read without
websockets' parser, everything else goes to it, and nothing changes order or is lost,
however the bytes are cut up on the way."""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.server import serve
from websockets.frames import Frame, Opcode

from solrace.server.app import _Connection, _Cork

TIMEOUT = 10.0


def client_frame(opcode: Opcode, data: bytes, fin: bool = True) -> bytes:
    return Frame(opcode, data, fin).serialize(mask=True)


def chunks(data: bytes, sizes: list[int]) -> Iterator[bytes]:
    pos, i = 0, 0
    while pos < len(data):
        step = sizes[i % len(sizes)]
        yield data[pos : pos + step]
        pos, i = pos + step, i + 1


class Peer:
    """A websocket client over a bare TCP stream that writes bytes as it is told."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Peer:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        return cls(reader, writer)

    async def write(self, data: bytes, sizes: list[int]) -> None:
        for piece in chunks(data, sizes):
            self.writer.write(piece)
            await self.writer.drain()
            await asyncio.sleep(0)

    async def frame(self) -> tuple[int, bytes]:
        first, second = await self.reader.readexactly(2)
        length = second & 0x7F
        if length == 126:
            length = int.from_bytes(await self.reader.readexactly(2), "big")
        elif length == 127:
            length = int.from_bytes(await self.reader.readexactly(8), "big")
        return first & 0x0F, await self.reader.readexactly(length)

    async def close_code(self) -> int:
        while True:
            opcode, data = await self.frame()
            if opcode == Opcode.CLOSE:
                return int.from_bytes(data[:2], "big")


async def start(max_size: int = 1 << 16) -> tuple[Any, int, list[Any]]:
    connections: list[Any] = []

    async def handler(ws: Any) -> None:
        assert isinstance(ws, _Connection)
        connections.append(ws)
        ws.cork = _Cork()

        def take(data: bytes) -> bool:
            if data.startswith(b"T"):
                ws.push(b"took " + data)
                return True
            return False

        ws.take = take
        async for message in ws:
            ws.queued -= 1  # as the server's own handler does
            if isinstance(message, str):
                await ws.send("task-text " + message)
            else:
                await ws.send(b"task " + message)

    server = await serve(
        handler,
        "127.0.0.1",
        0,
        create_connection=_Connection,
        compression=None,
        max_size=max_size,
        ping_interval=None,
    )
    return server, int(next(iter(server.sockets)).getsockname()[1]), connections


STREAM = [
    client_frame(Opcode.BINARY, b"T1"),
    client_frame(Opcode.BINARY, b"Q1"),
    client_frame(Opcode.PING, b"p"),
    client_frame(Opcode.BINARY, b"T2"),
    client_frame(Opcode.BINARY, b"F1-", fin=False),
    client_frame(Opcode.CONT, b"part2"),
    client_frame(Opcode.TEXT, "héllo".encode()),
    client_frame(Opcode.BINARY, b"T" + b"x" * 199),  # a 16-bit length
    client_frame(Opcode.BINARY, b""),
    client_frame(Opcode.BINARY, b"T3"),
]
SENT = [b"T1", b"Q1", b"T2", b"F1-part2", "héllo", b"T" + b"x" * 199, b"", b"T3"]


@pytest.mark.parametrize("sizes", [[1 << 20], [1], [3, 7], [5, 1, 11, 2], [13]])
async def test_every_message_is_answered_once_in_order_however_the_bytes_are_cut(
    sizes: list[int],
) -> None:
    server, port, connections = await start()
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.open(port)
            await peer.write(b"".join(STREAM), sizes)
            replies: list[bytes | str] = []
            pongs = 0
            while len(replies) < len(SENT):
                opcode, data = await peer.frame()
                if opcode == Opcode.PONG:
                    assert data == b"p"
                    pongs += 1
                elif opcode == Opcode.TEXT:
                    replies.append(data.decode())
                else:
                    replies.append(data)
        assert pongs == 1
        answered: list[bytes | str] = []
        for reply in replies:
            if isinstance(reply, str):
                assert reply.startswith("task-text ")
                answered.append(reply.removeprefix("task-text "))
            else:
                how, _, message = reply.partition(b" ")
                assert how in (b"took", b"task"), reply
                assert how == b"task" or message.startswith(b"T")
                answered.append(message)
        assert answered == SENT
        assert replies[0] == b"took T1"  # read here and taken at once
        assert connections[0]._reading is True  # frames were split by the connection
        peer.writer.close()
        await peer.writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (Frame(Opcode.BINARY, b"T1").serialize(mask=False), 1002),  # clients mask
        (client_frame(Opcode.BINARY, b"T" * 100), 1009),  # over max_size
        (client_frame(Opcode.CONT, b"x"), 1002),  # a continuation of nothing
        (client_frame(Opcode.CLOSE, (1000).to_bytes(2, "big")), 1000),
    ],
)
async def test_frames_websockets_refuses_or_closes_on_are_still_its_own(
    frame: bytes, code: int
) -> None:
    server, port, connections = await start(max_size=64)
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.open(port)
            await peer.write(client_frame(Opcode.BINARY, b"T0"), [1 << 20])
            assert await peer.frame() == (Opcode.BINARY, b"took T0")
            await peer.write(frame + client_frame(Opcode.BINARY, b"T9"), [1 << 20])
            assert await peer.close_code() == code
            assert await peer.reader.read() == b""  # nothing after the close: T9 is dropped
            peer.writer.close()
            await peer.writer.wait_closed()
        assert connections[0]._reading is False
    finally:
        server.close()
        await server.wait_closed()
