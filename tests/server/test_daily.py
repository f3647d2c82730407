"""The daily challenge: seeds, scores and ranks, and whole attempts over websockets."""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from daily_support import (
    AT_ONCE,
    PASSWORD,
    Clock,
    account,
    attempt,
    banking_deal,
    http,
    play_and_end,
    shows,
)

from solrace.client import Client, ServerError
from solrace.engine import new_game, replay
from solrace.server.daily import (
    Entry,
    commitment,
    daily_commitment,
    daily_nonce,
    daily_seed,
    entry_from_log,
    pace_flag,
    rank_entries,
    reveal_ms,
    score_of,
    seed_is_due,
    streaks,
    unranked_reason,
)

DAY = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC).timestamp()


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


def test_non_wins_rank_by_cards_banked_then_when_that_count_was_first_reached() -> None:
    more = score_of(False, 900_000, 10, 30, reached_ms=800_000)
    fewer = score_of(False, 1_000, 10, 29, reached_ms=1_000)
    later = score_of(False, 900_001, 1, 30, reached_ms=800_001)
    assert more < later < fewer
    # When the attempt ended counts for nothing: resigning early ranks no higher.
    played_on = score_of(False, 1_700_000, 400, 30, reached_ms=60_000)
    resigned_at_once = score_of(False, 60_100, 40, 30, reached_ms=60_100)
    assert played_on < resigned_at_once
    assert score_of(False, 100, 0, 1, reached_ms=0) == score_of(False, 1_800_000, 90, 1, 0)


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


def test_the_seed_is_due_only_once_the_day_and_the_time_limit_are_over() -> None:
    end = int(dt.datetime(2026, 12, 1, tzinfo=dt.UTC).timestamp() * 1000)
    assert reveal_ms("2026-11-30", 1800) == end + 1_800_000
    assert not seed_is_due("2026-11-30", int(DAY * 1000), 1800)
    assert not seed_is_due("2026-11-30", end + 5_000, 1800)  # 00:00:05: attempts still run
    assert not seed_is_due("2026-11-30", end + 1_799_999, 1800)
    assert seed_is_due("2026-11-30", end + 1_800_000, 1800)
    assert seed_is_due("2026-11-30", end, 0)


def test_the_commitment_is_sha256_of_the_seed_and_a_secret_nonce() -> None:
    secret = b"s" * 32
    seed = daily_seed(secret, "2026-11-30", "canfield")
    nonce = daily_nonce(secret, "2026-11-30", "canfield")
    assert len(nonce) == 64 and int(nonce, 16) >= 0
    published = daily_commitment(secret, "2026-11-30", "canfield")
    assert published == hashlib.sha256(f"{seed}:{nonce}".encode()).hexdigest()
    assert published == commitment(seed, nonce)
    # The nonce comes from the secret: another server's, or another day's, is another.
    assert daily_nonce(b"t" * 32, "2026-11-30", "canfield") != nonce
    assert daily_nonce(secret, "2026-12-01", "canfield") != nonce
    assert commitment(seed + 1, nonce) != published


def test_only_an_accounts_first_attempt_from_its_second_day_is_ranked() -> None:
    made = int(dt.datetime(2026, 11, 29, 23, 0, tzinfo=dt.UTC).timestamp() * 1000)

    def why(attempt: int, date: str, created: int | None, age: int = 1) -> str | None:
        return unranked_reason(
            attempt=attempt, date=date, account_created_ms=created, account_age_days=age
        )

    assert why(1, "2026-11-29", made) == "new_account"  # the day it was made
    assert why(1, "2026-11-30", made) is None  # its second day, an hour later
    assert why(2, "2026-11-30", made) == "later_attempt"
    assert why(1, "2026-11-30", None) == "guest"
    assert why(1, "2026-11-29", made, age=0) is None
    assert why(1, "2026-11-30", made, age=2) == "new_account"


