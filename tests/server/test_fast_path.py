"""Moves taken as their frames come off the socket (Node.take_move), and what it declines.

A move on the player's current revision is checked, logged, acked and reported without
a task switch (on Redis, acked once its append, sent with the pass's others, is
confirmed); every other frame goes to the connection's task. These tests hold the two ways to the same answers and to the order frames came in.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
from conftest import PLAIN_DEALS, TIMEOUT, RunningServer, ServerFactory
from e2e_support import RawClient, deal_seed, winning_deal
from websockets.frames import Frame, Opcode

from solrace.engine import Game, new_game, parse_move
from solrace.protocol import (
    ErrorCode,
    Limits,
    MsgpackCodec,
    ProtocolError,
    RateLimiter,
    apply_delta,
)
from solrace.server import Node, ServerConfig, make_backend
from solrace.server.config import Budgets
from solrace.server.node import Session
from solrace.server.pacing import ProgressPacer


class Recorder:
    """A session's two ways out, keeping every frame pushed or sent."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    def push(self, frame: bytes | str) -> None:
        assert isinstance(frame, bytes)
        self.frames.append(msgpack.unpackb(frame))

    async def send(self, frame: bytes | str) -> None:
        self.push(frame)

    async def close(self, code: int, reason: str) -> None:
        raise AssertionError(f"closed {code} {reason}")


async def racing_node(tmp_path: Path, **limits: Any) -> tuple[Node, Session, Recorder, Game]:
    """A node on the embedded backend with one player racing alone in a Canfield room."""
    config = ServerConfig(
        data_dir=tmp_path, progress_interval_s=0.0, limits=Limits(**limits), **PLAIN_DEALS
    )
    node = Node(make_backend(config), config)
    await node.start()
    out = Recorder()
    lim = config.limits
    session = Session(
        "c1",
        MsgpackCodec(lim),
        out.send,
        out.push,
        out.close,
        RateLimiter(lim.messages_per_second, lim.burst, time.monotonic()),
    )
    codec = MsgpackCodec()
    for request in (
        {"type": "hello", "id": 1, "name": "ann"},
        {"type": "create_room", "id": 2, "variant": "canfield", "countdown": 0},
        {"type": "start", "id": 3},
    ):
        await node.handle_frame(session, codec.dumps(request))
    async with asyncio.timeout(TIMEOUT):  # the room's events go out from its own task
        while not any(f["type"] == "race_started" for f in out.frames):
            await asyncio.sleep(0.01)
    started = [f for f in out.frames if f["type"] == "race_started"]
    assert started and started[0]["rev"] == 0, out.frames
    (held,) = node.held.values()
    (game,) = held.games.values()
    return node, session, out, game


def progress_entries(out: Recorder) -> list[dict[str, Any]]:
    return [s for f in out.frames if f["type"] == "progress" for s in f["players"]]


def move_frame(request_id: int, move: str, rev: int) -> bytes:
    return MsgpackCodec().dumps({"type": "move", "id": request_id, "move": move, "rev": rev})


async def test_a_move_on_the_current_revision_is_taken_logged_acked_and_reported(
    tmp_path: Path,
) -> None:
    node, session, out, game = await racing_node(tmp_path)
    view = next(f for f in out.frames if f["type"] == "race_started")["view"]
    local = new_game("canfield", game.seed)
    del out.frames[:]
    for rev, text in enumerate(["d", "d", "u", "d"]):
        assert node.take_move(session, move_frame(10 + rev, text, rev)) is True
        local.apply(parse_move(text))
        # Pushed at once, then the room's progress (the interval is 0: at every move).
        ack, report = out.frames[-2:]
        assert ack["type"] == "ack" and ack["id"] == 10 + rev and ack["rev"] == rev + 1
        assert report["type"] == "progress" and report["players"][0]["moves"] == rev + 1
        view = apply_delta(view, ack["delta"])
    assert game.position() == local.position()
    code = session.room
    assert code is not None
    assert await node.backend.read_moves(code, 1, session.player_id or "") == ["d", "d", "u", "d"]
    async with asyncio.timeout(TIMEOUT):
        while len(reported := progress_entries(out)) < 4:
            await asyncio.sleep(0.01)
    assert [s["moves"] for s in reported] == [1, 2, 3, 4]  # every move: the interval is 0
    assert node.held[code].record.players[session.player_id or ""].moves == 4
    assert view["stock"] == {"count": len(local.stock)} and view["moves"] == 4
    assert node.metrics.registry.get_sample_value("solrace_moves_total") == 4
    await node.stop()


