"""The daily board against a few accounts at one address, a bot that hides its pace, and
a board asked for a day not begun: each test reproduces a way the board was cheated, on
both backends where the store is involved.

The clients of a test come from 127.0.0.1; to play clients at other addresses, the node
trusts 127.0.0.1 as a proxy and each raw client sends the ``X-Real-IP`` a proxy would.
The server's clock is moved by hand, so every time in a log is the test's own.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
from dataclasses import replace
from typing import Any

import pytest
from conftest import TIMEOUT, ServerFactory
from daily_support import AT_ONCE, PASSWORD, Clock, account, http_answer
from e2e_support import RawClient

from solrace.client import ServerError
from solrace.client.terminal import render_board
from solrace.server import ServerConfig
from solrace.server.daily import Entry, address_verdict, judged, pace_flag

DAY = "2026-11-30"
NOON = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC).timestamp()
VARIANT = "rainbow-canfield"  # its stock takes 34 draws, each a legal move at any time
PROXIED = ("127.0.0.1",)
HOME = "203.0.113.7"
NEIGHBOUR = "198.51.100.9"


def at(address: str) -> dict[str, str]:
    """The header a trusted proxy adds for a client at ``address``."""
    return {"X-Real-IP": address}


def times_of(gaps: list[int], first: int = 3_000) -> list[int]:
    """The moves' times in an attempt (ms) from the gaps between them."""
    return list(itertools.accumulate(gaps, initial=first))


# -- the pace flag, pure ------------------------------------------------------------------------


def test_quick_gaps_alternating_with_just_slow_ones_are_flagged() -> None:
    # The cheat: a solver's line played in 20 s, gaps 35, 155, 155 ms: the median (155)
    # is over the floor, the average (115) is no person's.
    bot = times_of([35, 155, 155] * 58)
    flag = pace_flag(bot, min_moves=20, median_ms=150)
    assert flag is not None and "an average of 115 ms" in flag, flag
    steady = times_of([40] * 120)
    assert pace_flag(steady, min_moves=20, median_ms=150) is not None
    # A long think before a burst of instant moves is a program's too: three gaps in four
    # are 30 ms, whatever the average.
    solved_then_played = times_of([30_000] + [30] * 150)
    assert pace_flag(solved_then_played, min_moves=20, median_ms=150) is not None
    assert pace_flag(bot, min_moves=20, median_ms=0) is None  # 0 flags none


def test_an_even_pace_just_over_the_floor_is_flagged() -> None:
    # The cheat: an undeclared bot, a move every 160 ms, ranked first on the people's board.
    even = times_of([160] * 66)
    flag = pace_flag(even, min_moves=20, median_ms=150)
    assert flag is not None and "even" in flag, flag
    # With some jitter, and at a slower pace still no person keeps that evenly.
    jittered = times_of([160 + (i * 37) % 60 for i in range(66)])
    assert pace_flag(jittered, min_moves=20, median_ms=150) is not None
    assert pace_flag(
        times_of([900 + (i * 37) % 60 for i in range(66)]), min_moves=20, median_ms=150
    )
    # A person: thought and quick runs. Slow and even is a person's too (one who thinks
    # a couple of seconds before each move).
    person = times_of([1_200 if i % 3 == 0 else 40 for i in range(66)])
    assert pace_flag(person, min_moves=20, median_ms=150) is None
    assert pace_flag(times_of([2_000] * 66), min_moves=20, median_ms=150) is None


def _with_auto_home(deliberate: list[int], bursts: list[int], auto_gap: int) -> list[int]:
    """A person's gaps: each deliberate move followed by the page's burst of safe cards
    sent home, ``auto_gap`` ms apart; then the page's finish, every card left going home."""
    gaps: list[int] = []
    for gap, burst in zip(deliberate, bursts, strict=True):
        gaps.append(gap)
        gaps.extend([auto_gap] * burst)
    return gaps


