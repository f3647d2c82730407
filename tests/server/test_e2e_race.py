"""A whole race over real websockets: one player plays a known winning line to the end."""

from __future__ import annotations

import asyncio

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from daily_support import Clock
from e2e_support import (
    FAST,
    apply_text,
    deal_seed,
    events_until,
    fresh,
    of_type,
    shows,
    standings,
    steady_move,
    winning_deal,
)

from solrace.client import Client
from solrace.engine import format_move, new_game
from solrace.server import commands as commands_module


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets a test play a whole game at full speed."""
    return await start_server(limits=FAST)


@pytest.mark.parametrize("variant", ["canfield", "rainbow-canfield"])
async def test_the_winner_of_a_known_deal_ranks_first_and_the_seed_comes_last(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch, variant: str
) -> None:
    seed, line = winning_deal(variant)
    deal_seed(monkeypatch, seed)
    alice = await make_client("alice")
    bob = await make_client("bob")
    room = await alice.create_room(variant, countdown=0)
    assert "seed" not in room
    await bob.join(room["code"])
    await alice.start()
    started_a = await alice.next_event("race_started", timeout=TIMEOUT)
    started_b = await bob.next_event("race_started", timeout=TIMEOUT)

    # Both players are dealt the same layout, the one the seed makes, and not the seed.
    local = fresh(variant, seed)
    assert started_a["view"] == started_b["view"] and shows(started_a["view"], local)
    assert started_a["rev"] == started_b["rev"] == 0
    assert "seed" not in started_a and "seed" not in started_b

    # Bob plays a few moves of his own; his board is his alone.
    for _ in range(3):
        move = steady_move(local)
        apply_text(local, move)
        ack = await bob.move(move)
        assert shows(ack["view"], local)

    # Alice plays the winning line to the last card.
    for index, move in enumerate(line, start=1):
        ack = await alice.move(move)
        assert ack["rev"] == index and not ack.get("duplicate")
    assert ack["view"]["status"] == "won" and ack["view"]["banked"] == 52
    with pytest.raises(Exception, match="game_over"):
        await alice.move("d")

    # Bob has heard of it, but the race goes on while he plays; the seed is still secret.
    heard = await events_until(bob, lambda e: any(s["status"] == "won" for s in standings([e])))
    won = [s for s in standings(heard[-1:]) if s["status"] == "won"]
    assert [(s["player_id"], s["banked"]) for s in won] == [(alice.player_id, 52)]
    progress = [e for e in heard if e["type"] == "progress"]
    assert progress and all("view" not in e for e in progress)
    assert all("view" not in s for s in standings(progress))
    snapshot = await bob.sync()
    assert snapshot["state"] == "racing" and "seed" not in snapshot

    await bob.resign()
    seen_a = await events_until(alice, of_type("race_over"))
    seen_b = await events_until(bob, of_type("race_over"))
    for seen in (seen_a, seen_b):
        assert all("seed" not in e for e in seen[:-1])
        over = seen[-1]
        assert over["seed"] == seed and over["variant"] == variant
        first, second = over["results"]
        assert first["rank"] == 1 and first["player_id"] == alice.player_id
        assert first["status"] == "won" and first["banked"] == 52
        assert first["moves"] == len(line)
        assert second["rank"] == 2 and second["player_id"] == bob.player_id
        assert second["status"] == "resigned" and second["moves"] == 3

    # Once the race is over, anyone may check the deal: the snapshot carries the seed too.
    snapshot = await alice.sync()
    assert snapshot["state"] == "finished" and snapshot["seed"] == seed


async def test_a_count_lost_and_regained_ranks_from_when_it_was_first_reached(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alice banks a card first, undoes it and banks it again after Bob got there: she got
    to that count first, so she ranks first, however late she regained it."""
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    local = fresh("canfield", seed)
    base = local.banked
    upto: list[str] = []
    for move in line:  # the line up to its first card banked
        apply_text(local, move)
        upto.append(move)
        if local.banked > base:
            break
    alice = await make_client("alice")
    bob = await make_client("bob")
    room = await alice.create_room("canfield", countdown=0)
    await bob.join(room["code"])
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    await bob.next_event("race_started", timeout=TIMEOUT)

    for move in upto:
        ack = await alice.move(move)
    assert ack["view"]["banked"] == base + 1
    await asyncio.sleep(0.05)
    for move in upto:
        ack = await bob.move(move)
    assert ack["view"]["banked"] == base + 1
    await asyncio.sleep(0.05)
    assert (await alice.move("u"))["view"]["banked"] == base
    await asyncio.sleep(0.05)
    assert (await alice.move(upto[-1]))["view"]["banked"] == base + 1
    await alice.resign()
    await bob.resign()
    over = (await events_until(alice, of_type("race_over")))[-1]
    assert [(r["player_id"], r["banked"]) for r in over["results"]] == [
        (alice.player_id, base + 1),
        (bob.player_id, base + 1),
    ]


def _line_to_stuck(variant: str) -> tuple[int, list[str]]:
    """A seed of ``variant`` and the first-legal-move line that gets it stuck after a move."""
    for seed in range(1, 500):
        game = fresh(variant, seed)
        line: list[str] = []
        while game.status.value == "playing" and len(line) < 40:
            move = format_move(game.legal_moves()[0])
            apply_text(game, move)
            line.append(move)
        if line and game.status.value == "stuck":
            return seed, line
    raise AssertionError("no deal gets stuck within reach")  # pragma: no cover


def _stuck_at_start(variant: str, count: int) -> list[int]:
    """The first ``count`` seeds of ``variant`` whose deal has no move at its start."""
    stuck = (s for s in range(1, 100_000) if new_game(variant, s).status.value == "stuck")
    return [next(stuck) for _ in range(count)]


