"""The connection's own frame reader: whole masked binary messages are read without
websockets' parser, everything else goes to it, and nothing changes order or is lost,
however the bytes are cut up on the way, from the handshake request on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import TIMEOUT
from connection_support import Peer, Recorded, client_frame, recorded, upgrade_request
from websockets.asyncio.server import Server, serve
from websockets.frames import Frame, Opcode

from solrace.server.connection import HELD_LIMIT, Cork, Reads


async def start(
    max_size: int = 1 << 16, *, go: asyncio.Event | None = None, taking: bool = True
) -> tuple[Server, int, list[Recorded]]:
    """A server whose handler takes messages that start with T at once (``took``) and
    answers the rest from its task (``task``); with ``go``, it starts reading only once
    ``go`` is set; without ``taking``, it reads with no fast path."""
    connection, connections = recorded(max_size=max_size, max_buffer=1 << 20, cork=Cork())

    async def handler(ws: Any) -> None:
        def take(data: bytes) -> bool:
            if data.startswith(b"T"):
                ws.push(b"took " + data)
                return True
            return False

        if go is not None:
            await go.wait()
        ws.start_reading(take if taking else None)
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
        create_connection=connection,
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
    client_frame(Opcode.PING, b"q"),  # a control frame between two fragments
    client_frame(Opcode.CONT, b"part2"),
    client_frame(Opcode.TEXT, "héllo".encode()),
    client_frame(Opcode.BINARY, b"T" + b"x" * 199),  # a 16-bit length
    client_frame(Opcode.BINARY, b""),
    client_frame(Opcode.BINARY, b"T3"),
]
SENT = [b"T1", b"Q1", b"T2", b"F1-part2", "héllo", b"T" + b"x" * 199, b"", b"T3"]


async def answers(peer: Peer) -> list[bytes | str]:
    """The replies to STREAM, checked for how each message was handled."""
    replies: list[bytes | str] = []
    pongs: list[bytes] = []
    while len(replies) < len(SENT):
        opcode, data = await peer.frame()
        if opcode == Opcode.PONG:
            pongs.append(data)
        elif opcode == Opcode.TEXT:
            replies.append(data.decode())
        else:
            replies.append(data)
    assert pongs == [b"p", b"q"]
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
    return replies


@pytest.mark.parametrize("sizes", [[1 << 20], [1], [3, 7], [5, 1, 11, 2], [13]])
async def test_every_message_is_answered_once_in_order_however_the_bytes_are_cut(
    sizes: list[int],
) -> None:
    server, port, connections = await start()
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.open(port)
            ws = connections[0]
            await peer.write(b"".join(STREAM), sizes, lambda: ws.received)
            replies = await answers(peer)
        assert replies[0] == b"took T1"  # read here and taken at once
        assert ws._reads is Reads.FRAMES  # frames were split by the connection
        # websockets was given the request, then only whole frames it reads itself.
        request, *frames = ws.fed
        assert request.endswith(b"\r\n\r\n") and request.count(b"\r\n\r\n") == 1
        assert set(frames) <= set(STREAM) - {STREAM[0], STREAM[1], STREAM[3]}
        await peer.close()
    finally:
        server.close()
        await server.wait_closed()


# -- the handshake request and what follows it ---------------------------------------------


async def request_then_stream(sizes: list[int] | None = None, cut: int | None = None) -> None:
    """The request and STREAM written without waiting for the server's answer: in pieces
    of ``sizes``, or in two writes cut ``cut`` bytes before the request's end."""
    server, port, connections = await start()
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.connect(port)
            request = upgrade_request(port)
            data = request + b"".join(STREAM)
            while not connections:
                await asyncio.sleep(0)
            ws = connections[0]
            if cut is not None:
                sizes = [len(request) - cut, len(data)]
            assert sizes is not None
            await peer.write(data, sizes, lambda: ws.received)
            await peer.upgraded()
            replies = await answers(peer)
        # The first move came with the request, was held until the handler started
        # reading, and was then taken on the fast path.
        assert replies[0] == b"took T1"
        assert ws._reads is Reads.FRAMES
        assert b"".join(ws.fed).startswith(request)
        assert all(frame in STREAM for frame in _frames_after(ws.fed, request))
        await peer.close()
    finally:
        server.close()
        await server.wait_closed()


