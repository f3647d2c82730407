"""No face-down card and no seed reaches any client, player or spectator, before the end.

Every frame the server sends is recorded, decoded, by each client. Each board in a frame
is matched to the player and revision it shows (its ``moves``), and checked against a
local replay of that player's game: the same cards, and none of those face down then.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from conftest import TIMEOUT, RunningServer, ServerFactory
from e2e_support import (
    CARD_NAMES,
    FAST,
    RecordingClient,
    apply_text,
    deal_seed,
    events_until,
    fresh,
    hidden_cards,
    of_type,
    walk,
)

from solrace.engine import Game, format_move, spectator_view
from solrace.protocol import apply_delta

SEED = 0x9E3779B97F4A7C15  # a seed no other number in a frame could equal by chance
MOVES_EACH = 90
PLAYER_ONLY = ("can_undo", "legal")


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets a test play at full speed."""
    return await start_server(limits=FAST)


@pytest.fixture
async def clients(server: RunningServer) -> AsyncIterator[list[RecordingClient]]:
    """Alice, Bob (players) and Carol (a spectator), each recording what it receives."""
    made = []
    for name in ("alice", "bob", "carol"):
        client = RecordingClient(server.url, name=name, request_timeout=TIMEOUT)
        await client.connect()
        made.append(client)
    yield made
    for client in made:
        await client.close()


class Replay:
    """A player's game replayed locally, with the board and face-down cards at each rev."""

    def __init__(self, variant: str) -> None:
        self.game: Game = fresh(variant, SEED)
        self.boards = [spectator_view(self.game)]
        self.hidden = [hidden_cards(self.game)]

    def play(self, move: str) -> None:
        apply_text(self.game, move)
        self.boards.append(spectator_view(self.game))
        self.hidden.append(hidden_cards(self.game))


def cards(value: Any) -> set[str]:
    """The card names anywhere in ``value``."""
    return {v for v in walk(value) if isinstance(v, str) and v in CARD_NAMES}


def boards_in(frame: dict[str, Any], me: str) -> list[tuple[str, dict[str, Any]]]:
    """Each whole board a frame carries, with the player whose board it is."""
    kind = frame.get("type")
    found: list[tuple[str, dict[str, Any]]] = []
    if kind in ("ack", "race_started") and "view" in frame:
        found.append((me, frame["view"]))
    if kind == "race_started" and "boards" in frame:
        found.extend(frame["boards"].items())
    if kind == "progress":
        found.extend((p["player_id"], p["view"]) for p in frame["players"] if "view" in p)
    if kind == "room":
        room = frame["room"]
        if "view" in room.get("you", {}):
            found.append((me, room["you"]["view"]))
        found.extend(room.get("boards", {}).items())
    return found


def check_frames(
    frames: list[dict[str, Any]], me: str, replays: dict[str, Replay], *, spectator: bool
) -> int:
    """Check every frame before race_over; return how many boards were checked.

    An ack's ``delta`` is applied to the player's board of the frame before (the last
    whole board or delta it got), and the board it makes is checked like a whole one.
    """
    checked = 0
    mine: dict[str, Any] | None = None  # the player's own board as its frames built it
    for frame in frames:
        if frame.get("type") == "race_over":
            assert frame["seed"] == SEED
            return checked
        leaves = list(walk(frame))
        assert "seed" not in leaves and SEED not in leaves, frame
        assert not any(isinstance(v, str) and str(SEED) in v for v in leaves), frame
        boards = boards_in(frame, me)
        if frame.get("type") == "ack" and "delta" in frame:
            assert "view" not in frame and not boards, frame
            assert mine is not None and mine["moves"] == frame["rev"] - 1, (mine, frame)
            delta = frame["delta"]
            built = apply_delta(mine, delta)
            assert built["moves"] == frame["rev"], frame
            # Every card in the frame is in the delta, and each is on the board it makes.
            assert cards(frame) == cards(delta) <= cards(built), frame
            boards = [(me, built)]
        else:
            assert cards(frame) == set().union(*(cards(b) for _, b in boards)), frame
        for owner, board in boards:
            if not spectator:
                assert owner == me, frame  # a player never sees another player's board
            replay = replays[owner]
            rev = board["moves"]
            assert not cards(board) & replay.hidden[rev], (owner, rev, board)
            shown = {k: v for k, v in board.items() if k not in PLAYER_ONLY}
            assert shown == replay.boards[rev], (owner, rev)
            checked += 1
            if owner == me:
                mine = board
    raise AssertionError("no race_over frame was recorded")


@pytest.mark.parametrize("variant", ["canfield", "rainbow-canfield"])
async def test_no_frame_carries_a_face_down_card_or_the_seed(
    clients: list[RecordingClient], monkeypatch: pytest.MonkeyPatch, variant: str
) -> None:
    deal_seed(monkeypatch, SEED)
    alice, bob, carol = clients
    room = await alice.create_room(variant, countdown=0, spectators="live")
    await bob.join(room["code"])
    await carol.join(room["code"], role="spectator")
    await alice.start()
    for client in clients:
        await client.next_event("race_started", timeout=TIMEOUT)

    players = (alice, bob)
    replays = {p.player_id: Replay(variant) for p in players if p.player_id}
    rng = random.Random(f"{variant}:{SEED}")
    for turn in range(2 * MOVES_EACH):
        player = players[turn % 2]
        assert player.player_id is not None
        replay = replays[player.player_id]
        if replay.game.status.value != "playing":
            continue
        if replay.game.can_undo and rng.random() < 0.1:
            move = "u"
        else:
            move = format_move(rng.choice(replay.game.legal_moves()))
        await player.move(move)
        replay.play(move)
        if turn == MOVES_EACH:  # halfway: everyone takes a snapshot, and Alice drops
            for client in clients:
                await client.sync()
            await alice.drop()

    assert alice.resumes == 1
    for player in players:
        assert player.player_id is not None
        if replays[player.player_id].game.status.value in ("playing", "stuck"):
            await player.resign()
    for client in clients:
        await events_until(client, of_type("race_over"))

    for player in players:
        assert player.player_id is not None
        checked = check_frames(player.frames, player.player_id, replays, spectator=False)
        assert checked >= replays[player.player_id].game.moves
    assert carol.player_id is not None
    checked = check_frames(carol.frames, carol.player_id, replays, spectator=True)
    assert checked >= sum(r.game.moves for r in replays.values())
    # The hidden cards were really at stake: some were dealt face down and later shown.
    for replay in replays.values():
        assert replay.hidden[0] - replay.hidden[-1]
