"""The terminal shows everyone in a room its spectator setting, and its host changes it."""

from __future__ import annotations

import asyncio
import io
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer
from test_terminal import ScriptedConsole

from solrace.cli import main
from solrace.client.terminal import play, watch


async def test_host_and_player_see_the_setting_and_the_host_changes_it(
    server: RunningServer,
) -> None:
    host, guest = ScriptedConsole(), ScriptedConsole()
    hosting = asyncio.ensure_future(
        play(
            server.url,
            host,
            name="host",
            settings={"countdown": 0, "spectators": "delayed", "spectator_delay": 20},
        )
    )
    code = (await host.shows(r"^room (\w+) \(canfield\)"))[1]
    await host.shows(r"^spectators: delayed \(they see the boards 20 s late\)")
    await host.shows(r"'spectators after'")  # the host is told how to change it
    joining = asyncio.ensure_future(play(server.url, guest, name="guest", join=code))
    await guest.shows(r"^spectators: delayed \(they see the boards 20 s late\)")
    host.type("spectators after")
    for console in (host, guest):
        await console.shows(r"^spectators: after \(progress only; the boards once the race")
    guest.type("spectators live")
    await guest.shows(r"^Refused: Only the host .*\[not_host\]$")
    host.type("spectators sometimes")
    await host.shows(r"^Refused: .*\[bad_settings\]$")
    host.type("spectators delayed soon")
    await host.shows(r"^the host sets who may watch")
    for console in (host, guest):
        console.type("q")
    assert await asyncio.wait_for(hosting, TIMEOUT) == 0
    assert await asyncio.wait_for(joining, TIMEOUT) == 0


async def test_watching_an_after_room_shows_boards_only_with_the_results(
    server: RunningServer, make_client: ClientFactory
) -> None:
    host = await make_client("host")
    room = await host.create_room("canfield", countdown=0)
    console = ScriptedConsole()
    task = asyncio.ensure_future(watch(server.url, room["code"], console))
    await console.shows(r"^spectators: after \(progress only")
    await host.start()
    await console.shows(r"^the boards are shown once the race is over")
    await host.next_event("race_started", timeout=TIMEOUT)
    await host.move("d")
    await console.shows(r"host \[.*\]\s+\d+/52\s+moves\s+1\s+playing")
    assert not any(line.startswith("--- ") for line in console.screen)
    await host.resign()
    await console.shows(r"^--- host \(final\)")
    await console.shows(r"results of race 1 \(canfield, seed \d+\)")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_a_watcher_is_told_when_the_host_turns_spectators_off(
    server: RunningServer, make_client: ClientFactory
) -> None:
    host = await make_client("host")
    room = await host.create_room("canfield", spectators="live")
    console = ScriptedConsole()
    task = asyncio.ensure_future(watch(server.url, room["code"], console))
    await console.shows(r"^spectators: live")
    await host.next_event("members", timeout=TIMEOUT)  # the watcher is in
    await host.set_settings("off")
    await console.shows(r"^you are out of the room: the host turned spectators off")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_solrace_play_takes_the_spectator_setting(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no login of this machine's
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    out = io.StringIO()
    argv = ["play", server.url, "--name", "cli", "--no-color"]
    argv += ["--spectators", "delayed", "--spectator-delay", "45"]

    def call() -> int:
        with redirect_stdout(out):
            return main(argv)

    assert await asyncio.to_thread(call) == 0
    assert "spectators: delayed (they see the boards 45 s late)" in out.getvalue()
