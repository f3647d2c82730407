"""The moves of many passes share one commit (``commit_window_s``): one SQLite commit on
the embedded backend, one round trip on Redis; no ack leaves before its move is stored."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import msgpack
import pytest
from conftest import TIMEOUT, RunningServer, ServerFactory
from e2e_support import RawClient

from solrace.server.backends.base import MAX_COMMIT_WINDOW_S
from solrace.server.backends.embedded import EmbeddedBackend
from solrace.server.backends.redis import RedisBackend
from solrace.server.connection import Cork

REDIS = pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)

PLAYERS = 4


def logged_moves(data_dir: Path) -> int:
    """Moves the SQLite file holds in its journal, read by a connection of its own."""
    db = sqlite3.connect(data_dir / "solrace.sqlite3")
    try:
        rows = db.execute("SELECT moves FROM journal").fetchall()
    finally:
        db.close()
    return sum(len(msgpack.unpackb(row[0])) for row in rows)


async def solo_racer(url: str, name: str) -> RawClient:
    client = await RawClient.open(url, name=name)
    room = await client.request({"type": "create_room", "variant": "canfield", "countdown": 0})
    assert room["type"] == "room", room
    await client.request({"type": "start"})
    await client.recv(lambda f: f["type"] == "race_started")
    return client


def groups(running: RunningServer) -> int:
    """Groups of writes sent to the store so far: SQLite commits on the embedded backend,
    round trips that carried appends on Redis."""
    backend = running.node.backend
    if isinstance(backend, EmbeddedBackend):
        return backend.commits
    assert isinstance(backend, RedisBackend)
    return backend.append_round_trips


async def stored(running: RunningServer, racers: list[RawClient]) -> int:
    """The racers' moves the store holds, read apart from the node's own bookkeeping."""
    if running.node.backend.in_process:
        return logged_moves(running.config.data_dir)
    backend = running.node.backend
    return sum(
        [len(await backend.read_moves(racer_room(running, r), 1, r.player_id)) for r in racers]
    )


async def test_moves_of_several_passes_share_one_group_and_wait_for_it(
    start_server: ServerFactory,
) -> None:
    window = 0.5
    running = await start_server(commit_window_s=window)
    async with asyncio.timeout(TIMEOUT):
        racers = [await solo_racer(running.url, f"p{n}") for n in range(PLAYERS)]
        await asyncio.sleep(window * 2)  # the set-up's own writes are stored
        before, held = groups(running), await stored(running, racers)
        for n, racer in enumerate(racers):
            await racer.send({"type": "move", "id": 100 + n, "move": "d", "rev": 0})
            await asyncio.sleep(0.02)  # each move in a pass of its own
        # Nothing goes to the store, so nothing is acked, until the window is over.
        assert groups(running) == before
        assert await stored(running, racers) == held
        acks = [await r.recv(lambda f: f["type"] in ("ack", "error")) for r in racers]
        assert [a["type"] for a in acks] == ["ack"] * PLAYERS, acks
        # One group (a commit, a round trip) held the four moves, the acks came after it.
        assert groups(running) == before + 1
        assert await stored(running, racers) == held + PLAYERS
        for racer in racers:
            await racer.close()


async def test_a_window_of_zero_stores_every_pass(start_server: ServerFactory) -> None:
    running = await start_server(commit_window_s=0.0)
    async with asyncio.timeout(TIMEOUT):
        racers = [await solo_racer(running.url, f"p{n}") for n in range(2)]
        before = groups(running)
        for n, racer in enumerate(racers):
            await racer.send({"type": "move", "id": 100 + n, "move": "d", "rev": 0})
            ack = await racer.recv(lambda f: f["type"] in ("ack", "error"))
            assert ack["type"] == "ack", ack
        assert groups(running) == before + 2
        for racer in racers:
            await racer.close()


@REDIS
async def test_on_redis_calls_waiting_for_their_window_are_sent_when_the_backend_closes(
    redis_url: str,
) -> None:
    backend = RedisBackend(redis_url, commit_window_s=MAX_COMMIT_WINDOW_S)
    peer = RedisBackend(redis_url)
    try:
        await backend.start()
        logged = backend.append_move_soon("ROOM0001", 1, "alice", 0, "d", 5)
        await asyncio.sleep(0.05)
        assert backend.has_waiting_calls() and not logged.done()
        async with asyncio.timeout(MAX_COMMIT_WINDOW_S / 2):  # not a window later
            await backend.close()
        assert logged.done() and logged.exception() is None
        assert await peer.read_moves("ROOM0001", 1, "alice") == ["d"]
    finally:
        await peer.close()


def racer_room(running: RunningServer, racer: RawClient) -> str:
    code = running.node.sessions[racer.player_id].room
    assert code is not None
    return code


@pytest.mark.parametrize("make", [EmbeddedBackend, RedisBackend])
def test_a_window_out_of_range_is_refused(tmp_path: Path, make: type) -> None:
    where = str(tmp_path) if make is EmbeddedBackend else "redis://127.0.0.1:1"
    with pytest.raises(ValueError, match="commit_window_s"):
        make(where, commit_window_s=1.5)
    with pytest.raises(ValueError, match="commit_window_s"):
        make(where, commit_window_s=-0.1)


class Pushed:
    """A connection's side of the cork: it records when its frames were sent."""

    def __init__(self) -> None:
        self.corked = True
        self.sent_at: list[float] = []

    def send_data(self) -> None:
        self.corked = False
        self.sent_at.append(asyncio.get_running_loop().time())


