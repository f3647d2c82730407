"""Boards the store lacks: on Redis kept a slice of rooms a pass, and every one of them is
kept; on the embedded backend kept when the node lets go of the game."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from conftest import TIMEOUT, ServerFactory

from solrace.client import Client
from solrace.server import moves as move_path

ROOMS = 9
SLICE = 2


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_unwatched_boards_are_kept_a_few_rooms_a_pass(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(move_path, "BOARD_SAVE_ROOMS", SLICE)
    monkeypatch.setattr(move_path, "BOARD_SAVE_INTERVAL_S", 0.3)
    server = await start_server()
    backend = server.node.backend
    loop = asyncio.get_running_loop()

    # Which pass of the event loop each room's boards were kept in.
    passes = [0]

    def tick() -> None:
        passes[0] += 1
        loop.call_soon(tick)

    kept: list[tuple[int, str]] = []
    name = "save_boards_now" if backend.in_process else "save_boards"
    original = getattr(backend, name)

    def spy(code: str, race: int, views: dict[str, Any]) -> Any:
        if views:
            kept.append((passes[0], code))
        return original(code, race, views)

    monkeypatch.setattr(backend, name, spy)
    players = [Client(server.url, name=f"p{i}", request_timeout=TIMEOUT) for i in range(ROOMS)]
    codes = []
    try:
        for player in players:
            await player.connect()
            room = await player.create_room("canfield", countdown=0, spectators="live")
            codes.append(room["code"])
            await player.start()
            await player.next_event("race_started", timeout=TIMEOUT)
        kept.clear()
        loop.call_soon(tick)
        for player in players:
            await player.move("d")  # no one watches: the board waits for the next round
        async with asyncio.timeout(TIMEOUT):
            while {code for _, code in kept} != set(codes):
                await asyncio.sleep(0.05)
        per_pass: dict[int, int] = {}
        for number, _ in kept:
            per_pass[number] = per_pass.get(number, 0) + 1
        assert max(per_pass.values()) <= SLICE
        assert len(per_pass) >= ROOMS // SLICE
        for player, code in zip(players, codes, strict=True):
            async with asyncio.timeout(TIMEOUT):  # a save to Redis may still be on its way
                while player.player_id not in (boards := await backend.load_boards(code, 1)):
                    await asyncio.sleep(0.05)
            assert boards[player.player_id]["moves"] == 1  # the board after its draw
    finally:
        for player in players:
            await player.close()


@pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)
async def test_on_the_embedded_backend_a_board_in_play_is_kept_when_its_game_is_let_go(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node is the store's only reader while it runs, and serves spectators from the
    games it holds: a board still being played is not rewritten every interval (that was
    most of what the node wrote to disk), but kept once the room's last member here goes,
    for a spectator who comes later."""
    monkeypatch.setattr(move_path, "BOARD_SAVE_INTERVAL_S", 0.05)
    server = await start_server(progress_interval_s=0.0)
    backend = server.node.backend
    async with Client(server.url, name="keeper", request_timeout=TIMEOUT) as keeper:
        room = await keeper.create_room("canfield", countdown=0, spectators="live")
        code = room["code"]
        await keeper.start()
        await keeper.next_event("race_started", timeout=TIMEOUT)
        for _ in range(3):
            await keeper.move("d")
        await asyncio.sleep(0.3)  # six intervals of a shared backend's saves
        assert keeper.player_id not in await backend.load_boards(code, 1)
        async with Client(server.url, name="eyes", request_timeout=TIMEOUT) as eyes:
            await eyes.join(code, role="spectator")
            seen = await eyes.sync()
            assert seen["boards"][keeper.player_id]["moves"] == 3  # from the game in play
        player_id = keeper.player_id
    async with asyncio.timeout(TIMEOUT):  # the node lets go of the room: the board is kept
        while player_id not in (boards := await backend.load_boards(code, 1)):
            await asyncio.sleep(0.02)
    assert boards[player_id]["moves"] == 3


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_rounds_board_saves_are_spread_over_the_interval(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round's saves go to Redis with the moves' appends: all at once, the appends waited
    behind them there (one move in twenty by 50 to 120 ms, every 2 s, at 5,000 players).
    The rooms of a round are kept a few at a time over most of the interval instead."""
    interval = 1.0
    monkeypatch.setattr(move_path, "BOARD_SAVE_INTERVAL_S", interval)
    server = await start_server()
    backend = server.node.backend
    loop = asyncio.get_running_loop()
    kept: dict[str, float] = {}
    original = backend.save_boards

    def spy(code: str, race: int, views: dict[str, Any]) -> Any:
        if views:
            kept.setdefault(code, loop.time())
        return original(code, race, views)

    monkeypatch.setattr(backend, "save_boards", spy)
    players = [Client(server.url, name=f"p{i}", request_timeout=TIMEOUT) for i in range(ROOMS)]
    codes = []
    try:
        for player in players:
            await player.connect()
            room = await player.create_room("canfield", countdown=0)
            codes.append(room["code"])
            await player.start()
            await player.next_event("race_started", timeout=TIMEOUT)
        kept.clear()
        moved = loop.time()
        for player in players:
            await player.move("d")
        async with asyncio.timeout(TIMEOUT):
            while set(kept) != set(codes):
                await asyncio.sleep(0.02)
        times = sorted(kept.values())
        spread = interval * move_path.BOARD_SAVE_SPREAD
        assert times[-1] - times[0] >= spread / 2  # not in one burst
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert max(gaps) < spread  # nor in two
        assert times[-1] - moved <= 2 * interval + spread  # and none left for long
    finally:
        for player in players:
            await player.close()
