"""Helpers for the connection's tests: a raw websocket peer, and connections that record.

The peer writes bytes as it is told and can wait, after each piece, until the server's
connection has read it: each piece then comes to the server in a read of its own, so a
test of how the bytes are cut up does not depend on how the kernel and the event loop
happen to group them.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
from collections.abc import Callable, Iterator
from typing import Any

from websockets.frames import Frame, Opcode

from solrace.server.connection import Connection


def client_frame(opcode: Opcode, data: bytes, fin: bool = True) -> bytes:
    """A frame as a client sends it: masked."""
    return Frame(opcode, data, fin).serialize(mask=True)


def upgrade_request(port: int, *extra: str) -> bytes:
    """A websocket handshake request, with ``extra`` header lines."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET / HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def chunks(data: bytes, sizes: list[int]) -> Iterator[bytes]:
    """``data`` cut into pieces of ``sizes`` (repeated)."""
    pos, i = 0, 0
    while pos < len(data):
        step = sizes[i % len(sizes)]
        yield data[pos : pos + step]
        pos, i = pos + step, i + 1


class Recorded(Connection):
    """A connection that counts the bytes it read and keeps what it gave websockets."""

    made: list[Recorded]  # set per server by recorded()
    received = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.fed: list[bytes] = []
        self.made.append(self)

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        super().data_received(data)

    def _receive(self, data: bytes) -> None:
        self.fed.append(bytes(data))
        super()._receive(data)


def recorded(**settings: Any) -> tuple[type[Recorded], list[Recorded]]:
    """A Recorded class of one server's own, and the list its connections go to."""
    made: list[Recorded] = []
    cls = Recorded.configured(**settings) if settings else Recorded
    return type("Recorded", (cls,), {"made": made}), made  # type: ignore[return-value]


class Peer:
    """A websocket client over a bare TCP stream that writes bytes as it is told."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.written = 0

    @classmethod
    async def connect(cls, port: int, rcvbuf: int | None = None) -> Peer:
        """Open the TCP connection only (with a receive buffer of ``rcvbuf`` bytes)."""
        sock = socket.socket()
        if rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        reader, writer = await asyncio.open_connection(sock=sock)
        return cls(reader, writer)

    @classmethod
    async def open(cls, port: int, rcvbuf: int | None = None) -> Peer:
        """Connect and do the opening handshake."""
        return await cls.open_with(port, rcvbuf=rcvbuf)

    @classmethod
    async def open_with(cls, port: int, *extra: str, rcvbuf: int | None = None) -> Peer:
        """Connect and do the opening handshake, with ``extra`` header lines."""
        peer = await cls.connect(port, rcvbuf)
        request = upgrade_request(port, *extra)
        await peer.write(request, [len(request)])
        await peer.upgraded()
        return peer

    async def upgraded(self) -> None:
        """Read the server's handshake response, which must accept."""
        head = await self.reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head

    async def write(
        self, data: bytes, sizes: list[int], read_by: Callable[[], int] | None = None
    ) -> None:
        """Write ``data`` in pieces of ``sizes``; with ``read_by`` (the number of bytes
        the server has read), wait after each piece until the server has read it."""
        for piece in chunks(data, sizes):
            self.writer.write(piece)
            self.written += len(piece)
            await self.writer.drain()
            if read_by is None:
                await asyncio.sleep(0)
                continue
            while read_by() < self.written:
                await asyncio.sleep(0)

    async def frame(self) -> tuple[int, bytes]:
        """The next frame from the server: its opcode and payload."""
        first, second = await self.reader.readexactly(2)
        length = second & 0x7F
        if length == 126:
            length = int.from_bytes(await self.reader.readexactly(2), "big")
        elif length == 127:
            length = int.from_bytes(await self.reader.readexactly(8), "big")
        return first & 0x0F, await self.reader.readexactly(length)

    async def close_code(self) -> int:
        """Read frames up to the server's close frame; return its code."""
        while True:
            opcode, data = await self.frame()
            if opcode == Opcode.CLOSE:
                return int.from_bytes(data[:2], "big")

    async def close(self) -> None:
        """Close the TCP connection."""
        self.writer.close()
        await self.writer.wait_closed()