async def test_frames_it_cannot_finish_at_once_are_declined_with_nothing_changed(
    tmp_path: Path,
) -> None:
    node, session, out, game = await racing_node(tmp_path, burst=5, messages_per_second=0.001)
    codec = MsgpackCodec()
    before, count = game.position(), len(out.frames)
    declined = [
        codec.dumps({"type": "ping", "id": 20}),  # not a move
        move_frame(21, "d", 5),  # a stale revision: the task answers it
        move_frame(22, "zz", 0),  # bad notation
        b"\xc1",  # not msgpack
    ]
    for frame in declined:
        assert node.take_move(session, frame) is False
    session.busy = True  # the connection's task is handling a frame
    assert node.take_move(session, move_frame(23, "d", 0)) is False
    session.busy = False
    async with session.lock:  # a snapshot is being sent
        assert node.take_move(session, move_frame(24, "d", 0)) is False
    assert game.position() == before and game.moves == 0
    assert len(out.frames) == count
    # create and start took two of the identity's five tokens (hello came before the
    # identity was known): the three left are still there.
    now = time.monotonic()
    assert session.rate is not None
    assert [session.rate.take(now) for _ in range(4)] == [True, True, True, False]
    await node.stop()


async def test_an_illegal_move_is_refused_with_its_reason_and_the_game_kept(
    tmp_path: Path,
) -> None:
    node, session, out, game = await racing_node(tmp_path)
    before = game.position()
    assert node.take_move(session, move_frame(30, "u", 0)) is True  # nothing to undo yet
    error = out.frames[-1]
    assert error["type"] == "error" and error["id"] == 30
    assert error["code"] == "illegal_move" and error["reason"] == "nothing_to_undo"
    assert error["rev"] == 0
    assert game.position() == before and game.moves == 0
    assert node.take_move(session, move_frame(31, "d", 0)) is True
    ack = [f for f in out.frames if f["type"] == "ack"]
    assert len(ack) == 1 and ack[0]["rev"] == 1
    await node.stop()


async def test_the_rate_limit_holds_for_moves_taken_at_once(tmp_path: Path) -> None:
    node, session, out, game = await racing_node(tmp_path, burst=2, messages_per_second=0.001)
    # create and start took the identity's two tokens: the move waits for the task.
    assert node.take_move(session, move_frame(40, "d", 0)) is False
    await node.handle_frame(session, move_frame(40, "d", 0))
    assert out.frames[-1]["code"] == "rate_limited" and game.moves == 0
    await node.stop()


REDIS = pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)


async def racing_on_redis(start_server: ServerFactory) -> tuple[Node, RawClient, Session, str]:
    """A node on Redis, a player racing alone on it, its session and its room's code."""
    running = await start_server()
    raw = await open_race(running)
    session = running.node.sessions[raw.player_id]
    assert session.room is not None
    return running.node, raw, session, session.room


@REDIS
async def test_on_redis_a_move_taken_at_once_is_acked_once_its_append_is_confirmed(
    start_server: ServerFactory,
) -> None:
    node, raw, session, code = await racing_on_redis(start_server)
    confirmed_at_push: list[bool] = []
    push = session.push

    def watched_push(frame: bytes | str) -> None:
        confirmed_at_push.append(session.inflight is None)
        push(frame)

    session.push = watched_push
    assert node.take_move(session, move_frame(50, "d", 0)) is True
    pending = session.inflight
    assert pending is not None and not pending.done()  # sent with the pass's other calls
    assert confirmed_at_push == []  # no ack before Redis has the move
    ack = await raw.recv(lambda f: f.get("id") == 50)
    assert ack["type"] == "ack" and ack["rev"] == 1
    assert pending.done() and session.inflight is None and confirmed_at_push[0] is True
    assert await node.backend.read_moves(code, 1, raw.player_id) == ["d"]


@REDIS
async def test_on_redis_a_move_the_log_refuses_gets_its_error_and_the_game_is_read_again(
    start_server: ServerFactory,
) -> None:
    node, raw, session, code = await racing_on_redis(start_server)
    assert (await raw.request({"type": "move", "move": "d", "rev": 0}))["rev"] == 1
    # Another node logged a move this node's copy of the game lacks.
    await node.backend.append_move(code, 1, raw.player_id, 1, "u")
    assert node.take_move(session, move_frame(51, "d", 1)) is True
    error = await raw.recv(lambda f: f.get("id") == 51)
    assert error["type"] == "error" and error["code"] == "stale_revision"
    assert raw.player_id not in node.held[code].games  # to be rebuilt from the log
    ack = await raw.request({"type": "move", "move": "d", "rev": 2})
    assert ack["type"] == "ack" and ack["rev"] == 3
    assert await node.backend.read_moves(code, 1, raw.player_id) == ["d", "u", "d"]