def test_a_pace_no_person_keeps_is_flagged() -> None:
    fast = [i * 100 for i in range(20)]  # a move every 100 ms, 20 moves
    assert pace_flag(fast, min_moves=20, median_ms=150) is not None
    assert pace_flag(fast[:19], min_moves=20, median_ms=150) is None  # too few to tell
    steady = [i * 1_500 for i in range(60)]
    assert pace_flag(steady, min_moves=20, median_ms=150) is None
    # A few quick moves (a run of draws) among thoughtful ones: the median is a person's.
    mixed = sorted([i * 2_000 for i in range(30)] + [i * 2_000 + 50 for i in range(10)])
    assert pace_flag(mixed, min_moves=20, median_ms=150) is None
    assert pace_flag(fast, min_moves=20, median_ms=0) is None  # 0 flags none


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


def test_the_time_a_count_was_first_reached_comes_from_the_timed_log() -> None:
    secret = b"s" * 32
    variant, line = banking_deal(secret, "2026-11-30")
    seed = daily_seed(secret, "2026-11-30", variant)

    def scored(player: str, times: list[int], race_status: str, time_ms: int) -> Entry:
        return entry_from_log(
            date="2026-11-30",
            variant=variant,
            seed=seed,
            player_id=player,
            name=player,
            attempt=1,
            log=list(zip(line, times, strict=True)),
            race_status=race_status,
            time_ms=time_ms,
        )

    early = scored("early", [1_000 * (i + 1) for i in range(len(line))], "out_of_time", 1_800_000)
    late = [60_000 + 1_000 * i for i in range(len(line))]
    quitter = scored("quitter", late, "resigned", late[-1] + 100)
    assert early.banked == quitter.banked and early.reached_ms == 1_000 * len(line)
    assert quitter.reached_ms == late[-1] and quitter.times == late
    assert early.score < quitter.score  # it got there first: its end counts for nothing
    ranks = rank_entries([early, quitter])
    assert [(r["player_id"], r["rank"]) for r in ranks] == [("early", 1), ("quitter", 2)]
    # An attempt with only the dealt cards reached its count at the deal: time 0.
    nothing = entry_from_log(
        date="2026-11-30",
        variant=variant,
        seed=seed,
        player_id="nothing",
        name="nothing",
        attempt=1,
        log=[],
        race_status="resigned",
        time_ms=100,
    )
    assert nothing.reached_ms == 0 and nothing.banked == new_game(variant, seed).banked


# -- over websockets ---------------------------------------------------------------------------


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """One node on which an account is ranked from the day it is made."""
    return await start_server(**AT_ONCE)


async def test_the_first_attempt_is_ranked_and_a_later_one_is_not(
    start_server: ServerFactory,
) -> None:
    clock = Clock(DAY)
    server = await start_server(clock=clock, **AT_ONCE)
    async with account(server.url, "ann") as ann:
        first = await attempt(ann, "canfield", 2)
    clock.now += 60
    # The same account from another device (a private window, `solrace daily` again).
    async with Client(
        server.url, account="ann", password=PASSWORD, request_timeout=TIMEOUT
    ) as again:
        assert again.player_id == ann.player_id
        second = await attempt(again, "canfield", 40)
        board = await again.leaderboard("canfield")
    assert first["attempt"] == 1 and second["attempt"] == 2
    assert "seed" not in first and "seed" not in second  # not even in the results
    assert board["count"] == 1
    assert [e["player_id"] for e in board["top"]] == [ann.player_id]
    assert board["top"][0]["moves"] == first["results"][0]["moves"]
    assert board["you"]["rank"] == 1 and board["seed"] is None
    history = board["history"]
    assert [(h["attempt"], h["ranked"], h["unranked"]) for h in history] == [
        (1, True, None),
        (2, False, "later_attempt"),
    ]
    assert board["streaks"]["played"] == 1
    over_http = await http(server, f"/api/leaderboard?variant=canfield&player={ann.player_id}")
    assert over_http["top"] == board["top"] and over_http["you"]["rank"] == 1
    best = await http(server, "/api/best?variant=canfield")
    assert [e["player_id"] for e in best["best"]] == [ann.player_id]


async def test_a_guest_may_not_play_the_daily_deal(server: RunningServer) -> None:
    # A fresh identity (a private window, a throwaway) is a guest: it is refused, and
    # learns nothing of the deal.
    async with Client(server.url, name="lurker", request_timeout=TIMEOUT) as guest:
        with pytest.raises(ServerError) as refused:
            await guest.daily("canfield")
        assert refused.value.code == "account_required"
        assert guest.view is None and guest.room is None
        board = await guest.leaderboard("canfield")  # the boards stay open to all
    assert board["count"] == 0


