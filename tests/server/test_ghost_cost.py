"""What a ghost costs the node before its room is made.

A race may hold far more moves than anyone plays (an hour's time limit at the message
rate: 108,000), and a ghost's run is replayed move by move to be raced. Such a run took
the event loop half a second to replay, for a ``create_room`` that its settings then got
refused without spending a room: sent again and again, a stall of every room on the node
at no cost. Now the room budget is spent before the run is looked for, a run too long to
race is refused before any replay, and the replay runs off the event loop.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conftest import LOOSE_BUDGETS, TIMEOUT, RunningServer, ServerFactory

from solrace.client import Client, ServerError
from solrace.engine import Status, new_game

CODE = "GH0STRUN"
RUNNER = "0123456789abcdef"


def playable_seed() -> int:
    return next(s for s in range(1, 1000) if new_game("canfield", s).status is Status.PLAYING)


async def kept_run(server: RunningServer, moves: list[str]) -> str:
    """A finished live race of one player who made ``moves`` (kept for its replay): the
    ghost reference of the run."""
    record: dict[str, Any] = {
        "format": "solrace-race/1",
        "room": CODE,
        "race": 1,
        "variant": "canfield",
        "seed": playable_seed(),
        "par": None,
        "par_line": None,
        "ghost": None,
        "undo": True,
        "spectators": "live",
        "ended_ms": server.node.now_ms(),
        "players": {RUNNER: {"name": "runner", "moves": moves, "times": list(range(len(moves)))}},
        "results": [
            {
                "rank": 1,
                "player_id": RUNNER,
                "name": "runner",
                "status": "resigned",
                "banked": 1,
                "moves": len(moves),
                "time_ms": len(moves),
            }
        ],
    }
    now = server.node.now_ms()
    await server.node.backend.save_race(CODE, 1, record, now, 86_400_000)
    server.node.backend.flush_writes()
    return f"{CODE}/1/{RUNNER}"


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose identities may make two rooms an hour."""
    return await start_server(budgets=replace(LOOSE_BUDGETS, rooms_per_hour=2))


async def test_a_run_too_long_to_race_is_refused_before_it_is_replayed(
    server: RunningServer,
) -> None:
    ghost = await kept_run(server, ["d", "u"] * (server.config.limits.max_moves_per_game // 2 + 1))
    async with Client(server.url, name="bea", request_timeout=TIMEOUT) as bea:
        with pytest.raises(ServerError) as refused:
            await bea.create_room("canfield", ghost=ghost, countdown=0)
        assert refused.value.code == "bad_settings"
        assert "too long" in str(refused.value)
        assert bea.room is None


async def test_a_run_as_long_as_may_be_is_raced(server: RunningServer) -> None:
    ghost = await kept_run(server, ["d", "u"] * (server.config.limits.max_moves_per_game // 2))
    async with Client(server.url, name="bea", request_timeout=TIMEOUT) as bea:
        room = await bea.create_room("canfield", ghost=ghost, countdown=0)
        assert room["settings"]["ghost"] == ghost


async def test_a_ghost_room_refused_for_its_settings_spends_a_room(
    server: RunningServer,
) -> None:
    ghost = await kept_run(server, ["d"])
    async with Client(server.url, name="bea", request_timeout=TIMEOUT) as bea:
        codes = []
        for _ in range(3):
            with pytest.raises(ServerError) as refused:
                await bea.create_room("canfield", ghost=ghost, countdown=10_000)
            codes.append(refused.value.code)
        assert codes == ["bad_settings", "bad_settings", "over_budget"]
