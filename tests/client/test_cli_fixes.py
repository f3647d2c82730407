"""The command line as people type it: the page's address wherever a server URL goes
(``login``, ``logout``, ``account``), options between positionals, plain words for a
server out of reach, and ``verify``'s help. Each command runs as its own process
against a real server, as in test_login_cli.py."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from conftest import RunningServer
from test_login_cli import PASSWORD, kept, solrace

from solrace.client.logins import normal_url


@pytest.fixture
def backend_kind() -> str:
    """The command line does not depend on the backend: the embedded one serves it."""
    return "embedded"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "config"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_the_account_commands_take_the_page_s_address(
    server: RunningServer, home: Path
) -> None:
    page = f"http://127.0.0.1:{server.server.port}/"
    code, said = await solrace(
        home, "login", "--new", "--url", page, "--name", "Fay", "--password-stdin", stdin=PASSWORD
    )
    assert code == 0, said
    assert "made the account Fay" in said
    # Kept under the server's websocket URL, where play, daily and watch look it up.
    assert list(kept(home)) == [normal_url(server.url)]

    # The daily deal is an account's: played here as Fay, from the page's address given
    # after an option (between the command's two positionals).
    code, said = await solrace(home, "daily", "rainbow-canfield", "--plain", page, stdin="q\n")
    assert code == 0, said
    assert "account_required" not in said
    assert "daily rainbow-canfield" in said and "attempt 1" in said

    new = PASSWORD + " changed"
    code, said = await solrace(
        home,
        "account",
        "password",
        "--url",
        page.rstrip("/"),
        "--password-stdin",
        stdin=f"{PASSWORD}\n{new}\n",
    )
    assert code == 0, said
    assert "changed the password of Fay" in said
    code, said = await solrace(home, "logout", "--url", page)
    assert code == 0, said
    assert "logged out of Fay" in said
    assert kept(home) == {}


async def test_a_server_out_of_reach_is_said_in_plain_words(home: Path) -> None:
    closed = f"127.0.0.1:{free_port()}"
    code, said = await solrace(
        home,
        "login",
        "--url",
        f"http://{closed}/",
        "--name",
        "Gus",
        "--password-stdin",
        stdin=PASSWORD,
    )
    assert code == 1
    assert (
        said.strip()
        == f"solrace login: could not reach the server at ws://{closed}/: connection refused"
    )
    code, said = await solrace(home, "play", "--plain", "notaurl")
    assert code == 1
    assert said.strip() == "could not reach the server at ws://notaurl/: no such host (notaurl)"
    assert "Errno" not in said
    code, said = await solrace(home, "login", "--url", "ftp://somewhere/")
    assert code == 2 and "bad_url" in said and "Traceback" not in said


async def test_verify_s_help_says_it_checks_race_files_too(home: Path) -> None:
    code, said = await solrace(home, "verify", "--help")
    assert code == 0
    assert "race file" in said and "daily export" in said
