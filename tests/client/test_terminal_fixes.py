"""The line-by-line client (``--plain``) and the full-screen client's board: the legal
moves on ``?``, what a daily attempt claims, the room's list across a restart, plain
words for a server out of reach, and a spectator's board with cards withheld."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from conftest import PLAIN_DEALS, TIMEOUT, ClientFactory, RunningServer
from daily_support import PASSWORD
from terminal_support import as_kept_quinn, dies_after_a_move, guest_racing, quit_resigning
from test_terminal import ScriptedConsole
from withheld_support import withheld_board

from solrace.client import Client
from solrace.client.logins import store_guest, stored_guest
from solrace.client.terminal import FACE_DOWN, daily, play, render_view
from solrace.client.tui import board_text
from solrace.server import Node, ServerConfig, SolraceServer, make_backend


@pytest.fixture
def backend_kind() -> str:
    """The terminal client does not depend on the backend: the embedded one serves it."""
    return "embedded"


def free_port() -> int:
    """A loopback port nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_question_mark_lists_the_legal_moves(
    server: RunningServer, make_client: ClientFactory
) -> None:
    console = ScriptedConsole()
    task = asyncio.ensure_future(
        play(
            server.url, console, name="asker", variant="rainbow-canfield", settings={"countdown": 0}
        )
    )
    code = (await console.shows(r"^room (\w+) "))[1]
    console.type("?")
    await console.shows(r"^no race is running: no moves to list$")
    rival = await make_client("rival")
    await rival.join(code)
    await console.shows(r"in the room: asker \(host\), rival")
    console.type("start")
    first = (await console.shows(r"^moves: 1\) (\S+)"))[1]
    shown = len(console.screen)
    console.type("?")
    await console.shows(rf"^moves: 1\) {first}", since=shown)
    shown = len(console.screen)
    console.type("moves")
    await console.shows(rf"^moves: 1\) {first}", since=shown)
    assert not any("bad_move" in line for line in console.screen)
    await quit_resigning(console, task)  # the game goes on: q asks


async def test_a_new_account_s_daily_attempt_is_not_called_ranked(
    server: RunningServer,
) -> None:
    # The node's default: an account's attempts are ranked from its second day (UTC).
    assert server.config.daily_account_age_days == 1
    async with Client(server.url, name="newbie", request_timeout=TIMEOUT) as newbie:
        await newbie.claim(PASSWORD)
        token = newbie.token
    console = ScriptedConsole()
    task = asyncio.ensure_future(
        daily(server.url, console, name="newbie", token=token, variant="rainbow-canfield")
    )
    await console.shows(r"^daily rainbow-canfield [\d-]+, attempt 1$")
    await console.shows(r"^moves: 1\) ")
    console.type("d")
    await console.shows(r"^played d")
    console.type("q")
    await console.shows(r"resign this race\? y/N$")  # the game goes on: q asks
    console.type("y")  # quitting resigns the attempt
    await console.shows(r"results of race 1 \(rainbow-canfield, daily [\d-]+, attempt 1; seed")
    await console.shows(r"^your attempt 1 is kept, not ranked: a new account ranks from its second")
    assert await asyncio.wait_for(task, TIMEOUT) == 0
    said = [line for line in console.screen if "attempt 1" in line and "ranked" in line]
    assert all("not ranked" in line for line in said), said
    assert not any("rematch" in line and "no rematch" not in line for line in console.screen)


