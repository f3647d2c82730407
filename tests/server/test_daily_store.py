"""The daily boards in the store, on both backends: the people's and the bots' boards,
flagged entries waiting for review, unranked entries, and the rooms that hold a day's
seed back while an attempt of the day still runs."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from test_backends import open_backend

from solrace.server import Backend, EmbeddedBackend
from solrace.server import room as rooms
from solrace.server.daily import Entry
from solrace.server.leaderboard import day_board, seed_revealed
from solrace.server.room import Room, Settings

DATE = "2026-11-30"
END_MS = int(dt.datetime(2026, 12, 1, tzinfo=dt.UTC).timestamp() * 1000)
LIMIT_S = 1800


@pytest.fixture
async def backend(
    backend_kind: str, redis_url: str | None, tmp_path: Path
) -> AsyncIterator[Backend]:
    """A started backend of each kind."""
    started = open_backend(backend_kind, redis_url, tmp_path)
    await started.start()
    yield started
    await started.close()


def entry(player: str, banked: int, reached: int, **fields: object) -> Entry:
    """A stuck attempt of the day at Canfield, ``banked`` cards reached at ``reached`` ms."""
    made = Entry(DATE, "canfield", player, player, 1, "stuck", banked, 40, 600_000)
    data = {**made.to_dict(), "reached_ms": reached, **fields}
    return Entry.from_dict(data)


async def test_people_and_bots_have_boards_of_their_own(backend: Backend) -> None:
    await backend.save_daily_entry(entry("ann", 20, 5_000))
    await backend.save_daily_entry(entry("bot1", 30, 1_000, board="bots"))
    await backend.save_daily_entry(entry("bot2", 25, 1_000, board="bots"))
    assert await backend.daily_count(DATE, "canfield") == 1
    assert [e.player_id for e in await backend.daily_top(DATE, "canfield", 0, 10)] == ["ann"]
    bots = await backend.daily_top(DATE, "canfield", 0, 10, "bots")
    assert [e.player_id for e in bots] == ["bot1", "bot2"]
    assert await backend.daily_count(DATE, "canfield", "bots") == 2
    assert await backend.daily_index(DATE, "canfield", "bot2", "bots") == 1
    assert await backend.daily_index(DATE, "canfield", "bot2") is None
    assert [e.player_id for e in await backend.best_entries("canfield", 10)] == ["ann"]
    best_bots = await backend.best_entries("canfield", 10, "bots")
    assert [e.player_id for e in best_bots] == ["bot1", "bot2"]
    board = await day_board(
        backend, b"s" * 32, "canfield", DATE, now_ms=END_MS, time_limit_s=LIMIT_S, board="bots"
    )
    assert board["board"] == "bots" and board["count"] == 2
    assert len(await backend.daily_entries(DATE, "canfield")) == 3


async def test_boards_and_histories_are_read_without_the_move_logs(backend: Backend) -> None:
    """A board's page, the all-time best and a player's history are read for every look at
    them; a 10,000-move log in each of their entries made each look parse them all. They
    come without logs; one attempt, read whole, has its log (a replay, a ghost)."""
    log = ["d", "u"] * 5_000
    long = entry("ann", 20, 5_000, log=log, times=list(range(len(log))), moves=len(log))
    await backend.save_daily_entry(long)
    await backend.keep_daily_entry(DATE, "canfield", "ann", "kept")  # not flagged: no-op
    for read in (
        await backend.daily_top(DATE, "canfield", 0, 10),
        await backend.best_entries("canfield", 10),
        await backend.player_history("ann"),
    ):
        (got,) = read
        assert (got.player_id, got.moves, got.log, got.times) == ("ann", len(log), [], [])
        assert got.score == long.score
    whole = await backend.daily_entry(DATE, "canfield", "ann", 1)
    assert whole is not None and whole.log == log and whole.times == long.times
    assert await backend.daily_entry(DATE, "canfield", "ann", 2) is None


async def test_the_ranks_follow_when_each_count_was_first_reached(backend: Backend) -> None:
    # More cards first; for as many, the one that got there first, however late it ended.
    await backend.save_daily_entry(entry("quick-quit", 12, 9_000))
    await backend.save_daily_entry(entry("played-on", 12, 4_000))
    await backend.save_daily_entry(entry("more", 13, 900_000))
    top = await backend.daily_top(DATE, "canfield", 0, 10)
    assert [e.player_id for e in top] == ["more", "played-on", "quick-quit"]


async def test_an_entry_is_given_back_as_kept_with_its_address_verdict(backend: Backend) -> None:
    # The verdict of the address rules, kept as the attempt started, is in the entry the
    # store gives back (what the node logs as daily_recorded), not only in the one it reads.
    await backend.keep_daily_verdict(DATE, "canfield", "cid", "address_limit", None)
    await backend.keep_daily_verdict(DATE, "canfield", "dee", None, "address:2")
    unranked = await backend.save_daily_entry(entry("cid", 20, 5_000))
    flagged = await backend.save_daily_entry(entry("dee", 21, 5_000))
    plain = await backend.save_daily_entry(entry("eve", 22, 5_000))
    assert (unranked.unranked, unranked.ranked) == ("address_limit", False)
    assert (flagged.flag, flagged.held) == ("address:2", True)
    assert (plain.unranked, plain.flag, plain.ranked) == (None, None, True)
    assert [e.player_id for e in await backend.daily_top(DATE, "canfield", 0, 10)] == ["eve"]


async def test_a_flagged_entry_waits_off_the_board_until_kept_or_removed(
    backend: Backend,
) -> None:
    await backend.save_daily_entry(entry("ann", 20, 5_000))
    await backend.save_daily_entry(entry("fast", 30, 1_000, flag="pace: 80 ms"))
    await backend.save_daily_entry(entry("faster", 31, 900, flag="pace: 60 ms"))
    assert [e.player_id for e in await backend.daily_top(DATE, "canfield", 0, 10)] == ["ann"]
    assert await backend.daily_count(DATE, "canfield") == 1
    assert [e.player_id for e in await backend.best_entries("canfield", 10)] == ["ann"]
    flagged = await backend.daily_flagged()
    assert [(e.player_id, e.flag) for e in flagged] == [
        ("faster", "pace: 60 ms"),
        ("fast", "pace: 80 ms"),
    ]

    kept = await backend.keep_daily_entry(DATE, "canfield", "fast", "watched the replay")
    assert kept is not None and kept.kept == "watched the replay" and kept.flag
    top = await backend.daily_top(DATE, "canfield", 0, 10)
    assert [(e.player_id, e.kept) for e in top] == [("fast", "watched the replay"), ("ann", None)]
    assert [e.player_id for e in await backend.best_entries("canfield", 10)] == ["fast", "ann"]
    assert [e.player_id for e in await backend.daily_flagged()] == ["faster"]
    assert await backend.keep_daily_entry(DATE, "canfield", "fast", "again") is None
    assert await backend.keep_daily_entry(DATE, "canfield", "ann", "not flagged") is None
    history = await backend.player_history("fast")
    assert [h.kept for h in history] == ["watched the replay"]

    assert await backend.remove_daily_entry(DATE, "canfield", "faster", "a bot, undeclared")
    assert await backend.daily_flagged() == []
    assert await backend.keep_daily_entry(DATE, "canfield", "faster", "too late") is None
    assert await backend.daily_count(DATE, "canfield") == 2
    assert not await backend.remove_daily_entry(DATE, "canfield", "faster", "twice")


async def test_an_unranked_entry_is_kept_but_holds_no_place(backend: Backend) -> None:
    await backend.save_daily_entry(entry("new", 40, 1_000, unranked="new_account"))
    later = Entry(DATE, "canfield", "ann", "ann", 2, "won", 52, 90, 60_000)
    await backend.save_daily_entry(entry("ann", 10, 1_000))
    await backend.save_daily_entry(later)
    assert [e.player_id for e in await backend.daily_top(DATE, "canfield", 0, 10)] == ["ann"]
    assert await backend.daily_flagged() == []
    every = await backend.daily_entries(DATE, "canfield")
    assert {(e.player_id, e.attempt, e.ranked, e.unranked) for e in every} == {
        ("ann", 1, True, None),
        ("ann", 2, False, None),
        ("new", 1, False, "new_account"),
    }
    assert every[0].player_id == "ann"  # the board's first
    assert not await backend.remove_daily_entry(DATE, "canfield", "new", "not ranked")


async def _racing(backend: Backend, code: str, started_ms: int) -> Room:
    """A daily attempt's room of ``DATE``, its race running from ``started_ms``."""
    settings = Settings("canfield", max_players=1, undo=False, countdown=0, daily=DATE, attempt=1)
    room = rooms.create(code, settings, "ann", "ann").room
    assert room is not None and await backend.create_room(room)
    await backend.add_daily_room(DATE, "canfield", code)
    started = await backend.update_room(code, lambda r: rooms.start(r, "ann", started_ms, 5))
    assert started.room is not None
    return started.room


