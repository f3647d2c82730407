"""An embedded node stopped mid-race (SIGKILL or SIGTERM) and started again on its data.

Four players race in a room watched by a spectator, while a fifth plays the day's daily
attempt on the side. The node is stopped while moves are in flight and started again
on the same data directory and port a second later. The clients come back by
themselves (the client library resumes with its token), the race goes on and ends, and:

- every move the server acked is in the player's log, in order (read from the SQLite
  file), and nothing else is (a move in flight is either logged and acked again as a
  duplicate, or not logged and played again);
- the race's results count exactly the acked moves;
- the race clock stood still while the node was down;
- the spectator sees every board again;
- the daily attempt is still attempt 1, and ranked.

And the clock after a kill starts again from the last move logged, when that came after
the node's last note that it ran (written once a second).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import random
import socket
import sqlite3
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import msgpack
import pytest
from conftest import TIMEOUT
from process_support import NodeProcess, Player

from solrace.client import Client, ServerError
from solrace.server.races import check_race

PLAYERS = 4
PACE = 0.02  # seconds between a player's moves
DOWN_S = 1.0  # how long the node stays down


def logged_moves(data_dir: Path, code: str, race: int, player_id: str) -> list[str]:
    """A player's log as the node's SQLite file holds it (read alongside the node).

    A finished race's log is one row of ``logs``; a running race's moves are in the
    journal, each commit's moves in one row.
    """
    db = sqlite3.connect(f"file:{data_dir / 'solrace.sqlite3'}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT moves FROM logs WHERE code = ? AND race = ? AND player_id = ?",
            (code, race, player_id),
        ).fetchone()
        if row is not None:
            return str(row[0]).split(" ") if row[0] else []
        journal = db.execute("SELECT moves FROM journal ORDER BY seq").fetchall()
    finally:
        db.close()
    moves: list[str] = []
    for (packed,) in journal:
        for entry in msgpack.unpackb(packed, raw=False):
            if entry[:3] == [code, race, player_id]:
                assert entry[3] == len(moves), f"the journal has a gap at {entry}"
                moves.append(entry[4])
    return moves


def http_json(node: NodeProcess, path: str) -> dict[str, Any]:
    """GET a JSON endpoint of the node."""
    with urllib.request.urlopen(f"http://127.0.0.1:{node.port}{path}", timeout=TIMEOUT) as r:
        data: dict[str, Any] = json.loads(r.read())
    return data


async def until(test: Callable[[], bool], what: str, tasks: list[asyncio.Task[None]]) -> None:
    """Wait until ``test()`` holds, failing at once if a player's task failed."""
    async with asyncio.timeout(4 * TIMEOUT):
        while not test():
            for task in tasks:
                if task.done():
                    task.result()
            await asyncio.sleep(0.02)
    assert test(), what


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[NodeProcess]:
    """An embedded ``solrace serve`` process (an account is ranked from the day it is made)."""
    process = NodeProcess(tmp_path / "node", None, "--daily-account-age", "0")
    process.start()
    process.wait_listening()
    yield process
    process.stop()


async def client(node: NodeProcess, name: str, clients: list[Client]) -> Client:
    made = Client(node.url, name=name, request_timeout=4 * TIMEOUT, resume_timeout=6 * TIMEOUT)
    await made.connect()
    clients.append(made)
    return made


async def seated(
    node: NodeProcess, prefix: str, count: int, seed: int, clients: list[Client]
) -> list[Player]:
    """``count`` connected players named ``prefix0``, ``prefix1``..., each with its own
    seeded choice of moves."""
    rng = random.Random(seed)
    return [
        Player(await client(node, f"{prefix}{i}", clients), 0, random.Random(rng.random()))
        for i in range(count)
    ]


async def race(players: list[Player], **settings: Any) -> str:
    """The first of ``players`` makes a Canfield room (``settings`` on top), the others
    join, and the race starts; the room's code.

    Undo is on: a stuck player undoes (Player.play_one). With it off, a random deal's race
    can be over before the restart a test is about (both games stuck within their first
    random moves: 74 of 20,000 playable deals for the two players of seed 9)."""
    host = players[0].client
    room = await host.create_room(
        "canfield", max_players=len(players), countdown=0, undo=True, **settings
    )
    code = str(room["code"])
    for player in players[1:]:
        await player.client.join(code)
    await host.start()
    for player in players:
        await player.client.next_event("race_started", timeout=TIMEOUT)
    return code


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
async def test_a_restarted_node_keeps_every_acked_move_and_the_race_and_daily_go_on(
    node: NodeProcess, how: str
) -> None:
    clients: list[Client] = []
    tasks: list[asyncio.Task[None]] = []
    try:
        await _race_through_a_restart(node, how, clients, tasks)
    finally:
        for task in tasks:
            task.cancel()
        for made in clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(made.close(), TIMEOUT)


