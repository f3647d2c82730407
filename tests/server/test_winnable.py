"""Winnable deals only: rooms that deal certified deals from a warm pool, on both backends,
with the certified line's length as par in the results."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, RunningServer, ServerFactory
from e2e_support import RawClient
from test_backends import open_backend

from solrace.client import Client, ServerError
from solrace.engine import format_move, replay
from solrace.engine.solver import Verdict, solve_deal
from solrace.server import Backend
from solrace.server.deal_pool import CERTIFIABLE, NOW_NICE, certify
from solrace.server.races import check_race


@pytest.fixture
async def backend(
    backend_kind: str, redis_url: str | None, tmp_path: Path
) -> AsyncIterator[Backend]:
    started = open_backend(backend_kind, redis_url, tmp_path)
    await started.start()
    yield started
    await started.close()


async def test_the_pool_hands_each_certified_deal_out_once(backend: Backend) -> None:
    assert await backend.take_certified("canfield") is None
    for seed in range(10, 20):
        await backend.put_certified("canfield", seed, 100 + seed, f"d w-f{seed}")
    await backend.put_certified("rainbow-canfield", 99, 80, "d d")
    assert await backend.certified_count("canfield") == 10
    taken = await asyncio.gather(*(backend.take_certified("canfield") for _ in range(12)))
    got = [t for t in taken if t is not None]
    assert sorted(got) == [(seed, 100 + seed, f"d w-f{seed}") for seed in range(10, 20)]
    assert taken.count(None) == 2
    assert await backend.certified_count("canfield") == 0
    assert await backend.take_certified("rainbow-canfield") == (99, 80, "d d")
    # A dealt deal's line is kept for its races' replays, for the time given.
    await backend.keep_line("canfield", 12, "d w-f", 1_000, 5_000)
    assert await backend.certified_line("canfield", 12, 2_000) == "d w-f"
    assert await backend.certified_line("canfield", 13, 2_000) is None


def test_certify_keeps_only_deals_the_solver_wins() -> None:
    """A certified deal comes with a line that wins; a deal proved lost is never kept.

    (Certifying and the solver here each have their own 1 s of CPU: a deal decided near
    the end of that budget may be decided by one and not the other, so only answers
    that are proofs are compared.)
    """
    won = lost = 0
    for seed in range(1, 12):
        found = certify("canfield", seed, 1.0)
        outcome = solve_deal("canfield", seed, budget_s=1.0)
        if found is not None:
            assert found[0] == seed
            line = found[2].split()
            assert found[1] == len(line)
            assert replay("canfield", seed, line).status.value == "won"
            won += 1
        if outcome.verdict is Verdict.WINNABLE:
            assert outcome.moves is not None
            assert (
                replay("canfield", seed, [format_move(m) for m in outcome.moves]).status.value
                == "won"
            )
        if outcome.verdict is Verdict.NOT_WINNABLE:
            assert found is None
            lost += 1
    assert won and lost  # the sample has both kinds


async def _race(host: Client, other: Client, first: bool) -> dict[str, object]:
    """One race of the room: the first started by the host, a rematch by both being
    ready; both resign; its race_over event."""
    if first:
        await host.start()
    else:
        await host.rematch()
        await other.ready()  # the last one ready starts it
    await host.next_event("race_started", timeout=4 * TIMEOUT)
    await other.next_event("race_started", timeout=4 * TIMEOUT)
    await other.resign()
    await host.resign()
    over = await host.next_event("race_over", timeout=TIMEOUT)
    await other.next_event("race_over", timeout=TIMEOUT)
    return over


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    return await start_server(winnable_default=True, deal_pool_size=2, solver_budget_s=1.0)


async def test_a_winnable_room_deals_only_certified_deals_with_par(server: RunningServer) -> None:
    async with (
        Client(server.url, name="ann", request_timeout=4 * TIMEOUT) as ann,
        Client(server.url, name="bob", request_timeout=4 * TIMEOUT) as bob,
    ):
        room = await ann.create_room("canfield", countdown=0)
        assert room["settings"]["winnable"] is True  # the server's default for Canfield
        await bob.join(room["code"])
        seeds = set()
        for n in range(3):
            over = await _race(ann, bob, n == 0)
            seed, par = over["seed"], over["par"]
            assert isinstance(seed, int) and isinstance(par, int) and par > 0
            seeds.add(seed)
            # The deal is winnable: the solver, asked again, finds a line as long as par.
            outcome = solve_deal("canfield", seed, budget_s=5.0)
            assert outcome.verdict is Verdict.WINNABLE
            assert outcome.moves is not None and len(outcome.moves) == par
            snapshot = await ann.sync()
            assert snapshot["par"] == par and snapshot["seed"] == seed
            # The race kept for its replay holds the certified line: it wins in par moves.
            kept = await server.node.backend.load_race(room["code"], n + 1, server.node.now_ms())
            assert kept is not None and len(kept["par_line"]) == par
            assert replay("canfield", seed, kept["par_line"]).status.value == "won"
            assert check_race(kept) == []
        assert len(seeds) == 3
    # The pool is topped up behind the races, in the solver's worker, on idle CPU only:
    # on a machine busy with other tests that may take a while.
    async with asyncio.timeout(12 * TIMEOUT):
        while await server.node.backend.certified_count("canfield") < 2:
            await asyncio.sleep(0.05)


async def test_a_race_started_by_readies_at_once_gets_a_certified_deal(
    start_server: ServerFactory,
) -> None:
    """Each ``ready`` chose its deal from the room as its node last knew it: two at the
    same moment each thought it did not start the race, and the last one started it with
    a deal of any seed, no par, in a room of winnable deals only (one was not winnable)."""
    await _readies_at_once(start_server, two_nodes=False)


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_readies_through_two_nodes_start_the_race_with_a_certified_deal(
    start_server: ServerFactory,
) -> None:
    """The same with the other player's ``ready`` through another node, not yet seen."""
    await _readies_at_once(start_server, two_nodes=True)