async def test_a_running_attempt_holds_the_days_seed_back(backend: Backend) -> None:
    late = await _racing(backend, "LATE2345", END_MS - 30_000)  # 23:59:30
    gone = await _racing(backend, "GONE2345", END_MS - 60_000)

    async def revealed(now_ms: int) -> bool:
        return await seed_revealed(backend, DATE, "canfield", now_ms=now_ms, time_limit_s=LIMIT_S)

    assert not await revealed(END_MS + 5_000)  # 00:00:05
    # An operator closed one room: its race ends unrecorded, and it holds nothing back.
    await backend.update_room(gone.code, lambda r: rooms.close(r, "closed"))
    # The other still runs past 00:30 (its clock stopped while the node was down).
    assert not await revealed(END_MS + LIMIT_S * 1000 + 60_000)
    assert await backend.daily_rooms(DATE, "canfield") == [late.code]  # the closed one tidied
    await backend.update_room(
        late.code, lambda r: rooms.progress(r, "ann", now_ms=END_MS + 2_000_000, status="resigned")
    )
    assert await revealed(END_MS + LIMIT_S * 1000 + 60_000)
    assert await backend.daily_rooms(DATE, "canfield") == []
    assert not await revealed(END_MS + LIMIT_S * 1000 - 1)  # never before the published time


