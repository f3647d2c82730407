"""Bad input over real websockets: a stable error code, and nothing else disturbed.

After each bad input the other player in the room must have noticed nothing (no error
event, the offender's next move heard once) and the offender must still be able to play.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import msgpack
import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from connection_support import Peer, client_frame
from e2e_support import (
    RawClient,
    apply_text,
    deal_seed,
    events_until,
    fresh,
    of_type,
    progress_of,
    shows,
    standing_of,
    standings,
    steady_move,
)
from websockets.exceptions import ConnectionClosed
from websockets.frames import Opcode

from solrace.client import Client, ServerError
from solrace.engine import Game, IllegalMove, parse_move, spectator_view
from solrace.protocol import JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL, Limits

SEED = 4242


@dataclass
class Table:
    """A room with Bob (host, a library client) and Alice (a raw connection, the offender)."""

    url: str
    code: str
    bob: Client
    alice: RawClient
    game: Game
    heard: list[dict[str, Any]]
    flood_from: float = 0.0  # monotonic time before Alice's flood began spending her rate

    async def alice_plays(self) -> str:
        """Alice makes a legal move; it is acked, and Bob hears of it once, with no error."""
        move = steady_move(self.game)
        ack = await self.alice.request({"type": "move", "move": move, "rev": self.game.moves})
        assert ack["type"] == "ack", ack
        apply_text(self.game, move)
        assert ack["rev"] == self.game.moves and not ack.get("duplicate")
        # A fresh move's ack carries the change, without legal moves (hello did not ask).
        assert "view" not in ack and "legal" not in ack["delta"], ack
        assert ack["delta"]["moves"] == self.game.moves
        await self.bob_heard_nothing_else(self.game.moves)
        return move

    async def alice_waits_out_her_rate(self, rate: float) -> None:
        """Alice's identity spent its rate on an earlier connection: her first move on this
        one is refused, with the time to wait, and nothing is played. (On a machine slow
        enough that a token came back between the flood's last message and this move, the
        move may be played; never within one message's share of ``rate`` of the flood's
        start, before which her bucket held nothing it could have refilled.)"""
        early = await self.alice.request({"type": "move", "move": "d", "rev": self.game.moves})
        if early["type"] == "ack":
            assert self.flood_from and time.monotonic() - self.flood_from >= 1 / rate, early
            apply_text(self.game, "d")
            return
        assert early["type"] == "error" and early["code"] == "rate_limited", early
        assert 0 < early["retry_after"] <= 1, early
        await asyncio.sleep(early["retry_after"])

    async def bob_heard_nothing_else(self, moves: int) -> None:
        """Bob's events up to Alice's progress at ``moves``: no error, no repeated move."""
        seen = await events_until(self.bob, progress_of(self.alice.player_id, moves))
        self.heard.extend(seen)
        assert [e for e in self.heard if e["type"] == "error"] == []
        counts = [s["moves"] for s in standings(self.heard, self.alice.player_id)]
        assert counts == sorted(set(counts)), counts

    async def reconnect_alice(self) -> dict[str, Any]:
        """Alice connects again with her token; return the snapshot she gets back."""
        alice = await RawClient.open(self.url, name=None)
        welcome = await alice.request({"type": "hello", "token": self.alice.token})
        assert welcome["type"] == "welcome" and welcome["room"] == self.code
        alice.player_id, alice.token = welcome["player_id"], welcome["token"]
        self.alice = alice
        snapshot = await alice.recv(of_type("room"))
        room: dict[str, Any] = snapshot["room"]
        return room


async def open_table(
    url: str, *, subprotocol: str = MSGPACK_SUBPROTOCOL, start: bool = True, **settings: Any
) -> Table:
    """Bob creates a Canfield room, Alice joins it, and (with ``start``) the race begins."""
    bob = Client(url, name="bob", request_timeout=TIMEOUT)
    await bob.connect()
    settings.setdefault("spectators", "live")  # spectators here see every board
    room = await bob.create_room("canfield", countdown=0, **settings)
    alice = await RawClient.open(url, subprotocol=subprotocol, name="alice")
    joined = await alice.request({"type": "join_room", "code": room["code"]})
    assert joined["type"] == "room", joined
    table = Table(url, room["code"], bob, alice, fresh("canfield", SEED), [])
    if start:
        await bob.start()
        await bob.next_event("race_started", timeout=TIMEOUT)
        begun = await alice.recv(of_type("race_started"))
        assert begun["rev"] == 0
    return table


@pytest.fixture
async def tables(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[Table]]:
    """Tables opened by the test, closed at its end (on the test's seed)."""
    deal_seed(monkeypatch, SEED)
    opened: list[Table] = []
    yield opened
    for table in opened:
        await table.alice.close()
        await table.bob.close()


async def racing(server: RunningServer, tables: list[Table], **options: Any) -> Table:
    """A table whose race is on."""
    table = await open_table(server.url, **options)
    tables.append(table)
    return table


# -- frames that cannot be read -------------------------------------------------------------

NESTED = {"type": "ping", "id": 1, "x": {"a": {"b": {"c": 1}}}}

UNREADABLE = {
    MSGPACK_SUBPROTOCOL: [
        pytest.param(b"\xc1\xc1", id="not-msgpack"),
        pytest.param(msgpack.packb({"type": "ping", "id": 1})[:-1], id="truncated"),
        pytest.param(msgpack.packb([1, 2, 3]), id="not-a-map"),
        pytest.param(msgpack.packb(NESTED), id="too-deep"),
        pytest.param(msgpack.packb({"type": "hello", "name": "x" * 300}), id="string-too-long"),
        pytest.param(msgpack.packb({"type": "ping", 1: 2}), id="integer-key"),
        pytest.param('{"type": "ping", "id": 1}', id="text-frame"),
    ],
    JSON_SUBPROTOCOL: [
        pytest.param("{not json", id="not-json"),
        pytest.param("[1, 2]", id="not-a-map"),
        pytest.param('{"type": "ping", "id": 1, "x": NaN}', id="nan"),
        pytest.param(json.dumps(NESTED), id="too-deep"),
        pytest.param(json.dumps({"type": "ping", "id": 1, "x": list(range(40))}), id="array-long"),
        pytest.param(b'{"type": "ping", "id": 1}', id="binary-frame"),
    ],
}


@pytest.mark.parametrize("frame", UNREADABLE[MSGPACK_SUBPROTOCOL])
async def test_an_unreadable_msgpack_frame_gets_malformed_frame(
    server: RunningServer, tables: list[Table], frame: bytes | str
) -> None:
    table = await racing(server, tables)
    await table.alice_plays()
    await table.alice.send(frame)
    error = await table.alice.error()
    assert error["code"] == "malformed_frame" and error["message"]
    await table.alice_plays()


@pytest.mark.parametrize("frame", UNREADABLE[JSON_SUBPROTOCOL])
async def test_an_unreadable_json_frame_gets_malformed_frame(
    server: RunningServer, tables: list[Table], frame: bytes | str
) -> None:
    table = await racing(server, tables, subprotocol=JSON_SUBPROTOCOL)
    await table.alice.send(frame)
    error = await table.alice.error()
    assert error["code"] == "malformed_frame" and error["message"]
    await table.alice_plays()


# -- requests that are not right --------------------------------------------------------------

WRONG_REQUESTS = [
    pytest.param({"type": "move", "move": 5, "rev": 0}, "bad_field", id="move-not-text"),
    pytest.param({"type": "move", "move": "d", "rev": "0"}, "bad_field", id="rev-text"),
    pytest.param({"type": "move", "move": "d", "rev": -1}, "bad_field", id="rev-negative"),
    pytest.param({"type": "move", "move": "d", "rev": True}, "bad_field", id="rev-bool"),
    pytest.param({"type": "move", "move": "d", "rev": 2**60}, "bad_field", id="rev-huge"),
    pytest.param({"type": "move", "move": "d"}, "bad_field", id="rev-missing"),
    pytest.param({"type": "move", "move": "d", "rev": 0, "x": 1}, "bad_field", id="extra-field"),
    pytest.param({"type": "create_room", "variant": "canfield", "max_players": "4"}, "bad_field"),
    pytest.param({"type": "teleport"}, "unknown_type", id="unknown-type"),
    pytest.param({"type": 7}, "unknown_type", id="type-not-text"),
    pytest.param({"type": "hello", "name": "again"}, "already_identified", id="hello-twice"),
    pytest.param({"type": "create_room", "variant": "canfield"}, "already_in_room"),
    pytest.param({"type": "join_room", "code": "ZZZZ2222"}, "already_in_room", id="join-other"),
    pytest.param({"type": "start"}, "not_host", id="start-not-host"),
    pytest.param({"type": "ready"}, "wrong_state", id="ready-while-racing"),
    pytest.param({"type": "rematch"}, "wrong_state", id="rematch-while-racing"),
    pytest.param({"type": "move", "move": "xyzzy", "rev": 0}, "bad_move", id="not-notation"),
    pytest.param({"type": "move", "move": "t0-t1", "rev": 0}, "bad_move", id="pile-zero"),
    pytest.param({"type": "move", "move": "t1-t2x99", "rev": 0}, "bad_move", id="count-99"),
]


@pytest.mark.parametrize("subprotocol", [MSGPACK_SUBPROTOCOL, JSON_SUBPROTOCOL])
@pytest.mark.parametrize(("request_", "code"), WRONG_REQUESTS)
async def test_a_wrong_request_gets_its_stable_code(
    server: RunningServer,
    tables: list[Table],
    request_: dict[str, Any],
    code: str,
    subprotocol: str,
) -> None:
    table = await racing(server, tables, subprotocol=subprotocol)
    reply = await table.alice.request(request_)
    assert reply["type"] == "error" and reply["code"] == code, reply
    assert isinstance(reply["message"], str) and reply["message"]
    await table.alice_plays()


async def test_a_frame_without_a_usable_id_is_answered_without_one(
    server: RunningServer, tables: list[Table]
) -> None:
    table = await racing(server, tables)
    await table.alice.send({"type": "ping", "id": "seven"})
    error = await table.alice.error()
    assert error["code"] == "bad_field"
    await table.alice_plays()


# -- moves the race refuses ---------------------------------------------------------------------


async def test_an_illegal_move_gets_the_engines_reason_and_the_revision(
    server: RunningServer, tables: list[Table]
) -> None:
    table = await racing(server, tables)
    await table.alice_plays()
    # Each of these is refused whatever the position; the reason is the engine's own.
    for text in ("t1-t1", "t9-f", "r-t2x2", "f1-f2", "t1-w", "s-t1", "f3-t1"):
        with pytest.raises(IllegalMove) as refused:
            copy.deepcopy(table.game).apply(parse_move(text))
        reply = await table.alice.request({"type": "move", "move": text, "rev": table.game.moves})
        assert reply["type"] == "error" and reply["code"] == "illegal_move", reply
        assert reply["reason"] == refused.value.reason.value, text
        assert reply["rev"] == table.game.moves
        await table.alice_plays()


async def test_a_stale_revision_is_refused_with_the_current_one(
    server: RunningServer, tables: list[Table]
) -> None:
    table = await racing(server, tables)
    await table.alice_plays()
    await table.alice_plays()
    for rev in (table.game.moves + 1, table.game.moves + 50):
        reply = await table.alice.request({"type": "move", "move": "d", "rev": rev})
        assert reply["code"] == "stale_revision" and reply["rev"] == table.game.moves
    # An older revision with a move other than the one played there is stale too.
    played = table.game.log[0]
    other = "t1-f" if str(played) != "t1-f" else "d"
    reply = await table.alice.request({"type": "move", "move": other, "rev": 0})
    assert reply["code"] == "stale_revision" and reply["rev"] == table.game.moves
    await table.alice_plays()


async def test_a_repeated_move_is_acked_again_and_applied_once(
    server: RunningServer, tables: list[Table]
) -> None:
    table = await racing(server, tables)
    move = await table.alice_plays()
    rev = table.game.moves
    for spelling in (move, move.upper(), f"  {move} "):
        again = await table.alice.request({"type": "move", "move": spelling, "rev": rev - 1})
        assert again["type"] == "ack" and again["duplicate"] is True
        assert again["rev"] == rev and again["move"] == move
        # A repeat carries the whole current view, legal moves and all, and no delta.
        assert "delta" not in again and "legal" in again["view"]
        assert shows(again["view"], table.game)
    snapshot = await table.bob.sync()
    mine = next(p for p in snapshot["players"] if p["player_id"] == table.alice.player_id)
    assert mine["moves"] == rev
    await table.alice_plays()  # Bob hears of move rev + 1 next: the repeats made no noise


async def test_moves_before_the_start_after_the_end_and_after_resigning(
    server: RunningServer, tables: list[Table]
) -> None:
    table = await open_table(server.url, start=False)
    tables.append(table)
    alice, bob = table.alice, table.bob
    reply = await alice.request({"type": "move", "move": "d", "rev": 0})
    assert reply["code"] == "race_not_started"
    reply = await alice.request({"type": "resign"})
    assert reply["code"] == "race_not_started"

    await bob.start()
    await alice.recv(of_type("race_started"))
    table.heard.extend(await events_until(bob, of_type("race_started")))
    await table.alice_plays()

    reply = await alice.request({"type": "resign"})
    assert reply["type"] == "ok"
    reply = await alice.request({"type": "move", "move": "d", "rev": table.game.moves})
    assert reply["code"] == "game_over"
    ack = await bob.move("d")  # Bob plays on
    assert ack["rev"] == 1
    await bob.resign()
    await alice.recv(of_type("race_over"))
    seen = await events_until(bob, of_type("race_over"))
    assert [e for e in seen if e["type"] == "error"] == []

    reply = await alice.request({"type": "move", "move": "d", "rev": table.game.moves})
    assert reply["code"] == "race_over"
    # Alice can still play: she asks for a rematch, Bob is ready, and she plays the new race.
    assert (await alice.request({"type": "rematch"}))["type"] == "ok"
    await bob.ready()
    await alice.recv(of_type("race_started"))
    table.game = fresh("canfield", SEED)
    table.heard = await events_until(bob, of_type("race_started"))
    await table.alice_plays()


async def test_a_spectator_cannot_move(server: RunningServer, tables: list[Table]) -> None:
    table = await racing(server, tables)
    carol = await RawClient.open(server.url, name="carol")
    try:
        joined = await carol.request({"type": "join_room", "code": table.code, "role": "spectator"})
        assert joined["room"]["you"]["role"] == "spectator"
        for request in (
            {"type": "move", "move": "d", "rev": 0},
            {"type": "resign"},
            {"type": "ready"},
            {"type": "rematch"},
        ):
            reply = await carol.request(request)
            assert reply["code"] in ("not_a_player", "wrong_state"), reply
            if request["type"] in ("move", "resign", "ready"):
                assert reply["code"] == "not_a_player"
        await table.alice_plays()
        watched = await carol.recv(progress_of(table.alice.player_id, table.game.moves))
        standing = standing_of(watched, table.alice.player_id)
        assert standing["view"] == spectator_view(table.game)
        # Joining the race as a player is refused too, the spectator stays a spectator.
        reply = await carol.request({"type": "leave_room"})
        assert reply["type"] == "ok"
        reply = await carol.request({"type": "join_room", "code": table.code})
        assert reply["code"] == "wrong_state"
    finally:
        await carol.close()
    await table.alice_plays()


# -- identity, rooms and the host ----------------------------------------------------------------


async def test_a_bad_token_or_name_is_refused_and_the_connection_can_try_again(
    server: RunningServer, tables: list[Table]
) -> None:
    table = await racing(server, tables)
    stranger = await RawClient.open(server.url, name=None)
    try:
        reply = await stranger.request({"type": "move", "move": "d", "rev": 0})
        assert reply["code"] == "not_identified"
        forged = table.alice.token[:-2] + ("AA" if not table.alice.token.endswith("AA") else "BB")
        for token in ("nonsense", "abc.def", forged, "é.é", "." * 100):
            reply = await stranger.request({"type": "hello", "token": token})
            assert reply["code"] == "bad_token", (token, reply)
        for name in ("", "   ", "x" * 25, "a\x07b", "tab\u200bhere\u0000"):
            reply = await stranger.request({"type": "hello", "name": name})
            assert reply["code"] == "bad_name", (name, reply)
        welcome = await stranger.request({"type": "hello", "name": "dave"})
        assert welcome["type"] == "welcome" and welcome["name"] == "dave"
    finally:
        await stranger.close()
    with pytest.raises(ServerError) as refused:
        await Client(server.url, token="nonsense", request_timeout=TIMEOUT).connect()
    assert refused.value.code == "bad_token"
    await table.alice_plays()


async def test_an_unknown_room_bad_settings_and_a_full_room(
    server: RunningServer, tables: list[Table]
) -> None:
    table = await open_table(server.url, start=False, max_players=2)
    tables.append(table)
    carol = await RawClient.open(server.url, name="carol")
    try:
        for code in ("ZZZZ2222", "", "x" * 200):
            reply = await carol.request({"type": "join_room", "code": code})
            assert reply["code"] == "room_not_found", reply
        reply = await carol.request({"type": "join_room", "code": table.code, "role": "boss"})
        assert reply["code"] == "bad_field"
        reply = await carol.request({"type": "join_room", "code": table.code})
        assert reply["code"] == "room_full"
        reply = await carol.request({"type": "create_room", "variant": "poker"})
        assert reply["code"] == "unknown_variant"
        for settings in ({"max_players": 0}, {"time_limit": 1}, {"countdown": 10_000}):
            reply = await carol.request({"type": "create_room", "variant": "canfield", **settings})
            assert reply["code"] == "bad_settings", (settings, reply)
        reply = await carol.request({"type": "start"})
        assert reply["code"] == "not_in_room"
        # Out of a room, that is the answer, whatever the settings asked.
        for settings in ({}, {"finish": "sometimes"}, {"spectators": "live"}):
            reply = await carol.request({"type": "set_settings", **settings})
            assert reply["code"] == "not_in_room", (settings, reply)
        # Carol is not stuck: she may watch the room instead.
        joined = await carol.request(
            {"type": "join_room", "code": table.code.lower(), "role": "spectator"}
        )
        assert joined["type"] == "room"
    finally:
        await carol.close()

    # Alice is not the host; Bob is, and starts the race for both of them.
    reply = await table.alice.request({"type": "start"})
    assert reply["code"] == "not_host"
    await table.bob.start()
    await table.alice.recv(of_type("race_started"))
    table.heard.extend(await events_until(table.bob, of_type("race_started")))
    await table.alice_plays()


# -- frames too big, messages too many ---------------------------------------------------------


@pytest.mark.parametrize("subprotocol", [MSGPACK_SUBPROTOCOL, JSON_SUBPROTOCOL])
async def test_an_oversized_frame_closes_with_1009_and_nothing_is_lost(
    server: RunningServer, tables: list[Table], subprotocol: str
) -> None:
    table = await racing(server, tables, subprotocol=subprotocol)
    await table.alice_plays()
    await table.alice_plays()
    size = server.config.limits.max_frame_bytes + 1
    await table.alice.send(b"\x00" * size if subprotocol == MSGPACK_SUBPROTOCOL else "x" * size)
    assert await table.alice.closed() == 1009
    snapshot = await table.reconnect_alice()
    assert snapshot["state"] == "racing" and snapshot["you"]["rev"] == table.game.moves == 2
    await table.alice_plays()


@pytest.fixture
async def strict(start_server: ServerFactory) -> RunningServer:
    """A node with a small rate limit: 5 messages a second, 8 at once, 3 refusals."""
    return await start_server(
        limits=Limits(messages_per_second=5.0, burst=8, max_rate_violations=3)
    )


async def test_too_many_messages_are_refused_then_the_connection_is_closed_with_1008(
    strict: RunningServer, tables: list[Table]
) -> None:
    table = await racing(strict, tables)
    alice = table.alice
    table.flood_from = time.monotonic()
    with contextlib.suppress(ConnectionClosed):
        for n in range(200):
            await alice.send({"type": "ping", "id": 1000 + n})
    assert await alice.closed() == 1008
    refused = [f for f in alice.frames if f.get("code") == "rate_limited"]
    assert len(refused) == strict.config.limits.max_rate_violations + 1
    assert all(f["id"] >= 1000 for f in refused)  # each refusal names the request
    assert all(0 < f["retry_after"] <= 1 for f in refused), refused
    # The flood cost Alice nothing she had, but coming back renews none of her rate: her
    # first move is refused until her identity's bucket has a token again, then she plays.
    snapshot = await table.reconnect_alice()
    assert snapshot["you"]["rev"] == 0
    await table.alice_waits_out_her_rate(strict.config.limits.messages_per_second)
    await table.alice_plays()


async def test_a_burst_over_the_rate_is_refused_and_the_connection_lives(
    start_server: ServerFactory, tables: list[Table]
) -> None:
    server = await start_server(limits=Limits(messages_per_second=5.0, burst=8))
    table = await racing(server, tables)
    alice = table.alice
    for n in range(20):
        await alice.send({"type": "ping", "id": 2000 + n})
    replies = [await alice.recv(lambda f, n=n: f.get("id") == 2000 + n) for n in range(20)]
    refused = [r for r in replies if r.get("code") == "rate_limited"]
    assert refused and all(r["type"] == "error" for r in refused)
    assert replies[0]["type"] == "pong"
    # Once the bucket refills, Alice plays on (polled, within the test timeout).
    move = steady_move(table.game)
    async with asyncio.timeout(TIMEOUT):
        while True:
            reply = await alice.request({"type": "move", "move": move, "rev": table.game.moves})
            if reply.get("code") != "rate_limited":
                break
            await asyncio.sleep(0.05)  # a pause between polls, not a wait for an event
    assert reply["type"] == "ack", reply
    apply_text(table.game, move)
    await table.bob_heard_nothing_else(table.game.moves)


async def test_a_flood_of_unreadable_frames_is_rate_limited_too(
    strict: RunningServer, tables: list[Table]
) -> None:
    table = await racing(strict, tables)
    table.flood_from = time.monotonic()
    with contextlib.suppress(ConnectionClosed):
        for _ in range(200):
            await table.alice.send(b"\xc1")
    assert await table.alice.closed() == 1008
    refused = [f for f in table.alice.frames if f.get("code") == "rate_limited"]
    assert len(refused) == strict.config.limits.max_rate_violations + 1
    snapshot = await table.reconnect_alice()
    assert snapshot["you"]["rev"] == 0
    await table.alice_waits_out_her_rate(strict.config.limits.messages_per_second)
    await table.alice_plays()


async def test_a_connection_closed_for_its_rate_is_dropped_at_once_not_read_on(
    strict: RunningServer,
) -> None:
    """Its close frame sent, a flooding connection is dropped: the node does not wait for
    the client's close frame behind its flood (websockets' close timeout, 10 s), reading
    and parsing every frame of it meanwhile at the others' cost."""
    port = strict.server.port
    peer = await Peer.open_with(port, f"Sec-WebSocket-Protocol: {MSGPACK_SUBPROTOCOL}")
    ping = client_frame(Opcode.BINARY, msgpack.packb({"type": "ping", "id": 1}))
    async with asyncio.timeout(TIMEOUT):
        received = b""
        closed_at = None

        async def read() -> None:
            nonlocal received, closed_at
            while chunk := await peer.reader.read(65536):
                received += chunk
                if closed_at is None and b"rate limit exceeded" in received:
                    closed_at = time.monotonic()

        reading = asyncio.ensure_future(read())
        with contextlib.suppress(ConnectionError):
            while not reading.done():  # a flood that never reads the close, nor answers it
                peer.writer.write(ping * 50)
                await peer.writer.drain()
                await asyncio.sleep(0.001)
        with contextlib.suppress(ConnectionError):
            await reading
    assert closed_at is not None, received[-200:]
    assert time.monotonic() - closed_at < 2.0  # dropped, not closed after the timeout


async def test_a_request_too_long_to_read_is_refused_by_the_client_library_at_once(
    make_client: ClientFactory,
) -> None:
    # Such a frame cannot be read by the server, so its answer could not name the request:
    # the library answers it itself, with the code the server's own check gives.
    alice = await make_client("alice")
    alice.request_timeout = 2.0
    await alice.create_room("canfield", countdown=0, max_players=1)
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    with pytest.raises(ServerError) as refused:
        await alice.move("t1-" + "9" * 300)
    assert refused.value.code in {"malformed_frame", "bad_field"}, refused.value
    assert alice.connected
    assert (await alice.move("d"))["rev"] == 1  # nothing was lost