async def _race_through_a_restart(
    node: NodeProcess, how: str, clients: list[Client], tasks: list[asyncio.Task[None]]
) -> None:
    players = await seated(node, "p", PLAYERS, 11, clients)
    watcher = await client(node, "watcher", clients)
    daily = Player(await client(node, "solo", clients), 0, random.Random(7))
    await daily.client.claim("a daily pass phrase")  # the daily deal is an account's

    host = players[0].client
    # Undo on: a stuck player undoes (Player.play_one). With it off, a random deal may end
    # every game within the players' random moves, and the race with them, before the
    # restart that the test is about.
    room = await host.create_room(
        "canfield",
        max_players=PLAYERS,
        countdown=0,
        time_limit=600,
        undo=True,
        spectators="live",
    )
    code = room["code"]
    for player in players[1:]:
        await player.client.join(code)
    await watcher.join(code, role="spectator")
    # The race's clock starts within the start request: measured from before it, the wall
    # clock is never behind the race's (a busy machine may take a while to deliver
    # race_started to all five clients).
    loop = asyncio.get_running_loop()
    began = loop.time()
    await host.start()
    for player in players:
        await player.client.next_event("race_started", timeout=TIMEOUT)
    started = await watcher.next_event("race_started", timeout=TIMEOUT)
    race = started["race"]
    await daily.client.daily("rainbow-canfield")  # never stuck before its first move
    for _ in range(3):
        assert await daily.play_one()

    stop = asyncio.Event()

    async def run(player: Player) -> None:
        while not stop.is_set() and await player.play_one():
            await asyncio.sleep(PACE)

    tasks += [asyncio.ensure_future(run(p)) for p in players]
    counts = [len(p.acked) for p in players]
    await until(lambda: all(len(p.acked) >= 5 or not p.playing for p in players), "moves", tasks)
    async with asyncio.timeout(TIMEOUT):
        while not any(p.in_flight for p in players):
            await asyncio.sleep(0.001)

    # Down, for a second, with moves in flight.
    # In a thread: the clients must go on reading meanwhile, to answer the node's closing.
    await asyncio.to_thread(node.kill if how == "SIGKILL" else node.stop)
    await asyncio.sleep(DOWN_S)
    node.start()
    await asyncio.to_thread(node.wait_listening)

    counts = [len(p.acked) for p in players]
    await until(
        lambda: all(
            len(p.acked) >= n + 5 or not p.playing for p, n in zip(players, counts, strict=True)
        ),
        "more moves after the restart",
        tasks,
    )
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 4 * TIMEOUT)
    resumed = await host.next_event("resumed", timeout=TIMEOUT)
    assert resumed["restarted"] is True, "the client tells a restart from a dropped link"

    # Every acked move is in the log, in order, and nothing else.
    for player in players:
        assert player.client.player_id is not None
        logged = logged_moves(node.data_dir, code, race, player.client.player_id)
        assert logged == player.acked, f"the log of {player.client.name} differs"
    # The clock stood still while the node was down.
    snapshot = await host.sync()
    assert snapshot["state"] == "racing"
    wall_ms = (loop.time() - began) * 1000
    assert snapshot["elapsed_ms"] <= wall_ms - DOWN_S * 1000 + 50, (snapshot, wall_ms)

    # The spectator is back (the client joins again) and sees every board.
    async with asyncio.timeout(TIMEOUT):
        while True:
            seen = await watcher.sync()
            if seen.get("you", {}).get("role") == "spectator":
                break
            await asyncio.sleep(0.05)
    assert set(seen["boards"]) == {p.client.player_id for p in players}

    # The race ends, counting exactly the acked moves.
    for player in players:
        if player.playing:
            await player.client.resign()
    over = await host.next_event("race_over", timeout=TIMEOUT)
    moves = {r["player_id"]: r["moves"] for r in over["results"]}
    assert moves == {p.client.player_id: len(p.acked) for p in players}

    # The daily attempt is still the first, and is ranked.
    again = await daily.client.sync()
    assert again["settings"]["attempt"] == 1 and again["state"] == "racing"
    assert daily.client.player_id is not None
    logged = logged_moves(node.data_dir, again["code"], again["race"], daily.client.player_id)
    assert logged == daily.acked
    assert await daily.play_one()
    await daily.client.resign()
    await daily.client.next_event("race_over", timeout=TIMEOUT)
    board = await asyncio.to_thread(
        http_json,
        node,
        f"/api/leaderboard?variant=rainbow-canfield&player={daily.client.player_id}",
    )
    assert board["count"] == 1
    assert board["you"]["attempt"] == 1 and board["you"]["ranked"] is True
    assert board["you"]["moves"] == len(daily.acked)


