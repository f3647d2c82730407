"""A finished race's move logs go once its results and its replay copy are written.

A room that races on and on (rematch after rematch) kept every race's logs in the store
for as long as it lived: rows (SQLite) or streams (Redis) without bound. The replay copy
(``/api/race``) and a daily attempt's entry hold the moves after the race.
"""

from __future__ import annotations

from typing import Any

from conftest import TIMEOUT, ServerFactory

from solrace.client import Client

RACES = 3


async def test_each_finished_race_leaves_its_replay_and_no_log(
    start_server: ServerFactory,
) -> None:
    server = await start_server()
    backend = server.node.backend
    async with Client(server.url, name="ann", request_timeout=TIMEOUT) as ann:
        room = await ann.create_room("canfield", countdown=0, max_players=1)
        code = room["code"]
        assert ann.player_id is not None
        for race in range(1, RACES + 1):
            if race > 1:
                await ann.rematch()
            await ann.start()
            await ann.next_event("race_started", timeout=TIMEOUT)
            for move in ("d", "u", "d")[:race]:
                await ann.move(move)
            assert await backend.log_length(code, race, ann.player_id) == race
            await ann.resign()
            await ann.next_event("race_over", timeout=TIMEOUT)
            for earlier in range(1, race + 1):
                assert await backend.read_moves(code, earlier, ann.player_id) == []
                kept: dict[str, Any] | None = await backend.load_race(
                    code, earlier, server.node.now_ms()
                )
                assert kept is not None
                assert kept["players"][ann.player_id]["moves"] == ["d", "u", "d"][:earlier]
