"""Moves logged and never reported count in the results of a race ended elsewhere.

On a shared store a move is acked once its append is confirmed; the room's standing of
the player follows in a report. A node stopped between the two (killed, say) left the
standing behind the log, and a race then ended on another node, by its time limit or by
a player's leave, ranked the player without those moves: the results disagreed with the
replays anyone can check. Here the moves are appended to the log as that node had, and
the race ends through the other node.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from conftest import TIMEOUT, ServerFactory
from daily_support import Clock
from e2e_support import RawClient

pytestmark = pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
DRAWS = 7


async def _racing(url: str, players: int) -> tuple[str, list[RawClient]]:
    """A running race of ``players`` raw clients: its code and the clients."""
    host = await RawClient.open(url, name="p0")
    made = await host.request(
        {
            "type": "create_room",
            "variant": "canfield",
            "countdown": 0,
            "max_players": players,
            "winnable": False,
            "time_limit": 10,
        }
    )
    code = made["room"]["code"]
    clients = [host]
    for n in range(1, players):
        other = await RawClient.open(url, name=f"p{n}")
        joined = await other.request({"type": "join_room", "code": code, "role": "player"})
        assert joined["type"] == "room", joined
        clients.append(other)
    for other in clients[1:]:
        await other.request({"type": "set_ready", "ready": True})
    await host.request({"type": "start"})
    await host.recv(lambda f: f.get("type") == "race_started")
    return code, clients


async def _logged_elsewhere(backend: Any, code: str, player_id: str) -> None:
    """Moves the stopped node appended and acked, never reported."""
    for rev in range(DRAWS):
        await backend.append_move(code, 1, player_id, rev, "d" if rev % 2 == 0 else "u", rev)


async def test_a_race_ended_by_its_time_limit_counts_the_unreported_moves(
    start_server: ServerFactory,
) -> None:
    clock = Clock(time.time())
    node = await start_server(clock=clock)
    code, (solo,) = await _racing(node.url, 1)
    await _logged_elsewhere(node.node.backend, code, solo.player_id)
    clock.now += 11  # past the time limit
    await node.node.tick(code)
    async with asyncio.timeout(TIMEOUT):
        while (results := await node.node.backend.load_results(code, 1)) is None:
            await asyncio.sleep(0.02)
    (result,) = results["results"]
    assert (result["status"], result["moves"]) == ("out_of_time", DRAWS), result


async def test_a_leave_counts_the_leavers_unreported_moves(start_server: ServerFactory) -> None:
    first = await start_server()
    second = await start_server()
    code, (host, other) = await _racing(first.url, 2)
    await _logged_elsewhere(first.node.backend, code, other.player_id)
    # The player comes back through the other node and leaves the race there.
    back = await RawClient.open(second.url, token=other.token)
    await back.recv(lambda f: f.get("type") == "room")
    left = await back.request({"type": "leave_room"})
    assert left["type"] == "ok", left
    resigned = await host.request({"type": "resign"})
    assert resigned["type"] == "ok", resigned
    over: dict[str, Any] = await host.recv(lambda f: f.get("type") == "race_over")
    by_id = {r["player_id"]: r for r in over["results"]}
    assert by_id[other.player_id]["moves"] == DRAWS, by_id
