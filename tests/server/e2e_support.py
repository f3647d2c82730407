"""Helpers for the end-to-end tests: known deals, raw connections, recorded frames."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from conftest import TIMEOUT, RunningServer, ServerFactory
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from solrace.client import Client
from solrace.engine import (
    DRAW,
    REDEAL,
    Game,
    card_name,
    format_move,
    new_game,
    parse_move,
    player_view,
    replay,
)
from solrace.protocol import MSGPACK_SUBPROTOCOL, Limits
from solrace.server import commands as commands_module

WINNING_DEALS = Path(__file__).resolve().parent.parent / "fixtures" / "winning_deals.json"
CARD_NAMES = frozenset(card_name(c) for c in range(52))

Frame = dict[str, Any]


#: Limits for tests that play faster than a person could: the rate limit stays out of the way.
FAST = Limits(messages_per_second=10_000, burst=10_000)


# -- deals ---------------------------------------------------------------------------------


def deal_seed(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Make the node deal ``seed`` for every race (it draws seeds with secrets.randbits)."""
    monkeypatch.setattr(commands_module.secrets, "randbits", lambda bits: seed)


def winning_deal(variant: str) -> tuple[int, list[str]]:
    """A seed of ``variant`` and a move list that wins it: from the fixture, else the solver.

    The solver is asked only for Canfield, whose deals it wins within a moment; a variant
    with no line in the fixture is skipped.
    """
    if WINNING_DEALS.exists():
        for entry in json.loads(WINNING_DEALS.read_text()):
            if entry["variant"] == variant:
                seed, moves = int(entry["seed"]), [str(m) for m in entry["moves"]]
                if replay(variant, seed, moves).banked == 52:
                    return seed, moves
    if variant != "canfield":
        pytest.skip(f"no winning {variant} line in {WINNING_DEALS.name}")
    try:
        from solrace.engine.solver import solve
    except ImportError:  # pragma: no cover - the solver ships with the engine
        pytest.skip("no winning line: neither the fixture nor the solver is here")
    for seed in range(1, 50):
        found = solve(variant, seed, max_nodes=20_000)
        if found is not None:
            return seed, [format_move(m) for m in found]
    raise AssertionError(f"no winning {variant} deal found")  # pragma: no cover


def hidden_cards(game: Game) -> frozenset[str]:
    """The face-down cards of ``game``: the reserve under its top card, and the stock."""
    return frozenset(card_name(c) for c in [*game.reserve[:-1], *game.stock])


def steady_move(game: Game) -> str:
    """A legal move that changes nothing a test looks at much: a draw or a redeal if any."""
    legal = game.legal_moves()
    for move in legal:
        if move in (DRAW, REDEAL):
            return format_move(move)
    assert legal, "the local game has no legal move"
    return format_move(legal[0])


def shows(view: Frame, game: Game) -> bool:
    """Whether a player's ``view`` is the view of ``game`` (with its legal moves, if listed)."""
    return view == player_view(game, legal="legal" in view)


def apply_text(game: Game, text: str) -> None:
    """Apply a move written in the notation to a local replay."""
    game.apply(parse_move(text))


def fresh(variant: str, seed: int) -> Game:
    """A local replay of the server's deal."""
    return new_game(variant, seed)


# -- events --------------------------------------------------------------------------------


async def events_until(
    client: Client, match: Callable[[Frame], bool], *, timeout: float = TIMEOUT
) -> list[Frame]:
    """Every event the client gets up to and including the first that ``match`` accepts."""
    seen: list[Frame] = []
    async with asyncio.timeout(timeout):
        async for event in client.events():
            seen.append(event)
            if match(event):
                return seen
    raise AssertionError(f"the client closed before the awaited event; got {seen}")


async def two_racing(
    start_server: ServerFactory, **config: Any
) -> tuple[RunningServer, Client, Client]:
    """A node started with ``config``, and "fast" and "rival" racing in a Canfield room
    of theirs (countdown 0), both past ``race_started``."""
    server = await start_server(**config)
    fast = Client(server.url, name="fast", request_timeout=TIMEOUT)
    rival = Client(server.url, name="rival", request_timeout=TIMEOUT)
    await fast.connect()
    await rival.connect()
    room = await fast.create_room("canfield", countdown=0)
    await rival.join(room["code"])
    await fast.start()
    await fast.next_event("race_started", timeout=TIMEOUT)
    await rival.next_event("race_started", timeout=TIMEOUT)
    return server, fast, rival


def standings(events: list[Frame], player_id: str | None = None) -> list[Frame]:
    """The entries of the progress events among ``events`` (of ``player_id`` if given)."""
    return [
        entry
        for e in events
        if e.get("type") == "progress"
        for entry in e["players"]
        if player_id is None or entry["player_id"] == player_id
    ]


