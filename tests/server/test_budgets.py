"""Budgets per identity and per client address hold across connections and identities.

The clients of a test all come from 127.0.0.1; to play clients at other addresses, the
node trusts 127.0.0.1 as a proxy and each raw client sends the ``X-Real-IP`` a proxy
would. Counted budgets go through the store, so each runs on both backends.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from conftest import LOOSE_BUDGETS, TIMEOUT, RunningServer, ServerFactory
from e2e_support import RawClient
from websockets.exceptions import ConnectionClosed

from solrace.server.budgets import ROOM_SHARE_RETRY_AFTER_S, client_key, forwarded_client

PROXIED = ("127.0.0.1",)
ATTACKER = "203.0.113.7"
NEIGHBOUR = "198.51.100.9"


def at(address: str) -> dict[str, str]:
    """The header a trusted proxy adds for a client at ``address``."""
    return {"X-Real-IP": address}


async def serve(start_server: ServerFactory, **budgets: Any) -> RunningServer:
    return await start_server(budgets=replace(LOOSE_BUDGETS, **budgets), trusted_proxies=PROXIED)


async def create(raw: RawClient) -> dict[str, Any]:
    return await raw.request({"type": "create_room", "variant": "canfield"})


def refused(reply: dict[str, Any], reason: str) -> bool:
    return (
        reply["type"] == "error"
        and reply["code"] == "over_budget"
        and reply["reason"] == reason
        and reply["retry_after"] > 0
    )


# -- addresses -----------------------------------------------------------------------------


def test_an_ipv6_address_counts_by_its_64_and_a_mapped_ipv4_as_itself() -> None:
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9")
    assert client_key("2001:db8:1:2::1") != client_key("2001:db8:1:3::1")
    assert client_key("::ffff:192.0.2.1") == "192.0.2.1"
    assert client_key("192.0.2.1") == "192.0.2.1"


def test_only_a_trusted_proxy_is_believed_about_the_client() -> None:
    trusted = ("10.0.0.0/8",)
    assert forwarded_client("10.1.2.3", None, "192.0.2.5", trusted) == "192.0.2.5"
    # X-Forwarded-For: the right-most hop that is not itself a trusted proxy.
    assert forwarded_client("10.1.2.3", "6.6.6.6, 192.0.2.5, 10.9.9.9", None, trusted) == (
        "192.0.2.5"
    )
    # Anyone else is taken at its own address, whatever it says.
    assert forwarded_client("192.0.2.99", "6.6.6.6", "6.6.6.6", trusted) == "192.0.2.99"
    assert forwarded_client("10.1.2.3", "not an address", "nor this", trusted) == "10.1.2.3"
    assert forwarded_client("10.1.2.3", None, "6.6.6.6", ()) == "10.1.2.3"


async def test_an_untrusted_peer_cannot_pass_for_new_addresses(
    start_server: ServerFactory,
) -> None:
    server = await start_server(budgets=replace(LOOSE_BUDGETS, identities_per_hour=2))
    for n in range(2):
        await RawClient.open(server.url, name=f"p{n}", headers=at(f"192.0.2.{n}"))
    raw = await RawClient.open(server.url, name=None, headers=at("192.0.2.77"))
    reply = await raw.request({"type": "hello", "name": "third"})
    assert refused(reply, "identities_per_hour"), reply


# -- counted budgets -----------------------------------------------------------------------


async def test_a_reconnect_renews_no_budget(start_server: ServerFactory) -> None:
    server = await serve(start_server, rooms_per_hour=2)
    first = await RawClient.open(server.url, name="ann", headers=at(ATTACKER))
    for _ in range(2):
        assert (await create(first))["type"] == "room"
        assert (await first.request({"type": "leave_room"}))["type"] == "ok"
    await first.close()
    again = await RawClient.open(server.url, token=first.token, headers=at(ATTACKER))
    reply = await create(again)
    assert refused(reply, "rooms_per_hour"), reply
    assert 0 < reply["retry_after"] <= 3600 / 2


async def test_fresh_identities_from_one_address_share_its_budget(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, address_rooms_per_hour=3)
    for n in range(3):
        raw = await RawClient.open(server.url, name=f"a{n}", headers=at(ATTACKER))
        assert (await create(raw))["type"] == "room"
    fresh = await RawClient.open(server.url, name="a3", headers=at(ATTACKER))
    assert refused(await create(fresh), "address_rooms_per_hour")
    other = await RawClient.open(server.url, name="neighbour", headers=at(NEIGHBOUR))
    assert (await create(other))["type"] == "room"


async def test_identities_made_from_one_address_are_bounded(start_server: ServerFactory) -> None:
    server = await serve(start_server, identities_per_hour=3)
    made = [await RawClient.open(server.url, name=f"m{n}", headers=at(ATTACKER)) for n in range(3)]
    raw = await RawClient.open(server.url, name=None, headers=at(ATTACKER))
    reply = await raw.request({"type": "hello", "name": "one too many"})
    assert refused(reply, "identities_per_hour"), reply
    assert "id" in reply
    # A known identity comes back all the same, and another address makes its own.
    back = await RawClient.open(server.url, token=made[0].token, headers=at(ATTACKER))
    assert back.player_id == made[0].player_id
    await RawClient.open(server.url, name="neighbour", headers=at(NEIGHBOUR))


async def test_joins_are_bounded_and_a_leave_is_never_refused(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, joins_per_minute=4)
    host = await RawClient.open(server.url, name="host", headers=at(NEIGHBOUR))
    code = (await create(host))["room"]["code"]
    churn = await RawClient.open(server.url, name="churn", headers=at(ATTACKER))
    replies = []
    for _ in range(4):
        joined = await churn.request({"type": "join_room", "code": code, "role": "spectator"})
        replies.append(joined["type"])
        if joined["type"] == "room":
            left = await churn.request({"type": "leave_room"})
            assert left["type"] == "ok", left  # never refused, but counted
    # Four joins and leaves spend the budget: the third join is refused.
    assert replies[:2] == ["room", "room"] and "error" in replies, replies
    last = await churn.request({"type": "join_room", "code": code, "role": "spectator"})
    assert refused(last, "joins_per_minute"), last


async def test_daily_starts_are_bounded(start_server: ServerFactory) -> None:
    server = await serve(start_server, daily_starts_per_day=2)
    raw = await RawClient.open(server.url, name="daily", headers=at(ATTACKER))
    claimed = await raw.request({"type": "claim", "password": "a daily pass phrase"})
    assert claimed["type"] == "account", claimed  # the daily deal is an account's
    for _ in range(2):
        started = await raw.request({"type": "daily", "variant": "rainbow-canfield"})
        assert started["type"] == "room", started
        assert (await raw.request({"type": "resign"}))["type"] == "ok"
        await raw.recv(lambda f: f.get("type") == "race_over")
    third = await raw.request({"type": "daily", "variant": "rainbow-canfield"})
    assert refused(third, "daily_starts_per_day"), third


# -- what an address holds -----------------------------------------------------------------


async def test_an_address_holds_at_most_its_share_of_a_nodes_rooms(
    start_server: ServerFactory,
) -> None:
    server = await start_server(
        budgets=replace(LOOSE_BUDGETS, room_share_per_address=0.25),
        trusted_proxies=PROXIED,
        max_rooms_per_node=40,
    )
    holders = []
    for n in range(10):  # a quarter of 40
        raw = await RawClient.open(server.url, name=f"h{n}", headers=at(ATTACKER))
        assert (await create(raw))["type"] == "room"
        holders.append(raw)
    one_more = await RawClient.open(server.url, name="h10", headers=at(ATTACKER))
    over = await create(one_more)
    assert refused(over, "room_share_per_address"), over
    assert over["retry_after"] == ROOM_SHARE_RETRY_AFTER_S, over
    assert f"try again in {ROOM_SHARE_RETRY_AFTER_S:g} s" in over["message"], over
    other = await RawClient.open(server.url, name="neighbour", headers=at(NEIGHBOUR))
    assert (await create(other))["type"] == "room"
    # Holding is being there: once one of them leaves, the address may hold one more.
    await holders[0].close()
    async with asyncio.timeout(TIMEOUT):
        while (await create(one_more))["type"] != "room":
            await asyncio.sleep(0.05)


async def test_two_thousand_rooms_from_one_address_leave_room_for_everyone_else(
    start_server: ServerFactory,
) -> None:
    # The node's own defaults, but for the proxy that lets a test be two addresses.
    server = await start_server(
        budgets=replace(server_defaults(), members_interval_s=0.0), trusted_proxies=PROXIED
    )
    made = 0

    async def attempt(n: int) -> None:
        nonlocal made
        raw = await RawClient.open(server.url, name=None, headers=at(ATTACKER))
        try:
            hello = await raw.request({"type": "hello", "name": f"x{n}"})
            if hello["type"] == "welcome" and (await create(raw))["type"] == "room":
                made += 1
        finally:
            await raw.close()

    for start in range(0, 2000, 32):  # fewer at once than an address may connect
        await asyncio.gather(*(attempt(n) for n in range(start, min(start + 32, 2000))))
    assert made <= server.config.budgets.identities_per_hour
    other = await RawClient.open(server.url, name="neighbour", headers=at(NEIGHBOUR))
    assert (await create(other))["type"] == "room"


def server_defaults() -> Any:
    from solrace.server import ServerConfig

    return ServerConfig().budgets


async def test_too_many_connections_from_one_address_are_refused(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, connections_per_address=3)
    kept = [await RawClient.open(server.url, name=None, headers=at(ATTACKER)) for _ in range(3)]
    extra = await RawClient.open(server.url, name=None, headers=at(ATTACKER))
    error = await extra.recv(lambda f: f.get("type") == "error")
    assert refused(error, "connections_per_address"), error
    assert await extra.closed() == 1013
    with pytest.raises(ConnectionClosed):
        await extra.ws.send(b"\x80")
    await RawClient.open(server.url, name="neighbour", headers=at(NEIGHBOUR))
    await kept[0].close()
    async with asyncio.timeout(TIMEOUT):
        while True:  # the closed one is counted out
            again = await RawClient.open(server.url, name=None, headers=at(ATTACKER))
            reply = await again.request({"type": "ping"})
            if reply["type"] == "pong":
                break
            await asyncio.sleep(0.05)


async def test_an_address_shares_one_message_rate_over_its_identities(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, address_messages_per_second=1.0, address_burst=6)
    one = await RawClient.open(server.url, name="one", headers=at(ATTACKER))
    two = await RawClient.open(server.url, name="two", headers=at(ATTACKER))
    replies = [await (one if n % 2 else two).request({"type": "ping"}) for n in range(6)]
    limited = [r for r in replies if r.get("code") == "rate_limited"]
    assert limited and all(0 < r["retry_after"] <= 1.5 for r in limited), replies
    other = await RawClient.open(server.url, name="neighbour", headers=at(NEIGHBOUR))
    assert (await other.request({"type": "ping"}))["type"] == "pong"


# -- a churning room -----------------------------------------------------------------------


async def test_members_of_a_churning_room_are_sent_as_the_latest_list(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, members_interval_s=0.5)
    host = await RawClient.open(server.url, name="host", headers=at(NEIGHBOUR))
    room = (await create(host))["room"]
    churn = await RawClient.open(server.url, name="churn", headers=at(ATTACKER))
    loop = asyncio.get_running_loop()
    began = loop.time()
    for _ in range(20):
        await churn.request({"type": "join_room", "code": room["code"], "role": "spectator"})
        await churn.request({"type": "leave_room"})
    took = loop.time() - began
    # The host hears the room as it ends: only itself.
    async with asyncio.timeout(TIMEOUT):
        while True:
            event = await host.recv(lambda f: f.get("type") == "members")
            if [m["name"] for m in event["members"]] == ["host"] and event["seq"] >= 41:
                break
    events = [f for f in host.frames if f.get("type") == "members"]
    assert len(events) <= 2 + (took + 1) / 0.5, [e["seq"] for e in events]
    # Nothing was lost: each event follows the last one seen, or says what it stands for.
    seen = room["seq"]
    for item in events:
        assert item.get("since", item["seq"]) <= seen + 1, (seen, item)
        seen = item["seq"]
    assert seen == 41  # 20 joins and 20 leaves after the room's first event


def test_a_rate_is_forgotten_only_once_unused_and_full_again() -> None:
    from solrace.protocol import MsgpackCodec, RateLimiter
    from solrace.server import ServerConfig
    from solrace.server.budgets import Guard
    from solrace.server.session import Session

    config = ServerConfig()
    guard = Guard(config, backend=None)  # type: ignore[arg-type]

    async def nothing(*_: Any) -> None:
        return None

    def session() -> Session:
        made = Session("c", MsgpackCodec(), nothing, lambda _: None, nothing, RateLimiter(1, 1, 0))
        made.player_id = "ann"
        return made

    first = session()
    guard.bind(first, now=0.0)
    assert guard.take(first, 0.0, cost=config.limits.burst) is None  # spent it all
    guard.unbind(first)
    assert guard.prune(now=0.01) == 0  # unused, but not full: a new one would renew them
    second = session()
    guard.bind(second, now=0.01)
    assert guard.take(second, 0.01) is not None  # the same spent bucket
    refill = config.limits.burst / config.limits.messages_per_second
    assert guard.prune(now=refill + 1) == 0  # full again, but in use
    guard.unbind(second)
    assert guard.prune(now=refill + 1) == 2  # the identity's and the address's


LONG_GAME = 9_000  # draw and undo, legal for ever: 90 messages (of a burst of 60)


async def _racing_alone(server: RunningServer) -> tuple[RawClient, str, int]:
    """A player alone in a running race with undo: the client, the room code and race."""
    raw = await RawClient.open(server.url, name="long")
    made = await raw.request(
        {
            "type": "create_room",
            "variant": "canfield",
            "countdown": 0,
            "max_players": 1,
            "winnable": False,
            "undo": True,
        }
    )
    await raw.request({"type": "start"})
    started = await raw.recv(lambda f: f.get("type") == "race_started")
    return raw, made["room"]["code"], started.get("race", 1)


async def _log_a_long_game(server: RunningServer, raw: RawClient, code: str, race: int) -> None:
    """Log ``LONG_GAME`` moves of the player's (as played through the store)."""
    for rev in range(LONG_GAME):
        move = "d" if rev % 2 == 0 else "u"
        await server.node.backend.append_move(code, race, raw.player_id, rev, move, rev)


