"""The room a node holds: made and forgotten cleanly, flat over many races, cheap to watch."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, RunningServer, ServerFactory
from e2e_support import FAST, RawClient, standings

from solrace.client import Client
from solrace.engine import replay, spectator_view
from solrace.protocol import Limits

SERVER_FILES = ("/server/", "/engine/", "/protocol/")


async def progress_until(client: Client, player_id: str | None, moves: int) -> dict[str, Any]:
    """The first progress event that shows ``player_id`` at ``moves`` moves or more."""
    while True:
        event = await client.next_event("progress", timeout=TIMEOUT)
        mine = standings([event], player_id)
        if mine and mine[-1]["moves"] >= moves:
            return event


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_player_who_drops_and_resumes_at_once_hears_the_room_every_time(
    start_server: ServerFactory,
) -> None:
    # Ann is her node's only member of the room: each drop makes the node forget the room
    # while her resume, on the same node, arrives and holds it again. (Faster than a
    # person plays: no rate limit.)
    server = await start_server(limits=FAST)
    other = await start_server(limits=FAST)
    async with (
        Client(server.url, name="ann", request_timeout=TIMEOUT) as ann,
        Client(other.url, name="bob", request_timeout=TIMEOUT) as bob,
    ):
        await _drop_and_resume(server, ann, bob)


async def _drop_and_resume(server: RunningServer, ann: Client, bob: Client) -> None:
    room = await ann.create_room("canfield", countdown=0)
    await bob.join(room["code"])
    await ann.start()
    await ann.next_event("race_started", timeout=TIMEOUT)
    await bob.next_event("race_started", timeout=TIMEOUT)
    for trial in range(300):
        await ann.drop()
        resumed = await ann.next_event("resumed", timeout=TIMEOUT)
        assert resumed["restarted"] is False  # the same run of the node
        ack = await bob.move("u" if trial % 2 else "d")
        await progress_until(ann, bob.player_id, ack["rev"])
    assert not server.node.held[room["code"]].closed


def _allocated(snapshot: tracemalloc.Snapshot) -> int:
    return sum(
        stat.size
        for stat in snapshot.statistics("filename")
        if any(part in stat.traceback[0].filename for part in SERVER_FILES)
    )


async def test_a_room_that_races_a_thousand_times_holds_no_more_memory(
    start_server: ServerFactory,
) -> None:
    # Faster than a person: no rate limit, and no commit window for the serial requests.
    server = await start_server(limits=FAST, commit_window_s=0.0)
    ann = Client(server.url, name="ann", request_timeout=TIMEOUT)
    await ann.connect()
    room = await ann.create_room("rainbow-canfield", max_players=1, countdown=0)
    held = server.node.held[room["code"]]

    async def race() -> None:
        await ann.start()
        await ann.next_event("race_started", timeout=TIMEOUT)
        await ann.move("d")
        await ann.resign()
        await ann.next_event("race_over", timeout=TIMEOUT)
        await ann.rematch()

    for _ in range(700):  # a node's bounded caches fill as it warms up
        await race()
    tracemalloc.start()
    try:
        gc.collect()
        before = _allocated(tracemalloc.take_snapshot())
        for _ in range(300):
            await race()
        gc.collect()  # garbage in cycles is not held, only not yet freed
        snapshot = tracemalloc.take_snapshot()
        after = _allocated(snapshot)
    finally:
        tracemalloc.stop()
    await ann.close()
    assert held.race == 1000 and held is server.node.held.get(room["code"], held)
    assert not held.games and not held.pending
    top = "\n".join(str(stat) for stat in snapshot.statistics("lineno")[:10])
    assert after - before < 64 * 1024, f"the node grew by {after - before} bytes:\n{top}"


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_spectator_of_a_long_game_on_another_node_never_replays_its_log(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # No commit window: the game's 10,000 moves come one after another from one player.
    playing = await start_server(limits=FAST, progress_interval_s=0.1, commit_window_s=0.0)
    watching = await start_server(limits=FAST, progress_interval_s=0.1)
    raw = await RawClient.open(playing.url, name="ann")
    created = await raw.request(
        {
            "type": "create_room",
            "variant": "canfield",
            "countdown": 0,
            "undo": True,
            "spectators": "live",
        }
    )
    code = created["room"]["code"]
    async with Client(watching.url, name="eve", request_timeout=TIMEOUT) as eve:
        await eve.join(code, role="spectator")
        started = await raw.request({"type": "start"})
        assert started["type"] == "ok", started
        race_started = await raw.recv(lambda f: f.get("type") == "race_started")
        seed_game_view = race_started["view"]
        # A game as long as a game may be (max_moves_per_game).
        moves = ["d" if rev % 2 == 0 else "u" for rev in range(Limits().max_moves_per_game)]
        for start in range(0, len(moves), 200):  # sent ahead, read in step (no backlog)
            chunk = range(start, min(start + 200, len(moves)))
            for rev in chunk:
                await raw.send({"type": "move", "id": 10 + rev, "move": moves[rev], "rev": rev})
            last = await raw.recv(lambda f, end=chunk[-1]: f.get("id") == 10 + end)
            assert last["type"] == "ack" and last["rev"] == chunk[-1] + 1, last
            raw.forget()
        await progress_until(eve, raw.player_id, len(moves))

        reads: list[str] = []
        backend = watching.node.backend
        read_moves, read_timed_moves = backend.read_moves, backend.read_timed_moves

        async def counted(code: str, race: int, player_id: str) -> list[str]:
            reads.append(player_id)
            return await read_moves(code, race, player_id)

        async def counted_timed(code: str, race: int, player_id: str) -> list[tuple[str, int]]:
            reads.append(player_id)
            return await read_timed_moves(code, race, player_id)

        monkeypatch.setattr(backend, "read_moves", counted)
        monkeypatch.setattr(backend, "read_timed_moves", counted_timed)
        snapshots = [await eve.sync() for _ in range(100)]
        assert reads == [], "a spectator's sync replayed the player's log"
    await raw.close()
    assert seed_game_view["moves"] == 0
    seed = None
    for snapshot in snapshots:
        board = snapshot["boards"][raw.player_id]
        assert board["moves"] == len(moves)
        seed = seed or board
    # The board is the player's game after every move, as a spectator sees it.
    log = await playing.node.backend.read_moves(code, 1, raw.player_id)
    assert log == moves
    room = await playing.node.backend.load_room(code)
    assert room is not None and room.seed is not None
    assert seed == spectator_view(replay("canfield", room.seed, moves))


async def test_a_resume_never_interleaves_with_the_drop_it_follows(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await start_server()
    backend = server.node.backend
    update_room = backend.update_room

    async def slow_to_mark_dropped(code: str, change: Any) -> Any:
        before = await backend.load_room(code)
        outcome = change(before) if before is not None else None
        dropped = (
            outcome is not None
            and outcome.room is not None
            and before is not None
            and any(
                m.connected and not outcome.room.members[p].connected
                for p, m in before.members.items()
                if p in outcome.room.members
            )
        )
        if dropped:  # a store slow to take the drop: the resume comes meanwhile
            await asyncio.sleep(0.2)
        return await update_room(code, change)

    async with (
        Client(server.url, name="ann", request_timeout=TIMEOUT) as ann,
        Client(server.url, name="bob", request_timeout=TIMEOUT) as bob,
    ):
        room = await ann.create_room("canfield")
        await bob.join(room["code"])
        monkeypatch.setattr(backend, "update_room", slow_to_mark_dropped)
        await ann.drop()
        await ann.next_event("resumed", timeout=TIMEOUT)
        monkeypatch.setattr(backend, "update_room", update_room)
        async with asyncio.timeout(TIMEOUT):
            while True:  # the drop's update, then the resume's: ann ends connected
                snapshot = await bob.sync()
                if server.node.player_lock_count() == 0:
                    break
                await asyncio.sleep(0.05)
        members = {m["name"]: m["connected"] for m in snapshot["members"]}
        assert members == {"ann": True, "bob": True}, members


async def test_a_room_the_node_lets_go_is_freed_without_the_cyclic_collector(
    start_server: ServerFactory,
) -> None:
    """A closed room's cancelled task kept its error, whose traceback held the task's frame
    and so the room, which held the task: each room let go was garbage for the cyclic
    collector, whose full collections stall a busy node."""
    from solrace.server.local_room import LocalRoom

    server = await start_server()
    codes = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            async with Client(server.url, name="ann", request_timeout=TIMEOUT) as ann:
                room = await ann.create_room("canfield", countdown=0, winnable=False)
                codes.append(room["code"])
                await ann.start()
                await ann.next_event("race_started", timeout=TIMEOUT)
                await ann.leave()
            async with asyncio.timeout(TIMEOUT):
                while any(code in server.node.held for code in codes):
                    await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # the cancelled tasks end
        left = [o for o in gc.get_objects() if type(o) is LocalRoom and o.code in codes]
        assert left == [], f"{len(left)} rooms let go still held"
    finally:
        gc.enable()