async def test_pushed_frames_wait_for_the_group_open_when_pushed_not_for_later_ones() -> None:
    """Under a steady load a group of writes is nearly always open: frames wait for the
    one open when they were pushed (each write commits what is open before it goes),
    never from group to group."""
    window = 0.05
    cork = Cork(lambda: window)  # a group always open, always a window away
    loop = asyncio.get_running_loop()
    first, second = Pushed(), Pushed()
    pushed = loop.time()
    cork.add(first)  # type: ignore[arg-type]
    cork.add(second)  # type: ignore[arg-type]
    async with asyncio.timeout(TIMEOUT):
        while not first.sent_at:
            await asyncio.sleep(window / 5)
    assert len(first.sent_at) == len(second.sent_at) == 1  # together, in one flush
    assert abs(first.sent_at[0] - second.sent_at[0]) < window / 5
    assert window * 0.9 <= first.sent_at[0] - pushed < 4 * window


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_a_group_says_when_it_is_due_on_either_event_loop(tmp_path: Path, loop_name: str) -> None:
    """The node holds its frames until the open group's commit (``commit_due_in``). That
    must hold on uvloop, the node's default loop, whose timers are not asyncio's class:
    a group that said "due now" there would let acks out before their moves are stored."""
    if loop_name == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        factory = uvloop.new_event_loop
    else:
        factory = asyncio.new_event_loop
    window = 0.5

    async def main() -> tuple[float, float, int, float]:
        backend = EmbeddedBackend(tmp_path, commit_window_s=window)
        await backend.start()
        try:
            backend.flush_writes()
            before = backend.commits
            backend.note_alive(1)  # a write opens a group
            due = backend.commit_due_in()
            # A short wait: the group must still be open after it (under a loaded CI
            # machine a wait of half the window once overran the whole window).
            await asyncio.sleep(window / 10)
            later = backend.commit_due_in()
            backend.flush_writes()
            return due, later, backend.commits - before, backend.commit_due_in()
        finally:
            await backend.close()

    with asyncio.Runner(loop_factory=factory) as runner:
        due, later, committed, after = runner.run(main())
    assert window * 0.8 <= due <= window
    assert 0 < later < due
    assert committed == 1 and after == 0.0


def stored_moves(data_dir: Path, code: str) -> dict[str, int]:
    """Each player's moves as the room's record in the SQLite file says."""
    db = sqlite3.connect(data_dir / "solrace.sqlite3")
    try:
        (data,) = db.execute("SELECT data FROM rooms WHERE code = ?", (code,)).fetchone()
    finally:
        db.close()
    record = msgpack.unpackb(data, raw=False)
    return {entry[0]: entry[3] for entry in record["players"]}  # player id, ..., moves


@pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)
async def test_a_report_of_standings_alone_is_written_later_and_at_close(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report of standings in which every game goes on changes the room's record in
    memory at once (players and spectators hear it), and the SQLite file gets it at
    least ``LAZY_ROOM_WRITE_S`` later (a restart works it out from the move logs
    meanwhile); a node that stops writes every such record."""
    from solrace.server.backends import embedded

    lazy = 0.5
    monkeypatch.setattr(embedded, "LAZY_ROOM_WRITE_S", lazy)
    running = await start_server(commit_window_s=0.0)
    backend = running.node.backend
    assert isinstance(backend, EmbeddedBackend)
    async with asyncio.timeout(TIMEOUT):
        racer = await solo_racer(running.url, "lazy")
        code = racer_room(running, racer)
        await asyncio.sleep(0.05)
        assert stored_moves(running.config.data_dir, code) == {racer.player_id: 0}
        for rev in range(3):
            await racer.send({"type": "move", "id": 200 + rev, "move": "d", "rev": rev})
            ack = await racer.recv(lambda f: f["type"] in ("ack", "error"))
            assert ack["type"] == "ack", ack
        record = await backend.load_room(code)
        assert record is not None and record.players[racer.player_id].moves == 3
        # Committed (the moves are in the journal), the record not yet rewritten.
        assert logged_moves(running.config.data_dir) >= 3
        assert stored_moves(running.config.data_dir, code) == {racer.player_id: 0}
        while stored_moves(running.config.data_dir, code) != {racer.player_id: 3}:
            await asyncio.sleep(lazy / 10)
        # One more: the node stops before its time comes, and writes it as it closes.
        await racer.send({"type": "move", "id": 300, "move": "d", "rev": 3})
        ack = await racer.recv(lambda f: f["type"] in ("ack", "error"))
        assert ack["type"] == "ack", ack
        assert stored_moves(running.config.data_dir, code) == {racer.player_id: 3}
        await racer.close()
        await running.server.close()
    assert stored_moves(running.config.data_dir, code) == {racer.player_id: 4}
