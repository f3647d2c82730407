"""A connection that comes back on another node while the old node lets go of the old one.

When a node drains (a rolling upgrade's SIGTERM), its clients resume through the load
balancer on another node at once, often before the draining node has let go of their old
connections. Letting go of an old connection must then leave the room as the new one
made it: a spectator stays in the room and hears it, a player stays connected (a player
marked away would be dropped from the race once the resume grace is over).
"""

from __future__ import annotations

import asyncio

import pytest
from conftest import TIMEOUT, ServerFactory
from e2e_support import RawClient


async def closed_on_its_node(client: RawClient) -> None:
    """Close ``client``'s connection from its side, as a drained node's client finds it."""
    client.ws.transport.abort()


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
@pytest.mark.parametrize("role", ["spectator", "player"])
async def test_the_old_nodes_drop_leaves_a_member_who_came_back_elsewhere_in_the_room(
    start_server: ServerFactory, role: str
) -> None:
    first = await start_server()
    second = await start_server()
    host = await RawClient.open(second.url, name="host")
    created = await host.request({"type": "create_room", "variant": "canfield", "countdown": 0})
    code = created["room"]["code"]
    member = await RawClient.open(first.url, name="member")
    joined = await member.request({"type": "join_room", "code": code, "role": role})
    assert joined["type"] == "room", joined

    # The member comes back on the second node while the first still holds the old
    # connection; then the first lets go of it.
    again = await RawClient.open(second.url, name=None)
    welcome = await again.request({"type": "hello", "token": member.token})
    assert welcome["type"] == "welcome" and welcome.get("room") == code, welcome
    await closed_on_its_node(member)
    # The first node has let go once the member is no longer held there.
    async with asyncio.timeout(TIMEOUT):
        while member.player_id in first.node.sessions or code in first.node.held:
            await asyncio.sleep(0.01)
    assert member.player_id not in first.node.sessions
    await host.request({"type": "ping"})  # a round trip through the store after it

    snapshot = await host.request({"type": "sync"})
    members = {m["player_id"]: m for m in snapshot["room"]["members"]}
    assert member.player_id in members, "the member is still in the room"
    assert members[member.player_id]["connected"], "and connected, through the second node"
    assert members[member.player_id]["role"] == role

    # And the member still hears the room: a race starts (a spectator) or is theirs.
    if role == "player":
        await again.request({"type": "ready", "ready": True})
        await host.request({"type": "ready", "ready": True})
    else:
        await host.request({"type": "start"})
    started = await again.recv(lambda f: f.get("type") == "race_started")
    assert started["room"] == code
    for client in (host, again):
        client.ws.transport.abort()
