"""The daily challenge: seeds, scores and ranks, and whole attempts over websockets."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import urllib.request
from typing import Any

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory

from solrace.client import Client, ServerError
from solrace.engine import new_game, replay
from solrace.server.daily import (
    Entry,
    daily_seed,
    entry_from_log,
    rank_entries,
    score_of,
    seed_is_public,
    streaks,
    utc_date,
)

DAY = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC).timestamp()


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def entry(
    player: str, status: str, banked: int, moves: int, time_ms: int, attempt: int = 1
) -> Entry:
    return Entry("2026-11-30", "canfield", player, player, attempt, status, banked, moves, time_ms)


# -- pure parts ------------------------------------------------------------------------------


def test_the_seed_depends_on_secret_date_and_variant_and_fits_json() -> None:
    seed = daily_seed(b"s" * 32, "2026-11-30", "canfield")
    assert seed == daily_seed(b"s" * 32, "2026-11-30", "canfield")
    others = {
        daily_seed(b"t" * 32, "2026-11-30", "canfield"),
        daily_seed(b"s" * 32, "2026-12-01", "canfield"),
        daily_seed(b"s" * 32, "2026-11-30", "rainbow-canfield"),
    }
    assert seed not in others and len(others) == 3
    assert 0 <= seed < 2**53


def test_a_win_ranks_above_any_non_win_then_time_then_moves() -> None:
    fast = score_of(True, 60_000, 200, 52)
    slow = score_of(True, 61_000, 100, 52)
    fast_more_moves = score_of(True, 60_000, 201, 52)
    best_loss = score_of(False, 1, 1, 51)
    assert fast < fast_more_moves < slow < best_loss


def test_non_wins_rank_by_cards_banked_then_time() -> None:
    more = score_of(False, 900_000, 10, 30)
    fewer = score_of(False, 1_000, 10, 29)
    later = score_of(False, 900_001, 1, 30)
    assert more < later < fewer


def test_equal_scores_share_a_rank_and_the_next_rank_skips() -> None:
    entries = [
        entry("a", "won", 52, 100, 5_000),
        entry("b", "stuck", 20, 50, 7_000),
        entry("c", "resigned", 20, 80, 7_000),
        entry("d", "stuck", 10, 50, 1_000),
    ]
    ranks = [e["rank"] for e in rank_entries(entries)]
    assert ranks == [1, 2, 2, 4]
    # A page that starts inside a tie takes its rank from what scores better.
    page = rank_entries(entries[2:], first_rank=3, below=1)
    assert [e["rank"] for e in page] == [2, 4]


def test_streaks_count_days_in_a_row_played_and_won() -> None:
    def day(date: str, status: str) -> Entry:
        return Entry(date, "canfield", "p", "p", 1, status, 52 if status == "won" else 3, 1, 1)

    history = [
        day("2026-11-20", "won"),
        day("2026-11-21", "won"),
        day("2026-11-22", "won"),
        day("2026-11-27", "stuck"),
        day("2026-11-28", "won"),
        day("2026-11-29", "won"),
    ]
    s = streaks(history, "2026-11-30")  # nothing yet today: yesterday's run still counts
    assert (s.played, s.won, s.best_played, s.best_won) == (3, 2, 3, 3)
    assert streaks(history, "2026-12-01").played == 0


def test_the_seed_is_public_only_once_the_day_is_over() -> None:
    now = int(DAY * 1000)
    assert not seed_is_public(utc_date(now), now)
    assert seed_is_public("2026-11-29", now)


def test_an_entry_is_scored_from_its_log_not_from_what_a_client_says() -> None:
    seed = daily_seed(b"s" * 32, "2026-11-30", "canfield")
    game = new_game("canfield", seed, undo_allowed=False)
    log = []
    for _ in range(12):
        move = game.legal_moves()[0]
        game.apply(move)
        log.append(str(move))
    scored = entry_from_log(
        date="2026-11-30",
        variant="canfield",
        seed=seed,
        player_id="p",
        name="p",
        attempt=1,
        log=log,
        race_status="resigned",
        time_ms=5_000,
    )
    assert (scored.banked, scored.moves, scored.status) == (game.banked, 12, "resigned")


# -- over websockets ---------------------------------------------------------------------------


async def _attempt(client: Client, variant: str, moves: int) -> dict[str, Any]:
    """Play ``moves`` legal moves of today's deal, resign, and return the race_over event."""
    room = await client.daily(variant)
    assert room["settings"]["daily"] and room["settings"]["undo"] is False
    if client.view is None:
        await client.next_event("race_started", timeout=TIMEOUT)
    over = await _play_and_end(client, moves)
    await client.leave()
    return over


