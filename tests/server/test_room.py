"""The room and race state machine, without sockets: commands in, records and events out."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

import msgpack
import pytest

from solrace.engine import new_game
from solrace.protocol import (
    Countdown,
    ErrorCode,
    Members,
    Progress,
    ProtocolError,
    RaceOver,
    RaceStarted,
)
from solrace.server import room as rooms
from solrace.server.room import (
    TRANSITIONS,
    Outcome,
    PlayerRace,
    Role,
    Room,
    RoomState,
    Settings,
    next_deadline,
    places,
    ranked_results,
)

T0 = 1_000_000
SEED = 0xDEC0DE
# Undo off: a stuck player's game is over at once (with undo, see the tests of stuck games).
SETTINGS = Settings("canfield", max_players=4, countdown=3, time_limit=60, undo=False)
MAX_SPECTATORS = 4


# -- helpers ------------------------------------------------------------------------------


def step(room: Room | None, outcome: Outcome) -> Room:
    """Check that ``outcome`` numbers its events from ``room``'s next seq; return the record."""
    first = (room.seq if room is not None else 0) + 1
    assert [e.seq for e in outcome.events] == list(range(first, first + len(outcome.events)))
    assert outcome.room is not None
    assert outcome.room.seq == first + len(outcome.events) - 1
    return outcome.room


def types(outcome: Outcome) -> list[str]:
    """The types of an outcome's events, in order."""
    return [e.type for e in outcome.events]


def refused(code: ErrorCode, action: Callable[[], object]) -> None:
    """Check that ``action`` raises ProtocolError with ``code``."""
    with pytest.raises(ProtocolError) as caught:
        action()
    assert caught.value.code is code


def lobby(*players: str, spectators: tuple[str, ...] = (), settings: Settings = SETTINGS) -> Room:
    """A room in the lobby: the first player is the host; the rest join in order."""
    host, *others = players
    room = step(None, rooms.create("ROOM", settings, host, host.title()))
    for name in others:
        room = step(room, rooms.join(room, name, name.title(), Role.PLAYER, max_spectators=4))
    for name in spectators:
        room = step(room, rooms.join(room, name, name.title(), Role.SPECTATOR, max_spectators=4))
    return room


def counting(*players: str, spectators: tuple[str, ...] = (), **settings: Any) -> Room:
    """A room in its countdown, started by its host at T0."""
    room = lobby(*players, spectators=spectators, settings=replace(SETTINGS, **settings))
    return step(room, rooms.start(room, players[0], T0, SEED))


def racing(*players: str, spectators: tuple[str, ...] = (), **settings: Any) -> Room:
    """A room whose race began at T0 (a zero countdown)."""
    settings.setdefault("countdown", 0)
    room = counting(*players, spectators=spectators, **settings)
    assert room.state is RoomState.RACING
    return room


def finished(*players: str, spectators: tuple[str, ...] = ()) -> Room:
    """A room whose race ended with every player resigning, in order."""
    room = racing(*players, spectators=spectators)
    for i, player in enumerate(players):
        room = step(room, rooms.progress(room, player, now_ms=T0 + i, status="resigned"))
    assert room.state is RoomState.FINISHED
    return room


# -- the transitions table ----------------------------------------------------------------


def _lobby_start() -> tuple[Room, Outcome]:
    room = lobby("ann", "bob")
    return room, rooms.start(room, "ann", T0, SEED)


def _countdown_over() -> tuple[Room, Outcome]:
    room = counting("ann", "bob")
    assert room.starts_ms is not None
    return room, rooms.tick(room, room.starts_ms)


def _countdown_no_players() -> tuple[Room, Outcome]:
    room = counting("ann", spectators=("sue",))
    return room, rooms.leave(room, "ann", T0 + 1)


def _racing_all_done() -> tuple[Room, Outcome]:
    room = racing("ann", "bob")
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 5, status="won", banked=52))
    return room, rooms.progress(room, "bob", now_ms=T0 + 9, status="stuck")


def _racing_time_up() -> tuple[Room, Outcome]:
    room = racing("ann", "bob")
    assert room.deadline_ms is not None
    return room, rooms.tick(room, room.deadline_ms)


def _finished_rematch() -> tuple[Room, Outcome]:
    room = finished("ann", "bob")
    return room, rooms.rematch(room, "bob")


DRIVERS: dict[tuple[RoomState, str], Callable[[], tuple[Room, Outcome]]] = {
    (RoomState.LOBBY, "start"): _lobby_start,
    (RoomState.COUNTDOWN, "countdown_over"): _countdown_over,
    (RoomState.COUNTDOWN, "no_players"): _countdown_no_players,
    (RoomState.RACING, "all_done"): _racing_all_done,
    (RoomState.RACING, "time_up"): _racing_time_up,
    (RoomState.FINISHED, "rematch"): _finished_rematch,
}


def test_every_transition_has_a_test() -> None:
    assert set(DRIVERS) == set(TRANSITIONS)


@pytest.mark.parametrize("transition", list(TRANSITIONS), ids=lambda t: f"{t[0].value}-{t[1]}")
def test_transition(transition: tuple[RoomState, str]) -> None:
    before, outcome = DRIVERS[transition]()
    assert before.state is transition[0]
    after = step(before, outcome)
    assert after.state is TRANSITIONS[transition]


def test_the_module_documents_every_transition() -> None:
    doc = rooms.__doc__ or ""
    rows = [line.split() for line in doc.splitlines() if line and not line.startswith("=")]
    pairs = {(row[0], row[-1]) for row in rows if row}
    for (source, _), target in TRANSITIONS.items():
        assert (source.value, target.value) in pairs


