"""A room no node holds any more still meets its deadlines.

A room's timers run on the nodes that hold one of its members. When the one node that
held them all stops and its clients do not come back, the other nodes sharing the store
find the room past its deadline (``Node.sweep_orphans``) and act on it: the dropped
players' grace ends, the race ends and its results are recorded.
"""

from __future__ import annotations

import asyncio

import pytest
from conftest import TIMEOUT, ServerFactory
from e2e_support import RawClient

from solrace.server.node import ORPHAN_SLACK_MS
from solrace.server.room import RoomState

GRACE_S = 2.0


class Clock:
    """The nodes' clock, moved by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_race_whose_node_stopped_ends_on_another_node(start_server: ServerFactory) -> None:
    clock = Clock(1_800_000_000.0)
    first = await start_server(clock=clock, resume_grace_s=GRACE_S)
    second = await start_server(clock=clock, resume_grace_s=GRACE_S)
    player = await RawClient.open(first.url, name="alone")
    created = await player.request({"type": "create_room", "variant": "canfield", "countdown": 0})
    code = created["room"]["code"]
    started = await player.request({"type": "start"})
    assert started["type"] == "ok", started
    await player.recv(lambda f: f.get("type") == "race_started")

    await first.server.close()  # its client does not come back
    backend = second.node.backend
    room = await backend.load_room(code)
    assert room is not None and room.state is RoomState.RACING
    assert not room.members[player.player_id].connected
    assert await second.node.sweep_orphans() == 0  # the grace is not over yet

    clock.now += GRACE_S + ORPHAN_SLACK_MS / 1000 + 1
    assert await second.node.sweep_orphans() == 1
    async with asyncio.timeout(TIMEOUT):
        while (room := await backend.load_room(code)) is not None:
            if room.state is RoomState.FINISHED:
                break
            await asyncio.sleep(0.01)
    assert room is None or room.state is RoomState.FINISHED
    async with asyncio.timeout(TIMEOUT):  # the race's results, recorded
        while (results := await backend.load_results(code, 1)) is None:
            await asyncio.sleep(0.01)
    assert [r["player_id"] for r in results["results"]] == [player.player_id], results
    assert await second.node.sweep_orphans() == 0  # nothing left to do


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_results_a_stopped_node_did_not_write_are_written_by_another(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node that ended the race stopped before writing its results (here: the write
    fails, as in a process killed at that point): another node sharing the store writes
    them once the race is a while over, and only then (a live node writes its own)."""
    clock = Clock(1_800_000_000.0)
    first = await start_server(clock=clock)
    second = await start_server(clock=clock)

    async def killed(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the node stopped here")

    monkeypatch.setattr(first.node.backend, "save_results", killed)
    player = await RawClient.open(first.url, name="alone")
    created = await player.request(
        {"type": "create_room", "variant": "canfield", "countdown": 0, "max_players": 1}
    )
    code = created["room"]["code"]
    await player.request({"type": "start"})
    await player.recv(lambda f: f.get("type") == "race_started")
    moved = await player.request({"type": "move", "move": "d", "rev": 0})
    assert moved["type"] == "ack", moved
    await player.request({"type": "resign"})
    backend = second.node.backend
    async with asyncio.timeout(TIMEOUT):
        while (
            room := await backend.load_room(code)
        ) is None or room.state is not RoomState.FINISHED:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)
    assert await backend.load_results(code, 1) is None

    await second.node.sweep_orphans()
    assert await backend.load_results(code, 1) is None  # too soon: it may be on its way
    clock.now += ORPHAN_SLACK_MS / 1000 + 1
    await second.node.sweep_orphans()
    results = await backend.load_results(code, 1)
    assert results is not None
    (only,) = results["results"]
    assert (only["status"], only["moves"]) == ("resigned", 1)
    kept = await backend.load_race(code, 1, second.node.now_ms())
    assert kept is not None and kept["players"][player.player_id]["moves"] == ["d"]
