"""The command line as people type it: the page's address wherever a server URL goes
(``login``, ``logout``, ``account``), options between positionals, plain words for a
server out of reach, refusals with their code last, a new password's length checked as
it is typed, streaks in words, and ``verify``'s help. Each command runs as its own process
against a real server, as in test_login_cli.py."""

from __future__ import annotations

import getpass
import io
import socket
from contextlib import redirect_stderr
from pathlib import Path

import pytest
from conftest import RunningServer
from test_login_cli import PASSWORD, kept, solrace

from solrace.cli import main
from solrace.client.logins import normal_url, store_login
from solrace.client.terminal import render_board, render_streaks


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


async def test_race_export_and_leaderboard_say_a_server_out_of_reach_in_plain_words(
    home: Path,
) -> None:
    url = f"ws://127.0.0.1:{free_port()}/"
    code, said = await solrace(home, "race", "export", "ABCD2345", "1", "--url", url)
    assert code == 1
    assert said.strip() == (
        f"solrace race export: could not reach the server at {url}: connection refused"
    )
    code, said = await solrace(home, "leaderboard", "--url", url, "--variant", "canfield")
    assert code == 1
    assert said.strip() == (
        f"solrace leaderboard: could not reach the server at {url}: connection refused"
    )


async def test_the_command_line_s_own_refusals_give_their_code_last(home: Path) -> None:
    """As the server's refusals are shown: the sentence first, ``[code]`` last."""
    page = f"http://127.0.0.1:{free_port()}/"
    code, said = await solrace(home, "watch", "--plain", page)
    assert code == 2
    assert said.strip() == (
        "solrace watch: name the room to watch: solrace watch URL CODE, or the room's link "
        "[no_room]"
    )
    code, said = await solrace(home, "watch", "--plain", f"{page}r/ABCD2345", "WXYZ6789")
    assert code == 2
    assert said.strip() == (
        "solrace watch: the link names room ABCD2345 but the command names room WXYZ6789 "
        "[two_rooms]"
    )
    code, said = await solrace(home, "watch", "--plain", "ftp://example.org/", "ABCD2345")
    assert code == 2
    assert said.startswith("solrace watch: 'ftp://example.org/' is not a server URL (")
    assert said.strip().endswith("[bad_url]")


async def test_a_new_password_too_short_is_refused_as_soon_as_it_is_typed(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before it is asked again, and before any server is asked: the server here is out
    of reach, and the length is what is said."""
    url = f"ws://127.0.0.1:{free_port()}/"
    too_short = "a password has 8 to 128 characters (at most 256 bytes of UTF-8) [bad_password]"
    code, said = await solrace(
        home, "login", "--new", "--url", url, "--name", "Gus", "--password-stdin", stdin="short\n"
    )
    assert (code, said.strip()) == (1, f"solrace login: {too_short}")

    asked: list[str] = []

    def typed(prompt: str = "") -> str:
        asked.append(prompt)
        return "short"

    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.setattr(getpass, "getpass", typed)
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["login", "--new", "--url", url, "--name", "Gus"]) == 1
    assert len(asked) == 1, asked  # not asked "again:"
    assert err.getvalue().strip() == f"solrace login: {too_short}"

    # The new password of `account password`, likewise.
    store_login(url, "a token", "Gus")
    code, said = await solrace(
        home, "account", "password", "--url", url, "--password-stdin", stdin=f"{PASSWORD}\nshort\n"
    )
    assert (code, said.strip()) == (1, f"solrace account password: {too_short}")


def test_streaks_say_day_or_days_as_each_count_is() -> None:
    streaks = {"played": 1, "won": 0, "best_played": 2, "best_won": 1}
    assert render_streaks(streaks) == (
        "streaks: 1 day played in a row, 0 days won in a row (best: 2 days played, 1 day won)"
    )
    board = {
        "variant": "canfield",
        "date": "2026-12-04",
        "count": 0,
        "top": [],
        "streaks": {"played": 2, "won": 1, "best_played": 1, "best_won": 1},
    }
    assert render_board(board).splitlines()[-1] == (
        "streaks: 2 days played in a row, 1 day won in a row (best: 1 day played, 1 day won)"
    )
