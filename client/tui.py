"""The full-screen terminal client: ``solrace play``, ``watch`` and ``daily`` on Textual.

The board is drawn in place, beside a clock and the standings; what happens goes to a
log above the prompt, so that nothing the server sends ever lands in the line being
typed. Everything goes through the client library (:class:`Client`); the line-by-line
client (``--plain``, :mod:`solrace.client.terminal`) stays for scripts.

The app keeps what a person needs of the room: who is in it and how its race is set, the
player's own board (or every board a spectator may see), the standings by place, the
results with par. When the server goes away the library resumes by itself for a while;
if it gives up, the app ends with one line saying so and a non-zero code.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Input, RichLog, Static
from websockets.exceptions import WebSocketException

from .connection import RESUME_TIMEOUT_S, Client, ClientClosed, ServerError
from .moves_help import brief_examples, moves_text
from .terminal import (
    BRITISH_CANISTER,
    CLOCK_OFFLINE,
    CONNECTION_LOST,
    FINISH_HELP,
    MAY_LEAVE,
    NOT_SENT_OFFLINE,
    OFFLINE_TAG,
    RESIGN_ASK,
    SPECTATORS_HELP,
    STUCK_OVER,
    _standing_order,
    client_identity,
    clock,
    daily_board,
    duration,
    enter_room,
    gone_words,
    heard_standing,
    leave_quietly,
    listed,
    login_name_note,
    new_account_note,
    numbered,
    ordinal,
    refusal,
    render_attempt,
    render_board,
    render_race,
    render_results,
    render_spectators,
    shared_guest_note,
    status_word,
)
from .urls import room_link, why_unreachable

__all__ = [
    "DAILY_HELP",
    "STUCK_UNDO",
    "WATCH_HELP",
    "RaceApp",
    "board_text",
    "daily_help",
    "play_help",
    "standings_text",
]

Mode = Literal["play", "watch", "daily"]

SUITS = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}
MAX_LINE = 64
"""The longest line sent: a move or a command is far shorter (the server reads no string
over 256 characters, and cannot say which request such a frame was)."""
STUCK_UNDO = "No move left: undo or resign (u undoes the last move, 'resign' gives up)"
DAILY_HELP = (
    "The daily deal: the same deal for everyone today, and one ranked attempt (your first "
    "of the day); no undo, and no rematch: the leaderboard follows the results. Type a "
    "move and Enter: {moves}; or the number of a legal move (? lists them). "
    "'resign' gives up; q quits (and resigns the attempt)."
)
"""How the daily deal goes, ``{moves}`` standing for its game's (:func:`daily_help`)."""
WATCH_HELP = (
    "Watching: the standings, and the boards as the room's spectator setting shows them. "
    "This stays for the room's next race (a rematch); q quits."
)
GAMES = {
    "canfield": "Canfield: bring all 52 cards home, Ace to King by suit; build down in "
    "alternating colours; the stock turns three at a time, as often as you like.",
    "rainbow-canfield": "Rainbow Canfield: foundations start at the deal's lead rank and wrap "
    "King to Ace; build down in any suit, whole piles only; the stock turns one card, once.",
    "american-canister": "American Canister: every card face up on eight piles; build down "
    "in alternating colours, runs move as a unit; free the Aces, make room for the Kings.",
    "british-canister": "British Canister: every card face up on eight piles; build down in "
    "alternating colours, one card at a time; only a King fills an empty pile.",
}
RANKS = {
    "A": "Ace",
    "J": "Jack",
    "Q": "Queen",
    "K": "King",
}


def daily_help(variant: str) -> str:
    """How the daily deal of ``variant`` goes, with that game's moves."""
    return DAILY_HELP.format(moves=moves_text(variant))


def play_help(undo: bool, variant: str = "canfield") -> str:
    """How to play ``variant``, in a room where undo is (or is not) allowed."""
    undo_text = "u (undo)" if undo else "no undo in this room"
    return (
        f"Type a move and Enter: {moves_text(variant)}, {undo_text}; or the number of a legal "
        "move (? lists them, F2 too). 'ready' when you are, 'start' (the host), 'rematch' "
        "after a race, 'resign' gives up, 'link' shows the room's link, q quits."
    )


# -- drawing -------------------------------------------------------------------------------


FACE_DOWN = "▒▒"
"""A card face down, as the stock is drawn (and a card a spectator is not shown yet)."""


def _card(
    name: str | None, color: bool, *, width: int = 3, top: bool = False, face_down: bool = False
) -> Text:
    """A card as its rank and suit sign, right-aligned in ``width`` (red suits in red);
    an empty place (None) as dots, or with ``face_down`` a card withheld (None in a
    spectator's board) as its back."""
    if not name and face_down:
        return Text(f"{FACE_DOWN:>{width}}")
    if not name:
        return Text(f"{'··':>{width}}", style="dim")
    rank, suit = name[:-1], name[-1]
    face = rank + SUITS.get(suit, suit)
    style = "bold red" if color and suit in "DH" else "bold"
    text = Text(" " * max(0, width - len(face)))
    text.append(face, style=style + (" underline" if top else ""))
    return text


def _foundation_rule(view: dict[str, Any]) -> str:
    base = view.get("base_rank", "A")
    if view["variant"] == "rainbow-canfield":
        return f"from {RANKS.get(base, base)} up by suit, King wraps to Ace"
    return f"from {RANKS.get(base, base)} up to King, by suit"


MIN_PILE_ROWS = 2
"""The fewest rows a tableau pile is drawn in: the count of the cards under, and its top."""


