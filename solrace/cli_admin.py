"""``solrace admin``: an operator's tools, through a node's admin API.

The admin API is served on a node's metrics port (``serve --metrics-port``) to the bearer
``--admin-token`` of that node; everything it does holds for every node of the
deployment at once (docs/operations.md, "Admin").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["register"]

DEFAULT_URL = "http://127.0.0.1:9100"


def register(subparsers: Any) -> None:
    """Add the ``admin`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "admin",
        help="list rooms, close a room, revoke an identity (operators)",
        description="An operator's tools, through a node's admin API (its metrics port).",
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("SOLRACE_ADMIN_URL", DEFAULT_URL),
        help=f"a node's metrics port (or SOLRACE_ADMIN_URL; {DEFAULT_URL})",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("SOLRACE_ADMIN_TOKEN"),
        help="the node's admin token (or SOLRACE_ADMIN_TOKEN)",
    )
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("rooms", help="list the rooms")
    close = actions.add_parser("close", help="close a room: its members are let go, told why")
    close.add_argument("code", help="the room's code")
    close.add_argument("--reason", default="closed by an operator", help="what its members read")
    revoke = actions.add_parser(
        "revoke", help="revoke an identity: its tokens stop working on every node at once"
    )
    revoke.add_argument("player_id", help="the identity's player id")
    parser.set_defaults(func=_admin)


def _call(args: argparse.Namespace, method: str, path: str) -> dict[str, Any]:
    request = urllib.request.Request(
        args.url.rstrip("/") + path,
        method=method,
        headers={"Authorization": f"Bearer {args.token}"},
        data=b"" if method == "POST" else None,
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


def _admin(args: argparse.Namespace) -> int:
    if not args.token:
        print(
            "solrace admin: no admin token: pass --token or set SOLRACE_ADMIN_TOKEN",
            file=sys.stderr,
        )
        return 2
    try:
        if args.action == "rooms":
            data = _call(args, "GET", "/admin/rooms")
        elif args.action == "close":
            code = urllib.parse.quote(args.code.strip().upper(), safe="")
            reason = urllib.parse.quote(args.reason)
            data = _call(args, "POST", f"/admin/rooms/{code}/close?reason={reason}")
        else:
            player = urllib.parse.quote(args.player_id, safe="")
            data = _call(args, "POST", f"/admin/players/{player}/revoke")
    except urllib.error.HTTPError as error:
        try:
            message = json.loads(error.read()).get("message", error.reason)
        except ValueError:
            message = error.reason
        print(f"solrace admin: {error.code}: {message}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as error:
        why = error.reason if isinstance(error, urllib.error.URLError) else error
        print(f"solrace admin: cannot reach {args.url}: {why}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(data, indent=2))
    elif args.action == "rooms":
        _print_rooms(data["rooms"])
    elif args.action == "close":
        print(f"closed {data['closed']}: {data['reason']}")
    else:
        print(f"revoked {data['revoked']}: its tokens no longer work")
    return 0


def _print_rooms(rooms: list[dict[str, Any]]) -> None:
    if not rooms:
        print("no rooms")
        return
    print(f"{'code':8}  {'game':18}  {'state':9}  {'race':>4}  {'spect.':>6}  players")
    for room in rooms:
        players = ", ".join(
            p["name"] + ("" if p["connected"] else " (away)") for p in room["players"]
        )
        kind = f"{room['variant']}{' daily' if room['daily'] else ''}"
        print(
            f"{room['code']:8}  {kind:18}  {room['state']:9}  {room['race']:>4}  "
            f"{room['spectators']:>6}  {players}"
        )
