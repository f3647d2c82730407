"""Acks carry the change to the player's view, with the legal moves only when asked for.

Each client records the frames as they came over the socket: a fresh move's ack has a
``delta`` and no ``view``, and the delta applied to the view before the move is the view
of a local replay after it. ``hello`` says with ``legal_moves`` whether the deltas list
the legal moves; the library's client asks by default, and builds ``ack["view"]``.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import TIMEOUT, RunningServer, ServerFactory
from e2e_support import FAST, RecordingClient, apply_text, deal_seed, fresh

from solrace.engine import format_move, player_view
from solrace.protocol import apply_delta

SEED = 31337
MOVES = 40

Frame = dict[str, Any]


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets a test play at full speed."""
    return await start_server(limits=FAST)


@pytest.fixture
async def recorded() -> AsyncIterator[list[RecordingClient]]:
    """Recording clients made by the test, closed at its end."""
    made: list[RecordingClient] = []
    yield made
    for client in made:
        await client.close()


@dataclass
class Played:
    """One move: the client's view before it, its ack as sent and as returned, and the
    local replay's views after it (without and with the legal moves)."""

    before: Frame
    raw: Frame
    ack: Frame
    after: Frame
    after_legal: Frame


def acks(client: RecordingClient) -> list[Frame]:
    """The ack frames the client received, as the server sent them."""
    return [f for f in client.frames if f.get("type") == "ack"]


async def race_alone(
    server: RunningServer,
    made: list[RecordingClient],
    monkeypatch: pytest.MonkeyPatch,
    **options: Any,
) -> tuple[RecordingClient, Frame]:
    """A player racing alone on the test's deal; return it and its race_started event."""
    deal_seed(monkeypatch, SEED)
    player = RecordingClient(server.url, name="solo", request_timeout=TIMEOUT, **options)
    made.append(player)
    await player.connect()
    await player.create_room("canfield", countdown=0)
    await player.start()
    started = await player.next_event("race_started", timeout=TIMEOUT)
    return player, started


async def play_random(client: RecordingClient, rng: random.Random) -> list[Played]:
    """Play random legal moves and undos on the test's deal, as a local replay does too."""
    game = fresh("canfield", SEED)
    played = []
    for _ in range(MOVES):
        if game.status.value != "playing":
            break
        if game.can_undo and rng.random() < 0.15:
            move = "u"
        else:
            move = format_move(rng.choice(game.legal_moves()))
        before = client.view
        assert before is not None
        count = len(acks(client))
        ack = await client.move(move)
        apply_text(game, move)
        (raw,) = acks(client)[count:]
        assert raw["move"] == ack["move"] and raw["rev"] == game.moves, raw
        played.append(Played(before, raw, ack, player_view(game), player_view(game, legal=True)))
    assert len(played) > 1 and any(p.raw["move"] == "u" for p in played)
    return played


async def test_a_connection_that_asks_for_no_legal_moves_gets_deltas_without_them(
    server: RunningServer, recorded: list[RecordingClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    player, started = await race_alone(server, recorded, monkeypatch, legal_moves=False)
    assert player.legal_moves is False
    # Whole views list the legal moves all the same: at the start (and in snapshots).
    assert started["view"] == player_view(fresh("canfield", SEED), legal=True)
    played = await play_random(player, random.Random(SEED))
    for move in played:
        assert "view" not in move.raw and move.raw["duplicate"] is False, move.raw
        assert "legal" not in move.raw["delta"], move.raw
        assert apply_delta(move.before, move.raw["delta"]) == move.after
        # The library hands back the whole view, built from the delta: no legal moves.
        assert move.ack["view"] == move.after
    assert player.view == played[-1].after and player.rev == played[-1].raw["rev"]


async def test_a_connection_that_asks_for_legal_moves_gets_the_engines_in_each_delta(
    server: RunningServer, recorded: list[RecordingClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    player, started = await race_alone(server, recorded, monkeypatch, legal_moves=True)
    assert started["view"] == player_view(fresh("canfield", SEED), legal=True)
    played = await play_random(player, random.Random(SEED + 1))
    for move in played:
        assert "view" not in move.raw and move.raw["duplicate"] is False, move.raw
        assert move.raw["delta"]["legal"] == move.after_legal["legal"], move.raw
        assert apply_delta(move.before, move.raw["delta"]) == move.after_legal
        assert move.ack["view"] == move.after_legal
    assert player.view == played[-1].after_legal


async def test_the_library_asks_for_legal_moves_unless_told_not_to(
    server: RunningServer, recorded: list[RecordingClient]
) -> None:
    player = RecordingClient(server.url, name="default", request_timeout=TIMEOUT)
    recorded.append(player)
    assert player.legal_moves is True
    await player.connect()
    await player.create_room("canfield", countdown=0)
    await player.start()
    await player.next_event("race_started", timeout=TIMEOUT)
    assert player.view is not None
    ack = await player.move(player.view["legal"][0])
    (raw,) = acks(player)
    assert "view" not in raw and raw["delta"]["legal"] == ack["view"]["legal"]