class Restartable:
    """A node on a fixed port, stopped (1001 to every client) and started again."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.current: SolraceServer | None = None

    async def start(self) -> None:
        self.current = SolraceServer(Node(make_backend(self.config), self.config), self.config)
        await self.current.start()

    async def stop(self) -> None:
        assert self.current is not None
        await self.current.close()
        self.current = None


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Restartable]:
    config = ServerConfig(
        port=free_port(), data_dir=tmp_path / "data", progress_interval_s=0.0, **PLAIN_DEALS
    )
    made = Restartable(config)
    await made.start()
    yield made
    if made.current is not None:
        await made.stop()


async def test_the_room_s_members_are_shown_once_per_change_across_a_restart(
    node: Restartable,
) -> None:
    url = f"ws://127.0.0.1:{node.config.port}/"
    console = ScriptedConsole()
    task = asyncio.ensure_future(play(url, console, name="stays", settings={"countdown": 0}))
    code = (await console.shows(r"^room (\w+) "))[1]
    async with Client(url, name="guest", request_timeout=TIMEOUT) as guest:
        await guest.join(code)
        await console.shows(r"^in the room: stays \(host\), guest$")
        console.type("start")
        await console.shows(r"^race 1 started")
        before = len(console.screen)
        await node.stop()  # in the race: both come back to it by themselves
        await asyncio.sleep(0.3)
        await node.start()
        await console.shows(r"^the server restarted; connection restored", since=before)
        await guest.next_event("resumed", timeout=TIMEOUT)
        await asyncio.sleep(1.0)  # the member lists the resumes bring have come by now
        shown = [line for line in console.screen[before:] if line.startswith("in the room:")]
        assert shown == [], console.screen[before:]  # no one came or went
        await guest.leave()
        await console.shows(r"^in the room: stays \(host\)$", since=before)
    await quit_resigning(console, task)  # the game goes on: q asks


async def test_a_server_out_of_reach_is_said_in_plain_words() -> None:
    url = f"ws://127.0.0.1:{free_port()}/"
    console = ScriptedConsole()
    assert await play(url, console, name="nobody") == 1
    assert console.screen[0] == f"could not reach the server at {url}: connection refused"
    console = ScriptedConsole()
    assert await play("ws://notaurl/", console, name="nobody") == 1
    assert (
        console.screen[0] == "could not reach the server at ws://notaurl/: no such host (notaurl)"
    )


def test_the_plain_client_draws_withheld_cards_face_down() -> None:
    lines = render_view(withheld_board()).splitlines()
    assert lines[1] == f"foundations  f1: A♣  f2:{FACE_DOWN}  f3: --   f4: -- "
    assert lines[2].startswith(f"reserve (12) {FACE_DOWN}   stock (30)")
    assert lines[2].endswith(f"waste ( 3)  5♥ {FACE_DOWN}  6♦")
    assert lines[3:] == [f"t1   9♣ {FACE_DOWN}", f"t2  {FACE_DOWN}", "t3   2♦", "t4   -- "]


def test_the_full_screen_client_draws_withheld_cards_face_down() -> None:
    text = board_text(withheld_board(), color=False).plain
    lines = text.splitlines()
    foundations = next(line for line in lines if line.startswith("Foundations"))
    assert foundations.split() == ["Foundations", "f1", "A♣", "f2", "▒▒", "f3", "··", "f4", "··"]
    reserve = next(line for line in lines if line.startswith("Reserve"))
    assert "▒▒" in reserve and "12 left, the top one not shown yet" in reserve
    waste = next(line for line in lines if line.startswith("Waste"))
    assert waste.split()[2:5] == ["5♥", "▒▒", "6♦"]
    rows = lines[lines.index("Tableau") + 2 :]
    assert rows[0].split() == ["9♣", "▒▒", "2♦", "··"]
    assert rows[1].split() == ["▒▒"]


async def test_a_guest_whose_terminal_died_comes_back_into_its_race(
    server: RunningServer,
    make_client: ClientFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The command line keeps a guest's token for the server and name: the same command
    run again after the client died is the same player, back in the race it was in (the
    room would take no new player while it races)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    host = await make_client("Host")
    console = ScriptedConsole()
    code, first = await guest_racing(server.url, host, console)
    # The terminal is closed: no leave, the room keeps the player away.
    await dies_after_a_move(console, first)
    assert (tmp_path / "solrace" / "guests.json").stat().st_mode & 0o777 == 0o600

    again = ScriptedConsole()
    task = as_kept_quinn(server.url, again, join=code)
    await again.shows(r"^back in race 1: your game goes on where it was")
    await again.shows(r"moves\s+1\s+playing")  # its standing: the move before is kept
    again.type("d")
    await again.shows(r"^played d")
    async with asyncio.timeout(TIMEOUT):
        while True:
            event = await host.next_event("progress", timeout=TIMEOUT)
            if any(p["moves"] == 2 for p in event["players"]):
                break
    await quit_resigning(again, task)  # the game goes on: q asks
    # Quitting (not dying) resigns the game that goes on and leaves the room for good.
    async with asyncio.timeout(TIMEOUT):
        while True:
            event = await host.next_event("members", timeout=TIMEOUT)
            if all(m["name"] != "Quinn" for m in event["members"]):
                break

    # A server that no longer knows the kept token: a new guest of the same name, at once.
    kept = stored_guest(server.url, "Quinn")
    assert kept is not None
    store_guest(server.url, "Quinn", "x" + kept)
    other = ScriptedConsole()
    task = as_kept_quinn(server.url, other)
    await other.shows(r"^room \w+ \(canfield\); you are Quinn")
    other.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0
    assert stored_guest(server.url, "Quinn") not in (None, kept, "x" + kept)  # the new one


async def test_a_player_who_left_is_still_named_in_the_standings(
    server: RunningServer, make_client: ClientFactory
) -> None:
    """The room's members event after a player left the race replaced the client's names:
    the standings showed the leaver's player id instead of its name."""
    console = ScriptedConsole()
    task = asyncio.ensure_future(
        play(server.url, console, name="tina", variant="canfield", settings={"countdown": 0})
    )
    code = (await console.shows(r"^room (\w+) "))[1]
    tom = await make_client("tom")
    await tom.join(code)
    await console.shows(r"in the room: tina \(host\), tom")
    console.type("start")
    await console.shows(r"^moves: 1\)")
    await tom.next_event("race_started", timeout=TIMEOUT)
    await tom.leave()  # he resigns as he goes
    await console.shows(r"^in the room: tina \(host\)$")
    shown = len(console.screen)
    console.type("resign")  # her game over, she is shown the standings
    await console.shows(r"^standings:", since=shown)
    await console.shows(r"^You may leave", since=shown)
    rows = " ".join(console.screen[shown:])
    assert "tom" in rows and (tom.player_id or "?") not in rows, console.screen[shown:]
    console.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


