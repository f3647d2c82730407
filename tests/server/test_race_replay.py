"""Races kept for their replays, on both backends: every move with its time, served to
whom the room's spectator setting allows, exported as one file, played back and checked
offline, and forgotten after the retention."""

from __future__ import annotations

import asyncio
import io
import json
import urllib.error
import urllib.request
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, RunningServer, ServerFactory
from daily_support import Clock
from e2e_support import FAST, deal_seed, winning_deal

from solrace.cli import main
from solrace.client import Client
from solrace.server.races import check_race


async def _get(server: RunningServer, path: str, token: str | None = None) -> tuple[int, Any]:
    url = server.url.replace("ws://", "http://").rstrip("/") + path
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")

    def fetch() -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    return await asyncio.to_thread(fetch)


async def _run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()

    def call() -> int:
        with redirect_stdout(out), redirect_stderr(err):
            return main(list(argv))

    code = await asyncio.to_thread(call)
    return code, out.getvalue() + err.getvalue()


async def _race(
    server: RunningServer, spectators: str, line: list[str]
) -> tuple[str, Client, Client]:
    """A race of two: Ann plays ``line`` (a win), Bob draws twice and resigns."""
    ann = Client(server.url, name="Ann", request_timeout=TIMEOUT)
    bob = Client(server.url, name="Bob", request_timeout=TIMEOUT)
    await ann.connect()
    await bob.connect()
    room = await ann.create_room("canfield", countdown=0, spectators=spectators)
    await bob.join(room["code"])
    await ann.start()
    await ann.next_event("race_started", timeout=TIMEOUT)
    await bob.next_event("race_started", timeout=TIMEOUT)
    await bob.move("d")
    for move in line:
        await ann.move(move)
    await bob.move("d")
    await bob.resign()
    await ann.next_event("race_over", timeout=TIMEOUT)
    return room["code"], ann, bob


@pytest.fixture
async def known(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    return line


async def test_a_race_is_kept_with_every_timed_move_and_checks_out(
    start_server: ServerFactory, known: list[str], tmp_path: Path
) -> None:
    server = await start_server(limits=FAST)
    code, ann, bob = await _race(server, "live", known)
    status, record = await _get(server, f"/api/race?room={code}&race=1")
    assert status == 200, record
    assert record["format"] == "solrace-race/1" and record["spectators"] == "live"
    played = record["players"][ann.player_id]
    assert played["moves"] == known and len(played["times"]) == len(known)
    assert played["times"] == sorted(played["times"])
    assert record["players"][bob.player_id]["moves"] == ["d", "d"]
    assert [r["player_id"] for r in record["results"]] == [ann.player_id, bob.player_id]
    assert check_race(record) == []
    await ann.close()
    await bob.close()

    # Exported as one file, played back in the terminal and checked offline.
    path = tmp_path / "race.json"
    code_, said = await _run("race", "export", code, "1", "--url", server.url, "-o", str(path))
    assert code_ == 0, said
    assert json.loads(path.read_text()) == record
    code_, said = await _run("verify", str(path))
    assert code_ == 0 and said.startswith("ok "), said
    code_, said = await _run("replay", str(path), "--speed", "0")
    assert code_ == 0, said
    assert f"1. Ann: won, 52/52 banked, {len(known)} moves" in said

    # A tampered file fails, naming the first wrong move.
    wrong = json.loads(path.read_text())
    wrong["players"][ann.player_id]["moves"][2] = "t1-t2x9"
    path.write_text(json.dumps(wrong))
    code_, said = await _run("verify", str(path))
    assert code_ == 1 and "Ann: move 3 (t1-t2x9) is refused" in said, said
    forged = json.loads(json.dumps(record))
    forged["results"][1]["banked"] += 1
    path.write_text(json.dumps(forged))
    code_, said = await _run("verify", str(path))
    assert code_ == 1 and "Bob: recorded" in said and "banked" in said, said


async def test_a_race_of_a_room_that_showed_no_boards_is_its_players_alone(
    start_server: ServerFactory, known: list[str], tmp_path: Path
) -> None:
    server = await start_server(limits=FAST)
    code, ann, bob = await _race(server, "after", known)
    path = f"/api/race?room={code}&race=1"
    status, said = await _get(server, path)
    assert (status, said["code"]) == (403, "forbidden")
    async with Client(server.url, name="Stranger", request_timeout=TIMEOUT) as stranger:
        status, said = await _get(server, path, stranger.token)
        assert (status, said["code"]) == (403, "forbidden")
    status, record = await _get(server, path, bob.token)
    assert status == 200 and record["spectators"] == "after"
    code_, said = await _run(
        "race", "export", code, "1", "--url", server.url, "-o", str(tmp_path / "r.json")
    )
    assert code_ == 1 and "403" in said and "players' alone" in said, said
    assert "solrace login" in said and "--token" in said and "Authorization" not in said, said
    code_, said = await _run(
        "race", "export", code, "1", "--url", server.url, "--token", str(stranger.token)
    )
    assert code_ == 1 and "not one of this race's players" in said, said
    code_, said = await _run(
        "race",
        "export",
        code,
        "1",
        "--url",
        server.url,
        "--token",
        str(ann.token),
        "-o",
        str(tmp_path / "r.json"),
    )
    assert code_ == 0, said
    await ann.close()
    await bob.close()
    assert (await _get(server, f"/api/race?room={code}&race=2"))[0] == 404
    assert (await _get(server, "/api/race?room=&race=x"))[0] == 400


async def test_a_race_is_forgotten_after_the_retention(
    start_server: ServerFactory, known: list[str]
) -> None:
    clock = Clock(1_800_000_000.0)
    server = await start_server(limits=FAST, clock=clock, race_retention_days=1)
    code, ann, bob = await _race(server, "live", known)
    await ann.close()
    await bob.close()
    assert (await _get(server, f"/api/race?room={code}&race=1"))[0] == 200
    clock.now += 86_400 + 1
    assert (await _get(server, f"/api/race?room={code}&race=1"))[0] == 404
    backend = server.node.backend
    assert await backend.load_race(code, 1, int(clock.now * 1000)) is None
    if backend.in_process:  # the node's pruning takes it out of the file (Redis: its TTL)
        await server.node.expire_guests()
        assert await backend.load_race(code, 1, 0) is None


async def test_a_ranked_daily_attempt_is_replayed_once_its_seed_is_out(
    start_server: ServerFactory,
) -> None:
    from daily_support import DAY, played_day

    server, clock, variant, line, gil = await played_day(start_server, "gil")
    path = f"/api/race?daily={DAY}&variant={variant}&player={gil}"
    status, said = await _get(server, path)
    assert (status, said["code"]) == (403, "forbidden")  # the seed is still secret
    clock.now += 86_400
    status, record = await _get(server, path)
    assert status == 200 and record["players"][gil]["moves"] == line
    assert record["undo"] is False and check_race(record) == []
    assert (await _get(server, f"/api/race?daily={DAY}&variant={variant}&player=nobody"))[0] == 404
    assert (await _get(server, f"/api/race?daily=someday&variant={variant}&player=x"))[0] == 400
