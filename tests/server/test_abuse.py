"""The abuse suite: each attack against a real ``solrace serve``, on both backends.

The node runs with its shipped defaults, but for ``--trusted-proxy 127.0.0.1``, so that
each attack can come from an address of its own (bench/attacks.py makes them) while a
canary races in a room of its own from 127.0.0.1. Through every attack the canary's
moves are all acked, and it gets no error frame at all: its client retries a
``rate_limited`` request by itself, so only the frames it received show that nothing of
its was refused. Its connection is never dropped; and each attack gets no more out of
the node than its budget says. Latency under attack is a benchmark's
business (bench/abuse.py), not a test's.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from conftest import TIMEOUT
from process_support import NodeProcess
from redis_server import RedisServer

from solrace.protocol import Limits
from solrace.server import ServerConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import attacks

DEFAULTS = ServerConfig()
BUDGETS = DEFAULTS.budgets
LIMITS: Limits = DEFAULTS.limits


@pytest.fixture(params=["embedded", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str | None]:
    """A Redis URL (a redis-server of the test's own) or None for the embedded backend."""
    if request.param == "embedded":
        yield None
        return
    if not RedisServer.available():
        pytest.skip("redis-server is not installed")
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    yield redis.url
    redis.stop()


@pytest.fixture
async def node(tmp_path: Path, store: str | None) -> AsyncIterator[NodeProcess]:
    process = NodeProcess(tmp_path / "node", store, "--trusted-proxy", "127.0.0.1")
    process.start()
    await asyncio.to_thread(process.wait_listening)
    yield process
    process.stop()


async def through(node: NodeProcess, attack: asyncio.Task[attacks.Tally]) -> attacks.Canary:
    """The canary's race while the attack runs; the attack is stopped once it is over."""
    try:
        canary = await asyncio.wait_for(attacks.canary_race(node.url), 6 * TIMEOUT)
    finally:
        STOP.set()
    assert_unharmed(canary)
    return canary


def assert_unharmed(canary: attacks.Canary) -> None:
    """Every move acked, no error frame of any kind received, the connection kept."""
    assert canary.refused == [], canary.refused
    assert canary.events["error"] == 0, f"the canary got error frames: {canary.events}"
    assert canary.events["ack"] >= 40, canary.events  # its client counts every frame
    assert canary.resumes == 0, "the canary's connection was dropped"
    assert len(canary.moves_ms) == 40


STOP = asyncio.Event()


@pytest.fixture(autouse=True)
def fresh_stop() -> None:
    global STOP
    STOP = asyncio.Event()


async def test_a_ping_flood_is_dropped_fast_and_costs_little_memory(node: NodeProcess) -> None:
    before = node.rss_kib()
    top = [before]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            top[0] = max(top[0], node.rss_kib())
            sampling.wait(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    flood = asyncio.ensure_future(attacks.ping_flood(node.port, STOP))
    try:
        await through(node, flood)
        tally = await asyncio.wait_for(flood, 4 * TIMEOUT)
    finally:
        sampling.set()
        sampler.join()
    assert tally.replies["dropped"] >= 1 and set(tally.replies) == {"dropped"}, tally
    assert tally.figures["longest_s"] <= 5.0, tally
    assert top[0] - before <= 16 * 1024, f"RSS grew by {top[0] - before} KiB"


async def test_two_thousand_rooms_from_one_address_leave_room_for_the_rest(
    node: NodeProcess,
) -> None:
    flood = asyncio.ensure_future(attacks.room_flood(node.url, asyncio.Event(), attempts=2000))
    await through(node, flood)  # while the flood goes on, which it does to its end
    done = await asyncio.wait_for(flood, 12 * TIMEOUT)
    assert sum(done.replies.values()) >= 2000, done
    assert done.replies["room"] <= BUDGETS.identities_per_hour, done
    assert done.replies["over_budget"] > 0, done
    neighbour = await attacks.Raw.open(node.url, "198.51.100.9")
    assert (await neighbour.hello("neighbour"))["type"] == "welcome"
    made = await neighbour.request({"type": "create_room", "variant": "canfield"})
    assert made["type"] == "room", made
    await neighbour.close()


async def test_a_reconnect_does_not_renew_the_message_rate(node: NodeProcess) -> None:
    seconds = 3.0
    renew = asyncio.ensure_future(attacks.renew_rate(node.url, STOP, seconds=seconds))
    await through(node, renew)
    tally = await asyncio.wait_for(renew, 4 * TIMEOUT)
    allowed = LIMITS.messages_per_second + LIMITS.burst / seconds
    assert tally.figures["pongs_per_s"] <= allowed * 1.2, tally
    assert tally.replies["rate_limited"] > 0, tally


async def test_leaderboard_requests_from_many_connections_share_one_address_rate(
    node: NodeProcess,
) -> None:
    flood = asyncio.ensure_future(attacks.leaderboard_flood(node.url, STOP, connections=150))
    loop = asyncio.get_running_loop()
    began = loop.time()
    await through(node, flood)
    tally = await asyncio.wait_for(flood, 4 * TIMEOUT)
    took = loop.time() - began
    rate = BUDGETS.address_messages_per_second / BUDGETS.heavy_request_cost
    burst = BUDGETS.address_burst / BUDGETS.heavy_request_cost
    assert tally.replies["leaderboard"] <= (rate * took + burst) * 1.2, (tally, took)
    assert tally.replies["rate_limited"] > 0, tally


async def test_spectators_churning_in_a_room_reach_its_members_coalesced(
    node: NodeProcess,
) -> None:
    room: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    loop = asyncio.get_running_loop()
    began = loop.time()
    race = asyncio.ensure_future(attacks.canary_race(node.url, room=room))
    code = await asyncio.wait_for(room, TIMEOUT)
    churn = asyncio.ensure_future(attacks.spectator_churn(node.url, STOP, code))
    try:
        canary = await asyncio.wait_for(race, 6 * TIMEOUT)
    finally:
        STOP.set()
    tally = await asyncio.wait_for(churn, 4 * TIMEOUT)
    took = loop.time() - began
    assert_unharmed(canary)
    assert tally.replies["room"] > 0 and tally.replies["over_budget"] > 0, tally
    # The joins the address may make, and at most one members event per interval.
    assert tally.replies["room"] <= BUDGETS.address_joins_per_minute, tally
    members = canary.events["members"]
    assert members <= 2 + took / BUDGETS.members_interval_s, (members, took)


async def test_identities_made_from_one_address_are_bounded(node: NodeProcess) -> None:
    mint = asyncio.ensure_future(attacks.mint_identities(node.url, STOP, seconds=2.0))
    await through(node, mint)
    tally = await asyncio.wait_for(mint, 4 * TIMEOUT)
    assert tally.replies["welcome"] <= BUDGETS.identities_per_hour, tally
    assert tally.replies["over_budget"] > 0, tally


async def test_half_open_connections_from_one_address_hold_its_budget_and_no_more(
    node: NodeProcess,
) -> None:
    before = node.rss_kib()
    attack = asyncio.ensure_future(attacks.half_open(node.port, STOP, sockets=600))
    await through(node, attack)
    tally = await asyncio.wait_for(attack, 4 * TIMEOUT)
    assert tally.replies["held"] == BUDGETS.connections_per_address, tally
    assert tally.replies["refused 429"] == 600 - BUDGETS.connections_per_address, tally
    assert tally.figures["newcomer_pong"] == 1.0, "a newcomer from another address got in"
    assert node.rss_kib() - before <= 16 * 1024


async def test_the_page_asked_for_flat_out_from_one_address_is_held_to_its_rate(
    node: NodeProcess,
) -> None:
    flood = asyncio.ensure_future(attacks.page_flood(node.port, STOP))
    await through(node, flood)
    tally = await asyncio.wait_for(flood, 4 * TIMEOUT)
    allowed = BUDGETS.address_connection_burst + BUDGETS.address_connections_per_second * (
        tally.figures["seconds"] + 1
    )
    assert 0 < tally.replies["200"] <= allowed, tally
    assert tally.replies["429"] > tally.replies["200"], tally
