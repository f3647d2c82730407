"""Dropped connections: the client resumes with its token and no acked move is lost."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from e2e_support import (
    FAST,
    apply_text,
    deal_seed,
    events_until,
    fresh,
    of_type,
    progress_of,
    shows,
    standings,
    steady_move,
)
from websockets.exceptions import ConnectionClosed

from solrace.client import Client
from solrace.engine import Game

SEED = 777


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets a test play at full speed."""
    return await start_server(limits=FAST)


async def race(make_client: ClientFactory, **alice_options: Any) -> tuple[Client, Client]:
    """Alice and Bob in a started Canfield race on the test's seed."""
    alice = await make_client("alice", **alice_options)
    bob = await make_client("bob")
    room = await alice.create_room("canfield", countdown=0)
    await bob.join(room["code"])
    await alice.start()
    for player in (alice, bob):
        await player.next_event("race_started", timeout=TIMEOUT)
    return alice, bob


async def play(client: Client, game: Game, count: int) -> None:
    """Play ``count`` moves, each acked, keeping the local replay in step."""
    for _ in range(count):
        move = steady_move(game)
        ack = await client.move(move)
        apply_text(game, move)
        assert ack["rev"] == game.moves and not ack.get("duplicate")


def alice_moves(events: list[dict[str, object]], player_id: str | None) -> list[object]:
    """The move counts of a player's progress events, in order."""
    return [s["moves"] for s in standings(events, player_id)]


async def test_a_dropped_player_resumes_with_every_acked_move(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    deal_seed(monkeypatch, SEED)
    alice, bob = await race(make_client)
    game = fresh("canfield", SEED)
    await play(alice, game, 5)

    await alice.drop()
    await alice.next_event("resumed", timeout=TIMEOUT)
    assert alice.resumes == 1
    assert alice.room is not None and alice.room["state"] == "racing"
    # The room's snapshot is said after the connection is (as a spectator's rejoin is).
    back = await alice.next_event("room", timeout=TIMEOUT)
    assert back["room"] is alice.room
    assert alice.room["you"]["rev"] == 5 == alice.rev
    assert shows(alice.room["you"]["view"], game)

    await play(alice, game, 2)
    heard = await events_until(bob, progress_of(alice.player_id, 7))
    assert alice_moves(heard, alice.player_id) == [1, 2, 3, 4, 5, 6, 7]
    assert all(e["type"] != "error" for e in heard)


async def test_a_move_sent_while_disconnected_is_acked_once(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    deal_seed(monkeypatch, SEED)
    alice, bob = await race(make_client)
    game = fresh("canfield", SEED)
    await play(alice, game, 3)

    await alice.drop()
    move = steady_move(game)
    ack = await alice.move(move)  # goes out once the client has resumed
    apply_text(game, move)
    assert ack["rev"] == 4 and shows(ack["view"], game)
    assert alice.resumes == 1

    snapshot = await alice.sync()
    assert snapshot["you"]["rev"] == 4 and shows(snapshot["you"]["view"], game)
    await play(alice, game, 1)
    heard = await events_until(bob, progress_of(alice.player_id, 5))
    assert alice_moves(heard, alice.player_id) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("failure", ["silent", "raises"])
async def test_a_move_whose_ack_is_lost_is_applied_once_and_acked_as_a_duplicate(
    server: RunningServer,
    make_client: ClientFactory,
    monkeypatch: pytest.MonkeyPatch,
    failure: str,
) -> None:
    deal_seed(monkeypatch, SEED)
    alice, bob = await race(make_client)
    game = fresh("canfield", SEED)
    await play(alice, game, 2)

    # The network fails just as the server acks: the move is logged, the ack never arrives
    # (and the socket may say so, as websockets does once it knows the connection is gone).
    assert alice.player_id is not None
    session = server.node.sessions[alice.player_id]
    push = session.push
    lost: list[dict[str, Any]] = []

    def lose_the_ack(frame: Any) -> None:
        data = msgpack.unpackb(frame) if isinstance(frame, bytes) else {}
        if data.get("type") == "ack" and not lost:
            lost.append(data)
            assert alice._ws is not None
            alice._ws.transport.abort()
            if failure == "raises":
                raise ConnectionClosed(None, None)
            return
        push(frame)

    monkeypatch.setattr(session, "push", lose_the_ack)
    move = steady_move(game)
    ack = await alice.move(move)
    apply_text(game, move)
    assert lost and lost[0]["rev"] == 3
    assert "delta" in lost[0] and "view" not in lost[0]  # the duplicate carries the view
    assert ack["duplicate"] is True and ack["rev"] == 3 and shows(ack["view"], game)
    assert alice.resumes == 1

    # The other player heard of the move once, and the room's tally has it.
    heard = await events_until(bob, progress_of(alice.player_id, 3))
    assert alice_moves(heard, alice.player_id) == [1, 2, 3]
    snapshot = await bob.sync()
    mine = next(p for p in snapshot["players"] if p["player_id"] == alice.player_id)
    assert mine["moves"] == 3
    await play(alice, game, 1)
    heard = await events_until(bob, progress_of(alice.player_id, 4))
    assert alice_moves(heard, alice.player_id) == [4]


async def test_a_player_gone_past_the_grace_period_counts_as_resigned(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    deal_seed(monkeypatch, SEED)
    running = await start_server(resume_grace_s=0.5, limits=FAST)
    clients: list[Client] = []

    async def make(name: str, **options: Any) -> Client:
        client = Client(running.url, name=name, request_timeout=TIMEOUT, **options)
        await client.connect()
        clients.append(client)
        return client

    try:
        alice, bob = await race(make, resume=False)  # alice never comes back
        game = fresh("canfield", SEED)
        await play(alice, game, 2)
        await alice.drop()
        await bob.resign()

        seen = await events_until(bob, of_type("race_over"))
        gone = standings(seen, alice.player_id)
        assert gone[-1]["status"] == "resigned"
        dropped = [
            m
            for e in seen
            if e["type"] == "members"
            for m in e["members"]
            if m["player_id"] == alice.player_id
        ]
        assert dropped[-1]["connected"] is False
        results = {r["player_id"]: r for r in seen[-1]["results"]}
        assert results[alice.player_id]["status"] == "resigned"
        assert results[alice.player_id]["moves"] == 2
        assert results[bob.player_id]["status"] == "resigned"
        # Then she leaves the room for good.
        await events_until(
            bob,
            lambda e: (
                e["type"] == "members"
                and alice.player_id not in {m["player_id"] for m in e["members"]}
            ),
        )
    finally:
        for client in clients:
            await client.close()
