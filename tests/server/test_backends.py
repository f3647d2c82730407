"""The Backend contract, tested directly against the embedded and the Redis backends.

``peer`` is a second node's view of the same store: another RedisBackend on the same
Redis, or (for the embedded backend, which has one process) the backend itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT
from redis_server import RedisServer, free_port

from solrace.protocol import ErrorCode, Progress, ProtocolError
from solrace.server import Backend, BackendUnavailable, EmbeddedBackend
from solrace.server import room as rooms
from solrace.server.backends.redis import RedisBackend
from solrace.server.room import Outcome, Role, Room, Settings

CODE = "ROOM2345"


def open_backend(kind: str, url: str | None, tmp_path: Path) -> Backend:
    """A backend of ``kind`` on the test's store."""
    if kind == "redis":
        assert url is not None
        return RedisBackend(url)
    return EmbeddedBackend(tmp_path / "data")


@pytest.fixture
async def backend(
    backend_kind: str, redis_url: str | None, tmp_path: Path
) -> AsyncIterator[Backend]:
    """A started backend of each kind."""
    started = open_backend(backend_kind, redis_url, tmp_path)
    await started.start()
    yield started
    await started.close()


@pytest.fixture
async def peer(
    backend: Backend, backend_kind: str, redis_url: str | None, tmp_path: Path
) -> AsyncIterator[Backend]:
    """Another node on the same store (the same backend for the embedded kind)."""
    if backend_kind != "redis":
        yield backend
        return
    other = open_backend(backend_kind, redis_url, tmp_path)
    await other.start()
    yield other
    await other.close()


def new_room(code: str = CODE) -> Room:
    """A lobby with alice as host."""
    room = rooms.create(code, Settings("canfield"), "alice", "Alice").room
    assert room is not None
    return room


def joining(player_id: str) -> Any:
    """A change that adds ``player_id`` as a player."""
    return lambda r: rooms.join(r, player_id, player_id.title(), Role.PLAYER, max_spectators=4)


async def wait_for(predicate: Any) -> None:
    """Wait (at most TIMEOUT) until ``predicate()`` holds."""
    async with asyncio.timeout(TIMEOUT):
        while not predicate():
            await asyncio.sleep(0.005)


# -- rooms ---------------------------------------------------------------------------------


async def test_create_and_load_a_room(backend: Backend, peer: Backend) -> None:
    room = new_room()
    assert await backend.load_room(CODE) is None
    assert await backend.create_room(room)
    assert not await peer.create_room(new_room()), "the code is taken"
    assert await peer.load_room(CODE) == room
    assert await backend.room_count() == 1
    assert await backend.load_room("NOSUCHRM") is None


async def test_update_applies_a_change_and_returns_its_outcome(
    backend: Backend, peer: Backend
) -> None:
    await backend.create_room(new_room())
    outcome = await backend.update_room(CODE, joining("bob"))
    assert outcome.room is not None
    assert list(outcome.room.members) == ["alice", "bob"]
    assert [e.type for e in outcome.events] == ["members"]
    assert await peer.load_room(CODE) == outcome.room


async def test_a_refused_change_leaves_the_record_as_it_was(backend: Backend) -> None:
    await backend.create_room(new_room())
    before = await backend.load_room(CODE)
    with pytest.raises(ProtocolError) as refused:
        await backend.update_room(CODE, lambda r: rooms.start(r, "bob", 0, 7))
    assert refused.value.code is ErrorCode.NOT_IN_ROOM
    assert await backend.load_room(CODE) == before


async def test_updating_an_unknown_room_is_refused(backend: Backend) -> None:
    with pytest.raises(ProtocolError) as refused:
        await backend.update_room("NOSUCHRM", joining("bob"))
    assert refused.value.code is ErrorCode.ROOM_NOT_FOUND
    with pytest.raises(ProtocolError):
        await backend.update_room("NOT{A}CODE", joining("bob"))


async def test_an_unchanged_outcome_is_returned_as_is(backend: Backend) -> None:
    await backend.create_room(new_room())
    outcome = await backend.update_room(CODE, lambda r: rooms.tick(r, 0))
    assert outcome.events == ()
    assert outcome.room == await backend.load_room(CODE)


