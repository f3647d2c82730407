"""Frames pushed in one loop pass leave in one socket write, in the order they were made."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import TIMEOUT
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

from solrace.server.connection import Connection, Cork


async def run_server(handler: Any) -> tuple[Any, int]:
    server = await serve(handler, "127.0.0.1", 0, create_connection=Connection, compression=None)
    port = int(next(iter(server.sockets)).getsockname()[1])
    return server, port


async def test_pushed_frames_share_one_write_and_keep_their_order_with_sends() -> None:
    writes: list[bytes] = []
    done = asyncio.Event()

    async def handler(ws: Any) -> None:
        assert isinstance(ws, Connection)
        ws.cork = Cork()
        ws.start_reading()
        await ws.recv()  # the client's go
        real_write = ws.transport.write

        def counting_write(data: bytes) -> None:
            writes.append(bytes(data))
            real_write(data)

        ws.transport.write = counting_write  # type: ignore[method-assign]
        for text in ("a", "b", "c"):
            ws.push(text.encode())
        assert writes == []  # nothing leaves before the pass ends
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert len(writes) == 1  # three frames, one write
        ws.push(b"d")
        await ws.send(b"e")  # a send sends what waits first
        assert len(writes) == 2
        ws.push(b"f")
        await done.wait()

    server, port = await run_server(handler)
    try:
        async with asyncio.timeout(TIMEOUT), connect(f"ws://127.0.0.1:{port}") as client:
            await client.send("go")
            got = [await client.recv() for _ in range(6)]
            done.set()
        assert got == [b"a", b"b", b"c", b"d", b"e", b"f"]
    finally:
        server.close()
        await server.wait_closed()


async def test_a_pong_waits_with_the_pushed_frames_and_still_goes() -> None:
    async def handler(ws: Any) -> None:
        ws.cork = Cork()
        ws.start_reading()
        async for message in ws:
            ws.push(message)

    server, port = await run_server(handler)
    try:
        async with asyncio.timeout(TIMEOUT), connect(f"ws://127.0.0.1:{port}") as client:
            for i in range(20):
                await client.send(f"m{i}".encode())
                pong = await client.ping()
                assert await client.recv() == f"m{i}".encode()
                await pong
    finally:
        server.close()
        await server.wait_closed()


async def test_reads_are_at_most_a_chunk_and_a_larger_message_still_arrives_whole() -> None:
    from solrace.server.connection import READ_CHUNK

    sizes: list[int] = []

    async def handler(ws: Any) -> None:
        assert ws.transport.max_size == READ_CHUNK
        ws.start_reading()
        message = await ws.recv()
        sizes.append(len(message))
        await ws.send(message[:16])

    server = await serve(
        handler, "127.0.0.1", 0, create_connection=Connection, max_size=4 * READ_CHUNK
    )
    port = int(next(iter(server.sockets)).getsockname()[1])
    try:
        async with (
            asyncio.timeout(TIMEOUT),
            connect(f"ws://127.0.0.1:{port}", max_size=None) as client,
        ):
            payload = bytes(range(256)) * (3 * READ_CHUNK // 256)
            await client.send(payload)
            assert await client.recv() == payload[:16]
        assert sizes == [3 * READ_CHUNK]
    finally:
        server.close()
        await server.wait_closed()


def test_frame_header_matches_websockets_serialisation() -> None:
    from websockets.frames import Frame, Opcode

    from solrace.server.connection import OP_BINARY, OP_TEXT, frame_header

    for length in (0, 1, 125, 126, 127, 65535, 65536, 70000):
        payload = bytes(length)
        for first, opcode in ((OP_BINARY, Opcode.BINARY), (OP_TEXT, Opcode.TEXT)):
            expected = Frame(opcode, payload).serialize(mask=False)
            assert frame_header(first, length) + payload == expected, (length, opcode)


async def test_pushed_frames_of_every_header_size_arrive_whole() -> None:
    sizes = (0, 125, 126, 65535, 65536, 70000)

    async def handler(ws: Any) -> None:
        ws.cork = Cork()
        ws.start_reading()
        await ws.recv()
        for size in sizes:
            ws.push(bytes([size % 251]) * size)
        ws.push("text é")
        await ws.wait_closed()

    server = await serve(handler, "127.0.0.1", 0, create_connection=Connection)
    port = int(next(iter(server.sockets)).getsockname()[1])
    try:
        async with (
            asyncio.timeout(TIMEOUT),
            connect(f"ws://127.0.0.1:{port}", max_size=None) as client,
        ):
            await client.send("go")
            for size in sizes:
                assert await client.recv() == bytes([size % 251]) * size
            assert await client.recv() == "text é"
    finally:
        server.close()
        await server.wait_closed()


async def test_a_close_never_overtakes_frames_pushed_before_it() -> None:
    async def handler(ws: Any) -> None:
        ws.cork = Cork()
        ws.start_reading()
        await ws.recv()
        for text in ("a", "b", "c"):
            ws.push(text.encode())
        await ws.close(4000, "bye")  # in the same pass as the pushes

    server = await serve(handler, "127.0.0.1", 0, create_connection=Connection, compression=None)
    port = int(next(iter(server.sockets)).getsockname()[1])
    try:
        async with asyncio.timeout(TIMEOUT), connect(f"ws://127.0.0.1:{port}") as client:
            await client.send("go")
            got = [await client.recv() for _ in range(3)]
            assert got == [b"a", b"b", b"c"]
            await client.wait_closed()
            assert client.close_code == 4000
    finally:
        server.close()
        await server.wait_closed()


async def test_a_failure_websockets_closes_on_comes_after_the_frames_pushed_before_it() -> None:
    from connection_support import Peer, client_frame
    from websockets.frames import Frame, Opcode

    async def handler(ws: Any) -> None:
        ws.cork = Cork()

        def take(data: bytes) -> bool:
            ws.push(b"took " + data)
            return True

        ws.start_reading(take)
        await ws.wait_closed()

    server = await serve(handler, "127.0.0.1", 0, create_connection=Connection, compression=None)
    port = int(next(iter(server.sockets)).getsockname()[1])
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.open(port)
            unmasked = Frame(Opcode.BINARY, b"x").serialize(mask=False)
            ping = client_frame(Opcode.PING, b"p")
            await peer.write(client_frame(Opcode.BINARY, b"T1") + ping + unmasked, [1 << 20])
            assert await peer.frame() == (Opcode.BINARY, b"took T1")
            assert await peer.frame() == (Opcode.PONG, b"p")
            assert await peer.close_code() == 1002
            await peer.close()
    finally:
        server.close()
        await server.wait_closed()