def test_a_command_that_ends_by_itself_does_not_wait_for_one_more_line() -> None:
    """The line client read standard input in the loop's executor, which is waited for as
    the command ends: one closed for good (revoked, taken over, the server gone) said so
    and went on running until one more line was typed."""
    import subprocess
    import sys
    import time

    script = (
        "import asyncio\n"
        "from solrace.client.terminal import StdConsole\n"
        "async def main():\n"
        "    console = StdConsole()\n"
        "    try:\n"
        "        await asyncio.wait_for(console.read_line(), 0.3)\n"
        "    except TimeoutError:\n"
        "        print('gave up', flush=True)\n"
        "asyncio.run(main())\n"
    )
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,  # open, and nothing ever typed
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.wait(timeout=TIMEOUT) == 0
    finally:
        if process.poll() is None:
            process.kill()
        assert process.stdin is not None
        process.stdin.close()
    assert process.stdout is not None and process.stdout.read() == "gave up\n"
    assert time.monotonic() - started < TIMEOUT


class _Unreadable:
    def readline(self) -> str:
        raise OSError("standard input is not readable")


@pytest.mark.parametrize("stdin", [_Unreadable(), None], ids=["unreadable", "none"])
async def test_standard_input_that_cannot_be_read_is_the_end_of_input(
    monkeypatch: pytest.MonkeyPatch, stdin: object
) -> None:
    """A read of standard input that failed (closed, not readable at all, or none: a
    process started with its descriptor 0 closed) killed the reader's thread with its
    error, and the command waited for ever for a line."""
    from solrace.client.terminal import StdConsole

    monkeypatch.setattr("sys.stdin", stdin)
    console = StdConsole()
    assert await asyncio.wait_for(console.read_line(), TIMEOUT) is None
    assert await asyncio.wait_for(console.read_line(), TIMEOUT) is None


def test_a_card_back_from_a_foundation_is_listed_last_and_numbered_so() -> None:
    """``1`` played the first legal move, often a card back from a foundation (``f2-t1``):
    typed again, it sent the same card home and back."""
    from solrace.client.terminal import listed, numbered, render_moves

    legal = ["f2-t1", "w-f", "t1-f", "f1-t3", "d"]
    assert listed(legal) == ["w-f", "t1-f", "d", "f2-t1", "f1-t3"]
    assert render_moves(legal) == "moves: 1) w-f  2) t1-f  3) d  4) f2-t1  5) f1-t3"
    assert [numbered(str(n), legal) for n in range(1, 6)] == listed(legal)
    assert numbered("6", legal) == "6" and numbered("t2-f", legal) == "t2-f"