async def test_a_new_account_is_ranked_from_its_second_day(start_server: ServerFactory) -> None:
    clock = Clock(DAY)
    server = await start_server(clock=clock)  # the default: from the account's second day
    assert server.config.daily_account_age_days == 1
    async with account(server.url, "newcomer") as new:
        over = await attempt(new, "rainbow-canfield", 3)
        assert over["attempt"] == 1
        board = await new.leaderboard("rainbow-canfield")
        assert board["count"] == 0 and board["you"] is None
        (kept,) = board["history"]
        assert (kept["attempt"], kept["ranked"], kept["unranked"]) == (1, False, "new_account")
        clock.now += 86_400  # the next day
        await attempt(new, "rainbow-canfield", 3)
        board = await new.leaderboard("rainbow-canfield")
    assert board["count"] == 1 and board["you"]["rank"] == 1
    assert board["you"]["ranked"] is True and board["you"]["unranked"] is None


async def test_no_client_gets_the_daily_seed_before_it_is_revealed(
    start_server: ServerFactory,
) -> None:
    clock = Clock(DAY)
    server = await start_server(clock=clock, **AT_ONCE)
    seed = daily_seed(server.node.secret, "2026-11-30", "rainbow-canfield")
    frames: list[Any] = []
    async with account(server.url, "bo") as bo:
        original = bo._on_frame

        def record(data: dict[str, Any]) -> None:
            frames.append(data)
            original(data)

        bo._on_frame = record  # type: ignore[method-assign]
        await attempt(bo, "rainbow-canfield", 10)
        frames.append(await bo.leaderboard("rainbow-canfield"))
        assert not shows(frames, seed)
        frames.append(await http(server, "/api/leaderboard?variant=rainbow-canfield"))
        frames.append(await http(server, "/api/daily?variant=rainbow-canfield"))
        assert not shows(frames, seed)
        clock.now += 86_400  # the next day, past 00:30: yesterday's seed is out
        board = await bo.leaderboard("rainbow-canfield", date="2026-11-30")
    assert board["seed"] == seed
    assert board["nonce"] == daily_nonce(server.node.secret, "2026-11-30", "rainbow-canfield")
    assert board["commitment"] == commitment(seed, board["nonce"])
    # Anyone can now replay a ranked run from its log and check it.
    logged = await server.node.backend.daily_entries("2026-11-30", "rainbow-canfield")
    game = replay("rainbow-canfield", seed, logged[0].log, undo_allowed=False)
    assert game.banked == board["top"][0]["banked"] and game.moves == board["top"][0]["moves"]


async def test_an_attempt_belongs_to_the_day_it_started(start_server: ServerFactory) -> None:
    clock = Clock(dt.datetime(2026, 11, 30, 23, 59, 59, tzinfo=dt.UTC).timestamp())
    server = await start_server(clock=clock, **AT_ONCE)
    async with account(server.url, "cy") as cy:
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
        assert yesterday["count"] == 1
        assert yesterday["seed"] is None and yesterday["commitment"]  # not before 00:30
        clock.now += 1_800  # 00:30:04: no attempt of the day can still be running
        yesterday = await cy.leaderboard("rainbow-canfield", date="2026-11-30")
    assert yesterday["seed"] == daily_seed(server.node.secret, "2026-11-30", "rainbow-canfield")


async def test_leaving_does_not_earn_a_second_ranked_try(
    server: RunningServer, make_client: ClientFactory
) -> None:
    dee = await make_client("dee")
    await dee.claim(PASSWORD)
    await dee.daily("american-canister")
    assert dee.view is not None  # the reply to daily is a snapshot of the started race
    await dee.leave()  # a leaver resigns
    again = await dee.daily("american-canister")
    assert again["settings"]["attempt"] == 2


