"""The command-line client: play or watch a race in a terminal, line by line.

Input and output go through a :class:`Console`, so that tests drive a whole game with
scripted lines and read what the screen shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from .connection import Client, ClientClosed, ServerError

__all__ = [
    "Console",
    "StdConsole",
    "play",
    "render_progress",
    "render_results",
    "render_spectators",
    "render_view",
    "watch",
]

SUITS = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}
RED, RESET = "\x1b[31m", "\x1b[0m"
HELP = (
    "Type a number from the list, or a move such as t1-t3, t1-t3x2, w-f, d, rd;"
    " u undoes, 'resign' gives up, 'q' quits."
)
SPECTATORS_HELP = (
    "the host sets who may watch, in the lobby: 'spectators live', 'spectators delayed 30'"
    " (seconds), 'spectators after' or 'spectators off'"
)


class Console(Protocol):
    """Where the client reads lines and writes text."""

    async def read_line(self) -> str | None:
        """The next line typed, or None at the end of input."""

    def write(self, text: str) -> None:
        """Show text."""


class StdConsole:
    """The terminal: standard input and output."""

    def __init__(self, color: bool | None = None) -> None:
        self.color = sys.stdout.isatty() if color is None else color

    async def read_line(self) -> str | None:
        """Read a line without blocking the event loop."""
        line = await asyncio.to_thread(sys.stdin.readline)
        return line if line else None

    def write(self, text: str) -> None:
        """Print to standard output."""
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()


def _card(name: str | None, color: bool) -> str:
    if not name:
        return " -- "
    rank, suit = name[:-1], name[-1]
    text = f"{rank:>2}{SUITS.get(suit, suit)}"
    return f"{RED}{text}{RESET}" if color and suit in "DH" else text


def render_view(view: dict[str, Any], *, color: bool = False) -> str:
    """A player's (masked) board as lines of text: every pile labelled, bottom card first."""
    lines = [
        f"{view['variant']}  banked {view['banked']}/52  moves {view['moves']}  status {view['status']}"
    ]
    found = "  ".join(
        f"f{i + 1}:{_card(f['top'], color)}" for i, f in enumerate(view["foundations"])
    )
    lines.append(f"foundations  {found}")
    if "reserve" in view:
        reserve = view["reserve"]
        waste = view["waste"]
        visible = " ".join(_card(c, color) for c in waste["visible"]) or " -- "
        lines.append(
            f"reserve ({reserve['count']:2}) {_card(reserve['top'], color)}   "
            f"stock ({view['stock']['count']:2})   waste ({waste['count']:2}) {visible}"
        )
    for i, pile in enumerate(view["tableau"]):
        cards = " ".join(_card(c, color) for c in pile) or " -- "
        lines.append(f"t{i + 1}  {cards}")
    return "\n".join(lines)


def render_moves(legal: Sequence[str]) -> str:
    """The numbered list of legal moves."""
    if not legal:
        return "no legal move"
    return "moves: " + "  ".join(f"{i}) {m}" for i, m in enumerate(legal, start=1))


