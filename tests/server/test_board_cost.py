"""A daily board's cost does not grow with the move logs of the entries it shows.

An attempt may last ``daily_time_limit_s`` (1800 s) at ``messages_per_second`` (30): some
54,000 moves, every one kept in its entry's log for the replays. A board shows none of
them, yet each entry it showed was copied whole, item by item, on the event loop (a tenth
of a second an entry): a public ``/api/best`` of a hundred such entries took seconds of
the node's loop, ten times a second from one address. An entry is now shown, and kept,
without a pass over its log; the boards here hold entries of a full attempt's length.
"""

from __future__ import annotations

from collections.abc import Iterator

from conftest import RunningServer
from daily_support import http_answer

from solrace.server.daily import Entry

DATE = "2026-11-20"
LONGEST_ATTEMPT = 1800 * 30
"""The moves an attempt may hold at the defaults: its time limit at the message rate."""
ENTRIES = 20


class Watched(list[str]):
    """A log that counts the passes made over it."""

    passes = 0

    def __iter__(self) -> Iterator[str]:
        Watched.passes += 1
        return super().__iter__()


async def long_attempts(server: RunningServer, board: str) -> None:
    """Entries of the longest attempts, on ``board``."""
    log = ["d"] * LONGEST_ATTEMPT
    times = list(range(LONGEST_ATTEMPT))
    for n in range(ENTRIES):
        await server.node.backend.save_daily_entry(
            Entry(
                DATE,
                "canfield",
                f"{n:016x}",
                f"bot{n}",
                1,
                "out_of_time",
                1 + n,
                LONGEST_ATTEMPT,
                1_800_000,
                log,
                times,
                board=board,
            )
        )


def test_an_entry_is_shown_and_kept_without_a_pass_over_its_log() -> None:
    log = Watched(["d"] * LONGEST_ATTEMPT)
    entry = Entry(DATE, "canfield", "ab" * 8, "ann", 1, "won", 52, 3, 9_000, log)
    Watched.passes = 0
    shown = entry.public(rank=1)
    kept = entry.to_dict()
    assert Watched.passes == 0, "the log was copied (dataclasses.asdict goes over it)"
    assert "log" not in shown and shown["rank"] == 1 and kept["log"] is log


async def test_the_best_board_of_long_attempts_shows_no_log(server: RunningServer) -> None:
    await long_attempts(server, "bots")
    status, _, body = await http_answer(
        server, f"/api/best?variant=canfield&board=bots&limit={ENTRIES}"
    )
    assert status == 200, body
    assert len(body["best"]) == ENTRIES
    assert all("log" not in e and "times" not in e for e in body["best"])


async def test_a_day_board_of_long_attempts_shows_no_log(server: RunningServer) -> None:
    await long_attempts(server, "people")
    path = f"/api/leaderboard?variant=canfield&date={DATE}&limit={ENTRIES}"
    status, _, body = await http_answer(server, path)
    assert status == 200, body
    assert [e["rank"] for e in body["top"]] == list(range(1, ENTRIES + 1))
    assert all("log" not in e and "times" not in e for e in body["top"])


async def test_an_entry_kept_and_read_back_keeps_its_log(server: RunningServer) -> None:
    entry = Entry(DATE, "canfield", "ab" * 8, "ann", 1, "won", 52, 3, 9_000, ["d", "rd", "d"])
    entry = Entry.from_dict({**entry.to_dict(), "times": [1, 2, 3]})
    await server.node.backend.save_daily_entry(entry)
    (kept,) = await server.node.backend.daily_entries(DATE, "canfield")
    assert kept.log == ["d", "rd", "d"] and kept.times == [1, 2, 3]
    assert kept.public() == {k: v for k, v in kept.to_dict().items() if k not in ("log", "times")}
