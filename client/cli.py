"""``solrace play``, ``watch`` and ``daily``: the terminal client.

On a terminal they open the full-screen client (:mod:`solrace.client.tui`); ``--plain``,
or output that is not a terminal (a pipe, a script, a test), gives the line-by-line client
(:mod:`solrace.client.terminal`). Wherever a server URL goes, the page's address is taken
too: ``http://HOST:PORT/`` is the server at ``ws://HOST:PORT/``, and a room's link
``http://HOST:PORT/r/CODE`` also names the room (``https`` gives ``wss``).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from typing import TYPE_CHECKING, Any

from ..engine import VARIANTS
from .logins import stored_login
from .urls import BadServerUrl, parse_server_url

if TYPE_CHECKING:
    from .tui import RaceApp

__all__ = ["build_app", "full_screen", "register"]

DEFAULT_URL = os.environ.get("SOLRACE_URL", "ws://127.0.0.1:8765/")
URL_HELP = (
    "server URL: ws://HOST:PORT/, or the page's address, http(s)://HOST:PORT/ or a room's "
    "link http(s)://HOST:PORT/r/CODE"
)
NO_ROOM = "name the room to watch: solrace watch URL CODE, or the room's link [no_room]"
PLAIN_HELP = (
    "the line-by-line client, for scripts (the default when the output is not a terminal); "
    "without it a terminal gets the full-screen client"
)


def register(subparsers: Any) -> None:
    """Add the ``play`` and ``watch`` commands."""
    play: argparse.ArgumentParser = subparsers.add_parser(
        "play", help="create or join a room and race in the terminal"
    )
    play.add_argument("url", nargs="?", default=DEFAULT_URL, help=f"{URL_HELP} ({DEFAULT_URL})")
    play.add_argument("--name", default=None, help="display name (your login name)")
    play.add_argument("--join", metavar="CODE", help="join this room instead of creating one")
    play.add_argument(
        "--game",
        "--variant",
        dest="variant",
        choices=sorted(VARIANTS),
        default="canfield",
        help="the game of the new room (canfield)",
    )
    play.add_argument("--max-players", type=int, default=4)
    play.add_argument("--time-limit", type=int, default=900, metavar="SECONDS")
    play.add_argument("--countdown", type=int, default=3, metavar="SECONDS")
    play.add_argument("--no-undo", action="store_true", help="turn undo off in the new room")
    play.add_argument(
        "--spectators",
        choices=("live", "delayed", "after", "off"),
        default=None,
        help="who may watch the new room: every board live (for friends), boards delayed, "
        "boards only after the race, or no one (the server's default: after)",
    )
    play.add_argument(
        "--spectator-delay",
        type=int,
        default=None,
        metavar="SECONDS",
        help="how late a delayed room shows the boards (10 to 300; 30)",
    )
    play.add_argument(
        "--winnable",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="deal only deals the server's solver certified winnable, with par in the results "
        "(the server's default: on for every game but british-canister, which has none)",
    )
    play.add_argument(
        "--finish",
        choices=("everyone", "first"),
        default=None,
        help="how the race ends: when everyone's game is over (the default), or a grace "
        "after the first win",
    )
    play.add_argument(
        "--finish-grace",
        type=int,
        default=None,
        metavar="SECONDS",
        help="how long a 'first' race goes on after the first win (30)",
    )
    play.add_argument(
        "--ghost",
        default=None,
        metavar="RUN",
        help="race alone against a recorded run as a ghost: CODE/RACE/PLAYER (a replay "
        "page's run; PLAYER is the player's id or their name in the results) or "
        "daily/DATE/VARIANT/PLAYER (a ranked daily run, once its day is over; the player id)",
    )
    play.add_argument("--no-color", action="store_true", help="no ANSI colours")
    play.add_argument("--plain", action="store_true", help=PLAIN_HELP)
    play.set_defaults(func=_play)
    daily: argparse.ArgumentParser = subparsers.add_parser(
        "daily", help="play today's daily deal, then see the leaderboard"
    )
    daily.add_argument("variant", choices=sorted(VARIANTS))
    daily.add_argument("url", nargs="?", default=DEFAULT_URL, help=f"{URL_HELP} ({DEFAULT_URL})")
    daily.add_argument("--name", default=None, help="display name (your login name)")
    daily.add_argument("--no-color", action="store_true", help="no ANSI colours")
    daily.add_argument("--plain", action="store_true", help=PLAIN_HELP)
    daily.set_defaults(func=_daily)
    watch: argparse.ArgumentParser = subparsers.add_parser(
        "watch", help="watch a room as a spectator"
    )
    watch.add_argument("url", help=f"{URL_HELP}, such as ws://127.0.0.1:8765/")
    watch.add_argument(
        "code", nargs="?", default=None, help="the room code (if the URL is not the room's link)"
    )
    watch.add_argument("--name", default="spectator")
    watch.add_argument("--no-color", action="store_true", help="no ANSI colours")
    watch.add_argument("--plain", action="store_true", help=PLAIN_HELP)
    watch.set_defaults(func=_watch)


class _Refused(Exception):
    """A command line that cannot be carried out: a sentence, its stable code last in
    brackets (as the server's refusals are shown)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _server(args: argparse.Namespace) -> tuple[str, str | None]:
    """The websocket URL to connect to, and the room the command names (by ``--join``,
    the ``code`` argument or the room's link), from the command's arguments."""
    try:
        parsed = parse_server_url(args.url)
    except BadServerUrl as error:
        raise _Refused(str(error)) from None
    given = getattr(args, "join", None) or getattr(args, "code", None)
    code = given.strip().upper() if given else None
    if code and parsed.code and code != parsed.code:
        raise _Refused(
            f"the link names room {parsed.code} but the command names room {code} [two_rooms]"
        )
    return parsed.ws, code or parsed.code


def _refused(command: str, error: _Refused) -> int:
    print(f"solrace {command}: {error.message}", file=sys.stderr)
    return 2


def full_screen(args: argparse.Namespace) -> bool:
    """Whether the command runs the full-screen client: on a terminal, without ``--plain``."""
    stdin = sys.stdin  # None where the process has none
    return not args.plain and stdin is not None and stdin.isatty() and sys.stdout.isatty()


def _color(args: argparse.Namespace) -> bool:
    return not args.no_color and "NO_COLOR" not in os.environ and sys.stdout.isatty()


def _token(url: str) -> str | None:
    """The token of the account logged in to the server (``solrace login``), if any."""
    login = stored_login(url)
    return None if login is None else login["token"]


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The new room's settings that ``solrace play`` asks for."""
    settings: dict[str, Any] = {
        "max_players": args.max_players,
        "time_limit": args.time_limit,
        "countdown": args.countdown,
        "undo": not args.no_undo,
    }
    if args.spectators is not None:
        settings["spectators"] = args.spectators
    if args.spectator_delay is not None:
        settings["spectator_delay"] = args.spectator_delay
    for key in ("winnable", "finish", "finish_grace", "ghost"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    return settings


def build_app(args: argparse.Namespace) -> RaceApp:
    """The full-screen client of ``solrace play``, ``watch`` or ``daily``, from the
    command's arguments (raises _Refused for a URL or room that cannot be read)."""
    from .tui import RaceApp

    url, code = _server(args)
    color = not args.no_color and "NO_COLOR" not in os.environ
    if args.command == "watch":
        if code is None:
            raise _Refused(NO_ROOM)
        # A spectator keeps no guest (it has no seat to come back to): two watches never
        # take each other's connection over.
        return RaceApp(url, mode="watch", name=args.name, token=_token(url), join=code, color=color)
    name = args.name or getpass.getuser()
    if args.command == "daily":
        return RaceApp(
            url,
            mode="daily",
            name=name,
            token=_token(url),
            variant=args.variant,
            color=color,
            keep_guest=True,
        )
    return RaceApp(
        url,
        mode="play",
        name=name,
        token=_token(url),
        join=code,
        variant=args.variant,
        settings=_settings(args),
        color=color,
        keep_guest=True,
        asked_name=args.name,
    )


def _run_app(args: argparse.Namespace) -> int:
    try:
        app = build_app(args)
    except _Refused as error:
        return _refused(args.command, error)
    app.run()
    code = app.return_code or 0
    for line in app.farewell:  # the screen is back: what to keep of the session
        print(line, file=sys.stderr if code else sys.stdout)
    return code


def _play(args: argparse.Namespace) -> int:
    if full_screen(args):
        return _run_app(args)
    from .terminal import StdConsole, play

    try:
        url, code = _server(args)
    except _Refused as error:
        return _refused("play", error)
    color = _color(args)
    return asyncio.run(
        play(
            url,
            StdConsole(color),
            name=args.name or getpass.getuser(),
            token=_token(url),
            join=code,
            variant=args.variant,
            settings=_settings(args),
            color=color,
            keep_guest=True,
            asked_name=args.name,
        )
    )


def _watch(args: argparse.Namespace) -> int:
    if full_screen(args):
        return _run_app(args)
    from .terminal import StdConsole, watch

    try:
        url, code = _server(args)
        if code is None:
            raise _Refused(NO_ROOM)
    except _Refused as error:
        return _refused("watch", error)
    color = _color(args)
    return asyncio.run(
        watch(
            url,
            code,
            StdConsole(color),
            name=args.name,
            token=_token(url),
            color=color,
        )
    )


def _daily(args: argparse.Namespace) -> int:
    if full_screen(args):
        return _run_app(args)
    from .terminal import StdConsole, daily

    try:
        url, _ = _server(args)
    except _Refused as error:
        return _refused("daily", error)
    color = _color(args)
    return asyncio.run(
        daily(
            url,
            StdConsole(color),
            name=args.name or getpass.getuser(),
            token=_token(url),
            variant=args.variant,
            color=color,
            keep_guest=True,
        )
    )
