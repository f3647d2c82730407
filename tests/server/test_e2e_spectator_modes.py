"""Spectators who cannot leak the deal: the watch-yourself cheat under each setting.

Everyone in a race plays the same deal, so a racer who watches their own room from a
second connection, under a second identity, learns cards still face down on their own
board from the other players' boards. Here Alice races Bob, and Mallory is Alice's second
identity, watching (on Redis, through another node, which plays none of the games). Alice
makes no move, so every card face down in the deal is still face down on her board; Bob's
draws bring some of them up on his.

- ``live``: Mallory sees them at once (the cheat works: ``live`` is for friends);
- ``after``: no frame Mallory gets before ``race_over`` holds a board, or any card;
- ``delayed``: she sees each board no sooner than ``spectator_delay`` seconds after it
  was played, by the nodes' clock (a clock the test moves by hand: nothing is timed),
  and a card face up on it only once every player still racing has had it face up:
  the delay alone would show her, a minute late, cards still face down on Alice's board.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from conftest import LOOSE_BUDGETS, TIMEOUT, RunningServer, ServerFactory
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
    progress_of,
    standings,
    steady_move,
    walk,
)

from solrace.client import Client
from solrace.engine import Game, format_move, spectator_view

SEED = 20240601  # a Canfield deal with draws to make and cards to bring up
DELAY = 10


class Clock:
    """The nodes' clock, moved by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def cards(value: Any) -> set[str]:
    """The card names anywhere in ``value``."""
    return {v for v in walk(value) if isinstance(v, str) and v in CARD_NAMES}