@pytest.mark.parametrize(
    ("make", "action"),
    [
        (lambda: counting("ann", "bob"), lambda r: rooms.start(r, "ann", T0, SEED)),
        (lambda: racing("ann", "bob"), lambda r: rooms.start(r, "ann", T0, SEED)),
        (lambda: finished("ann", "bob"), lambda r: rooms.start(r, "ann", T0, SEED)),
        (lambda: counting("ann", "bob"), lambda r: rooms.set_ready(r, "bob", True, T0, SEED)),
        (lambda: racing("ann", "bob"), lambda r: rooms.set_ready(r, "bob", True, T0, SEED)),
        (lambda: lobby("ann", "bob"), lambda r: rooms.rematch(r, "ann")),
        (lambda: racing("ann", "bob"), lambda r: rooms.rematch(r, "ann")),
    ],
)
def test_commands_out_of_their_state_are_refused(
    make: Callable[[], Room], action: Callable[[Room], Outcome]
) -> None:
    room = make()
    refused(ErrorCode.WRONG_STATE, lambda: action(room))


# -- create, join, leave ------------------------------------------------------------------


def test_create_makes_the_creator_host_and_first_player() -> None:
    outcome = rooms.create("ROOM", SETTINGS, "ann", "Ann")
    room = step(None, outcome)
    assert room.state is RoomState.LOBBY and room.host == "ann" and room.race == 0
    assert room.role_of("ann") is Role.PLAYER
    (event,) = outcome.events
    assert isinstance(event, Members)
    assert event.to_wire() == {
        "type": "members",
        "room": "ROOM",
        "seq": 1,
        "state": "lobby",
        "host": "ann",
        "members": [
            {"player_id": "ann", "name": "Ann", "role": "player", "ready": False, "connected": True}
        ],
        "settings": SETTINGS.to_wire(),
    }


def test_join_adds_players_and_spectators_in_order() -> None:
    room = lobby("ann", "bob", spectators=("sue",))
    assert list(room.members) == ["ann", "bob", "sue"]
    assert room.player_ids() == ["ann", "bob"]
    assert room.role_of("sue") is Role.SPECTATOR and room.role_of("zed") is None
    assert room.host == "ann"


def test_joining_again_in_the_same_role_reconnects() -> None:
    room = lobby("ann", "bob")
    same = rooms.join(room, "bob", "Bob", Role.PLAYER, max_spectators=MAX_SPECTATORS)
    assert same.room is not None and same.events == ()  # nothing others see changed
    assert same.room.members["bob"].link == room.members["bob"].link + 1  # a newer connection
    assert replace(same.room.members["bob"], link=0) == replace(room.members["bob"], link=0)
    room = step(room, rooms.set_connected(room, "bob", False, T0))
    back = rooms.join(room, "bob", "Bob", Role.PLAYER, max_spectators=MAX_SPECTATORS)
    room = step(room, back)
    assert room.members["bob"].connected and room.members["bob"].left_ms is None
    assert types(back) == ["members"]


def test_joining_in_another_role_is_refused() -> None:
    room = lobby("ann", "bob")
    refused(
        ErrorCode.ALREADY_IN_ROOM,
        lambda: rooms.join(room, "bob", "Bob", Role.SPECTATOR, max_spectators=MAX_SPECTATORS),
    )


@pytest.mark.parametrize("make", [lambda: counting("ann"), lambda: racing("ann")])
def test_a_player_cannot_join_a_race_under_way_but_a_spectator_can(
    make: Callable[[], Room],
) -> None:
    room = make()
    refused(
        ErrorCode.WRONG_STATE,
        lambda: rooms.join(room, "bob", "Bob", Role.PLAYER, max_spectators=MAX_SPECTATORS),
    )
    watched = step(
        room, rooms.join(room, "sue", "Sue", Role.SPECTATOR, max_spectators=MAX_SPECTATORS)
    )
    assert watched.role_of("sue") is Role.SPECTATOR and watched.state is room.state
    assert "sue" not in watched.players


def test_a_player_may_join_after_a_race() -> None:
    room = finished("ann")
    room = step(room, rooms.join(room, "bob", "Bob", Role.PLAYER, max_spectators=MAX_SPECTATORS))
    assert room.player_ids() == ["ann", "bob"]


def test_a_full_room_refuses_players_and_spectators() -> None:
    room = lobby("ann", "bob", settings=replace(SETTINGS, max_players=2))
    refused(
        ErrorCode.ROOM_FULL,
        lambda: rooms.join(room, "cat", "Cat", Role.PLAYER, max_spectators=MAX_SPECTATORS),
    )
    room = step(room, rooms.join(room, "sue", "Sue", Role.SPECTATOR, max_spectators=1))
    refused(
        ErrorCode.ROOM_FULL,
        lambda: rooms.join(room, "sam", "Sam", Role.SPECTATOR, max_spectators=1),
    )


def test_a_room_without_spectators_refuses_them() -> None:
    room = lobby("ann", settings=replace(SETTINGS, spectators=False))
    refused(
        ErrorCode.SPECTATORS_NOT_ALLOWED,
        lambda: rooms.join(room, "sue", "Sue", Role.SPECTATOR, max_spectators=MAX_SPECTATORS),
    )


def test_the_host_role_passes_to_the_next_player() -> None:
    room = lobby("ann", "bob", "cat", spectators=("sue",))
    outcome = rooms.leave(room, "ann", T0)
    room = step(room, outcome)
    assert room.host == "bob" and "ann" not in room.members
    assert types(outcome) == ["members"]
    assert isinstance(outcome.events[0], Members) and outcome.events[0].host == "bob"


def test_the_host_role_prefers_a_connected_player() -> None:
    room = lobby("ann", "bob", "cat")
    room = step(room, rooms.set_connected(room, "bob", False, T0))
    room = step(room, rooms.leave(room, "ann", T0))
    assert room.host == "cat"


def test_a_non_host_leaving_keeps_the_host() -> None:
    room = lobby("ann", "bob")
    room = step(room, rooms.leave(room, "bob", T0))
    assert room.host == "ann" and room.player_ids() == ["ann"]


