"""Both terminal clients through an outage, against a real server: the line client says
the connection is lost, sends nothing meanwhile and has no clock of its own until the
server's comes back; a member whose connection dropped reads as offline with its seat
kept, in both; and the full-screen client ends with the line client's words (taken over
by another window, or a server gone while the seat is kept)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from terminal_support import joined, quit_resigning, start_play
from test_terminal import ScriptedConsole
from test_tui import SIZE, Relay, exits, shows, type_line

from solrace.client import Client
from solrace.client.connection import SERVER_RESUME_GRACE_S
from solrace.client.logins import GuestHold, store_guest
from solrace.client.terminal import (
    CLOCK_OFFLINE,
    CONNECTION_LOST,
    NOT_SENT_OFFLINE,
    OFFLINE_TAG,
)
from solrace.client.tui import RaceApp

sys.path.append(str(Path(__file__).resolve().parents[1] / "server"))
from e2e_support import FAST, deal_seed, winning_deal

FIRST = {"countdown": 0, "finish": "first", "finish_grace": 30, "winnable": False}


async def _away_with_a_rival(
    server: RunningServer, make_client: ClientFactory, **settings: Any
) -> tuple[ScriptedConsole, Relay, asyncio.Future[int], Client]:
    """The line client hosts a room of ``FIRST`` (and ``settings``) as "away", through a
    relay to cut, and a rival joins it: the console, the relay, the run and the rival."""
    relay = Relay(server.server.port)
    await relay.restore()
    console = ScriptedConsole()
    task = start_play(
        relay.url, console, name="away", settings={**FIRST, **settings}, resume_timeout=4 * TIMEOUT
    )
    (rival,) = await joined(console, make_client, "away", "rival")
    return console, relay, task, rival


@pytest.fixture
def backend_kind() -> str:
    """The terminal clients do not depend on the backend: the embedded one serves them."""
    return "embedded"


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets a rival play a whole game at full speed."""
    return await start_server(limits=FAST)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The config folder of this test's runs (kept guests and their locks)."""
    folder = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