class Turning(random.Random):
    """Choices that always turn the stock (``Player.choose`` turns it below 0.7)."""

    def random(self) -> float:
        return 0.0


def test_turning_turns_the_stock_over_when_it_is_empty() -> None:
    """A redeal is a turn too: else a player turning the stock plays a random move once
    the stock is out, and a random line may end the game (stuck, undo off)."""
    player = Player(cast(Client, None), 0, Turning())
    assert all(player.choose(["t3-t4", "w-f", "t1-t2", "rd"]) == "rd" for _ in range(20))
    assert player.choose(["t3-t4", "d"]) == "d"


def alive_ms(data_dir: Path) -> int | None:
    """The node's last note that it ran, as its SQLite file holds it."""
    db = sqlite3.connect(f"file:{data_dir / 'solrace.sqlite3'}?mode=ro", uri=True)
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'alive_ms'").fetchone()
    finally:
        db.close()
    return None if row is None else int(row[0])


async def test_moves_acked_after_the_last_note_that_the_node_ran_keep_the_clock_in_order(
    node: NodeProcess,
) -> None:
    """Killed most of a second after its note that it ran, with moves acked since, the
    node starts the clock again from the last of those moves, not from the note: a move
    after the restart is timed after them, and the race's record checks."""
    clients: list[Client] = []
    try:
        players = await seated(node, "c", 2, 9, clients)
        code = await race(players, spectators="live")  # a public replay
        mover = players[0]
        mover.rng = Turning()  # draws and redeals only: the game never ends meanwhile
        noted = await asyncio.to_thread(alive_ms, node.data_dir)
        async with asyncio.timeout(4 * TIMEOUT):
            while await asyncio.to_thread(alive_ms, node.data_dir) == noted:
                await asyncio.sleep(0.01)
        # Moves for most of the second up to the next note, then the kill.
        loop = asyncio.get_running_loop()
        until_kill = loop.time() + 0.7
        while loop.time() < until_kill:
            assert await mover.play_one()
        node.kill()
        node.start()
        await asyncio.to_thread(node.wait_listening)
        await mover.client.next_event("resumed", timeout=4 * TIMEOUT)
        assert await mover.play_one()  # at once: less than the 0.7 s played past the note
        for player in players:
            await player.client.resign()
        record = await asyncio.to_thread(http_json, node, f"/api/race?room={code}&race=1")
        assert check_race(record) == [], record
        times = record["players"][mover.client.player_id]["times"]
        assert len(times) == len(mover.acked) and times == sorted(times), times
    finally:
        for made in clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(made.close(), TIMEOUT)


async def test_a_timed_race_restarted_counts_every_move_made_up_to_its_deadline(
    node: NodeProcess,
) -> None:
    """After a restart a room is ticked again at its deadline as it was before: once the
    standings of the moves made just before it are reported, not at the deadline itself,
    which left the last quarter second's moves out of the results (the log had them)."""
    clients: list[Client] = []
    try:
        players = await seated(node, "t", 2, 3, clients)
        code = await race(players, time_limit=10, spectators="live")  # a public replay
        mover = players[0]
        mover.rng = Turning()  # draws and redeals only: the game lasts the race
        await mover.play_one()
        node.stop()
        node.start()
        await asyncio.to_thread(node.wait_listening)
        for player in players:
            await player.client.next_event("resumed", timeout=4 * TIMEOUT)
        with pytest.raises(ServerError) as over:  # moves until the time is up
            while True:
                await mover.play_one()
        assert over.value.code == "race_over", over.value
        await mover.client.next_event("race_over", timeout=4 * TIMEOUT)
        record = await asyncio.to_thread(http_json, node, f"/api/race?room={code}&race=1")
        assert check_race(record) == [], record
        mine = record["players"][mover.client.player_id]
        assert len(mine["moves"]) == len(mover.acked), (len(mine["moves"]), len(mover.acked))
        results = {r["player_id"]: r for r in record["results"]}
        assert results[mover.client.player_id]["moves"] == len(mover.acked), results
    finally:
        for made in clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(made.close(), TIMEOUT)


