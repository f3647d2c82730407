"""The keepalive: a connection that goes silent is pinged, one that stays silent after
the ping is closed with 1011, and a client that keeps sending is never pinged."""

from __future__ import annotations

import asyncio

import msgpack
import pytest
from conftest import TIMEOUT, ServerFactory
from connection_support import Peer, client_frame
from websockets.frames import Opcode

from solrace.server.connection import Keepalive

INTERVAL = 0.3


def ping_request(request_id: int) -> bytes:
    """The protocol's own ping request (a request, not a websocket ping)."""
    return client_frame(Opcode.BINARY, msgpack.packb({"type": "ping", "id": request_id}))


async def frames_until(peer: Peer, seconds: float) -> list[int]:
    """The opcodes of the frames the server sends within ``seconds``, up to a ping."""
    seen: list[int] = []
    try:
        async with asyncio.timeout(seconds):
            while not seen or seen[-1] != Opcode.PING:
                opcode, _ = await peer.frame()
                seen.append(opcode)
    except TimeoutError:
        pass
    return seen


async def pinging_server(start_server: ServerFactory) -> tuple[Keepalive, Peer]:
    """A server whose keepalive pings after ``INTERVAL``, and a connection to it."""
    running = await start_server(ping_interval_s=INTERVAL, ping_timeout_s=INTERVAL)
    keepalive = running.server.keepalive
    assert keepalive is not None
    return keepalive, await Peer.open(running.server.port)


async def test_a_silent_connection_is_pinged_and_kept_while_it_answers(
    start_server: ServerFactory,
) -> None:
    keepalive, peer = await pinging_server(start_server)
    try:
        async with asyncio.timeout(TIMEOUT):
            opcode, data = await peer.frame()
            assert opcode == Opcode.PING
            # Answered, the connection stays; silent again, it is pinged again.
            await peer.write(client_frame(Opcode.PONG, data), [1 << 20])
            opcode, data = await peer.frame()
            assert opcode == Opcode.PING
            await peer.write(client_frame(Opcode.PONG, data), [1 << 20])
        assert keepalive.pings >= 2 and keepalive.timeouts == 0
    finally:
        await peer.close()


async def test_a_connection_silent_after_its_ping_is_closed_with_1011(
    start_server: ServerFactory,
) -> None:
    keepalive, peer = await pinging_server(start_server)
    try:
        async with asyncio.timeout(TIMEOUT):
            assert (await peer.frame())[0] == Opcode.PING  # never answered
            assert await peer.close_code() == 1011
            assert await peer.reader.read() == b""  # and the socket is closed
        assert keepalive.timeouts == 1
        assert not keepalive.connections
    finally:
        await peer.close()


async def test_a_client_that_keeps_sending_is_never_pinged(start_server: ServerFactory) -> None:
    keepalive, peer = await pinging_server(start_server)
    try:
        seen: list[int] = []
        for n in range(12):  # four intervals, a request every tenth of a second
            await peer.write(ping_request(n), [1 << 20])
            seen += await frames_until(peer, INTERVAL / 3)
        assert Opcode.PING not in seen
        assert seen.count(Opcode.BINARY) == 12  # every request answered
        assert keepalive.pings == 0
        # Then silent: pinged within the interval and a tick or two.
        seen = await frames_until(peer, INTERVAL * 3)
        assert Opcode.PING in seen
    finally:
        await peer.close()


def test_a_keepalive_needs_a_positive_interval_and_timeout() -> None:
    for interval, timeout in ((0.0, 1.0), (1.0, 0.0), (-1.0, 1.0)):
        with pytest.raises(ValueError, match="positive"):
            Keepalive(interval, timeout)