async def test_an_older_data_directory_keeps_its_daily_entries(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    db = sqlite3.connect(folder / "solrace.sqlite3")
    db.executescript(
        """
        CREATE TABLE daily_entries (
            date TEXT NOT NULL, variant TEXT NOT NULL, player_id TEXT NOT NULL,
            attempt INTEGER NOT NULL, ranked INTEGER NOT NULL,
            removed INTEGER NOT NULL DEFAULT 0, score REAL NOT NULL, data TEXT NOT NULL,
            PRIMARY KEY (date, variant, player_id, attempt)
        );
        """
    )
    old = Entry(DATE, "canfield", "ann", "ann", 1, "stuck", 20, 40, 600_000)
    data = {k: v for k, v in old.to_dict().items() if k in ("date", "variant", "player_id")}
    data.update(name="ann", attempt=1, status="stuck", banked=20, moves=40, time_ms=600_000)
    db.execute(
        "INSERT INTO daily_entries VALUES (?, ?, ?, 1, 1, 0, ?, ?)",
        (DATE, "canfield", "ann", old.score, json.dumps(data)),
    )
    db.commit()
    db.close()
    backend = EmbeddedBackend(folder)
    await backend.start()
    try:
        top = await backend.daily_top(DATE, "canfield", 0, 10)
        assert [(e.player_id, e.board, e.reached) for e in top] == [("ann", "people", 600_000)]
        await backend.save_daily_entry(entry("bob", 21, 1_000))
        assert await backend.daily_count(DATE, "canfield") == 2
    finally:
        await backend.close()