def test_spectators_never_host_and_a_new_player_takes_the_empty_seat() -> None:
    room = lobby("ann", spectators=("sue",))
    room = step(room, rooms.leave(room, "ann", T0))
    assert room.host is None and list(room.members) == ["sue"]
    refused(ErrorCode.NOT_HOST, lambda: rooms.start(room, "sue", T0, SEED))
    room = step(room, rooms.join(room, "bob", "Bob", Role.PLAYER, max_spectators=MAX_SPECTATORS))
    assert room.host == "bob"


def test_the_last_member_leaving_deletes_the_room() -> None:
    room = lobby("ann", spectators=("sue",))
    room = step(room, rooms.leave(room, "sue", T0))
    outcome = rooms.leave(room, "ann", T0)
    assert outcome.room is None and outcome.events == ()


def test_leaving_a_room_one_is_not_in_is_refused() -> None:
    room = lobby("ann")
    refused(ErrorCode.NOT_IN_ROOM, lambda: rooms.leave(room, "bob", T0))


def test_a_player_leaving_a_race_resigns() -> None:
    room = racing("ann", "bob", "cat")
    outcome = rooms.leave(room, "bob", T0 + 2_000)
    room = step(room, outcome)
    assert types(outcome) == ["progress", "members"]
    assert room.state is RoomState.RACING
    assert room.players["bob"].status == "resigned"
    assert room.players["bob"].finished_ms == 2_000


def test_the_last_racer_leaving_ends_the_race_for_those_who_stay() -> None:
    room = racing("ann", "bob", spectators=("sue",))
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 1, status="resigned"))
    outcome = rooms.leave(room, "bob", T0 + 2)
    room = step(room, outcome)
    assert types(outcome) == ["progress", "race_over", "members"]
    assert room.state is RoomState.FINISHED
    assert [r["player_id"] for r in room.results] == ["ann", "bob"]


def test_a_player_leaving_in_the_countdown_is_out_of_the_race() -> None:
    room = counting("ann", "bob")
    room = step(room, rooms.leave(room, "bob", T0 + 1))
    assert list(room.players) == ["ann"]
    assert room.starts_ms is not None
    outcome = rooms.tick(room, room.starts_ms)
    room = step(room, outcome)
    started = outcome.events[0]
    assert isinstance(started, RaceStarted)
    assert started.players == [{"player_id": "ann", "name": "Ann"}]
    # the race ends when its one remaining player is done, not at the time limit
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 4000, status="stuck"))
    assert room.state is RoomState.FINISHED


def test_the_last_player_leaving_in_the_countdown_returns_to_the_lobby() -> None:
    room = counting("ann", spectators=("sue",))
    room = step(room, rooms.leave(room, "ann", T0 + 1))
    assert room.state is RoomState.LOBBY and room.host is None
    assert room.players == {} and room.seed is None
    assert room.starts_ms is None and room.deadline_ms is None
    assert next_deadline(room) is None


# -- getting ready and starting -----------------------------------------------------------


def test_every_player_ready_starts_the_countdown() -> None:
    room = lobby("ann", "bob", "cat", spectators=("sue",))
    for player in ("ann", "bob"):
        outcome = rooms.set_ready(room, player, True, T0, SEED)
        room = step(room, outcome)
        assert types(outcome) == ["members"] and room.state is RoomState.LOBBY
    outcome = rooms.set_ready(room, "cat", True, T0, SEED)
    room = step(room, outcome)
    assert types(outcome) == ["members", "countdown"]
    assert room.state is RoomState.COUNTDOWN and room.seed == SEED and room.race == 1


def test_one_ready_player_alone_does_not_start() -> None:
    room = lobby("ann", spectators=("sue",))
    room = step(room, rooms.set_ready(room, "ann", True, T0, SEED))
    assert room.state is RoomState.LOBBY and room.members["ann"].ready


def test_ready_can_be_taken_back() -> None:
    room = lobby("ann", "bob")
    room = step(room, rooms.set_ready(room, "ann", True, T0, SEED))
    room = step(room, rooms.set_ready(room, "ann", False, T0, SEED))
    room = step(room, rooms.set_ready(room, "bob", True, T0, SEED))
    assert room.state is RoomState.LOBBY
    assert [m.ready for m in room.members.values()] == [False, True]


def test_only_members_who_play_get_ready() -> None:
    room = lobby("ann", "bob", spectators=("sue",))
    refused(ErrorCode.NOT_A_PLAYER, lambda: rooms.set_ready(room, "sue", True, T0, SEED))
    refused(ErrorCode.NOT_IN_ROOM, lambda: rooms.set_ready(room, "zed", True, T0, SEED))


def test_only_the_host_starts() -> None:
    room = lobby("ann", "bob")
    refused(ErrorCode.NOT_HOST, lambda: rooms.start(room, "bob", T0, SEED))
    refused(ErrorCode.NOT_IN_ROOM, lambda: rooms.start(room, "zed", T0, SEED))


def test_starting_deals_and_counts_down() -> None:
    room = lobby("ann", "bob")
    outcome = rooms.start(room, "ann", T0, SEED)
    room = step(room, outcome)
    (event,) = outcome.events
    assert isinstance(event, Countdown) and event.seconds == SETTINGS.countdown
    assert room.state is RoomState.COUNTDOWN and room.race == 1 and room.seed == SEED
    assert room.starts_ms == T0 + SETTINGS.countdown * 1000
    assert room.deadline_ms == room.starts_ms + SETTINGS.time_limit * 1000
    dealt = new_game(SETTINGS.variant, SEED).banked
    assert dealt == 1  # Canfield deals its first foundation card
    assert room.players == {
        "ann": PlayerRace("Ann", banked=dealt),
        "bob": PlayerRace("Bob", banked=dealt),
    }


