"""The line-by-line client (``--plain``) per game, against a real server: its help and
its refusals give the room's game's moves (the one table the full-screen client reads
too), and ``q`` asks before it resigns a game that goes on."""

from __future__ import annotations

import asyncio
import re

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer
from terminal_support import RESIGN_ASKED, joined, quit_resigning, start_play
from test_terminal import ScriptedConsole

from solrace.client import ServerError
from solrace.client.moves_help import GAME_MOVES, brief_examples, move_examples, moves_text
from solrace.client.terminal import RESIGN_ASK, daily_line_help, line_help, refusal
from solrace.client.tui import daily_help, play_help
from solrace.engine import VARIANTS, parse_move

STOCK_MOVES = ("w-f", "w-t", "r-t", "r-f", "f2-t", "rd", "d")
"""Moves of the games with a stock, waste and reserve: a Canister game has none."""


@pytest.fixture
def backend_kind() -> str:
    """The terminal client does not depend on the backend: the embedded one serves it."""
    return "embedded"


def _moves_named(text: str) -> set[str]:
    """The moves a help or refusal names (``d`` and ``rd`` as words)."""
    return set(re.findall(r"\b(?:[trwf]\d?-[tf]\d?(?:x[\dN])?|rd|d|u)\b", text))


def test_one_table_gives_both_clients_each_game_s_moves() -> None:
    assert set(GAME_MOVES) == set(VARIANTS)
    for variant, moves in GAME_MOVES.items():
        notations = {m.notation for m in moves}
        for move in notations:
            parse_move(move.replace("xN", "x2"))  # each is in the engine's notation
        for text in (line_help(variant), daily_line_help(variant)):
            assert moves_text(variant) in text, (variant, text)
        # The full-screen client's help is the same table's.
        assert moves_text(variant) in play_help(True, variant)
        assert moves_text(variant) in daily_help(variant)
        typed = {n.replace("xN", "x2") for n in notations}
        assert _moves_named(move_examples(variant)) == typed
        assert _moves_named(move_examples(variant, undo=True)) == typed | {"u"}
        assert _moves_named(brief_examples(variant)) <= typed
    for variant in ("british-canister", "american-canister"):
        said = " ".join(
            (
                line_help(variant),
                daily_line_help(variant),
                move_examples(variant, undo=True),
                brief_examples(variant),
            )
        )
        for move in STOCK_MOVES:
            assert not re.search(rf"(?<![\w-]){move}\b", said), (variant, move, said)
    assert "u undoes" not in line_help("canfield", undo=False)
    assert "no undo in this room" in line_help("canfield", undo=False)


def test_a_refusal_of_text_that_is_no_move_gives_the_game_s_moves() -> None:
    error = ServerError(
        {
            "code": "bad_move",
            "message": "'xyz' is not a move: write e.g. 't1-t3', 't1-t3x2', 'w-f', 'd', 'rd' or 'u'",
        }
    )
    assert refusal(error, "british-canister", undo=True) == (
        "Refused: 'xyz' is not a move; write e.g. t1-t3, t2-f or u. [bad_move]"
    )
    assert refusal(error, "american-canister") == (
        "Refused: 'xyz' is not a move; write e.g. t1-t3, t1-t3x2 or t2-f. [bad_move]"
    )
    assert "w-f" in refusal(error, "canfield") and "rd" in refusal(error, "canfield")
    assert "rd" not in refusal(error, "rainbow-canfield")  # no redeal
    # A game not known yet: the server's sentence as it is.
    assert refusal(error).startswith("Refused: 'xyz' is not a move: write e.g. 't1-t3'")


async def _racing(
    server: RunningServer,
    make_client: ClientFactory,
    console: ScriptedConsole,
    variant: str,
    **settings: object,
) -> asyncio.Future[int]:
    """The line client in a race of ``variant`` against a rival (so that it goes on)."""
    task = start_play(
        server.url, console, name="plain", variant=variant, settings={"countdown": 0, **settings}
    )
    await joined(console, make_client, "plain", "rival", room=rf"^room (\w+) \({variant}\)")
    console.type("start")
    await console.shows(rf"^race 1 started: {variant}")
    return task


async def _help_in_a_race(
    server: RunningServer, make_client: ClientFactory, variant: str, **settings: object
) -> tuple[ScriptedConsole, asyncio.Future[int], str]:
    """The line client's help in a race of ``variant``: its console, its run and the line
    the help is."""
    console = ScriptedConsole()
    task = await _racing(server, make_client, console, variant, **settings)
    console.type("help")
    helped = (await console.shows(r"^Type a number from the list, or a move: ")).string
    return console, task, helped


async def test_the_line_client_s_help_and_refusals_are_the_game_s(
    server: RunningServer, make_client: ClientFactory
) -> None:
    console, task, helped = await _help_in_a_race(server, make_client, "british-canister")
    assert "t1-t3 (the top card of pile 1 onto pile 3), t2-f (to a foundation)" in helped
    assert _moves_named(helped) == {"t1-t3", "t2-f", "u"}, helped
    console.type("xyz")
    await console.shows(
        r"^Refused: 'xyz' is not a move; write e.g. t1-t3, t2-f or u\. \[bad_move\]$"
    )
    await quit_resigning(console, task)


async def test_a_room_without_undo_suggests_no_undo(
    server: RunningServer, make_client: ClientFactory
) -> None:
    console, task, helped = await _help_in_a_race(
        server, make_client, "american-canister", undo=False
    )
    assert "no undo in this room" in helped and "u undoes" not in helped
    console.type("t1")
    await console.shows(r"^Refused: .*; write e.g. t1-t3, t1-t3x2 or t2-f\. \[bad_move\]$")
    await quit_resigning(console, task)


async def test_q_asks_before_it_resigns_a_game_that_goes_on(
    server: RunningServer, make_client: ClientFactory
) -> None:
    console = ScriptedConsole()
    task = await _racing(server, make_client, console, "canfield")
    console.type("q")
    assert (await console.shows(RESIGN_ASKED)).string == RESIGN_ASK
    console.type("n")
    await console.shows(r"^not resigned: your game goes on$")
    console.type("q")
    shown = len(console.screen)
    await console.shows(RESIGN_ASKED, since=shown)
    console.type("board")  # no yes: the line is carried out, the game goes on
    await console.shows(r"^canfield  banked \d+/52  moves 0  status playing$", since=shown)
    assert not task.done()
    assert "You resigned." not in console.screen
    console.type("quit")
    shown = len(console.screen)
    await console.shows(RESIGN_ASKED, since=shown)
    console.type("y")
    await console.shows(r"^You resigned\.$")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_q_quits_at_once_in_the_lobby_and_once_the_game_is_over(
    server: RunningServer, make_client: ClientFactory
) -> None:
    console = ScriptedConsole()
    task = start_play(server.url, console, name="lobby")
    await console.shows(r"^room \w+ \(canfield\)")
    console.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0
    assert RESIGN_ASK not in console.screen

    console = ScriptedConsole()
    task = await _racing(server, make_client, console, "canfield")
    console.type("resign")
    await console.shows(r"^You resigned\.$")
    console.type("q")  # the game is over: nothing to give up
    assert await asyncio.wait_for(task, TIMEOUT) == 0
    assert RESIGN_ASK not in console.screen