def _pile_rows(pile: Sequence[str | None], rows: int) -> tuple[int, Sequence[str | None]]:
    """A pile drawn in at most ``rows`` rows: how many cards are left out under the first
    row's count (0: none), and the cards shown, its top card last."""
    if len(pile) <= rows:
        return 0, pile
    shown = max(rows, MIN_PILE_ROWS) - 1
    return len(pile) - shown, pile[-shown:]


def board_text(
    view: dict[str, Any],
    *,
    color: bool = True,
    title: str = "",
    compact: bool = False,
    status: str | None = None,
    height: int | None = None,
) -> Text:
    """A board (a player's masked view) drawn as it lies: foundations, then the reserve,
    stock and waste where the game has them, then the tableau in columns; every pile
    labelled with its name in the move notation. A card a spectator's board withholds
    (None in a running ``delayed`` race) is drawn face down. ``compact`` (a short
    terminal) leaves out the blank lines, the foundations' rule (but for Rainbow
    Canfield's lead rank) and long notes. ``status`` is the game's as the race has it
    (a resignation is the race's, not the board's). Within ``height`` lines, a pile too
    long for the rows left shows its last cards, the top one that plays included, under
    a count of the cards above them (``+5``)."""
    gap = "\n" if compact else "\n\n"
    text = Text()
    if title:
        text.append(f"{title}\n", style="bold reverse")
    status = status or view["status"]
    text.append(f"{view['variant']}", style="bold")
    text.append(f"   banked {view['banked']}/52   moves {view['moves']}   ")
    text.append(status_word(status), style="bold" if status != "playing" else "")
    text.append(gap)
    text.append("Foundations ", style="bold")
    for i, pile in enumerate(view["foundations"]):
        text.append(f" f{i + 1} ", style="dim")
        text.append_text(_card(pile["top"], color, face_down=pile["count"] > 0))
        text.append(" ")
    if compact and view["variant"] != "rainbow-canfield":
        text.append("\n")
    else:  # Rainbow Canfield's lead rank is the deal's: never left out
        text.append(f"\n             {_foundation_rule(view)}\n", style="dim")
    if "reserve" in view:
        reserve, stock, waste = view["reserve"], view["stock"], view["waste"]
        text.append("Reserve r   ", style="bold")
        left = reserve["count"]
        text.append_text(_card(reserve["top"], color, face_down=left > 0))
        shown = "face up" if reserve["top"] else "not shown yet"
        note = f"{left} left, the top one {shown}" if left else "empty"
        text.append(f"   {note}\n", style="dim")
        text.append("Stock       ", style="bold")
        text.append(" ▒▒" if stock["count"] else " ··", style="" if stock["count"] else "dim")
        note = f"{stock['count']} face down (d draws)" if stock["count"] else "empty"
        text.append(f"   {note}\n", style="dim")
        text.append("Waste w     ", style="bold")
        visible = waste["visible"]
        if not visible:
            text.append_text(_card(None, color))
        for i, card in enumerate(visible):
            if i:
                text.append(" ")
            last = i == len(visible) - 1 and len(visible) > 1
            text.append_text(_card(card, color, top=last, face_down=True))
        count = waste["count"]
        # (short enough for the board's pane, which crops a line rather than wrap it)
        note = f"{count} in all, the last plays" if count else "empty"
        if compact:
            note = f"{count}, the last plays" if count else "empty"
        text.append(f"   {note}\n", style="dim")
    piles = view["tableau"]
    if not compact:
        text.append("\nTableau\n", style="bold")
    depth = max((len(p) for p in piles), default=0)
    rows = depth
    if height is not None:
        rows = max(height - len(text.plain.splitlines()) - 1, MIN_PILE_ROWS)
    drawn = [_pile_rows(pile, rows) for pile in piles]
    for i in range(len(piles)):
        text.append(f"{'t' + str(i + 1):>4} ", style="dim")
    if any(under for under, _ in drawn):
        text.append(" (+n under)", style="dim")
    text.append("\n")
    for row in range(max(min(depth, rows), 1)):
        for under, cards in drawn:
            if under:
                if row == 0:
                    text.append(f"{'+' + str(under):>4}", style="dim")
                else:
                    text.append_text(_card(cards[row - 1], color, width=4, face_down=True))
            elif row < len(cards):
                text.append_text(_card(cards[row], color, width=4, face_down=True))
            elif row == 0:
                text.append_text(_card(None, color, width=4))
            else:
                text.append("    ")
            text.append(" ")
        text.append("\n")
    text.right_crop(1)  # no blank line under the board
    return text


def _bar(banked: int, width: int = 8) -> str:
    full = banked * width // 52
    return "█" * full + "░" * (width - full)


def standings_text(
    standings: Iterable[dict[str, Any]],
    names: dict[str, str],
    me: str | None = None,
    finish: str | None = None,
) -> Text:
    """Every player's standing, by place: winners by place, then the others by cards
    banked, then time; this player's own row marked."""
    text = Text("Standings\n", style="bold")
    rows = sorted(standings, key=_standing_order)
    if not rows:
        text.append("no race yet\n", style="dim")
    for i, row in enumerate(rows, start=1):
        name = names.get(row["player_id"], row["player_id"])
        if row["player_id"] == me:
            name += " (you)"
        status = status_word(row["status"], finish)
        if status == "won" and row.get("place"):
            status = f"won {ordinal(row['place'])}"
        style = "bold" if row["player_id"] == me else ""
        text.append(f"{i:2}. {name:<13} ", style=style)
        text.append(_bar(row["banked"]), style="green" if row["status"] == "won" else "")
        moves = "move " if row["moves"] == 1 else "moves"
        text.append(f" {row['banked']:2}/52 {row['moves']:3} {moves}  {status}\n", style=style)
    return text


