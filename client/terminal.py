"""The command-line client: play or watch a race in a terminal, line by line.

Input and output go through a :class:`Console`, so that tests drive a whole game with
scripted lines and read what the screen shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import urllib.parse
from collections.abc import Sequence
from typing import Any, Protocol

from websockets.exceptions import WebSocketException

from ..protocol import CloseCode
from .connection import (
    RESUME_TIMEOUT_S,
    SERVER_RESUME_GRACE_S,
    Client,
    ClientClosed,
    ServerError,
)
from .logins import GuestHold, store_guest, stored_guest
from .moves_help import move_examples, moves_text
from .urls import room_link, unreachable

__all__ = [
    "Console",
    "KeepGuest",
    "StdConsole",
    "StillRacing",
    "client_identity",
    "daily_line_help",
    "gone_words",
    "heard_standing",
    "line_help",
    "play",
    "refusal",
    "render_progress",
    "render_race",
    "render_results",
    "render_spectators",
    "render_standings",
    "render_streaks",
    "render_view",
    "shared_guest_note",
    "watch",
]

SUITS = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}
RED, RESET = "\x1b[31m", "\x1b[0m"
FACE_DOWN = " ▒▒ "
"""A card a spectator is not shown yet (null in a delayed room's boards), as its back."""
RESIGN_ASK = "quitting gives up your game, which goes on: resign this race? y/N"
"""What ``q`` asks while this player's game of a running race goes on."""
OFFLINE_TAG = f"offline: seat kept up to {SERVER_RESUME_GRACE_S:g} s"
"""A member whose connection dropped (``connected: false``), as the room's list shows
it: the server keeps its seat for its resume grace, then counts it out."""
CONNECTION_LOST = "connection lost: reconnecting… (nothing you type is sent until it is back)"
NOT_SENT_OFFLINE = "offline: reconnecting to the server; nothing was sent"
CLOCK_OFFLINE = "time left: reconnecting…"
"""The clock while the connection is down: no clock of our own, the race's comes back
with the server's snapshot (it may have moved on: a first win ends a race sooner)."""
SPECTATORS_HELP = (
    "the host sets who may watch, in the lobby: 'spectators live', 'spectators delayed 30'"
    " (seconds), 'spectators after' or 'spectators off'"
)
FINISH_HELP = (
    "the host sets how the race ends, in the lobby or after a race: 'finish everyone'"
    " (when every player is done) or 'finish first 30' (seconds after the first win)"
)
STUCK_UNDO = "No move left: undo (u) or resign (q/resign)"
STUCK_OVER = "No move left: your game is over"
MAY_LEAVE = "You may leave (q) or keep watching the standings until the race is over."
BRITISH_CANISTER = (
    "British Canister deals are almost never winnable (about 1.3 in a million):"
    " its races are about cards banked."
)


def line_help(variant: str | None, undo: bool = True) -> str:
    """What ``help`` says in a room of ``variant`` where undo is (or is not) allowed: that
    game's moves, and no other."""
    undo_text = "u undoes" if undo else "no undo in this room"
    return (
        f"Type a number from the list, or a move: {moves_text(variant)}; {undo_text}, "
        "'resign' gives up, 'q' quits; 'board' shows your board, 'time' the time left."
    )


def daily_line_help(variant: str) -> str:
    """What ``help`` says in the daily deal of ``variant``: its game's moves, no undo."""
    return (
        f"Type a number from the list, or a move: {moves_text(variant)}; 'resign' gives up, "
        "'q' quits. One ranked attempt a day: no undo, no rematch."
    )


def clock(seconds: float) -> str:
    """Seconds left as ``M:SS`` (a part of a second counts as a whole one)."""
    whole = max(0, int(seconds + 0.999))
    return f"{whole // 60}:{whole % 60:02d}"


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
        self._lines: asyncio.Queue[str] | None = None
        self._ended = False  # the end of input was read

    async def read_line(self) -> str | None:
        """Read a line without blocking the event loop.

        Lines are read in a daemon thread of their own: a read in the loop's executor
        (``asyncio.to_thread``) cannot be cancelled, and the executor is waited for as
        the command ends, so a command that ended by itself (its connection closed for
        good, the server gone) went on until one more line was typed."""
        if self._lines is None:
            self._lines = asyncio.Queue()
            loop, lines = asyncio.get_running_loop(), self._lines

            def read() -> None:
                while True:
                    stdin = sys.stdin  # None where the process has none
                    try:
                        line = stdin.readline() if stdin is not None else ""
                    except (OSError, ValueError):  # closed or unreadable: the end of input
                        line = ""
                    try:
                        loop.call_soon_threadsafe(lines.put_nowait, line)
                    except RuntimeError:  # the loop is closed: the command has ended
                        return
                    if not line:
                        return

            threading.Thread(target=read, name="solrace-stdin", daemon=True).start()
        if self._ended:
            return None
        line = await self._lines.get()
        self._ended = not line
        return line if line else None

    def write(self, text: str) -> None:
        """Print to standard output."""
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()


def _card(name: str | None, color: bool, *, face_down: bool = False) -> str:
    """A card by rank and suit; an empty place (None) as dashes, or with ``face_down`` a
    card withheld (None in a spectator's board) as its back."""
    if not name:
        return FACE_DOWN if face_down else " -- "
    rank, suit = name[:-1], name[-1]
    text = f"{rank:>2}{SUITS.get(suit, suit)}"
    return f"{RED}{text}{RESET}" if color and suit in "DH" else text


def render_view(view: dict[str, Any], *, color: bool = False) -> str:
    """A player's (masked) board as lines of text: every pile labelled, bottom card first.

    A spectator's board of a running ``delayed`` race may have None for a card not shown
    yet (a tableau card, a foundation's or the reserve's top with cards under it, a waste
    card): it is drawn as a card's back.
    """
    lines = [
        f"{view['variant']}  banked {view['banked']}/52  moves {view['moves']}  status {view['status']}"
    ]
    found = "  ".join(
        f"f{i + 1}:{_card(f['top'], color, face_down=f['count'] > 0)}"
        for i, f in enumerate(view["foundations"])
    )
    lines.append(f"foundations  {found}")
    if "reserve" in view:
        reserve = view["reserve"]
        waste = view["waste"]
        visible = " ".join(_card(c, color, face_down=True) for c in waste["visible"]) or " -- "
        top = _card(reserve["top"], color, face_down=reserve["count"] > 0)
        lines.append(
            f"reserve ({reserve['count']:2}) {top}   "
            f"stock ({view['stock']['count']:2})   waste ({waste['count']:2}) {visible}"
        )
    for i, pile in enumerate(view["tableau"]):
        cards = " ".join(_card(c, color, face_down=True) for c in pile) or " -- "
        lines.append(f"t{i + 1}  {cards}")
    return "\n".join(lines)


def listed(legal: Sequence[str]) -> list[str]:
    """The legal moves in the order the clients number them: a card back from a
    foundation last (``f2-t1``: rarely the move wanted, and the first of the list is what
    ``1`` plays; typed again, it would send the card it just sent home back and forth)."""
    return sorted(legal, key=lambda move: move.startswith("f"))


def render_moves(legal: Sequence[str]) -> str:
    """The numbered list of legal moves (:func:`listed`)."""
    if not legal:
        return "no legal move"
    return "moves: " + "  ".join(f"{i}) {m}" for i, m in enumerate(listed(legal), start=1))


def numbered(text: str, legal: Sequence[str]) -> str:
    """The move ``text`` names: the legal move of that number as :func:`render_moves`
    lists them, or the text itself."""
    moves = listed(legal)
    return moves[int(text) - 1] if text.isdigit() and 0 < int(text) <= len(moves) else text


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, … 11th, 12th, 13th, … 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def render_progress(standing: dict[str, Any], names: dict[str, str]) -> str:
    """One player's standing (an entry of a progress event) as a line; a winner's with
    their place."""
    name = names.get(standing["player_id"], standing["player_id"])
    bar = "#" * (standing["banked"] * 20 // 52)
    status = status_word(standing["status"])
    if status == "won" and standing.get("place"):
        status = f"won {ordinal(standing['place'])}"
    return (
        f"{name:>12} [{bar:<20}] {standing['banked']:2}/52  moves {standing['moves']:3}  "
        f"{status}  {standing['elapsed_ms'] // 100 / 10:.1f}s"
    )


def heard_standing(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """A player's standing as heard now (no board, no name), with ``banked_at_ms``: when
    it first reached its count of cards banked, which the results rank by.

    A snapshot gives that time; a progress event does not, so a count heard before keeps
    the time it was first heard at (a card played back and banked again ranks from the
    first time, as the server ranks it), and a new one takes the event's time.
    """
    standing = {k: v for k, v in new.items() if k not in ("view", "name")}
    firsts: dict[int, int] = dict(old.get("firsts", {})) if old is not None else {}
    banked, at = standing.get("banked", 0), standing.get("elapsed_ms", 0)
    if "banked_at_ms" in standing:
        firsts[banked] = standing["banked_at_ms"]
    standing["banked_at_ms"] = firsts.setdefault(banked, at)
    standing["firsts"] = firsts
    return standing


def _standing_order(standing: dict[str, Any]) -> tuple[int, int, int]:
    """Winners by place (or time), then the others by cards banked (more first), then by
    when they first reached that count (earlier first)."""
    if standing["status"] == "won":
        return (0, standing.get("place") or 0, standing["elapsed_ms"])
    return (1, -standing["banked"], standing.get("banked_at_ms", standing["elapsed_ms"]))


def render_standings(standings: Sequence[dict[str, Any]], names: dict[str, str]) -> str:
    """Every player's standing, sorted by place: winners by place, then the others by
    cards banked, then by when they first reached it."""
    rows = sorted(standings, key=_standing_order)
    return "\n".join(
        ["standings:", *(f"{i:3}. {render_progress(s, names)}" for i, s in enumerate(rows, 1))]
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


def render_race(settings: dict[str, Any]) -> str:
    """The room's deals (winnable only or any) and how its race ends, as everyone in the
    room is shown them; empty for a server that has neither setting."""
    parts = []
    winnable = settings.get("winnable")
    if winnable is True:
        parts.append("winnable deals only (the results give par)")
    elif winnable is False:
        parts.append("any deal, winnable or not")
    finish = settings.get("finish")
    if finish == "first":
        parts.append(
            f"first to finish (the race ends {settings.get('finish_grace')} s after the first win)"
        )
    elif finish == "everyone":
        parts.append(
            "everyone finishes (the race ends when every player is done, or at the time limit)"
        )
    elif finish is not None:
        parts.append(f"finish: {finish}")
    return "race: " + "; ".join(parts) if parts else ""


class KeepGuest:
    """What a command-line client does at each welcome as a guest: keep its token for
    the server and name (guests.json), while this run holds the guest (:class:`GuestHold`)."""

    def __init__(self, url: str, name: str, hold: GuestHold) -> None:
        self.url, self.name, self.hold = url, name, hold
        self.shared = False
        """Whether another run on this machine held the guest when this one started:
        this one then goes as a new guest, kept for no re-run."""

    def __call__(self, client: Client) -> None:
        if client.account is None and client.token and self.hold.take():
            with contextlib.suppress(OSError):  # a read-only home plays on as a new guest
                store_guest(self.url, self.name, client.token)


def client_identity(
    url: str, name: str | None, token: str | None, keep_guest: bool
) -> dict[str, Any]:
    """The Client options of a command-line client's identity: the login's token, or with
    ``keep_guest`` the guest kept for this server and name (kept again at each welcome, and
    dropped for a new guest if the server no longer knows it), so that running the same
    command again after the client died comes back as the same player, into its race.

    A kept guest goes with one run at a time (:class:`GuestHold`, let go of when the
    client closes): a second run of the same command while the first still runs goes as a
    new guest of the same name and keeps nothing, instead of taking the first one's
    connection over (the server holds one connection per player)."""
    if token is not None or not keep_guest or not name:
        return {"token": token}
    hold = GuestHold(url, name)
    keep = KeepGuest(url, name, hold)
    kept = stored_guest(url, name)
    if kept is not None and not hold.take():
        kept, keep.shared = None, True
    return {
        "token": kept,
        "on_welcome": keep,
        "drop_unknown_token": True,
        "on_close": hold.release,
    }


def shared_guest_note(client: Client) -> str | None:
    """What a run is told that goes as a new guest because another run on this machine
    goes as the guest kept for its name (None for any other run)."""
    keep = client.on_welcome
    if not isinstance(keep, KeepGuest) or not keep.shared:
        return None
    return (
        f"another run on this machine plays as {keep.name} on this server: this one is a "
        "new guest of that name (a re-run comes back as the other); --name gives another"
    )


def login_name_note(client: Client, asked: str | None) -> str | None:
    """What a run is told whose ``--name`` (``asked``) gave way to the account logged in
    on the server (None where it did not, or no name was asked for)."""
    if asked is None or client.account is None or client.name == asked:
        return None
    return (
        f"you play as {client.name}, the account logged in on this server: --name names a "
        "guest ('solrace logout' to play as one)"
    )


async def leave_quietly(client: Client) -> None:
    """Leave the room on quitting, so that the room (and the account, which may not be
    deleted while in one) is not left holding a player who is gone for good; a client
    that dies without quitting stays in, and comes back with the same command."""
    if client.room is not None:
        with contextlib.suppress(ServerError, ClientClosed, TimeoutError):
            async with asyncio.timeout(client.request_timeout):
                await client.leave()


async def new_account_note(client: Client, variant: str) -> str | None:
    """What a new account is told before its daily attempt: that it will not be ranked
    (None for an account that ranks today, or when the board cannot be had)."""
    with contextlib.suppress(ServerError, ClientClosed, TimeoutError):
        board = await client.leaderboard(variant, limit=1)
        ranked_from = board.get("ranked_from")
        if ranked_from and ranked_from > board.get("today", ""):
            return (
                f"your account is new: its attempts are ranked from {ranked_from} (UTC); "
                "today's is kept in your history, not ranked"
            )
    return None


class StillRacing(ServerError):
    """``solrace play --join CODE`` by a player whose game goes on in a race of another
    room (the room the welcome put it back in): refused here, code ``still_racing``."""

    def __init__(self, room: dict[str, Any], join: str) -> None:
        other = join.strip().upper()
        super().__init__(
            {
                "code": "still_racing",
                "message": (
                    f"you are racing in room {room['code']} (race {room.get('race')}) and "
                    f"your game there is not over: joining room {other} would resign it. "
                    "To go back to it, run solrace play without --join (the same server "
                    f"and name; your seat is kept {SERVER_RESUME_GRACE_S:g} s); to give it "
                    f"up, type 'resign' or 'q' there, then join room {other}"
                ),
            }
        )


def _game_goes_on(room: dict[str, Any]) -> bool:
    """Whether the snapshot's room has a race on (or counting down) in which this
    member's game is not over (a stuck game where undo is allowed goes on)."""
    you = room.get("you") or {}
    if you.get("role") != "player" or room.get("state") not in ("countdown", "racing"):
        return False
    if room.get("state") == "countdown":
        return True
    view = you.get("view")
    if view is None:
        standing = next(
            (p for p in room.get("players", []) if p.get("player_id") == you.get("player_id")),
            None,
        )
        return standing is not None and standing.get("status") == "playing"
    status = view.get("status")
    return status == "playing" or (status == "stuck" and bool(view.get("can_undo")))


async def enter_room(
    client: Client, join: str | None, variant: str, settings: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    """Join or create the room the command asks for; ``(room, back)``. A player that the
    welcome put back in a room (a guest or a login coming back) stays there when the
    command names that room, or names none while the room's race is on (``back``: the
    room is that snapshot).

    Asked to join another room while its own game in a race goes on (or its race counts
    down), it does not leave that race, which would resign its game: it raises
    :class:`StillRacing`, which says how to go back (``solrace play`` without ``--join``)
    or give the game up (``resign`` or ``q`` there). Out of a lobby, a race that is over,
    or a game that is over, it leaves the old room first: nothing is lost."""
    current = client.room
    if current is not None:
        racing = current.get("state") in ("countdown", "racing")
        if (join and join.strip().upper() == current["code"]) or (not join and racing):
            return current, True
        if join and _game_goes_on(current):
            raise StillRacing(current, join)
        await client.leave()
    if join:
        return await client.join(join), False
    return await client.create_room(variant, **settings), False


def plural(count: int, word: str) -> str:
    """``1 move``, ``2 moves``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def duration(seconds: int) -> str:
    """A race's time limit in words: ``1 minute``, ``15 minutes``, ``90 seconds``."""
    if seconds % 60 == 0:
        return plural(seconds // 60, "minute")
    return plural(seconds, "second")


def status_word(status: str, finish: str | None = None) -> str:
    """A game's status in words. A game still being played when a first-to-finish race
    ended did not finish: it did not run out of the time limit."""
    if status == "out_of_time":
        return "not finished" if finish == "first" else "out of time"
    return status.replace("_", " ")


def render_results(event: dict[str, Any], finish: str | None = None) -> str:
    """The ranked results of a race, with the revealed seed (``finish``: the room's race
    ending, which says how a game still being played at the end reads)."""
    if event.get("daily"):
        # Only a first attempt may be ranked, and whether it is the day's board says
        # (a new account's is not): render_attempt.
        attempt = event.get("attempt")
        ranked = ", not ranked" if isinstance(attempt, int) and attempt > 1 else ""
        head = f"daily {event['daily']}, attempt {attempt}{ranked}; seed shown after the day"
    else:
        head = f"seed {event['seed']}"
    lines = [f"results of race {event['race']} ({event['variant']}, {head}):"]
    for r in event["results"]:
        lines.append(
            f"{r['rank']:3}. {r['name']:<16} {status_word(r['status'], finish):<12} "
            f"banked {r['banked']:2}  "
            f"moves {r['moves']:3}  {r['time_ms'] // 100 / 10:.1f}s"
        )
    if event.get("par") is not None:
        lines.append(f"par {event['par']} moves: the solver's winning line")
    return "\n".join(lines)


def attempt_entry(board: dict[str, Any], date: str, attempt: int) -> dict[str, Any] | None:
    """The entry of this player's attempt ``attempt`` of ``date`` in a leaderboard's
    history, if it has it (the results are recorded as the race ends)."""
    for entry in board.get("history") or []:
        if (
            entry.get("date") == date
            and entry.get("variant") == board.get("variant")
            and entry.get("attempt") == attempt
        ):
            return dict(entry)
    return None


def render_attempt(board: dict[str, Any], entry: dict[str, Any]) -> str | None:
    """Whether the daily attempt of ``entry`` (just played) is ranked, from the day's
    board; None where the board's own lines say it already (render_board)."""
    if entry.get("attempt") == 1 and _verdict(board) is not None:
        return None
    head = f"your attempt {entry.get('attempt')} of {entry.get('date')}"
    if entry.get("ranked"):
        return f"{head}: ranked"
    if entry.get("unranked") == "later_attempt":
        return f"{head}: not ranked (only your first attempt of the day can be)"
    why = UNRANKED.get(entry.get("unranked") or "")
    return f"{head}: not ranked" + (f": {why}" if why else "")


async def daily_board(
    client: Client, variant: str, date: str | None, attempt: int | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Today's leaderboard, and the entry of the attempt just played once the board has
    it (asked again a few times: the results are recorded as the race ends)."""
    board = await client.leaderboard(variant)
    for _ in range(5):
        if date is None or attempt is None:
            break
        entry = attempt_entry(board, date, attempt)
        if entry is not None:
            return board, entry
        await asyncio.sleep(0.3)
        board = await client.leaderboard(variant)
    return board, None


def replay_url(server_url: str, event: dict[str, Any]) -> str:
    """The replay page of the race a ``race_over`` event ends (public where the room's
    spectators saw its boards, else to its players)."""
    parts = urllib.parse.urlsplit(server_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return f"{scheme}://{parts.netloc}/replay/{event['room']}/{event['race']}"


def gone_words(
    code: int | None,
    reason: str = "",
    *,
    waited: float = RESUME_TIMEOUT_S,
    seat: bool = False,
    again: str = "solrace play",
) -> str:
    """Why a client's connection is closed for good, in words, from its close ``code``
    (None: the server did not come back within ``waited`` seconds). ``seat``: the player's
    game of a race goes on, and a server that comes back keeps its seat for its resume
    grace, which ``again`` (the command, run again) comes back to."""
    if code == CloseCode.REPLACED:
        return (
            "this player connected elsewhere (another window or device took over); this one stops"
        )
    if code == CloseCode.REVOKED:
        return (
            "this player's tokens were revoked (a new password, or a logout everywhere); "
            "this one stops: solrace login again"
        )
    if code is not None:
        said = f"{code} {reason}".strip()
        return f"the server closed the connection ({said}); this one stops"
    line = f"the server is gone: it did not come back within {waited:g} s (the command ends)"
    if seat:
        line += (
            f"; a server that comes back keeps your seat in the race for "
            f"{SERVER_RESUME_GRACE_S:g} s more: run {again} again to return to it"
        )
    return line


class _Session:
    """What the terminal client keeps of the room it is in."""

    def __init__(self, client: Client, console: Console, color: bool) -> None:
        self.client = client
        self.console = console
        self.color = color
        self.names: dict[str, str] = {}
        self.racing = False
        self.finished = asyncio.Event()
        self.settings: dict[str, Any] = {}
        self.spectators: str | None = None  # the setting lines last shown
        self.race_line: str | None = None
        self.standings: dict[str, dict[str, Any]] = {}  # of this race, by player id
        self.done = False  # this player's game of this race is over
        self.ends_told = False  # a first-to-finish race's end was told
        self.gone = asyncio.Event()  # the connection is closed for good
        self.lost = False  # ... because the server went away (or put us out)
        self.watching = False  # a spectator's: no game of its own, no rematch to ask
        self.members_line: str | None = None  # who is in the room, as last shown
        self.closed: tuple[int | None, str] | None = None  # the close code and reason
        self.again = "solrace play"  # the command that comes back to the race
        self.offline = False  # the connection is down, the library resuming it
        self.deadline: float | None = None  # the loop's time the race ends, as last told
        self.confirming = False  # q asked whether to resign: the next line answers

    def variant(self) -> str | None:
        """The room's game (None before its settings are known)."""
        variant = self.settings.get("variant")
        return str(variant) if variant else None

    def undo_allowed(self) -> bool:
        """Whether this room's games may undo (never the daily deal's)."""
        return bool(self.settings.get("undo", True)) and not self.settings.get("daily")

    def help_text(self) -> str:
        """What ``help`` says: this room's game's moves, and undo where it is allowed."""
        variant = self.variant()
        if self.settings.get("daily") and variant:
            return daily_line_help(variant)
        return line_help(variant, self.undo_allowed())

    def time_left(self) -> str:
        """The race's time left as the server last told it, or why there is none."""
        if self.offline and self.racing:
            return CLOCK_OFFLINE
        if not self.racing or self.deadline is None:
            return "no race is running"
        left = clock(self.deadline - asyncio.get_running_loop().time())
        return f"time left {left}" + (" (first to finish)" if self.ends_told else "")

    def take_clock(self, room: dict[str, Any]) -> None:
        """The race's clock from a room snapshot (the server's: after an outage it may have
        moved on, a first win bringing the end forward)."""
        if room.get("state") != "racing":
            return
        left = room.get("left_ms")
        if left is None:
            left = room.get("time_limit", 0) * 1000 - room.get("elapsed_ms", 0)
        self.deadline = asyncio.get_running_loop().time() + left / 1000

    async def watch_connection(self, every: float = 0.25) -> None:
        """Say when the connection drops (the library resumes it by itself; ``resumed``
        says when it is back): moves are not sent meanwhile, and there is no clock."""
        while not self.gone.is_set():
            await asyncio.sleep(every)
            if self.client.resuming and not self.offline and not self.gone.is_set():
                self.offline = True
                # A spectator types nothing: the notice alone.
                self.console.write(
                    CONNECTION_LOST.split(" (")[0] if self.watching else CONNECTION_LOST
                )

    def gone_line(self) -> str:
        """Why the command ends, once its connection is closed for good (a ``closed``
        event): taken over by another window, or a server that did not come back."""
        code, reason = self.closed or (None, "")
        return gone_words(
            code,
            reason,
            waited=self.client.resume_timeout,
            seat=not self.watching and self.game_goes_on(),
            again=self.again,
        )

    def show_spectators(self, settings: dict[str, Any]) -> None:
        """Show the room's settings (who may watch, its deals and how its race ends), each
        when it is new or has changed."""
        self.settings = settings
        line = render_spectators(settings)
        if line != self.spectators:
            self.spectators = line
            self.console.write(line)
        race = render_race(settings)
        if race and race != self.race_line:
            self.race_line = race
            self.console.write(race)

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
        elif view["status"] == "stuck" and view.get("can_undo"):
            # Where undo is allowed, stuck is not the end: the player may undo or resign.
            self.console.write(STUCK_UNDO)
            if view.get("legal"):
                self.console.write(render_moves(view["legal"]))
        elif view["status"] == "stuck":
            self.console.write(STUCK_OVER)

    def show_moves(self) -> None:
        """The numbered legal moves of this player's game, as ``?`` asks."""
        view = self.client.view
        if not self.racing or view is None:
            self.console.write("no race is running: no moves to list")
        elif view["status"] == "playing" or (view["status"] == "stuck" and view.get("legal")):
            self.console.write(render_moves(view.get("legal", [])))
        else:
            self.console.write(f"your game is over ({view['status']}): no moves to list")

    def game_goes_on(self) -> bool:
        """Whether this player's game of the running race is not over yet (a stuck game
        where undo is allowed goes on). A resignation is the race's to say (its standing),
        not the board's, which still reads "playing"."""
        view = self.client.view
        if not self.racing or view is None or self.done:
            return False
        mine = self.standings.get(self.client.player_id or "", {}).get("status")
        if mine in ("resigned", "out_of_time"):
            return False
        return view["status"] == "playing" or (
            view["status"] == "stuck" and bool(view.get("can_undo"))
        )

    def show_standings(self) -> None:
        self.console.write(render_standings(list(self.standings.values()), self.names))

    def take_snapshot(self, room: dict[str, Any]) -> None:
        """Come back into a room whose race is on (or just over): its standings, and this
        player's board where the race is still being played."""
        self.settings = room["settings"]
        self.standings = {}
        for player in room.get("players", []):
            self.names.setdefault(player["player_id"], player.get("name", ""))
            self.standings[player["player_id"]] = heard_standing(None, player)
        if room.get("state") != "racing":
            self.console.write("you are back in the room; its race is over: 'rematch' or 'q'")
            return
        self.racing, self.done, self.ends_told = True, False, False
        self.catch_up(room)  # its clock, and whether a first win brought its end forward
        self.console.write(f"back in race {room.get('race')}: your game goes on where it was")
        self.console.write(self.time_left())
        self.show_standings()
        if self.client.view is not None:
            self.show_board()

    def on_race_started(self, event: dict[str, Any]) -> None:
        self.racing, self.done, self.ends_told = True, False, False
        self.names.update({p["player_id"]: p["name"] for p in event["players"]})
        banked = (event.get("view") or {}).get("banked", 0)
        self.standings = {
            p["player_id"]: {
                "player_id": p["player_id"],
                "banked": banked,
                "moves": 0,
                "status": "playing",
                "elapsed_ms": 0,
            }
            for p in event["players"]
        }
        limit = event.get("time_limit", self.settings.get("time_limit"))
        if limit is not None:
            self.deadline = asyncio.get_running_loop().time() + limit
        self.console.write(
            f"race {event['race']} started: {event['variant']}"
            + (f"; time left {clock(limit)}" if limit is not None else "")
        )
        if "boards" in event:
            self.show_boards(event["boards"])
        elif "view" in event:
            self.show_board()
        else:
            self.console.write("the boards are shown once the race is over")

    def on_progress(self, event: dict[str, Any]) -> None:
        me = self.client.player_id
        was_done = self.done
        for standing in event["players"]:
            player_id = standing["player_id"]
            self.standings[player_id] = heard_standing(self.standings.get(player_id), standing)
            if "view" in standing:
                self.console.write(f"--- {self.names.get(player_id, player_id)}")
                self.console.write(render_view(standing["view"], color=self.color))
            elif player_id != me and not was_done:
                self.console.write(render_progress(standing, self.names))
            if player_id == me:
                self.on_own_standing(standing)
            if standing["status"] == "won":
                self.on_win(standing)
        if was_done and self.racing:
            self.show_standings()  # a finished player watches the standings, by place

    def on_own_standing(self, standing: dict[str, Any]) -> None:
        """This player's own standing: a win is told with its place, and a game that is
        over lets the player leave or watch."""
        status = standing["status"]
        if self.done or not self.racing:
            return
        if status == "won":
            place = standing.get("place")
            if place:
                of = f" of {len(self.standings)}" if len(self.standings) > 1 else ""
                self.console.write(f"You finished {ordinal(place)}{of}: all 52 cards are home!")
            else:
                self.console.write("You finished: all 52 cards are home!")
        elif status == "resigned":
            self.console.write("You resigned.")
        elif status != "stuck" or self.settings.get("undo", True):
            return  # playing, or stuck where undo is allowed: the game goes on
        self.done = True
        if len(self.standings) > 1:
            self.show_standings()
            self.console.write(MAY_LEAVE)

    def on_win(self, standing: dict[str, Any]) -> None:
        """In a first-to-finish room, the first win brings the race's end forward."""
        if self.ends_told or self.settings.get("finish") != "first" or len(self.standings) < 2:
            return
        self.ends_told = True
        grace = int(self.settings.get("finish_grace") or 0)
        end = asyncio.get_running_loop().time() + grace
        self.deadline = end if self.deadline is None else min(self.deadline, end)
        name = (
            "you"
            if standing["player_id"] == self.client.player_id
            else self.names.get(standing["player_id"], standing["player_id"])
        )
        self.console.write(
            f"first to finish: {name} won, the race ends in {self.settings.get('finish_grace')} s"
        )

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
            # A player who left is still named in the standings and boards of the race.
            self.names.update({m["player_id"]: m["name"] for m in event["members"]})
            who = ", ".join(
                f"{m['name']}{' (host)' if m['player_id'] == event['host'] else ''}"
                f"{' ready' if m['ready'] else ''}{' spectating' if m['role'] == 'spectator' else ''}"
                f"{'' if m.get('connected', True) else f' ({OFFLINE_TAG})'}"
                for m in event["members"]
            )
            # A resume (a server restart, say) brings the same list again: shown once.
            if who != self.members_line:
                self.members_line = who
                self.console.write(f"in the room: {who}")
        elif kind == "countdown":
            self.console.write(f"the race starts in {event['seconds']} s")
        elif kind == "race_started":
            self.on_race_started(event)
        elif kind == "progress":
            self.on_progress(event)
        elif kind == "boards":
            self.show_boards(event["boards"], f" ({event['delay']} s ago)")
        elif kind == "race_over":
            self.racing = False
            self.deadline = None
            final = {r["player_id"]: r["status"] for r in event["results"]}
            for player_id, status in final.items():
                if player_id in self.standings:
                    self.standings[player_id]["status"] = status
            if "boards" in event:
                boards = {
                    p: {**b, "status": final[p]} if p in final else b
                    for p, b in event["boards"].items()
                }
                self.show_boards(boards, " (final)")
            self.console.write(render_results(event, self.settings.get("finish")))
            if not event.get("daily"):
                self.console.write(f"replay: {replay_url(self.client.url, event)}")
                if not self.watching:  # a spectator may not ask for one (not_a_player)
                    self.console.write("type 'rematch' for a new deal, or 'q' to quit")
            self.finished.set()
        elif kind == "resumed":
            self.offline = False
            room = self.client.room or {}
            ended = self.racing and room.get("state") == "finished"
            started = not self.racing and room.get("state") == "racing"
            self.catch_up(room)
            goes_on = ""
            if self.racing and not ended:
                goes_on = f", the race goes on; {self.time_left()}"
            if event.get("restarted"):
                self.console.write(f"the server restarted; connection restored{goes_on}")
            else:
                self.console.write(f"connection restored{goes_on}")
            if started:  # the race started while the connection was down
                self.take_snapshot(room)
            if ended and room.get("results") is not None:
                # The race ended while the connection was down: its race_over never came.
                self.on_event(
                    {
                        "type": "race_over",
                        "room": room["code"],
                        "race": room.get("race"),
                        "variant": self.settings.get("variant"),
                        "seed": room.get("seed"),
                        "par": room.get("par"),
                        "results": room["results"],
                        "daily": self.settings.get("daily"),
                        "attempt": self.settings.get("attempt"),
                    }
                )
        elif kind == "closed":
            self.console.write("connection closed")
            self.closed = (event.get("code"), event.get("reason") or "")
            self.lost = True  # the client closing itself gives no such event
            self.gone.set()
            self.finished.set()

    def catch_up(self, room: dict[str, Any]) -> None:
        """After an outage, the race as the server's snapshot has it: its clock, and the
        standings (a progress event sent meanwhile never came)."""
        if room.get("state") != "racing" or not self.racing:
            return
        self.take_clock(room)
        for player in room.get("players", []):
            self.standings[player["player_id"]] = heard_standing(None, player)
        won = any(p.get("status") == "won" for p in self.standings.values())
        if won and self.settings.get("finish") == "first" and len(self.standings) > 1:
            self.ends_told = True  # a first win while away brought the end forward

    async def pump(self) -> None:
        async for event in self.client.events():
            self.on_event(event)

    async def command(self, line: str) -> bool:
        """Carry out one typed line; False when the user quits. Quitting while this
        player's game of a running race goes on resigns it: ``q`` asks first
        (:data:`RESIGN_ASK`), and only ``y`` quits."""
        text = line.strip()
        if self.confirming:
            self.confirming = False
            answer = text.lower()
            if answer in ("y", "yes"):
                return False
            if answer in ("", "n", "no"):
                if self.game_goes_on():
                    self.console.write("not resigned: your game goes on")
                return True
            # Any other line is no yes: it is carried out as typed.
        if not text:
            return True
        if text in ("q", "quit", "exit"):
            if not self.game_goes_on():
                return False
            self.confirming = True
            self.console.write(RESIGN_ASK)
            return True
        words = text.split()
        try:
            if text == "help":
                self.console.write(self.help_text())
            elif text in ("?", "moves"):
                self.show_moves()
            elif text in ("time", "clock"):
                self.console.write(self.time_left())
            elif text in ("board", "b"):
                self.show_board()
            elif self.offline:
                self.console.write(NOT_SENT_OFFLINE)
            elif text == "ready":
                await self.client.ready()
            elif text == "start":
                await self.client.start()
            elif text == "rematch":
                await self.client.rematch()
            elif words[0] == "spectators":
                if len(words) not in (2, 3) or (len(words) == 3 and not words[2].isdigit()):
                    self.console.write(SPECTATORS_HELP)
                else:
                    delay = int(words[2]) if len(words) == 3 else None
                    await self.client.set_settings(words[1], delay)
            elif words[0] == "finish":
                if len(words) not in (2, 3) or (len(words) == 3 and not words[2].isdigit()):
                    self.console.write(FINISH_HELP)
                else:
                    grace = int(words[2]) if len(words) == 3 else None
                    await self.client.set_settings(finish=words[1], finish_grace=grace)
            elif text == "resign":
                await self.client.resign()
            else:
                move = numbered(text, (self.client.view or {}).get("legal", []))
                ack = await self.client.move(move)
                self.console.write(f"played {ack['move']}")
                self.show_board()
        except ServerError as error:
            self.console.write(refusal(error, self.variant(), undo=self.undo_allowed()))
        except TimeoutError:
            # The connection went down while the request waited: it may or may not have
            # been carried out; the board comes back with the connection.
            self.console.write("no answer from the server (the connection is down): try again")
        return True


async def _read_or_lost(session: _Session) -> str | None:
    """The next line typed, or None as soon as the connection is given up for lost."""
    reader = asyncio.ensure_future(session.console.read_line())
    lost = asyncio.ensure_future(session.gone.wait())
    done, _ = await asyncio.wait({reader, lost}, return_when=asyncio.FIRST_COMPLETED)
    lost.cancel()
    if reader in done:
        return reader.result()
    reader.cancel()
    return None


async def _quit_game(session: _Session) -> None:
    """Quitting a game that goes on resigns it, so that the race need not wait; offline,
    the server counts it out once the seat's grace is over."""
    if not session.game_goes_on():
        return
    if session.offline:
        session.console.write(
            "offline: your game could not be resigned; the server gives it up when your seat "
            f"is no longer kept ({SERVER_RESUME_GRACE_S:g} s)"
        )
        return
    with contextlib.suppress(ServerError, ClientClosed, TimeoutError):
        await session.client.resign()
        session.console.write("You resigned.")


async def _run(session: _Session, *, interactive: bool) -> int:
    pump = asyncio.ensure_future(session.pump())
    watcher = asyncio.ensure_future(session.watch_connection())
    try:
        while True:
            if interactive:
                line = await _read_or_lost(session)
                if session.lost:
                    session.console.write(session.gone_line())
                    return 1
                if line is None or not await session.command(line):
                    await _quit_game(session)
                    if not session.offline:  # offline, the server counts the seat out
                        await leave_quietly(session.client)
                    break
            else:
                await session.finished.wait()
                if session.lost:
                    session.console.write(session.gone_line())
                    return 1
                break
    except ClientClosed as error:
        session.console.write(session.gone_line() if session.lost else f"disconnected: {error}")
        return 1
    finally:
        for task in (watcher, pump):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
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
    resume_timeout: float = RESUME_TIMEOUT_S,
    keep_guest: bool = False,
    asked_name: str | None = None,
) -> int:
    """Create (or join) a room and play in the terminal until the user quits (or the
    server is gone ``resume_timeout`` seconds). A player who comes back (``keep_guest``:
    the same guest as before) into a race that is on plays on."""
    client = Client(
        url,
        name=name,
        resume_timeout=resume_timeout,
        **client_identity(url, name, token, keep_guest),
    )
    try:
        await client.connect()
        room, back = await enter_room(client, join, variant, settings or {})
    except (ServerError, ClientClosed, OSError, WebSocketException) as error:
        console.write(
            unreachable(url, error) or f"could not {'join' if join else 'create'} the room: {error}"
        )
        _stale_login(console, error, token)
        await client.close()
        return 1
    for note in (shared_guest_note(client), login_name_note(client, asked_name)):
        if note:
            console.write(note)
    console.write(f"room {room['code']} ({room['settings']['variant']}); you are {client.name}")
    console.write(f"send friends the room's link: {room_link(url, room['code'])}")
    session = _Session(client, console, color)
    session.names = {m["player_id"]: m["name"] for m in room["members"]}
    if back and room.get("state") in ("racing", "finished"):
        session.take_snapshot(room)
    else:
        console.write("type 'ready' when you are (the host may type 'start'); 'help' lists moves")
        _british_canister(console, room["settings"]["variant"])
        session.show_spectators(room["settings"])
        if room.get("host") == client.player_id:
            console.write(SPECTATORS_HELP)
            console.write(FINISH_HELP)
    return await _run(session, interactive=True)


def render_streaks(streaks: dict[str, int]) -> str:
    """A player's daily streaks in words, each count with its own ``day`` or ``days``."""
    return (
        f"streaks: {plural(streaks['played'], 'day')} played in a row, "
        f"{plural(streaks['won'], 'day')} won in a row (best: "
        f"{plural(streaks['best_played'], 'day')} played, "
        f"{plural(streaks['best_won'], 'day')} won)"
    )


def render_board(board: dict[str, Any]) -> str:
    """A daily leaderboard as lines: the top, your rank and streaks, and the seed once public."""
    lines = [f"daily {board['variant']} {board['date']}: {board['count']} ranked"]
    rows = {e["player_id"]: e for e in board["top"]}
    for e in board.get("around", []):
        rows.setdefault(e["player_id"], e)
    for e in sorted(rows.values(), key=lambda e: (e["rank"], e["name"])):
        lines.append(
            f"{e['rank']:4}. {e['name']:<16} {status_word(e['status']):<11} banked {e['banked']:2}  "
            f"moves {e['moves']:3}  {e['time_ms'] // 100 / 10:.1f}s"
        )
    you = board.get("you")
    if you:
        lines.append(f"your rank: {you['rank']} of {board['count']}")
    verdict = _verdict(board)
    if verdict:
        lines.append(verdict)
    streaks = board.get("streaks")
    if streaks:
        lines.append(render_streaks(streaks))
    if board.get("seed") is not None:
        lines.append(f"seed: {board['seed']}")
    return "\n".join(lines)


HINTS = {
    "race_not_started": "type 'ready' when you are; the host may type 'start'",
    "race_over": "type 'rematch' for a new deal, or 'q' to quit",
    "game_over": "wait for the race to end, or type 'q' to quit",
    "stale_revision": "the board below is your game as the server has it",
    "rate_limited": "slow down a little",
    "unavailable": "try again in a moment (a move sent again is kept once)",
    "internal_error": "try again",
}
"""What to do next after a refusal, by its code, where the server's sentence does not say."""


SERVER_EXAMPLES = ": write e.g. "
"""Where the server's sentence for text that is no move (``bad_move``) starts its examples,
which are every game's: the client gives the game's own instead."""


def refusal(error: ServerError, variant: str | None = None, *, undo: bool = False) -> str:
    """A refusal in words: the server's sentence, what to do next, and its code last (to
    look it up in docs/protocol.md), never a bare code first. Text that is no move
    (``bad_move``) in a game of ``variant`` is answered with that game's moves (``u``
    where the room allows ``undo``), not with moves of other games."""
    sentence = (error.message or "the server refused that").strip().rstrip(".")
    hint = HINTS.get(error.code)
    if error.code == "bad_move" and variant is not None:
        sentence = sentence.split(SERVER_EXAMPLES, 1)[0]
        hint = f"write e.g. {move_examples(variant, undo=undo)}"
    parts = [sentence[:1].upper() + sentence[1:]]
    if error.retry_after:
        hint = f"try again in {max(1, round(error.retry_after))} s"
    if hint:
        parts.append(hint)
    return f"Refused: {'; '.join(parts)}. [{error.code}]"


UNRANKED = {
    "new_account": "a new account ranks from its second day (UTC)",
    "address_limit": "enough accounts at your address (your network) rank this deal already",
    "guest": "it was played as a guest",
}
"""Why a first attempt is not ranked, by the board's ``unranked`` reason."""


def _verdict(board: dict[str, Any]) -> str | None:
    """What the board says of your first attempt of its day, when it holds no place for a
    reason other than being a later attempt: not ranked, or waiting for review."""
    mine = [
        e
        for e in board.get("history", [])
        if e["date"] == board["date"] and e["variant"] == board["variant"] and e["attempt"] == 1
    ]
    if not mine:
        return None
    first = mine[0]
    if first.get("unranked") in UNRANKED:
        return f"your attempt 1 is kept, not ranked: {UNRANKED[first['unranked']]}"
    if first.get("ranked") and first.get("flag") and not first.get("kept"):
        why = (
            "another account at your address played this deal too, before or during yours"
            if str(first["flag"]).startswith("address:")
            else "its pace"
        )
        return f"your attempt 1 waits for an operator's review before it ranks: {why}"
    return None


def _british_canister(console: Console, variant: str) -> None:
    """Say plainly, once, what a British Canister race is about."""
    if variant == "british-canister":
        console.write(BRITISH_CANISTER)


def _stale_login(console: Console, error: Exception, token: str | None) -> None:
    """Say what to do when the token kept by ``solrace login`` no longer works, or when
    the command needs an account."""
    if token is not None and isinstance(error, ServerError) and error.code == "bad_token":
        console.write("the login kept for this server no longer works: solrace login again")
    if isinstance(error, ServerError) and error.code == "account_required":
        console.write(
            "log in first: solrace login (your account on this server), or "
            "solrace login --new to claim a name with a password"
        )


async def daily(
    url: str,
    console: Console,
    *,
    name: str,
    variant: str,
    token: str | None = None,
    color: bool = False,
    keep_guest: bool = False,
    resume_timeout: float = RESUME_TIMEOUT_S,
) -> int:
    """Play today's daily deal of ``variant`` in the terminal, then show the leaderboard."""
    client = Client(
        url,
        name=name,
        resume_timeout=resume_timeout,
        **client_identity(url, name, token, keep_guest),
    )
    try:
        await client.connect()
        note = await new_account_note(client, variant) if client.account else None
        if note:
            console.write(note)
        room = await client.daily(variant)
    except (ServerError, ClientClosed, OSError, WebSocketException) as error:
        console.write(unreachable(url, error) or f"could not start the daily deal: {error}")
        _stale_login(console, error, token)
        await client.close()
        return 1
    settings = room["settings"]
    # Whether a first attempt is ranked is known once it is over (a new account's is not).
    attempt = settings["attempt"]
    ranked = " (not ranked: only your first attempt of the day can be)" if attempt > 1 else ""
    console.write(f"daily {variant} {settings['daily']}, attempt {attempt}{ranked}")
    console.write(f"{duration(settings['time_limit'])}. {daily_line_help(variant)}")
    _british_canister(console, variant)
    session = _Session(client, console, color)
    session.again = f"solrace daily {variant}"
    session.settings = settings
    session.racing = room.get("state") == "racing"
    session.take_clock(room)
    session.show_board()
    pump = asyncio.ensure_future(session.pump())
    watcher = asyncio.ensure_future(session.watch_connection())
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
                if session.offline:  # no resign to send, no board to fetch
                    await _quit_game(session)
                    return 0
                if client.view and client.view["status"] == "playing":
                    await client.resign()
                    await session.finished.wait()
                break
        board, entry = await daily_board(client, variant, settings["daily"], attempt)
        console.write(render_board(board))
        line = None if entry is None else render_attempt(board, entry)
        if line is not None:
            console.write(line)
    except (ClientClosed, ServerError) as error:
        console.write(session.gone_line() if session.lost else f"disconnected: {error}")
        return 1
    finally:
        if reader is not None:
            reader.cancel()
        for task in (watcher, pump):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
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
    resume_timeout: float = RESUME_TIMEOUT_S,
) -> int:
    """Watch a room as a spectator until its race is over. A spectator keeps no guest
    token (it has no seat to come back to): each run without a login is a new guest, so
    that two runs never take each other's connection over."""
    client = Client(url, name=name, token=token, resume_timeout=resume_timeout)
    try:
        await client.connect()
        room = await client.join(code, role="spectator")
    except (ServerError, ClientClosed, OSError, WebSocketException) as error:
        console.write(unreachable(url, error) or f"could not watch room {code}: {error}")
        _stale_login(console, error, token)
        await client.close()
        return 1
    console.write(f"watching room {room['code']} ({room['settings']['variant']})")
    _british_canister(console, room["settings"]["variant"])
    session = _Session(client, console, color)
    session.watching = True
    session.show_spectators(room["settings"])
    session.names = {m["player_id"]: m["name"] for m in room["members"]}
    session.show_boards(room.get("boards", {}))
    return await _run(session, interactive=False)