async def test_the_line_client_waits_for_the_server_s_clock_in_an_outage(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the connection is down the line client says so, sends nothing and has no
    clock; back, the clock is the server's, which moved on meanwhile (a rival's first win
    brought the race's end forward)."""
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    console, relay, task, rival = await _away_with_a_rival(server, make_client)
    console.type("start")
    await console.shows(r"^race 1 started: canfield; time left 15:00$")
    await rival.next_event("race_started", timeout=TIMEOUT)
    console.type("time")
    await console.shows(r"^time left 1[45]:\d\d$")

    await relay.cut()
    assert (await console.shows(r"^connection lost: reconnecting…")).string == CONNECTION_LOST
    shown = len(console.screen)
    console.type("time")
    assert (await console.shows(r"^time left: ", since=shown)).string == CLOCK_OFFLINE
    console.type("d")
    assert (await console.shows(r"^offline: ", since=shown)).string == NOT_SENT_OFFLINE
    for move in line:  # the rival wins meanwhile: the race ends 30 s from now
        await rival.move(move)
    await asyncio.sleep(0.3)
    assert not any(line.startswith("played") for line in console.screen[shown:])

    await relay.restore()
    await console.shows(
        r"^connection restored, the race goes on; time left 0:[0-3]\d \(first to finish\)$"
    )
    shown = len(console.screen)
    console.type("time")
    await console.shows(r"^time left 0:[0-3]\d \(first to finish\)$", since=shown)
    console.type("d")  # back: moves go again
    await console.shows(r"^played d$", since=shown)
    await quit_resigning(console, task, since=shown)


async def test_a_race_that_ended_during_an_outage_shows_its_results_once_back(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    # The first win ends the race.
    console, relay, task, rival = await _away_with_a_rival(server, make_client, finish_grace=0)
    console.type("start")
    await rival.next_event("race_started", timeout=TIMEOUT)
    await relay.cut()
    await console.shows(r"^connection lost: reconnecting…")
    for move in line:
        await rival.move(move)
    await rival.next_event("race_over", timeout=TIMEOUT)
    await relay.restore()
    restored = await console.shows(r"^connection restored")
    assert restored.string == "connection restored"  # no race goes on
    await console.shows(rf"^results of race 1 \(canfield, seed {seed}\):$")
    await console.shows(r"^\s+1\. rival\s+won")
    console.type("time")
    await console.shows(r"^no race is running$")
    console.type("q")  # the race is over: q quits at once
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_a_race_that_started_during_an_outage_is_played_once_back(
    server: RunningServer, make_client: ClientFactory
) -> None:
    relay = Relay(server.server.port)
    await relay.restore()
    host = await make_client("host")
    code = (await host.create_room("canfield", countdown=0, winnable=False))["code"]
    console = ScriptedConsole()
    task = start_play(relay.url, console, name="away", join=code, resume_timeout=4 * TIMEOUT)
    await console.shows(r"^room \w+ \(canfield\); you are away$")
    await relay.cut()
    await console.shows(r"^connection lost: reconnecting…")
    await host.start()  # its race_started never reaches the one away
    await relay.restore()
    await console.shows(r"^connection restored$")
    await console.shows(r"^back in race 1: your game goes on where it was$")
    await console.shows(r"^time left 1[45]:\d\d$")
    console.type("d")
    await console.shows(r"^played d$")
    await quit_resigning(console, task)


async def test_a_member_offline_reads_so_with_its_seat_kept_then_back(
    server: RunningServer,
) -> None:
    """A member whose connection dropped (``connected: false``) is shown offline, its
    seat kept for the server's resume grace; back, the list is as before."""
    console = ScriptedConsole()
    task = start_play(server.url, console, name="stays")
    code = (await console.shows(r"^room (\w+) "))[1]
    rival = Client(server.url, name="rival", resume=False, request_timeout=TIMEOUT)
    await rival.connect()
    await rival.join(code)
    await console.shows(r"^in the room: stays \(host\), rival$")
    token = rival.token
    await rival.drop()  # no resume: the server marks the member offline
    line = (await console.shows(r"^in the room: stays \(host\), rival \(offline")).string
    assert line == (
        f"in the room: stays (host), rival (offline: seat kept up to {SERVER_RESUME_GRACE_S:g} s)"
    )
    await rival.close()
    shown = len(console.screen)
    async with Client(server.url, token=token, request_timeout=TIMEOUT):
        await console.shows(r"^in the room: stays \(host\), rival$", since=shown)
    console.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_the_full_screen_client_says_offline_and_nothing_sent_alike(
    server: RunningServer,
) -> None:
    """The full-screen client's own outage reads as the line client's (nothing typed is
    sent, and nothing waits to be), and a member offline has its seat kept."""
    relay = Relay(server.server.port)
    await relay.restore()
    app = RaceApp(relay.url, name="tui", request_timeout=TIMEOUT, resume_timeout=4 * TIMEOUT)
    async with app.run_test(size=SIZE) as pilot:
        code = (await shows(pilot, "#title", r"room (\w{8})"))[1]
        rival = Client(server.url, name="rival", resume=False, request_timeout=TIMEOUT)
        await rival.connect()
        await rival.join(code)
        await shows(pilot, "#room", r"^  rival$")
        await rival.drop()
        await shows(pilot, "#room", rf"^  rival \({OFFLINE_TAG}\)$")
        await rival.close()

        await relay.cut()
        status = (await shows(pilot, "#status", r"^Connection lost: .*$"))[0]
        assert (
            status == "Connection lost: reconnecting… (nothing you type is sent until it is back)."
        )
        await type_line(pilot, "ready")
        await shows(pilot, "log", r"Offline: reconnecting to the server; nothing was sent\.")
        assert "wait" not in status
        await relay.restore()
        await shows(pilot, "log", r"Connection restored\.")
        await type_line(pilot, "q")
        assert await exits(pilot) == 0


async def test_the_full_screen_client_taken_over_says_so_as_the_line_client_does(
    server: RunningServer,
) -> None:
    app = RaceApp(server.url, name="Quinn", request_timeout=TIMEOUT)
    async with app.run_test(size=SIZE) as pilot:
        await shows(pilot, "#title", r"room \w{8}")
        # Another window goes as the same player: the server closes this one with 4001.
        async with Client(server.url, token=app.client.token, request_timeout=TIMEOUT):
            assert await exits(pilot) == 1
    assert app.farewell == [
        "This player connected elsewhere (another window or device took over); this one stops."
    ]


async def test_the_full_screen_client_given_up_mid_race_tells_of_the_kept_seat(
    start_server: ServerFactory,
) -> None:
    gone = await start_server()
    app = RaceApp(
        gone.url,
        name="quinn",
        settings={"countdown": 0},
        resume_timeout=0.5,
        request_timeout=TIMEOUT,
    )
    async with app.run_test(size=SIZE) as pilot:
        code = (await shows(pilot, "#title", r"room (\w{8})"))[1]
        async with Client(gone.url, name="rival", request_timeout=TIMEOUT) as rival:
            await rival.join(code)
            await shows(pilot, "#room", r"^  rival$")
            await type_line(pilot, "start")
            await shows(pilot, "#clock", r"^Time left ")
        await gone.server.close()
        assert await exits(pilot) == 1
    assert app.farewell == [
        "The server is gone: it did not come back within 0.5 s (the command ends); a server "
        f"that comes back keeps your seat in the race for {SERVER_RESUME_GRACE_S:g} s more: "
        "run solrace play again to return to it."
    ]


async def test_the_full_screen_client_says_when_another_run_holds_the_guest(
    server: RunningServer, home: Path
) -> None:
    store_guest(server.url, "Quinn", "kept-token")
    hold = GuestHold(server.url, "Quinn")
    assert hold.take()  # another run on this machine goes as the kept Quinn
    try:
        app = RaceApp(server.url, name="Quinn", request_timeout=TIMEOUT, keep_guest=True)
        async with app.run_test(size=SIZE) as pilot:
            await shows(
                pilot,
                "log",
                r"Another run on this machine plays as Quinn on this server: this one is a "
                r"new guest of that name",
            )
            await type_line(pilot, "q")
            assert await exits(pilot) == 0
    finally:
        hold.release()
