"""``solrace login`` and ``solrace logout``: an account's token, kept for a server.

``login`` asks for the password (``getpass``, or a line of standard input with
``--password-stdin``), logs in, and keeps the token the server gives in the logins file
(:mod:`solrace.client.logins`); ``--new`` first claims the name as a new account.
``solrace play``, ``daily`` and ``watch`` then play as the account on that server.
``logout`` forgets the token; ``--everywhere`` first makes every token of the account stop
working (every device is logged out).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from typing import Any

from .client import Client, ClientClosed, ServerError
from .client.logins import forget_login, store_login, stored_login

__all__ = ["register"]

DEFAULT_URL = os.environ.get("SOLRACE_URL", "ws://127.0.0.1:8765/")


def register(subparsers: Any) -> None:
    """Add the ``login`` and ``logout`` commands."""
    login: argparse.ArgumentParser = subparsers.add_parser(
        "login", help="log in to an account on a server and keep its token"
    )
    login.add_argument("--url", default=DEFAULT_URL, help=f"server URL ({DEFAULT_URL})")
    login.add_argument(
        "--name", default=None, help="the account's name (your login name by default)"
    )
    login.add_argument("--new", action="store_true", help="claim the name as a new account first")
    login.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input",
    )
    login.set_defaults(func=_login)
    logout: argparse.ArgumentParser = subparsers.add_parser(
        "logout", help="forget the account's token kept for a server"
    )
    logout.add_argument("--url", default=DEFAULT_URL, help=f"server URL ({DEFAULT_URL})")
    logout.add_argument(
        "--everywhere",
        action="store_true",
        help="first make every token of the account stop working (all devices)",
    )
    logout.set_defaults(func=_logout)


def _password(args: argparse.Namespace, prompt: str) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    return getpass.getpass(prompt)


def _login(args: argparse.Namespace) -> int:
    name = args.name or getpass.getuser()
    password = _password(args, f"password of {name} at {args.url}: ")
    if args.new and not args.password_stdin and getpass.getpass("again: ") != password:
        print("solrace login: the passwords differ", file=sys.stderr)
        return 1
    try:
        client = asyncio.run(_log_in(args.url, name, password, new=args.new))
    except (ServerError, ClientClosed, OSError) as error:
        print(f"solrace login: {error}", file=sys.stderr)
        return 1
    assert client.token is not None
    path = store_login(args.url, client.token, client.name or name)
    made = "made the account" if args.new else "logged in as"
    print(f"{made} {client.name} at {args.url} (token kept in {path})")
    return 0


async def _log_in(url: str, name: str, password: str, *, new: bool) -> Client:
    """A client that logged in (or claimed ``name`` first), closed once it has its token."""
    client = Client(url, name=name) if new else Client(url, account=name, password=password)
    try:
        await client.connect()
        if new:
            await client.claim(password)
    finally:
        await client.close()
    return client


def _logout(args: argparse.Namespace) -> int:
    login = stored_login(args.url)
    if login is None:
        print(f"no login kept for {args.url}")
        return 1
    if args.everywhere:
        try:
            asyncio.run(_revoke(args.url, login["token"]))
        except (ServerError, ClientClosed, OSError) as error:
            print(f"solrace logout: {error}", file=sys.stderr)
            return 1
    forget_login(args.url)
    everywhere = " (every device logged out)" if args.everywhere else ""
    print(f"logged out of {login['account']} at {args.url}{everywhere}")
    return 0


async def _revoke(url: str, token: str) -> None:
    async with Client(url, token=token, resume=False) as client:
        await client.revoke_tokens()