async def _readies_at_once(start_server: ServerFactory, *, two_nodes: bool) -> None:
    settings: dict[str, Any] = {
        "winnable_default": True,
        "deal_pool_size": 4,
        "solver_budget_s": 1.0,
    }
    first = await start_server(**settings)
    second = await start_server(**settings) if two_nodes else first
    async with (
        Client(first.url, name="ann", request_timeout=4 * TIMEOUT) as ann,
        Client(second.url, name="bob", request_timeout=4 * TIMEOUT) as bob,
    ):
        room = await ann.create_room("canfield", countdown=0)
        assert room["settings"]["winnable"] is True
        await bob.join(room["code"])
        for n in range(4):
            if n:
                await ann.rematch()  # which says ann is ready: unsaid, so both say it at once
                await ann.ready(False)
            await asyncio.gather(ann.ready(), bob.ready())
            await ann.next_event("race_started", timeout=4 * TIMEOUT)
            await bob.next_event("race_started", timeout=4 * TIMEOUT)
            await asyncio.gather(ann.resign(), bob.resign())
            over = await ann.next_event("race_over", timeout=TIMEOUT)
            await bob.next_event("race_over", timeout=TIMEOUT)
            assert isinstance(over["par"], int) and over["par"] > 0, over
            kept = await first.node.backend.load_race(room["code"], n + 1, first.node.now_ms())
            assert kept is not None
            assert replay("canfield", over["seed"], kept["par_line"]).status.value == "won"


async def test_winnable_is_a_choice_and_british_canister_has_none(server: RunningServer) -> None:
    async with Client(server.url, name="cy", request_timeout=TIMEOUT) as cy:
        room = await cy.create_room("canfield", winnable=False)
        assert room["settings"]["winnable"] is False
        await cy.leave()
        room = await cy.create_room("british-canister")
        assert room["settings"]["winnable"] is False
        await cy.leave()
        with pytest.raises(ServerError) as refused:
            await cy.create_room("british-canister", winnable=True)
        assert refused.value.code == "bad_settings"
        assert "cards banked" in str(refused.value)
    assert "british-canister" not in CERTIFIABLE


async def test_a_race_that_finds_the_pool_empty_waits_for_one_deal(
    start_server: ServerFactory,
) -> None:
    server = await start_server(winnable_default=True, deal_pool_size=0, solver_budget_s=1.0)
    async with Client(server.url, name="dee", request_timeout=4 * TIMEOUT) as dee:
        await dee.create_room("american-canister", countdown=0, max_players=1)
        await dee.start()
        await dee.next_event("race_started", timeout=4 * TIMEOUT)
        await dee.resign()
        over = await dee.next_event("race_over", timeout=TIMEOUT)
    outcome = solve_deal("american-canister", over["seed"], budget_s=5.0)
    assert outcome.verdict is Verdict.WINNABLE and outcome.moves is not None
    assert over["par"] == len(outcome.moves)
    assert await server.node.backend.certified_count("american-canister") == 0


