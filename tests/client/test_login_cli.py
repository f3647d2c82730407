"""``solrace login`` and ``solrace logout``, run for real against a real server.

Each command runs as its own process (``python -m solrace``) with ``XDG_CONFIG_HOME`` in
the test's folder, so the logins file it keeps is the test's; the password comes on
standard input (``--password-stdin``), as a script would give it.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TIMEOUT, RunningServer

from solrace.client import Client, ServerError
from solrace.client.logins import normal_url

PASSWORD = "a long enough password"


async def solrace(home: Path, *args: str, stdin: str = "") -> tuple[int, str]:
    """Run ``solrace ARGS`` with its config under ``home``; its exit code and output."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(home), "NO_COLOR": "1"}
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "solrace", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=4 * TIMEOUT,
    )
    return done.returncode, done.stdout + done.stderr


def kept(home: Path) -> dict[str, dict[str, str]]:
    """The logins file's contents."""
    data: dict[str, dict[str, str]] = json.loads((home / "solrace" / "logins.json").read_text())
    return data


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "config"


async def test_login_keeps_a_token_that_play_daily_and_logout_use(
    server: RunningServer, home: Path
) -> None:
    url = server.url
    code, said = await solrace(
        home, "login", "--url", url, "--name", "Erin", "--new", "--password-stdin", stdin=PASSWORD
    )
    assert code == 0, said
    assert "made the account Erin" in said
    path = home / "solrace" / "logins.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    first = kept(home)[normal_url(url)]
    assert first["account"] == "Erin"

    # Logging in again (any case of the name) gives the account's token.
    code, said = await solrace(
        home, "login", "--url", url, "--name", "erin", "--password-stdin", stdin=PASSWORD + "\n"
    )
    assert code == 0, said
    assert kept(home)[normal_url(url)]["token"] == first["token"]
    code, said = await solrace(
        home, "login", "--url", url, "--name", "Erin", "--password-stdin", stdin="wrong one!\n"
    )
    assert code == 1 and "wrong_password" in said, said

    # play goes as the account too, and says so when --name asked for another name.
    code, said = await solrace(home, "play", url, "--plain", "--name", "Dana", stdin="q\n")
    assert code == 0, said
    assert "you play as Erin, the account logged in on this server" in said, said
    assert "you are Erin" in said, said

    # The daily deal is played as the account, whatever --name says; quitting resigns it.
    code, said = await solrace(
        home, "daily", "rainbow-canfield", url, "--name", "someone else", stdin="q\n"
    )
    assert code == 0, said
    assert "1. Erin" in said and "someone else" not in said, said

    # Logging out everywhere revokes the token before forgetting it.
    code, said = await solrace(home, "logout", "--url", url, "--everywhere")
    assert code == 0 and "logged out of Erin" in said, said
    assert normal_url(url) not in kept(home)
    with pytest.raises(ServerError) as refused:
        await Client(url, token=first["token"], resume=False).connect()
    assert refused.value.code == "bad_token"
    code, said = await solrace(home, "logout", "--url", url)
    assert code == 1 and "no login kept" in said


async def test_a_login_no_longer_good_says_to_log_in_again(
    server: RunningServer, home: Path
) -> None:
    url = server.url
    code, said = await solrace(
        home, "login", "--url", url, "--name", "Fay", "--new", "--password-stdin", stdin=PASSWORD
    )
    assert code == 0, said
    token = kept(home)[normal_url(url)]["token"]
    async with Client(url, token=token, request_timeout=TIMEOUT) as fay:
        assert (await fay.revoke_tokens())["token"] != token
    code, said = await solrace(home, "watch", url, "ABCDEFGH")
    assert code == 1 and "solrace login again" in said, said
    # Another server's login is kept apart.
    code, said = await solrace(home, "logout", "--url", "ws://127.0.0.1:1/")
    assert code == 1
    assert normal_url(url) in kept(home)


async def test_account_password_and_delete_from_the_terminal(
    server: RunningServer, home: Path
) -> None:
    url = server.url
    code, said = await solrace(
        home, "login", "--url", url, "--name", "Gus", "--new", "--password-stdin", stdin=PASSWORD
    )
    assert code == 0, said
    first = kept(home)[normal_url(url)]["token"]

    # A wrong current password changes nothing.
    code, said = await solrace(
        home,
        "account",
        "password",
        "--url",
        url,
        "--password-stdin",
        stdin="not the password\nanother long password\n",
    )
    assert code == 1 and "wrong_password" in said, said
    assert kept(home)[normal_url(url)]["token"] == first

    new = "another long password"
    code, said = await solrace(
        home, "account", "password", "--url", url, "--password-stdin", stdin=f"{PASSWORD}\n{new}\n"
    )
    assert code == 0 and "changed the password of Gus" in said, said
    fresh = kept(home)[normal_url(url)]["token"]
    assert fresh != first
    with pytest.raises(ServerError) as refused:  # the other devices are logged out
        await Client(url, token=first, resume=False).connect()
    assert refused.value.code == "bad_token"
    with pytest.raises(ServerError) as refused:
        await Client(url, account="Gus", password=PASSWORD, resume=False).connect()
    assert refused.value.code == "wrong_password"
    async with Client(url, account="Gus", password=new, resume=False) as gus:
        assert gus.account is not None and gus.account["name"] == "Gus"

    # Deleting asks to confirm; a "no" keeps the account.
    code, said = await solrace(home, "account", "delete", "--url", url, stdin="n\n")
    assert code == 1 and "kept the account" in said, said
    # The password on standard input is not taken for the answer: --yes is asked for.
    code, said = await solrace(
        home, "account", "delete", "--url", url, "--password-stdin", stdin=f"{new}\n"
    )
    assert code == 2 and "confirm with --yes" in said and "kept the account" in said, said
    code, said = await solrace(
        home, "account", "delete", "--url", url, "--yes", "--password-stdin", stdin=f"{new}\n"
    )
    assert code == 0 and "deleted the account Gus" in said, said
    assert normal_url(url) not in kept(home)
    with pytest.raises(ServerError) as refused:
        await Client(url, account="Gus", password=new, resume=False).connect()
    assert refused.value.code == "wrong_password"
    code, said = await solrace(home, "account", "delete", "--url", url, "--yes")
    assert code == 1 and "not logged in" in said, said