@pytest.mark.parametrize(
    "auto_gap",
    [
        8,  # reduced motion: the page sends the next card home as the ack comes back
        145,  # the page's pause of 140 ms, on a near link
    ],
)
def test_a_fast_person_whose_page_sends_cards_home_is_not_flagged(auto_gap: int) -> None:
    # American Canister with auto-move and auto-finish on: 45 moves by hand, a quick
    # player's (0.35 s to 1.2 s), and all 52 cards sent home by the page, in bursts after
    # the moves and in one run at the end. More than half the gaps are the page's, so the
    # median alone is under the floor.
    deliberate = [350 + (i * 397) % 850 for i in range(45)]
    bursts = [1 if i % 3 == 0 else 0 for i in range(45)]
    bursts[-1] = 52 - sum(bursts[:-1])  # the finish
    gaps = _with_auto_home(deliberate, bursts, auto_gap)
    times = times_of(gaps[1:], first=gaps[0])
    assert len(times) == 97
    assert pace_flag(times, min_moves=20, median_ms=150) is None
    # The same person in Canfield, drawing through the stock with the key held (40 ms a
    # draw, in runs of 6): four gaps in five are quick, and it is still a person's pace.
    draws = _with_auto_home(deliberate, [6 if i % 2 else 0 for i in range(45)], 40)
    mixed = [*draws, *[auto_gap] * 52]
    assert pace_flag(times_of(mixed), min_moves=20, median_ms=150) is None


def test_random_quick_gaps_are_flagged_by_the_cards_put_on_the_tableau() -> None:
    # The cheat: a solver's line played with random gaps of 0 to 330 ms. The median and
    # the average (165 ms) are over the floor and the gaps spread widely, but the cards
    # it puts on the tableau come as fast as the rest, which no person's do.
    rng = random.Random(5)
    line = ["d", "d", "w-t3", "t2-f", "d", "t4-t1", "r-t2", "d", "w-f", "t1-t3x2"] * 12
    times = times_of([rng.randint(0, 330) for _ in line[1:]])
    assert pace_flag(times, min_moves=20, median_ms=150) is None  # the times alone pass
    flag = pace_flag(times, min_moves=20, median_ms=150, moves=line)
    assert flag is not None and "put on the tableau" in flag, flag
    assert pace_flag(times, min_moves=20, median_ms=0, moves=line) is None


def test_quick_gaps_with_a_just_slow_one_before_each_card_put_on_the_tableau_are_flagged() -> None:
    # The cheat: 10 ms before draws and moves home, 310 ms before each card put on the
    # tableau: an average of 166 ms, gaps spread widely, ranked first at a floor of 250.
    line = ["d", "w-t3", "d", "t4-t1", "w-f", "r-t2"] * 20
    gaps = [310 if "-t" in move else 10 for move in line[1:]]
    times = times_of(gaps)
    assert pace_flag(times, min_moves=20, median_ms=150) is None  # the times alone pass
    flag = pace_flag(times, min_moves=20, median_ms=150, moves=line)
    assert flag is not None and "put on the tableau" in flag, flag


def test_a_fast_person_s_moves_to_the_tableau_are_not_flagged() -> None:
    # The quick player of the test above, in Canfield: each move by hand (a card put on
    # the tableau, 0.35 s to 1.2 s after the last), draws with the key held (40 ms) and
    # the page's cards sent home 8 ms apart.
    moves: list[str] = ["t1-t2"]
    gaps: list[int] = []
    for i in range(45):
        for _ in range(6 if i % 2 else 0):
            moves.append("d")
            gaps.append(40)
        moves.append("w-t3" if i % 3 else "r-t1")
        gaps.append(350 + (i * 397) % 850)
        if i % 3 == 0:
            moves.append("t2-f")
            gaps.append(8)
    times = times_of(gaps)
    assert len(times) == len(moves)
    assert pace_flag(times, min_moves=20, median_ms=150, moves=moves) is None


# -- the pace flag, over websockets -------------------------------------------------------------


