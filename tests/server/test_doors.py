"""The node's bound on TCP connections, checked as each is accepted.

Connections that never finish their handshake (a script that opens sockets and sends a
request line and nothing more) used to be held for the handshake's timeout without any
count: one address could hold every file descriptor the node had, and then nobody
could connect. Loopback has many addresses (127.0.0.0/8), so clients here bind the
source address they play from.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgpack
import pytest
import websockets
from conftest import LOOSE_BUDGETS, TIMEOUT, RunningServer, ServerFactory
from websockets.exceptions import InvalidStatus

from solrace.client.urls import why_unreachable
from solrace.server import Node, ServerConfig, SolraceServer, make_backend
from solrace.server.app import FD_RESERVE, connection_limit

EMBEDDED = pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)

ATTACKER = "127.0.0.2"
NEIGHBOUR = "127.0.0.3"
REQUEST_START = b"GET / HTTP/1.1\r\nHost: solrace\r\n"  # and never the blank line
PING = msgpack.packb({"type": "ping", "id": 1})


async def serve(start_server: ServerFactory, **overrides: Any) -> RunningServer:
    budgets = replace(LOOSE_BUDGETS, connections_per_address=overrides.pop("per_address", 64))
    return await start_server(budgets=budgets, **overrides)


async def half_open(server: RunningServer, source: str) -> tuple[asyncio.StreamReader, Any]:
    """A connection from ``source`` whose request never ends."""
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", server.server.port, local_addr=(source, 0)
    )
    writer.write(REQUEST_START)
    await writer.drain()
    return reader, writer


async def answer(reader: asyncio.StreamReader) -> bytes:
    """Everything the node sends before it closes the connection."""
    async with asyncio.timeout(TIMEOUT):
        return await reader.read()


async def player(server: RunningServer, source: str) -> websockets.ClientConnection:
    ws = await websockets.connect(
        server.url, subprotocols=["solrace.v1.msgpack"], local_addr=(source, 0)
    )
    return ws


@EMBEDDED
async def test_an_address_holds_no_more_half_open_connections_than_its_budget(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, per_address=5)
    held = [await half_open(server, ATTACKER) for _ in range(5)]
    reader, _ = await half_open(server, ATTACKER)
    refusal = await answer(reader)
    assert refusal.startswith(b"HTTP/1.1 429 "), refusal
    assert b"too many connections from your address" in refusal
    assert b"Retry-After: 1" in refusal
    # Another address plays on: its handshake and a request go through.
    ws = await player(server, NEIGHBOUR)
    await ws.send(PING)
    await ws.close()
    # The attacker's own websockets are refused too while its half-open ones are held.
    with pytest.raises(InvalidStatus) as refused:
        await player(server, ATTACKER)
    assert refused.value.response.status_code == 429
    doors = server.server.doors
    assert doors.opening == {ATTACKER: 5}
    assert doors.refused_address == 2
    for _, w in held:
        w.close()
    async with asyncio.timeout(TIMEOUT):  # the closed ones are counted out
        while doors.opening:
            await asyncio.sleep(0.02)
    ws = await player(server, ATTACKER)
    await ws.close()


@EMBEDDED
async def test_open_and_opening_connections_share_the_address_budget(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, per_address=4)
    players = [await player(server, ATTACKER) for _ in range(3)]
    _, writer = await half_open(server, ATTACKER)  # the fourth
    reader, _ = await half_open(server, ATTACKER)
    assert (await answer(reader)).startswith(b"HTTP/1.1 429 ")
    writer.close()
    for ws in players:
        await ws.close()


@EMBEDDED
async def test_a_full_node_answers_503_and_keeps_its_players(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, max_connections=6)
    ws = await player(server, NEIGHBOUR)
    held = [await half_open(server, f"127.0.1.{n}") for n in range(1, 6)]
    reader, _ = await half_open(server, "127.0.2.1")
    refusal = await answer(reader)
    assert refusal.startswith(b"HTTP/1.1 503 "), refusal
    assert b"the server is full" in refusal
    with pytest.raises(InvalidStatus) as refused:
        await player(server, "127.0.2.2")
    assert refused.value.response.status_code == 503
    # The player already in goes on being served.
    await ws.send(PING)
    async with asyncio.timeout(TIMEOUT):
        reply = await ws.recv()
    assert msgpack.unpackb(reply)["type"] == "pong"
    assert server.server.doors.count == 6
    assert server.server.doors.refused_full == 2
    for _, w in held:
        w.close()
    async with asyncio.timeout(TIMEOUT):
        while server.server.doors.count > 1:
            await asyncio.sleep(0.02)
    again = await player(server, "127.0.2.2")
    await again.close()
    await ws.close()


@EMBEDDED
async def test_the_refusals_are_in_the_metrics(start_server: ServerFactory) -> None:
    server = await serve(start_server, per_address=1)
    _, writer = await half_open(server, ATTACKER)
    reader, _ = await half_open(server, ATTACKER)
    await answer(reader)
    text = server.server.node.metrics.render().decode()
    assert 'solrace_connections_refused_total{reason="address"} 1.0' in text
    assert "solrace_tcp_connections 1.0" in text
    writer.close()


def test_the_limit_leaves_file_descriptors_for_the_store() -> None:
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    config = ServerConfig(max_connections=10**9)
    limit = connection_limit(config)
    assert limit <= soft - FD_RESERVE or limit <= soft // 2
    assert connection_limit(ServerConfig(max_connections=10)) == 10


@EMBEDDED
async def test_a_client_says_in_plain_words_why_it_was_refused(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, max_connections=1)
    _, writer = await half_open(server, ATTACKER)
    with pytest.raises(InvalidStatus) as refused:
        await player(server, NEIGHBOUR)
    said = why_unreachable(server.url, refused.value)
    assert said == "it answered HTTP 503: the server is full: try again later"
    writer.close()


def test_a_node_built_in_code_with_a_bad_proxy_fails_at_once(tmp_path: Path) -> None:
    config = ServerConfig(port=0, data_dir=tmp_path, trusted_proxies=("10.0.0.0/8", "nginx"))
    with pytest.raises(ValueError, match="nginx"):
        SolraceServer(Node(make_backend(config), config), config)


@EMBEDDED
async def test_a_full_node_is_alive_on_its_metrics_port(start_server: ServerFactory) -> None:
    server = await serve(start_server, max_connections=2, metrics_port=0)
    held = [await half_open(server, f"127.0.1.{n}") for n in range(1, 3)]
    metrics_port = server.server.http.metrics_port
    assert metrics_port is not None
    for port, status in ((server.server.port, b"503"), (metrics_port, b"200")):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: pod\r\n\r\n")
        line = await asyncio.wait_for(reader.readline(), TIMEOUT)
        assert line.split()[1] == status, (port, line)
        writer.close()
    for _, w in held:
        w.close()


@EMBEDDED
async def test_an_address_opens_new_connections_at_its_rate(start_server: ServerFactory) -> None:
    budgets = replace(LOOSE_BUDGETS, address_connections_per_second=2.0, address_connection_burst=4)
    server = await start_server(budgets=budgets)
    statuses = []
    for _ in range(6):  # one after the other, each closed before the next
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.server.port, local_addr=(ATTACKER, 0)
        )
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: solrace\r\n\r\n")
        statuses.append((await answer(reader)).split()[1])
        writer.close()
    assert statuses == [b"200"] * 4 + [b"429"] * 2
    ws = await player(server, NEIGHBOUR)  # another address is not held back
    await ws.close()
    await asyncio.sleep(0.6)  # a token comes back each half second
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", server.server.port, local_addr=(ATTACKER, 0)
    )
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: solrace\r\n\r\n")
    assert (await answer(reader)).split()[1] == b"200"
    writer.close()


async def test_a_connection_gone_leaves_no_garbage_for_the_cyclic_collector(
    start_server: ServerFactory,
) -> None:
    """Each connection the node let go of was a cycle (a closure over it kept by its
    protocol, the queue's callbacks, a failed handshake's error holding the parser's
    frames), freed only by the cyclic collector: half-open handshakes from many addresses
    piled thousands of them into its old generations, whose collections then held the
    loop for over a second. Gone, a connection is freed by its reference count alone."""
    import gc

    from solrace.server.connection import Connection

    server = await serve(start_server)
    gc.collect()  # what came before
    gc.disable()  # what goes now is found below, not collected on the way
    try:
        opened = [await half_open(server, f"127.0.0.{10 + n % 5}") for n in range(40)]
        async with websockets.connect(
            server.url, subprotocols=["solrace.v1.json"], local_addr=(NEIGHBOUR, 0)
        ) as ws:  # a whole connection, which speaks and goes, too
            await ws.send('{"type": "ping", "id": 1}')
            assert "pong" in str(await ws.recv())
        for _, writer in opened:
            writer.close()  # cut off mid-request: the handshake fails
        async with asyncio.timeout(TIMEOUT):
            while server.server.doors.count:
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # their handler tasks end
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, Connection)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []
