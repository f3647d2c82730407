"""Races started are budgeted per identity and per client address, before a deal is taken.

A host who loops start, resign and rematch in a "winnable deals only" room takes a
certified deal from the warm pool with each start, which a solver worker must replace.
The clients of a test all come from 127.0.0.1; the node trusts it as a proxy, so that
each raw client is at the address its ``X-Real-IP`` names. The counts go through the
store, so each test runs on both backends.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest
from conftest import LOOSE_BUDGETS, TIMEOUT, RunningServer, ServerFactory
from e2e_support import FAST, RawClient

from solrace.server.config import Budgets
from solrace.server.deal_pool import certify

PROXIED = ("127.0.0.1",)
ATTACKER = "203.0.113.7"
NEIGHBOUR = "198.51.100.9"
RACE_BUDGETS = ("races_per_hour", "address_races_per_hour")


def at(address: str) -> dict[str, str]:
    """The header a trusted proxy adds for a client at ``address``."""
    return {"X-Real-IP": address}


async def serve(start_server: ServerFactory, **overrides: Any) -> RunningServer:
    """A node that lets a test play at full speed: budgets loose but for ``overrides``
    that name budgets, the races' at their defaults unless named."""
    defaults = Budgets()
    budgets = {
        "races_per_hour": defaults.races_per_hour,
        "address_races_per_hour": defaults.address_races_per_hour,
    }
    budgets.update({k: v for k, v in overrides.items() if k in Budgets.__dataclass_fields__})
    rest = {k: v for k, v in overrides.items() if k not in budgets}
    return await start_server(
        budgets=replace(LOOSE_BUDGETS, **budgets),
        trusted_proxies=PROXIED,
        limits=FAST,
        **rest,
    )


async def solo_room(raw: RawClient, **settings: Any) -> str:
    """A room of one player, whose races start at once: its code."""
    made = await raw.request(
        {"type": "create_room", "variant": "canfield", "max_players": 1, "countdown": 0} | settings
    )
    assert made["type"] == "room", made
    return str(made["room"]["code"])


async def race(raw: RawClient) -> dict[str, Any]:
    """Start the room's race, resign it, and go back to the lobby: its ``race_over``."""
    started = await raw.request({"type": "start"})
    assert started["type"] == "ok", started
    await raw.recv(lambda f: f.get("type") == "race_started")
    assert (await raw.request({"type": "resign"}))["type"] == "ok"
    over = await raw.recv(lambda f: f.get("type") == "race_over")
    assert (await raw.request({"type": "rematch"}))["type"] == "ok"
    return over


def refused(reply: dict[str, Any], reason: str, period_s: float) -> bool:
    return (
        reply["type"] == "error"
        and reply["code"] == "over_budget"
        and reply["reason"] == reason
        and 0 < reply["retry_after"] <= period_s
        and "started all the races" in reply["message"]
    )


def certified(count: int) -> list[tuple[int, int, str]]:
    """``count`` Canfield deals the solver certifies winnable: seed, par and line."""
    found: list[tuple[int, int, str]] = []
    seed = 1
    while len(found) < count:
        deal = certify("canfield", seed, 1.0)
        if deal is not None:
            found.append(deal)
        seed += 1
    return found


async def test_a_host_looping_races_is_refused_before_a_deal_is_taken(
    start_server: ServerFactory,
) -> None:
    # The pool holds three certified deals and is never topped up (size 0): what the
    # races take is exactly what leaves it.
    server = await serve(start_server, races_per_hour=2, deal_pool_size=0)
    deals = certified(3)
    for deal in deals:
        await server.node.backend.put_certified("canfield", *deal)
    host = await RawClient.open(server.url, name="looper", headers=at(ATTACKER))
    await solo_room(host, winnable=True)
    dealt = {(await race(host))["seed"] for _ in range(2)}
    assert len(dealt) == 2 and dealt <= {d[0] for d in deals}, dealt

    third = await host.request({"type": "start"})
    assert refused(third, "races_per_hour", 3600 / 2), third
    assert await server.node.backend.certified_count("canfield") == 1  # nothing taken

    # A host elsewhere gets the deal that is left, at once.
    honest = await RawClient.open(server.url, name="honest", headers=at(NEIGHBOUR))
    await solo_room(honest, winnable=True)
    left = {d[0] for d in deals} - set(dealt)
    assert (await race(honest))["seed"] in left


async def test_one_identity_starts_at_most_its_default_races_an_hour(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server)
    allowed = Budgets().races_per_hour
    assert server.config.budgets.races_per_hour == allowed == 60
    host = await RawClient.open(server.url, name="looper", headers=at(ATTACKER))
    await solo_room(host)
    for _ in range(allowed):
        await race(host)
    over = await host.request({"type": "start"})
    assert refused(over, "races_per_hour", 3600 / allowed), over
    # Coming back renews nothing.
    await host.close()
    again = await RawClient.open(server.url, token=host.token, headers=at(ATTACKER))
    assert (await again.request({"type": "sync"}))["type"] == "room"
    assert refused(await again.request({"type": "start"}), "races_per_hour", 3600 / allowed)


async def test_fresh_identities_from_one_address_share_its_races(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, address_races_per_hour=3)
    for n in range(3):
        raw = await RawClient.open(server.url, name=f"a{n}", headers=at(ATTACKER))
        await solo_room(raw)
        await race(raw)
    fresh = await RawClient.open(server.url, name="a3", headers=at(ATTACKER))
    await solo_room(fresh)
    over = await fresh.request({"type": "start"})
    assert refused(over, "address_races_per_hour", 3600 / 3), over
    assert "this address has started all the races" in over["message"], over
    neighbour = await RawClient.open(server.url, name="neighbour", headers=at(NEIGHBOUR))
    await solo_room(neighbour)
    await race(neighbour)


