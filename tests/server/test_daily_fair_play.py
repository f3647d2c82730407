"""The daily board worth trusting, against a real server on both backends.

Each test reproduces a way the board was cheated, and checks it now fails as the rules
say (docs/rules.md, "Races and restarts"): the seed is not readable while an attempt of
the day may still run, and the day's commitment shows it was fixed in advance; ranks
follow when a count of cards was first reached, not when the attempt ended; declared
bots have a board of their own; a person's pace that no person keeps is held for review.
The server's clock is moved by hand, so every time in the log is the test's own.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

import pytest
from conftest import TIMEOUT, ServerFactory
from daily_support import (
    AT_ONCE,
    Clock,
    account,
    banking_deal,
    http,
    http_answer,
    shows,
)

from solrace.client import Client, ServerError
from solrace.server.daily import daily_commitment, daily_nonce, daily_seed

DAY = "2026-11-30"
NOON = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC).timestamp()
MIDNIGHT = dt.datetime(2026, 12, 1, tzinfo=dt.UTC).timestamp()
LIMIT_S = 1800


# -- the seed --------------------------------------------------------------------------------


async def test_the_seed_of_an_attempt_begun_before_midnight_waits_for_it(
    start_server: ServerFactory,
) -> None:
    # The cheat: an attempt started at 23:59:30; at 00:00:05 the board gave the seed.
    clock = Clock(MIDNIGHT - 30)
    server = await start_server(clock=clock, **AT_ONCE)
    secret = server.node.secret
    seed = daily_seed(secret, DAY, "rainbow-canfield")
    published = daily_commitment(secret, DAY, "rainbow-canfield")
    async with account(server.url, "owl") as owl:
        await owl.daily("rainbow-canfield")
        await owl.move("d")
        clock.now = MIDNIGHT + 5
        seen: list[Any] = [
            await owl.leaderboard("rainbow-canfield", date=DAY),
            await http(server, f"/api/leaderboard?variant=rainbow-canfield&date={DAY}"),
            await http(server, f"/api/daily?variant=rainbow-canfield&date={DAY}"),
        ]
        assert not shows(seen, seed)
        assert [s["commitment"] for s in seen] == [published] * 3
        assert seen[2]["revealed"] is False and seen[2]["nonce"] is None
        assert seen[2]["reveal_ms"] == int((MIDNIGHT + LIMIT_S) * 1000)
        clock.now = MIDNIGHT + 600
        await owl.move("d")
        await owl.resign()
        await owl.next_event("race_over", timeout=TIMEOUT)
    # The seed comes out at the time published, when no attempt of the day can still run.
    clock.now = MIDNIGHT + LIMIT_S - 1
    assert not shows(await http(server, f"/api/daily?variant=rainbow-canfield&date={DAY}"), seed)
    clock.now = MIDNIGHT + LIMIT_S
    day = await http(server, f"/api/daily?variant=rainbow-canfield&date={DAY}")
    assert day["revealed"] is True and day["seed"] == seed
    assert day["nonce"] == daily_nonce(secret, DAY, "rainbow-canfield")
    assert hashlib.sha256(f"{day['seed']}:{day['nonce']}".encode()).hexdigest() == published


@pytest.mark.parametrize("backend_kind", ["embedded"])
async def test_a_restart_holds_the_seed_back_until_the_attempt_ends(
    start_server: ServerFactory,
) -> None:
    # The race clock stops while the node is down: an attempt begun at 23:59:30 and
    # running through 30 minutes of downtime ends after 00:30, and the seed waits for it.
    clock = Clock(MIDNIGHT - 30)
    first = await start_server(clock=clock, **AT_ONCE)
    seed = daily_seed(first.node.secret, DAY, "rainbow-canfield")
    async with account(first.url, "yak", resume=False) as yak:
        await yak.daily("rainbow-canfield")
        await yak.move("d")
        token = yak.token
        clock.now = MIDNIGHT + 600
        await first.server.close()
    clock.now = MIDNIGHT + 2_400  # back at 00:40, after 30 minutes down
    second = await start_server(clock=clock, **AT_ONCE)
    path = f"/api/daily?variant=rainbow-canfield&date={DAY}"
    assert (await http(second, path))["seed"] is None
    async with Client(second.url, token=token, request_timeout=TIMEOUT) as back:
        room = await back.sync()
        assert room["state"] == "racing" and room["settings"]["daily"] == DAY
        await back.move("d")
        assert (await http(second, path))["seed"] is None
        await back.resign()
        await back.next_event("race_over", timeout=TIMEOUT)
    assert (await http(second, path))["seed"] == seed


async def test_the_daily_endpoint_publishes_the_commitment_then_the_seed(
    start_server: ServerFactory,
) -> None:
    clock = Clock(NOON)
    server = await start_server(clock=clock, **AT_ONCE)
    secret = server.node.secret
    status, headers, today = await http_answer(server, "/api/daily?variant=canfield")
    assert status == 200
    assert headers["X-Content-Type-Options"] == "nosniff" and "Content-Security-Policy" in headers
    assert today == {
        "date": DAY,
        "variant": "canfield",
        "commitment": daily_commitment(secret, DAY, "canfield"),
        "reveal_ms": int((MIDNIGHT + LIMIT_S) * 1000),
        "revealed": False,
        "seed": None,
        "nonce": None,
        "par": None,
    }
    status, _, ahead = await http_answer(server, "/api/daily?variant=canfield&date=2026-12-01")
    assert (status, ahead["code"]) == (400, "bad_field")  # a day not begun has none yet
    status, _, unknown = await http_answer(server, "/api/daily?variant=klondike")
    assert (status, unknown["code"]) == (400, "unknown_variant")
    clock.now = MIDNIGHT + LIMIT_S
    status, _, later = await http_answer(server, f"/api/daily?variant=canfield&date={DAY}")
    assert status == 200 and later["revealed"] is True
    assert later["commitment"] == today["commitment"]
    assert later["seed"] == daily_seed(secret, DAY, "canfield")
    seed_and_nonce = f"{later['seed']}:{later['nonce']}".encode()
    assert hashlib.sha256(seed_and_nonce).hexdigest() == today["commitment"]


# -- ranks -----------------------------------------------------------------------------------


async def _timed_attempt(
    client: Client, clock: Clock, variant: str, moves: list[str], times: list[float], end: float
) -> dict[str, Any]:
    """Start today's attempt now, play ``moves`` at ``times`` (seconds after its start),
    resign at ``end`` seconds unless the game is over; return the race_over event."""
    start = clock.now
    await client.daily(variant)
    for move, at in zip(moves, times, strict=True):
        clock.now = start + at
        await client.move(move)
    clock.now = start + end
    assert client.view is not None
    if client.view["status"] == "playing":
        await client.resign()
    over = await client.next_event("race_over", timeout=TIMEOUT)
    await client.leave()
    return over


async def test_playing_on_ranks_by_when_the_count_was_reached_not_when_it_ended(
    start_server: ServerFactory,
) -> None:
    # The cheat: a non-win ranked by cards banked, then by how early the attempt ended,
    # so that resigning at once with no card banked ranked first.
    clock = Clock(NOON)
    server = await start_server(clock=clock, **AT_ONCE)
    variant, line = banking_deal(server.node.secret, DAY)
    n = len(line)
    steady = [float(i + 1) for i in range(n)]
    async with (
        account(server.url, "early") as early,
        account(server.url, "late") as late,
        account(server.url, "idle") as idle,
        account(server.url, "plodder") as plodder,
    ):
        # Gets to its count first, then plays on and ends last of all.
        await _timed_attempt(early, clock, variant, line, steady, n + 1_000)
        # The same cards, reached later; resigns at once.
        later = [100.0 + t for t in steady]
        await _timed_attempt(late, clock, variant, line, later, n + 100.1)
        # Only the dealt cards: resigns after 0.1 s, or plays on without banking.
        await _timed_attempt(idle, clock, variant, [], [], 0.1)
        await _timed_attempt(plodder, clock, variant, line[:-1], steady[:-1], 1_500)
        board = await early.leaderboard(variant)
    ranks = {e["name"]: e["rank"] for e in board["top"]}
    assert ranks == {"early": 1, "late": 2, "idle": 3, "plodder": 3}
    by_name = {e["name"]: e for e in board["top"]}
    assert by_name["early"]["time_ms"] > by_name["late"]["time_ms"]
    assert by_name["early"]["reached_ms"] == n * 1000
    assert by_name["idle"]["reached_ms"] == by_name["plodder"]["reached_ms"] == 0
    assert by_name["idle"]["banked"] == by_name["plodder"]["banked"]


# -- bots and pace ---------------------------------------------------------------------------


async def _draws(client: Client, clock: Clock, count: int, gap_s: float) -> None:
    """Draw ``count`` times (a Rainbow Canfield stock holds 34), ``gap_s`` apart."""
    for _ in range(count):
        clock.now += gap_s
        await client.move("d")


async def test_a_declared_bot_has_a_board_of_its_own(start_server: ServerFactory) -> None:
    clock = Clock(NOON)
    server = await start_server(clock=clock, **AT_ONCE)
    async with account(server.url, "robo", bot=True) as robo, account(server.url, "ann") as ann:
        room = await robo.daily("rainbow-canfield")
        assert room["settings"]["bot"] is True
        await _draws(robo, clock, 25, 0.0)  # a bot's pace: it is no one's business
        await robo.resign()
        over = await robo.next_event("race_over", timeout=TIMEOUT)
        assert over["bot"] is True and "seed" not in over
        await ann.daily("rainbow-canfield")
        await _draws(ann, clock, 3, 2.0)
        await ann.resign()
        await ann.next_event("race_over", timeout=TIMEOUT)
        people = await ann.leaderboard("rainbow-canfield")
        bots = await robo.leaderboard("rainbow-canfield", board="bots")
    assert [e["name"] for e in people["top"]] == ["ann"] and people["board"] == "people"
    assert [(e["name"], e["board"]) for e in bots["top"]] == [("robo", "bots")]
    assert bots["you"]["rank"] == 1 and bots["you"]["flag"] is None
    path = "/api/leaderboard?variant=rainbow-canfield"
    assert [e["name"] for e in (await http(server, path + "&board=bots"))["top"]] == ["robo"]
    assert [e["name"] for e in (await http(server, path))["top"]] == ["ann"]
    best = await http(server, "/api/best?variant=rainbow-canfield&board=bots")
    assert [e["name"] for e in best["best"]] == ["robo"]
    assert await server.node.backend.daily_flagged() == []


async def test_a_persons_pace_no_person_keeps_is_held_for_review(
    start_server: ServerFactory,
) -> None:
    # The cheat: a bot that said nothing played 59 moves in 0.1 s, ranked with people.
    clock = Clock(NOON)
    server = await start_server(clock=clock, **AT_ONCE)
    assert (server.config.daily_flag_median_ms, server.config.daily_flag_min_moves) == (150, 20)
    async with account(server.url, "swift") as swift, account(server.url, "sage") as sage:
        await swift.daily("rainbow-canfield")
        await _draws(swift, clock, 25, 0.05)  # 50 ms a move
        await swift.resign()
        await swift.next_event("race_over", timeout=TIMEOUT)
        await sage.daily("rainbow-canfield")
        await _draws(sage, clock, 25, 1.2)  # a person's pace
        await sage.resign()
        await sage.next_event("race_over", timeout=TIMEOUT)
        board = await swift.leaderboard("rainbow-canfield")
    assert [e["name"] for e in board["top"]] == ["sage"] and board["count"] == 1
    assert board["you"] is None  # held off the board
    (mine,) = board["history"]
    assert mine["ranked"] is True and mine["flag"].startswith("pace: a median of 50 ms")
    (held,) = await server.node.backend.daily_flagged()
    assert (held.name, held.moves, held.times[1] - held.times[0]) == ("swift", 25, 50)
    kept = await server.node.backend.keep_daily_entry(
        DAY, "rainbow-canfield", held.player_id, "a fast thumb on the stock"
    )
    assert kept is not None
    board = await http(server, "/api/leaderboard?variant=rainbow-canfield")
    assert board["count"] == 2 and {e["name"] for e in board["top"]} == {"swift", "sage"}


# -- practice under spare identities ---------------------------------------------------------


async def test_practice_under_spare_identities_gives_no_ranked_first_attempt(
    start_server: ServerFactory,
) -> None:
    # The cheat: throwaway identities each learned more of the day's deal, and a brand-new
    # one played the found win as its ranked first attempt.
    clock = Clock(NOON)
    server = await start_server(clock=clock)  # the shipped rule: ranked from the second day
    variant, line = banking_deal(server.node.secret, DAY)
    for n in range(3):  # guests may not even look
        async with Client(server.url, name=f"scout{n}", request_timeout=TIMEOUT) as scout:
            with pytest.raises(ServerError) as refused:
                await scout.daily(variant)
            assert refused.value.code == "account_required"
    for n in range(2):  # accounts made today may practise, but rank nowhere
        async with account(server.url, f"spare{n}") as spare:
            await spare.daily(variant)
            for move in line:
                await spare.move(move)
            await spare.resign()
            await spare.next_event("race_over", timeout=TIMEOUT)
    async with account(server.url, "fresh") as fresh:
        await fresh.daily(variant)
        for move in line:
            await fresh.move(move)
        await fresh.resign()
        over = await fresh.next_event("race_over", timeout=TIMEOUT)
        assert over["attempt"] == 1
        board = await fresh.leaderboard(variant)
        (kept,) = board["history"]
        assert (kept["ranked"], kept["unranked"]) == (False, "new_account")
        # A second device, or the same terminal again, is the same account's attempt 2.
        async with Client(server.url, token=fresh.token, request_timeout=TIMEOUT) as again:
            room = await again.daily(variant)
            assert room["settings"]["attempt"] == 2
            await again.resign()
            await again.next_event("race_over", timeout=TIMEOUT)
    top = await http(server, f"/api/leaderboard?variant={variant}&date={DAY}")
    assert top["count"] == 0 and top["top"] == []
