"""The operator's ``solrace leaderboard export`` and ``remove``, run as docs/operations.md
says, against the store they are pointed at.

They open the store itself. Pointed at a folder that is not a node's data directory they
refuse, rather than create one with a new token secret and report an empty board; with
Redis away they say which Redis. Each test runs the real command in a process of its own.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TIMEOUT
from redis_server import free_port

from solrace.server import EmbeddedBackend
from solrace.server.daily import Entry, daily_commitment

ROOT = Path(__file__).resolve().parent.parent.parent
DATE = "2026-11-20"
REMOVE = ("remove", "--date", DATE, "--variant", "canfield", "--player", "p1", "--reason", "r")
KEEP = ("keep", DATE, "canfield", "p1", "--reason", "r")
STORE_ACTIONS = [("export",), ("flagged",), KEEP, REMOVE]
STORE_IDS = ["export", "flagged", "keep", "remove"]


def leaderboard(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``solrace leaderboard ARGV`` in ``cwd``, with only ``env`` of SOLRACE_ settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SOLRACE_")}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), clean.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "solrace", "leaderboard", *argv],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=4 * TIMEOUT,
        check=False,
    )


def refusal(result: subprocess.CompletedProcess[str], action: str) -> str:
    """The one line of a refusal: non-zero exit, nothing on stdout, no traceback."""
    assert result.returncode != 0, result.stdout
    assert result.stdout == ""
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"solrace leaderboard {action}: "), lines[0]
    return lines[0]


def assert_says_where_and_how(line: str, folder: Path) -> None:
    """The refusal names the folder it looked in and the ways to point elsewhere."""
    assert f" {folder} " in line, line
    for way in ("--data-dir", "SOLRACE_DATA_DIR", "--redis"):
        assert way in line, line


@pytest.mark.parametrize("action", STORE_ACTIONS, ids=STORE_IDS)
def test_without_a_data_directory_they_refuse_and_create_nothing(
    tmp_path: Path, action: tuple[str, ...]
) -> None:
    line = refusal(leaderboard(tmp_path, *action), action[0])
    assert_says_where_and_how(line, tmp_path / "data")
    assert list(tmp_path.iterdir()) == [], "no ./data, no new secret"


def test_the_directory_named_by_the_environment_is_the_one_named_in_the_refusal(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "srv" / "solrace"
    line = refusal(leaderboard(tmp_path, "export", SOLRACE_DATA_DIR=str(elsewhere)), "export")
    assert_says_where_and_how(line, elsewhere)
    assert not elsewhere.exists()


def test_a_folder_without_the_token_secret_is_refused(tmp_path: Path) -> None:
    # An export would write a new secret there, and print seeds that are not the node's.
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "solrace.sqlite3").touch()
    line = refusal(leaderboard(tmp_path, "export", "--data-dir", str(folder)), "export")
    assert_says_where_and_how(line, folder)
    assert "secret.key" in line
    assert not (folder / "secret.key").exists()


async def test_a_node_data_directory_is_exported_and_edited(tmp_path: Path) -> None:
    folder = tmp_path / "node-data"
    backend = EmbeddedBackend(folder)
    await backend.start()
    try:
        for player, banked in (("p1", 30), ("p2", 20)):
            entry = Entry(DATE, "canfield", player, player, 1, "stuck", banked, 9, 1_000)
            await backend.save_daily_entry(entry)
    finally:
        await backend.close()
    secret = (folder / "secret.key").read_bytes()
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()

    exported = leaderboard(cwd, "export", "--date", DATE, "--data-dir", str(folder))
    assert exported.returncode == 0, exported.stderr
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert sorted((r["player_id"], r["rank"]) for r in rows) == [("p1", "1"), ("p2", "2")]

    removed = leaderboard(cwd, *REMOVE, SOLRACE_DATA_DIR=str(folder))
    assert removed.returncode == 0, removed.stderr
    again = leaderboard(cwd, "export", "--date", DATE, SOLRACE_DATA_DIR=str(folder))
    rows = list(csv.DictReader(io.StringIO(again.stdout)))
    assert sorted((r["player_id"], r["rank"]) for r in rows) == [("p1", ""), ("p2", "1")]
    assert (folder / "secret.key").read_bytes() == secret
    assert list(cwd.iterdir()) == []


@pytest.mark.parametrize("action", STORE_ACTIONS, ids=STORE_IDS)
def test_with_redis_away_they_say_which_redis(tmp_path: Path, action: tuple[str, ...]) -> None:
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"  # nothing listens there
    line = refusal(leaderboard(tmp_path, *action, "--redis", url), action[0])
    assert f"cannot reach Redis at {url.replace('hunter2', '***')}: " in line
    assert list(tmp_path.iterdir()) == []


async def test_flagged_entries_are_listed_kept_or_removed(tmp_path: Path) -> None:
    folder = tmp_path / "node-data"
    backend = EmbeddedBackend(folder)
    await backend.start()
    try:
        ann = Entry(DATE, "canfield", "ann", "ann", 1, "stuck", 20, 9, 1_000)
        await backend.save_daily_entry(ann)
        for player, banked in (("p1", 30), ("p2", 25)):
            fast = Entry(DATE, "canfield", player, player, 1, "stuck", banked, 40, 2_000)
            await backend.save_daily_entry(Entry.from_dict({**fast.to_dict(), "flag": "pace"}))
    finally:
        await backend.close()
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    store = ("--data-dir", str(folder))

    listed = leaderboard(cwd, "flagged", *store)
    assert listed.returncode == 0, listed.stderr
    rows = list(csv.DictReader(io.StringIO(listed.stdout)))
    assert [(r["player_id"], r["flag"], r["rank"]) for r in rows] == [
        ("p1", "pace", ""),
        ("p2", "pace", ""),
    ]

    kept = leaderboard(cwd, "keep", DATE, "canfield", "p1", "--reason", "a steady hand", *store)
    assert kept.returncode == 0, kept.stderr
    assert "kept p1" in kept.stdout and "a steady hand" in kept.stdout
    again = leaderboard(cwd, "keep", DATE, "canfield", "p1", "--reason", "twice", *store)
    assert again.returncode == 1 and "no flagged entry of p1" in again.stderr
    removed = leaderboard(cwd, "remove", DATE, "canfield", "p2", "--reason", "a bot", *store)
    assert removed.returncode == 0, removed.stderr
    assert list(csv.DictReader(io.StringIO(leaderboard(cwd, "flagged", *store).stdout))) == []

    exported = leaderboard(cwd, "export", "--date", DATE, "--format", "json", *store)
    rows = {r["player_id"]: r for r in json.loads(exported.stdout)}
    assert (rows["p1"]["rank"], rows["p1"]["kept"]) == (1, "a steady hand")
    assert (rows["ann"]["rank"], rows["p2"]["rank"], rows["p2"]["ranked"]) == (2, None, False)

    half = leaderboard(cwd, "keep", DATE, "canfield", "--reason", "r", *store)
    assert half.returncode == 2 and "DATE VARIANT PLAYER" in half.stderr
    odd = leaderboard(cwd, "export", DATE, "canfield", "p1", *store)
    assert odd.returncode == 2 and "keep and remove only" in odd.stderr


async def test_an_export_before_the_reveal_carries_the_commitment_alone(tmp_path: Path) -> None:
    folder = tmp_path / "node-data"
    today = dt.datetime.now(dt.UTC).date().isoformat()
    backend = EmbeddedBackend(folder)
    await backend.start()
    try:
        await backend.save_daily_entry(Entry(today, "canfield", "p", "p", 1, "stuck", 9, 9, 900))
    finally:
        await backend.close()
    exported = leaderboard(tmp_path, "export", "--format", "json", "--data-dir", str(folder))
    (row,) = [r for r in json.loads(exported.stdout) if r["variant"] == "canfield"]
    assert row["seed"] is None and row["nonce"] is None
    assert row["commitment"] == daily_commitment(
        (folder / "secret.key").read_bytes(), today, "canfield"
    )


async def test_a_name_that_reads_as_another_players_id_is_refused_not_guessed(
    tmp_path: Path,
) -> None:
    """A player named as another player's id: ``remove`` given that text once removed the
    other player (an id was looked for first). Now it names both and is refused; ``id:``
    says which is meant, and a name is found in any case."""
    folder = tmp_path / "node-data"
    backend = EmbeddedBackend(folder)
    await backend.start()
    try:
        victim = Entry(DATE, "canfield", "v1d2e3f4a5b6c7d8", "Vic", 1, "stuck", 30, 9, 1_000)
        cheat = Entry(DATE, "canfield", "a1b2c3d4e5f6a7b8", victim.player_id, 1, "won", 52, 9, 9)
        for entry in (victim, cheat):
            await backend.save_daily_entry(entry)
    finally:
        await backend.close()
    store = ("--data-dir", str(folder))

    def ranks() -> dict[str, str]:
        out = leaderboard(tmp_path, "export", "--date", DATE, *store).stdout
        return {r["player_id"]: r["rank"] for r in csv.DictReader(io.StringIO(out))}

    line = refusal(
        leaderboard(
            tmp_path, "remove", DATE, "canfield", victim.player_id, "--reason", "x", *store
        ),
        "remove",
    )
    assert "names 2 players" in line and cheat.player_id in line and "id:" in line
    assert ranks() == {cheat.player_id: "1", victim.player_id: "2"}  # nothing removed

    by_id = leaderboard(
        tmp_path, "remove", DATE, "canfield", f"id:{cheat.player_id}", "--reason", "x", *store
    )
    assert by_id.returncode == 0, by_id.stderr
    assert ranks() == {cheat.player_id: "", victim.player_id: "1"}
    by_name = leaderboard(tmp_path, "remove", DATE, "canfield", "vIC", "--reason", "y", *store)
    assert by_name.returncode == 0, by_name.stderr
    assert ranks() == {cheat.player_id: "", victim.player_id: ""}
