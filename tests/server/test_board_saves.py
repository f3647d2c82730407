"""Boards the store lacks are kept a slice of rooms a pass, and every one of them is kept."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import TIMEOUT, ServerFactory

from solrace.client import Client
from solrace.server import moves as move_path

ROOMS = 9
SLICE = 2


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
