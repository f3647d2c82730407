"""A node holds a room only while one of its connections is a member of it."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import TIMEOUT, ServerFactory

from solrace.client import Client
from solrace.server import Node


def _held(node: Node, code: str) -> dict[str, Any]:
    """Every place a node keeps a room, and whether its backend still delivers the room."""
    backend: Any = node.backend
    subscribed = any(
        entry[0] == code if isinstance(entry, tuple) else key == code
        for key, entry in (
            getattr(backend, "_handlers", None) or getattr(backend, "_subscribers", {})
        ).items()
    )
    held = node.held.get(code)
    return {
        "held": held is not None,
        "task": held is not None and held.task is not None and not held.task.done(),
        "games": held is not None and bool(held.games),
        "subscribed": subscribed,
    }


async def test_the_last_member_leaving_drops_the_subscription_and_every_reference(
    start_server: ServerFactory,
) -> None:
    one = await start_server()
    two = await start_server()  # on Redis a second node of the same rooms; else its own
    async with (
        Client(one.url, name="ann", request_timeout=TIMEOUT) as ann,
        Client(one.url, name="ben", request_timeout=TIMEOUT) as ben,
        Client(one.url, name="cat", request_timeout=TIMEOUT) as cat,
    ):
        room = await ann.create_room("canfield", countdown=0)
        code = room["code"]
        await ben.join(code)
        await cat.join(code, role="spectator")
        await ann.start()
        await ann.next_event("race_started", timeout=TIMEOUT)
        await ann.move("d")
        await ben.next_event("race_started", timeout=TIMEOUT)
        await ben.move("d")
        held = _held(one.node, code)
        assert all(held.values()), held
        assert not any(_held(two.node, code).values())
        await cat.leave()
        await ben.leave()
        assert _held(one.node, code)["subscribed"]  # ann is still here
        await ann.leave()
    gone = _held(one.node, code)
    assert not any(gone.values()), gone


async def test_a_player_back_under_a_new_name_is_shown_under_it(
    make_client: Any,
) -> None:
    ann = await make_client("ann")
    bob = await make_client("bob")
    room = await ann.create_room("canfield")
    await bob.join(room["code"])
    token = bob.token
    await bob.close()
    robert = await make_client("robert", token=token)
    assert robert.player_id == bob.player_id
    async with asyncio.timeout(TIMEOUT):
        while True:
            event = await ann.next_event("members")
            names = {m["player_id"]: m["name"] for m in event["members"]}
            if names.get(bob.player_id) == "robert":
                break
    snapshot = await robert.sync()
    assert {m["name"] for m in snapshot["members"]} == {"ann", "robert"}