@REDIS
async def test_on_redis_requests_behind_a_move_in_flight_wait_for_its_ack(
    start_server: ServerFactory,
) -> None:
    node, raw, session, _ = await racing_on_redis(start_server)
    assert node.take_move(session, move_frame(52, "d", 0)) is True
    assert session.inflight is not None
    # A move on the next revision and a sync, sent before the first move is confirmed:
    # neither is taken ahead of it, and the sync shows both moves.
    assert node.take_move(session, move_frame(53, "d", 1)) is False
    raw.ws.transport.write(
        client_frames({"type": "move", "id": 53, "move": "d", "rev": 1}, {"type": "sync", "id": 54})
    )
    replies = [await raw.recv(lambda f: f.get("id") in (52, 53, 54)) for _ in range(3)]
    assert [(r["id"], r["type"]) for r in replies] == [(52, "ack"), (53, "ack"), (54, "room")]
    assert replies[2]["room"]["you"]["rev"] == 2


async def open_race(running: RunningServer) -> RawClient:
    raw = await RawClient.open(running.url)
    reply = await raw.request({"type": "create_room", "variant": "canfield", "countdown": 0})
    assert reply["type"] == "room"
    assert (await raw.request({"type": "start"}))["type"] == "ok"
    await raw.recv(lambda f: f.get("type") == "race_started")
    return raw


def client_frames(*requests: dict[str, Any]) -> bytes:
    """Masked client frames for ``requests``, to write to the socket in one piece."""
    return b"".join(
        Frame(Opcode.BINARY, msgpack.packb(r)).serialize(mask=True, extensions=[]) for r in requests
    )


async def test_frames_that_arrive_together_are_answered_in_their_order(
    start_server: ServerFactory,
) -> None:
    raw = await open_race(await start_server())
    # One write, so the server reads them at once: a ping (for the connection's task)
    # before two moves, then a sync. A move taken ahead of the ping would be acked first.
    raw.ws.transport.write(
        client_frames(
            {"type": "ping", "id": 60},
            {"type": "move", "id": 61, "move": "d", "rev": 0},
            {"type": "move", "id": 62, "move": "d", "rev": 1},
            {"type": "sync", "id": 63},
        )
    )
    replies = [await raw.recv(lambda f: f.get("id") in (60, 61, 62, 63)) for _ in range(4)]
    assert [(r["id"], r["type"]) for r in replies] == [
        (60, "pong"),
        (61, "ack"),
        (62, "ack"),
        (63, "room"),
    ]
    assert replies[2]["rev"] == 2 and replies[3]["room"]["you"]["rev"] == 2
    # Then moves alone, also in one write: all taken, in order.
    raw.ws.transport.write(
        client_frames(*({"type": "move", "id": 70 + r, "move": "u", "rev": r} for r in (2, 3)))
    )
    acks = [await raw.recv(lambda f: f.get("id") in (70 + 2, 70 + 3)) for _ in range(2)]
    assert [(a["id"], a["rev"]) for a in acks] == [(72, 3), (73, 4)]


async def test_a_move_the_log_refuses_gets_its_error_and_the_game_is_read_again(
    tmp_path: Path,
) -> None:
    node, session, out, _ = await racing_node(tmp_path)
    code, player_id = session.room, session.player_id
    assert code is not None and player_id is not None
    node.backend.append_move_now(code, 1, player_id, 0, "d")  # a move the game lacks
    assert node.take_move(session, move_frame(80, "d", 0)) is True
    error = out.frames[-1]
    assert error["type"] == "error" and error["id"] == 80 and error["code"] == "stale_revision"
    assert player_id not in node.held[code].games  # to be rebuilt from the log
    await node.handle_frame(session, move_frame(81, "u", 1))  # the log's move, undone
    (ack,) = [f for f in out.frames if f["type"] == "ack"]
    assert ack["id"] == 81 and ack["rev"] == 2
    assert await node.backend.read_moves(code, 1, player_id) == ["d", "u"]
    await node.stop()


async def test_a_progress_event_waits_behind_the_rooms_queued_events(tmp_path: Path) -> None:
    node, session, out, _ = await racing_node(tmp_path)
    code = session.room
    assert code is not None
    del out.frames[:]
    node.fanout.on_event(code, {"type": "marker", "room": code})  # queued: the room's task is idle
    assert node.take_move(session, move_frame(90, "d", 0)) is True
    assert [f["type"] for f in out.frames] == ["ack"]  # the progress waits behind the marker
    async with asyncio.timeout(TIMEOUT):
        while len(out.frames) < 3:
            await asyncio.sleep(0.01)
    assert [f["type"] for f in out.frames] == ["ack", "marker", "progress"]
    assert node.take_move(session, move_frame(91, "d", 1)) is True  # nothing queued now
    assert [f["type"] for f in out.frames[3:]] == ["ack", "progress"]
    await node.stop()