def render_progress(standing: dict[str, Any], names: dict[str, str]) -> str:
    """One player's standing (an entry of a progress event) as a line."""
    name = names.get(standing["player_id"], standing["player_id"])
    bar = "#" * (standing["banked"] * 20 // 52)
    return (
        f"{name:>12} [{bar:<20}] {standing['banked']:2}/52  moves {standing['moves']:3}  "
        f"{standing['status']}  {standing['elapsed_ms'] / 1000:.1f}s"
    )


def render_spectators(settings: dict[str, Any]) -> str:
    """The room's spectator setting, as everyone in the room is shown it."""
    mode = settings.get("spectators")
    if mode is True or mode is False:  # a server from before the modes
        return f"spectators: {'on' if mode else 'off'}"
    if mode == "live":
        return "spectators: live (they see every board as it is played)"
    if mode == "delayed":
        return f"spectators: delayed (they see the boards {settings.get('spectator_delay')} s late)"
    if mode == "after":
        return "spectators: after (progress only; the boards once the race is over)"
    return f"spectators: {mode}"


def render_results(event: dict[str, Any]) -> str:
    """The ranked results of a race, with the revealed seed."""
    if event.get("daily"):
        ranked = "ranked" if event.get("attempt") == 1 else "not ranked"
        head = f"daily {event['daily']}, attempt {event.get('attempt')}, {ranked}; seed shown after the day"
    else:
        head = f"seed {event['seed']}"
    lines = [f"results of race {event['race']} ({event['variant']}, {head}):"]
    for r in event["results"]:
        lines.append(
            f"{r['rank']:3}. {r['name']:<16} {r['status']:<11} banked {r['banked']:2}  "
            f"moves {r['moves']:3}  {r['time_ms'] / 1000:.1f}s"
        )
    return "\n".join(lines)


class _Session:
    """What the terminal client keeps of the room it is in."""

    def __init__(self, client: Client, console: Console, color: bool) -> None:
        self.client = client
        self.console = console
        self.color = color
        self.names: dict[str, str] = {}
        self.racing = False
        self.finished = asyncio.Event()
        self.spectators: str | None = None  # the setting line last shown

    def show_spectators(self, settings: dict[str, Any]) -> None:
        """Show the room's spectator setting, when it is new or has changed."""
        line = render_spectators(settings)
        if line != self.spectators:
            self.spectators = line
            self.console.write(line)

    def show_boards(self, boards: dict[str, Any], note: str = "") -> None:
        for player_id, board in boards.items():
            self.console.write(f"--- {self.names.get(player_id, player_id)}{note}")
            self.console.write(render_view(board, color=self.color))

    def show_board(self) -> None:
        view = self.client.view
        if view is None:
            return
        self.console.write(render_view(view, color=self.color))
        if view["status"] == "playing":
            self.console.write(render_moves(view.get("legal", [])))

    def on_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        me = self.client.player_id
        if kind == "members" and event.get("closed"):
            self.console.write(f"the room was closed: {event['closed']}")
            self.finished.set()
        elif kind == "members" and me in (event.get("removed") or {}):
            why = event["removed"][me]
            reason = "the host turned spectators off" if why == "spectators_off" else why
            self.console.write(f"you are out of the room: {reason}")
            self.finished.set()
        elif kind == "members":
            self.show_spectators(event["settings"])
            self.names = {m["player_id"]: m["name"] for m in event["members"]}
            who = ", ".join(
                f"{m['name']}{' (host)' if m['player_id'] == event['host'] else ''}"
                f"{' ready' if m['ready'] else ''}{' spectating' if m['role'] == 'spectator' else ''}"
                for m in event["members"]
            )
            self.console.write(f"in the room: {who}")
        elif kind == "countdown":
            self.console.write(f"the race starts in {event['seconds']} s")
        elif kind == "race_started":
            self.racing = True
            self.names.update({p["player_id"]: p["name"] for p in event["players"]})
            self.console.write(f"race {event['race']} started: {event['variant']}")
            if "boards" in event:
                self.show_boards(event["boards"])
            elif "view" in event:
                self.show_board()
            else:
                self.console.write("the boards are shown once the race is over")
        elif kind == "progress":
            for standing in event["players"]:
                player_id = standing["player_id"]
                if "view" in standing:
                    self.console.write(f"--- {self.names.get(player_id, player_id)}")
                    self.console.write(render_view(standing["view"], color=self.color))
                elif player_id != me:
                    self.console.write(render_progress(standing, self.names))
        elif kind == "boards":
            self.show_boards(event["boards"], f" ({event['delay']} s ago)")
        elif kind == "race_over":
            self.racing = False
            if "boards" in event:
                self.show_boards(event["boards"], " (final)")
            self.console.write(render_results(event))
            self.console.write("type 'rematch' for a new deal, or 'q' to quit")
            self.finished.set()
        elif kind == "resumed":
            if event.get("restarted"):
                self.console.write("the server restarted; connection restored, the race goes on")
            else:
                self.console.write("connection restored")
        elif kind == "closed":
            self.console.write("connection closed")
            self.finished.set()

    async def pump(self) -> None:
        async for event in self.client.events():
            self.on_event(event)

    async def command(self, line: str) -> bool:
        """Carry out one typed line; False when the user quits."""
        text = line.strip()
        if not text:
            return True
        if text in ("q", "quit", "exit"):
            return False
        try:
            if text == "help":
                self.console.write(HELP)
            elif text == "ready":
                await self.client.ready()
            elif text == "start":
                await self.client.start()
            elif text == "rematch":
                await self.client.rematch()
            elif text.split()[0] == "spectators":
                words = text.split()
                if len(words) not in (2, 3) or (len(words) == 3 and not words[2].isdigit()):
                    self.console.write(SPECTATORS_HELP)
                else:
                    delay = int(words[2]) if len(words) == 3 else None
                    await self.client.set_settings(words[1], delay)
            elif text == "resign":
                await self.client.resign()
            elif text in ("board", "b"):
                self.show_board()
            else:
                legal = (self.client.view or {}).get("legal", [])
                move = (
                    legal[int(text) - 1] if text.isdigit() and 0 < int(text) <= len(legal) else text
                )
                ack = await self.client.move(move)
                self.console.write(f"played {ack['move']}")
                self.show_board()
        except ServerError as error:
            detail = f" ({error.reason})" if error.reason else ""
            self.console.write(f"refused: {error.code}{detail}: {error.message}")
        return True


async def _run(session: _Session, *, interactive: bool) -> int:
    pump = asyncio.ensure_future(session.pump())
    try:
        while True:
            if interactive:
                line = await session.console.read_line()
                if line is None or not await session.command(line):
                    break
            else:
                await session.finished.wait()
                break
    except ClientClosed as error:
        session.console.write(f"disconnected: {error}")
        return 1
    finally:
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
        await session.client.close()
    return 0


async def play(
    url: str,
    console: Console,
    *,
    name: str,
    token: str | None = None,
    join: str | None = None,
    variant: str = "canfield",
    settings: dict[str, Any] | None = None,
    color: bool = False,
) -> int:
    """Create (or join) a room and play in the terminal until the user quits."""
    client = Client(url, name=name, token=token)
    try:
        await client.connect()
        if join:
            room = await client.join(join)
        else:
            room = await client.create_room(variant, **(settings or {}))
    except (ServerError, OSError) as error:
        console.write(f"could not {'join' if join else 'create'} the room: {error}")
        _stale_login(console, error, token)
        await client.close()
        return 1
    console.write(f"room {room['code']} ({room['settings']['variant']}); you are {client.name}")
    console.write("type 'ready' when you are (the host may type 'start'); 'help' lists moves")
    session = _Session(client, console, color)
    session.show_spectators(room["settings"])
    if room.get("host") == client.player_id:
        console.write(SPECTATORS_HELP)
    session.names = {m["player_id"]: m["name"] for m in room["members"]}
    return await _run(session, interactive=True)


def render_board(board: dict[str, Any]) -> str:
    """A daily leaderboard as lines: the top, your rank and streaks, and the seed once public."""
    lines = [f"daily {board['variant']} {board['date']}: {board['count']} ranked"]
    rows = {e["player_id"]: e for e in board["top"]}
    for e in board.get("around", []):
        rows.setdefault(e["player_id"], e)
    for e in sorted(rows.values(), key=lambda e: (e["rank"], e["name"])):
        lines.append(
            f"{e['rank']:4}. {e['name']:<16} {e['status']:<11} banked {e['banked']:2}  "
            f"moves {e['moves']:3}  {e['time_ms'] / 1000:.1f}s"
        )
    you = board.get("you")
    if you:
        lines.append(f"your rank: {you['rank']} of {board['count']}")
    streaks = board.get("streaks")
    if streaks:
        lines.append(
            f"streaks: {streaks['played']} days played, {streaks['won']} won "
            f"(best {streaks['best_played']} and {streaks['best_won']})"
        )
    if board.get("seed") is not None:
        lines.append(f"seed: {board['seed']}")
    return "\n".join(lines)


def _stale_login(console: Console, error: Exception, token: str | None) -> None:
    """Say what to do when the token kept by ``solrace login`` no longer works."""
    if token is not None and isinstance(error, ServerError) and error.code == "bad_token":
        console.write("the login kept for this server no longer works: solrace login again")


async def daily(
    url: str,
    console: Console,
    *,
    name: str,
    variant: str,
    token: str | None = None,
    color: bool = False,
) -> int:
    """Play today's daily deal of ``variant`` in the terminal, then show the leaderboard."""
    client = Client(url, name=name, token=token)
    try:
        await client.connect()
        room = await client.daily(variant)
    except (ServerError, OSError) as error:
        console.write(f"could not start the daily deal: {error}")
        _stale_login(console, error, token)
        await client.close()
        return 1
    settings = room["settings"]
    ranked = "ranked" if settings["attempt"] == 1 else "not ranked: your ranked try was the first"
    console.write(f"daily {variant} {settings['daily']}, attempt {settings['attempt']} ({ranked})")
    console.write(f"{settings['time_limit'] // 60} minutes, no undo. {HELP}")
    session = _Session(client, console, color)
    session.show_board()
    pump = asyncio.ensure_future(session.pump())
    reader: asyncio.Task[str | None] | None = None
    try:
        while not session.finished.is_set():
            reader = asyncio.ensure_future(console.read_line())
            finished = asyncio.ensure_future(session.finished.wait())
            done, _ = await asyncio.wait({reader, finished}, return_when=asyncio.FIRST_COMPLETED)
            finished.cancel()
            if reader not in done:
                break
            line = reader.result()
            reader = None
            if line is None or not await session.command(line):
                if client.view and client.view["status"] == "playing":
                    await client.resign()
                    await session.finished.wait()
                break
        console.write(render_board(await client.leaderboard(variant)))
    except (ClientClosed, ServerError) as error:
        console.write(f"disconnected: {error}")
        return 1
    finally:
        if reader is not None:
            reader.cancel()
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
        await client.close()
    return 0


async def watch(
    url: str,
    code: str,
    console: Console,
    *,
    name: str = "spectator",
    token: str | None = None,
    color: bool = False,
) -> int:
    """Watch a room as a spectator until its race is over."""
    client = Client(url, name=name, token=token)
    try:
        await client.connect()
        room = await client.join(code, role="spectator")
    except (ServerError, OSError) as error:
        console.write(f"could not watch room {code}: {error}")
        _stale_login(console, error, token)
        await client.close()
        return 1
    console.write(f"watching room {room['code']} ({room['settings']['variant']})")
    session = _Session(client, console, color)
    session.show_spectators(room["settings"])
    session.names = {m["player_id"]: m["name"] for m in room["members"]}
    session.show_boards(room.get("boards", {}))
    return await _run(session, interactive=False)
