"""``solrace race export CODE RACE``: a finished race as one JSON file, and its playback.

``export`` fetches the race a server keeps for its replay (``/api/race``; a room whose
spectators saw no boards gives its race to its players alone, so the login kept for that
server goes with the request, or without one the guests ``solrace play`` kept for it) and
writes it to a file or standard output.
``solrace replay FILE`` (:func:`play_back`) plays such a file in the terminal, every
player's moves in the order of their times; ``solrace verify FILE`` checks it
(:func:`solrace.server.races.check_race`).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .client.logins import stored_guest, stored_guests, stored_login
from .client.urls import BadServerUrl, parse_server_url, unreachable_http
from .engine import new_game, parse_move

__all__ = ["play_back", "register"]

DEFAULT_URL = os.environ.get("SOLRACE_URL", "ws://127.0.0.1:8765/")


def register(subparsers: Any) -> None:
    """Add the ``race`` command (``race export``)."""
    race: argparse.ArgumentParser = subparsers.add_parser(
        "race", help="a finished race: export it as one JSON file"
    )
    actions = race.add_subparsers(dest="action", metavar="ACTION", required=True)
    export = actions.add_parser(
        "export",
        help="write a finished race (game, seed, each player's timed moves, results) as JSON",
        description=(
            "Fetch a finished race the server keeps for its replay and write it as one JSON "
            "file: 'solrace replay FILE' plays it, 'solrace verify FILE' checks it. A room "
            "whose spectators saw no boards gives its races to their players alone: the "
            "login kept for the server (solrace login) is sent, or without one the guest "
            "that solrace play kept for it."
        ),
    )
    export.add_argument("code", metavar="CODE", help="the room's code")
    export.add_argument("race", metavar="RACE", type=int, help="the race's number in the room")
    export.add_argument("--url", default=DEFAULT_URL, help=f"server URL ({DEFAULT_URL})")
    export.add_argument(
        "--token",
        default=None,
        help="a player's token (default: the login kept for the server, else the guest "
        "solrace play kept)",
    )
    export.add_argument(
        "--name",
        default=None,
        help="without a login: the guest solrace play kept under this name (default: each "
        "guest kept for the server, your login name's first)",
    )
    export.add_argument(
        "--output", "-o", default="-", metavar="FILE", help="where to write it (- for stdout)"
    )
    export.set_defaults(func=_export)


def _http_base(url: str) -> str:
    """The server's HTTP address for a websocket (or page) URL."""
    parts = urllib.parse.urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return f"{scheme}://{parts.netloc}"


def _tokens(args: argparse.Namespace, ws: str) -> list[str]:
    """The tokens ``export`` may send, in the order tried: ``--token``; else the login kept
    for the server; else the guests ``solrace play`` kept for it (the one of ``--name``
    alone, or, without it, the one of your login name first, then the others)."""
    if args.token:
        return [args.token]
    login = stored_login(ws)
    if login is not None:
        return [login["token"]]
    if args.name:
        kept = stored_guest(ws, args.name)
        return [kept] if kept else []
    guests = stored_guests(ws)
    mine = guests.pop(getpass.getuser(), None)
    return ([mine] if mine else []) + list(guests.values())


def _fetch(url: str, token: str | None) -> dict[str, Any]:
    """The race record at ``url``, asked for with ``token`` (raises urllib's errors)."""
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        record: dict[str, Any] = json.loads(response.read())
    return record


def _export(args: argparse.Namespace) -> int:
    try:
        ws = parse_server_url(args.url).ws
    except BadServerUrl as error:
        print(f"solrace race export: {error}", file=sys.stderr)
        return 2
    query = urllib.parse.urlencode({"room": args.code.upper(), "race": args.race})
    url = f"{_http_base(ws)}/api/race?{query}"
    tokens: list[str | None] = [*_tokens(args, ws)] or [None]
    try:
        for index, token in enumerate(tokens, start=1):
            try:
                record = _fetch(url, token)
                break
            except urllib.error.HTTPError as error:
                # A kept token not of this race's players: the next one may be.
                if error.code not in (401, 403) or index == len(tokens):
                    raise
    except urllib.error.HTTPError as error:
        try:
            said = json.loads(error.read()).get("message", error.reason)
        except ValueError:
            said = error.reason
        if error.code in (401, 403):  # the server speaks of HTTP headers; say the flags
            said = said.split(" (send", 1)[0]
            said += (
                "; the token sent is not one of this race's players"
                if args.token
                else "; no login or guest kept for this server is one of this race's players"
                if tokens != [None]
                else ": log in to a player's account (solrace login), play as the guest "
                "who raced (solrace play keeps it), or pass --token TOKEN"
            )
        print(f"solrace race export: {said} [HTTP {error.code}]", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as error:
        print(f"solrace race export: {unreachable_http(args.url, error)}", file=sys.stderr)
        return 1
    except ValueError:
        print(
            f"solrace race export: the server at {args.url} did not answer with a race "
            "(is it a solrace server?)",
            file=sys.stderr,
        )
        return 1
    text = json.dumps(record, indent=1) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as error:
            print(f"solrace race export: cannot write {args.output}: {error}", file=sys.stderr)
            return 1
        print(f"race {args.code.upper()}/{args.race} written to {args.output}", file=sys.stderr)
    return 0


def _clock(ms: int) -> str:
    return f"{ms // 60_000}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def play_back(record: dict[str, Any], *, speed: float, out: Any = None) -> int:
    """Play a race record in the terminal: each move at its time (``speed`` times as fast;
    0 prints at once), then the results. 1 if a move is refused (the file is not a true
    record: ``solrace verify`` says more)."""
    out = out or sys.stdout
    variant, seed = record["variant"], int(record["seed"])
    undo = bool(record.get("undo", True))
    players: dict[str, Any] = record["players"]
    games = {p: new_game(variant, seed, undo_allowed=undo) for p in players}
    timeline = sorted(
        (at, index, player_id, move)
        for player_id, played in players.items()
        for index, (move, at) in enumerate(zip(played["moves"], played["times"], strict=True))
    )
    names = {p: played.get("name", p) for p, played in players.items()}
    width = max((len(n) for n in names.values()), default=4)
    print(
        f"race {record.get('room')}/{record.get('race')}: {variant}, seed {seed}, "
        f"{len(players)} player(s)",
        file=out,
    )
    shown = 0
    for at, index, player_id, move in timeline:
        if speed > 0 and at > shown:
            out.flush()
            time.sleep((at - shown) / 1000 / speed)
            shown = at
        game = games[player_id]
        try:
            game.apply(parse_move(move))
        except Exception as error:  # an illegal or unreadable move
            print(
                f"{_clock(at)}  {names[player_id]}: move {index + 1} ({move}) refused: {error}",
                file=out,
            )
            return 1
        status = "" if game.status.value == "playing" else f"  {game.status.value}"
        print(
            f"{_clock(at)}  {names[player_id]:<{width}}  {move:<8} {game.banked:>2}/52{status}",
            file=out,
        )
    print("results:", file=out)
    for result in record.get("results", []):
        print(
            f"  {result['rank']}. {result['name']}: {result['status']}, "
            f"{result['banked']}/52 banked, {result['moves']} moves, {_clock(result['time_ms'])}",
            file=out,
        )
    if record.get("par"):
        print(f"par {record['par']} moves: the solver's winning line", file=out)
    return 0