def test_a_zero_countdown_starts_the_race_at_once() -> None:
    room = lobby("ann", "bob", settings=replace(SETTINGS, countdown=0))
    outcome = rooms.start(room, "ann", T0, SEED)
    room = step(room, outcome)
    assert types(outcome) == ["countdown", "race_started"]
    assert isinstance(outcome.events[0], Countdown) and outcome.events[0].seconds == 0
    assert room.state is RoomState.RACING and room.starts_ms == T0


def test_the_countdown_ends_at_its_time() -> None:
    room = counting("ann", "bob")
    assert room.starts_ms is not None
    early = rooms.tick(room, room.starts_ms - 1)
    assert early.room == room and early.events == ()
    outcome = rooms.tick(room, room.starts_ms)
    room = step(room, outcome)
    assert room.state is RoomState.RACING
    (event,) = outcome.events
    assert isinstance(event, RaceStarted)
    assert event.to_wire() == {
        "type": "race_started",
        "room": "ROOM",
        "seq": room.seq,
        "race": 1,
        "variant": "canfield",
        "time_limit": SETTINGS.time_limit,
        "players": [{"player_id": "ann", "name": "Ann"}, {"player_id": "bob", "name": "Bob"}],
    }


def test_no_event_reveals_the_seed_before_the_race_is_over() -> None:
    room = lobby("ann", "bob", spectators=("sue",))
    events: list[Any] = []
    actions: list[Callable[[Room], Outcome]] = [
        lambda r: rooms.set_ready(r, "ann", True, T0, SEED),
        lambda r: rooms.set_ready(r, "bob", True, T0, SEED),
        lambda r: rooms.tick(r, T0 + SETTINGS.countdown * 1000),
        lambda r: rooms.progress(r, "ann", now_ms=T0 + 4000, banked=2, moves=1),
        lambda r: rooms.progress(r, "ann", now_ms=T0 + 5000, status="resigned"),
    ]
    for action in actions:
        outcome = action(room)
        room = step(room, outcome)
        events.extend(outcome.events)
    assert room.state is RoomState.RACING
    wire = json.dumps([e.to_wire() for e in events])
    assert "seed" not in wire and str(SEED) not in wire
    outcome = rooms.progress(room, "bob", now_ms=T0 + 6000, status="resigned")
    over = outcome.events[-1]
    assert isinstance(over, RaceOver) and over.seed == SEED


# -- progress and the end of a race -------------------------------------------------------


def test_progress_events_are_numbered_one_after_another() -> None:
    room = racing("ann", "bob", spectators=("sue",))
    seqs = []
    for moves in range(1, 6):
        player = "ann" if moves % 2 else "bob"
        outcome = rooms.progress(room, player, now_ms=T0 + moves * 100, moves=moves)
        room = step(room, outcome)
        (event,) = outcome.events
        assert isinstance(event, Progress)
        seqs.append(event.seq)
    assert seqs == list(range(seqs[0], seqs[0] + 5))
    assert room.seq == seqs[-1]


def test_progress_records_the_standing_and_carries_the_view() -> None:
    room = racing("ann", "bob")
    view = {"variant": "canfield", "banked": 3}
    outcome = rooms.progress(room, "ann", now_ms=T0 + 1500, banked=3, moves=4, view=view)
    room = step(room, outcome)
    (event,) = outcome.events
    assert isinstance(event, Progress)
    assert event.to_wire() == {
        "type": "progress",
        "room": "ROOM",
        "seq": room.seq,
        "players": [
            {
                "player_id": "ann",
                "banked": 3,
                "moves": 4,
                "status": "playing",
                "elapsed_ms": 1500,
                "view": view,
            }
        ],
    }
    assert room.players["ann"] == PlayerRace(
        "Ann", banked=3, moves=4, elapsed_ms=1500, banked_at_ms=1500
    )
    without = rooms.progress(room, "ann", now_ms=T0 + 1600, moves=5).events[0].to_wire()
    assert without["players"] == [
        {"player_id": "ann", "banked": 3, "moves": 5, "status": "playing", "elapsed_ms": 1600}
    ]
    assert "view" not in without


def test_standings_of_several_players_make_one_progress_event() -> None:
    room = racing("ann", "bob", "cat")
    seq = room.seq
    view = {"variant": "canfield", "banked": 2}
    outcome = rooms.standings(
        room,
        [
            rooms.Standing("cat", T0 + 1200, "playing", 2, 3, view, T0 + 1100),
            rooms.Standing("ann", T0 + 1500, "playing", 1, 7),  # banked as dealt
        ],
    )
    room = step(room, outcome)
    (event,) = outcome.events
    assert isinstance(event, Progress)
    assert event.seq == room.seq == seq + 1
    # One entry per update, in the updates' order; a view only where one was given.
    assert event.to_wire() == {
        "type": "progress",
        "room": "ROOM",
        "seq": seq + 1,
        "players": [
            {
                "player_id": "cat",
                "banked": 2,
                "moves": 3,
                "status": "playing",
                "elapsed_ms": 1200,
                "view": view,
            },
            {"player_id": "ann", "banked": 1, "moves": 7, "status": "playing", "elapsed_ms": 1500},
        ],
    }
    assert room.players["cat"] == PlayerRace(
        "Cat", banked=2, moves=3, elapsed_ms=1200, banked_at_ms=1100
    )
    assert room.players["ann"] == PlayerRace("Ann", banked=1, moves=7, elapsed_ms=1500)
    assert room.players["bob"] == PlayerRace("Bob", banked=1)
    assert room.state is RoomState.RACING


def test_new_standings_keep_every_other_field_of_the_record() -> None:
    """``Room.progressed`` copies the record field by field: a field it left out would be
    reset to its default by every progress report."""
    room = replace(
        racing("ann", "bob"),
        seed=SEED,
        deadline_ms=T0 + 60_000,
        results=[{"player_id": "ann"}],
        par=42,
    )
    players = {"ann": PlayerRace("Ann", banked=3)}
    new = room.progressed(players, room.seq + 1, T0 + 5_000)
    changed = {"players": players, "seq": room.seq + 1, "deadline_ms": T0 + 5_000}
    for field in fields(Room):  # each set here to a value other than its default
        assert getattr(room, field.name) != field.default, field.name
        assert getattr(new, field.name) == changed.get(field.name, getattr(room, field.name))
    assert new == replace(room, **changed)