async def test_a_race_on_a_busy_machine_gets_its_deal_from_an_empty_pool(
    start_server: ServerFactory,
) -> None:
    """Every core is busy at the node's own priority: a worker on idle CPU alone would
    get almost nothing, and the race would wait out :data:`WAIT_S` and fail. The deal a
    race waits for is certified in a niced worker, which gets its share."""
    server = await start_server(winnable_default=True, deal_pool_size=0, solver_budget_s=1.0)
    hogs = [
        await asyncio.create_subprocess_exec(sys.executable, "-c", "while True: pass")
        for _ in range(os.cpu_count() or 1)
    ]
    try:
        async with Client(server.url, name="eve", request_timeout=4 * TIMEOUT) as eve:
            await eve.create_room("canfield", countdown=0, max_players=1)
            await eve.start()
            await eve.next_event("race_started", timeout=4 * TIMEOUT)
            await eve.resign()
            over = await eve.next_event("race_over", timeout=TIMEOUT)
    finally:
        for hog in hogs:
            hog.kill()
            await hog.wait()
    assert over["par"] is not None and over["par"] > 0


async def test_the_daily_deal_is_certified_winnable_and_its_par_comes_out_with_its_seed(
    start_server: ServerFactory,
) -> None:
    import datetime as dt

    from daily_support import AT_ONCE, Clock, account, http

    from solrace.server.daily import commitment, daily_seed

    day = "2026-11-30"
    noon = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC).timestamp()
    clock = Clock(noon)
    server = await start_server(clock=clock, daily_winnable=True, solver_budget_s=1.0, **AT_ONCE)
    secret = server.node.secret
    variant = "canfield"
    published = await http(server, f"/api/daily?variant={variant}")
    assert published["seed"] is None and published["par"] is None
    async with account(server.url, "ivy") as ivy:
        room = await ivy.daily(variant)
        assert "par" not in room and "seed" not in room
        await ivy.resign()
        over = await ivy.next_event("race_over", timeout=TIMEOUT)
        assert over.get("seed") is None and over.get("par") is None  # both wait for the reveal
    clock.now = noon + 86_400  # the next day, past the reveal
    revealed = await http(server, f"/api/daily?variant={variant}&date={day}")
    seed, par = revealed["seed"], revealed["par"]
    assert commitment(seed, revealed["nonce"]) == published["commitment"]
    # The seed is one of the day's candidates, and the solver certifies it, with par.
    assert seed in {daily_seed(secret, day, variant, k) for k in range(64)}
    outcome = solve_deal(variant, seed, budget_s=5.0)
    assert outcome.verdict is Verdict.WINNABLE and outcome.moves is not None
    assert par == len(outcome.moves)
    board = await http(server, f"/api/leaderboard?variant={variant}&date={day}")
    assert (board["seed"], board["par"]) == (seed, par)
    # An old day nobody played has no deal chosen after the fact: no solving on request.
    old = await http(server, f"/api/daily?variant={variant}&date=2020-01-01")
    assert old["commitment"] is None and old["seed"] is None
    assert await server.node.backend.daily_deal("2020-01-01", variant) is None


