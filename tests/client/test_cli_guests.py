"""The guests the command line keeps (guests.json) against a real server: one run at a
time goes as a kept guest, a spectator keeps none, a run taken over says so, a guest
racing in one room is not silently taken out of it, a client waits for the server as long
as the server keeps its seat, and ``race export`` sends the guest ``play`` kept."""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import os
import re
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from conftest import PLAIN_DEALS, TIMEOUT, ClientFactory, RunningServer
from terminal_support import as_kept_quinn, dies_after_a_move, guest_racing, quit_resigning
from test_terminal import ScriptedConsole
from test_terminal_fixes import Restartable

from solrace.cli import build_parser, main
from solrace.client import Client
from solrace.client.cli import build_app
from solrace.client.connection import RESUME_TIMEOUT_S, SERVER_RESUME_GRACE_S
from solrace.client.logins import (
    MAX_GUESTS,
    GuestHold,
    store_guest,
    stored_guest,
    stored_guests,
)
from solrace.client.terminal import daily, play, watch
from solrace.server import ServerConfig


@pytest.fixture
def backend_kind() -> str:
    """The command line does not depend on the backend: the embedded one serves it."""
    return "embedded"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The config folder of this test's runs (in this process and the ones it starts)."""
    folder = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Run:
    """``solrace ARGS`` running as its own process: its output lines as they come."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            self.lines.append(raw.decode().rstrip("\n"))

    async def shows(self, pattern: str) -> re.Match[str]:
        async with asyncio.timeout(2 * TIMEOUT):
            while True:
                for line in self.lines:
                    match = re.search(pattern, line)
                    if match:
                        return match
                await asyncio.sleep(0.02)

    def type(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{line}\n".encode())

    async def exit_code(self) -> int:
        code = await asyncio.wait_for(self.process.wait(), 2 * TIMEOUT)
        await self._reader
        return code

    def stop(self) -> None:
        if self.process.returncode is None:
            self.process.kill()


Spawn = Callable[..., Awaitable[Run]]


@pytest.fixture
async def spawn(home: Path) -> AsyncIterator[Spawn]:
    runs: list[Run] = []

    async def start(*args: str) -> Run:
        env = {**os.environ, "XDG_CONFIG_HOME": str(home), "NO_COLOR": "1"}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "solrace",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
        )
        runs.append(Run(process))
        return runs[-1]

    yield start
    for run in runs:
        run.stop()
        await run.process.wait()


async def _spectators(host: Client, count: int) -> None:
    async with asyncio.timeout(2 * TIMEOUT):
        while True:
            room = await host.sync()
            if sum(m["role"] == "spectator" for m in room["members"]) == count:
                return
            await asyncio.sleep(0.05)


async def test_two_watches_at_once_both_watch_to_the_end(
    server: RunningServer, make_client: ClientFactory, home: Path, spawn: Spawn
) -> None:
    """Two ``solrace watch`` of the same room (the default name "spectator"): neither
    takes the other's connection over, and neither keeps a guest to resume."""
    host = await make_client("host")
    room = await host.create_room("canfield", countdown=0, spectators="live", winnable=False)
    code = room["code"]
    first = await spawn("watch", "--plain", server.url, code)
    await first.shows(rf"^watching room {code} ")
    await _spectators(host, 1)
    second = await spawn("watch", "--plain", server.url, code)
    await second.shows(rf"^watching room {code} ")
    await _spectators(host, 2)  # both in the room: the second took nothing over
    await host.start()
    await host.next_event("race_started", timeout=TIMEOUT)
    await host.resign()
    for run in (first, second):
        await run.shows(r"^results of race 1 ")
        assert await run.exit_code() == 0, run.lines
        assert not any("elsewhere" in line or "gone" in line for line in run.lines), run.lines
    assert not (home / "solrace" / "guests.json").exists()


async def test_two_plays_as_one_guest_at_once_do_not_take_each_other_over(
    server: RunningServer, make_client: ClientFactory, home: Path, spawn: Spawn
) -> None:
    """The second ``solrace play --name Quinn`` while the first still runs goes as a new
    guest, says so, and keeps nothing; once the first is over, a run holds the guest."""
    first = await spawn("play", "--plain", server.url, "--name", "Quinn")
    one = (await first.shows(r"^room (\w+) \(canfield\); you are Quinn"))[1]
    kept = stored_guest(server.url, "Quinn")
    assert kept is not None
    second = await spawn("play", "--plain", server.url, "--name", "Quinn")
    await second.shows(r"^another run on this machine plays as Quinn on this server")
    two = (await second.shows(r"^room (\w+) \(canfield\); you are Quinn"))[1]
    assert two != one
    assert stored_guest(server.url, "Quinn") == kept  # the first's, still
    # The first is still connected, and still the kept guest's run.
    first.type("?")
    await first.shows(r"^no race is running: no moves to list$")
    assert not GuestHold(server.url, "Quinn").take()
    async with Client(server.url, name="Host", request_timeout=TIMEOUT) as watcher:
        assert (await watcher.join(one, "spectator"))["code"] == one
        names = [m["name"] for m in (await watcher.sync())["members"]]
        assert "Quinn" in names
    for run in (first, second):
        run.type("q")
        assert await run.exit_code() == 0, run.lines
        assert not any("elsewhere" in line or "gone" in line for line in run.lines), run.lines
    hold = GuestHold(server.url, "Quinn")
    assert hold.take()  # both are over: the guest is free for the next run
    hold.release()


