"""Events published while a node's pub/sub connection is down are lost; the node resyncs.

When its reader subscribes again, the node reloads the room and sends each of its members
there a fresh snapshot (a ``room`` frame without an id), so that a client that missed an
event still ends up with the room as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAIN_DEALS, TIMEOUT, RunningServer
from e2e_support import standing_of, standings
from redis_server import RedisServer

from solrace.client import Client, ServerError
from solrace.server import Node, ServerConfig, SolraceServer, make_backend
from solrace.server.backends.redis import RedisBackend

pytestmark = pytest.mark.skipif(not RedisServer.available(), reason="redis-server is not installed")


@pytest.fixture
async def redis(tmp_path: Path) -> AsyncIterator[RedisServer]:
    """A redis-server of the test's own, which it may stop and start again."""
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


async def start_node(url: str, tmp_path: Path) -> RunningServer:
    """A server node on the Redis at ``url``."""
    config = ServerConfig(port=0, data_dir=tmp_path / "data", redis_url=url, **PLAIN_DEALS)
    server = SolraceServer(Node(make_backend(config), config), config)
    await server.start()
    return RunningServer(server, config)


async def acked(client: Client, move: str) -> dict[str, Any]:
    """The ack of ``move``, sent again while the server says Redis is unavailable."""
    async with asyncio.timeout(TIMEOUT):
        while True:
            try:
                return await client.move(move)
            except ServerError as error:
                if error.code != "unavailable":
                    raise
            await asyncio.sleep(0.05)


async def progress_of(client: Client, player_id: str | None) -> dict[str, Any]:
    """``player_id``'s standing in the next progress event with one that ``client`` hears."""
    while True:
        event = await client.next_event("progress", timeout=TIMEOUT)
        if standings([event], player_id):
            return standing_of(event, player_id)


async def test_members_get_a_snapshot_once_the_pub_sub_connection_is_back(
    redis: RedisServer, tmp_path: Path
) -> None:
    first = await start_node(redis.url, tmp_path)
    second = await start_node(redis.url, tmp_path)
    alice = Client(first.url, name="alice", request_timeout=TIMEOUT)
    bob = Client(second.url, name="bob", request_timeout=TIMEOUT)
    try:
        await alice.connect()
        await bob.connect()
        code = (await alice.create_room("canfield", countdown=0))["code"]
        await bob.join(code)
        await alice.start()
        await alice.next_event("race_started", timeout=TIMEOUT)
        await bob.next_event("race_started", timeout=TIMEOUT)

        # Hold the first node's reader back once its connection drops, until told.
        backend = first.node.backend
        assert isinstance(backend, RedisBackend)
        back = asyncio.Event()
        listen = backend._listen

        async def held(shard: Any) -> None:
            await back.wait()
            await listen(shard)

        backend._listen = held  # type: ignore[method-assign]
        with redis.client() as client:
            client.save()  # the restart loads this snapshot: the room survives
        redis.restart()

        # Bob's move is published while the first node hears nothing: Alice misses it.
        # (Its report is published by the script that writes it to the room's record:
        # once the record has it, the event is out.)
        assert (await acked(bob, "d"))["rev"] == 1
        async with asyncio.timeout(TIMEOUT):
            while True:
                record = await second.node.backend.load_room(code)
                if record is not None and record.players[bob.player_id or ""].moves == 1:
                    break
                await asyncio.sleep(0.01)
        back.set()

        heard = []
        while True:
            event = await alice.next_event(timeout=TIMEOUT)
            if event["type"] == "room":
                break
            heard.append(event)
        assert not [e for e in heard if e["type"] == "progress"], "the event was lost"
        snapshot = event["room"]
        assert snapshot["code"] == code and snapshot["state"] == "racing"
        players = {p["player_id"]: p for p in snapshot["players"]}
        assert players[bob.player_id]["moves"] == 1
        assert snapshot["you"]["rev"] == 0 and snapshot["you"]["view"]
        assert alice.room is not None and alice.seq == snapshot["seq"]
        assert first.node.held[code].record.players[bob.player_id].moves == 1, "the cache reloaded"

        # The room's events flow again both ways.
        assert (await acked(alice, "d"))["rev"] == 1
        assert (await progress_of(bob, alice.player_id))["moves"] == 1
        assert (await acked(bob, "d"))["rev"] == 2
        assert (await progress_of(alice, bob.player_id))["moves"] == 2
    finally:
        await alice.close()
        await bob.close()
        await first.server.close()
        await second.server.close()
