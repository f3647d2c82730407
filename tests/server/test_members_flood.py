"""A member who drops and comes back in a loop does not hold back the room's events.

Each drop and each return is a ``members`` event, and a room sends its members at most
once per ``members_interval_s``; the room's other events keep their order behind one that
waits. Folded only while they came one right behind the other, members events between
which progress events lay each waited their interval, and the queue grew by about a second
each second: the other players heard each other's moves, and the race's end, later and
later (30 s after 30 s of it, in a trial). Now every members event queued behind the one
that waited is folded into the last, and the progress between goes out first.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from conftest import LOOSE_BUDGETS, TIMEOUT, ClientFactory, ServerFactory
from e2e_support import standings

from solrace.client import Client

INTERVAL = 0.5
FLOOD_S = 4.0


async def test_a_member_reconnecting_in_a_loop_delays_no_one(
    start_server: ServerFactory, make_client: ClientFactory
) -> None:
    server = await start_server(budgets=replace(LOOSE_BUDGETS, members_interval_s=INTERVAL))
    alice = await make_client("alice", url=server.url)
    bob = await make_client("bob", url=server.url)
    room = await alice.create_room("canfield", countdown=0, winnable=False)
    await bob.join(room["code"])
    async with Client(server.url, name="mallory", request_timeout=TIMEOUT) as mallory:
        await mallory.join(room["code"])
        token = mallory.token
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    await bob.next_event("race_started", timeout=TIMEOUT)

    stop = asyncio.Event()

    async def flood() -> int:
        """Mallory's identity comes back and drops, about ten times a second."""
        drops = 0
        while not stop.is_set():
            async with Client(server.url, token=token, request_timeout=TIMEOUT):
                await asyncio.sleep(0.02)
            drops += 1
            await asyncio.sleep(0.08)
        return drops

    heard: dict[int, float] = {}

    async def listen() -> float:
        """When Bob hears each of Alice's moves; when he hears the race is over."""
        while True:
            event = await bob.next_event("progress", "race_over", timeout=4 * TIMEOUT)
            now = time.monotonic()
            if event["type"] == "race_over":
                return now
            for standing in standings([event], alice.player_id):
                for move in range(1, standing["moves"] + 1):
                    heard.setdefault(move, now)

    flooding = asyncio.ensure_future(flood())
    listening = asyncio.ensure_future(listen())
    sent: dict[int, float] = {}
    started = time.monotonic()
    while time.monotonic() - started < FLOOD_S:
        ack = await alice.move("u" if sent and len(sent) % 2 else "d")
        sent[ack["rev"]] = time.monotonic()
        await asyncio.sleep(0.1)
    stop.set()
    drops = await flooding
    await alice.resign()
    await bob.resign()
    async with Client(server.url, token=token, request_timeout=TIMEOUT) as mallory:
        await mallory.resign()
        resigned = time.monotonic()
    over = await listening

    assert drops >= 20, drops  # the flood ran
    lags = [heard[rev] - at for rev, at in sent.items() if rev in heard]
    assert len(lags) == len(sent), "every move of Alice's was heard"
    # Without the fold the lag grew to about FLOOD_S by the end; each move now waits at
    # most an interval and a report or so.
    assert max(lags) < 3 * INTERVAL, sorted(lags)[-5:]
    assert over - resigned < 3 * INTERVAL


async def test_a_members_event_held_back_does_not_hold_back_the_race_start(
    start_server: ServerFactory, make_client: ClientFactory
) -> None:
    """A host who starts (countdown 0) just after someone joins: the join's members event
    waits for the room's interval, but the deal does not wait behind it, for the race
    clock runs from the start."""
    interval = 3.0
    server = await start_server(budgets=replace(LOOSE_BUDGETS, members_interval_s=interval))
    alice = await make_client("alice", url=server.url)
    bob = await make_client("bob", url=server.url)
    room = await alice.create_room("canfield", countdown=0, winnable=False)
    await bob.join(room["code"])  # a members event: the next waits for the interval
    carol = await make_client("carol", url=server.url)
    await carol.join(room["code"])  # this one waits
    asked = time.monotonic()
    await alice.start()
    await bob.next_event("race_started", timeout=TIMEOUT)
    assert time.monotonic() - asked < interval / 3
    # The members event went out first, in order.
    snapshot = await bob.sync()
    assert {m["name"] for m in snapshot["members"]} == {"alice", "bob", "carol"}
