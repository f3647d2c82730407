"""``solrace daily`` in the terminal and the ``solrace leaderboard`` commands."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
from contextlib import redirect_stdout
from typing import Any

import pytest
from conftest import TIMEOUT, RunningServer, ServerFactory
from daily_support import AT_ONCE, account
from test_terminal import ScriptedConsole

from solrace.cli import main
from solrace.client.terminal import daily
from solrace.engine import replay

PAST = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)


def _store_args(server: RunningServer) -> list[str]:
    if server.config.redis_url:
        return ["--redis", server.config.redis_url]
    return ["--data-dir", str(server.config.data_dir)]


async def _run(*argv: str) -> tuple[int, str]:
    """Run the command line in a thread (the server answers on this loop)."""
    out = io.StringIO()

    def call() -> int:
        with redirect_stdout(out):
            return main(list(argv))

    code = await asyncio.to_thread(call)
    return code, out.getvalue()


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """One node on which an account is ranked from the day it is made."""
    return await start_server(**AT_ONCE)


async def test_daily_in_the_terminal_ends_on_the_leaderboard(server: RunningServer) -> None:
    async with account(server.url, "tess") as tess:
        token = tess.token  # the daily deal is an account's: the terminal signs in with it
    console = ScriptedConsole()
    # Rainbow Canfield: its first draw is always a move (a Canfield deal may be stuck).
    task = asyncio.ensure_future(
        daily(server.url, console, name="tess", token=token, variant="rainbow-canfield")
    )
    # Whether a first attempt is ranked is the board's to say once it is over.
    await console.shows(r"^daily rainbow-canfield \d{4}-\d\d-\d\d, attempt 1$")
    assert not any("your account is new" in line for line in console.screen)
    await console.shows(r"moves: 1\) ")
    console.type("d")
    await console.shows(r"^played d")
    console.type("q")
    await console.shows(r"resign this race\? y/N$")  # the game goes on: q asks
    console.type("y")  # quitting resigns the attempt
    await console.shows(
        r"results of race 1 \(rainbow-canfield, daily [\d-]+, attempt 1; seed shown after"
    )
    await console.shows(r"^\s+1\. tess\s+resigned")
    await console.shows(r"^your rank: 1 of 1")
    await console.shows(r"^your attempt 1 of [\d-]+: ranked$")
    assert not any("rematch" in line.replace("no rematch", "") for line in console.screen)
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_a_new_account_is_told_before_its_attempt_that_it_will_not_rank(
    start_server: ServerFactory,
) -> None:
    server = await start_server()  # accounts rank from their second day (the default)
    async with account(server.url, "nova") as nova:
        token = nova.token
    console = ScriptedConsole()
    task = asyncio.ensure_future(
        daily(server.url, console, name="nova", token=token, variant="rainbow-canfield")
    )
    told = await console.shows(r"^your account is new: its attempts are ranked from ([\d-]+)")
    assert told[1] > dt.datetime.now(dt.UTC).date().isoformat()
    attempt = await console.shows(r"^daily rainbow-canfield")
    assert console.screen.index(told.string) < console.screen.index(attempt.string)
    console.type("q")
    await console.shows(r"resign this race\? y/N$")  # the game goes on: q asks
    console.type("y")
    assert await asyncio.wait_for(task, TIMEOUT) == 0
    # One that ranks today hears nothing of it (the test above, with accounts at once).


async def test_show_export_replay_and_remove(start_server: ServerFactory) -> None:
    server = await start_server(clock=PAST.timestamp, **AT_ONCE)
    async with account(server.url, "uma") as uma:
        room = await uma.daily("canfield")
        for _ in range(6):
            assert uma.view is not None
            if not uma.view["legal"]:
                break  # stuck: the attempt is over already
            await uma.move(uma.view["legal"][0])
        assert uma.view is not None
        if uma.view["status"] == "playing":
            await uma.resign()
        if room["state"] != "finished":  # a deal stuck from the start ends as it starts
            await uma.next_event("race_over", timeout=TIMEOUT)
        player = uma.player_id
    assert player is not None
    date = PAST.date().isoformat()

    code, shown = await _run(
        "leaderboard",
        "--url",
        server.url,
        "--date",
        date,
        "--variant",
        "canfield",
        "--player",
        player,
    )
    assert code == 0
    assert "uma" in shown and "your rank: 1 of 1" in shown
    assert "seed: " not in shown  # on the server's clock that day is still running

    code, exported = await _run(
        "leaderboard",
        "export",
        "--date",
        date,
        "--variant",
        "canfield",
        "--format",
        "csv",
        *_store_args(server),
    )
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert len(rows) == 1 and rows[0]["rank"] == "1" and rows[0]["ranked"] == "True"
    # The day is over, so the export carries the seed, and the run replays to its score.
    game = replay("canfield", int(rows[0]["seed"]), rows[0]["log"].split(), undo_allowed=False)
    assert (game.moves, game.banked) == (int(rows[0]["moves"]), int(rows[0]["banked"]))
    code, replayed = await _run(
        "replay", "canfield", "--seed", rows[0]["seed"], "--no-undo", *rows[0]["log"].split()
    )
    assert code == 0 and f"banked {rows[0]['banked']}" in replayed.lower().replace(":", "")

    # By the name the entry was played under, as the lists show it (or by the player id).
    removal = ("leaderboard", "remove", "--date", date, "--variant", "canfield", "--player", "uma")
    code, said = await _run(*removal, "--reason", "shared the deal", *_store_args(server))
    assert code == 0 and "shared the deal" in said and player in said
    code, _ = await _run(*removal, "--reason", "again", *_store_args(server))
    assert code == 1
    code, after = await _run(
        "leaderboard", "--url", server.url, "--date", date, "--variant", "canfield"
    )
    assert code == 0 and "0 ranked" in after and "uma" not in after


async def test_an_export_ranks_only_the_entries_still_on_the_board(tmp_path: Any) -> None:
    from solrace.server import EmbeddedBackend
    from solrace.server.daily import Entry

    backend = EmbeddedBackend(tmp_path)
    await backend.start()
    for player, banked in (("best", 30), ("next", 20), ("last", 10)):
        await backend.save_daily_entry(
            Entry("2026-11-20", "canfield", player, player, 1, "stuck", banked, 9, 1_000)
        )
    assert await backend.remove_daily_entry("2026-11-20", "canfield", "best", "shared the deal")
    await backend.close()
    code, exported = await _run(
        "leaderboard",
        "export",
        "--date",
        "2026-11-20",
        "--variant",
        "canfield",
        "--data-dir",
        str(tmp_path),
    )
    assert code == 0
    rows = {r["player_id"]: r for r in csv.DictReader(io.StringIO(exported))}
    assert (rows["next"]["rank"], rows["last"]["rank"]) == ("1", "2")
    assert rows["best"]["rank"] == "" and rows["best"]["ranked"] == "False"


async def test_show_ranks_a_player_given_by_name(server: RunningServer) -> None:
    """``leaderboard show --player`` takes the name the board shows (in any case) as well
    as the player id; a name that is on no entry is said so."""
    ids = {}
    for name in ("vera", "walt"):
        async with account(server.url, name) as player:
            room = await player.daily("canfield")
            assert player.view is not None
            if player.view["status"] == "playing":
                await player.resign()
            if room["state"] != "finished":
                await player.next_event("race_over", timeout=TIMEOUT)
            ids[name] = player.player_id
    show = ("leaderboard", "--url", server.url, "--variant", "canfield")
    async with asyncio.timeout(TIMEOUT):  # the results are recorded as the race ends
        while "2 ranked" not in (await _run(*show))[1]:
            await asyncio.sleep(0.1)
    by_id = await _run(*show, "--player", str(ids["walt"]))
    assert by_id[0] == 0 and "your rank: " in by_id[1], by_id
    for given in ("walt", "WALT", f"id:{ids['walt']}"):
        assert await _run(*show, "--player", given) == by_id, given
    code, shown = await _run(*show, "--player", "nobody")
    assert code == 0 and "your rank" not in shown
    assert (
        shown.splitlines()[-1] == "nobody: no ranked entry on this board (a player id, or a name)"
    )