def _show(widget: Static, text: Text) -> None:
    """Draw ``text`` in ``widget``, unless it shows that already (a redraw lays out the
    screen again); a last line's newline is no blank line under it."""
    if text.plain.endswith("\n"):
        text = text.copy()
        text.right_crop(1)
    if widget.content != text:
        widget.update(text)


def _sentence(words: str) -> str:
    """Words the line client says, as the app writes them: a capital first, a full stop."""
    words = words.strip()
    return words[:1].upper() + words[1:] + ("" if words.endswith((".", "…")) else ".")


class BoardsPane(VerticalScroll):
    """The pane of the boards, which tells the app when its size changes: a board is drawn
    to the pane's height (its long piles shortened), so that every pile's top shows."""

    class Resized(Message):
        """The pane's size changed."""

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())


class RaceApp(App[int]):
    """A full-screen client of one room: to play it (``play``), watch it (``watch``) or
    play the daily deal (``daily``)."""

    TITLE = "solrace"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    Screen { layout: vertical; }
    #title { height: auto; padding: 0 1; background: $primary-background; }
    #main { height: 1fr; }
    #boards { width: 56; padding: 0 1; }
    #side { width: 1fr; padding: 0 1; border-left: solid $primary; }
    #clock { height: auto; text-style: bold; margin-bottom: 1; }
    #standings, #room, #results { height: auto; margin-bottom: 1; }
    .board { height: auto; margin-bottom: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #moves { height: auto; padding: 0 1; border-top: solid $primary; display: none; }
    #moves.shown { display: block; }
    #status { height: auto; padding: 0 1; color: $warning; text-style: bold; }
    #log { height: 8; border-top: solid $primary; padding: 0 1; scrollbar-gutter: stable;
           scrollbar-size-vertical: 1; }
    #prompt { margin: 0 0; }
    .compact #log { height: 4; }
    .compact #prompt { border: none; height: 1; padding: 0 1; }
    .compact #clock, .compact #standings, .compact #room { margin-bottom: 0; }
    """
    COMPACT_BELOW = 34
    """Terminal rows under which the screen is drawn compact (80 x 24 is the default
    size of most terminals): a shorter log, a prompt of one line, boards without blank
    lines, so that the tableau shows."""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "show_help", "help"),
        Binding("f2", "toggle_moves", "legal moves (or ?)"),
        Binding("ctrl+q", "quit_race", "quit", priority=True),
        Binding("ctrl+c", "quit_race", "quit", show=False, priority=True),
    ]

    def __init__(
        self,
        url: str,
        *,
        mode: Mode = "play",
        name: str | None = None,
        token: str | None = None,
        join: str | None = None,
        variant: str = "canfield",
        settings: dict[str, Any] | None = None,
        color: bool = True,
        resume_timeout: float = RESUME_TIMEOUT_S,
        request_timeout: float = 30.0,
        keep_guest: bool = False,
        asked_name: str | None = None,
    ) -> None:
        super().__init__()
        self.url = url
        self.mode: Mode = mode
        self.join = join.strip().upper() if join else None
        self.variant = variant
        self.create_settings = dict(settings or {})
        self.color = color
        self.token = token
        self.asked_name = asked_name  # the --name given, if any
        self.client = Client(
            url,
            name=name,
            resume_timeout=resume_timeout,
            request_timeout=request_timeout,
            **client_identity(url, name, token, keep_guest),
        )
        self.code: str | None = None
        self.link: str | None = None
        self.settings: dict[str, Any] = {}
        self.names: dict[str, str] = {}
        self.members: list[dict[str, Any]] = []
        self.host: str | None = None
        self.state = "lobby"
        self.race = 0
        self.standings: dict[str, dict[str, Any]] = {}
        self.boards: dict[str, dict[str, Any]] = {}
        self.board_note = ""
        self.board_widgets: dict[str, Static] = {}
        self.results: str | None = None
        self.leaderboard: str | None = None
        self.deadline: float | None = None
        self.starts_at: float | None = None
        self.done = False
        self.ends_told = False
        self.offline = False
        self.farewell: list[str] = []
        """What to print once the app has left the screen (the last results, or why it
        ended)."""
        self._commands: asyncio.Queue[str] = asyncio.Queue()
        self._leaving = False
        self._over = asyncio.Event()
        self._close_said: tuple[int | None, str] = (None, "")
        """The close code and reason of a connection closed for good (None: given up)."""
        self.ranked: bool | None = None
        """Whether the daily attempt is ranked, once the day's board says."""
        self._ui_ready = False
        self._quit_asked = False
        self._confirming = False  # q asked whether to resign the game that goes on

    # -- layout --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        with Horizontal(id="main"):
            with BoardsPane(id="boards"):
                yield Static(id="board", classes="board")
            with VerticalScroll(id="side"):
                yield Static(id="clock")
                yield Static(id="standings")
                yield Static(id="results")
                yield Static(id="room")
        yield Static(id="moves")
        yield Static(id="status")
        # Lines wrap to the log's width (not to 78 columns, RichLog's default), and the
        # scrollbar's gutter is kept from the first line: no line runs under it.
        yield RichLog(id="log", wrap=True, max_lines=1000, markup=False, min_width=1)
        yield Input(id="prompt", placeholder=self._placeholder())
        yield Footer()

    def _placeholder(self) -> str:
        if self.mode == "watch":
            return "q quits; help explains"
        examples = brief_examples(self.settings.get("variant", self.variant))
        return f"type a move ({examples}) or its number, ? for the legal moves, help, q"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A spectator has no legal moves to list: F2 is not offered."""
        return not (action == "toggle_moves" and self.mode == "watch")

    def on_resize(self, event: events.Resize) -> None:
        compact = event.size.height < self.COMPACT_BELOW
        if compact != self.has_class("compact"):
            self.set_class(compact, "compact")
            if self._ui_ready:
                self._draw()

    def on_mount(self) -> None:
        self.set_class(self.size.height < self.COMPACT_BELOW, "compact")
        self._ui_ready = True
        self.query_one("#prompt", Input).focus()
        self._draw()
        self.set_interval(0.25, self._tick)
        self.run_worker(self._session(), name="session", exit_on_error=False)
        self.run_worker(self._command_loop(), name="commands", exit_on_error=False)

    async def on_unmount(self) -> None:
        self._leaving = True
        await self.client.close()

    # -- messages ------------------------------------------------------------------------

    def say(self, line: str, style: str = "") -> None:
        """Add a line to the log above the prompt."""
        self.query_one("#log", RichLog).write(Text(line, style=style))

    async def _finish(self, code: int, *lines: str) -> None:
        """Leave the app with ``code``; ``lines`` are printed once the screen is back."""
        if self._leaving:
            return
        self._leaving = True
        self.farewell = [line for line in lines if line]
        await self.client.close()
        self.exit(code, return_code=code)

    # -- the session -----------------------------------------------------------------------

    async def _session(self) -> None:
        back = False
        try:
            await self.client.connect()
            if self.mode == "watch":
                assert self.join is not None
                room = await self.client.join(self.join, role="spectator")
            elif self.mode == "daily":
                note = await new_account_note(self.client, self.variant)
                if note and self.client.account:
                    self.say(note[0].upper() + note[1:] + ".", "bold")
                room = await self.client.daily(self.variant)
            else:
                room, back = await enter_room(
                    self.client, self.join, self.variant, self.create_settings
                )
        except (ServerError, OSError, WebSocketException, TimeoutError, ClientClosed) as error:
            await self._finish(1, *self._could_not(error))
            return
        for note in (shared_guest_note(self.client), login_name_note(self.client, self.asked_name)):
            if note:
                self.say(_sentence(note), "bold")
        self._take_room(room)
        if back and self.state in ("racing", "finished"):
            self._come_back(room)
        else:
            self._introduce(room)
        async for event in self.client.events():
            self.take_event(event)
            if self._leaving:
                return
        if not self._leaving:
            await self._finish(1, self._lost_line())

    def _could_not(self, error: BaseException) -> list[str]:
        what = {
            "watch": f"watch room {self.join}",
            "daily": "start the daily deal",
            "play": f"join room {self.join}" if self.join else "create the room",
        }[self.mode]
        why = why_unreachable(self.url, error)
        if why is not None:
            lines = [f"Could not reach the server at {self.url} to {what}: {why}."]
        else:
            lines = [f"Could not {what}: {error}"]
        if self.token is not None and isinstance(error, ServerError) and error.code == "bad_token":
            lines.append("The login kept for this server no longer works: solrace login again.")
        if isinstance(error, ServerError) and error.code == "account_required":
            lines.append(
                "The daily deal is an account's: solrace login --new makes your name one "
                "(or solrace login, for an account made elsewhere)."
            )
        if self.variant == "british-canister" and self.mode != "watch":
            lines.append(BRITISH_CANISTER)
        return lines

    def _lost_line(self) -> str:
        """Why the app ends once its connection is closed for good, as the line client
        says it (:func:`gone_words`): taken over by another window, or a server that did
        not come back (the seat it keeps, and the command that returns to it)."""
        code, reason = self._close_said
        again = f"solrace daily {self.variant}" if self.mode == "daily" else "solrace play"
        words = gone_words(
            code,
            reason,
            waited=self.client.resume_timeout,
            seat=self.game_goes_on(),
            again=again,
        )
        return _sentence(words)

    def _introduce(self, room: dict[str, Any]) -> None:
        variant = room["settings"]["variant"]
        me = self.client.name
        if self.mode == "watch":
            self.say(f"Watching room {room['code']} ({variant}) as {me}.")
            self.say(WATCH_HELP)
        elif self.mode == "daily":
            settings = room["settings"]
            # Whether a first attempt is ranked is known once it is over (a new
            # account's is not): the results say.
            attempt = settings.get("attempt")
            ranked = (
                " (not ranked: only your first attempt of the day can be)"
                if isinstance(attempt, int) and attempt > 1
                else ""
            )
            self.say(
                f"Daily {variant} {settings.get('daily')}, attempt {attempt}{ranked}; "
                f"{duration(settings['time_limit'])}."
            )
            self.say(daily_help(variant))
        else:
            self.say(f"Room {room['code']} ({variant}); you are {me}.")
            if self.link:
                self.say(f"Send your friends this link: {self.link}", "bold")
            self.say(
                play_help(
                    bool(self.settings.get("undo", True)),
                    self.settings.get("variant", self.variant),
                )
            )
            self.say("Type 'ready' when you are (the host may type 'start').")
            if room.get("host") == self.client.player_id:
                self.say(SPECTATORS_HELP)
                self.say(FINISH_HELP)
        if variant == "british-canister":
            self.say(BRITISH_CANISTER, "bold")

    def _come_back(self, room: dict[str, Any]) -> None:
        """Back in a room whose race is on (or just over), as the player who left it: the
        race, not the lobby's welcome."""
        variant = room["settings"]["variant"]
        self.say(f"Room {room['code']} ({variant}); you are {self.client.name}.")
        if self.state == "finished":
            self.say("You are back in the room; its race is over: 'rematch' or q.", "bold")
            return
        self.say(f"Back in race {self.race}: your game goes on where it was.", "bold")
        self.say(play_help(self._undo(), variant))

    # -- room state ----------------------------------------------------------------------

    def _take_room(self, room: dict[str, Any]) -> None:
        """Take a whole snapshot (at the start, and after a resume)."""
        loop = asyncio.get_running_loop()
        self.code = room["code"]
        if self.mode != "daily":
            self.link = room_link(self.url, room["code"])
        self.settings = room["settings"]
        if self._ui_ready:  # a room joined by its code may be of another game
            self.query_one("#prompt", Input).placeholder = self._placeholder()
        self.host = room.get("host")
        self.members = room.get("members", [])
        self.names.update({m["player_id"]: m["name"] for m in self.members})
        self.state = room.get("state", "lobby")
        self.race = room.get("race", 0)
        if self.state == "countdown" and room.get("starts_in_ms") is not None:
            self.starts_at = loop.time() + room["starts_in_ms"] / 1000
        if self.state in ("racing", "finished"):
            self.standings = {}
            for player in room.get("players", []):
                self.names.setdefault(player["player_id"], player.get("name", ""))
                self.standings[player["player_id"]] = heard_standing(None, player)
            left = room.get("left_ms")
            if left is None:
                left = room.get("time_limit", 0) * 1000 - room.get("elapsed_ms", 0)
            self.deadline = loop.time() + left / 1000
            if self.settings.get("finish") == "first" and len(self.standings) > 1:
                # A first win while away brought the end forward: the clock says why.
                won = any(p.get("status") == "won" for p in self.standings.values())
                self.ends_told = self.ends_told or won
            if "boards" in room:
                self.boards = dict(room["boards"])
            if self.state == "finished" and room.get("results") is not None:
                self.results = render_results(
                    {
                        "race": self.race,
                        "variant": self.settings["variant"],
                        "seed": room.get("seed"),
                        "results": room["results"],
                        "par": room.get("par"),
                        "daily": self.settings.get("daily"),
                        "attempt": self.settings.get("attempt"),
                    },
                    self.settings.get("finish"),
                )
        self._draw()

    def _me(self) -> dict[str, Any] | None:
        return self.standings.get(self.client.player_id or "")

    def _status(self) -> str | None:
        """This player's game's status: its board's, but for a resignation or the race's
        end, which are the race's to say (the board itself still reads "playing")."""
        view = self.client.view
        mine = (self._me() or {}).get("status")
        if mine in ("resigned", "out_of_time") or view is None:
            return mine
        return str(view["status"])

    def _undo(self) -> bool:
        return bool(self.settings.get("undo", True)) and self.mode != "daily"

    def game_goes_on(self) -> bool:
        """Whether this player's game of a running race is not over yet."""
        view = self.client.view
        if self.mode == "watch" or self.state != "racing" or view is None:
            return False
        status = self._status()
        return status == "playing" or (status == "stuck" and self._undo())

    def take_event(self, event: dict[str, Any]) -> None:
        """Take one room event and redraw what it changed."""
        kind = event.get("type")
        me = self.client.player_id
        if kind == "members":
            if event.get("closed"):
                self._end_soon(0, f"The room was closed: {event['closed']}.")
                return
            if me in (event.get("removed") or {}):
                why = event["removed"][me]
                reason = "the host turned spectators off" if why == "spectators_off" else why
                self._end_soon(0, f"You are out of the room: {reason}.")
                return
            before = self.settings
            self.settings = event.get("settings", self.settings)
            if before and self.settings != before:
                self.say(render_spectators(self.settings))
                race = render_race(self.settings)
                if race:
                    self.say(race)
            self.members = event.get("members", self.members)
            self.host = event.get("host", self.host)
            self.names.update({m["player_id"]: m["name"] for m in self.members})
            state = event.get("state", self.state)
            if state == "lobby" and self.state == "finished":
                self.say("Back in the lobby: a new race on a new deal is coming.", "bold")
                self.results = None
                self.leaderboard = None
            self.state = state
        elif kind == "countdown":
            self.state = "countdown"
            self.starts_at = asyncio.get_running_loop().time() + event["seconds"]
            if event["seconds"]:
                self.say(f"The race starts in {event['seconds']} s.")
        elif kind == "race_started":
            self._race_started(event)
        elif kind == "progress":
            self._progress(event)
        elif kind == "boards":
            self.boards.update(event["boards"])
            self.board_note = f" ({event['delay']} s ago)"
        elif kind == "race_over":
            self._race_over(event)
        elif kind == "room":
            # The snapshot of a room left since (a kept guest put back in its old lobby,
            # which play left for a new room) is not this one's.
            if self.code is None or event["room"]["code"] == self.code:
                self._take_room(event["room"])
        elif kind == "resumed":
            self.offline = False
            if event.get("restarted"):
                goes_on = ", the race goes on" if self.state in ("countdown", "racing") else ""
                self.say(f"The server restarted; connection restored{goes_on}.", "bold")
            else:
                self.say("Connection restored.")
        elif kind == "closed":
            self._close_said = (event.get("code"), event.get("reason") or "")
        self._draw()

    def _end_soon(self, code: int, line: str) -> None:
        self.say(line, "bold")
        self.run_worker(self._finish(code, line), exit_on_error=False)

    def _race_started(self, event: dict[str, Any]) -> None:
        loop = asyncio.get_running_loop()
        self.state, self.race = "racing", event["race"]
        self.done, self.ends_told = False, False
        self.results = self.leaderboard = None
        self._over.clear()
        self.names.update({p["player_id"]: p["name"] for p in event["players"]})
        start = (event.get("view") or {}).get("banked")
        if start is None and event.get("boards"):
            start = next(iter(event["boards"].values()))["banked"]
        self.standings = {
            p["player_id"]: {
                "player_id": p["player_id"],
                "banked": start or 0,
                "moves": 0,
                "status": "playing",
                "elapsed_ms": 0,
            }
            for p in event["players"]
        }
        self.deadline = loop.time() + event.get("time_limit", self.settings.get("time_limit", 0))
        self.boards = dict(event.get("boards") or {})
        self.board_note = ""
        self.say(f"Race {event['race']} started: {event['variant']}.", "bold")
        if self.mode == "watch" and self.settings.get("spectators") == "after":
            self.say("The boards are shown once the race is over.")

    def _progress(self, event: dict[str, Any]) -> None:
        me = self.client.player_id
        for standing in event["players"]:
            player_id = standing["player_id"]
            self.standings[player_id] = heard_standing(self.standings.get(player_id), standing)
            if "view" in standing:
                self.boards[player_id] = standing["view"]
                self.board_note = ""
            if player_id == me:
                self._own_standing(standing)
            if standing["status"] == "won":
                self._first_win(standing)

    def _own_standing(self, standing: dict[str, Any]) -> None:
        """This player's game: a win is told with its place; a game over lets them go."""
        status = standing["status"]
        if self.done or self.state != "racing":
            return
        if status == "won":
            place = standing.get("place")
            of = f" of {len(self.standings)}" if len(self.standings) > 1 else ""
            where = f" {ordinal(place)}{of}" if place else ""
            self.say(f"You finished{where}: all 52 cards are home!", "bold green")
        elif status == "resigned":
            self.say("You resigned.")
        elif status == "out_of_time":
            self.say(f"{self._ended()}.")
        elif status == "stuck" and self._undo():
            self.say(STUCK_UNDO, "bold")
            return
        elif status != "stuck":
            return
        else:
            self.say(STUCK_OVER, "bold")
        self.done = True
        if len(self.standings) > 1:
            self.say(MAY_LEAVE)

    def _first_win(self, standing: dict[str, Any]) -> None:
        """In a first-to-finish room, the first win brings the race's end forward."""
        if self.ends_told or self.settings.get("finish") != "first" or len(self.standings) < 2:
            return
        self.ends_told = True
        grace = int(self.settings.get("finish_grace") or 0)
        end = asyncio.get_running_loop().time() + grace
        self.deadline = end if self.deadline is None else min(self.deadline, end)
        who = (
            "you"
            if standing["player_id"] == self.client.player_id
            else self.names.get(standing["player_id"], standing["player_id"])
        )
        self.say(f"First to finish: {who} won, the race ends in {grace} s.", "bold")

    def _race_over(self, event: dict[str, Any]) -> None:
        self.state = "finished"
        self._over.set()
        final = {r["player_id"]: r for r in event["results"]}
        if "boards" in event:
            # A board's status is its game's; a resignation or the clock is the results'.
            self.boards.update(
                {
                    p: {**b, "status": final[p]["status"]} if p in final else b
                    for p, b in event["boards"].items()
                }
            )
            self.board_note = " (final)"
        for player_id, result in final.items():  # the standings end as the results say
            standing = self.standings.setdefault(player_id, {"player_id": player_id})
            for key in ("status", "banked", "moves"):
                standing[key] = result[key]
            standing.setdefault("elapsed_ms", result.get("time_ms", 0))
        self.results = render_results(event, self.settings.get("finish"))
        me = next((r for r in event["results"] if r["player_id"] == self.client.player_id), None)
        if me is not None:
            self.say(f"Race over: you are {ordinal(me['rank'])} of {len(event['results'])}.")
        else:
            self.say(f"Race {event['race']} is over.")
        if self.mode == "daily":
            self.say("That was today's attempt: no rematch. q quits.")
            self.run_worker(self._fetch_leaderboard(), exit_on_error=False)
        elif self.mode == "watch":
            self.say("Waiting for the room's next race (q quits).")
        else:
            self.say("Type 'rematch' for a new race on a new deal, or q to quit.")

    async def _fetch_leaderboard(self) -> None:
        with contextlib.suppress(ServerError, ClientClosed, TimeoutError):
            date, attempt = self.settings.get("daily"), self.settings.get("attempt")
            board, entry = await daily_board(self.client, self.variant, date, attempt)
            self.leaderboard = render_board(board)
            if entry is not None:
                self.ranked = bool(entry.get("ranked"))
                line = render_attempt(board, entry)
                if line is not None:
                    self.leaderboard += "\n" + line
            self._draw()

    # -- drawing -------------------------------------------------------------------------

    def _draw(self) -> None:
        """Redraw every pane from the state held (each in place)."""
        if not self._ui_ready:
            return
        self._draw_title()
        self._draw_boards()
        _show(
            self.query_one("#standings", Static),
            standings_text(
                self.standings.values(),
                self.names,
                self.client.player_id,
                self.settings.get("finish"),
            ),
        )
        results = Text()
        if self.results:
            results.append("Results\n", style="bold")
            results.append(self.results + "\n")
        if self.leaderboard:
            results.append("\n" + self.leaderboard + "\n")
        pane = self.query_one("#results", Static)
        pane.display = bool(results.plain)
        _show(pane, results)
        _show(self.query_one("#room", Static), self._room_text())
        self._draw_moves()
        _show(self.query_one("#status", Static), self._status_text())
        self._tick()

    def _draw_title(self) -> None:
        title = Text()
        title.append("solrace", style="bold")
        variant = self.settings.get("variant", self.variant)
        if self.mode == "daily":
            title.append(f"  daily {variant} {self.settings.get('daily', '')}")
            attempt = self.settings.get("attempt")
            if attempt is not None:
                title.append(f", attempt {attempt}")
                # Whether a first attempt is ranked is the board's to say, once it is over.
                ranked = False if isinstance(attempt, int) and attempt > 1 else self.ranked
                if ranked is not None:
                    title.append(" (ranked)" if ranked else " (not ranked)")
        elif self.code:
            title.append(f"  room {self.code}  {variant}")
        if self.client.name:
            title.append(f"  {'watching as' if self.mode == 'watch' else 'you are'} ")
            title.append(self.client.name, style="bold")
        if self.link:
            title.append("\nShare: ")
            title.append(self.link, style="bold underline")
        _show(self.query_one("#title", Static), title)

    def on_boards_pane_resized(self, message: BoardsPane.Resized) -> None:
        if self._ui_ready:
            self._draw_boards()

    def _board_height(self) -> int | None:
        """The lines a board may take without scrolling (None before the layout)."""
        pane = self.query_one("#boards", BoardsPane)
        height = pane.scrollable_content_region.height - 1  # the board's margin
        return height if height > 0 else None

    def _draw_boards(self) -> None:
        board = self.query_one("#board", Static)
        compact = self.has_class("compact")
        height = self._board_height()
        if self.mode != "watch":
            view = self.client.view
            if view is None:
                _show(board, Text("The board is dealt when the race starts.", style="dim"))
            else:
                text = board_text(
                    view, color=self.color, compact=compact, status=self._status(), height=height
                )
                _show(board, text)
            return
        spectators = self.settings.get("spectators")
        if self.boards:
            _show(board, Text(f"Boards{self.board_note}", style="bold"))
        elif self.state == "racing" and spectators == "delayed":
            delay = self.settings.get("spectator_delay")
            _show(board, Text(f"The boards come {delay} s after they are played.", style="dim"))
        elif self.state in ("racing", "finished") and spectators in ("after", "delayed"):
            _show(board, Text("The boards are shown once the race is over.", style="dim"))
        else:
            _show(board, Text("No race yet: the boards come with the deal.", style="dim"))
        container = self.query_one("#boards", VerticalScroll)
        for player_id in list(self.board_widgets):
            if player_id not in self.boards:
                self.board_widgets.pop(player_id).remove()
        for player_id, view in self.boards.items():
            text = board_text(
                view,
                color=self.color,
                title=f" {self.names.get(player_id, player_id)} ",
                compact=compact,
                height=height,
            )
            widget = self.board_widgets.get(player_id)
            if widget is None:
                widget = Static(text, classes="board")
                self.board_widgets[player_id] = widget
                container.mount(widget)
            else:
                _show(widget, text)

    def _room_text(self) -> Text:
        """Who is in the room (first: at 80 x 24 it shows without scrolling), then the
        game and how the room's race is set."""
        text = Text()
        variant = self.settings.get("variant", self.variant)
        if self.members and self.mode != "daily":
            text.append("In the room:\n", style="bold")
            for m in self.members:
                tags = []
                if m["player_id"] == self.host:
                    tags.append("host")
                if m.get("role") == "spectator":
                    tags.append("spectating")
                elif m.get("ready"):
                    tags.append("ready")
                if not m.get("connected", True):
                    tags.append(OFFLINE_TAG)
                if m["player_id"] == self.client.player_id:
                    tags.append("you")
                text.append(f"  {m['name']}" + (f" ({', '.join(tags)})" if tags else "") + "\n")
        text.append(GAMES.get(variant, variant) + "\n", style="dim")
        if variant == "british-canister":
            text.append(BRITISH_CANISTER + "\n", style="bold")
        if self.settings and self.mode != "daily":
            text.append(render_spectators(self.settings) + "\n")
            race = render_race(self.settings)
            if race:
                text.append(race + "\n")
            undo = "undo allowed" if self.settings.get("undo", True) else "no undo"
            text.append(f"{undo}; {duration(self.settings.get('time_limit', 0))}\n")
        if self.mode == "daily":
            text.append("No undo; one ranked attempt a day (your first); no rematch.\n")
        return text

    def _legal(self) -> list[str]:
        if self.mode == "watch" or self.state != "racing":
            return []
        return listed((self.client.view or {}).get("legal", []))

    def _draw_moves(self) -> None:
        moves = self.query_one("#moves", Static)
        legal = self._legal()
        text = Text("Legal moves ", style="bold")
        if not legal:
            text.append("none now" if self.mode != "watch" else "(you are watching)")
        else:
            text.append("(type the number or the move): ", style="dim")
            text.append("  ".join(f"{i}) {m}" for i, m in enumerate(legal, start=1)))
        _show(moves, text)

    def _status_text(self) -> Text:
        view = self.client.view
        if self.offline:
            return Text(_sentence(CONNECTION_LOST))
        if self.mode == "watch" or view is None or self.state not in ("racing", "finished"):
            return Text("")
        status = self._status()
        mine = self._me() or {}
        if status == "won":
            place = mine.get("place")
            of = f" of {len(self.standings)}" if len(self.standings) > 1 else ""
            where = f" {ordinal(place)}{of}" if place else ""
            return Text(f"You finished{where}: all 52 cards are home!")
        if status == "stuck":
            if self._undo() and self.state == "racing":
                return Text(STUCK_UNDO)
            return Text(STUCK_OVER)
        if status == "resigned":
            return Text("You resigned.")
        if status == "out_of_time":
            return Text(f"{self._ended()}.")
        return Text("")

    def _ended(self) -> str:
        """How a game still being played at the race's end ended."""
        if self.settings.get("finish") == "first":
            return "Not finished: the first to finish won, and the race is over"
        return "Out of time"

    def _tick(self) -> None:
        """The clock, and whether the connection is up."""
        if not self._ui_ready:
            return
        lost = self.client.resuming and not self._leaving
        if lost and not self.offline:
            self.offline = True
            self.say(_sentence(CONNECTION_LOST), "bold")
            _show(self.query_one("#status", Static), self._status_text())
        loop = asyncio.get_running_loop()
        if self.offline and self.state in ("countdown", "racing"):
            # No clock of our own while the server is away: the race's comes back with it
            # (its snapshot), which may have moved on (a first win ends a race sooner).
            shown = _sentence(CLOCK_OFFLINE)
        elif self.state == "racing" and self.deadline is not None:
            shown = f"Time left {clock(self.deadline - loop.time())}"
            if self.ends_told:
                shown += " (first to finish)"
        elif self.state == "countdown" and self.starts_at is not None:
            shown = f"Starts in {clock(self.starts_at - loop.time())}"
        elif self.state == "finished":
            shown = "Race over"
        else:
            shown = "In the lobby"
        _show(self.query_one("#clock", Static), Text(shown))

    # -- input ---------------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.value == "?":
            event.input.value = ""
            self.action_toggle_moves()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        line = event.value.strip()
        event.input.value = ""
        if line:
            self._commands.put_nowait(line)

    def action_toggle_moves(self) -> None:
        self._draw_moves()
        self.query_one("#moves", Static).toggle_class("shown")

    def action_show_help(self) -> None:
        self.say(self._help())

    def action_quit_race(self) -> None:
        if self._quit_asked:
            # Asked again while a request still waits (the server may be gone): leave now.
            self.run_worker(self._finish(0, *self._kept()), exit_on_error=False)
            return
        # The first press asks, as q does, where quitting resigns; the second is the yes.
        self._commands.put_nowait("y" if self._confirming else "q")

    def _help(self) -> str:
        if self.mode == "daily":
            return daily_help(self.settings.get("variant", self.variant))
        if self.mode == "watch":
            return WATCH_HELP
        return play_help(self._undo(), self.settings.get("variant", self.variant))

    async def _command_loop(self) -> None:
        while True:
            line = await self._commands.get()
            try:
                go_on = await self.command(line)
            except (ClientClosed, TimeoutError) as error:
                self.say(f"Not sent: {error or type(error).__name__}")
                continue
            if not go_on:
                await self._quit()
                return

    async def _quit(self) -> None:
        lines: list[str] = []
        if self.game_goes_on():
            # Quitting a game that goes on resigns it: the race need not wait.
            with contextlib.suppress(ServerError, ClientClosed, TimeoutError):
                await self.client.resign()
                lines.append("You resigned.")
                if self.mode == "daily":
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.client.request_timeout):
                            await self._over.wait()
                    await self._fetch_leaderboard()
        await leave_quietly(self.client)
        await self._finish(0, *lines, *self._kept())

    def _kept(self) -> list[str]:
        """What to print of the session once the screen is back: the last results."""
        return [text for text in (self.results, self.leaderboard) if text]

    async def command(self, line: str) -> bool:
        """Carry out one line typed at the prompt; False when the user quits."""
        text = line.strip()
        if self._confirming:  # as the line client: only a yes quits, and resigns
            self._confirming = False
            answer = text.lower()
            if answer in ("y", "yes"):
                self._quit_asked = True
                return False
            if answer in ("", "n", "no"):
                if self.game_goes_on():
                    self.say("Not resigned: your game goes on.")
                return True
            # Any other line is no yes: it is carried out as typed.
        words = text.split()
        if not words:
            return True
        if text in ("q", "quit", "exit"):
            if self.game_goes_on():
                self._confirming = True
                self.say(RESIGN_ASK[:1].upper() + RESIGN_ASK[1:], "bold")
                return True
            self._quit_asked = True
            return False
        if text in ("?", "moves"):
            # Shown, not toggled: a "?" and its Enter typed at once come both as the input's
            # change (which toggles) and as this line, and toggled twice showed nothing.
            self._draw_moves()
            self.query_one("#moves", Static).add_class("shown")
            return True
        if text == "help":
            self.say(self._help())
            return True
        if text == "link":
            self.say(f"Send your friends this link: {self.link}" if self.link else "No link.")
            return True
        if self.mode == "watch":
            self.say("You are watching: there is nothing to play. q quits, help explains.")
            return True
        if self.mode == "daily" and text in ("u", "undo"):
            self.say("The daily deal has no undo.")
            return True
        if self.mode == "daily" and words[0] in ("rematch", "ready", "start"):
            self.say("The daily deal has no rematch: one ranked attempt a day.")
            return True
        if self.offline:
            self.say(_sentence(NOT_SENT_OFFLINE))
            return True
        if len(text) > MAX_LINE:
            self.say(f"That is not a move nor a command: at most {MAX_LINE} characters.")
            return True
        try:
            await self._send(text, words)
        except ServerError as error:
            variant = self.settings.get("variant", self.variant)
            self.say(refusal(error, variant, undo=self._undo()), "red")
        self._draw()
        return True

    async def _send(self, text: str, words: Sequence[str]) -> None:
        if text == "ready":
            await self.client.ready()
        elif text == "start":
            await self.client.start()
        elif text == "rematch":
            await self.client.rematch()
        elif text == "resign":
            await self.client.resign()
        elif words[0] in ("spectators", "finish"):
            if len(words) not in (2, 3) or (len(words) == 3 and not words[2].isdigit()):
                self.say(SPECTATORS_HELP if words[0] == "spectators" else FINISH_HELP)
                return
            number = int(words[2]) if len(words) == 3 else None
            if words[0] == "spectators":
                await self.client.set_settings(words[1], number)
            else:
                await self.client.set_settings(finish=words[1], finish_grace=number)
        else:
            move = numbered(text, (self.client.view or {}).get("legal", []))
            ack = await self.client.move(move)
            self.say(f"played {ack['move']}")
