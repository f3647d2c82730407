"""Progress is reported at most once per interval per room, and never lost."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import TIMEOUT, ServerFactory
from e2e_support import RawClient, standings, two_racing

from solrace.client import Client
from solrace.server import BackendUnavailable
from solrace.server.backends.redis import RedisBackend
from solrace.server.moves import REPORT_TICK_S

INTERVAL = 0.3


async def _race(
    start_server: ServerFactory, interval: float = INTERVAL
) -> tuple[Any, Client, Client]:
    return await two_racing(start_server, progress_interval_s=interval)


async def test_a_burst_of_moves_reaches_the_room_as_few_reports_with_the_last_standing(
    start_server: ServerFactory,
) -> None:
    server, fast, rival = await _race(start_server)
    try:
        loop = asyncio.get_running_loop()
        began = loop.time()
        for _ in range(10):  # draws and undos: always legal, as fast as acks come
            await fast.move("d")
            await fast.move("u")
        took = loop.time() - began
        assert fast.rev == 20
        heard: list[dict[str, Any]] = []  # fast's standings, one per report that has it
        async with asyncio.timeout(TIMEOUT):
            while not heard or heard[-1]["moves"] < 20:
                event = await rival.next_event("progress")
                heard.extend(standings([event], fast.player_id))
        # The first move is told at once (on Redis at the next report tick, with what
        # the burst reached by then); the rest within the interval, together: at most one
        # report per interval the burst lasted, and one more for its tail.
        if server.server.node.backend.in_process:
            assert heard[0]["moves"] == 1
        assert len(heard) < 20 and len(heard) <= 2 + took / INTERVAL
        assert [e["moves"] for e in heard] == sorted(e["moves"] for e in heard)
        snapshot = await rival.sync()
        standing = next(p for p in snapshot["players"] if p["player_id"] == fast.player_id)
        assert standing["moves"] == 20
    finally:
        await fast.close()
        await rival.close()


async def test_two_players_moving_in_one_interval_are_told_in_one_report(
    start_server: ServerFactory,
) -> None:
    interval = 1.0  # long enough for two moves to be acked within it on a loaded machine
    server, fast, rival = await _race(start_server, interval)
    try:
        loop = asyncio.get_running_loop()
        await fast.move("d")  # the room's first report: told at once, alone
        first = await rival.next_event("progress", timeout=TIMEOUT)
        reported = loop.time()
        # Where the node took each report's standings (a monotonic clock, as the loop's):
        # a first report delivered late to this client would shorten the gap it sees.
        (held,) = server.server.node.held.values()
        taken_first = held.reported_at
        assert [(s["player_id"], s["moves"]) for s in first["players"]] == [(fast.player_id, 1)]
        # Both move right after it: their standings wait for the rest of the interval.
        await asyncio.gather(fast.move("d"), rival.move("d"))
        acked = loop.time() - reported
        together = await rival.next_event("progress", timeout=TIMEOUT)
        waited = loop.time() - reported
        assert acked < interval, f"the moves took {acked:.2f}s: this machine is too slow"
        assert together["seq"] == first["seq"] + 1
        assert sorted((s["player_id"], s["moves"]) for s in together["players"]) == sorted(
            [(fast.player_id, 2), (rival.player_id, 1)]
        )
        assert all("view" not in s for s in together["players"])
        assert waited >= interval * 0.5  # not the first report's twin, seen late
        # Held back for the interval: the node took the second report's standings no
        # sooner than an interval after the first's (its timers run at most a tick early).
        assert held.reported_at - taken_first >= interval - REPORT_TICK_S
        # The other player hears the same single report.
        heard = await fast.next_event("progress", timeout=TIMEOUT)
        while heard["seq"] < together["seq"]:
            heard = await fast.next_event("progress", timeout=TIMEOUT)
        assert heard == together
        snapshot = await rival.sync()
        assert snapshot["seq"] == together["seq"]
    finally:
        await fast.close()
        await rival.close()


async def test_a_finished_game_is_reported_at_once_with_every_move(
    start_server: ServerFactory,
) -> None:
    _, fast, rival = await _race(start_server)
    try:
        await fast.move("d")
        await fast.move("d")  # within the interval: waits
        await fast.resign()
        await rival.resign()
        over = await rival.next_event("race_over", timeout=TIMEOUT)
        mine = next(r for r in over["results"] if r["player_id"] == fast.player_id)
        assert (mine["status"], mine["moves"]) == ("resigned", 2)
    finally:
        await fast.close()
        await rival.close()


async def test_leaving_reports_the_moves_still_waiting(start_server: ServerFactory) -> None:
    _, fast, rival = await _race(start_server)
    try:
        await fast.move("d")
        await fast.move("d")
        await fast.move("d")
        await fast.leave()
        heard: list[dict[str, Any]] = []
        async with asyncio.timeout(TIMEOUT):
            while not heard or heard[-1]["status"] == "playing":
                event = await rival.next_event("progress")
                heard.extend(standings([event], fast.player_id))
        assert heard[-1]["status"] == "resigned" and heard[-1]["moves"] == 3
    finally:
        await fast.close()
        await rival.close()


async def test_a_standing_storage_refused_is_told_once_it_is_back(
    start_server: ServerFactory, monkeypatch: Any
) -> None:
    server, fast, rival = await _race(start_server)
    backend = server.node.backend
    real = backend.update_room_publishing  # the write of a report of standings
    refusals = [BackendUnavailable("storage is away")]

    async def away_once(code: str, change: Any) -> Any:
        if refusals:
            raise refusals.pop()
        return await real(code, change)

    try:
        monkeypatch.setattr(backend, "update_room_publishing", away_once)
        # Only storage outside the process can be away: a node updates an in-process
        # backend's rooms at once (update_room_now), which nothing refuses. The embedded
        # backend is taken for an outside one here, so that the node awaits its update.
        monkeypatch.setattr(backend, "in_process", False)
        ack = await fast.move("d")  # logged and acked; the room update is refused
        assert ack["rev"] == 1
        async with asyncio.timeout(TIMEOUT):
            while True:
                event = await rival.next_event("progress")
                told = standings([event], fast.player_id)
                if told:
                    break
        # The ack does not wait for the room: the refusal may come after it, but before
        # the standing is told.
        assert not refusals, "the room update was never refused"
        assert [s["moves"] for s in told] == [1]
    finally:
        await fast.close()
        await rival.close()


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_on_redis_the_rooms_due_in_one_tick_report_in_one_round_trip(
    start_server: ServerFactory,
) -> None:
    """Four rooms' first moves, each in a pass of its own: their reports wait for the
    report tick and swap the four records in one round trip (two if a tick falls
    between), not one each. A slow machine may take the four moves over more ticks:
    each tick they span may add a round trip, never one a move within a tick."""
    server = await start_server(progress_interval_s=INTERVAL)
    backend = server.server.node.backend
    assert isinstance(backend, RedisBackend)
    racers = [await RawClient.open(server.url, name=f"p{n}") for n in range(4)]
    try:
        async with asyncio.timeout(TIMEOUT):
            for racer in racers:
                await racer.request({"type": "create_room", "variant": "canfield", "countdown": 0})
                await racer.request({"type": "start"})
                await racer.recv(lambda f: f["type"] == "race_started")
            await asyncio.sleep(INTERVAL)  # the starts' own writes are done
            before = backend.swap_round_trips
            loop = asyncio.get_running_loop()
            began = loop.time()
            for n, racer in enumerate(racers):
                await racer.send({"type": "move", "id": 50 + n, "move": "d", "rev": 0})
                await racer.recv(lambda f: f["type"] == "ack")
            took = loop.time() - began
            for racer in racers:
                await racer.recv(lambda f: f["type"] == "progress")
        swaps = backend.swap_round_trips - before
        assert 1 <= swaps <= 2 + int(took / REPORT_TICK_S), (swaps, took)
    finally:
        for racer in racers:
            await racer.close()
