"""``solrace leaderboard``: show a day's board, export it, review flagged entries, or
remove one.

``show`` asks a running server over HTTP; ``export``, ``flagged``, ``keep`` and ``remove``
are operator tools that open the store itself (the embedded data directory, or Redis).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime as dt
import json
import os
import sqlite3
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import structlog

from .client.terminal import render_board
from .client.urls import unreachable_http
from .engine import VARIANTS
from .server import BackendUnavailable, ServerConfig, make_backend
from .server.backends.embedded import unwritable
from .server.cli import store_problem
from .server.daily import (
    BOARDS,
    Entry,
    day_deal,
    parse_date,
    rank_entries,
    utc_date,
)
from .server.leaderboard import MAX_LIMIT, seed_revealed

__all__ = ["register"]

DEFAULT_URL = os.environ.get("SOLRACE_URL", "ws://127.0.0.1:8765/")
COLUMNS = (
    "rank",
    "date",
    "variant",
    "board",
    "player_id",
    "name",
    "attempt",
    "ranked",
    "unranked",
    "flag",
    "kept",
    "status",
    "banked",
    "moves",
    "time_ms",
    "reached_ms",
    "seed",
    "nonce",
    "commitment",
    "log",
    "times",
)
ACTIONS = ("show", "export", "flagged", "keep", "remove")
STORE_ACTIONS = ("export", "flagged", "keep", "remove")


def register(subparsers: Any) -> None:
    """Add the ``leaderboard`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "leaderboard",
        help="show, export or edit the daily leaderboards",
        description="show (from a server), export or remove (from the store) daily entries",
    )
    parser.add_argument("action", nargs="?", choices=ACTIONS, default="show")
    parser.add_argument(
        "entry",
        nargs="*",
        metavar="DATE VARIANT PLAYER",
        help="keep, remove: the entry (or --date, --variant and --player); PLAYER is the "
        "player id, or the name the entry was played under",
    )
    parser.add_argument("--date", help="the day, YYYY-MM-DD (today, UTC)")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help="one variant (all four)")
    parser.add_argument("--board", choices=BOARDS, default="people", help="show: which board")
    parser.add_argument("--url", default=DEFAULT_URL, help=f"show: the server ({DEFAULT_URL})")
    parser.add_argument(
        "--player",
        help="show: rank this player (the player id, or the name the board shows); keep, "
        "remove: whose entry (the id or the name); id:ID names a player id alone",
    )
    parser.add_argument("--limit", type=int, default=20, help="show: how many (20)")
    parser.add_argument(
        "--format", choices=("csv", "json"), default="csv", help="export, flagged: the format"
    )
    parser.add_argument("--reason", help="keep, remove: why (kept with the entry)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("SOLRACE_DATA_DIR", "data")),
        help="export, flagged, keep, remove: the embedded node's data directory "
        "(or SOLRACE_DATA_DIR; ./data)",
    )
    parser.add_argument(
        "--redis",
        default=os.environ.get("SOLRACE_REDIS_URL"),
        metavar="URL",
        help="export, flagged, keep, remove: the nodes' Redis instead (or SOLRACE_REDIS_URL)",
    )
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    try:
        if args.entry:
            if args.action not in ("keep", "remove") or len(args.entry) != 3:
                raise ValueError("DATE VARIANT PLAYER go with keep and remove only, all three")
            args.date, args.variant, args.player = args.entry
            if args.variant not in VARIANTS:
                raise ValueError(f"unknown variant {args.variant!r}: one of {', '.join(VARIANTS)}")
        date = parse_date(args.date) if args.date else utc_date(int(time.time() * 1000))
    except Exception as error:
        print(f"solrace leaderboard: {error}", file=sys.stderr)
        return 2
    variants = [args.variant] if args.variant else list(VARIANTS)
    if args.action == "show":
        return _show(args, date, variants)
    if args.action in ("keep", "remove") and not (args.variant and args.player and args.reason):
        print(
            f"solrace leaderboard {args.action}: needs DATE VARIANT PLAYER (or --date, "
            "--variant and --player) and --reason",
            file=sys.stderr,
        )
        return 2
    # The store actions open the store itself: refuse one that is not a node's.
    problem = _missing_store(args)
    if problem is None:
        try:
            if args.action == "remove":
                return asyncio.run(_remove(args, date))
            if args.action == "keep":
                return asyncio.run(_keep(args, date))
            if args.action == "flagged":
                return asyncio.run(_flagged(args))
            return asyncio.run(_export(args, date, variants))
        except BackendUnavailable as error:
            problem = store_problem(error, args.redis, args.data_dir)
        except (sqlite3.Error, OSError) as error:  # a write refused: a read-only disk, say
            problem = _write_refused(args.data_dir, error)
    print(f"solrace leaderboard {args.action}: {problem}", file=sys.stderr)
    return 1


def _write_refused(folder: Path, error: Exception) -> str:
    """One line for a store in ``folder`` that refused a write, naming why."""
    reason = (error.strerror if isinstance(error, OSError) else None) or str(error)
    return f"the store in {folder} refused a write: {reason.lower()}{unwritable(folder)}"


# What a node on the embedded backend keeps in its data directory (EmbeddedBackend).
DATA_FILES = ("solrace.sqlite3", "secret.key")


def _missing_store(args: argparse.Namespace) -> str | None:
    """Why the embedded data directory is not a node's, or None if it is (or on Redis).

    Opening a folder without the node's files would create them: an empty board with a
    new token secret, whose seeds are not the node's.
    """
    if args.redis:
        return None
    folder = args.data_dir.absolute()
    if not folder.is_dir():
        found = "there is no such directory"
    else:
        missing = [name for name in DATA_FILES if not (folder / name).is_file()]
        if not missing:
            return None
        found = f"it has no {' or '.join(missing)}"
    return (
        f"no solrace data in {folder} ({found}): name the node's data directory with "
        "--data-dir or SOLRACE_DATA_DIR, or its Redis with --redis or SOLRACE_REDIS_URL"
    )


PENDING_TRIES = 6
"""Tries of a board whose day's deal the node is still choosing (answered 503
``deal_pending`` with the seconds to wait), before saying so."""


class _ShowFailed(Exception):
    """``leaderboard show`` cannot show the board: a sentence to print."""


def _get_board(base: str, url: str, query: dict[str, str]) -> dict[str, Any]:
    """A board from the server's ``/api/leaderboard`` (raises _ShowFailed)."""
    address = f"{base}/api/leaderboard?{urllib.parse.urlencode(query)}"
    for attempt in range(PENDING_TRIES):
        try:
            with urllib.request.urlopen(address, timeout=10) as response:
                board: dict[str, Any] = json.loads(response.read())
            return board
        except urllib.error.HTTPError as error:
            try:
                said = json.loads(error.read())
                code, message = said.get("code", error.code), said.get("message", error.reason)
            except (ValueError, AttributeError):
                raise _ShowFailed(
                    f"the server answered HTTP {error.code}: {error.reason}"
                ) from None
            if code == "deal_pending" and attempt + 1 < PENDING_TRIES:
                # A node's first request of the day waits for the day's deal to be chosen.
                time.sleep(min(float(said.get("retry_after", 2)), 5.0))
                continue
            raise _ShowFailed(f"{message} [{code}]") from None
        except (urllib.error.URLError, OSError) as error:
            raise _ShowFailed(unreachable_http(url, error)) from None
        except ValueError:
            raise _ShowFailed(
                f"the server at {url} did not answer with a board (is it a solrace server?)"
            ) from None
    raise AssertionError("unreachable: the last try returns or raises")


ID_PREFIX = "id:"
"""Before a player id, ``--player`` names that id and never a name."""


def _named_ids(player: str, entries: Iterable[tuple[str, Any]]) -> set[str]:
    """The player ids of ``entries`` (player id, name) whose name is ``player``, in any
    case."""
    wanted = player.casefold()
    return {player_id for player_id, name in entries if str(name).casefold() == wanted}


def _named(base: str, url: str, query: dict[str, str], player: str) -> str | None:
    """The player id of the board's entry named ``player`` (a name as the board shows it,
    in any case) among its top ``MAX_LIMIT``; None if no entry has that name (raises
    _ShowFailed if more than one player has it)."""
    board = _get_board(base, url, {**query, "limit": str(MAX_LIMIT)})
    ids = sorted(_named_ids(player, ((e["player_id"], e["name"]) for e in board["top"])))
    if len(ids) > 1:
        raise _ShowFailed(
            f"{len(ids)} players named {player!r} on the board: give the player id, "
            f"one of {', '.join(ids)}"
        )
    return ids[0] if ids else None


def _show(args: argparse.Namespace, date: str, variants: list[str]) -> int:
    """Each variant's board; with ``--player`` (a player id, or else the name of an entry
    as the board shows it, in any case; ``id:`` and an id for the id alone) that player's
    rank and the ranks around it."""
    base = args.url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rstrip("/")
    for variant in variants:
        query = {"variant": variant, "date": date, "limit": str(args.limit), "board": args.board}
        try:
            board = _get_board(base, args.url, {**query, **_player(args)})
            if args.player and board.get("you") is None and not args.player.startswith(ID_PREFIX):
                # Not a player id that ranks here: the name of an entry, perhaps.
                player_id = _named(base, args.url, query, args.player)
                if player_id is not None:
                    board = _get_board(base, args.url, {**query, "player": player_id})
        except _ShowFailed as error:
            print(f"solrace leaderboard: {error}", file=sys.stderr)
            return 1
        print(render_board(board))
        if args.player and board.get("you") is None:
            print(f"{args.player}: no ranked entry on this board (a player id, or a name)")
    return 0


def _player(args: argparse.Namespace) -> dict[str, str]:
    """The query's ``player``: ``--player`` as a player id (``id:`` and an id is that id
    and never a name)."""
    return {"player": args.player.removeprefix(ID_PREFIX)} if args.player else {}


def _config(args: argparse.Namespace) -> ServerConfig:
    return ServerConfig(data_dir=args.data_dir, redis_url=args.redis)


def _row(
    entry: Entry, rank: int | None, listed: bool, reveal: tuple[int, str] | None, commitment: str
) -> dict[str, Any]:
    """An entry as the export prints it: with what ``solrace verify`` needs to check it."""
    return {
        "rank": rank,
        "date": entry.date,
        "variant": entry.variant,
        "board": entry.board,
        "player_id": entry.player_id,
        "name": entry.name,
        "attempt": entry.attempt,
        "ranked": entry.ranked and listed,
        "unranked": entry.unranked,
        "flag": entry.flag,
        "kept": entry.kept,
        "status": entry.status,
        "banked": entry.banked,
        "moves": entry.moves,
        "time_ms": entry.time_ms,
        "reached_ms": entry.reached,
        "seed": reveal[0] if reveal else None,
        "nonce": reveal[1] if reveal else None,
        "commitment": commitment,
        "log": " ".join(entry.log),
        "times": " ".join(map(str, entry.times)),
    }


async def _rows(
    backend: Any, secret: bytes, date: str, variant: str, entries: list[Entry], now_ms: int
) -> list[dict[str, Any]]:
    """A day's entries of a variant as rows, ranked as its boards stand now."""
    # Ranks come from the boards as they stand: a removed or flagged entry holds no place.
    ranks: dict[tuple[str, str, int], int] = {}
    for board in BOARDS:
        count = await backend.daily_count(date, variant, board)
        top = await backend.daily_top(date, variant, 0, count or 1, board)
        for r in rank_entries(top):
            ranks[(board, r["player_id"], r["attempt"])] = r["rank"]
    revealed = await seed_revealed(
        backend,
        date,
        variant,
        now_ms=now_ms,
        time_limit_s=ServerConfig().daily_time_limit_s,
        tidy=False,
    )
    kept = await backend.daily_deal(date, variant)  # the deal chosen for the day, if any
    deal = day_deal(secret, date, variant, *kept) if kept else day_deal(secret, date, variant)
    reveal = (deal.seed, deal.nonce) if revealed else None
    commitment = deal.commitment
    rows = []
    for e in entries:
        rank = ranks.get((e.board, e.player_id, e.attempt))
        rows.append(_row(e, rank, rank is not None, reveal, commitment))
    return rows


def _print_rows(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    if args.format == "json":
        json.dump(rows, sys.stdout, indent=1)
        print()
    else:
        writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


async def _export(args: argparse.Namespace, date: str, variants: list[str]) -> int:
    backend = make_backend(_config(args))
    await backend.start()
    try:
        secret = await backend.secret()
        now = int(time.time() * 1000)
        rows: list[dict[str, Any]] = []
        for variant in variants:
            entries = await backend.daily_entries(date, variant)
            rows.extend(await _rows(backend, secret, date, variant, entries, now))
    finally:
        await backend.close()
    _print_rows(args, rows)
    return 0


async def _flagged(args: argparse.Namespace) -> int:
    """Every flagged entry waiting for review, of any day, as export rows."""
    backend = make_backend(_config(args))
    await backend.start()
    try:
        secret = await backend.secret()
        now = int(time.time() * 1000)
        flagged = await backend.daily_flagged()
        if args.variant:
            flagged = [e for e in flagged if e.variant == args.variant]
        rows: list[dict[str, Any]] = []
        days = sorted({(e.date, e.variant) for e in flagged})
        for date, variant in days:
            entries = [e for e in flagged if (e.date, e.variant) == (date, variant)]
            rows.extend(await _rows(backend, secret, date, variant, entries, now))
    finally:
        await backend.close()
    _print_rows(args, rows)
    return 0


async def _player_id(backend: Any, date: str, variant: str, player: str) -> str:
    """The player id of ``player``, a player id or the name of an entry of the day (the
    lists of ``flagged`` and ``export`` show names first; a name in any case); raise
    ValueError where it names more than one player of the day's entries: two players of
    that name, or a name that is another player's id (a player may pick a name that reads
    as someone else's id, for an operator's remove to hit that player)."""
    if player.startswith(ID_PREFIX):
        return player.removeprefix(ID_PREFIX)  # a player id, and nothing else
    entries = await backend.daily_entries(date, variant)
    by_id = {e.player_id for e in entries if e.player_id == player}
    ids = sorted(by_id | _named_ids(player, ((e.player_id, e.name) for e in entries)))
    if len(ids) > 1:
        raise ValueError(
            f"{player!r} names {len(ids)} players of the day: give id: and the player id of "
            f"the one meant, among {', '.join(ids)} (the export's player_id column)"
        )
    return ids[0] if ids else player


async def _keep(args: argparse.Namespace, date: str) -> int:
    """Put a flagged entry on its board: an operator reviewed it."""
    backend = make_backend(_config(args))
    await backend.start()
    try:
        try:
            args.player = await _player_id(backend, date, args.variant, args.player)
        except ValueError as error:
            print(f"solrace leaderboard keep: {error}", file=sys.stderr)
            return 2
        kept = await backend.keep_daily_entry(date, args.variant, args.player, args.reason)
    finally:
        await backend.close()
    if kept is None:
        print(
            f"no flagged entry of {args.player} waits for review on {date} ({args.variant})",
            file=sys.stderr,
        )
        return 1
    structlog.get_logger("solrace.leaderboard").warning(
        "daily_entry_kept",
        date=date,
        variant=args.variant,
        player=args.player,
        flag=kept.flag,
        reason=args.reason,
        at=dt.datetime.now(dt.UTC).isoformat(),
    )
    print(f"kept {args.player} on {date} ({args.variant}, {kept.board}): {args.reason}")
    return 0


async def _remove(args: argparse.Namespace, date: str) -> int:
    backend = make_backend(_config(args))
    await backend.start()
    try:
        try:
            args.player = await _player_id(backend, date, args.variant, args.player)
        except ValueError as error:
            print(f"solrace leaderboard remove: {error}", file=sys.stderr)
            return 2
        removed = await backend.remove_daily_entry(date, args.variant, args.player, args.reason)
    finally:
        await backend.close()
    log = structlog.get_logger("solrace.leaderboard")
    if not removed:
        print(
            f"no ranked or flagged entry of {args.player} on {date} ({args.variant})",
            file=sys.stderr,
        )
        return 1
    log.warning(
        "daily_entry_removed",
        date=date,
        variant=args.variant,
        player=args.player,
        reason=args.reason,
        at=dt.datetime.now(dt.UTC).isoformat(),
    )
    print(f"removed {args.player} from {date} ({args.variant}): {args.reason}")
    return 0