async def _timed_draws(start_server: ServerFactory, gaps_ms: list[int]) -> dict[str, Any]:
    """An account's attempt at the day's deal: draws at these gaps, then a resignation; its
    entry as the player's history keeps it."""
    clock = Clock(NOON)
    server = await start_server(clock=clock, **AT_ONCE)
    async with account(server.url, "quick") as quick:
        await quick.daily(VARIANT)
        for gap in gaps_ms:
            clock.now += gap / 1000
            await quick.move("d")
        await quick.resign()
        await quick.next_event("race_over", timeout=TIMEOUT)
        board = await quick.leaderboard(VARIANT)
    (mine,) = board["history"]
    assert mine["ranked"] is True
    if mine["flag"] is not None:
        assert board["you"] is None and board["count"] == 0  # held off the board
    return dict(mine)


async def test_a_bot_alternating_quick_and_just_slow_moves_is_held_for_review(
    start_server: ServerFactory,
) -> None:
    mine = await _timed_draws(start_server, [1_000] + [35, 155, 155] * 9)
    assert mine["flag"] is not None and "an average of 115 ms" in mine["flag"], mine


async def test_a_person_with_bursts_of_automatic_moves_is_ranked(
    start_server: ServerFactory,
) -> None:
    # Each move by hand (0.6 s to 1.1 s) is followed by two the page sends by itself at
    # once: two gaps in three are 8 ms.
    mine = await _timed_draws(start_server, [600, 8, 8, 900, 8, 8, 1_100, 8, 8] * 3)
    assert mine["flag"] is None, mine


# -- several accounts at one address --------------------------------------------------------


async def _claimed(url: str, name: str, address: str) -> RawClient:
    raw = await RawClient.open(url, name=name, headers=at(address))
    claimed = await raw.request({"type": "claim", "password": PASSWORD})
    assert claimed["type"] == "account", claimed
    return raw


async def _play(raw: RawClient, clock: Clock) -> dict[str, Any]:
    """Start today's attempt, draw twice a second apart, resign; the attempt as the
    player's history keeps it."""
    started = await raw.request({"type": "daily", "variant": VARIANT})
    assert started["type"] == "room", started
    rev = started["room"]["you"]["rev"]
    for _ in range(2):
        clock.now += 1.0
        ack = await raw.request({"type": "move", "move": "d", "rev": rev})
        assert ack["type"] == "ack", ack
        rev = ack["rev"]
    assert (await raw.request({"type": "resign"}))["type"] == "ok"
    await raw.recv(lambda f: f.get("type") == "race_over")
    assert (await raw.request({"type": "leave_room"}))["type"] == "ok"
    board = await raw.request({"type": "get_leaderboard", "variant": VARIANT})
    (mine,) = [e for e in board["board"]["history"] if e["variant"] == VARIANT]
    return dict(mine)


async def test_accounts_at_one_address_rank_a_few_attempts_and_scouts_are_flagged(
    start_server: ServerFactory,
) -> None:
    # The cheat: a scout account revealed the deal, then the main account played it
    # ranked; and every account claimed from one address ranked an attempt of its own.
    clock = Clock(NOON)
    server = await start_server(clock=clock, trusted_proxies=PROXIED, **AT_ONCE)
    assert server.config.daily_ranked_per_address == 3
    names = ["scout", "main", "third", "fourth"]
    seen = [await _play(await _claimed(server.url, name, HOME), clock) for name in names]
    scout, main, third, fourth = seen
    # The first attempt of the address ranks as any other.
    assert (scout["ranked"], scout["unranked"], scout["flag"]) == (True, None, None)
    # One started after another of the same deal from the address waits for review.
    for later in (main, third):
        assert later["attempt"] == 1 and later["ranked"] is True and later["unranked"] is None
        assert later["flag"] is not None and later["flag"].startswith("address:"), later
    # Past the cap the attempt is played and kept, but not ranked, and says why.
    assert (fourth["attempt"], fourth["ranked"]) == (1, False)
    assert fourth["unranked"] == "address_limit" and fourth["flag"] is None
    # A neighbour at another address is not held back by them.
    neighbour = await _play(await _claimed(server.url, "neighbour", NEIGHBOUR), clock)
    assert (neighbour["ranked"], neighbour["unranked"], neighbour["flag"]) == (True, None, None)
    # The board: the scout and the neighbour; the operator sees the flagged two.
    status, _, board = await http_answer(server, f"/api/leaderboard?variant={VARIANT}")
    assert status == 200 and {e["name"] for e in board["top"]} == {"scout", "neighbour"}
    flagged = await server.node.backend.daily_flagged()
    assert sorted(e.name for e in flagged) == ["main", "third"]
    assert all(e.flag and e.flag.startswith("address:") for e in flagged)
    kept = await server.node.backend.daily_entries(DAY, VARIANT)
    assert {e.name: e.unranked for e in kept}["fourth"] == "address_limit"