async def test_the_player_whose_request_starts_the_race_spends_it(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, races_per_hour=1)
    host = await RawClient.open(server.url, name="host", headers=at(ATTACKER))
    guest = await RawClient.open(server.url, name="guest", headers=at(NEIGHBOUR))
    made = await host.request({"type": "create_room", "variant": "canfield", "countdown": 0})
    code = made["room"]["code"]
    assert (await guest.request({"type": "join_room", "code": code}))["type"] == "room"
    # The guest's ready starts nothing and spends nothing; the host's start spends one.
    assert (await guest.request({"type": "ready", "ready": True}))["type"] == "ok"
    assert (await host.request({"type": "start"}))["type"] == "ok"
    for raw in (host, guest):
        await raw.recv(lambda f: f.get("type") == "race_started")
        assert (await raw.request({"type": "resign"}))["type"] == "ok"
    await host.recv(lambda f: f.get("type") == "race_over" and f["race"] == 1)
    # A rematch starts no race: the host, its race spent, may still ask for one.
    assert (await host.request({"type": "rematch"}))["type"] == "ok"
    over = await host.request({"type": "start"})
    assert refused(over, "races_per_hour", 3600), over
    assert over["message"].startswith("you have started all the races"), over
    # The last ready starts the race, on the guest's own budget.
    assert (await guest.request({"type": "ready", "ready": True}))["type"] == "ok"
    started = await guest.recv(lambda f: f.get("type") == "race_started" and f["race"] == 2)
    assert started["race"] == 2


def test_lifted_budgets_lift_the_races_and_the_api_rate() -> None:
    lifted = Budgets.lifted()
    for name in (*RACE_BUDGETS, "api_requests_per_second", "api_burst"):
        assert getattr(lifted, name) >= 1 << 30, name
    assert {f.name for f in fields(Budgets)} >= {*RACE_BUDGETS}


async def test_an_address_takes_a_share_of_the_certified_deals_an_hour(
    start_server: ServerFactory,
) -> None:
    """Rooms of a few addresses looping races of winnable deals took the certified deals
    faster than the solver replaced them (a Rainbow Canfield one takes seconds), and
    everyone else's race waited up to a minute for its deal. Fresh identities of the
    address share its count; its rooms of any deal are not counted."""
    server = await serve(
        start_server, address_winnable_races_per_hour=2, races_per_hour=100, deal_pool_size=0
    )
    deals = certified(3)
    for deal in deals:
        await server.node.backend.put_certified("canfield", *deal)
    for n in range(2):
        raw = await RawClient.open(server.url, name=f"w{n}", headers=at(ATTACKER))
        await solo_room(raw, winnable=True)
        await race(raw)
    fresh = await RawClient.open(server.url, name="w2", headers=at(ATTACKER))
    await solo_room(fresh, winnable=True)
    over = await fresh.request({"type": "start"})
    assert refused(over, "address_winnable_races_per_hour", 3600 / 2), over
    assert "races of winnable deals" in over["message"], over
    assert await server.node.backend.certified_count("canfield") == 1  # nothing taken
    assert (await fresh.request({"type": "leave_room"}))["type"] == "ok"
    await solo_room(fresh, winnable=False)  # any deal: not counted
    await race(fresh)
    neighbour = await RawClient.open(server.url, name="neighbour", headers=at(NEIGHBOUR))
    await solo_room(neighbour, winnable=True)
    assert (await race(neighbour))["seed"] in {d[0] for d in deals}


async def test_a_deal_certified_now_goes_to_the_address_served_least(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the pool empty, every waiting race queued its own batches in the one worker
    for deals someone waits for, first come first served: the rooms of a few addresses
    looping races kept a batch each ahead of anyone else's race, which waited up to a
    minute. One loop serves them all now, each deal to the address handed fewest lately.
    The solver's pace is held here by a gate, so that both races wait for the same deal."""
    import asyncio

    server = await serve(start_server, deal_pool_size=0)
    pool = server.node.deals
    deals = iter(certified(4))
    gate = asyncio.Semaphore(2)  # two deals at once for the looper's first races

    async def certify_now(variant: str, *, now: bool = False) -> tuple[int, int, str]:
        await gate.acquire()
        return next(deals)

    monkeypatch.setattr(pool, "_certify", certify_now)
    looper = await RawClient.open(server.url, name="looper", headers=at(ATTACKER))
    await solo_room(looper, winnable=True)
    for _ in range(2):
        await race(looper)
    honest = await RawClient.open(server.url, name="honest", headers=at(NEIGHBOUR))
    await solo_room(honest, winnable=True)
    first = asyncio.ensure_future(looper.request({"type": "start"}))
    async with asyncio.timeout(TIMEOUT):
        while len(pool._waiting.get("canfield", [])) < 1:
            await asyncio.sleep(0.01)
    second = asyncio.ensure_future(honest.request({"type": "start"}))
    async with asyncio.timeout(TIMEOUT):
        while len(pool._waiting.get("canfield", [])) < 2:
            await asyncio.sleep(0.01)
    gate.release()  # one deal: the honest host's, though the looper asked first
    assert (await asyncio.wait_for(second, TIMEOUT))["type"] == "ok"
    assert not first.done()
    gate.release()
    assert (await asyncio.wait_for(first, TIMEOUT))["type"] == "ok"
