"""``solrace play`` and ``solrace watch``: the command-line client."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from typing import Any

from ..engine import VARIANTS
from .logins import stored_login

__all__ = ["register"]

DEFAULT_URL = os.environ.get("SOLRACE_URL", "ws://127.0.0.1:8765/")


def register(subparsers: Any) -> None:
    """Add the ``play`` and ``watch`` commands."""
    play: argparse.ArgumentParser = subparsers.add_parser(
        "play", help="create or join a room and race in the terminal"
    )
    play.add_argument("url", nargs="?", default=DEFAULT_URL, help=f"server URL ({DEFAULT_URL})")
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
    play.add_argument("--no-color", action="store_true", help="no ANSI colours")
    play.set_defaults(func=_play)
    daily: argparse.ArgumentParser = subparsers.add_parser(
        "daily", help="play today's daily deal, then see the leaderboard"
    )
    daily.add_argument("variant", choices=sorted(VARIANTS))
    daily.add_argument("url", nargs="?", default=DEFAULT_URL, help=f"server URL ({DEFAULT_URL})")
    daily.add_argument("--name", default=None, help="display name (your login name)")
    daily.add_argument("--no-color", action="store_true", help="no ANSI colours")
    daily.set_defaults(func=_daily)
    watch: argparse.ArgumentParser = subparsers.add_parser(
        "watch", help="watch a room as a spectator"
    )
    watch.add_argument("url", help="server URL, such as ws://127.0.0.1:8765/")
    watch.add_argument("code", help="the room code")
    watch.add_argument("--name", default="spectator")
    watch.add_argument("--no-color", action="store_true", help="no ANSI colours")
    watch.set_defaults(func=_watch)


def _color(args: argparse.Namespace) -> bool:
    return not args.no_color and "NO_COLOR" not in os.environ and sys.stdout.isatty()


def _token(url: str) -> str | None:
    """The token of the account logged in to the server (``solrace login``), if any."""
    login = stored_login(url)
    return None if login is None else login["token"]


def _play(args: argparse.Namespace) -> int:
    from .terminal import StdConsole, play

    name = args.name or getpass.getuser()
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
    for key in ("winnable", "finish", "finish_grace"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    color = _color(args)
    return asyncio.run(
        play(
            args.url,
            StdConsole(color),
            name=name,
            token=_token(args.url),
            join=args.join,
            variant=args.variant,
            settings=settings,
            color=color,
        )
    )


def _watch(args: argparse.Namespace) -> int:
    from .terminal import StdConsole, watch

    color = _color(args)
    return asyncio.run(
        watch(
            args.url,
            args.code,
            StdConsole(color),
            name=args.name,
            token=_token(args.url),
            color=color,
        )
    )


def _daily(args: argparse.Namespace) -> int:
    from .terminal import StdConsole, daily

    color = _color(args)
    name = args.name or getpass.getuser()
    return asyncio.run(
        daily(
            args.url,
            StdConsole(color),
            name=name,
            token=_token(args.url),
            variant=args.variant,
            color=color,
        )
    )