async def _play_and_end(client: Client, moves: int) -> dict[str, Any]:
    """Play up to ``moves`` legal moves, resign unless stuck, and return race_over."""
    for _ in range(moves):
        assert client.view is not None
        if not client.view["legal"]:
            break
        await client.move(client.view["legal"][0])
    assert client.view is not None
    if client.view["status"] == "playing":
        await client.resign()
    return await client.next_event("race_over", timeout=TIMEOUT)


async def _http(server: RunningServer, path: str, token: str | None = None) -> Any:
    """GET a JSON endpoint from a thread, so the server on this loop can answer; with a
    player's ``token`` as its bearer (a history is its player's alone)."""
    url = server.url.replace("ws://", "http://").rstrip("/") + path
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get() -> Any:
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return json.loads(response.read())

    return await asyncio.to_thread(get)


async def test_the_first_attempt_is_ranked_and_a_later_one_is_not(
    start_server: ServerFactory,
) -> None:
    clock = Clock(DAY)
    server = await start_server(clock=clock)
    async with Client(server.url, name="ann", request_timeout=TIMEOUT) as ann:
        first = await _attempt(ann, "canfield", 2)
        clock.now += 60
        second = await _attempt(ann, "canfield", 40)
        assert first["attempt"] == 1 and second["attempt"] == 2
        assert "seed" not in first and "seed" not in second  # not even in the results
        board = await ann.leaderboard("canfield")
    assert board["count"] == 1
    assert [e["player_id"] for e in board["top"]] == [ann.player_id]
    assert board["top"][0]["moves"] == first["results"][0]["moves"]
    assert board["you"]["rank"] == 1 and board["seed"] is None
    history = board["history"]
    assert [(h["attempt"], h["ranked"]) for h in history] == [(1, True), (2, False)]
    assert board["streaks"]["played"] == 1
    over_http = await _http(server, f"/api/leaderboard?variant=canfield&player={ann.player_id}")
    assert over_http["top"] == board["top"] and over_http["you"]["rank"] == 1
    best = await _http(server, "/api/best?variant=canfield")
    assert [e["player_id"] for e in best["best"]] == [ann.player_id]


async def test_no_client_gets_the_daily_seed_before_the_day_ends(
    start_server: ServerFactory,
) -> None:
    clock = Clock(DAY)
    server = await start_server(clock=clock)
    seed = daily_seed(server.node.secret, "2026-11-30", "rainbow-canfield")
    frames: list[Any] = []
    async with Client(server.url, name="bo", request_timeout=TIMEOUT) as bo:
        original = bo._on_frame

        def record(data: dict[str, Any]) -> None:
            frames.append(data)
            original(data)

        bo._on_frame = record  # type: ignore[method-assign]
        await _attempt(bo, "rainbow-canfield", 10)
        frames.append(await bo.leaderboard("rainbow-canfield"))
        assert str(seed) not in json.dumps(frames)
        frames.append(await _http(server, "/api/leaderboard?variant=rainbow-canfield"))
        assert str(seed) not in json.dumps(frames)
        clock.now += 86_400  # the next day: yesterday's seed is out
        board = await bo.leaderboard("rainbow-canfield", date="2026-11-30")
    assert board["seed"] == seed
    # Anyone can now replay a ranked run from its log and check it.
    logged = await server.node.backend.daily_entries("2026-11-30", "rainbow-canfield")
    game = replay("rainbow-canfield", seed, logged[0].log, undo_allowed=False)
    assert game.banked == board["top"][0]["banked"] and game.moves == board["top"][0]["moves"]


async def test_an_attempt_belongs_to_the_day_it_started(start_server: ServerFactory) -> None:
    clock = Clock(dt.datetime(2026, 11, 30, 23, 59, 59, tzinfo=dt.UTC).timestamp())
    server = await start_server(clock=clock)
    async with Client(server.url, name="cy", request_timeout=TIMEOUT) as cy:
        room = await cy.daily("rainbow-canfield")  # its first draw is always a move
        assert room["settings"]["daily"] == "2026-11-30"
        assert cy.view is not None  # the reply to daily is a snapshot of the started race
        clock.now += 5  # past midnight
        await cy.move("d")
        await cy.resign()
        over = await cy.next_event("race_over", timeout=TIMEOUT)
        assert over["daily"] == "2026-11-30"
        today = await cy.leaderboard("rainbow-canfield")
        yesterday = await cy.leaderboard("rainbow-canfield", date="2026-11-30")
    assert today["date"] == "2026-12-01" and today["count"] == 0
    assert yesterday["count"] == 1 and yesterday["seed"] is not None