async def test_a_none_room_deletes_the_record_and_then_its_logs(backend: Backend) -> None:
    await backend.create_room(new_room())
    await backend.append_move(CODE, 1, "alice", 0, "d")
    outcome = await backend.update_room(CODE, lambda r: rooms.leave(r, "alice", 0))
    assert outcome.room is None
    assert await backend.load_room(CODE) is None
    # The last events of a room (a daily attempt's result) may still need its logs.
    assert await backend.read_moves(CODE, 1, "alice") == ["d"]
    await backend.drop_room_logs(CODE)
    assert await backend.read_moves(CODE, 1, "alice") == []
    assert await backend.room_count() == 0
    with pytest.raises(ProtocolError):
        await backend.update_room(CODE, joining("bob"))


async def test_concurrent_updates_from_two_nodes_all_land(backend: Backend, peer: Backend) -> None:
    await backend.create_room(new_room())
    settings_players = 40
    joins = [
        (backend if i % 2 else peer).update_room(CODE, lambda r, i=i: _add_spectator(r, i))
        for i in range(settings_players)
    ]
    outcomes = await asyncio.gather(*joins)
    room = await backend.load_room(CODE)
    assert room is not None
    assert len(room.members) == 1 + settings_players
    assert room.seq == 1 + settings_players
    seqs = sorted(event.seq for outcome in outcomes for event in outcome.events)
    assert seqs == list(range(2, 2 + settings_players)), "each change saw the one before"


def _add_spectator(room: Room, i: int) -> Outcome:
    return rooms.join(room, f"s{i}", f"S{i}", Role.SPECTATOR, max_spectators=1000)


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_write_between_read_and_write_makes_the_change_run_again(
    redis_url: str | None, backend: Backend
) -> None:
    """Another node's update lands while ours is being computed: ours is applied on top.

    (The embedded backend cannot interleave: nothing awaits inside its updates.)
    """
    assert redis_url is not None
    await backend.create_room(new_room())
    calls: list[Room] = []

    def other_node_joins_carol() -> None:
        async def run() -> None:
            other = RedisBackend(redis_url)
            await other.start()
            await other.update_room(CODE, joining("carol"))
            await other.close()

        asyncio.run(run())

    def change(room: Room) -> Outcome:
        calls.append(room)
        if len(calls) == 1:  # block this loop while another node writes
            thread = threading.Thread(target=other_node_joins_carol)
            thread.start()
            thread.join()
        return joining("bob")(room)

    outcome = await backend.update_room(CODE, change)
    assert len(calls) == 2
    assert list(calls[1].members) == ["alice", "carol"]
    assert outcome.room is not None
    assert list(outcome.room.members) == ["alice", "carol", "bob"]
    assert await backend.load_room(CODE) == outcome.room


# -- move logs -----------------------------------------------------------------------------


async def test_moves_are_logged_in_order_per_race_and_player(
    backend: Backend, peer: Backend
) -> None:
    await backend.create_room(new_room())
    for rev, move in enumerate(["d", "w-f", "t1-t2"]):
        await backend.append_move(CODE, 1, "alice", rev, move)
    await peer.append_move(CODE, 1, "bob", 0, "d")
    await peer.append_move(CODE, 2, "alice", 0, "t3-f")
    assert await peer.read_moves(CODE, 1, "alice") == ["d", "w-f", "t1-t2"]
    assert await backend.read_moves(CODE, 1, "bob") == ["d"]
    assert await backend.read_moves(CODE, 2, "alice") == ["t3-f"]
    assert await backend.read_moves(CODE, 3, "alice") == []