def test_standings_leave_out_a_player_whose_game_is_over() -> None:
    room = racing("ann", "bob", "cat", spectators=("sue",))
    room = step(room, rooms.progress(room, "bob", now_ms=T0 + 100, status="resigned", moves=2))
    resigned = room.players["bob"]
    outcome = rooms.standings(
        room,
        [
            rooms.Standing("bob", T0 + 900, "playing", 5, 9),  # waited while bob resigned
            rooms.Standing("ann", T0 + 1000, "playing", 1, 4),
            rooms.Standing("sue", T0 + 1000, "playing", 1, 1),  # a spectator: not racing
        ],
    )
    room = step(room, outcome)
    (event,) = outcome.events
    assert isinstance(event, Progress)
    assert [(p["player_id"], p["moves"]) for p in event.players] == [("ann", 4)]
    assert room.players["bob"] == resigned and "sue" not in room.players
    # Nothing to tell at all: no event, and the record stays as it was.
    nothing = rooms.standings(room, [rooms.Standing("bob", T0 + 2000, "playing", 6, 10)])
    assert nothing.events == () and nothing.room == room
    assert rooms.standings(room, []).events == ()


def test_standings_end_the_race_when_the_last_players_are_done() -> None:
    room = racing("ann", "bob", "cat")
    room = step(room, rooms.progress(room, "bob", now_ms=T0 + 1000, status="resigned"))
    # One update finishing one game while another goes on does not end the race.
    still = rooms.standings(
        room,
        [
            rooms.Standing("ann", T0 + 2000, "playing", 3, 10),
            rooms.Standing("cat", T0 + 2000, "stuck", 4, 12),
        ],
    )
    assert types(still) == ["progress"]
    assert still.room is not None and still.room.state is RoomState.RACING
    # The update that makes every player done ends it, after its progress event.
    outcome = rooms.standings(
        room,
        [
            rooms.Standing("cat", T0 + 8000, "stuck", 20, 50),
            rooms.Standing("ann", T0 + 9000, "won", 52, 80),
        ],
    )
    room = step(room, outcome)
    assert types(outcome) == ["progress", "race_over"]
    progress, over = outcome.events
    assert isinstance(progress, Progress) and isinstance(over, RaceOver)
    assert [(p["player_id"], p["status"]) for p in progress.players] == [
        ("cat", "stuck"),
        ("ann", "won"),
    ]
    assert room.state is RoomState.FINISHED
    assert [(r["rank"], r["player_id"], r["status"], r["time_ms"]) for r in over.results] == [
        (1, "ann", "won", 9000),
        (2, "cat", "stuck", 8000),
        (3, "bob", "resigned", 1000),
    ]


def test_standings_need_a_running_race() -> None:
    update = [rooms.Standing("ann", T0, "playing", 0, 1)]
    refused(ErrorCode.RACE_NOT_STARTED, lambda: rooms.standings(lobby("ann", "bob"), update))
    refused(ErrorCode.RACE_NOT_STARTED, lambda: rooms.standings(counting("ann", "bob"), update))
    over = finished("ann", "bob")
    refused(ErrorCode.RACE_NOT_STARTED, lambda: rooms.standings(over, update))


def test_banked_at_moves_only_when_the_banked_count_changes() -> None:
    room = racing("ann", "bob")
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 1000, banked=5, moves=1))
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 2000, banked=5, moves=2))
    assert room.players["ann"].banked_at_ms == 1000
    assert room.players["ann"].elapsed_ms == 2000
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 3000, banked=4, moves=3))
    assert room.players["ann"].banked_at_ms == 3000


def test_progress_needs_a_running_race_of_ones_own() -> None:
    room = lobby("ann", "bob")
    refused(ErrorCode.RACE_NOT_STARTED, lambda: rooms.progress(room, "ann", now_ms=T0))
    room = counting("ann", "bob")
    refused(ErrorCode.RACE_NOT_STARTED, lambda: rooms.progress(room, "ann", now_ms=T0))
    room = racing("ann", "bob", spectators=("sue",))
    refused(ErrorCode.RACE_NOT_STARTED, lambda: rooms.progress(room, "sue", now_ms=T0))
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 1, status="resigned"))
    refused(ErrorCode.GAME_OVER, lambda: rooms.progress(room, "ann", now_ms=T0 + 2, moves=3))


def test_the_race_ends_when_every_player_is_done() -> None:
    room = racing("ann", "bob", "cat")
    room = step(room, rooms.progress(room, "bob", now_ms=T0 + 1000, status="resigned"))
    room = step(
        room, rooms.progress(room, "ann", now_ms=T0 + 9000, banked=52, moves=80, status="won")
    )
    assert room.state is RoomState.RACING
    outcome = rooms.progress(room, "cat", now_ms=T0 + 12000, banked=20, moves=50, status="stuck")
    room = step(room, outcome)
    assert types(outcome) == ["progress", "race_over"]
    over = outcome.events[-1]
    assert isinstance(over, RaceOver)
    assert (over.race, over.variant, over.seed) == (1, "canfield", SEED)
    assert over.results == room.results
    assert [(r["rank"], r["player_id"], r["status"]) for r in over.results] == [
        (1, "ann", "won"),
        (2, "cat", "stuck"),
        (3, "bob", "resigned"),
    ]
    assert over.results[0] == {
        "rank": 1,
        "player_id": "ann",
        "name": "Ann",
        "status": "won",
        "banked": 52,
        "moves": 80,
        "time_ms": 9000,
    }
    assert room.state is RoomState.FINISHED and next_deadline(room) is None