@pytest.mark.parametrize("variant", ["british-canister", "canfield"])
async def test_a_race_dealt_at_random_never_ends_as_it_starts(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch, variant: str
) -> None:
    # A deal with no move at its start would end the race with its start; a fresh draw
    # skips such deals as a winnable-only room skips every deal with no win.
    stuck = _stuck_at_start(variant, 2)
    good = next(s for s in range(1, 1000) if new_game(variant, s).status.value == "playing")
    draws = iter([*stuck, good])
    monkeypatch.setattr(commands_module.secrets, "randbits", lambda bits: next(draws))
    server = await start_server(limits=FAST)
    async with Client(server.url, name="ann", request_timeout=TIMEOUT) as ann:
        await ann.create_room(variant, countdown=0, winnable=False)
        await ann.start()
        started = await ann.next_event("race_started", timeout=TIMEOUT)
        assert started["view"]["status"] == "playing"
        await ann.resign()
        over = await ann.next_event("race_over", timeout=TIMEOUT)
    assert over["seed"] == good
    assert over["results"][0]["status"] == "resigned"


async def test_a_stuck_player_may_undo_and_play_on_where_undo_is_allowed(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = _line_to_stuck("british-canister")
    deal_seed(monkeypatch, seed)
    alice = await make_client("alice")
    bob = await make_client("bob")
    room = await alice.create_room("british-canister", countdown=0, undo=True)
    await bob.join(room["code"])
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    await bob.next_event("race_started", timeout=TIMEOUT)
    for move in line:
        ack = await alice.move(move)
    assert ack["view"]["status"] == "stuck" and ack["view"]["can_undo"] is True
    heard = await events_until(bob, lambda e: any(s["status"] == "stuck" for s in standings([e])))
    assert standings(heard[-1:], alice.player_id)[0]["status"] == "stuck"
    await bob.resign()
    # Alice is stuck, not done: the race goes on, and her undo is taken.
    ack = await alice.move("u")
    assert ack["view"]["status"] == "playing" and ack["rev"] == len(line) + 1
    snapshot = await alice.sync()
    assert snapshot["state"] == "racing"
    await alice.resign()
    over = (await events_until(alice, of_type("race_over")))[-1]
    assert {r["player_id"]: r["status"] for r in over["results"]} == {
        alice.player_id: "resigned",
        bob.player_id: "resigned",
    }


async def test_without_undo_a_stuck_game_ends_at_once(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = _line_to_stuck("british-canister")
    deal_seed(monkeypatch, seed)
    alice = await make_client("alice")
    room = await alice.create_room("british-canister", countdown=0, undo=False)
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    for move in line:
        ack = await alice.move(move)
    assert ack["view"]["status"] == "stuck" and ack["view"]["can_undo"] is False
    over = (await events_until(alice, of_type("race_over")))[-1]
    assert over["room"] == room["code"]
    assert [r["status"] for r in over["results"]] == ["stuck"]


async def test_a_first_to_finish_race_ends_its_grace_after_the_win(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    alice = await make_client("alice")
    bob = await make_client("bob")
    room = await alice.create_room("canfield", countdown=0, finish="first", finish_grace=1)
    assert room["settings"]["finish"] == "first" and room["settings"]["finish_grace"] == 1
    await bob.join(room["code"])
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    await bob.next_event("race_started", timeout=TIMEOUT)
    await bob.move(steady_move(fresh("canfield", seed)))
    for move in line:
        ack = await alice.move(move)
    assert ack["view"]["status"] == "won"
    heard = await events_until(bob, lambda e: any(s["status"] == "won" for s in standings([e])))
    (won,) = [s for s in standings(heard[-1:]) if s["status"] == "won"]
    assert won["player_id"] == alice.player_id and won["place"] == 1
    snapshot = await bob.sync()
    assert snapshot["state"] == "racing" and snapshot["left_ms"] <= 1000
    assert [p.get("place") for p in snapshot["players"]] == [1, None]
    # Bob plays on, but the race ends a second after the win without him.
    over = (await events_until(bob, of_type("race_over"), timeout=TIMEOUT + 2))[-1]
    assert [(r["player_id"], r["status"]) for r in over["results"]] == [
        (alice.player_id, "won"),
        (bob.player_id, "out_of_time"),
    ]
    with pytest.raises(Exception, match="race"):
        await bob.move("d")


async def test_a_finished_race_keeps_its_length_in_every_later_snapshot(
    start_server: ServerFactory,
) -> None:
    """A snapshot's ``elapsed_ms`` of a finished race was the time since its start: a page
    loaded a minute after a race of two seconds showed a clock of a minute."""
    clock = Clock(1_800_000_000.0)
    server = await start_server(clock=clock)
    async with (
        Client(server.url, name="ann", request_timeout=TIMEOUT) as ann,
        Client(server.url, name="bob", request_timeout=TIMEOUT) as bob,
    ):
        room = await ann.create_room("canfield", countdown=0, winnable=False)
        await bob.join(room["code"])
        await ann.start()
        await ann.next_event("race_started", timeout=TIMEOUT)
        clock.now += 1.2
        await ann.resign()
        clock.now += 0.8
        await bob.resign()
        await ann.next_event("race_over", timeout=TIMEOUT)
        racing = {p["name"]: p["elapsed_ms"] for p in (await ann.sync())["players"]}
        assert racing == {"ann": 1200, "bob": 2000}
        clock.now += 60
        assert (await ann.sync())["elapsed_ms"] == 2000
        assert (await bob.sync())["elapsed_ms"] == 2000