async def test_a_run_taken_over_says_so_rather_than_that_the_server_is_gone(
    server: RunningServer, home: Path
) -> None:
    console = ScriptedConsole()
    task = as_kept_quinn(server.url, console)
    await console.shows(r"^room \w+ \(canfield\); you are Quinn")
    token = stored_guest(server.url, "Quinn")
    assert token is not None
    # Another device goes as the same player: the server closes this one with 4001.
    async with Client(server.url, token=token, request_timeout=TIMEOUT):
        assert await asyncio.wait_for(task, TIMEOUT) == 1
    line = (await console.shows(r"connected elsewhere")).string
    assert line == (
        "this player connected elsewhere (another window or device took over); this one stops"
    )
    assert not any("server is gone" in line for line in console.screen)


async def test_joining_another_room_while_racing_is_refused_not_a_silent_leave(
    server: RunningServer, make_client: ClientFactory, home: Path
) -> None:
    host = await make_client("Host")
    console = ScriptedConsole()
    code, first = await guest_racing(server.url, host, console)
    await dies_after_a_move(console, first)  # the server keeps the seat

    other = await make_client("Other")
    elsewhere = (await other.create_room("canfield", countdown=0))["code"]
    again = ScriptedConsole()
    assert (
        await asyncio.wait_for(
            play(server.url, again, name="Quinn", join=elsewhere, keep_guest=True), TIMEOUT
        )
        == 1
    )
    line = (await again.shows(rf"you are racing in room {code} \(race 1\)")).string
    assert line.endswith("[still_racing]"), line
    assert "without --join" in line and "'resign'" in line, line
    # Still in the race, its game going on, and not in the other room.
    room = await host.sync()
    quinn = next(p for p in room["players"] if p["name"] == "Quinn")
    assert (quinn["status"], quinn["moves"]) == ("playing", 1)
    assert "Quinn" not in [m["name"] for m in (await other.sync())["members"]]

    # The way back the refusal gives: solrace play, without --join.
    back = ScriptedConsole()
    task = as_kept_quinn(server.url, back)
    await back.shows(r"^back in race 1: your game goes on where it was")
    await quit_resigning(back, task)  # the game goes on: q asks


def test_the_full_screen_watch_keeps_no_guest_and_play_holds_its_own(home: Path) -> None:
    """The full-screen client's identity, as ``solrace watch`` and ``play`` build it: a
    watch sends no kept guest (the file holds one for its name), a play sends the kept
    guest only while no other run holds it, and lets go of it when closed."""
    url = "ws://127.0.0.1:9/"
    store_guest(url, "spectator", "kept-token")
    store_guest(url, "Quinn", "quinn-token")
    watcher = build_app(build_parser().parse_args(["watch", url, "ABCD2345"]))
    assert watcher.client.token is None and watcher.client.on_welcome is None
    player = build_app(build_parser().parse_args(["play", url, "--name", "Quinn"]))
    assert player.client.token == "quinn-token"
    second = build_app(build_parser().parse_args(["play", url, "--name", "Quinn"]))
    assert second.client.token is None  # the first holds the guest
    asyncio.run(player.client.close())
    third = build_app(build_parser().parse_args(["play", url, "--name", "Quinn"]))
    assert third.client.token == "quinn-token"
    asyncio.run(third.client.close())
    asyncio.run(second.client.close())


