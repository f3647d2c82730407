"""A game holds at most ``max_moves_per_game`` moves.

Every resume of a player whose game the node no longer holds, every restart, replay,
ghost and daily board reads a game's whole log again; without a bound, a script at the
message rate filled an hour's race with 108,000 moves, and an identity resuming twice a
second then held two thirds of the node's core. The move past the limit is refused with
``move_limit`` (the way a move takes off the socket declines it, and the connection's
task refuses it), and the game is kept as it was: its player may resign.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import TIMEOUT, ServerFactory

from solrace.client import Client, ServerError
from solrace.protocol import Limits

LIMIT = 12


async def test_the_move_past_the_limit_is_refused_and_the_game_kept(
    start_server: ServerFactory,
) -> None:
    server = await start_server(limits=replace(Limits(), max_moves_per_game=LIMIT))
    async with Client(server.url, name="Ann", request_timeout=TIMEOUT) as ann:
        await ann.create_room("canfield", max_players=1, countdown=0)
        await ann.start()
        await ann.next_event("race_started", timeout=TIMEOUT)
        for n in range(LIMIT):
            ack = await ann.move("d" if n % 2 == 0 else "u")
            assert ack["rev"] == n + 1
        # The move taken off the socket declines it, and the connection's task refuses
        # it: without either check, the move would be played.
        with pytest.raises(ServerError) as refused:
            await ann.move("d")
        assert refused.value.code == "move_limit"
        assert str(LIMIT) in refused.value.message
        assert ann.rev == LIMIT
        await ann.resign()
        over = await ann.next_event("race_over", timeout=TIMEOUT)
        (result,) = over["results"]
        # The game was kept as it was: its last move is the limit's.
        assert result["moves"] == LIMIT and result["status"] == "resigned"
