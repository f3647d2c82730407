"""A first end-to-end race over real websockets on loopback."""

from __future__ import annotations

from conftest import TIMEOUT, ClientFactory


async def test_two_players_race_and_see_each_others_progress(make_client: ClientFactory) -> None:
    alice = await make_client("alice")
    bob = await make_client("bob")
    room = await alice.create_room("canfield", countdown=0)
    await bob.join(room["code"])
    await alice.start()
    started = await alice.next_event("race_started", timeout=TIMEOUT)
    assert started["view"]["variant"] == "canfield"
    assert "seed" not in started
    ack = await alice.move("d")
    assert ack["rev"] == 1
    seen = await bob.next_event("progress", timeout=TIMEOUT)
    assert [(s["player_id"], s["moves"]) for s in seen["players"]] == [(alice.player_id, 1)]
    assert "view" not in seen and "view" not in seen["players"][0]
    await alice.resign()
    await bob.resign()
    over = await bob.next_event("race_over", timeout=TIMEOUT)
    assert isinstance(over["seed"], int)
    # Neither banked a card: level, whoever resigned first or joined first.
    assert [r["rank"] for r in over["results"]] == [1, 1]