async def test_a_gap_or_a_rewrite_in_a_move_log_is_refused(backend: Backend, peer: Backend) -> None:
    await backend.create_room(new_room())
    await backend.append_move(CODE, 1, "alice", 0, "d")
    await backend.append_move(CODE, 1, "alice", 1, "d")
    with pytest.raises(ProtocolError) as gap:
        await peer.append_move(CODE, 1, "alice", 5, "d")
    assert gap.value.code is ErrorCode.STALE_REVISION
    with pytest.raises(ProtocolError) as rewrite:
        await peer.append_move(CODE, 1, "alice", 1, "w-f")
    assert rewrite.value.code is ErrorCode.STALE_REVISION
    with pytest.raises(ProtocolError):
        await peer.append_move(CODE, 1, "bob", 1, "d")
    assert await backend.read_moves(CODE, 1, "alice") == ["d", "d"]


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_retried_append_of_the_logged_move_is_accepted(backend: Backend) -> None:
    """Redis may run a command whose reply is lost; the retry must not look like a rewrite.
    A retry is of the log's last move (the node sends the next move only once this one is
    confirmed): an older move again comes from a stale game, and is refused as stale."""
    await backend.append_move(CODE, 1, "alice", 0, "d")
    await backend.append_move(CODE, 1, "alice", 1, "w-f")
    await backend.append_move(CODE, 1, "alice", 1, "w-f")
    with pytest.raises(ProtocolError) as older:
        await backend.append_move(CODE, 1, "alice", 0, "d")
    assert older.value.code is ErrorCode.STALE_REVISION
    assert await backend.read_moves(CODE, 1, "alice") == ["d", "w-f"]


async def test_racing_appends_of_the_same_revision_log_exactly_one(
    backend: Backend, peer: Backend
) -> None:
    await backend.create_room(new_room())
    results = await asyncio.gather(
        backend.append_move(CODE, 1, "alice", 0, "d"),
        peer.append_move(CODE, 1, "alice", 0, "w-f"),
        return_exceptions=True,
    )
    assert sum(1 for r in results if r is None) == 1
    assert sum(1 for r in results if isinstance(r, ProtocolError)) == 1
    assert len(await backend.read_moves(CODE, 1, "alice")) == 1


# -- players, secret, results ----------------------------------------------------------------


async def test_players_names_and_rooms(backend: Backend, peer: Backend) -> None:
    assert await backend.player_name("p1") is None
    await backend.save_player("p1", "Alice")
    assert await peer.player_name("p1") == "Alice"
    await peer.save_player("p1", "Alicia")
    assert await backend.player_name("p1") == "Alicia"
    assert await backend.player_room("p1") is None
    await backend.set_player_room("p1", CODE)
    assert await peer.player_room("p1") is None, "the room does not exist"
    await backend.create_room(new_room())
    assert await peer.player_room("p1") == CODE
    await peer.set_player_room("p1", None)
    assert await backend.player_room("p1") is None
    assert await backend.player_name("p1") == "Alicia"


async def test_the_token_secret_is_kept_and_shared(
    backend_kind: str, redis_url: str | None, tmp_path: Path, backend: Backend, peer: Backend
) -> None:
    secret = await backend.secret()
    assert len(secret) >= 16
    assert await peer.secret() == secret
    again = open_backend(backend_kind, redis_url, tmp_path)
    await again.start()
    try:
        assert await again.secret() == secret
    finally:
        await again.close()


async def test_results_are_kept_after_the_room_is_gone(backend: Backend, peer: Backend) -> None:
    results = [{"rank": 1, "player_id": "alice", "name": "Alice", "status": "won"}]
    seed = 2**64 - 1
    assert await backend.load_results(CODE, 1) is None
    await backend.create_room(new_room())
    await backend.save_results(CODE, 1, "canfield", seed, results)
    await backend.update_room(CODE, lambda r: rooms.leave(r, "alice", 0))
    loaded = await peer.load_results(CODE, 1)
    assert loaded == {"variant": "canfield", "seed": seed, "results": results}
    assert await peer.load_results(CODE, 2) is None


async def test_ready(backend: Backend) -> None:
    assert await backend.ready()


# -- pub/sub -------------------------------------------------------------------------------