async def test_a_report_due_before_its_timer_fires_cancels_the_timer(tmp_path: Path) -> None:
    node, session, _, _ = await racing_node(tmp_path)
    node.pacer = ProgressPacer(10.0, 10.0)
    code = session.room
    assert code is not None
    held = node.held[code]
    assert node.take_move(session, move_frame(100, "d", 0)) is True  # reported at once
    assert node.take_move(session, move_frame(101, "u", 1)) is True  # waits for the timer
    timer = held.report_timer
    assert timer is not None and held.pending
    held.reported_at -= 20.0  # the interval is over, and the timer has not run yet
    assert node.take_move(session, move_frame(102, "d", 2)) is True  # reported now
    assert not held.pending
    # A timer left behind would report the room again before its interval is over.
    assert timer.cancelled() and held.report_timer is None
    await node.stop()


async def test_in_a_first_to_finish_room_a_move_after_the_win_is_too_late_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no grace, a first win ends the race: a move another player sends in the same
    pass as the win (before the win's report, a task away, brings the record's deadline
    forward) is refused as too late, not logged after the race's end."""
    seed, line = winning_deal("canfield")
    deal_seed(monkeypatch, seed)
    config = ServerConfig(
        data_dir=tmp_path,
        limits=Limits(messages_per_second=1e6, burst=1 << 20),  # the line at once
        budgets=Budgets.lifted(),
        **PLAIN_DEALS,
    )
    node = Node(make_backend(config), config)
    await node.start()
    lim, codec = config.limits, MsgpackCodec()
    sessions, outs = [], []
    for name in ("ann", "bob"):
        out = Recorder()
        session = Session(
            name,
            MsgpackCodec(lim),
            out.send,
            out.push,
            out.close,
            RateLimiter(lim.messages_per_second, lim.burst, time.monotonic()),
        )
        await node.handle_frame(session, codec.dumps({"type": "hello", "id": 1, "name": name}))
        sessions.append(session)
        outs.append(out)
    ann, bob = sessions
    room = {"type": "create_room", "id": 2, "variant": "canfield", "countdown": 0}
    await node.handle_frame(ann, codec.dumps({**room, "finish": "first", "finish_grace": 0}))
    code = node.in_room(ann)
    await node.handle_frame(bob, codec.dumps({"type": "join_room", "id": 2, "code": code}))
    await node.handle_frame(ann, codec.dumps({"type": "start", "id": 3}))
    async with asyncio.timeout(TIMEOUT):
        while not all(any(f["type"] == "race_started" for f in o.frames) for o in outs):
            await asyncio.sleep(0.01)
    for rev, text in enumerate(line):
        assert node.take_move(ann, move_frame(100 + rev, text, rev))
    assert outs[0].frames[-1]["type"] != "error", outs[0].frames[-1]
    # In the same pass: Bob's move is not taken, and answered race_over.
    assert node.take_move(bob, move_frame(7, "d", 0)) is False
    with pytest.raises(ProtocolError) as late:
        node.moves.checked(bob)
    assert late.value.code is ErrorCode.RACE_OVER
    await node.handle_frame(bob, move_frame(7, "d", 0))
    (answer,) = [f for f in outs[1].frames if f.get("id") == 7]
    assert answer["type"] == "error" and answer["code"] == "race_over", answer
    held = node.held[code]
    assert held.games_of(held.race)[bob.player_id].moves == 0
    await node.stop()


async def test_a_node_that_is_stopping_takes_no_more_moves(tmp_path: Path) -> None:
    """Once the node stops (its clients are being told to go), a move that still comes is
    neither taken at once nor by the connection's task: it is answered ``unavailable``, to
    be sent again once back, and nothing is logged after the clock stopped."""
    node, session, out, game = await racing_node(tmp_path)
    assert node.take_move(session, move_frame(800, "d", 0)) is True
    node.stopping()
    assert node.take_move(session, move_frame(900, "d", 1)) is False
    await node.handle_frame(session, move_frame(900, "d", 1))
    (answer,) = [f for f in out.frames if f.get("id") == 900]
    assert answer["type"] == "error" and answer["code"] == "unavailable", answer
    assert game.moves == 1
    (held,) = node.held.values()
    assert await node.backend.log_length(held.code, held.race, session.player_id) == 1
    await node.stop()
