"""``solrace login`` and ``solrace logout``: an account's token, kept for a server.

``login`` asks for the password (``getpass``, or a line of standard input with
``--password-stdin``), logs in, and keeps the token the server gives in the logins file
(:mod:`solrace.client.logins`); ``--new`` first claims the name as a new account.
``solrace play``, ``daily`` and ``watch`` then play as the account on that server.
``logout`` forgets the token; ``--everywhere`` first makes every token of the account stop
working (every device is logged out). ``account password`` changes the password (every
other device is logged out; the token kept here is replaced by the fresh one), and
``account delete`` deletes the account (its board entries are anonymised) and forgets
its token.

Wherever a server URL goes, the page's address is taken too (``http://HOST:PORT/``, as
``solrace play`` takes it): the login is kept under the server's websocket URL, where
``play``, ``daily`` and ``watch`` look it up.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from typing import Any

from websockets.exceptions import WebSocketException

from .client import Client, ClientClosed, ServerError
from .client.logins import forget_login, store_login, stored_login
from .client.urls import BadServerUrl, parse_server_url, unreachable
from .protocol import ProtocolError
from .server.accounts import check_password

__all__ = ["register"]

DEFAULT_URL = os.environ.get("SOLRACE_URL", "ws://127.0.0.1:8765/")
URL_HELP = (
    f"server URL: ws://HOST:PORT/, or the page's address http(s)://HOST:PORT/ ({DEFAULT_URL})"
)
#: What a command with a server fails with: refused by the server, or not reaching it.
FAILURES = (ServerError, ClientClosed, OSError, WebSocketException)


def register(subparsers: Any) -> None:
    """Add the ``login`` and ``logout`` commands."""
    login: argparse.ArgumentParser = subparsers.add_parser(
        "login", help="log in to an account on a server and keep its token"
    )
    login.add_argument("--url", default=DEFAULT_URL, help=URL_HELP)
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
    logout.add_argument("--url", default=DEFAULT_URL, help=URL_HELP)
    logout.add_argument(
        "--everywhere",
        action="store_true",
        help="first make every token of the account stop working (all devices)",
    )
    logout.set_defaults(func=_logout)
    account: argparse.ArgumentParser = subparsers.add_parser(
        "account", help="change the password of the account logged in, or delete it"
    )
    actions = account.add_subparsers(dest="action", metavar="ACTION", required=True)
    password = actions.add_parser(
        "password", help="change the password (every other device is logged out)"
    )
    delete = actions.add_parser(
        "delete", help="delete the account; its board entries are anonymised"
    )
    for action, func in ((password, _change_password), (delete, _delete)):
        action.add_argument("--url", default=DEFAULT_URL, help=URL_HELP)
        action.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password(s) from standard input, one a line",
        )
        action.set_defaults(func=func)
    delete.add_argument("--yes", action="store_true", help="do not ask to confirm (for scripts)")


def _server(args: argparse.Namespace, command: str) -> str | None:
    """The websocket URL of the command's ``--url`` (a page's address is taken too), or
    None, said on standard error, when it cannot be read."""
    try:
        return parse_server_url(args.url).ws
    except BadServerUrl as error:
        print(f"solrace {command}: {error}", file=sys.stderr)
        return None


def _failed(command: str, url: str, error: BaseException) -> int:
    print(f"solrace {command}: {unreachable(url, error) or error}", file=sys.stderr)
    return 1


def _password(args: argparse.Namespace, prompt: str) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    return getpass.getpass(prompt)


def _good_password(password: str, command: str) -> bool:
    """Whether a new password is one the server takes (its length), said on standard
    error if not: checked as soon as it is typed, before it is asked again or sent."""
    try:
        check_password(password)
    except ProtocolError as error:
        print(f"solrace {command}: {error.message} [{error.code.value}]", file=sys.stderr)
        return False
    return True


def _login(args: argparse.Namespace) -> int:
    url = _server(args, "login")
    if url is None:
        return 2
    name = args.name or getpass.getuser()
    password = _password(args, f"password of {name} at {args.url}: ")
    if args.new and not _good_password(password, "login"):
        return 1
    if args.new and not args.password_stdin and getpass.getpass("again: ") != password:
        print("solrace login: the passwords differ", file=sys.stderr)
        return 1
    try:
        client = asyncio.run(_log_in(url, name, password, new=args.new))
    except FAILURES as error:
        return _failed("login", url, error)
    assert client.token is not None
    path = store_login(url, client.token, client.name or name)
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
    url = _server(args, "logout")
    if url is None:
        return 2
    login = stored_login(url)
    if login is None:
        print(f"no login kept for {args.url}")
        return 1
    if args.everywhere:
        try:
            asyncio.run(_revoke(url, login["token"]))
        except FAILURES as error:
            return _failed("logout", url, error)
    forget_login(url)
    everywhere = " (every device logged out)" if args.everywhere else ""
    print(f"logged out of {login['account']} at {args.url}{everywhere}")
    return 0


async def _revoke(url: str, token: str) -> None:
    async with Client(url, token=token, resume=False) as client:
        await client.revoke_tokens()


def _kept_login(args: argparse.Namespace, url: str, command: str) -> dict[str, str] | None:
    login = stored_login(url)
    if login is None:
        print(
            f"solrace account {command}: not logged in at {args.url} (solrace login first)",
            file=sys.stderr,
        )
    return login


def _change_password(args: argparse.Namespace) -> int:
    url = _server(args, "account password")
    if url is None:
        return 2
    login = _kept_login(args, url, "password")
    if login is None:
        return 1
    old = _password(args, f"current password of {login['account']}: ")
    new = _password(args, "new password: ")
    if not _good_password(new, "account password"):
        return 1
    if not args.password_stdin and getpass.getpass("again: ") != new:
        print("solrace account password: the passwords differ", file=sys.stderr)
        return 1
    try:
        reply = asyncio.run(_with_account(url, login["token"], "change", old, new))
    except FAILURES as error:
        return _failed("account password", url, error)
    store_login(url, reply["token"], login["account"])
    print(f"changed the password of {login['account']} (every other device is logged out)")
    return 0


def _delete(args: argparse.Namespace) -> int:
    url = _server(args, "account delete")
    if url is None:
        return 2
    login = _kept_login(args, url, "delete")
    if login is None:
        return 1
    name = login["account"]
    if not args.yes and args.password_stdin:
        # Standard input holds the password: it cannot also hold the answer.
        print(
            "solrace account delete: with --password-stdin, confirm with --yes "
            "(standard input holds the password, not the answer); kept the account",
            file=sys.stderr,
        )
        return 2
    if not args.yes:
        answer = input(f"delete the account {name}? its board entries are anonymised [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("kept the account")
            return 1
    password = _password(args, f"password of {name}: ")
    try:
        asyncio.run(_with_account(url, login["token"], "delete", password))
    except FAILURES as error:
        return _failed("account delete", url, error)
    forget_login(url)
    print(f"deleted the account {name} at {args.url}")
    return 0


async def _with_account(url: str, token: str, what: str, *passwords: str) -> dict[str, Any]:
    """Change the password (``change``: old, new) or delete the account (``delete``)."""
    async with Client(url, token=token, resume=False) as client:
        if what == "change":
            return await client.change_password(*passwords)
        await client.delete_account(*passwords)
        return {}
