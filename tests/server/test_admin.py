"""The operator's tools: list rooms, close a room, revoke an identity; guests expire.

On Redis each runs through one node while the players sit on another, so that "every
node at once" is what is checked.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from conftest import TIMEOUT, ServerFactory
from e2e_support import RawClient

from solrace.client import Client, ServerError


async def two_nodes(start_server: ServerFactory, **config: object) -> tuple[object, object]:
    """Two nodes of one store (on the embedded backend, the same node twice)."""
    one = await start_server(**config)
    two = one if one.node.backend.in_process else await start_server(**config)
    return one, two


async def test_an_operator_lists_the_rooms(start_server: ServerFactory) -> None:
    one, two = await two_nodes(start_server)
    raw = await RawClient.open(one.url, name="ann")
    room = (await raw.request({"type": "create_room", "variant": "rainbow-canfield"}))["room"]
    listed = await two.node.admin.rooms()
    (entry,) = [r for r in listed if r["code"] == room["code"]]
    assert entry["variant"] == "rainbow-canfield" and entry["state"] == "lobby"
    assert [p["name"] for p in entry["players"]] == ["ann"] and entry["spectators"] == 0


async def test_a_closed_room_lets_its_members_go_and_says_why(
    start_server: ServerFactory,
) -> None:
    one, two = await two_nodes(start_server)
    async with (
        Client(one.url, name="ann", request_timeout=TIMEOUT) as ann,
        Client(one.url, name="eve", request_timeout=TIMEOUT) as eve,
    ):
        room = await ann.create_room("canfield", countdown=0)
        await eve.join(room["code"], role="spectator")
        await ann.start()
        await ann.next_event("race_started", timeout=TIMEOUT)
        assert await two.node.admin.close_room(room["code"], "closed for abuse")
        for client in (ann, eve):
            last = await client.next_event("members", timeout=TIMEOUT)
            assert last["closed"] == "closed for abuse" and last["members"] == []
            with pytest.raises(ServerError) as refused:
                await client.sync()
            assert refused.value.code == "not_in_room"
        assert room["code"] not in {r["code"] for r in await two.node.admin.rooms()}
        assert not await two.node.admin.close_room(room["code"], "again")
        # Free to play elsewhere.
        assert (await ann.create_room("canfield"))["code"] != room["code"]


async def test_a_revoked_identity_is_closed_everywhere_and_its_tokens_stop_working(
    start_server: ServerFactory,
) -> None:
    one, two = await two_nodes(start_server)
    raw = await RawClient.open(one.url, name="mallory")
    token = raw.token
    assert await two.node.admin.revoke(raw.player_id)
    assert await raw.closed() == 4003
    for node in (one, two):
        again = await RawClient.open(node.url, name=None)
        reply = await again.request({"type": "hello", "token": token})
        assert reply["type"] == "error" and reply["code"] == "bad_token", reply
    assert not await two.node.admin.revoke("no-such-player")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)
async def test_a_guest_not_seen_for_the_ttl_is_forgotten_embedded(
    start_server: ServerFactory,
) -> None:
    clock = Clock()
    server = await start_server(clock=clock, guest_ttl_s=3600.0)
    gone = await RawClient.open(server.url, name="gone")
    kept = await RawClient.open(server.url, name="kept")
    await gone.close()
    clock.now += 3000
    await RawClient.open(server.url, token=kept.token)  # seen again: its time starts over
    clock.now += 1000  # past the TTL for "gone" only
    assert await server.node.expire_guests() == 1
    again = await RawClient.open(server.url, name=None)
    reply = await again.request({"type": "hello", "token": gone.token})
    assert reply["type"] == "error" and reply["code"] == "bad_token", reply
    await RawClient.open(server.url, token=kept.token)


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_guest_not_seen_for_the_ttl_is_forgotten_redis(
    start_server: ServerFactory,
) -> None:
    server = await start_server(guest_ttl_s=0.5)
    gone = await RawClient.open(server.url, name="gone")
    await gone.close()
    async with asyncio.timeout(TIMEOUT):  # Redis forgets the key by its own time to live
        while await server.node.backend.player(gone.player_id) is not None:
            await asyncio.sleep(0.05)
    again = await RawClient.open(server.url, name=None)
    reply = await again.request({"type": "hello", "token": gone.token})
    assert reply["type"] == "error" and reply["code"] == "bad_token", reply


# -- the admin API and `solrace admin` -----------------------------------------------------


async def solrace_admin(port: int | None, *args: str, token: str = "s3cret") -> tuple[int, str]:
    """Run ``solrace admin`` against a node's metrics port; its exit code and output."""
    command = [sys.executable, "-m", "solrace", "admin", "--url", f"http://127.0.0.1:{port}"]
    done = await asyncio.to_thread(
        subprocess.run,
        [*command, "--token", token, *args],
        capture_output=True,
        text=True,
        timeout=4 * TIMEOUT,
    )
    return done.returncode, done.stdout + done.stderr


async def test_solrace_admin_lists_closes_and_revokes_through_the_metrics_port(
    start_server: ServerFactory,
) -> None:
    server = await start_server(metrics_port=0, admin_token="s3cret")
    port = server.server.http.metrics_port
    async with Client(server.url, name="ann", request_timeout=TIMEOUT) as ann:
        room = await ann.create_room("canfield")
        code, listed = await solrace_admin(port, "rooms")
        assert code == 0 and room["code"] in listed and "ann" in listed, listed
        code, said = await solrace_admin(port, "close", room["code"], "--reason", "maintenance")
        assert code == 0 and "maintenance" in said, said
        last = await ann.next_event("members", timeout=TIMEOUT)
        assert last["closed"] == "maintenance"
    raw = await RawClient.open(server.url, name="mallory")
    code, said = await solrace_admin(port, "revoke", raw.player_id)
    assert code == 0 and raw.player_id in said, said
    assert await raw.closed() == 4003
    # The wrong token opens nothing; an unknown room or player is said so.
    code, said = await solrace_admin(port, "rooms", token="guess")
    assert code == 1 and "401" in said and "wrong admin token" in said, said
    code, said = await solrace_admin(port, "close", "NOSUCHRM")
    assert code == 1 and "404" in said, said


async def test_without_an_admin_token_there_is_no_admin_api(start_server: ServerFactory) -> None:
    server = await start_server(metrics_port=0)
    code, said = await solrace_admin(server.server.http.metrics_port, "rooms")
    assert code == 1 and "no admin API" in said, said