class Recorder:
    """An event handler that keeps what it hears."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, code: str, event: dict[str, Any]) -> None:
        self.events.append((code, event))

    def of(self, code: str) -> list[dict[str, Any]]:
        return [e for c, e in self.events if c == code]


async def test_events_arrive_in_publishing_order(backend: Backend, peer: Backend) -> None:
    heard = Recorder()
    await backend.subscribe(CODE, heard)
    count = 200
    for seq in range(1, count + 1):
        await peer.publish(CODE, {"type": "progress", "seq": seq, "view": {"piles": [[1, 2], []]}})
    await wait_for(lambda: len(heard.events) >= count)
    assert [e["seq"] for e in heard.of(CODE)] == list(range(1, count + 1))
    assert heard.events[0] == (
        CODE,
        {"type": "progress", "seq": 1, "view": {"piles": [[1, 2], []]}},
    )


async def test_a_node_hears_only_the_rooms_it_subscribed_to(
    backend: Backend, peer: Backend
) -> None:
    heard = Recorder()
    await backend.subscribe(CODE, heard)
    await peer.publish("OTHER234", {"type": "members", "seq": 1})
    await peer.publish(CODE, {"type": "members", "seq": 2})
    await wait_for(lambda: heard.events)
    await asyncio.sleep(0.05)
    assert heard.events == [(CODE, {"type": "members", "seq": 2})]


async def test_unsubscribe_stops_delivery(backend: Backend, peer: Backend) -> None:
    left, stayed = Recorder(), Recorder()
    await backend.subscribe(CODE, left)
    await backend.subscribe("OTHER234", stayed)
    await peer.publish(CODE, {"type": "members", "seq": 1})
    await wait_for(lambda: left.events)
    await backend.unsubscribe(CODE)
    for seq in range(2, 5):
        await peer.publish(CODE, {"type": "members", "seq": seq})
    await peer.publish("OTHER234", {"type": "members", "seq": 1})
    await wait_for(lambda: stayed.events)
    await asyncio.sleep(0.05)
    assert [e["seq"] for e in left.of(CODE)] == [1]
    await backend.subscribe(CODE, left)
    await peer.publish(CODE, {"type": "members", "seq": 9})
    await wait_for(lambda: len(left.events) == 2)
    assert left.events[-1][1]["seq"] == 9


# -- Redis only ----------------------------------------------------------------------------


async def test_an_unreachable_redis_is_unavailable_not_a_hang() -> None:
    backend = RedisBackend(
        f"redis://127.0.0.1:{free_port()}/0", socket_timeout=0.5, connect_timeout=0.5
    )
    try:
        async with asyncio.timeout(TIMEOUT):
            assert not await backend.ready()
            with pytest.raises(BackendUnavailable):
                await backend.start()
            with pytest.raises(BackendUnavailable):
                await backend.append_move(CODE, 1, "alice", 0, "d")
            with pytest.raises(BackendUnavailable):
                await backend.update_room(CODE, joining("bob"))
            with pytest.raises(BackendUnavailable):
                await backend.publish(CODE, {"type": "members", "seq": 1})
    finally:
        await backend.close()


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_the_reader_subscribes_again_after_redis_restarts(
    redis_server: RedisServer, backend: Backend, peer: Backend
) -> None:
    heard = Recorder()
    await backend.subscribe(CODE, heard)
    await peer.publish(CODE, {"type": "members", "seq": 1})
    await wait_for(lambda: heard.events)
    redis_server.restart()
    async with asyncio.timeout(TIMEOUT):
        while len(heard.events) < 2:
            with contextlib.suppress(BackendUnavailable):  # until the peer reconnects
                await peer.publish(CODE, {"type": "members", "seq": 2})
            await asyncio.sleep(0.05)
    assert heard.events[1] == (CODE, {"type": "members", "seq": 2})
    assert await backend.ready()


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_rooms_subscribed_again_are_handed_to_the_resync_handler(
    redis_server: RedisServer, backend: Backend, peer: Backend
) -> None:
    """Events published while the reader was away are lost: the node is told which rooms."""
    resynced: list[str] = []
    backend.set_resync_handler(resynced.extend)
    heard = Recorder()
    for code in (CODE, "OTHER234", "GONE2345"):
        await backend.subscribe(code, heard)
    await backend.unsubscribe("GONE2345")
    await peer.publish(CODE, {"type": "members", "seq": 1})
    await wait_for(lambda: heard.events)
    assert resynced == [], "a first subscription loses nothing"
    redis_server.restart()
    await wait_for(lambda: len(resynced) >= 2)
    assert sorted(resynced) == sorted([CODE, "OTHER234"])
    # Told before the room's next event reaches the handler, so a snapshot comes first.
    async with asyncio.timeout(TIMEOUT):
        while len(heard.events) < 2:
            with contextlib.suppress(BackendUnavailable):
                await peer.publish(CODE, {"type": "members", "seq": 2})
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.05)
    assert sorted(resynced) == sorted([CODE, "OTHER234"]), "each room once"


@pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)
async def test_the_embedded_backend_never_loses_an_event_to_resync(backend: Backend) -> None:
    resynced: list[str] = []
    backend.set_resync_handler(resynced.extend)
    heard = Recorder()
    await backend.subscribe(CODE, heard)
    await backend.publish(CODE, {"type": "members", "seq": 1})
    await wait_for(lambda: heard.events)
    assert resynced == []


async def test_a_quiet_channel_outlasting_the_socket_timeout_keeps_its_connection(
    redis_server: RedisServer,
) -> None:
    redis_server.start()
    quiet = RedisBackend(redis_server.url, socket_timeout=0.2, poll_interval=0.5, ping_interval=0.3)
    talker = RedisBackend(redis_server.url)
    await quiet.start()
    await talker.start()
    try:
        heard = Recorder()
        await quiet.subscribe(CODE, heard)
        connection = quiet._shards[""].pubsub
        assert connection is not None
        await asyncio.sleep(1.5)
        await talker.publish(CODE, {"type": "members", "seq": 1})
        await wait_for(lambda: heard.events)
        assert quiet._shards[""].pubsub is connection, "the reader never reconnected"
    finally:
        await quiet.close()
        await talker.close()


async def test_a_move_log_keeps_each_moves_time_in_the_race(backend: Backend) -> None:
    await backend.create_room(new_room())
    outcome = await backend.update_room(
        CODE,
        lambda r: rooms.tick(rooms.start(r, "alice", 1_000, 5).room, 10_000),  # type: ignore[arg-type]
    )
    assert outcome.room is not None and outcome.room.state.value == "racing"
    for rev, (move, at) in enumerate([("d", 120), ("w-f", 950), ("u", 4_321)]):
        await backend.append_move(CODE, 1, "alice", rev, move, at)
    assert await backend.read_timed_moves(CODE, 1, "alice") == [
        ("d", 120),
        ("w-f", 950),
        ("u", 4_321),
    ]
    # Still so once the race is over (its log then kept as the race's record).
    await backend.update_room(
        CODE, lambda r: rooms.progress(r, "alice", now_ms=9_000, status="resigned")
    )
    assert await backend.read_timed_moves(CODE, 1, "alice") == [
        ("d", 120),
        ("w-f", 950),
        ("u", 4_321),
    ]
    assert await backend.read_moves(CODE, 1, "alice") == ["d", "w-f", "u"]


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_the_appends_of_one_pass_go_to_redis_in_one_round_trip(backend: Backend) -> None:
    from solrace.server.backends.redis import RedisBackend

    assert isinstance(backend, RedisBackend)
    await backend.create_room(new_room())
    before = backend.append_round_trips
    players = [f"p{n}" for n in range(40)]
    await asyncio.gather(*(backend.append_move(CODE, 1, p, 0, "d", 7) for p in players))
    assert backend.append_round_trips == before + 1
    for player in players:
        assert await backend.read_timed_moves(CODE, 1, player) == [("d", 7)]
    # Each is answered on its own: a gap in one refuses that one alone.
    results = await asyncio.gather(
        backend.append_move(CODE, 1, "p0", 1, "u", 9),
        backend.append_move(CODE, 1, "p1", 5, "u", 9),  # a gap
        return_exceptions=True,
    )
    assert results[0] is None
    assert isinstance(results[1], ProtocolError) and results[1].code is ErrorCode.STALE_REVISION
    assert backend.append_round_trips == before + 2


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_appends_sent_as_one_call_each_get_their_own_answer(
    backend: Backend, peer: Backend, redis_url: str | None
) -> None:
    """On one Redis the appends of a round trip go as one script call. Each keeps its
    own answer: logged, the same move again (a retry after a lost reply: logged), a
    rewrite or a gap (stale), two moves of one log in order, and an older move again
    (stale)."""
    from solrace.server.backends.redis import RedisBackend

    assert isinstance(backend, RedisBackend)
    await backend.create_room(new_room())
    await backend.append_move(CODE, 1, "old", 0, "d", 3)
    before = backend.append_round_trips
    results = await asyncio.gather(
        backend.append_move(CODE, 1, "new", 0, "d", 5),  # logged
        backend.append_move(CODE, 1, "old", 0, "d", 3),  # the same move again
        backend.append_move(CODE, 1, "old", 0, "u", 6),  # a rewrite
        backend.append_move(CODE, 1, "gap", 2, "d", 7),  # a gap
        backend.append_move(CODE, 1, "two", 0, "d", 8),
        backend.append_move(CODE, 1, "two", 1, "u", 9),  # after the one before it
        # An older move again, not the log's last: a stale game's, refused as stale (an
        # answer of "logged" would let its node report the stale game's standing).
        backend.append_move(CODE, 1, "two", 0, "d", 10),
        return_exceptions=True,
    )
    assert backend.append_round_trips == before + 1
    assert results[0] is None and results[1] is None
    for refused in (results[2], results[3], results[6]):
        assert isinstance(refused, ProtocolError) and refused.code is ErrorCode.STALE_REVISION
    assert results[4] is None and results[5] is None
    # As another node reads them.
    assert await peer.read_timed_moves(CODE, 1, "new") == [("d", 5)]
    assert await peer.read_timed_moves(CODE, 1, "old") == [("d", 3)]
    assert await peer.read_timed_moves(CODE, 1, "gap") == []
    assert await peer.read_timed_moves(CODE, 1, "two") == [("d", 8), ("u", 9)]
    # Each log, and the room's set of them, lives as long as the room (24 h by default).
    from redis.asyncio import Redis

    assert redis_url is not None
    client = Redis.from_url(redis_url)
    try:
        for key in (f"solrace:{{{CODE}}}:log:1:two", f"solrace:{{{CODE}}}:logs"):
            assert 86_000_000 < await client.pttl(key) <= 86_400_000, key
        assert await client.smembers(f"solrace:{{{CODE}}}:logs") == {
            f"solrace:{{{CODE}}}:log:1:{p}".encode() for p in ("new", "old", "two")
        }
    finally:
        await client.aclose()


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_the_swaps_and_appends_of_one_pass_share_one_round_trip(
    backend: Backend, peer: Backend
) -> None:
    """Rooms' record swaps (reports of standings) go with the pass's appends; each caller
    still gets its own outcome, and a swap that lost to another node's write is tried
    again on the record as it is."""
    assert isinstance(backend, RedisBackend)
    codes = [f"ROOM{n}AB" for n in range(2, 8)]
    for code in codes:
        await backend.create_room(new_room(code))
        await backend.update_room(code, joining("dave"))  # remembered as written here
    await peer.update_room(codes[0], joining("carol"))  # the first swap will lose
    before = backend.batched_round_trips
    results = await asyncio.gather(
        *(backend.update_room_publishing(code, joining("bob")) for code in codes),
        *(backend.append_move(code, 1, "alice", 0, "d", 5) for code in codes),
    )
    # One round trip for the pass, one more for the swap that lost (after its read).
    assert backend.batched_round_trips == before + 2
    for code, (outcome, _published) in zip(codes, results[: len(codes)], strict=True):
        assert outcome.room is not None and "bob" in outcome.room.members
        assert await peer.load_room(code) == outcome.room
        assert await backend.read_moves(code, 1, "alice") == ["d"]
    first = await peer.load_room(codes[0])
    assert first is not None and list(first.members) == ["alice", "dave", "carol", "bob"]


# -- the Redis node's round trips ------------------------------------------------------


def _stale_sensitive(calls: list[Room]) -> Any:
    """Bob joins only once Carol is in; the records it was applied to are kept."""

    def change(room: Room) -> Outcome:
        calls.append(room)
        if "carol" not in room.members:
            raise ProtocolError(ErrorCode.WRONG_STATE, "carol first")
        return joining("bob")(room)

    return change


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_record_remembered_before_another_node_wrote_is_read_again(
    backend: Backend, peer: Backend
) -> None:
    """A node applies a change to the record as it last wrote it; another node's write
    since then fails the swap, and the change runs again on the current record."""
    await backend.create_room(new_room())
    await backend.update_room(CODE, joining("dave"))  # remembered as this node wrote it
    await peer.update_room(CODE, joining("carol"))
    calls: list[Room] = []
    outcome = await backend.update_room(CODE, lambda r: calls.append(r) or joining("bob")(r))
    assert [list(r.members) for r in calls] == [
        ["alice", "dave"],
        ["alice", "dave", "carol"],
    ]
    assert outcome.room is not None and list(outcome.room.members) == [
        "alice",
        "dave",
        "carol",
        "bob",
    ]
    assert await peer.load_room(CODE) == outcome.room


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_refusal_or_no_change_decided_on_a_remembered_record_is_checked_again(
    backend: Backend, peer: Backend
) -> None:
    await backend.create_room(new_room())
    await backend.update_room(CODE, joining("dave"))
    await peer.update_room(CODE, joining("carol"))
    calls: list[Room] = []
    # Refused on the remembered record (no Carol there), done on the current one.
    outcome = await backend.update_room(CODE, _stale_sensitive(calls))
    assert len(calls) == 2 and "carol" in calls[1].members
    assert outcome.room is not None and "bob" in outcome.room.members
    # Nothing to change, on the remembered record: the current one is asked too.
    await peer.update_room(CODE, lambda r: _add_spectator(r, 1))
    seen: list[Room] = []

    def only_once_s1_watches(room: Room) -> Outcome:
        seen.append(room)
        return Outcome(room) if "s1" not in room.members else _add_spectator(room, 2)

    outcome = await backend.update_room(CODE, only_once_s1_watches)
    assert len(seen) == 2
    assert outcome.room is not None and "s2" in outcome.room.members
    # And a refusal on the current record is a refusal (four players: the room is full).
    with pytest.raises(ProtocolError):
        await backend.update_room(CODE, joining("gus"))


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_progress_report_is_published_by_its_write(backend: Backend, peer: Backend) -> None:
    heard = Recorder()
    await peer.subscribe(CODE, heard)
    await backend.create_room(new_room())

    def report(room: Room) -> Outcome:
        seq = room.seq + 1
        return Outcome(replace(room, seq=seq), (Progress(room.code, seq, []),))

    outcome, published = await backend.update_room_publishing(CODE, report)
    assert published
    await wait_for(lambda: len(heard.of(CODE)) == 1)
    assert heard.of(CODE) == [event.to_wire() for event in outcome.events]
    assert (await peer.load_room(CODE)) == outcome.room
    # Any other event is the caller's to publish.
    outcome, published = await backend.update_room_publishing(CODE, joining("bob"))
    assert not published and outcome.events
    await asyncio.sleep(0.2)
    assert len(heard.of(CODE)) == 1


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_events_published_in_one_pass_share_one_round_trip(
    backend: Backend, peer: Backend
) -> None:
    """Events of several rooms asked for in one pass of the loop go to Redis in one round
    trip (each held a connection of the pool for its own), and each room's arrive."""
    heard = Recorder()
    rooms_ = [CODE, "OTHER234", "THIRD234"]
    for code in rooms_:
        await peer.subscribe(code, heard)
    assert isinstance(backend, RedisBackend)
    before = backend.batched_round_trips
    await asyncio.gather(
        *(backend.publish(code, {"type": "members", "seq": 1}) for code in rooms_),
        backend.publish(CODE, {"type": "members", "seq": 2}),
    )
    assert backend.batched_round_trips - before == 1
    await wait_for(lambda: len(heard.events) == 4)
    assert [e["seq"] for e in heard.of(CODE)] == [1, 2]  # in the order asked for
    assert sorted(c for c, _ in heard.events) == sorted([*rooms_, CODE])