async def test_standings_not_yet_written_are_worked_out_from_the_logs_after_a_kill(
    node: NodeProcess,
) -> None:
    """A report of standings alone is written to the SQLite file lazily (seconds later):
    killed in between, the node works each player's standing out again from the move
    log, with its banked count, when it starts again."""
    clients: list[Client] = []
    try:
        players = await seated(node, "k", 2, 5, clients)
        host = players[0].client
        await race(players)
        for _ in range(8):
            for player in players:
                await player.play_one()
        node.kill()
        await asyncio.sleep(0.2)
        node.start()
        await asyncio.to_thread(node.wait_listening)
        await host.next_event("resumed", timeout=4 * TIMEOUT)
        snapshot = await host.sync()
        standings = {p["player_id"]: p for p in snapshot["players"]}
        for player in players:
            mine = standings[player.client.player_id]
            assert mine["moves"] == len(player.acked), (mine, player.acked)
            view = player.client.view
            assert view is not None
            assert mine["banked"] == sum(f["count"] for f in view["foundations"]), mine
    finally:
        for made in clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(made.close(), TIMEOUT)


async def test_after_a_kill_a_spectator_sees_each_board_as_its_player_last_saw_it(
    node: NodeProcess,
) -> None:
    """A board still being played is kept in the SQLite file only when the node lets go of
    its game (not when the node is killed). Started again, the node works each running
    game's board out from its log: a spectator who comes back before any player does sees
    every board as its player last saw it."""
    clients: list[Client] = []
    try:
        players = await seated(node, "b", 2, 9, clients)
        watcher = await client(node, "eyes", clients)
        code = await race(players, spectators="live")
        for _ in range(6):
            for player in players:
                await player.play_one()
        await asyncio.sleep(0.5)  # the standings are reported
        # A member comes: the room's record is written at once, with those standings (so
        # the restart has no standing to work out, only the boards).
        await watcher.join(code, role="spectator")
        seen: dict[str, dict[str, Any]] = {}
        for player in players:
            assert player.client.player_id is not None and player.client.view is not None
            seen[player.client.player_id] = dict(player.client.view)
            await player.client.close()  # gone: only the spectator comes back
        node.kill()
        await asyncio.sleep(0.2)
        node.start()
        await asyncio.to_thread(node.wait_listening)
        async with asyncio.timeout(4 * TIMEOUT):
            while True:
                with contextlib.suppress(Exception):
                    snapshot = await watcher.sync()
                    if snapshot.get("you", {}).get("role") == "spectator":
                        break
                await asyncio.sleep(0.05)
        assert snapshot["state"] == "racing"
        for player_id, view in seen.items():
            board = snapshot["boards"][player_id]
            for key in ("moves", "banked", "tableau", "foundations", "reserve", "waste"):
                assert board[key] == view[key], (player_id, key, board[key], view[key])
    finally:
        for made in clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(made.close(), TIMEOUT)


def stalled_spectator(port: int, code: str) -> socket.socket:
    """A spectator on a raw socket that, once in ``code``, never reads again: it never
    answers the close frame of a node that stops."""
    sock = socket.create_connection(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Protocol: solrace.v1.msgpack\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head
    for request in (
        {"type": "hello", "id": 1, "name": "Zed"},
        {"type": "join_room", "id": 2, "code": code, "role": "spectator"},
    ):
        payload = msgpack.packb(request)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        sock.sendall(bytes([0x82, 0x80 | len(payload)]) + mask + masked)
    return sock


async def test_a_client_that_never_answers_the_close_costs_the_race_no_time(
    tmp_path: Path,
) -> None:
    """SIGTERM tells every client to go at once, but the node then waits for each close
    handshake (up to websockets' close timeout) before it exits: the race clock stands
    still from the moment the clients were told, not from the exit."""
    node = NodeProcess(tmp_path / "node", None)
    node.start()
    node.wait_listening()
    clients: list[Client] = []
    sock = None
    try:
        ann = await client(node, "Ann", clients)
        room = await ann.create_room("canfield", countdown=0, spectators="live", time_limit=600)
        sock = stalled_spectator(node.port, room["code"])
        await asyncio.sleep(0.5)  # its join is in
        await ann.start()
        await ann.next_event("race_started", timeout=TIMEOUT)
        before = (await ann.sync())["elapsed_ms"]
        await asyncio.to_thread(node.stop)  # SIGTERM, and waits for the exit
        node.start()
        node.wait_listening()
        snapshot = await ann.sync()  # the client resumes with its token
        lost = snapshot["elapsed_ms"] - before
        assert lost < 3_000, lost  # the close handshake's wait (10 s) is not race time
    finally:
        if sock is not None:
            sock.close()
        for each in clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(each.close(), TIMEOUT)
        node.stop()
