"""The full-screen terminal client, driven through Textual's Pilot against a real server:
keys typed at the prompt, and what its panes show."""

from __future__ import annotations

import asyncio
import contextlib
import io
import multiprocessing.resource_tracker
import re
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from daily_support import AT_ONCE, account
from textual import events
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Input, RichLog, Static

from solrace.cli import build_parser, main
from solrace.client import Client
from solrace.client.cli import build_app, full_screen
from solrace.client.moves_help import GAME_MOVES, moves_text
from solrace.client.terminal import listed
from solrace.client.tui import (
    DAILY_HELP,
    STUCK_UNDO,
    BoardsPane,
    RaceApp,
    board_text,
    daily_help,
    play_help,
)
from solrace.client.urls import BadServerUrl, parse_server_url, room_link, why_unreachable
from solrace.engine import VARIANTS, MoveKind, Status, board_view, new_game, parse_move

# The end-to-end helpers of the server tests: forced deals and known lines.
sys.path.append(str(Path(__file__).resolve().parents[1] / "server"))
from e2e_support import FAST, deal_seed, fresh, winning_deal
from test_e2e_race import _line_to_stuck

SIZE = (160, 60)


@pytest.fixture(autouse=True, scope="module")
def _resource_tracker() -> None:
    """The server under test runs in this process, beside the app, which replaces
    sys.stderr with an object of no file descriptor while it runs: a solver worker spawned
    then could not start multiprocessing's resource tracker (it passes stderr's
    descriptor on). Start the tracker first, as ``solrace serve``'s real stderr would."""
    multiprocessing.resource_tracker.ensure_running()


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets the client play a whole game at full speed."""
    return await start_server(limits=FAST)


def pane(app: RaceApp, selector: str) -> str:
    """The text a pane shows now."""
    return str(app.query_one(selector, Static).content)


def log(app: RaceApp) -> str:
    """The log above the prompt, its wrapped lines joined again."""
    return " ".join(strip.text.rstrip() for strip in app.query_one("#log", RichLog).lines)


async def until(
    pilot: Pilot[int], check: Callable[[], Any], what: str, timeout: float = TIMEOUT
) -> Any:
    """Wait until ``check()`` is true (the app goes on meanwhile, drawing on its own
    timer); return its value."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                value = check()
                if value:
                    return value
                await asyncio.sleep(0.005)
    except TimeoutError:
        raise AssertionError(f"never saw {what}") from None


async def shows(pilot: Pilot[int], selector: str, pattern: str) -> re.Match[str]:
    """Wait until the pane (or ``log``) shows ``pattern``; return the match."""
    app = pilot.app
    assert isinstance(app, RaceApp)

    def text() -> str:
        return log(app) if selector == "log" else pane(app, selector)

    found: re.Match[str] = await until(
        pilot, lambda: re.search(pattern, text(), re.M), f"{pattern!r} in {selector}"
    )
    return found


async def type_line(pilot: Pilot[int], line: str) -> None:
    """Type a line at the prompt, key by key, and Enter."""
    await pilot.press(*line, "enter")


async def paste_moves(pilot: Pilot[int], moves: list[str]) -> None:
    """Paste moves at the prompt (as a terminal's bracketed paste brings them), each with
    its Enter, the next once the board shows the one before played."""
    app = pilot.app
    assert isinstance(app, RaceApp)
    for move in moves:
        assert app.client.view is not None
        played = app.client.view["moves"] + 1
        app.post_message(events.Paste(move))
        app.post_message(events.Key("enter", "\r"))
        await until(pilot, lambda n=played: (app.client.view or {}).get("moves", 0) >= n, move)


async def quit_resigning(pilot: Pilot[int]) -> None:
    """q while this player's game goes on: the app asks first, as the line client does,
    and y resigns and quits."""
    await type_line(pilot, "q")
    await shows(pilot, "log", r"resign this race\? y/N")
    await type_line(pilot, "y")


async def exits(pilot: Pilot[int]) -> int:
    """Wait until the app has ended by itself; its return code."""
    app = pilot.app
    await until(pilot, lambda: app.return_code is not None, "the app end")
    assert app.return_code is not None
    return app.return_code


