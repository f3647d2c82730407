"""``solrace verify``: a day's export checked offline once its seed is out, on both
backends: the commitment, the deal, every move, the score, the times and the ranks; and a
tampered export, or one made before the reveal, fails."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, RunningServer, ServerFactory
from daily_support import AT_ONCE, Clock, account, banking_deal

from solrace.cli import main
from solrace.client import Client

PAST = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)
DATE = PAST.date().isoformat()


def _store_args(server: RunningServer) -> list[str]:
    if server.config.redis_url:
        return ["--redis", server.config.redis_url]
    return ["--data-dir", str(server.config.data_dir)]


async def _run(*argv: str) -> tuple[int, str, str]:
    """Run the command line in a thread (the server answers on this loop)."""
    out, err = io.StringIO(), io.StringIO()

    def call() -> int:
        with redirect_stdout(out), redirect_stderr(err):
            return main(list(argv))

    code = await asyncio.to_thread(call)
    return code, out.getvalue(), err.getvalue()


async def _play(client: Client, clock: Clock, variant: str, line: list[str], gap_s: float) -> None:
    """Today's attempt: the moves of ``line`` ``gap_s`` apart, then resign."""
    await client.daily(variant)
    for move in line:
        clock.now += gap_s
        await client.move(move)
    clock.now += gap_s
    await client.resign()
    await client.next_event("race_over", timeout=TIMEOUT)
    await client.leave()


@pytest.fixture
async def exported(start_server: ServerFactory, tmp_path: Path) -> list[dict[str, Any]]:
    """A past day's export (JSON) after three attempts: two ranked, one not."""
    clock = Clock(PAST.timestamp())
    server = await start_server(clock=clock, **AT_ONCE)
    variant, line = banking_deal(server.node.secret, DATE)
    async with account(server.url, "vera") as vera, account(server.url, "walt") as walt:
        await _play(vera, clock, variant, line, 1.5)  # banks a card
        await _play(walt, clock, variant, line[:-1], 2.5)  # the dealt cards only
        await _play(vera, clock, variant, line[:3], 1.0)  # her second attempt: not ranked
    code, out, err = await _run(
        "leaderboard",
        "export",
        "--date",
        DATE,
        "--variant",
        variant,
        "--format",
        "json",
        *_store_args(server),
    )
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows


def _write(tmp_path: Path, rows: list[dict[str, Any]], name: str = "export.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(rows))
    return str(path)


async def test_an_export_after_the_reveal_checks_out(
    exported: list[dict[str, Any]], tmp_path: Path
) -> None:
    assert len(exported) == 3
    assert all(r["seed"] is not None and r["nonce"] and r["commitment"] for r in exported)
    assert all(len(r["times"].split()) == r["moves"] for r in exported)
    assert sorted(r["rank"] or 0 for r in exported) == [0, 1, 2]
    code, out, _ = await _run("verify", _write(tmp_path, exported))
    assert code == 0, out
    lines = out.strip().splitlines()
    assert sum(line.startswith("ok ") for line in lines) == 3
    assert lines[-1] == "3 entries checked: 3 ok, 0 failed"
    # The CSV export checks out the same.
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(exported[0]))
    writer.writeheader()
    writer.writerows(exported)
    path = tmp_path / "export.csv"
    path.write_text(buffer.getvalue())
    code, out, _ = await _run("verify", str(path))
    assert code == 0, out


def _tampered(rows: list[dict[str, Any]], **changes: Any) -> list[dict[str, Any]]:
    first = next(r for r in rows if r["rank"] == 1)
    return [{**r, **changes} if r is first else r for r in rows]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda r: {"banked": r["banked"] + 1}, "cards banked"),
        (lambda r: {"moves": r["moves"] - 1}, "moves"),
        (lambda r: {"status": "won"}, "recorded won"),
        (lambda r: {"log": " ".join(["t1-t2x9", *r["log"].split()[1:]])}, "is refused"),
        (lambda r: {"commitment": "0" * 64}, "commitment"),
        (lambda r: {"nonce": "f" * 64}, "commitment"),
        (lambda r: {"reached_ms": r["reached_ms"] + 1}, "first reached"),
        (lambda r: {"time_ms": int(r["times"].split()[-1]) - 1}, "after the attempt's end"),
        (lambda r: {"seed": None, "nonce": None}, "not revealed"),
    ],
    ids=["banked", "moves", "status", "move", "commitment", "nonce", "reached", "time", "early"],
)
async def test_a_tampered_entry_fails(
    exported: list[dict[str, Any]], tmp_path: Path, change: Any, says: str
) -> None:
    first = next(r for r in exported if r["rank"] == 1)
    code, out, _ = await _run("verify", _write(tmp_path, _tampered(exported, **change(first))))
    assert code == 1
    failed = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert len(failed) == 1 and says in failed[0], out


async def test_ranks_out_of_their_scores_order_fail(
    exported: list[dict[str, Any]], tmp_path: Path
) -> None:
    swapped = [{**r, "rank": {1: 2, 2: 1}.get(r["rank"], r["rank"])} for r in exported]
    code, out, _ = await _run("verify", _write(tmp_path, swapped))
    assert code == 1 and "FAIL  ranks:" in out


async def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    code, _, err = await _run("verify", str(tmp_path / "missing.json"))
    assert code == 2 and err.startswith("solrace verify: cannot read")
    (tmp_path / "empty.csv").write_text("")
    code, _, err = await _run("verify", str(tmp_path / "empty.csv"))
    assert code == 2 and "no entries" in err
    # Any other text or JSON is not read as entries of nothing: it is refused, saying why.
    (tmp_path / "notes.txt").write_text("shopping list\nbread, milk\n")
    code, out, err = await _run("verify", str(tmp_path / "notes.txt"))
    assert code == 2 and "not a race file nor a daily export" in err and not out, (out, err)
    (tmp_path / "other.json").write_text('[{"name": "x"}]')
    code, out, err = await _run("verify", str(tmp_path / "other.json"))
    assert code == 2 and "an entry has no date" in err and not out, (out, err)
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)))
    code, _, err = await _run("verify", str(tmp_path / "binary.csv"))
    assert code == 2 and err.startswith("solrace verify: cannot read"), err


async def test_an_entry_checks_against_the_commitment_published_that_morning(
    exported: list[dict[str, Any]], tmp_path: Path
) -> None:
    from solrace.server.daily import commitment

    published = exported[0]["commitment"]
    code, out, _ = await _run("verify", "--commitment", published, _write(tmp_path, exported))
    assert code == 0, out
    # A nonce and commitment made up after the fact agree with each other, not with the
    # hash published at the start of the day.
    first = next(r for r in exported if r["rank"] == 1)
    forged = _tampered(exported, nonce="ab" * 32, commitment=commitment(first["seed"], "ab" * 32))
    code, out, _ = await _run("verify", _write(tmp_path, forged))
    assert code == 0, out  # on its own, the export is consistent
    code, out, _ = await _run("verify", "--commitment", published, _write(tmp_path, forged))
    failed = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert code == 1 and len(failed) == 1 and "published" in failed[0], out