def _frames_after(fed: list[bytes], request: bytes) -> list[bytes]:
    """What websockets was given after the request: each must be one whole frame."""
    size, out = 0, []
    for chunk in fed:
        if size >= len(request):
            out.append(chunk)
        size += len(chunk)
    assert size - sum(map(len, out)) == len(request)  # no chunk straddles the blank line
    return out


async def test_the_request_and_the_first_frames_in_one_write() -> None:
    await request_then_stream([1 << 20])


@pytest.mark.parametrize("sizes", [[1], [2], [7], [40, 3], [100]])
async def test_the_request_split_across_writes(sizes: list[int]) -> None:
    await request_then_stream(sizes)


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
async def test_the_blank_line_split_across_writes(cut: int) -> None:
    # cut 1 to 3 splits b"\r\n\r\n" itself; 4 sends it whole with the frames.
    await request_then_stream(cut=cut)


async def test_bytes_held_for_the_handler_pause_reading_until_it_starts() -> None:
    go = asyncio.Event()
    server, port, connections = await start(go=go)
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.connect(port)
            moves = [client_frame(Opcode.BINARY, b"T%05d" % i + b"x" * 1000) for i in range(300)]
            data = b"".join(moves)
            assert len(data) > 2 * HELD_LIMIT
            peer.writer.write(upgrade_request(port) + data)
            await peer.upgraded()
            while not connections or connections[0].transport.is_reading():
                await asyncio.sleep(0)
            ws = connections[0]
            assert ws.take is None and ws._reads is Reads.HELD
            assert HELD_LIMIT < ws._held_size <= HELD_LIMIT + 256 * 1024  # one read past it
            go.set()
            for i in range(300):
                opcode, reply = await peer.frame()
                assert (opcode, reply) == (Opcode.BINARY, b"took T%05d" % i + b"x" * 1000)
            assert ws.transport.is_reading()
            await peer.close()
    finally:
        go.set()
        server.close()
        await server.wait_closed()


async def test_a_handler_that_reads_without_take_gets_every_message_in_its_task() -> None:
    server, port, connections = await start(taking=False)
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.connect(port)
            await peer.write(upgrade_request(port) + b"".join(STREAM), [1 << 20])
            await peer.upgraded()
            replies: list[bytes | str] = []
            while len(replies) < len(SENT):
                opcode, data = await peer.frame()
                if opcode != Opcode.PONG:
                    replies.append(data.decode() if opcode == Opcode.TEXT else data)
        assert replies[0] == b"task T1"  # no fast path without take
        assert [r.removeprefix("task-text ") for r in replies if isinstance(r, str)] == ["héllo"]
        assert connections[0]._reads is Reads.FRAMES
        await peer.close()
    finally:
        server.close()
        await server.wait_closed()


async def test_a_request_with_no_end_within_websockets_limits_is_refused_by_it() -> None:
    server, port, connections = await start()
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.connect(port)
            request = upgrade_request(port)[:-2]  # no blank line yet
            headers = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"y" * 100) for i in range(200))
            peer.writer.write(request + headers)
            head = await peer.reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 431"), head
            assert connections[0]._reads is not Reads.FRAMES
            await peer.close()
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
    ids=["unmasked", "too-large", "lone-continuation", "close"],  # masks are random
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
            await peer.close()
        assert connections[0]._reads is Reads.PASSED
    finally:
        server.close()
        await server.wait_closed()


async def test_a_binary_frame_inside_a_fragmented_message_is_refused() -> None:
    server, port, _ = await start()
    try:
        async with asyncio.timeout(TIMEOUT):
            peer = await Peer.open(port)
            data = client_frame(Opcode.TEXT, b"a", fin=False) + client_frame(Opcode.BINARY, b"T1")
            await peer.write(data, [1 << 20])
            assert await peer.close_code() == 1002  # not taken as a move: websockets refuses
            await peer.close()
    finally:
        server.close()
        await server.wait_closed()