async def test_a_dropped_player_resumes_the_attempt(
    server: RunningServer, make_client: ClientFactory
) -> None:
    eve = await make_client("eve")
    await eve.claim(PASSWORD)
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
    await fay.claim(PASSWORD)
    with pytest.raises(ServerError) as unknown:
        await fay.daily("klondike")
    assert unknown.value.code == "unknown_variant"
    with pytest.raises(ServerError) as bad_date:
        await fay.leaderboard("canfield", date="30/11/2026")
    assert bad_date.value.code == "bad_field"
    with pytest.raises(ServerError) as bad_board:
        await fay.leaderboard("canfield", board="robots")
    assert bad_board.value.code == "bad_field"


async def test_the_board_survives_a_restart(start_server: ServerFactory) -> None:
    clock = Clock(DAY)
    first = await start_server(clock=clock, **AT_ONCE)
    async with account(first.url, "gus") as gus:
        await attempt(gus, "canfield", 3)
        player, token = gus.player_id, gus.token
    await first.server.close()
    second = await start_server(clock=clock, **AT_ONCE)
    board = await http(second, f"/api/leaderboard?variant=canfield&player={player}")
    assert board["count"] == 1 and board["you"]["player_id"] == player
    history = await http(second, f"/api/history?player={player}", token)
    assert len(history["history"]) == 1


async def test_two_players_of_one_daily_share_the_deal_and_the_board(
    start_server: ServerFactory,
) -> None:
    clock = Clock(DAY)
    one = await start_server(clock=clock, **AT_ONCE)
    # On Redis another node of the same store; an embedded node has its store to itself.
    two = one if one.node.backend.in_process else await start_server(clock=clock, **AT_ONCE)
    async with account(one.url, "hal") as hal, account(two.url, "ivy") as ivy:
        await hal.daily("canfield")
        await ivy.daily("canfield")
        assert hal.view is not None and ivy.view is not None
        assert hal.view["tableau"] == ivy.view["tableau"]
        for client, moves in ((hal, 3), (ivy, 1)):
            await play_and_end(client, moves)
        board = await ivy.leaderboard("canfield")
    assert board["count"] == 2
    assert {e["player_id"] for e in board["top"]} == {hal.player_id, ivy.player_id}


async def test_a_daily_room_takes_no_rematch_and_a_new_attempt_leaves_it(
    server: RunningServer, make_client: ClientFactory
) -> None:
    jo = await make_client("jo")
    await jo.claim(PASSWORD)
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


async def test_a_daily_deal_dealt_uncertified_has_a_move_at_its_start(
    start_server: ServerFactory,
) -> None:
    # British Canister's daily is not certified (nor any game's on a node that deals the
    # daily as it comes): its deal is the first of the day's candidates with a move at its
    # start. About one of its deals in 30 has none, and such a day would end every attempt
    # as it started.
    variant = "british-canister"
    server = await start_server(**AT_ONCE)
    secret = server.node.secret

    def stuck(date: str, candidate: int) -> bool:
        seed = daily_seed(secret, date, variant, candidate)
        return new_game(variant, seed).status.value == "stuck"

    start = dt.date(2026, 1, 1)
    dates = (str(start + dt.timedelta(days=n)) for n in range(3000))
    date = next(d for d in dates if stuck(d, 0))
    first = next(k for k in range(1, 32) if not stuck(date, k))
    deal = await server.node.deals.daily(date, variant)
    assert deal.seed == daily_seed(secret, date, variant, first) and deal.par is None
    # An attempt on that day plays that deal (a node on the same store: the same secret).
    await server.server.close()
    noon = dt.datetime.fromisoformat(f"{date}T12:00:00+00:00").timestamp()
    server = await start_server(clock=Clock(noon), **AT_ONCE)
    async with account(server.url, "una") as una:
        await una.daily(variant)
        assert una.view is not None and una.view["status"] == "playing"
        assert await server.node.deals.daily(date, variant) == deal  # kept, as chosen


@pytest.mark.parametrize("text", ["20261205", "2026-W49-6", "2026-339", " 2026-12-05", "2026-12-5"])
def test_a_date_not_written_yyyy_mm_dd_is_a_bad_field(text: str) -> None:
    from solrace.protocol import ErrorCode, ProtocolError
    from solrace.server.daily import parse_date

    with pytest.raises(ProtocolError) as refused:
        parse_date(text)
    assert refused.value.code is ErrorCode.BAD_FIELD
    assert parse_date("2026-12-05") == "2026-12-05"