def test_the_race_ends_at_its_time_limit() -> None:
    room = racing("ann", "bob", "cat")
    room = step(
        room, rooms.progress(room, "ann", now_ms=T0 + 5000, banked=52, moves=70, status="won")
    )
    room = step(room, rooms.progress(room, "bob", now_ms=T0 + 6000, banked=9, moves=10))
    assert room.deadline_ms == T0 + SETTINGS.time_limit * 1000
    assert next_deadline(room) == room.deadline_ms
    not_yet = rooms.tick(room, room.deadline_ms - 1)
    assert not_yet.room == room and not_yet.events == ()
    outcome = rooms.tick(room, room.deadline_ms)
    room = step(room, outcome)
    assert types(outcome) == ["race_over"]
    assert room.state is RoomState.FINISHED
    by_id = {r["player_id"]: r for r in room.results}
    assert by_id["ann"]["status"] == "won" and by_id["ann"]["time_ms"] == 5000
    for player in ("bob", "cat"):
        assert by_id[player]["status"] == "out_of_time"
        assert by_id[player]["time_ms"] == SETTINGS.time_limit * 1000
    assert [r["player_id"] for r in room.results] == ["ann", "bob", "cat"]


# -- ranking ------------------------------------------------------------------------------


def test_winners_rank_by_time_then_the_rest_by_banked_then_by_when() -> None:
    players = {
        "slow_winner": PlayerRace("A", 52, 90, "won", 9000, 9000, 9000),
        "few_early": PlayerRace("B", 10, 30, "stuck", 2000, 1000, 2000),
        "many_late": PlayerRace("C", 30, 60, "resigned", 8000, 7000, 8000),
        "fast_winner": PlayerRace("D", 52, 80, "won", 5000, 5000, 5000),
        "few_late": PlayerRace("E", 10, 40, "out_of_time", 60000, 3000, None),
        "many_early": PlayerRace("F", 30, 50, "out_of_time", 60000, 4000, None),
    }
    results = ranked_results(players)
    assert [r["player_id"] for r in results] == [
        "fast_winner",
        "slow_winner",
        "many_early",
        "many_late",
        "few_early",
        "few_late",
    ]
    assert [r["rank"] for r in results] == [1, 2, 3, 4, 5, 6]
    times = {r["player_id"]: r["time_ms"] for r in results}
    assert times["few_late"] == 60000  # not finished by themselves: the race's time
    assert times["many_late"] == 8000


def test_winners_in_the_same_time_rank_by_moves_and_exact_ties_are_level() -> None:
    players = {
        "bob": PlayerRace("B", 52, 80, "won", 5000, 5000, 5000),
        "ann": PlayerRace("A", 52, 70, "won", 5000, 5000, 5000),
        "eve": PlayerRace("E", 52, 80, "won", 5000, 5000, 5000),
        "cat": PlayerRace("C", 7, 9, "stuck", 100, 50, 100),
        "dan": PlayerRace("D", 7, 9, "stuck", 200, 50, 200),
    }
    results = ranked_results(players)
    # Listed in the joining order where level, but sharing the rank: no one is placed
    # above another for having joined first.
    assert [r["player_id"] for r in results] == ["ann", "bob", "eve", "cat", "dan"]
    assert [r["rank"] for r in results] == [1, 2, 2, 4, 4]


def test_wins_level_in_time_and_moves_share_a_place() -> None:
    room = Room(
        "ABCD",
        SETTINGS,
        players={
            "bob": PlayerRace("B", 52, 80, "won", 5000, 5000, 5000),
            "ann": PlayerRace("A", 52, 70, "won", 5000, 5000, 5000),
            "eve": PlayerRace("E", 52, 80, "won", 5000, 5000, 5000),
            "cat": PlayerRace("C", 52, 80, "won", 6000, 6000, 6000),
        },
    )
    assert places(room) == {"ann": 1, "bob": 2, "eve": 2, "cat": 4}


def test_a_winner_outranks_everyone_else_whatever_the_time() -> None:
    players = {
        "quick": PlayerRace("Q", 40, 30, "resigned", 100, 90, 100),
        "late": PlayerRace("L", 52, 300, "won", 59000, 59000, 59000),
    }
    assert [r["player_id"] for r in ranked_results(players)] == ["late", "quick"]


# -- rematch ------------------------------------------------------------------------------


def test_rematch_returns_to_the_lobby_for_a_new_race() -> None:
    room = finished("ann", "bob", spectators=("sue",))
    outcome = rooms.rematch(room, "bob")
    room = step(room, outcome)
    assert types(outcome) == ["members"]
    assert room.state is RoomState.LOBBY
    assert {p: m.ready for p, m in room.members.items()} == {
        "ann": False,
        "bob": True,
        "sue": False,
    }
    assert room.players == {} and room.results == [] and room.seed is None
    assert room.starts_ms is None and room.deadline_ms is None
    assert room.race == 1
    room = step(room, rooms.set_ready(room, "ann", True, T0 + 10, SEED + 1))
    assert room.state is RoomState.RACING  # these rooms count down from zero
    assert room.race == 2 and room.seed == SEED + 1


def test_rematch_is_for_players_of_the_room() -> None:
    room = finished("ann", "bob", spectators=("sue",))
    refused(ErrorCode.NOT_A_PLAYER, lambda: rooms.rematch(room, "sue"))
    refused(ErrorCode.NOT_IN_ROOM, lambda: rooms.rematch(room, "zed"))


# -- connections and the grace period -----------------------------------------------------

GRACE = 30_000


def test_set_connected_marks_the_member_and_says_so_once() -> None:
    room = lobby("ann", "bob")
    outcome = rooms.set_connected(room, "bob", False, T0)
    room = step(room, outcome)
    assert types(outcome) == ["members"]
    assert room.members["bob"].connected is False and room.members["bob"].left_ms == T0
    again = rooms.set_connected(room, "bob", False, T0 + 5)
    assert again.room == room and again.events == ()
    refused(ErrorCode.NOT_IN_ROOM, lambda: rooms.set_connected(room, "zed", False, T0))