def standing_of(event: Frame, player_id: str | None) -> Frame:
    """``player_id``'s entry in one progress event (there must be exactly one)."""
    assert event.get("type") == "progress", event
    found = standings([event], player_id)
    assert len(found) == 1, f"{player_id} has {len(found)} entries in {event}"
    return found[0]


def progress_of(player_id: str | None, moves: int) -> Callable[[Frame], bool]:
    """Matches a progress event with ``player_id``'s standing at ``moves`` moves."""
    return lambda e: any(s["moves"] == moves for s in standings([e], player_id))


def of_type(*types: str) -> Callable[[Frame], bool]:
    """Matches an event of one of ``types``."""
    return lambda e: e.get("type") in types


def walk(value: Any) -> Iterator[Any]:
    """Every key and leaf value inside nested maps and lists."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)
    else:
        yield value


class RecordingClient(Client):
    """A client that keeps every frame the server sent it, decoded, in arrival order.

    Each is kept as a copy, as it came: the client fills in an ack's whole ``view`` from
    its ``delta`` in the frame it decoded, which is not what the server sent.
    """

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self.frames: list[Frame] = []

    def _decode(self, frame: bytes | str) -> Frame:  # type: ignore[override]
        data = Client._decode(frame)
        self.frames.append(copy.deepcopy(data))
        return data


# -- raw connections -----------------------------------------------------------------------


class RawClient:
    """A bare websocket connection that sends whatever it is given, for bad input."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.binary = ws.subprotocol == MSGPACK_SUBPROTOCOL
        self.frames: list[Frame] = []
        self._unread: list[Frame] = []
        self._ids = 100
        self.player_id = ""
        self.token = ""

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        subprotocol: str = MSGPACK_SUBPROTOCOL,
        name: str | None = "raw",
        token: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> RawClient:
        """Connect (with extra ``headers``, say a proxy's) and, with a ``name`` or a
        ``token``, say hello."""
        ws = await connect(
            url,
            subprotocols=[Subprotocol(subprotocol)],
            compression=None,
            max_size=None,
            additional_headers=headers,
        )
        raw = cls(ws)
        if name is not None or token is not None:
            hello = (
                {"type": "hello", "name": name}
                if token is None
                else {"type": "hello", "token": token}
            )
            welcome = await raw.request(hello)
            assert welcome["type"] == "welcome", welcome
            raw.player_id, raw.token = welcome["player_id"], welcome["token"]
        return raw

    def encode(self, data: Frame) -> bytes | str:
        """The frame for ``data`` in this connection's subprotocol."""
        if self.binary:
            packed: bytes = msgpack.packb(data, use_bin_type=True)
            return packed
        return json.dumps(data)

    async def send(self, data: Frame | bytes | str) -> None:
        """Send a map in the subprotocol's encoding, or bytes and text as they are."""
        await self.ws.send(self.encode(data) if isinstance(data, dict) else data)

    async def recv(self, match: Callable[[Frame], bool] = lambda f: True) -> Frame:
        """The first frame (earlier unread ones included) that ``match`` accepts."""
        for index, frame in enumerate(self._unread):
            if match(frame):
                del self._unread[index]
                return frame
        async with asyncio.timeout(TIMEOUT):
            while True:
                raw = await self.ws.recv()
                frame = msgpack.unpackb(raw) if isinstance(raw, bytes) else json.loads(raw)
                self.frames.append(frame)
                if match(frame):
                    return frame
                self._unread.append(frame)

    async def request(self, data: Frame) -> Frame:
        """Send a request (an ``id`` is added if missing) and return the reply with its id."""
        if "id" not in data:
            self._ids += 1
            data = {**data, "id": self._ids}
        await self.send(data)
        request_id = data["id"]
        return await self.recv(lambda f: f.get("id") == request_id)

    async def error(self) -> Frame:
        """The next error frame (the answer to a frame that could not be read)."""
        return await self.recv(lambda f: f.get("type") == "error")

    async def closed(self) -> int | None:
        """Wait for the server to close the connection; return the close code."""
        async with asyncio.timeout(TIMEOUT):
            try:
                while True:
                    raw = await self.ws.recv()
                    frame = msgpack.unpackb(raw) if isinstance(raw, bytes) else json.loads(raw)
                    self.frames.append(frame)
                    self._unread.append(frame)
            except ConnectionClosed as closed:
                return closed.rcvd.code if closed.rcvd else None

    def forget(self) -> None:
        """Drop every frame received so far (a long exchange keeps no backlog)."""
        del self.frames[:], self._unread[:]

    def unread(self, kind: str) -> list[Frame]:
        """Frames of ``kind`` received but not yet returned."""
        return [f for f in self._unread if f.get("type") == kind]

    async def close(self) -> None:
        """Close the connection."""
        await self.ws.close()
