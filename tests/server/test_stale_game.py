"""A player's game kept by a node that the player has played past through another node.

On a shared store each node keeps the games of the rooms it holds. A player connected
through two nodes at once (a second tab that came through the load balancer elsewhere)
may play on through one; the other's game is then stale. Neither an old move sent again
through the stale node nor a resignation there may put the stale game's standing in the
room's results: the log is the game.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ServerFactory
from e2e_support import RawClient

from solrace.protocol import ErrorCode, ProtocolError

DRAWS = 5


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
@pytest.mark.parametrize("first_move_again", [True, False])
async def test_a_stale_game_on_another_node_never_overwrites_the_log_s_standing(
    start_server: ServerFactory, first_move_again: bool
) -> None:
    first = await start_server()
    second = await start_server()
    tab = await RawClient.open(first.url, name="solo")
    await tab.request(
        {
            "type": "create_room",
            "variant": "canfield",
            "countdown": 0,
            "max_players": 1,
            "winnable": False,
        }
    )
    await tab.request({"type": "start"})
    await tab.recv(lambda f: f.get("type") == "race_started")

    other = await RawClient.open(second.url, token=tab.token)  # the same player, elsewhere
    rev = 0
    for _ in range(DRAWS):
        ack = await other.request({"type": "move", "move": "d", "rev": rev})
        assert ack["type"] == "ack", ack
        rev = ack["rev"]
    assert rev == DRAWS

    # The first node's game is at revision 0: its first move again is refused as stale,
    # not taken for a retry of a logged move (the refusal lets go of the stale game).
    if first_move_again:
        again = await tab.request({"type": "move", "move": "d", "rev": 0})
        assert again["type"] == "error" and again["code"] == "stale_revision", again
    # A resignation through the first node (its game still stale, without the move above)
    # records the game as the log has it.
    resigned = await tab.request({"type": "resign"})
    assert resigned["type"] == "ok", resigned
    over: dict[str, Any] = await tab.recv(lambda f: f.get("type") == "race_over")
    (result,) = over["results"]
    assert (result["status"], result["moves"]) == ("resigned", DRAWS), result
    for client in (tab, other):
        client.ws.transport.abort()


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
@pytest.mark.parametrize("gives_up", ["resign", "leave_room"])
async def test_no_move_through_another_node_is_logged_after_a_resignation(
    start_server: ServerFactory, gives_up: str
) -> None:
    """The player resigns through one node while a move of theirs goes through another:
    the move is refused (game_over), never logged after the resignation, where the
    results would not count it and a replay of the log would not give the results."""
    first = await start_server()
    second = await start_server()
    tab = await RawClient.open(first.url, name="solo")
    made = await tab.request(
        {
            "type": "create_room",
            "variant": "canfield",
            "countdown": 0,
            "max_players": 2,
            "winnable": False,
        }
    )
    code = made["room"]["code"]
    rival = await RawClient.open(first.url, name="rival")  # the race goes on after
    await rival.request({"type": "join_room", "code": code, "role": "player"})
    await rival.request({"type": "set_ready", "ready": True})
    await tab.request({"type": "start"})
    await tab.recv(lambda f: f.get("type") == "race_started")
    other = await RawClient.open(second.url, token=tab.token)
    ack = await tab.request({"type": "move", "move": "d", "rev": 0})
    assert ack["type"] == "ack", ack

    resigned = await other.request({"type": gives_up})  # a leave resigns too
    assert resigned["type"] == "ok", resigned
    late = await tab.request({"type": "move", "move": "d", "rev": 1})
    # Refused as over, or, after a leave the node has heard of, as out of the room.
    refusals = ("game_over",) if gives_up == "resign" else ("game_over", "not_in_room")
    assert late["type"] == "error" and late["code"] in refusals, late
    # Whatever the node heard by then, the log itself takes no move after it.
    with pytest.raises(ProtocolError) as closed:
        await first.node.backend.append_move(code, 1, tab.player_id, 1, "d")
    assert closed.value.code is ErrorCode.GAME_OVER
    assert await first.node.backend.read_moves(code, 1, tab.player_id) == ["d"]
    await rival.request({"type": "resign"})
    over: dict[str, Any] = await rival.recv(lambda f: f.get("type") == "race_over")
    by_id = {r["player_id"]: r for r in over["results"]}
    assert (by_id[tab.player_id]["status"], by_id[tab.player_id]["moves"]) == ("resigned", 1)
    kept = await second.node.backend.load_race(code, 1, second.node.now_ms())
    assert kept is not None and kept["players"][tab.player_id]["moves"] == ["d"]
    # A move sent late to the race that is over is not logged either.
    later = await tab.request({"type": "move", "move": "d", "rev": 0})
    assert later["type"] == "error", later
    assert await first.node.backend.read_moves(code, 1, tab.player_id) == []
    for client in (tab, other, rival):
        client.ws.transport.abort()