def test_a_member_dropped_past_the_grace_period_leaves() -> None:
    room = lobby("ann", "bob", spectators=("sue",))
    room = step(room, rooms.set_connected(room, "bob", False, T0))
    room = step(room, rooms.set_connected(room, "sue", False, T0 + 1000))
    assert next_deadline(room, GRACE) == T0 + GRACE
    assert next_deadline(room) is None
    assert rooms.tick(room, T0 + GRACE - 1, GRACE).events == ()
    assert rooms.tick(room, T0 + 10 * GRACE).events == ()  # no grace given: nobody leaves
    outcome = rooms.tick(room, T0 + GRACE, GRACE)
    room = step(room, outcome)
    assert list(room.members) == ["ann", "sue"]
    assert next_deadline(room, GRACE) == T0 + 1000 + GRACE
    room = step(room, rooms.tick(room, T0 + 1000 + GRACE, GRACE))
    assert list(room.members) == ["ann"]


def test_a_member_back_in_time_is_not_dropped() -> None:
    room = lobby("ann", "bob")
    room = step(room, rooms.set_connected(room, "bob", False, T0))
    room = step(room, rooms.set_connected(room, "bob", True, T0 + 10))
    outcome = rooms.tick(room, T0 + GRACE, GRACE)
    assert outcome.events == () and "bob" in outcome.room.members  # type: ignore[union-attr]


def test_a_racing_player_dropped_past_the_grace_period_resigns() -> None:
    room = racing("ann", "bob")
    room = step(room, rooms.set_connected(room, "bob", False, T0 + 1000))
    outcome = rooms.tick(room, T0 + 1000 + GRACE, GRACE)
    room = step(room, outcome)
    assert types(outcome) == ["progress", "members"]
    assert room.players["bob"].status == "resigned" and "bob" not in room.members
    assert room.state is RoomState.RACING


def test_the_last_racer_dropping_ends_the_race() -> None:
    room = racing("ann", "bob")
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 10, status="stuck"))
    room = step(room, rooms.set_connected(room, "bob", False, T0 + 1000))
    outcome = rooms.tick(room, T0 + 1000 + GRACE, GRACE)
    room = step(room, outcome)
    assert types(outcome) == ["progress", "race_over", "members"]
    assert room.state is RoomState.FINISHED


def test_everyone_dropped_deletes_the_room() -> None:
    room = lobby("ann", "bob")
    room = step(room, rooms.set_connected(room, "ann", False, T0))
    room = step(room, rooms.set_connected(room, "bob", False, T0))
    outcome = rooms.tick(room, T0 + GRACE, GRACE)
    assert outcome.room is None


def test_a_late_tick_ends_the_race_before_dropping_anyone() -> None:
    room = racing("ann", "bob")
    room = step(room, rooms.set_connected(room, "bob", False, T0 + 1000))
    assert room.deadline_ms is not None
    outcome = rooms.tick(room, room.deadline_ms + GRACE, GRACE)
    room = step(room, outcome)
    assert types(outcome) == ["race_over", "members"]
    assert {r["status"] for r in room.results} == {"out_of_time"}
    assert all(r["time_ms"] <= SETTINGS.time_limit * 1000 for r in room.results)
    assert "bob" not in room.members


def test_next_deadline_follows_the_state() -> None:
    assert next_deadline(lobby("ann")) is None
    room = counting("ann")
    assert next_deadline(room) == room.starts_ms == T0 + 3000
    room = step(room, rooms.set_connected(room, "ann", False, T0 + 100))
    assert next_deadline(room, grace_ms=100) == T0 + 200
    assert next_deadline(room, grace_ms=GRACE) == T0 + 3000
    room = racing("ann")
    assert next_deadline(room) == room.deadline_ms
    assert next_deadline(finished("ann")) is None


# -- the stored record --------------------------------------------------------------------


def _records() -> list[Room]:
    race = racing("ann", "bob", spectators=("sue",))
    race = step(race, rooms.progress(race, "ann", now_ms=T0 + 700, banked=4, moves=3))
    race = step(race, rooms.set_connected(race, "bob", False, T0 + 800))
    return [
        lobby("ann"),
        lobby("ann", "bob", spectators=("sue",)),
        counting("ann", "bob"),
        race,
        finished("ann", "bob", spectators=("sue",)),
    ]


@pytest.mark.parametrize("room", _records(), ids=lambda r: r.state.value)
def test_the_record_round_trips_through_plain_data(room: Room) -> None:
    data = room.to_dict()
    assert Room.from_dict(data) == room
    assert Room.from_dict(json.loads(json.dumps(data))) == room
    assert Room.from_dict(msgpack.unpackb(msgpack.packb(data), raw=False)) == room


def test_a_member_back_under_a_new_name_is_shown_under_it() -> None:
    room = racing("alice", "bob")
    gone = rooms.set_connected(room, "alice", False, 10)
    assert gone.room is not None
    back = rooms.set_connected(gone.room, "alice", True, 20, "Alicia")
    assert back.room is not None
    assert back.room.members["alice"].name == "Alicia"
    assert back.room.players["alice"].name == "Alicia"
    assert back.events and back.events[0].members[0]["name"] == "Alicia"
    same = rooms.set_connected(back.room, "alice", True, 30, "Alicia")
    assert same.events == () and same.room is not None  # nothing others see changed
    assert same.room.members["alice"].link == back.room.members["alice"].link + 1