def before_the_end(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The frames before the first ``race_over``."""
    for index, frame in enumerate(frames):
        if frame.get("type") == "race_over":
            return frames[:index]
    raise AssertionError("no race_over frame was recorded")


class Race:
    """Alice and Bob (players on the first node), Mallory (Alice's second identity,
    watching from the second node on Redis, the same node on the embedded backend)."""

    def __init__(self, alice: Client, bob: Client, mallory: RecordingClient) -> None:
        self.alice, self.bob, self.mallory = alice, bob, mallory
        self.games: dict[str, Game] = {}

    @property
    def ids(self) -> tuple[str, str]:
        assert self.alice.player_id is not None and self.bob.player_id is not None
        return self.alice.player_id, self.bob.player_id

    async def open(self, **settings: Any) -> dict[str, Any]:
        """A room of the three with ``settings``, its race started; Mallory's race_started."""
        room = await self.alice.create_room("canfield", countdown=0, **settings)
        await self.bob.join(room["code"])
        await self.mallory.join(room["code"], role="spectator")
        await self.alice.start()
        for player in (self.alice, self.bob):
            await player.next_event("race_started", timeout=TIMEOUT)
        self.games = {p: fresh("canfield", SEED) for p in self.ids}
        return await self.mallory.next_event("race_started", timeout=TIMEOUT)

    async def play(self, player: Client, move: str) -> None:
        """``player`` plays ``move``; Mallory hears of it."""
        assert player.player_id is not None
        game = self.games[player.player_id]
        apply_text(game, move)
        await player.move(move)
        await events_until(self.mallory, progress_of(player.player_id, game.moves))

    async def end(self) -> dict[str, Any]:
        """Both resign; Mallory's race_over."""
        await self.alice.resign()
        await self.bob.resign()
        for game in self.games.values():
            game.resign()
        return (await events_until(self.mallory, of_type("race_over")))[-1]

    def boards(self) -> dict[str, dict[str, Any]]:
        """Every player's board now, as a spectator sees it."""
        return {p: spectator_view(g) for p, g in self.games.items()}


@pytest.fixture
async def nodes(start_server: ServerFactory, backend_kind: str) -> list[RunningServer]:
    """The players' node and Mallory's: two nodes on Redis, one embedded."""
    clock = Clock(1_800_000_000.0)
    first = await start_server(clock=clock, limits=FAST)
    second = await start_server(clock=clock, limits=FAST) if backend_kind == "redis" else first
    return [first, second]


@pytest.fixture
async def race(nodes: list[RunningServer], monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Race]:
    """Alice, Bob and Mallory connected, the next race dealing SEED."""
    deal_seed(monkeypatch, SEED)
    made: list[Client] = []
    for name, node, cls in (
        ("alice", nodes[0], Client),
        ("bob", nodes[0], Client),
        ("mallory", nodes[1], RecordingClient),
    ):
        client = cls(node.url, name=name, request_timeout=TIMEOUT)
        await client.connect()
        made.append(client)
    alice, bob, mallory = made
    assert isinstance(mallory, RecordingClient)
    yield Race(alice, bob, mallory)
    for client in made:
        await client.close()


def clock_of(nodes: list[RunningServer]) -> Clock:
    clock = nodes[0].node.clock
    assert isinstance(clock, Clock)
    return clock


async def test_the_watch_yourself_cheat_works_in_a_live_room(race: Race) -> None:
    started = await race.open(spectators="live")
    alice, bob = race.ids
    hidden = hidden_cards(race.games[alice])
    assert not cards(started) & hidden
    await race.play(race.bob, "d")
    # At once: Bob's draw shows Mallory cards face down on Alice's board.
    seen = [
        entry["view"]
        for entry in standings(race.mallory.frames, bob)
        if entry["moves"] == 1 and "view" in entry
    ]
    assert seen and cards(seen[-1]) & hidden
    await race.end()


async def test_a_spectator_of_an_after_room_sees_no_board_before_the_results(
    race: Race,
) -> None:
    started = await race.open(spectators="after")
    assert "boards" not in started
    alice, bob = race.ids
    hidden = hidden_cards(race.games[alice])
    rng = random.Random(SEED)
    for turn in range(40):
        player = (race.alice, race.bob)[turn % 2]
        game = race.games[player.player_id or ""]
        if turn % 2 == 0 and turn < 20:
            continue  # Alice waits, her face-down cards at stake, while Bob plays
        await race.play(player, format_move(rng.choice(game.legal_moves())))
        if turn == 21:
            watching = await race.mallory.sync()
            assert "boards" not in watching and watching["settings"]["spectators"] == "after"
            assert {p["player_id"] for p in watching["players"]} == {alice, bob}
    assert hidden & cards(race.boards()[bob]), "Bob's board shows cards hidden on Alice's"
    over = await race.end()

    # Not one frame before the results holds a board, or a single card.
    early = before_the_end(race.mallory.frames)
    assert any(f.get("type") == "progress" for f in early)
    for frame in early:
        assert not cards(frame), frame
        assert "boards" not in frame and "view" not in walk(frame), frame
    # Progress was hers all along; the boards come with the results, and stay.
    heard = standings(early, bob)
    assert heard[-1]["moves"] == race.games[bob].moves
    assert over["boards"] == race.boards()
    assert (await race.mallory.sync())["boards"] == race.boards()


async def test_a_spectator_of_a_delayed_room_sees_each_board_late(
    race: Race, nodes: list[RunningServer]
) -> None:
    clock = clock_of(nodes)
    started = await race.open(spectators="delayed", spectator_delay=DELAY)
    alice, bob = race.ids
    deal = spectator_view(fresh("canfield", SEED))
    assert started["boards"] == {alice: deal, bob: deal}  # the deal shows nothing hidden
    hidden_at_deal = hidden_cards(race.games[alice])
    # Alice plays first the moves Bob will play: every card on Bob's boards has been face
    # up on hers, so his boards may show whole, each one late.
    for _ in range(7):
        await race.play(race.alice, steady_move(race.games[alice]))
    alices = spectator_view(race.games[alice])
    hidden = hidden_cards(race.games[alice])
    shown: dict[int, dict[str, Any]] = {0: deal}  # Bob's board at each move count

    async def bob_plays(count: int) -> None:
        for _ in range(count):
            await race.play(race.bob, steady_move(race.games[bob]))
            shown[race.games[bob].moves] = spectator_view(race.games[bob])

    def bob_shown(snapshot: dict[str, Any]) -> int:
        assert snapshot["boards"][alice] in (deal, alices)
        board = snapshot["boards"][bob]
        assert board == shown[board["moves"]]
        return int(board["moves"])

    await bob_plays(3)  # at t
    assert cards(spectator_view(race.games[bob])) & hidden_at_deal, "Bob's draws bring up cards"
    assert bob_shown(await race.mallory.sync()) == 0
    clock.now += DELAY / 2
    await bob_plays(2)  # at t + 5
    assert bob_shown(await race.mallory.sync()) == 0
    seen_so_far = len(race.mallory.frames)

    clock.now += DELAY / 2 + 1
    await bob_plays(1)  # at t + 11: the boards of t are due, those of t + 5 are not
    boards = (await events_until(race.mallory, of_type("boards")))[-1]
    assert boards["delay"] == DELAY and boards["boards"][bob] == shown[3]
    assert bob_shown(await race.mallory.sync()) == 3

    clock.now += DELAY  # at t + 21: every board but the next is due
    assert bob_shown(await race.mallory.sync()) == 6
    await bob_plays(1)
    boards = (await events_until(race.mallory, of_type("boards")))[-1]
    assert boards["boards"] == {bob: shown[6]}

    over = await race.end()
    assert over["boards"] == race.boards()  # the final boards, at once, every card shown

    # Every frame: no board came sooner than the delay. Until t + 10 none of Bob's but the
    # deal, then his of t, then of t + 11 at most; and no card hidden on Alice's board.
    early = before_the_end(race.mallory.frames)
    assert len(early) > seen_so_far
    for frame in early:
        assert all("view" not in entry for entry in frame.get("players", [])), frame
        assert not cards(frame) & hidden, frame
        whole = frame["room"] if frame.get("type") == "room" else frame
        for player, board in whole.get("boards", {}).items():
            if player == bob:
                assert board == shown[board["moves"]] and board["moves"] in (0, 3, 6), frame


async def test_a_spectator_who_comes_during_a_delayed_race_waits_the_delay_too(
    race: Race, nodes: list[RunningServer]
) -> None:
    clock = clock_of(nodes)
    room = await race.alice.create_room(
        "canfield", countdown=0, spectators="delayed", spectator_delay=DELAY
    )
    await race.bob.join(room["code"])
    await race.alice.start()
    await race.bob.next_event("race_started", timeout=TIMEOUT)
    _, bob = race.ids
    game = fresh("canfield", SEED)
    for _ in range(4):
        move = steady_move(game)
        apply_text(game, move)
        await race.bob.move(move)
    deal = spectator_view(fresh("canfield", SEED))
    # Mallory's node (on Redis) heard no board of the race: it keeps those of now, and
    # from now on those it hears.
    joined = await race.mallory.join(room["code"], role="spectator")
    assert joined["boards"][bob] == deal
    await events_until(race.bob, lambda e: e["type"] == "members" and len(e["members"]) == 3)
    move = steady_move(game)
    apply_text(game, move)
    await race.bob.move(move)
    await events_until(race.mallory, progress_of(bob, game.moves))
    assert (await race.mallory.sync())["boards"][bob] == deal
    clock.now += DELAY
    # Late, and not even then: Bob's draws brought up cards Alice (who makes no move) has
    # face down, and a board showing them, even face down where they lie, would tell
    # her what they are. The deal shows until she has had them all face up.
    assert cards(spectator_view(game)) - cards(deal)
    assert (await race.mallory.sync())["boards"][bob] == deal
    await race.alice.resign()
    await race.bob.resign()


async def test_the_host_changes_the_setting_in_the_lobby_and_everyone_hears(
    race: Race,
) -> None:
    room = await race.alice.create_room("canfield", countdown=0)
    assert room["settings"]["spectators"] == "after"  # a link may reach strangers
    assert room["settings"]["spectator_delay"] == 30
    await race.bob.join(room["code"])
    await race.mallory.join(room["code"], role="spectator")
    await race.alice.set_settings("delayed", 45)
    for client in (race.alice, race.bob, race.mallory):
        heard = await events_until(
            client, lambda e: e["type"] == "members" and e["settings"]["spectators"] == "delayed"
        )
        assert heard[-1]["settings"]["spectator_delay"] == 45
    assert (await race.bob.sync())["settings"]["spectators"] == "delayed"

    # After a race, before the next, it may change again.
    await race.alice.start()
    await race.alice.resign()
    await race.bob.resign()
    await events_until(race.alice, of_type("race_over"))
    await race.alice.set_settings("live")
    snapshot = await race.mallory.sync()
    assert snapshot["state"] == "finished" and snapshot["settings"]["spectators"] == "live"
    assert snapshot["settings"]["spectator_delay"] == 45


async def test_turning_spectators_off_puts_them_out_and_tells_them_why(race: Race) -> None:
    room = await race.alice.create_room("canfield", countdown=0, spectators="live")
    await race.bob.join(room["code"])
    await race.mallory.join(room["code"], role="spectator")
    await race.alice.set_settings("off")
    told = (await events_until(race.mallory, lambda e: e["type"] == "members" and "removed" in e))[
        -1
    ]
    assert told["removed"] == {race.mallory.player_id: "spectators_off"}
    assert told["settings"]["spectators"] == "off"
    assert race.mallory.player_id not in {m["player_id"] for m in told["members"]}
    assert race.mallory.room is None
    heard = (await events_until(race.bob, lambda e: e["type"] == "members" and "removed" in e))[-1]
    assert [m["name"] for m in heard["members"]] == ["alice", "bob"]
    with pytest.raises(Exception, match="not_in_room"):
        await race.mallory.sync()
    with pytest.raises(Exception, match="spectators_not_allowed"):
        await race.mallory.join(room["code"], role="spectator")
    # Turned on again, the room takes spectators again.
    await race.alice.set_settings("after")
    assert (await race.mallory.join(room["code"], role="spectator"))["you"]["role"] == "spectator"


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_spectator_put_out_while_another_node_reads_the_room_is_still_told_why(
    race: Race, nodes: list[RunningServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mallory watches from the second node. That node is still fanning out an earlier
    members event (Carol's join) when Alice turns spectators off: the record it reads is
    already the later one, without Mallory. She stays until the event that puts her out
    comes, and hears why; dropped at once, she heard nothing (the node let go of the
    room's channel before that event came)."""
    watcher = nodes[1].node
    room = await race.alice.create_room("canfield", countdown=0, spectators="live")
    await race.mallory.join(room["code"], role="spectator")
    async with asyncio.timeout(TIMEOUT):  # the second node has fanned out her join
        while watcher.held[room["code"]].members_at == -math.inf:
            await asyncio.sleep(0.01)
    real = watcher.backend.load_room
    holding = asyncio.Event()
    entered = asyncio.Event()
    release = asyncio.Event()

    async def held_back(code: str) -> Any:
        if holding.is_set():
            entered.set()
            await release.wait()
        return await real(code)

    monkeypatch.setattr(watcher.backend, "load_room", held_back)
    holding.set()
    carol = Client(nodes[0].url, name="carol", request_timeout=TIMEOUT)
    await carol.connect()
    try:
        await carol.join(room["code"])  # the second node reads the room for this event...
        async with asyncio.timeout(TIMEOUT):
            await entered.wait()
        await race.alice.set_settings("off")  # ...and gets the record after this change
        held = watcher.held[room["code"]]
        async with asyncio.timeout(TIMEOUT):
            while not held.events:  # the change's own event has come, behind
                await asyncio.sleep(0.01)
        holding.clear()
        release.set()
        told = await events_until(race.mallory, lambda e: e["type"] == "members" and "removed" in e)
        assert told[-1]["removed"] == {race.mallory.player_id: "spectators_off"}
        assert race.mallory.room is None
    finally:
        await carol.close()


@pytest.mark.parametrize(
    ("who", "fields", "code"),
    [
        ("bob", {"spectators": "live"}, "not_host"),
        ("mallory", {"spectators": "live"}, "not_host"),
        ("alice", {"spectators": "sometimes"}, "bad_settings"),
        ("alice", {"spectators": "delayed", "spectator_delay": 9}, "bad_settings"),
        ("alice", {"spectator_delay": 301}, "bad_settings"),
        ("alice", {}, "bad_settings"),
    ],
)
async def test_set_settings_is_refused_with_a_stable_code(
    race: Race, who: str, fields: dict[str, Any], code: str
) -> None:
    room = await race.alice.create_room("canfield", countdown=0)
    await race.bob.join(room["code"])
    await race.mallory.join(room["code"], role="spectator")
    client = {"alice": race.alice, "bob": race.bob, "mallory": race.mallory}[who]
    with pytest.raises(Exception, match=code):
        await client.set_settings(**fields)
    assert (await race.alice.sync())["settings"]["spectators"] == "after"


async def test_set_settings_during_a_race_is_refused(race: Race) -> None:
    await race.open()
    with pytest.raises(Exception, match="wrong_state"):
        await race.alice.set_settings("live")
    await race.end()


async def test_the_old_boolean_still_makes_a_room(race: Race) -> None:
    on = await race.alice.create_room("canfield", spectators=True)
    assert on["settings"]["spectators"] == "after"
    await race.alice.leave()
    off = await race.bob.create_room("canfield", spectators=False)
    assert off["settings"]["spectators"] == "off"
    with pytest.raises(Exception, match="spectators_not_allowed"):
        await race.mallory.join(off["code"], role="spectator")
    with pytest.raises(Exception, match="bad_settings"):
        await race.alice.create_room("canfield", spectators="sometimes")


async def test_an_operator_may_choose_another_default(start_server: ServerFactory) -> None:
    server = await start_server(spectators_default="delayed")
    async with Client(server.url, name="ann", request_timeout=TIMEOUT) as ann:
        room = await ann.create_room("canfield", spectators=True)
        assert room["settings"]["spectators"] == "delayed"


async def test_no_one_watches_a_daily_attempt(race: Race, nodes: list[RunningServer]) -> None:
    # Whatever its record says, a daily attempt's room takes no spectator: not even one
    # made with a setting that would (none is, but no path may depend on it).
    from solrace.server.room import Settings, SpectatorMode

    node = nodes[0].node
    assert race.alice.player_id is not None
    settings = Settings("canfield", 1, SpectatorMode.LIVE, daily="2026-11-30", attempt=1)
    made = await node.commands.store_new_room(settings, race.alice.player_id, "alice")
    assert made.room is not None
    code = made.room.code
    with pytest.raises(Exception, match="spectators_not_allowed"):
        await race.mallory.join(code, role="spectator")
    with pytest.raises(Exception, match="room_full"):
        await race.bob.join(code)


async def test_a_spectator_put_out_is_told_even_when_members_events_are_folded(
    start_server: ServerFactory,
) -> None:
    # Members events go out at most every members_interval_s: the one that puts the
    # spectator out may be folded into a later one, which still names it.
    server = await start_server(budgets=replace(LOOSE_BUDGETS, members_interval_s=0.5))
    async with (
        Client(server.url, name="host", request_timeout=TIMEOUT) as host,
        Client(server.url, name="sue", request_timeout=TIMEOUT) as sue,
    ):
        room = await host.create_room("canfield", spectators="live")
        await sue.join(room["code"], role="spectator")
        await host.set_settings("off")
        await host.set_settings("after")  # folded behind the one that put Sue out
        told = await events_until(sue, lambda e: e["type"] == "members" and "removed" in e)
        assert told[-1]["removed"] == {sue.player_id: "spectators_off"}
        assert sue.room is None
        back = await events_until(host, lambda e: e["settings"]["spectators"] == "after")
        assert "sue" not in {m["name"] for m in back[-1]["members"]}