async def test_every_backend_leaves_other_events_to_the_caller(backend: Backend) -> None:
    await backend.create_room(new_room())
    outcome, published = await backend.update_room_publishing(CODE, joining("bob"))
    assert not published
    assert outcome.room is not None and "bob" in outcome.room.members


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_appends_go_on_after_redis_forgets_its_scripts(
    backend: Backend, redis_url: str | None
) -> None:
    from redis.asyncio import Redis

    assert redis_url is not None
    await backend.create_room(new_room())
    await backend.append_move(CODE, 1, "p0", 0, "d", 5)
    client = Redis.from_url(redis_url)
    await client.script_flush()
    await client.aclose()
    await asyncio.gather(*(backend.append_move(CODE, 1, p, 0, "d", 6) for p in ("p1", "p2")))
    await backend.append_move(CODE, 1, "p0", 1, "u", 7)
    assert await backend.read_timed_moves(CODE, 1, "p0") == [("d", 5), ("u", 7)]
    assert await backend.read_timed_moves(CODE, 1, "p2") == [("d", 6)]


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_the_records_a_node_remembers_are_bounded(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from solrace.server.backends import redis as redis_backend

    assert isinstance(backend, RedisBackend)
    monkeypatch.setattr(redis_backend, "ROOM_RECORDS_KEPT", 3)
    codes = [f"ROOM{n:04d}" for n in range(8)]
    for code in codes:
        await backend.create_room(new_room(code))
        await backend.update_room(code, joining("bob"))
    assert list(backend._records) == codes[-3:]  # the latest, the oldest forgotten
    # A forgotten room is read again, and updated as before.
    outcome = await backend.update_room(codes[0], joining("carol"))
    assert outcome.room is not None and "carol" in outcome.room.members
    assert list(backend._records) == [*codes[-2:], codes[0]]


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_results_on_redis_are_forgotten_a_while_after_the_last_race(
    backend: Backend,
) -> None:
    from solrace.server.backends.redis import RESULTS_KEEP_MS, RedisBackend

    assert isinstance(backend, RedisBackend)
    await backend.create_room(new_room())
    await backend.save_results(CODE, 1, "canfield", 7, [{"rank": 1, "player_id": "alice"}])
    left = await backend._redis.pttl(backend._room_key(CODE, "results"))
    assert RESULTS_KEEP_MS - 60_000 < left <= RESULTS_KEEP_MS


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_nodes_own_updates_of_one_room_take_one_swap_each(
    backend: Backend, redis_url: str | None
) -> None:
    """Two guests joining and a third saying ready through one node at once: in turn, each
    swap applies its change to the record the one before it wrote, so none meets a
    conflict, reads the record again, or swaps twice (each a round trip holding one of the
    pool's connections)."""
    import redis.asyncio as aioredis

    assert redis_url is not None
    await backend.create_room(new_room())
    await backend.update_room(CODE, joining("bob"))  # the record as this node wrote it
    probe = aioredis.Redis.from_url(redis_url)
    try:
        await probe.config_resetstat()
        outcomes = await asyncio.gather(
            *(backend.update_room(CODE, joining(p)) for p in ("carol", "dave")),
            backend.update_room(CODE, lambda r: rooms.set_ready(r, "bob", True, 0, 7)),
        )
        stats = await probe.info("commandstats")
    finally:
        await probe.aclose()
    last = await backend.load_room(CODE)
    assert last is not None
    assert set(last.members) == {"alice", "bob", "carol", "dave"}
    assert last.members["bob"].ready
    assert [o.room.seq for o in outcomes if o.room is not None] == sorted(
        o.room.seq for o in outcomes if o.room is not None
    )
    assert stats.get("cmdstat_hmget", {}).get("calls", 0) == 0  # no record read again
    assert stats["cmdstat_evalsha"]["calls"] == 3  # one swap each