def test_the_guests_kept_beyond_the_most_drop_the_one_used_longest_ago(home: Path) -> None:
    """guests.json is written with its keys sorted: which guest goes must not follow the
    names' order but their use (each kept with when it was last used)."""
    url = "ws://127.0.0.1:9/"
    names = [f"guest{i:02d}" for i in range(MAX_GUESTS)]
    for used, name in enumerate(names):  # in the names' order: guest00 used longest ago
        store_guest(url, name, f"token-{name}", now=1000.0 + used)
    store_guest(url, "guest00", "token-guest00", now=2000.0)  # used again: the newest now
    store_guest(url, "aaron", "token-aaron", now=2001.0)  # one too many: one goes
    kept = stored_guests(url)
    assert len(kept) == MAX_GUESTS
    assert "guest01" not in kept  # the one used longest ago
    assert kept["guest00"] == "token-guest00" and kept["aaron"] == "token-aaron"
    # As a run keeps it (the time now): the one used longest ago goes again.
    store_guest(url, "zoe", "token-zoe")
    assert "guest02" not in stored_guests(url) and "aaron" in stored_guests(url)

    # A file of an older client ({name: token}) is read, its guests as used longest ago.
    path = home / "solrace" / "guests.json"
    everyone = json.loads(path.read_text())
    old = "ws://old.example:8765/"
    everyone[old] = {name: f"old-{name}" for name in names}
    path.write_text(json.dumps(everyone))
    assert stored_guest(old, "guest05") == "old-guest05"
    store_guest(old, "guest31", "new-guest31")  # used now: it stays, a never-timed one goes
    store_guest(old, "aaron", "new-aaron")
    kept = stored_guests(old)
    assert len(kept) == MAX_GUESTS
    assert kept["guest31"] == "new-guest31" and kept["aaron"] == "new-aaron"
    assert "guest00" not in kept  # the first in the old file's order


def test_the_clients_wait_for_the_server_as_long_as_it_keeps_a_seat() -> None:
    grace = ServerConfig().resume_grace_s
    assert grace == SERVER_RESUME_GRACE_S
    assert grace <= RESUME_TIMEOUT_S
    for function in (Client.__init__, play, watch, daily):
        default = inspect.signature(function).parameters["resume_timeout"].default
        assert default == RESUME_TIMEOUT_S, function


async def test_a_player_given_up_on_the_server_is_told_its_seat_is_kept(
    tmp_path: Path, home: Path
) -> None:
    config = ServerConfig(
        port=free_port(), data_dir=tmp_path / "data", progress_interval_s=0.0, **PLAIN_DEALS
    )
    node = Restartable(config)
    await node.start()
    url = f"ws://127.0.0.1:{config.port}/"
    host = Client(url, name="Host", request_timeout=TIMEOUT)
    try:
        await host.connect()
        console = ScriptedConsole()
        _, task = await guest_racing(url, host, console, resume_timeout=0.5)
        console.type("d")
        await console.shows(r"^played d")
        await node.stop()
        assert await asyncio.wait_for(task, TIMEOUT) == 1
        line = (await console.shows(r"^the server is gone")).string
        assert line == (
            "the server is gone: it did not come back within 0.5 s (the command ends); a "
            f"server that comes back keeps your seat in the race for {SERVER_RESUME_GRACE_S:g}"
            " s more: run solrace play again to return to it"
        )
        # As it says: the server back, the same command is back in the race.
        await node.start()
        again = ScriptedConsole()
        task = as_kept_quinn(url, again)
        await again.shows(r"^back in race 1: your game goes on where it was")
        await quit_resigning(again, task)  # the game goes on: q asks
    finally:
        await host.close()
        if node.current is not None:
            await node.stop()


async def _main(*argv: str) -> tuple[int, str]:
    """Run the command line in a thread (the server answers on this loop)."""
    out = io.StringIO()

    def call() -> int:
        with redirect_stdout(out), redirect_stderr(out):
            return main(list(argv))

    code = await asyncio.to_thread(call)
    return code, out.getvalue()


async def test_race_export_sends_the_guest_that_play_kept(
    server: RunningServer, make_client: ClientFactory, home: Path, tmp_path: Path
) -> None:
    host = await make_client("Host")
    console = ScriptedConsole()
    # The default spectators (after): the race is its players' alone.
    code, task = await guest_racing(server.url, host, console)
    console.type("resign")
    await console.shows(r"^You resigned\.")
    await host.resign()
    await console.shows(r"^results of race 1 ")
    console.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0

    path = tmp_path / "race.json"
    status, said = await _main("race", "export", code, "1", "--url", server.url, "-o", str(path))
    assert status == 0, said
    record = json.loads(path.read_text())
    assert sorted(p["name"] for p in record["players"].values()) == ["Host", "Quinn"]
    status, said = await _main(
        "race", "export", code, "1", "--url", server.url, "--name", "Quinn", "-o", str(path)
    )
    assert status == 0, said
    # No guest kept under that name, and no login: refused, saying how to get it.
    status, said = await _main("race", "export", code, "1", "--url", server.url, "--name", "Zed")
    assert status == 1
    assert "players' alone" in said and "solrace play keeps it" in said, said
    assert said.rstrip().endswith("[HTTP 403]"), said