async def test_an_attempt_that_waits_while_a_scout_plays_from_its_address_is_flagged(
    start_server: ServerFactory,
) -> None:
    """The other order: the main account starts first and waits; a scout account at the
    same address starts the deal, draws the whole stock and resigns; then the main one
    plays. Only a later start was flagged: now the attempt that ran while the scout's
    started is held for review too."""
    clock = Clock(NOON)
    server = await start_server(clock=clock, trusted_proxies=PROXIED, **AT_ONCE)
    main = await _claimed(server.url, "main", HOME)
    started = await main.request({"type": "daily", "variant": VARIANT})
    assert started["type"] == "room", started
    scout = await _play(await _claimed(server.url, "scout", HOME), clock)
    assert scout["flag"] is not None and scout["flag"].startswith("address:"), scout
    rev = started["room"]["you"]["rev"]
    for _ in range(2):
        clock.now += 1.0
        ack = await main.request({"type": "move", "move": "d", "rev": rev})
        assert ack["type"] == "ack", ack
        rev = ack["rev"]
    assert (await main.request({"type": "resign"}))["type"] == "ok"
    await main.recv(lambda f: f.get("type") == "race_over")
    board = await main.request({"type": "get_leaderboard", "variant": VARIANT})
    (mine,) = [e for e in board["board"]["history"] if e["variant"] == VARIANT]
    assert mine["ranked"] is True and mine["unranked"] is None, mine
    assert mine["flag"] is not None and "while it ran" in mine["flag"], mine
    status, _, public = await http_answer(server, f"/api/leaderboard?variant={VARIANT}")
    assert status == 200 and public["top"] == []
    # An attempt over before the scout's started is left alone: a neighbour's later start
    # at another address, or one here after the main one ended, flags nothing of it.
    late = await _play(await _claimed(server.url, "late", HOME), clock)
    assert late["flag"] is not None
    kept = {e.name: e for e in await server.node.backend.daily_entries(DAY, VARIANT)}
    assert kept["main"].flag == mine["flag"]


async def test_an_ipv6_address_counts_by_its_64(start_server: ServerFactory) -> None:
    clock = Clock(NOON)
    server = await start_server(
        clock=clock, trusted_proxies=PROXIED, daily_ranked_per_address=1, **AT_ONCE
    )
    first = await _play(await _claimed(server.url, "laptop", "2001:db8:1:2::1"), clock)
    phone = await _play(await _claimed(server.url, "phone", "2001:db8:1:2:aaaa::9"), clock)
    other = await _play(await _claimed(server.url, "elsewhere", "2001:db8:1:3::1"), clock)
    assert (first["ranked"], first["flag"]) == (True, None)
    assert (phone["ranked"], phone["unranked"]) == (False, "address_limit")
    assert (other["ranked"], other["unranked"], other["flag"]) == (True, None, None)


async def test_an_account_made_today_still_counts_as_the_scout(
    start_server: ServerFactory,
) -> None:
    # The scout need not rank: an account made today (ranked only from tomorrow) shows the
    # deal as well as any, to an account made yesterday at the same address.
    clock = Clock(NOON - 86_400)
    server = await start_server(  # accounts rank from their second day
        clock=clock, trusted_proxies=PROXIED, daily_ranked_per_address=1
    )
    main_raw = await _claimed(server.url, "old", HOME)
    clock.now = NOON
    scout = await _play(await _claimed(server.url, "fresh", HOME), clock)
    assert (scout["ranked"], scout["unranked"], scout["flag"]) == (False, "new_account", None)
    main = await _play(main_raw, clock)
    assert main["ranked"] is True and main["flag"] and main["flag"].startswith("address:")
    # The account made today takes nothing of the cap (one here): it could not rank.
    assert main["unranked"] is None


