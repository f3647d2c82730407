"""A node killed on Redis: the other nodes let go of the members it held.

Two real ``solrace serve`` processes on one redis-server. The host of a room plays on
node A, a guest on node B; a spectator watches on A. Node A is killed with SIGKILL, so
nothing of its own ever says its members dropped: once A has gone unnoted for
``--node-silent``, B lets go of them (each then has the resume grace), so the host
resigns and leaves, the guest becomes host, the race ends when the guest is done, and
the room races again.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from conftest import TIMEOUT
from process_support import NodeProcess
from redis_server import RedisServer

from solrace.client import Client

pytestmark = pytest.mark.skipif(not RedisServer.available(), reason="redis-server is not installed")

SILENT_S = 3.0
GRACE_S = 1.0
OPTIONS = ("--node-silent", str(SILENT_S), "--resume-grace", str(GRACE_S))


async def test_the_members_of_a_killed_node_are_let_go(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    nodes = [NodeProcess(tmp_path / name, redis.url, *OPTIONS) for name in ("a", "b")]
    clients: list[Client] = []
    try:
        for node in nodes:
            node.start()
        for node in nodes:
            node.wait_listening()
        a, b = nodes
        host = Client(a.url, name="Hana", request_timeout=TIMEOUT, resume_timeout=0.5)
        guest = Client(b.url, name="Gus", request_timeout=TIMEOUT)
        spy = Client(a.url, name="Spy", request_timeout=TIMEOUT, resume_timeout=0.5)
        clients += [host, guest, spy]
        for client in clients:
            await client.connect()
        room = await host.create_room("canfield", countdown=0, spectators="live")
        await guest.join(room["code"])
        await spy.join(room["code"], role="spectator")
        await host.start()
        await guest.next_event("race_started", timeout=TIMEOUT)

        a.kill()
        killed = asyncio.get_running_loop().time()
        # Hana is dropped once A is taken for dead, resigns after the grace and leaves;
        # the spectator on A leaves at once.
        async with asyncio.timeout(SILENT_S + GRACE_S + 4 * TIMEOUT):
            while True:
                event = await guest.next_event("members", timeout=4 * TIMEOUT)
                names = [m["name"] for m in event["members"]]
                if names == ["Gus"]:
                    break
        took = asyncio.get_running_loop().time() - killed
        assert took >= SILENT_S, took  # not before A went unnoted for --node-silent
        assert event["host"] == guest.player_id

        await guest.resign()
        over = await guest.next_event("race_over", timeout=TIMEOUT)
        statuses = {r["name"]: r["status"] for r in over["results"]}
        assert statuses == {"Hana": "resigned", "Gus": "resigned"}
        await guest.rematch()  # the room races again, with its new host
        await guest.start()
        await guest.next_event("race_started", timeout=TIMEOUT)
    finally:
        for client in clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.close(), TIMEOUT)
        for node in nodes:
            node.stop()
        redis.stop()
