"""A spectator watches a whole race: every board at the start, each move, the results."""

from __future__ import annotations

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from e2e_support import (
    FAST,
    apply_text,
    deal_seed,
    events_until,
    fresh,
    of_type,
    progress_of,
    standing_of,
    standings,
    steady_move,
)

from solrace.engine import spectator_view

SEED = 20240601
MOVES = 12


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets a test play at full speed."""
    return await start_server(limits=FAST)


@pytest.mark.parametrize("variant", ["canfield", "rainbow-canfield"])
async def test_a_spectator_sees_every_board_and_players_see_only_progress(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch, variant: str
) -> None:
    deal_seed(monkeypatch, SEED)
    alice = await make_client("alice")
    bob = await make_client("bob")
    carol = await make_client("carol")
    room = await alice.create_room(variant, countdown=0, spectators="live")
    await bob.join(room["code"])
    watching = await carol.join(room["code"], role="spectator")
    assert watching["you"]["role"] == "spectator"
    await alice.start()

    started = await carol.next_event("race_started", timeout=TIMEOUT)
    assert "view" not in started and "seed" not in started
    assert set(started["boards"]) == {alice.player_id, bob.player_id}
    games = {alice.player_id: fresh(variant, SEED), bob.player_id: fresh(variant, SEED)}
    for player_id, board in started["boards"].items():
        assert board == spectator_view(games[player_id])
    for player in (alice, bob):
        begun = await player.next_event("race_started", timeout=TIMEOUT)
        assert "boards" not in begun and "view" in begun

    # The players take turns; the spectator follows each board move by move.
    for turn in range(MOVES):
        player = (alice, bob)[turn % 2]
        game = games[player.player_id]
        move = steady_move(game)
        apply_text(game, move)
        await player.move(move)
        watched = await events_until(carol, progress_of(player.player_id, game.moves))
        standing = standing_of(watched[-1], player.player_id)
        assert standing["view"] == spectator_view(game)
        assert standing["banked"] == game.banked
        assert all(e["type"] != "error" for e in watched)

    # A late look (a snapshot) shows the spectator the same boards.
    snapshot = await carol.sync()
    assert snapshot["boards"] == {p: spectator_view(g) for p, g in games.items()}
    assert "seed" not in snapshot and "view" not in snapshot["you"]

    await alice.resign()
    await bob.resign()
    seen = await events_until(carol, of_type("race_over"))
    assert seen[-1]["seed"] == SEED
    assert {r["player_id"] for r in seen[-1]["results"]} == {alice.player_id, bob.player_id}
    assert all("seed" not in e for e in seen[:-1])

    # Neither player ever got an opponent's board, nor their own in a progress event.
    for player in (alice, bob):
        heard = await events_until(player, of_type("race_over"))
        progress = [e for e in heard if e["type"] == "progress"]
        assert len(progress) == MOVES + 2  # every move and both resignations
        assert len(standings(progress)) == MOVES + 2
        assert all("view" not in e and "boards" not in e for e in heard)
        assert all("view" not in s for s in standings(progress))


async def test_a_dropped_spectator_is_back_in_the_room_after_resuming(
    make_client: ClientFactory,
) -> None:
    host = await make_client("host")
    room = await host.create_room("canfield", countdown=0, spectators="live")
    watcher = await make_client("watcher")
    await watcher.join(room["code"], role="spectator")
    before = watcher.room
    await watcher.drop()
    await watcher.next_event("resumed", timeout=TIMEOUT)
    # Said once the room is back: its clock and standings are the fresh snapshot's.
    assert watcher.room is not before and watcher.room is not None
    back = await watcher.next_event("room", timeout=TIMEOUT)
    assert back["room"]["code"] == room["code"]
    assert back["room"]["you"]["role"] == "spectator"
    await host.start()
    started = await watcher.next_event("race_started", timeout=TIMEOUT)
    assert host.player_id in started["boards"]
