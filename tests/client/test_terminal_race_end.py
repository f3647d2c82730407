"""How a race ends, in the terminal: a stuck player may undo, a winner reads their place,
the standings come by place, par is given, and the host sets how the race ends."""

from __future__ import annotations

import asyncio
import io
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from test_terminal import ScriptedConsole

from solrace.cli import main
from solrace.client.terminal import heard_standing, play, render_standings
from solrace.engine import parse_move

# The end-to-end helpers of the server tests: forced deals and known lines.
sys.path.append(str(Path(__file__).resolve().parents[1] / "server"))
from e2e_support import FAST, deal_seed, fresh, winning_deal
from test_e2e_race import _line_to_stuck

STUCK_UNDO = r"^No move left: undo \(u\) or resign \(q/resign\)$"


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets the terminal play a whole game at full speed."""
    return await start_server(limits=FAST)


def _play(server: RunningServer, console: ScriptedConsole, **kwargs: Any) -> asyncio.Future[int]:
    return asyncio.ensure_future(play(server.url, console, **kwargs))


async def test_stuck_where_undo_is_allowed_offers_undo_and_the_game_goes_on(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = _line_to_stuck("british-canister")
    deal_seed(monkeypatch, seed)
    console = ScriptedConsole()
    task = _play(
        server, console, name="stuck", variant="british-canister", settings={"countdown": 0}
    )
    await console.shows(r"^room \w+ \(british-canister\)")
    await console.shows(r"^race: any deal, winnable or not; everyone finishes")
    console.type("start")
    await console.shows(r"^race 1 started: british-canister")
    for move in line:
        console.type(move)
    await console.shows(rf"^played {re.escape(line[-1])}$")
    await console.shows(r"status stuck")
    await console.shows(STUCK_UNDO)
    mark = len(console.screen)
    console.type("u")
    await console.shows(r"^played u$", mark)
    await console.shows(r"status playing", mark)
    replay = (await console.shows(r"^moves: 1\) (\S+)", mark))[1]
    console.type("1")
    await console.shows(rf"^played {re.escape(replay)}$", mark)
    console.type("resign")
    await console.shows(r"^You resigned\.$")
    await console.shows(r"^\s+1\. stuck\s+resigned")
    assert not any("game is over" in line for line in console.screen)
    # Said plainly, once: what a British Canister race is about.
    assert sum("almost never winnable" in line for line in console.screen) == 1
    assert any("races are about cards banked" in line for line in console.screen)
    console.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_stuck_without_undo_ends_the_game_at_once(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = _line_to_stuck("british-canister")
    deal_seed(monkeypatch, seed)
    console = ScriptedConsole()
    task = _play(
        server,
        console,
        name="stuck",
        variant="british-canister",
        settings={"countdown": 0, "undo": False},
    )
    await console.shows(r"^room \w+ \(british-canister\)")
    console.type("start")
    await console.shows(r"^race 1 started")
    for move in line:
        console.type(move)
    await console.shows(r"^No move left: your game is over$")
    await console.shows(r"^\s+1\. stuck\s+stuck")
    assert not any(re.search(STUCK_UNDO, line) for line in console.screen)
    console.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_a_second_winner_reads_their_place_and_the_standings_come_by_place(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    console = ScriptedConsole()
    task = _play(server, console, name="second", settings={"countdown": 0})
    code = (await console.shows(r"^room (\w+) \(canfield\)"))[1]
    first, idle, banker = [await make_client(n) for n in ("first", "idle", "banker")]
    for client in (first, idle, banker):
        await client.join(code)
    await console.shows(r"in the room: second \(host\), first, idle, banker")
    console.type("start")
    for client in (first, idle, banker):
        await client.next_event("race_started", timeout=TIMEOUT)
    # The banker banks a card or more and plays no further; the idle player never moves.
    local = fresh("canfield", seed)
    start = local.banked
    for move in line:
        await banker.move(move)
        local.apply(parse_move(move))
        if local.banked > start:
            break
    banked = local.banked
    for move in line:
        await first.move(move)
    await console.shows(r"first \[.*\]\s+52/52\s+moves\s+\d+\s+won 1st")
    for move in line:
        console.type(move)
    await console.shows(r"^You finished 2nd of 4: all 52 cards are home!$")
    await console.shows(r"^You may leave \(q\) or keep watching the standings")
    assert not any("You won" in line for line in console.screen)
    head = max(i for i, line in enumerate(console.screen) if line == "standings:")
    rows = console.screen[head + 1 : head + 5]
    assert [row.split()[1] for row in rows] == ["first", "second", "banker", "idle"]
    assert "won 1st" in rows[0] and "won 2nd" in rows[1]
    assert f"{banked:2}/52" in rows[2] and f"{start:2}/52" in rows[3]
    # A finished player keeps watching: a move of another brings the standings again.
    mark = len(console.screen)
    await banker.resign()
    await console.shows(r"^standings:$", mark)
    await console.shows(r"^\s+3\.\s+banker .*resigned", mark)
    await idle.resign()
    await console.shows(r"results of race 1 \(canfield, seed \d+\)")
    results = [line.split()[1] for line in console.screen if re.match(r"^\s+\d\. \w+\s+\w", line)]
    assert results[-4:] == ["first", "second", "banker", "idle"]
    assert not any(line.startswith("par ") for line in console.screen)  # not a winnable room
    console.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_a_first_to_finish_race_tells_when_it_ends(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    console = ScriptedConsole()
    task = _play(
        server,
        console,
        name="slow",
        settings={"countdown": 0, "finish": "first", "finish_grace": 1},
    )
    code = (await console.shows(r"^room (\w+) \(canfield\)"))[1]
    await console.shows(r"first to finish \(the race ends 1 s after the first win\)")
    quick = await make_client("quick")
    await quick.join(code)
    await console.shows(r"in the room: slow \(host\), quick")
    console.type("start")
    await quick.next_event("race_started", timeout=TIMEOUT)
    for move in line:
        await quick.move(move)
    await console.shows(r"^first to finish: quick won, the race ends in 1 s$")
    await console.shows(r"results of race 1")
    await console.shows(r"^\s+2\. slow\s+not finished\s+banked")
    console.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_a_winnable_room_gives_par_in_the_results(start_server: ServerFactory) -> None:
    server = await start_server(
        limits=FAST, winnable_default=True, deal_pool_size=1, solver_budget_s=1.0
    )
    async with asyncio.timeout(4 * TIMEOUT):  # the pool is filled behind the start
        while await server.node.backend.certified_count("canfield") < 1:
            await asyncio.sleep(0.05)
    console = ScriptedConsole()
    task = _play(server, console, name="par", settings={"countdown": 0})
    await console.shows(r"^race: winnable deals only \(the results give par\); everyone")
    console.type("start")
    await console.shows(r"^race 1 started: canfield")
    console.type("resign")
    par = (await console.shows(r"^par (\d+) moves: the solver's winning line$"))[1]
    assert int(par) > 0
    console.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_everyone_sees_how_the_race_ends_and_the_host_changes_it(
    server: RunningServer,
) -> None:
    host, guest = ScriptedConsole(), ScriptedConsole()
    hosting = _play(
        server,
        host,
        name="host",
        settings={"countdown": 0, "finish": "first", "finish_grace": 20},
    )
    code = (await host.shows(r"^room (\w+) \(canfield\)"))[1]
    first_20 = r"^race: any deal, winnable or not; first to finish \(the race ends 20 s after"
    await host.shows(first_20)
    await host.shows(r"'finish first 30'")  # the host is told how to change it
    joining = _play(server, guest, name="guest", join=code)
    await guest.shows(first_20)
    assert not any("'finish first 30'" in line for line in guest.screen)
    host.type("finish everyone")
    for console in (host, guest):
        await console.shows(r"^race: any deal, winnable or not; everyone finishes \(the race")
    guest.type("finish first")
    await guest.shows(r"^Refused: Only the host .*\[not_host\]$")
    host.type("finish sometimes")
    await host.shows(r"^Refused: .*\[bad_settings\]$")
    host.type("finish first soon")
    await host.shows(r"^the host sets how the race ends")
    host.type("finish first 5")
    for console in (host, guest):
        await console.shows(r"first to finish \(the race ends 5 s after the first win\)")
    for console in (host, guest):
        console.type("q")
    assert await asyncio.wait_for(hosting, TIMEOUT) == 0
    assert await asyncio.wait_for(joining, TIMEOUT) == 0


def _solrace_play(server: RunningServer, *options: str) -> tuple[int, str]:
    """``solrace play`` on the server with ``options``, quitting at once: its code and output."""
    out = io.StringIO()
    argv = ["play", server.url, "--name", "cli", "--no-color", *options]
    stdin = sys.stdin
    sys.stdin = io.StringIO("q\n")
    try:
        with redirect_stdout(out):
            code = main(argv)
    finally:
        sys.stdin = stdin
    return code, out.getvalue()


async def test_solrace_play_takes_the_game_winnable_and_finish(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no login of this machine's
    code, out = await asyncio.to_thread(_solrace_play, server)
    assert code == 0 and re.search(r"^room \w+ \(canfield\)", out, re.M)  # the default game
    code, out = await asyncio.to_thread(
        _solrace_play, server, "--winnable", "--finish", "first", "--finish-grace", "20"
    )
    assert code == 0
    assert (
        "race: winnable deals only (the results give par); "
        "first to finish (the race ends 20 s after the first win)"
    ) in out
    code, out = await asyncio.to_thread(
        _solrace_play, server, "--game", "british-canister", "--no-winnable"
    )
    assert code == 0 and "(british-canister)" in out
    assert out.count("almost never winnable") == 1
    code, out = await asyncio.to_thread(
        _solrace_play, server, "--game", "british-canister", "--winnable"
    )
    assert code == 1
    assert "could not create the room" in out and "cards banked" in out
    code, out = await asyncio.to_thread(_solrace_play, server, "--ghost", "NOROOM99/1/abc")
    assert code == 1 and "ghost: no such run is kept" in out


def test_players_level_in_cards_stand_by_when_they_first_reached_them() -> None:
    """Ann banks her second card at 1.8 s and plays on; Ben banks his at 7.8 s and stops.
    The results rank Ann first (she got there first), and so do the terminal's standings,
    though Ann's last move came later than Ben's; a card played back and banked again
    ranks from the first time."""
    names = {"a": "Ann", "b": "Ben"}
    heard: dict[str, dict[str, Any]] = {}
    for entry in (
        {"player_id": "a", "banked": 2, "moves": 3, "status": "playing", "elapsed_ms": 1800},
        {"player_id": "b", "banked": 2, "moves": 5, "status": "playing", "elapsed_ms": 7800},
        {"player_id": "a", "banked": 1, "moves": 9, "status": "playing", "elapsed_ms": 8500},
        {"player_id": "a", "banked": 2, "moves": 10, "status": "playing", "elapsed_ms": 9200},
    ):
        heard[entry["player_id"]] = heard_standing(heard.get(entry["player_id"]), entry)
    assert heard["a"]["banked_at_ms"] == 1800 and heard["b"]["banked_at_ms"] == 7800
    lines = render_standings(list(heard.values()), names).splitlines()
    assert re.match(r"\s*1\.\s+Ann ", lines[1]) and re.match(r"\s*2\.\s+Ben ", lines[2]), lines
    # A snapshot's time for the count is taken as it is.
    ben = heard_standing(None, {**heard["b"], "banked_at_ms": 7000, "elapsed_ms": 9900})
    assert ben["banked_at_ms"] == 7000