async def _charged(raw: RawClient) -> None:
    """The identity's next message waits: the rebuild was owed to its rates."""
    refused = await raw.request({"type": "ping"})
    assert refused["type"] == "error" and refused["code"] == "rate_limited", refused
    assert refused["retry_after"] > 0.5, refused


@pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)
async def test_a_resume_that_rebuilds_a_long_game_is_charged_to_the_rates(
    start_server: ServerFactory,
) -> None:
    """A game the node no longer holds is rebuilt from its log for the snapshot of a
    resume: on the event loop, about 4 ms a thousand moves. Reconnecting again and again
    to a long game bought that for one hello each (one address stalled the node's other
    players); the rebuild is now owed to the identity's and the address's message rates,
    so the next message of the identity waits."""
    server = await start_server(budgets=LOOSE_BUDGETS)
    raw, code, race = await _racing_alone(server)
    raw.ws.transport.abort()
    async with asyncio.timeout(TIMEOUT):
        while code in server.node.held:  # the node lets go of the room and its game
            await asyncio.sleep(0.01)
    await _log_a_long_game(server, raw, code, race)

    back = await RawClient.open(server.url, token=raw.token)
    snapshot = await back.recv(lambda f: f.get("type") == "room")
    assert snapshot["room"]["you"]["rev"] == LONG_GAME
    await _charged(back)


@pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)
async def test_a_move_that_rebuilds_a_long_game_is_charged_to_the_rates(
    start_server: ServerFactory,
) -> None:
    """The node lets go of a game it holds where an append failed (or, on Redis, a copy
    was stale); the player's next move rebuilds it from its log. That rebuild is owed to
    the rates as a resume's is: a player who could make the node drop its game again and
    again would otherwise stall the node's other players for the price of a move."""
    server = await start_server(budgets=LOOSE_BUDGETS)
    raw, code, race = await _racing_alone(server)
    await _log_a_long_game(server, raw, code, race)
    server.node.held[code].games.pop(raw.player_id)  # as after a failed append

    acked = await raw.request({"type": "move", "move": "d", "rev": LONG_GAME})
    assert acked["type"] == "ack" and acked["rev"] == LONG_GAME + 1, acked
    await _charged(raw)