async def test_a_whole_race_to_a_win_typed_at_the_prompt(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    app = RaceApp(server.url, name="tui", settings={"countdown": 0}, request_timeout=TIMEOUT)
    async with app.run_test(size=SIZE) as pilot:
        code = (await shows(pilot, "#title", r"room (\w{8})  canfield  you are tui"))[1]
        # The room's link, to send friends: the page's address of the room.
        link = f"http://127.0.0.1:{server.server.port}/r/{code}"
        assert link in pane(app, "#title")
        await shows(pilot, "log", f"Send your friends this link: {re.escape(link)}")
        rival = await make_client("rival")
        await rival.join(code)
        await shows(pilot, "#room", r"^  rival$")
        await type_line(pilot, "start")
        await rival.next_event("race_started", timeout=TIMEOUT)
        await shows(pilot, "#clock", r"^Time left \d+:\d\d$")
        await shows(pilot, "#standings", r"rival .* 0 moves  playing")
        board = app.query_one("#board", Static)
        local = fresh("canfield", seed)
        assert f"banked {local.banked}/52   moves 0   playing" in pane(app, "#board")

        # Half a move typed, then the rival moves: the standings change, the prompt keeps
        # what was typed.
        await pilot.press(*line[0][:2])
        await rival.move("d")
        await shows(pilot, "#standings", r"rival .* 1 move   playing")
        assert app.query_one("#prompt", Input).value == line[0][:2]
        await pilot.press(*line[0][2:], "enter")
        local.apply(parse_move(line[0]))
        await shows(pilot, "#board", r"moves 1   playing")
        await shows(pilot, "log", rf"played {re.escape(line[0])}")

        # Some moves typed key by key, the others pasted (Pilot waits for the app to be
        # idle after each key, which makes a whole game of keys slow to drive).
        for move in line[1:10]:
            await type_line(pilot, move)
        await paste_moves(pilot, line[10:])
        await shows(pilot, "#status", r"^You finished 1st of 2: all 52 cards are home!$")
        # The board was drawn again in place: the same pane, now with every card home.
        assert app.query_one("#board", Static) is board
        assert re.search(rf"banked 52/52   moves {len(line)}   won", pane(app, "#board"))
        assert "Tableau" not in log(app)  # no board ever went to the log
        await shows(pilot, "log", r"You finished 1st of 2: all 52 cards are home!")
        await shows(pilot, "#standings", r"^ 1\. tui \(you\) .* 52/52 .* won 1st$")
        await shows(pilot, "#standings", r"^ 2\. rival .*  1/52   1 move   playing$")

        await rival.resign()
        await shows(pilot, "#results", r"results of race 1 \(canfield, seed \d+\)")
        await shows(pilot, "#results", r"^  1\. tui\s+won\s+banked 52")
        await shows(pilot, "#results", r"^  2\. rival\s+resigned")
        await shows(pilot, "log", r"Race over: you are 1st of 2\.")
        await shows(pilot, "#clock", r"^Race over$")
        await type_line(pilot, "q")
        assert await exits(pilot) == 0
    assert any("results of race 1" in kept for kept in app.farewell)


async def test_legal_moves_on_request_and_by_number(server: RunningServer) -> None:
    app = RaceApp(server.url, name="keys", settings={"countdown": 0}, request_timeout=TIMEOUT)
    async with app.run_test(size=SIZE) as pilot:
        await shows(pilot, "#title", r"room \w{8}")
        moves = app.query_one("#moves", Static)
        assert not moves.has_class("shown")
        await type_line(pilot, "start")
        await until(pilot, lambda: app.client.view is not None, "the deal")
        assert app.client.view is not None
        legal = listed(app.client.view["legal"])  # as the clients number them
        await pilot.press("?")  # the key alone, without Enter
        assert moves.has_class("shown")
        assert app.query_one("#prompt", Input).value == ""  # the ? was not left in the prompt
        numbers = "  ".join(f"{i}) {m}" for i, m in enumerate(legal, start=1))
        await shows(
            pilot, "#moves", rf"^Legal moves \(type the number or the move\): {re.escape(numbers)}$"
        )
        await type_line(pilot, "1")
        await shows(pilot, "log", rf"played {re.escape(legal[0])}")
        await shows(pilot, "#board", r"moves 1 ")
        after = listed(app.client.view["legal"])
        await shows(pilot, "#moves", re.escape("1) " + after[0]))
        await pilot.press("f2")
        assert not moves.has_class("shown")
        # ? and Enter at once (a fast typist, a paste): shown, not toggled twice to hidden.
        prompt = app.query_one("#prompt", Input)
        prompt.value = "?"  # its change is handled after the line it makes
        await prompt.action_submit()
        await pilot.pause()
        await pilot.pause()
        assert moves.has_class("shown")
        await pilot.press("f2")
        assert not moves.has_class("shown")
        await type_line(pilot, "t9-t1")
        await shows(pilot, "log", r"Refused: This game has no pile t9\. \[illegal_move\]")
        await pilot.press("ctrl+q")  # asks first, as q does: the game goes on
        await shows(pilot, "log", r"resign this race\? y/N")
        await pilot.press("ctrl+q")  # the second is the yes
        assert await exits(pilot) == 0
    # Quitting a game that goes on resigns it (and leaves the room: the race's results
    # may come meanwhile, and are kept).
    assert app.farewell[0] == "You resigned.", app.farewell
    assert all(line.startswith("results of race 1") for line in app.farewell[1:]), app.farewell


async def test_the_whole_board_shows_in_a_terminal_of_80_by_24(server: RunningServer) -> None:
    """The default size of most terminals: the tableau shows without scrolling (the
    screen is drawn compact below 34 rows), and wider again when the terminal grows."""
    app = RaceApp(server.url, name="small", settings={"countdown": 0}, request_timeout=TIMEOUT)
    async with app.run_test(size=(80, 24)) as pilot:
        await shows(pilot, "#title", r"room \w{8}")
        assert app.has_class("compact")
        await type_line(pilot, "start")
        await until(pilot, lambda: app.client.view is not None, "the deal")
        await shows(pilot, "#board", r" t1 +t2 +t3 +t4")
        await pilot.pause()
        boards = app.query_one("#boards", VerticalScroll)
        board = app.query_one("#board", Static)
        lines = len(board_text(app.client.view or {}, compact=True).plain.splitlines())
        assert board.region.height >= lines, (board.region, lines)
        assert boards.max_scroll_y == 0, "the board needs scrolling"
        assert boards.region.bottom <= 24 and board.region.bottom <= boards.region.bottom
        await pilot.resize_terminal(160, 60)
        await pilot.pause()
        assert not app.has_class("compact")
        await shows(pilot, "#board", r"^Tableau$")
        await quit_resigning(pilot)
        assert await exits(pilot) == 0


async def test_stuck_where_undo_is_allowed_says_undo_or_resign(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = _line_to_stuck("british-canister")
    deal_seed(monkeypatch, seed)
    app = RaceApp(
        server.url,
        name="stuck",
        variant="british-canister",
        settings={"countdown": 0},
        request_timeout=TIMEOUT,
    )
    async with app.run_test(size=SIZE) as pilot:
        await shows(pilot, "#title", r"room \w{8}  british-canister")
        # Said plainly: what a British Canister race is about.
        await shows(pilot, "#room", r"almost never winnable .* races are about cards banked")
        await shows(pilot, "log", r"races are about cards banked")
        await type_line(pilot, "start")
        await until(pilot, lambda: app.client.view is not None, "the deal")
        await type_line(pilot, line[0])
        await shows(pilot, "#board", r"moves 1 ")
        await paste_moves(pilot, line[1:])
        await shows(pilot, "#status", rf"^{re.escape(STUCK_UNDO)}$")
        assert STUCK_UNDO.startswith("No move left: undo or resign")
        await type_line(pilot, "u")
        await shows(pilot, "#board", r"playing")
        assert pane(app, "#status") == ""
        await type_line(pilot, "resign")
        await shows(pilot, "#results", r"^  1\. stuck\s+resigned")
        await type_line(pilot, "q")
        assert await exits(pilot) == 0


async def test_a_winnable_room_gives_par_in_the_results(start_server: ServerFactory) -> None:
    server = await start_server(
        limits=FAST, winnable_default=True, deal_pool_size=1, solver_budget_s=1.0
    )
    # The pool is still filling as the race starts: its deal is certified for it.
    app = RaceApp(server.url, name="par", settings={"countdown": 0}, request_timeout=4 * TIMEOUT)
    async with app.run_test(size=SIZE) as pilot:
        await shows(pilot, "#room", r"^race: winnable deals only \(the results give par\)")
        await type_line(pilot, "start")
        await until(pilot, lambda: app.client.view is not None, "the deal", 4 * TIMEOUT)
        await type_line(pilot, "resign")
        par = (await shows(pilot, "#results", r"^par (\d+) moves: the solver's winning line$"))[1]
        assert int(par) > 0
        await type_line(pilot, "q")
        assert await exits(pilot) == 0


async def test_the_browser_url_is_taken_for_the_server_and_the_room(
    server: RunningServer,
    make_client: ClientFactory,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no login of this machine's
    host = await make_client("host")
    room = await host.create_room("canfield", spectators="live")
    port = server.server.port
    link = f"http://127.0.0.1:{port}/r/{room['code'].lower()}"
    app = build_app(build_parser().parse_args(["play", link, "--name", "guest"]))
    assert (app.url, app.join) == (f"ws://127.0.0.1:{port}/", room["code"])
    async with app.run_test(size=SIZE) as pilot:
        await shows(pilot, "#title", rf"room {room['code']}  canfield  you are guest")
        await shows(pilot, "#room", r"^  host \(host\)$")
        joined = await host.next_event("members", timeout=TIMEOUT)
        assert "guest" in [m["name"] for m in joined["members"]]
        await type_line(pilot, "q")
        assert await exits(pilot) == 0
    # The page's own address is the server; watch takes the room's link as its room.
    watcher = build_app(build_parser().parse_args(["watch", link]))
    assert (watcher.url, watcher.join, watcher.mode) == (
        f"ws://127.0.0.1:{port}/",
        room["code"],
        "watch",
    )
    daily = build_app(build_parser().parse_args(["daily", "canfield", f"http://127.0.0.1:{port}/"]))
    assert daily.url == f"ws://127.0.0.1:{port}/"


def test_server_urls_as_people_paste_them() -> None:
    assert parse_server_url("https://solrace.example/r/ABCD2345").ws == "wss://solrace.example/"
    assert parse_server_url("https://solrace.example/r/abcd2345/").code == "ABCD2345"
    assert parse_server_url("http://10.0.0.2:8765/daily").ws == "ws://10.0.0.2:8765/"
    assert parse_server_url("ws://10.0.0.2:8765/").ws == "ws://10.0.0.2:8765/"
    assert parse_server_url("10.0.0.2:8765").ws == "ws://10.0.0.2:8765/"
    assert room_link("wss://solrace.example/", "ABCD2345") == "https://solrace.example/r/ABCD2345"
    # A room's link with anything but a code after /r/ names no room: never a new one.
    for bad in (
        "ftp://host/",
        "http://",
        "http://host:99999/",
        " ",
        "http://h/r/abc/def",
        "http://h/r/",
    ):
        with pytest.raises(BadServerUrl, match=r"is not a server URL .*\[bad_url\]$"):
            parse_server_url(bad)


def test_a_url_that_is_no_server_is_refused_with_its_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["play", "ftp://example.org/", "--plain"]) == 2
        assert main(["watch", "http://127.0.0.1:8765/", "--plain"]) == 2
        assert main(["play", "http://127.0.0.1:8765/r/ABCD2345", "--join", "WXYZ6789"]) == 2
    lines = err.getvalue().splitlines()
    # The stable code in brackets at the end, as the server's refusals are shown.
    assert lines[0].startswith("solrace play: 'ftp://example.org/' is not a server URL")
    assert lines[0].endswith("[bad_url]")
    assert lines[1].startswith("solrace watch: ") and lines[1].endswith("[no_room]")
    assert lines[2].startswith("solrace play: ") and lines[2].endswith("[two_rooms]")


async def test_watch_shows_the_boards_and_stays_for_a_rematch(
    server: RunningServer, make_client: ClientFactory
) -> None:
    host = await make_client("host")
    room = await host.create_room("canfield", countdown=0, spectators="live")
    app = RaceApp(server.url, mode="watch", join=room["code"], name="fan")
    async with app.run_test(size=SIZE) as pilot:
        await shows(pilot, "#title", rf"room {room['code']}  canfield  watching as fan")
        await shows(pilot, "#board", r"No race yet")
        await host.start()
        await host.next_event("race_started", timeout=TIMEOUT)
        await until(pilot, lambda: host.player_id in app.board_widgets, "the host's board")
        board = app.board_widgets[host.player_id]
        await host.move("d")
        await until(pilot, lambda: "moves 1 " in str(board.content), "the host's move")
        assert str(board.content).startswith(" host \n")
        await shows(pilot, "#standings", r"host .* 1 move   playing")
        await host.resign()
        await shows(pilot, "#results", r"results of race 1 \(canfield, seed \d+\)")
        await shows(pilot, "log", r"Waiting for the room's next race")
        # The standings and the final board end as the results say, not "playing".
        await shows(pilot, "#standings", r"host .* 1 move   resigned")
        await until(
            pilot,
            lambda: "resigned" in str(app.board_widgets[host.player_id].content),
            "the final board's status",
        )
        # The race is over and the watcher stays: the host asks for a rematch and starts.
        await host.rematch()
        await shows(pilot, "log", r"Back in the lobby")
        assert app.return_code is None
        await host.start()
        await shows(pilot, "log", r"Race 2 started: canfield\.")
        assert pane(app, "#results") == ""
        await shows(pilot, "#standings", r"host .* 0 moves  playing")
        await until(
            pilot,
            lambda: "moves 0 " in str(app.board_widgets[host.player_id].content),
            "the new deal",
        )
        await host.resign()
        await shows(pilot, "#results", r"results of race 2 ")
        await type_line(pilot, "q")
        assert await exits(pilot) == 0


async def test_the_standings_end_as_the_results_say(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A game still being played when the race ends (here a first-to-finish race) is not
    left "playing" in the standings once the results are in."""
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    settings = {"countdown": 0, "finish": "first", "finish_grace": 1, "winnable": False}
    app = RaceApp(server.url, name="slow", settings=settings, request_timeout=TIMEOUT)
    async with app.run_test(size=SIZE) as pilot:
        title = await shows(pilot, "#title", r"room (\w{8})")
        quick = await make_client("quick")
        await quick.join(title[1])
        await type_line(pilot, "start")
        await quick.next_event("race_started", timeout=TIMEOUT)
        for move in line:
            await quick.move(move)
        await shows(pilot, "#results", r"slow +not finished")
        await shows(pilot, "#standings", r"slow \(you\) .* 0 moves  not finished")
        await type_line(pilot, "q")
        assert await exits(pilot) == 0


async def test_the_daily_help_matches_the_daily(start_server: ServerFactory) -> None:
    server = await start_server(limits=FAST, **AT_ONCE)
    async with account(server.url, "dana") as dana:
        token = dana.token
    app = RaceApp(
        server.url,
        mode="daily",
        name="dana",
        token=token,
        variant="rainbow-canfield",
        request_timeout=TIMEOUT,
    )
    async with app.run_test(size=SIZE) as pilot:
        await shows(
            pilot, "#title", r"daily rainbow-canfield \d{4}-\d\d-\d\d, attempt 1  you are dana"
        )  # whether a first attempt is ranked is the board's to say, once it is over
        await shows(pilot, "log", re.escape(DAILY_HELP[:60]))
        for rule in ("no undo", "one ranked attempt", "no rematch"):
            assert rule in DAILY_HELP
        assert "u undoes" not in log(app) and "u (undo)" not in log(app)
        assert "rematch" not in log(app).replace("no rematch", "")
        await shows(pilot, "#room", r"No undo; one ranked attempt a day \(your first\); no rematch")
        await shows(pilot, "#clock", r"^Time left ")
        await type_line(pilot, "d")
        await shows(pilot, "log", r"played d")
        await type_line(pilot, "u")
        await shows(pilot, "log", r"The daily deal has no undo\.")
        await type_line(pilot, "rematch")
        await shows(pilot, "log", r"The daily deal has no rematch: one ranked attempt a day\.")
        await type_line(pilot, "help")
        assert log(app).count(DAILY_HELP[:60]) == 2
        await quit_resigning(pilot)  # quitting the attempt resigns it
        assert await exits(pilot) == 0
    kept = "\n".join(app.farewell)
    assert "You resigned." in kept
    assert re.search(r"daily [\d-]+, attempt 1; seed shown", kept)
    assert re.search(r"your attempt 1 of [\d-]+: ranked", kept)
    assert "your rank: 1 of 1" in kept


async def test_a_guest_is_told_the_daily_is_an_account_s(server: RunningServer) -> None:
    app = RaceApp(server.url, mode="daily", name="guest", variant="canfield")
    async with app.run_test(size=SIZE) as pilot:
        assert await exits(pilot) == 1
    assert app.farewell[0].startswith("Could not start the daily deal: "), app.farewell
    assert app.farewell[0].endswith("[account_required]"), app.farewell
    assert "solrace login --new" in app.farewell[1]


async def test_a_lost_server_ends_with_one_line_and_the_app_exits(
    server: RunningServer,
) -> None:
    app = RaceApp(server.url, name="lost", resume_timeout=0.5, request_timeout=TIMEOUT)
    async with app.run_test(size=SIZE) as pilot:
        await shows(pilot, "#title", r"room \w{8}")
        await server.server.close()
        assert await exits(pilot) == 1
    # As the line client says it (terminal.gone_words): in the lobby, no seat to keep.
    assert app.farewell == [
        "The server is gone: it did not come back within 0.5 s (the command ends)."
    ]


async def test_a_server_that_is_not_there_ends_with_one_line(
    start_server: ServerFactory,
) -> None:
    gone = await start_server()
    url = gone.url
    await gone.server.close()
    app = RaceApp(url, name="nobody")
    async with app.run_test(size=SIZE) as pilot:
        assert await exits(pilot) == 1
    assert len(app.farewell) == 1
    assert app.farewell[0].startswith(f"Could not reach the server at {url} to create the room")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_the_full_screen_client_unless_plain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", _Tty())
    monkeypatch.setattr(sys, "stdout", _Tty())
    parser = build_parser()
    for argv in (["play"], ["watch", "ws://h:1/", "CODE"], ["daily", "canfield"]):
        assert full_screen(parser.parse_args(argv))
        assert not full_screen(parser.parse_args([*argv, "--plain"]))
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # a pipe: the line client
    assert not full_screen(parser.parse_args(["play"]))


def test_a_process_without_standard_input_gets_the_line_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Started with its descriptor 0 closed, a process has ``sys.stdin`` None: asking
    whether it was a terminal failed with an AttributeError before any line was shown."""
    monkeypatch.setattr(sys, "stdin", None)
    monkeypatch.setattr(sys, "stdout", _Tty())
    assert not full_screen(build_parser().parse_args(["play"]))


async def test_solrace_play_plain_is_the_line_client(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no login of this machine's
    port = server.server.port

    def call(url: str) -> tuple[int, str]:
        out = io.StringIO()
        stdin = sys.stdin
        sys.stdin = io.StringIO("q\n")
        try:
            with redirect_stdout(out):
                code = main(["play", url, "--plain", "--name", "cli", "--no-color"])
        finally:
            sys.stdin = stdin
        return code, out.getvalue()

    code, out = await asyncio.to_thread(call, server.url)
    assert code == 0
    # The line client's own lines, one after another on standard output.
    assert re.search(r"^room \w{8} \(canfield\); you are cli$", out, re.M)
    assert re.search(r"^type 'ready' when you are", out, re.M)
    code, out = await asyncio.to_thread(call, f"http://127.0.0.1:{port}/")  # the page's URL
    assert code == 0 and re.search(r"^room \w{8} \(canfield\); you are cli$", out, re.M)


def test_why_a_server_was_unreachable_is_never_empty() -> None:
    # https:// against a server without TLS: the server resets the TLS handshake.
    said = why_unreachable("wss://127.0.0.1:8765/", ConnectionResetError())
    assert said is not None and "wss" in said and "ws://" in said
    assert why_unreachable("ws://127.0.0.1:8765/", BrokenPipeError()) == "BrokenPipeError"


# -- 80 x 24, the help's moves, coming back ------------------------------------------------


def screen_lines(app: RaceApp) -> list[str]:
    """The terminal's rows as the app last drew them: what a person sees."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def seen(app: RaceApp, text: str, region: Any) -> bool:
    """Whether ``text`` is drawn on the screen within ``region`` (its visible part)."""
    rows = screen_lines(app)[region.y : region.bottom]
    return any(text in row[region.x : region.right] for row in rows)


def deepest_prefix(variant: str, line: list[str]) -> tuple[int, int]:
    """How far into ``line`` its longest tableau pile is, and that pile's length."""
    game = new_game(variant, winning_deal(variant)[0])
    best = (0, 0)
    for i, move in enumerate(line, start=1):
        game.apply(parse_move(move))
        depth = max(len(pile) for pile in game.tableau)
        if depth > best[1]:
            best = (i, depth)
    return best


async def test_the_top_of_a_long_pile_shows_at_80_by_24(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pile longer than the rows left shows its last cards under a count of the others:
    every pile's top card (the one that plays) is on the screen, without scrolling."""
    seed, line = winning_deal("canfield")
    moves, depth = deepest_prefix("canfield", line)
    assert depth >= 10, "the winning line never makes a long pile"
    deal_seed(monkeypatch, seed)
    app = RaceApp(server.url, name="small", settings={"countdown": 0}, request_timeout=TIMEOUT)
    async with app.run_test(size=(80, 24)) as pilot:
        await shows(pilot, "#title", r"room \w{8}")
        await type_line(pilot, "start")
        await until(pilot, lambda: app.client.view is not None, "the deal")
        await paste_moves(pilot, line[:moves])
        await pilot.pause()
        view = app.client.view
        assert view is not None
        assert max(len(pile) for pile in view["tableau"]) == depth
        boards = app.query_one("#boards", BoardsPane)
        board = app.query_one("#board", Static)
        assert boards.max_scroll_y == 0, "the board needs scrolling"
        assert re.search(r"  \+\d+ ", pane(app, "#board")), pane(app, "#board")
        for i, pile in enumerate(view["tableau"]):
            top = pile[-1]
            face = f"{top[:-1] + {'C': '♣', 'D': '♦', 'H': '♥', 'S': '♠'}[top[-1]]:>4}"
            column = boards.region.intersection(board.region)
            column = column._replace(x=column.x + 5 * i, width=4)
            assert seen(app, face, column), (top, "\n".join(screen_lines(app)))
        # The legal moves shown take rows: the board is drawn again within what is left.
        await pilot.press("?")
        await pilot.pause()
        await pilot.pause()
        assert boards.max_scroll_y == 0, "the board needs scrolling"
        await quit_resigning(pilot)
        assert await exits(pilot) == 0


def test_a_board_within_a_height_keeps_every_top_and_the_lead_rank() -> None:
    game = new_game("rainbow-canfield", 7)
    view = board_view(game)
    lead = {"A": "Ace", "J": "Jack", "Q": "Queen", "K": "King"}.get(view["base_rank"])
    rule = f"from {lead or view['base_rank']} up by suit, King wraps to Ace"
    # Compact (a short terminal) leaves the foundations' rule out, but for Rainbow
    # Canfield's lead rank, which is the deal's.
    assert rule in board_text(view, compact=True).plain
    assert "up to King" not in board_text(board_view(new_game("canfield", 7)), compact=True).plain
    # A pile of twelve cards within ten lines: its count, then its last cards.
    view["tableau"][1] = ["KS", "QH", "JS", "10H", "9S", "8H", "7S", "6H", "5S", "4H", "3S", "2H"]
    lines = board_text(view, compact=True, color=False, height=10).plain.splitlines()
    assert len(lines) == 10, lines
    second = [row[5:9].strip() for row in lines[-3:]]  # pile t2's column
    assert second == ["+10", "3♠", "2♥"], lines  # the ten cards above, then the last two
    # A resignation is the race's: the board says so, though its game reads "playing".
    assert "resigned" in board_text(view, status="resigned").plain.splitlines()[0]


async def test_the_log_and_the_room_fit_80_by_24(
    server: RunningServer, make_client: ClientFactory
) -> None:
    """At 80 columns no log line runs under the scrollbar (nor needs scrolling sideways),
    and the lobby's members show without scrolling."""
    app = RaceApp(server.url, name="narrow", request_timeout=TIMEOUT)
    async with app.run_test(size=(80, 24)) as pilot:
        code = (await shows(pilot, "#title", r"room (\w{8})"))[1]
        for name in ("rival", "bob", "carol"):
            await (await make_client(name)).join(code)
        await shows(pilot, "#room", r"^  carol$")
        await shows(pilot, "log", r"finish first 30")  # the help's long lines
        await pilot.pause()
        log_pane = app.query_one("#log", RichLog)
        width = log_pane.scrollable_content_region.width
        assert max(strip.cell_length for strip in log_pane.lines) <= width
        assert log_pane.max_scroll_x == 0
        side = app.query_one("#side", VerticalScroll)
        for name in ("narrow", "rival", "bob", "carol"):
            assert seen(app, f"  {name}", side.region), "\n".join(screen_lines(app))
        await type_line(pilot, "q")
        assert await exits(pilot) == 0


def test_each_game_s_help_gives_the_moves_its_game_takes() -> None:
    """Every move the help shows is one its game makes, and every kind of move the game
    makes (each pile a card leaves, and runs or whole piles where they move) is shown."""
    for variant in VARIANTS:
        helped = set()
        for example in GAME_MOVES[variant]:
            move = parse_move(example.notation.replace("xN", "x2"))
            if move.kind is MoveKind.MOVE:
                assert move.src is not None
                helped.add((move.src.value, move.count > 1))
            else:
                helped.add(move.kind.value)
        made: set[Any] = set()
        for seed in range(40):
            game = new_game(variant, seed)
            for step in range(150):
                legal = game.legal_moves()
                if not legal or game.status is not Status.PLAYING:
                    break
                for move in legal:
                    if move.kind is MoveKind.MOVE:
                        assert move.src is not None
                        made.add((move.src.value, move.count > 1))
                    else:
                        made.add(move.kind.value)
                game.apply(legal[(seed + step) % len(legal)])
        assert helped == made, (variant, helped, made)
        assert moves_text(variant) in play_help(True, variant)
        assert moves_text(variant) in daily_help(variant)


async def test_a_player_back_in_a_race_sees_the_race(
    server: RunningServer, make_client: ClientFactory
) -> None:
    """A player whose client died comes back (its token) into its race: the race, not the
    lobby's welcome; resigning then shows on its own board."""
    host = await make_client("host")
    room = await host.create_room("canfield", countdown=0, winnable=False)
    first = Client(server.url, name="quinn", request_timeout=TIMEOUT)
    await first.connect()
    await first.join(room["code"])
    await host.start()
    await first.next_event("race_started", timeout=TIMEOUT)
    await first.move("d")
    token = first.token
    await first.drop()  # the terminal died: no leave
    await first.close()
    app = RaceApp(server.url, name="quinn", token=token, join=room["code"], request_timeout=TIMEOUT)
    async with app.run_test(size=SIZE) as pilot:
        await shows(pilot, "log", r"Back in race 1: your game goes on where it was\.")
        assert "Type 'ready'" not in log(app)
        await shows(pilot, "#board", r"moves 1   playing")
        await shows(pilot, "#clock", r"^Time left \d+:\d\d$")
        await type_line(pilot, "resign")
        await shows(pilot, "#standings", r"quinn \(you\) .* resigned")
        await shows(pilot, "#board", r"moves 1   resigned")
        await shows(pilot, "#status", r"^You resigned\.$")
        await type_line(pilot, "q")
        assert await exits(pilot) == 0


class Relay:
    """A TCP relay to a server, which a test cuts (every connection through it dropped,
    none taken) and restores on the same port: an outage of one client's network."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.port = 0
        self.listener: asyncio.Server | None = None
        self.writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    async def restore(self) -> None:
        self.listener = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self.listener.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self.listener is not None
        self.listener.close()
        for writer in self.writers:
            writer.transport.abort()
        self.writers.clear()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        self.writers.update((writer, up_writer))

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def test_the_clock_waits_for_the_server_in_an_outage(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the connection is down the clock says so (it has no race clock of its own);
    back, it is the server's, which moved on meanwhile (a rival's first win)."""
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    relay = Relay(server.server.port)
    await relay.restore()
    settings = {"countdown": 0, "finish": "first", "finish_grace": 30, "winnable": False}
    app = RaceApp(
        relay.url,
        name="away",
        settings=settings,
        request_timeout=TIMEOUT,
        resume_timeout=4 * TIMEOUT,
    )
    async with app.run_test(size=SIZE) as pilot:
        code = (await shows(pilot, "#title", r"room (\w{8})"))[1]
        rival = await make_client("rival")
        await rival.join(code)
        await type_line(pilot, "start")
        await rival.next_event("race_started", timeout=TIMEOUT)
        await shows(pilot, "#clock", r"^Time left 1[45]:\d\d$")
        await relay.cut()
        await shows(pilot, "#clock", r"^Time left: reconnecting…$")
        await shows(pilot, "log", r"Connection lost: reconnecting…")
        for move in line:  # the rival wins meanwhile: the race ends 30 s from now
            await rival.move(move)
        assert pane(app, "#clock") == "Time left: reconnecting…"
        await relay.restore()
        await shows(pilot, "log", r"Connection restored\.")
        await shows(pilot, "#clock", r"^Time left 0:[0-3]\d \(first to finish\)$")
        await shows(pilot, "#standings", r"rival .* won 1st")
        await quit_resigning(pilot)
        assert await exits(pilot) == 0
    await relay.cut()


async def test_a_guest_back_in_its_old_lobby_shows_the_room_it_makes_instead(
    server: RunningServer, make_client: ClientFactory
) -> None:
    """A kept guest that comes back within the resume grace is put back in its old room
    (a lobby here); ``play`` leaves it for a new room. The old room's snapshot, sent on the
    way back, arrives among the events after that: the header and the link name the new
    room, where the friends who follow the link find the player."""
    before = await make_client("quinn")
    old = (await before.create_room("canfield"))["code"]
    token = before.token
    app = RaceApp(
        server.url, name="quinn", token=token, settings={"countdown": 0}, request_timeout=TIMEOUT
    )
    async with app.run_test(size=SIZE) as pilot:
        code = (await shows(pilot, "#title", r"room (\w{8})  canfield  you are quinn"))[1]
        assert app.client.room is not None
        new = app.client.room["code"]
        assert new != old
        rival = await make_client("rival")
        await rival.join(new)  # the events after the welcome's have all been taken
        await shows(pilot, "#room", r"^  rival$")
        assert code == new and f"room {new}" in pane(app, "#title"), pane(app, "#title")
        assert f"/r/{new}" in pane(app, "#title")
        await type_line(pilot, "q")
        assert await exits(pilot) == 0


async def test_q_asks_before_it_resigns_a_game_that_goes_on(server: RunningServer) -> None:
    """As the line client: q in a running race asks whether to resign; anything but yes
    keeps the game (a stray q no longer forfeits it), and a line other than yes or no is
    carried out as typed."""
    app = RaceApp(server.url, name="asked", settings={"countdown": 0}, request_timeout=TIMEOUT)
    async with app.run_test(size=SIZE) as pilot:
        await shows(pilot, "#title", r"room \w{8}")
        await type_line(pilot, "start")
        await until(pilot, lambda: app.client.view is not None, "the deal")
        await type_line(pilot, "q")
        await shows(
            pilot, "log", r"Quitting gives up your game, which goes on: resign this race\? y/N"
        )
        await type_line(pilot, "n")
        await shows(pilot, "log", r"Not resigned: your game goes on\.")
        await type_line(pilot, "q")
        await type_line(pilot, "d")  # no answer: a move, played
        await shows(pilot, "#board", r"moves 1 ")
        assert app.client.view is not None and app.client.view["status"] == "playing"
        await quit_resigning(pilot)
        assert await exits(pilot) == 0
    assert app.farewell[0] == "You resigned.", app.farewell


async def test_a_name_asked_for_under_a_login_says_who_plays(server: RunningServer) -> None:
    """With a login kept, play goes as the account whatever --name says, and says so."""
    async with account(server.url, "erin") as erin:
        token = erin.token
    app = RaceApp(
        server.url,
        name="Dana",
        token=token,
        asked_name="Dana",
        settings={"countdown": 0},
        request_timeout=TIMEOUT,
    )
    async with app.run_test(size=SIZE) as pilot:
        await shows(pilot, "#title", r"room \w{8}  canfield  you are erin")
        await shows(pilot, "log", r"You play as erin, the account logged in on this server")
        await type_line(pilot, "q")
        assert await exits(pilot) == 0
