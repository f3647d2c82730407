"""The spectator setting in the room state machine, without sockets."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solrace.protocol import ErrorCode, ProtocolError
from solrace.server import room as rooms
from solrace.server.room import Role, Room, RoomState, Settings, SpectatorMode

MODES = list(SpectatorMode)


def lobby(mode: SpectatorMode = SpectatorMode.AFTER, **more: object) -> Room:
    """A lobby with Ann (host), Bob (player) and Sue (spectator, unless the room has none)."""
    room = rooms.create("ROOM", Settings("canfield", spectators=mode, **more), "ann", "Ann").room
    assert room is not None
    room = rooms.join(room, "bob", "Bob", Role.PLAYER, max_spectators=4).room
    assert room is not None
    if mode is not SpectatorMode.OFF:
        room = rooms.join(room, "sue", "Sue", Role.SPECTATOR, max_spectators=4).room
        assert room is not None
    return room


def refused(code: ErrorCode, call: object, *args: object) -> None:
    with pytest.raises(ProtocolError) as caught:
        call(*args)  # type: ignore[operator]
    assert caught.value.code is code


def test_a_room_made_without_a_word_shows_no_board_until_the_results() -> None:
    assert Settings("canfield").spectators is SpectatorMode.AFTER
    assert Settings("canfield").spectator_delay == rooms.DEFAULT_SPECTATOR_DELAY == 30


@pytest.mark.parametrize(
    ("value", "mode"),
    [(True, "after"), (False, "off"), ("live", "live"), ("delayed", "delayed"), (None, "after")],
)
def test_the_old_boolean_and_the_names_read_as_modes(value: object, mode: str) -> None:
    assert rooms.spectator_mode(value) is SpectatorMode(mode)
    assert rooms.spectator_mode(True, SpectatorMode.LIVE) is SpectatorMode.LIVE


@pytest.mark.parametrize("value", ["", "Live", "on", 1, 0, "true"])
def test_anything_else_is_a_bad_setting(value: object) -> None:
    refused(ErrorCode.BAD_SETTINGS, rooms.spectator_mode, value)


def test_a_record_stored_before_the_modes_reads_back() -> None:
    data = lobby(SpectatorMode.LIVE).to_dict()
    assert data["settings"]["spectators"] == "live" and data["settings"]["spectator_delay"] == 30
    old = {k: v for k, v in data["settings"].items() if k != "spectator_delay"}
    for stored, mode in ((True, SpectatorMode.AFTER), (False, SpectatorMode.OFF)):
        back = Room.from_dict({**data, "settings": {**old, "spectators": stored}})
        assert back.settings.spectators is mode and back.settings.spectator_delay == 30
    assert Room.from_dict(data) == lobby(SpectatorMode.LIVE)


@pytest.mark.parametrize("mode", [m for m in MODES if m is not SpectatorMode.OFF])
def test_spectators_join_every_room_but_an_off_one(mode: SpectatorMode) -> None:
    room = lobby(mode)
    assert room.role_of("sue") is Role.SPECTATOR
    refused(
        ErrorCode.SPECTATORS_NOT_ALLOWED,
        lambda: rooms.join(
            lobby(SpectatorMode.OFF), "sue", "Sue", Role.SPECTATOR, max_spectators=4
        ),
    )


@pytest.mark.parametrize("mode", MODES)
def test_no_one_watches_a_daily_attempt_whatever_its_setting(mode: SpectatorMode) -> None:
    settings = Settings("canfield", 1, mode, daily="2026-11-30", attempt=1)
    room = rooms.create("DAY", settings, "ann", "Ann").room
    assert room is not None
    refused(
        ErrorCode.SPECTATORS_NOT_ALLOWED,
        lambda: rooms.join(room, "sue", "Sue", Role.SPECTATOR, max_spectators=4),
    )
    refused(ErrorCode.WRONG_STATE, rooms.set_settings, room, "ann", SpectatorMode.LIVE)


def test_the_host_changes_the_setting_and_the_members_event_carries_it() -> None:
    room = lobby()
    out = rooms.set_settings(room, "ann", SpectatorMode.DELAYED, 45)
    assert out.room is not None and out.room.settings.spectators is SpectatorMode.DELAYED
    assert out.room.settings.spectator_delay == 45
    (event,) = out.events
    assert event.type == "members" and event.seq == room.seq + 1
    wire = event.to_wire()
    assert wire["settings"]["spectators"] == "delayed" and wire["settings"]["spectator_delay"] == 45
    assert "removed" not in wire and out.room.role_of("sue") is Role.SPECTATOR
    # One value alone keeps the other; the same values again change nothing.
    later = rooms.set_settings(out.room, "ann", spectator_delay=60).room
    assert later is not None and later.settings.spectators is SpectatorMode.DELAYED
    assert later.settings.spectator_delay == 60
    same = rooms.set_settings(later, "ann", SpectatorMode.DELAYED)
    assert same.room is later and same.events == ()


def test_turning_spectators_off_puts_them_out_and_says_why() -> None:
    room = lobby(SpectatorMode.LIVE)
    room = rooms.join(room, "tom", "Tom", Role.SPECTATOR, max_spectators=4).room
    assert room is not None
    out = rooms.set_settings(room, "ann", SpectatorMode.OFF)
    assert out.room is not None and out.room.settings.spectators is SpectatorMode.OFF
    assert list(out.room.members) == ["ann", "bob"]
    (event,) = out.events
    assert event.to_wire()["removed"] == {"sue": "spectators_off", "tom": "spectators_off"}
    assert [m["player_id"] for m in event.to_wire()["members"]] == ["ann", "bob"]


def test_the_setting_changes_after_a_race_too() -> None:
    room = rooms.start(lobby(), "ann", 0, 7).room
    assert room is not None
    room = rooms.tick(room, 3000).room
    assert room is not None and room.state is RoomState.RACING
    refused(ErrorCode.WRONG_STATE, rooms.set_settings, room, "ann", SpectatorMode.LIVE)
    for player in ("ann", "bob"):
        room = rooms.progress(room, player, now_ms=4000, status="resigned").room
        assert room is not None
    assert room.state is RoomState.FINISHED
    changed = rooms.set_settings(room, "ann", SpectatorMode.LIVE).room
    assert changed is not None and changed.settings.spectators is SpectatorMode.LIVE
    assert changed.state is RoomState.FINISHED


def test_the_countdown_is_not_the_lobby() -> None:
    room = rooms.start(lobby(), "ann", 0, 7).room
    assert room is not None and room.state is RoomState.COUNTDOWN
    refused(ErrorCode.WRONG_STATE, rooms.set_settings, room, "ann", SpectatorMode.LIVE)


@pytest.mark.parametrize("who", ["bob", "sue"])
def test_only_the_host_changes_the_setting(who: str) -> None:
    refused(ErrorCode.NOT_HOST, rooms.set_settings, lobby(), who, SpectatorMode.LIVE)
    refused(ErrorCode.NOT_IN_ROOM, rooms.set_settings, lobby(), "zed", SpectatorMode.LIVE)


def test_a_new_host_may_change_it() -> None:
    room = rooms.leave(lobby(), "ann", 0).room
    assert room is not None and room.host == "bob"
    changed = rooms.set_settings(room, "bob", SpectatorMode.LIVE).room
    assert changed is not None and changed.settings == replace(
        room.settings, spectators=SpectatorMode.LIVE
    )
