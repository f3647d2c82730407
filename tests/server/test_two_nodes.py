"""Two server nodes on one Redis share rooms: players on either node race each other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from e2e_support import standing_of, standings

from solrace.client import Client

pytestmark = pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)


async def event_where(
    client: Client, kind: str, test: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The next ``kind`` event that passes ``test``, skipping the others."""
    while True:
        event = await client.next_event(kind, timeout=TIMEOUT)
        if test(event):
            return event


def has(player_id: str | None) -> Callable[[dict[str, Any]], bool]:
    """Matches a progress event with a standing of ``player_id``."""
    return lambda e: bool(standings([e], player_id))


def names(event: dict[str, Any]) -> list[str]:
    """The member names of a ``members`` event."""
    return [m["name"] for m in event["members"]]


async def test_players_on_two_nodes_race_and_see_each_others_progress(
    server: RunningServer, start_server: ServerFactory, make_client: ClientFactory
) -> None:
    other = await start_server()
    alice = await make_client("alice")
    bob = await make_client("bob", url=other.url)
    carol = await make_client("carol", url=other.url)

    room = await alice.create_room("canfield", countdown=0, spectators="live")
    joined = await bob.join(room["code"])
    assert names(joined) == ["alice", "bob"]
    await event_where(alice, "members", lambda e: names(e) == ["alice", "bob"])
    await carol.join(room["code"], role="spectator")

    await alice.start()
    started_a = await alice.next_event("race_started", timeout=TIMEOUT)
    started_b = await bob.next_event("race_started", timeout=TIMEOUT)
    started_c = await carol.next_event("race_started", timeout=TIMEOUT)
    assert started_a["view"] == started_b["view"], "one deal for both nodes"
    assert set(started_c["boards"]) == {alice.player_id, bob.player_id}

    ack = await alice.move("d")
    assert ack["rev"] == 1
    seen = await event_where(bob, "progress", has(alice.player_id))
    mine = standing_of(seen, alice.player_id)
    assert mine["moves"] == 1 and "view" not in mine and "view" not in seen
    watched = await event_where(carol, "progress", has(alice.player_id))
    mine = standing_of(watched, alice.player_id)
    assert mine["moves"] == 1 and mine["view"], "spectators see the board"

    ack = await bob.move("d")
    assert ack["rev"] == 1
    seen = await event_where(alice, "progress", has(bob.player_id))
    assert standing_of(seen, bob.player_id)["moves"] == 1

    await alice.resign()
    await bob.resign()
    over_a = await alice.next_event("race_over", timeout=TIMEOUT)
    over_b = await bob.next_event("race_over", timeout=TIMEOUT)
    assert over_a["results"] == over_b["results"]
    assert over_a["seed"] == over_b["seed"]
    assert {r["player_id"] for r in over_a["results"]} == {alice.player_id, bob.player_id}
    kept = await other.node.backend.load_results(room["code"], over_a["race"])
    assert kept is not None and kept["results"] == over_a["results"]


async def test_a_player_resumes_on_another_node_and_plays_on_from_the_log(
    server: RunningServer, start_server: ServerFactory, make_client: ClientFactory
) -> None:
    other = await start_server()
    alice = await make_client("alice")
    bob = await make_client("bob")
    room = await alice.create_room("canfield", countdown=0)
    await bob.join(room["code"])
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    assert (await alice.move("d"))["rev"] == 1
    token = alice.token
    await alice.close()

    # Alice comes back through the other node: her game is rebuilt there from the log.
    moved = await make_client("alice", token=token, url=other.url)
    assert moved.player_id == alice.player_id and moved.room is not None
    assert moved.room["you"]["rev"] == 1
    assert (await moved.move("d"))["rev"] == 2
    await event_where(bob, "progress", has(alice.player_id))
    seen = await bob.next_event("progress", timeout=TIMEOUT)
    assert [(s["player_id"], s["moves"]) for s in seen["players"]] == [(alice.player_id, 2)]
    await moved.close()

    # And back on the first node, where Bob kept the room: it plays on from the log too.
    back = await make_client("alice", token=token)
    assert back.room is not None and back.room["you"]["rev"] == 2
    assert (await back.move("d"))["rev"] == 3