def test_a_deal_stuck_before_the_first_move_ends_the_race_at_its_start() -> None:
    # Canfield seed 98: nothing that a turn of the stock brings up fits anywhere.
    assert new_game("canfield", 98).status.value == "stuck"
    room = lobby("alice", "bob", settings=replace(SETTINGS, variant="canfield", countdown=0))
    out = rooms.start(room, "alice", T0, 98)
    assert [type(e).__name__ for e in out.events] == ["Countdown", "RaceStarted", "RaceOver"]
    assert out.room is not None and out.room.state is RoomState.FINISHED
    assert {r["status"] for r in out.room.results} == {"stuck"}


# -- stuck, with undo allowed -------------------------------------------------------------


def test_with_undo_a_stuck_player_plays_on_until_they_resign() -> None:
    room = racing("ann", "bob", undo=True)
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 1000, banked=9, status="stuck"))
    assert room.state is RoomState.RACING and room.players["ann"].finished_ms is None
    room = step(room, rooms.progress(room, "bob", now_ms=T0 + 2000, status="resigned"))
    assert room.state is RoomState.RACING  # ann may still undo out of it
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 3000, banked=8, status="playing"))
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 4000, status="resigned"))
    assert room.state is RoomState.FINISHED
    assert [(r["player_id"], r["status"]) for r in room.results] == [
        ("ann", "resigned"),
        ("bob", "resigned"),
    ]


def test_with_undo_a_player_still_stuck_at_the_time_limit_counts_as_stuck() -> None:
    room = racing("ann", "bob", undo=True)
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 1000, banked=9, status="stuck"))
    assert room.deadline_ms is not None
    room = step(room, rooms.tick(room, room.deadline_ms))
    assert room.state is RoomState.FINISHED
    by_id = {r["player_id"]: r for r in room.results}
    assert by_id["ann"]["status"] == "stuck" and by_id["bob"]["status"] == "out_of_time"
    assert by_id["ann"]["time_ms"] == SETTINGS.time_limit * 1000


# -- how a race ends, and places -------------------------------------------------------------


def test_a_first_to_finish_race_ends_its_grace_after_the_first_win() -> None:
    room = racing("ann", "bob", "cat", finish=rooms.Finish.FIRST, finish_grace=20)
    assert room.deadline_ms == T0 + 60_000
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 9000, banked=52, status="won"))
    assert room.state is RoomState.RACING and room.deadline_ms == T0 + 29_000
    assert next_deadline(room) == T0 + 29_000
    # A second win within the grace is placed second; it does not move the end again.
    outcome = rooms.progress(room, "bob", now_ms=T0 + 15_000, banked=52, moves=9, status="won")
    room = step(room, outcome)
    (event,) = outcome.events
    assert isinstance(event, Progress) and event.players[0]["place"] == 2
    assert room.deadline_ms == T0 + 29_000
    room = step(room, rooms.tick(room, T0 + 29_000))
    assert room.state is RoomState.FINISHED
    assert [(r["player_id"], r["status"]) for r in room.results] == [
        ("ann", "won"),
        ("bob", "won"),
        ("cat", "out_of_time"),
    ]


def test_a_first_win_never_brings_the_end_later_than_the_time_limit() -> None:
    room = racing("ann", "bob", finish=rooms.Finish.FIRST, finish_grace=50)
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 30_000, banked=52, status="won"))
    assert room.deadline_ms == T0 + 60_000


def test_an_everyone_race_keeps_its_time_limit_after_a_win_and_places_the_winners() -> None:
    room = racing("ann", "bob", "cat")
    assert room.settings.finish is rooms.Finish.EVERYONE
    outcome = rooms.progress(room, "bob", now_ms=T0 + 5000, banked=52, moves=70, status="won")
    room = step(room, outcome)
    (event,) = outcome.events
    assert isinstance(event, Progress) and event.players[0]["place"] == 1
    assert room.deadline_ms == T0 + 60_000 and room.state is RoomState.RACING
    room = step(room, rooms.progress(room, "ann", now_ms=T0 + 6000, status="resigned"))
    assert rooms.places(room) == {"bob": 1}  # a resignation has no final place yet


def test_the_finish_setting_is_checked_and_changed_by_the_host_in_the_lobby() -> None:
    refused(ErrorCode.BAD_SETTINGS, lambda: rooms.finish_mode("last"))
    room = lobby("ann", "bob")
    refused(ErrorCode.NOT_HOST, lambda: rooms.set_settings(room, "bob", finish=rooms.Finish.FIRST))
    outcome = rooms.set_settings(room, "ann", finish=rooms.Finish.FIRST, finish_grace=10)
    room = step(room, outcome)
    assert (room.settings.finish, room.settings.finish_grace) == (rooms.Finish.FIRST, 10)
    (event,) = outcome.events
    assert isinstance(event, Members) and event.settings["finish"] == "first"
    assert Room.from_dict(room.to_dict()).settings == room.settings


def test_a_drop_of_a_connection_older_than_the_members_last_changes_nothing() -> None:
    room = lobby("ann", "bob")
    old = room.members["bob"].link
    room = step(room, rooms.set_connected(room, "bob", True, T0))  # back on another node
    assert room.members["bob"].link == old + 1
    stale = rooms.set_connected(room, "bob", False, T0 + 1, link=old)
    assert stale.room == room and stale.events == ()
    assert rooms.leave(room, "bob", T0 + 1, link=old).room == room
    dropped = step(room, rooms.set_connected(room, "bob", False, T0 + 1, link=old + 1))
    assert not dropped.members["bob"].connected
    assert "bob" not in step(room, rooms.leave(room, "bob", T0 + 1, link=old + 1)).members


def test_a_members_link_survives_the_record_round_trip() -> None:
    room = step(lobby("ann", "bob"), rooms.set_connected(lobby("ann", "bob"), "bob", True, T0))
    assert rooms.Room.from_dict(json.loads(json.dumps(room.to_dict()))) == room
    # A record kept before links were counted reads as link 0.
    data = room.to_dict()
    data["members"] = [m[:6] for m in data["members"]]
    assert rooms.Room.from_dict(data).members["bob"].link == 0