async def test_the_address_rules_stay_off_for_clients_on_the_nodes_own_machine(
    start_server: ServerFactory,
) -> None:
    # A client at 127.0.0.1 is local play, or a proxy not declared with --trusted-proxy,
    # whose clients would all share its address: no household is told apart there.
    clock = Clock(NOON)
    server = await start_server(clock=clock, **AT_ONCE)
    for n in range(4):
        raw = await RawClient.open(server.url, name=f"local{n}")
        assert (await raw.request({"type": "claim", "password": PASSWORD}))["type"] == "account"
        mine = await _play(raw, clock)
        assert (mine["ranked"], mine["unranked"], mine["flag"]) == (True, None, None)


async def test_a_cap_of_0_turns_the_address_rules_off(start_server: ServerFactory) -> None:
    clock = Clock(NOON)
    server = await start_server(
        clock=clock, trusted_proxies=PROXIED, daily_ranked_per_address=0, **AT_ONCE
    )
    for n in range(4):
        mine = await _play(await _claimed(server.url, f"member{n}", HOME), clock)
        assert (mine["ranked"], mine["unranked"], mine["flag"]) == (True, None, None)


def test_the_cap_lets_a_household_rank_a_few() -> None:
    assert ServerConfig().daily_ranked_per_address == 3


def test_an_address_flag_joins_a_pace_flag_and_a_bot_is_never_flagged() -> None:
    made = Entry(DAY, VARIANT, "p", "p", 1, "won", 52, 120, 9_000, flag="pace: quick")
    unranked, flag = address_verdict(ranked=2, others=1, cap=3)
    assert unranked is None and flag is not None
    both = judged(made, unranked, flag)
    assert both.flag == f"pace: quick; {flag}" and both.ranked
    assert judged(replace(made, flag=None, board="bots"), None, flag).flag is None
    capped = judged(made, *address_verdict(ranked=4, others=3, cap=3))
    assert (capped.ranked, capped.unranked, capped.flag) == (False, "address_limit", None)
    later = replace(made, attempt=2, unranked="later_attempt")
    assert judged(later, "address_limit", None) == later


# -- a day not begun --------------------------------------------------------------------------


async def test_a_board_of_a_day_not_begun_is_refused(start_server: ServerFactory) -> None:
    clock = Clock(NOON)
    server = await start_server(clock=clock, **AT_ONCE)
    async with account(server.url, "early") as early:
        for ahead in ("2026-12-01", "9999-12-31"):
            with pytest.raises(ServerError) as refused:
                await early.leaderboard(VARIANT, date=ahead)
            assert refused.value.code == "bad_field" and "not started" in refused.value.message
            path = f"/api/leaderboard?variant={VARIANT}&date={ahead}"
            status, _, body = await http_answer(server, path)
            assert (status, body["code"]) == (400, "bad_field"), body
        assert (await early.leaderboard(VARIANT, date=DAY))["date"] == DAY
        assert (await early.leaderboard(VARIANT, date="2026-11-29"))["date"] == "2026-11-29"


# -- what the terminal clients say of the attempt -------------------------------------------


def _board_with(first: dict[str, Any]) -> dict[str, Any]:
    entry = {"date": DAY, "variant": VARIANT, "attempt": 1, "ranked": True, "flag": None}
    return {
        "date": DAY,
        "variant": VARIANT,
        "count": 0,
        "top": [],
        "history": [{**entry, "unranked": None, "kept": None, **first}],
    }


def test_the_terminal_board_says_why_a_first_attempt_holds_no_place() -> None:
    capped = render_board(_board_with({"ranked": False, "unranked": "address_limit"}))
    assert "your attempt 1 is kept, not ranked: enough accounts at your address" in capped
    scouted = render_board(_board_with({"flag": "address: another account started it first"}))
    assert "waits for an operator's review before it ranks: another account" in scouted
    kept = render_board(_board_with({"flag": "address: ...", "kept": "a household"}))
    ranked = render_board(_board_with({}))
    assert "your attempt 1" not in kept and "your attempt 1" not in ranked