async def test_leaving_does_not_earn_a_second_ranked_try(
    server: RunningServer, make_client: ClientFactory
) -> None:
    dee = await make_client("dee")
    await dee.daily("american-canister")
    assert dee.view is not None  # the reply to daily is a snapshot of the started race
    await dee.leave()  # a leaver resigns
    again = await dee.daily("american-canister")
    assert again["settings"]["attempt"] == 2


async def test_a_dropped_player_resumes_the_attempt(
    server: RunningServer, make_client: ClientFactory
) -> None:
    eve = await make_client("eve")
    await eve.daily("rainbow-canfield")  # its first draws are always moves
    assert eve.view is not None  # the reply to daily is a snapshot of the started race
    await eve.move("d")
    await eve.drop()
    await eve.next_event("resumed", timeout=TIMEOUT)
    assert eve.rev == 1
    resumed = await eve.daily("rainbow-canfield")  # asking again resumes, it starts nothing new
    assert resumed["settings"]["attempt"] == 1
    assert (await eve.move("d"))["rev"] == 2


async def test_daily_requests_check_their_fields(make_client: ClientFactory) -> None:
    fay = await make_client("fay")
    with pytest.raises(ServerError) as unknown:
        await fay.daily("klondike")
    assert unknown.value.code == "unknown_variant"
    with pytest.raises(ServerError) as bad_date:
        await fay.leaderboard("canfield", date="30/11/2026")
    assert bad_date.value.code == "bad_field"


async def test_the_board_survives_a_restart(start_server: ServerFactory) -> None:
    clock = Clock(DAY)
    first = await start_server(clock=clock)
    async with Client(first.url, name="gus", request_timeout=TIMEOUT) as gus:
        await _attempt(gus, "canfield", 3)
        player, token = gus.player_id, gus.token
    await first.server.close()
    second = await start_server(clock=clock)
    board = await _http(second, f"/api/leaderboard?variant=canfield&player={player}")
    assert board["count"] == 1 and board["you"]["player_id"] == player
    history = await _http(second, f"/api/history?player={player}", token)
    assert len(history["history"]) == 1


async def test_two_players_of_one_daily_share_the_deal_and_the_board(
    start_server: ServerFactory,
) -> None:
    clock = Clock(DAY)
    one = await start_server(clock=clock)
    # On Redis another node of the same store; an embedded node has its store to itself.
    two = one if one.node.backend.in_process else await start_server(clock=clock)
    async with (
        Client(one.url, name="hal", request_timeout=TIMEOUT) as hal,
        Client(two.url, name="ivy", request_timeout=TIMEOUT) as ivy,
    ):
        await hal.daily("canfield")
        await ivy.daily("canfield")
        assert hal.view is not None and ivy.view is not None
        assert hal.view["tableau"] == ivy.view["tableau"]
        for client, moves in ((hal, 3), (ivy, 1)):
            await _play_and_end(client, moves)
        board = await ivy.leaderboard("canfield")
    assert board["count"] == 2
    assert {e["player_id"] for e in board["top"]} == {hal.player_id, ivy.player_id}


async def test_a_daily_room_takes_no_rematch_and_a_new_attempt_leaves_it(
    server: RunningServer, make_client: ClientFactory
) -> None:
    jo = await make_client("jo")
    await jo.daily("rainbow-canfield")  # never stuck before its first move
    await jo.resign()
    await jo.next_event("race_over", timeout=TIMEOUT)
    for ask in (jo.rematch, jo.ready, jo.start):
        with pytest.raises(ServerError) as refused:
            await ask()
        assert refused.value.code == "wrong_state"
    again = await jo.daily("rainbow-canfield")  # leaves the finished attempt's room by itself
    assert again["settings"]["attempt"] == 2 and again["state"] == "racing"
    board = await jo.leaderboard("rainbow-canfield")
    assert board["today"] == board["date"]
