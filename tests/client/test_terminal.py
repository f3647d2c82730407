"""The command-line client, driven through its Console with scripted lines."""

from __future__ import annotations

import asyncio
import re

from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory

from solrace.client import Client
from solrace.client.terminal import daily, play, render_view, watch
from solrace.engine import new_game, player_view


class ScriptedConsole:
    """A console whose input is fed by the test and whose screen is a list of lines."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.screen: list[str] = []

    async def read_line(self) -> str | None:
        return await self.lines.get()

    def write(self, text: str) -> None:
        self.screen.extend(text.splitlines())

    def type(self, line: str) -> None:
        self.lines.put_nowait(line)

    async def shows(self, pattern: str, since: int = 0) -> re.Match[str]:
        """Wait until a line on the screen (from line ``since`` on) matches ``pattern``;
        return the match."""
        async with asyncio.timeout(TIMEOUT):
            while True:
                for line in self.screen[since:]:
                    match = re.search(pattern, line)
                    if match:
                        return match
                await asyncio.sleep(0.01)


def test_render_view_labels_every_pile_and_hides_face_down_cards() -> None:
    game = new_game("canfield", 5)
    text = render_view(player_view(game))
    for label in ("foundations", "reserve (13)", "stock (34)", "t1", "t4"):
        assert label in text
    hidden = {c for c in game.stock} | set(game.reserve[:-1])
    from solrace.engine import card_name

    for card in hidden:
        name = card_name(card)
        rank, suit = name[:-1], {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}[name[-1]]
        assert f"{rank:>2}{suit}" not in text


async def test_play_in_the_terminal_from_lobby_to_results(
    server: RunningServer, make_client: ClientFactory
) -> None:
    console = ScriptedConsole()
    task = asyncio.ensure_future(
        play(
            server.url,
            console,
            name="terminal",
            variant="rainbow-canfield",
            settings={"countdown": 0},
        )
    )
    code = (await console.shows(r"^room (\w+) \(rainbow-canfield\)"))[1]
    rival = await make_client("rival")
    await rival.join(code)
    await console.shows(r"in the room: terminal \(host\), rival")
    console.type("d")  # before the race: the refusal says what to do, in words
    await console.shows(
        r"^Refused: The race has not started; type 'ready' when you are; "
        r"the host may type 'start'\. \[race_not_started\]$"
    )
    console.type("start")
    await console.shows(r"^race 1 started: rainbow-canfield")
    first = (await console.shows(r"moves: 1\) (\S+)"))[1]
    console.type("1")
    await console.shows(rf"^played {re.escape(first)}")
    await rival.next_event("race_started", timeout=TIMEOUT)
    await rival.move("d")
    await console.shows(r"rival \[.*\]\s+\d+/52\s+moves\s+1\s+playing")
    console.type("t9-t1")
    await console.shows(r"^Refused: This game has no pile t9\. \[illegal_move\]$")
    await rival.resign()
    console.type("resign")
    seed = (await console.shows(r"results of race 1 \(rainbow-canfield, seed (\d+)\)"))[1]
    assert int(seed) >= 0
    await console.shows(r"^\s+1\. ")
    console.type("q")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


async def test_watch_shows_boards_live_and_the_results(
    server: RunningServer, make_client: ClientFactory
) -> None:
    host = await make_client("host")
    room = await host.create_room("canfield", countdown=0, spectators="live")
    console = ScriptedConsole()
    task = asyncio.ensure_future(watch(server.url, room["code"], console))
    await console.shows(rf"^watching room {room['code']} \(canfield\)")
    await host.start()
    await console.shows(r"^race 1 started: canfield")
    await console.shows(r"^--- host")
    await host.next_event("race_started", timeout=TIMEOUT)
    await host.move("d")
    await console.shows(r"canfield\s+banked 1/52\s+moves 1")
    await host.resign()
    await console.shows(r"results of race 1 \(canfield, seed \d+\)")
    http = server.url.replace("ws://", "http://").rstrip("/")
    await console.shows(rf"^replay: {http}/replay/{room['code']}/1$")
    assert await asyncio.wait_for(task, TIMEOUT) == 0
    # A spectator may not ask for a rematch: it is not offered one.
    assert not [line for line in console.screen if "rematch" in line]


async def test_the_line_client_gives_the_room_link_and_ends_when_the_server_is_gone(
    server: RunningServer,
) -> None:
    console = ScriptedConsole()
    task = asyncio.ensure_future(play(server.url, console, name="solo", resume_timeout=0.5))
    code = (await console.shows(r"^room (\w{8}) "))[1]
    http = server.url.replace("ws://", "http://").rstrip("/")
    await console.shows(rf"^send friends the room's link: {http}/r/{code}$")
    await server.server.close()
    # No line is typed: the prompt does not wait for one once the server is given up.
    assert await asyncio.wait_for(task, TIMEOUT) == 1
    await console.shows(r"^the server is gone: it did not come back")


async def test_the_daily_help_says_what_the_daily_allows(
    start_server: ServerFactory,
) -> None:
    from daily_support import AT_ONCE, PASSWORD

    server = await start_server(**AT_ONCE)
    async with Client(server.url, name="dot", request_timeout=TIMEOUT) as dot:
        await dot.claim(PASSWORD)
        token = dot.token
    console = ScriptedConsole()
    task = asyncio.ensure_future(
        daily(server.url, console, variant="canfield", name="dot", token=token)
    )
    line = (await console.shows(r"minutes\. (.*)$"))[1]
    assert "no undo" in line and "u undoes" not in line and "no rematch" in line
    console.type("q")
    await console.shows(r"resign this race\? y/N$")  # the game goes on: q asks
    console.type("y")
    await asyncio.wait_for(task, TIMEOUT)