async def test_a_request_waits_for_the_days_deal_a_bounded_time_and_is_told_to_retry(
    start_server: ServerFactory,
) -> None:
    """A node's first request of the day may come while the day's deal is being chosen:
    past a bounded wait it is answered 503 with when to ask again (held for longer, the
    handshake's timeout would drop it without a word), and the choice goes on."""
    import datetime as dt

    from daily_support import Clock, http, http_answer

    noon = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC).timestamp()
    server = await start_server(clock=Clock(noon), daily_winnable=True, solver_budget_s=1.0)
    server.node.deals.answer_wait_s = 0.0  # no wait at all: the choice takes a worker
    status, headers, body = await http_answer(server, "/api/daily?variant=canfield")
    assert status == 503 and body["code"] == "deal_pending"
    assert int(headers["Retry-After"]) == body["retry_after"] > 0
    status, _, body = await http_answer(server, "/api/leaderboard?variant=canfield")
    assert status == 503 and body["code"] == "deal_pending"
    server.node.deals.answer_wait_s = 5.0
    published = await http(server, "/api/daily?variant=canfield")  # retried as told
    kept = await server.node.backend.daily_deal("2026-11-30", "canfield")
    assert kept is not None
    assert (
        published["commitment"]
        == (await server.node.deals.daily("2026-11-30", "canfield")).commitment
    )


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def test_solver_workers_take_only_idle_cpu_and_go_with_their_node(tmp_path: Path) -> None:
    import signal
    import time

    from process_support import NodeProcess

    node = NodeProcess(tmp_path / "node", None, "--winnable-default", "--deal-pool-size", "50")
    node.start()
    workers: set[int] = set()
    try:  # a failed check must not leave a node certifying deals behind the other tests
        node.wait_listening()
        assert node.process is not None
        deadline = time.monotonic() + 4 * TIMEOUT
        while not workers and time.monotonic() < deadline:  # the pools fill in a worker
            workers = {
                pid
                for pid in _children(node.process.pid)
                if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
            }
            time.sleep(0.1)
        assert workers, "no solver worker was started"

        # Certifying ahead of need never takes a busy core from the node's moves: the
        # pools fill only on CPU time nothing else wants (niced, they still took a tenth
        # of a busy core). The worker for what someone waits for (a deal a player asks
        # for before it is ready), if any, is niced. A worker is listed as soon as it is spawned,
        # before its start-up sets its policy.
        def policy(pid: int) -> tuple[int, int]:
            return os.sched_getscheduler(pid), os.getpriority(os.PRIO_PROCESS, pid)

        settled = {(os.SCHED_IDLE, 0), (os.SCHED_OTHER, NOW_NICE)}
        deadline = time.monotonic() + 4 * TIMEOUT
        policies = {pid: policy(pid) for pid in workers}
        while not set(policies.values()) <= settled and time.monotonic() < deadline:
            time.sleep(0.05)
            policies = {pid: policy(pid) for pid in workers}
        assert set(policies.values()) <= settled, policies
        assert (os.SCHED_IDLE, 0) in policies.values(), policies
    finally:
        node.kill()  # SIGKILL: the node leaves its workers no word
    deadline = time.monotonic() + 4 * TIMEOUT
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.1)
    left = [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "the solver worker outlived its node"


async def test_one_address_waits_for_one_deal_certified_now_at_a_time(
    start_server: ServerFactory,
) -> None:
    """With the pool empty, a second race from the same address while its first waits for
    a deal is refused at once (try again), instead of queueing solver work ahead of other
    people's races; another address, and the same one once served, are not."""
    server = await start_server(
        winnable_default=True,
        deal_pool_size=0,
        solver_budget_s=1.0,
        trusted_proxies=("127.0.0.1",),
    )
    here = {"X-Real-IP": "198.51.100.7"}
    first = await RawClient.open(server.url, name="one", headers=here)
    second = await RawClient.open(server.url, name="two", headers=here)
    elsewhere = await RawClient.open(server.url, name="three", headers={"X-Real-IP": "203.0.113.9"})
    for raw in (first, second, elsewhere):
        made = await raw.request(
            {
                "type": "create_room",
                "variant": "american-canister",
                "countdown": 0,
                "max_players": 1,
            }
        )
        assert made["type"] == "room", made
    # The three starts go out at once: one of the address's two waits for its deal (the
    # solver's worker is started for it, which takes a good part of a second), the other
    # is refused meanwhile, and the other address's waits its turn.
    for raw in (first, second, elsewhere):
        await raw.send({"type": "start", "id": 900})
    answers = {raw: await _answer(raw, 900) for raw in (first, second, elsewhere)}
    assert answers[elsewhere]["type"] == "ok", answers[elsewhere]  # another address: served
    refused = [raw for raw in (first, second) if answers[raw]["type"] == "error"]
    assert len(refused) == 1, [answers[first], answers[second]]
    (late,) = refused
    said = answers[late]
    assert said["code"] == "unavailable" and "another race from your network" in said["message"]
    assert said.get("retry_after", 0) > 0
    await late.send({"type": "start", "id": 901})  # served in turn once the first was
    again = await _answer(late, 901)
    assert again["type"] == "ok", again


async def _answer(raw: RawClient, request_id: int) -> dict[str, Any]:
    """The answer to a start that may wait for a deal the solver certifies now: a few
    seconds on a machine loaded with other tests (one solver attempt is given a second)."""
    async with asyncio.timeout(4 * TIMEOUT):
        while True:
            with contextlib.suppress(TimeoutError):
                return await raw.recv(lambda f: f.get("id") == request_id)
