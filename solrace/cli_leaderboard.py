"""``solrace leaderboard``: show a day's board, export it, or remove an entry.

``show`` asks a running server over HTTP; ``export`` and ``remove`` are operator tools
that open the store itself (the embedded data directory, or Redis).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime as dt
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import structlog

from .client.terminal import render_board
from .engine import VARIANTS
from .server import BackendUnavailable, ServerConfig, make_backend
from .server.cli import masked_url
from .server.daily import daily_seed, parse_date, rank_entries, seed_is_public, utc_date

__all__ = ["register"]

DEFAULT_URL = os.environ.get("SOLRACE_URL", "ws://127.0.0.1:8765/")
COLUMNS = (
    "rank",
    "date",
    "variant",
    "player_id",
    "name",
    "attempt",
    "ranked",
    "status",
    "banked",
    "moves",
    "time_ms",
    "seed",
    "log",
)


def register(subparsers: Any) -> None:
    """Add the ``leaderboard`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "leaderboard",
        help="show, export or edit the daily leaderboards",
        description="show (from a server), export or remove (from the store) daily entries",
    )
    parser.add_argument("action", nargs="?", choices=("show", "export", "remove"), default="show")
    parser.add_argument("--date", help="the day, YYYY-MM-DD (today, UTC)")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help="one variant (all four)")
    parser.add_argument("--url", default=DEFAULT_URL, help=f"show: the server ({DEFAULT_URL})")
    parser.add_argument("--player", help="show: rank this player; remove: whose entry")
    parser.add_argument("--limit", type=int, default=20, help="show: how many (20)")
    parser.add_argument("--format", choices=("csv", "json"), default="csv", help="export format")
    parser.add_argument("--reason", help="remove: why (kept with the removal)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("SOLRACE_DATA_DIR", "data")),
        help="export, remove: the embedded node's data directory (or SOLRACE_DATA_DIR; ./data)",
    )
    parser.add_argument(
        "--redis",
        default=os.environ.get("SOLRACE_REDIS_URL"),
        metavar="URL",
        help="export, remove: the nodes' Redis instead (or SOLRACE_REDIS_URL)",
    )
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    try:
        date = parse_date(args.date) if args.date else utc_date(int(time.time() * 1000))
    except Exception as error:
        print(f"solrace leaderboard: {error}", file=sys.stderr)
        return 2
    variants = [args.variant] if args.variant else list(VARIANTS)
    if args.action == "show":
        return _show(args, date, variants)
    if args.action == "remove" and not (args.variant and args.player and args.reason):
        print("solrace leaderboard remove: needs --variant, --player and --reason", file=sys.stderr)
        return 2
    # export and remove open the store itself: refuse one that is not a node's.
    problem = _missing_store(args)
    if problem is None:
        try:
            if args.action == "remove":
                return asyncio.run(_remove(args, date))
            return asyncio.run(_export(args, date, variants))
        except BackendUnavailable as error:
            reason = str(error.__cause__ or error).strip()
            if args.redis:
                reason = reason.removeprefix("redis: ")
                problem = f"cannot reach Redis at {masked_url(args.redis)}: {reason}"
            else:
                problem = f"the data directory {args.data_dir} is unavailable: {reason}"
    print(f"solrace leaderboard {args.action}: {problem}", file=sys.stderr)
    return 1


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


def _show(args: argparse.Namespace, date: str, variants: list[str]) -> int:
    base = args.url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rstrip("/")
    for variant in variants:
        query = {"variant": variant, "date": date, "limit": str(args.limit)}
        if args.player:
            query["player"] = args.player
        url = f"{base}/api/leaderboard?{urllib.parse.urlencode(query)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                board = json.loads(response.read())
        except (urllib.error.URLError, OSError) as error:
            print(f"solrace leaderboard: cannot reach {base}: {error}", file=sys.stderr)
            return 1
        print(render_board(board))
    return 0


def _config(args: argparse.Namespace) -> ServerConfig:
    return ServerConfig(data_dir=args.data_dir, redis_url=args.redis)


async def _export(args: argparse.Namespace, date: str, variants: list[str]) -> int:
    backend = make_backend(_config(args))
    await backend.start()
    try:
        secret = await backend.secret()
        public = seed_is_public(date, int(time.time() * 1000))
        rows: list[dict[str, Any]] = []
        for variant in variants:
            entries = await backend.daily_entries(date, variant)
            # Ranks come from the board as it stands: a removed entry holds no place.
            board = await backend.daily_top(date, variant, 0, len(entries) or 1)
            ranks = {(r["player_id"], r["attempt"]): r["rank"] for r in rank_entries(board)}
            seed = daily_seed(secret, date, variant) if public else None
            for e in entries:
                listed = (e.player_id, e.attempt) in ranks
                rows.append(
                    {
                        "rank": ranks.get((e.player_id, e.attempt)),
                        "date": e.date,
                        "variant": e.variant,
                        "player_id": e.player_id,
                        "name": e.name,
                        "attempt": e.attempt,
                        "ranked": e.ranked and listed,
                        "status": e.status,
                        "banked": e.banked,
                        "moves": e.moves,
                        "time_ms": e.time_ms,
                        "seed": seed,
                        "log": " ".join(e.log),
                    }
                )
    finally:
        await backend.close()
    if args.format == "json":
        json.dump(rows, sys.stdout, indent=1)
        print()
    else:
        writer = csv.DictWriter(sys.stdout, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return 0


async def _remove(args: argparse.Namespace, date: str) -> int:
    backend = make_backend(_config(args))
    await backend.start()
    try:
        removed = await backend.remove_daily_entry(date, args.variant, args.player, args.reason)
    finally:
        await backend.close()
    log = structlog.get_logger("solrace.leaderboard")
    if not removed:
        print(f"no ranked entry of {args.player} on {date} ({args.variant})", file=sys.stderr)
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
