"""Both codecs: every way a frame is refused, round trips of every request, server frames."""

from __future__ import annotations

import json
import typing
from typing import Any

import msgpack
import pytest

from solrace.protocol import (
    JSON_SUBPROTOCOL,
    MSGPACK_SUBPROTOCOL,
    REQUESTS,
    Account,
    Ack,
    Boards,
    ChangePassword,
    Claim,
    Codec,
    Countdown,
    CreateRoom,
    DeleteAccount,
    Error,
    ErrorCode,
    GetLeaderboard,
    Hello,
    JoinRoom,
    JsonCodec,
    Leaderboard,
    LeaveRoom,
    Limits,
    Members,
    MsgpackCodec,
    Ok,
    Ping,
    PlayMove,
    Pong,
    Progress,
    ProtocolError,
    RaceOver,
    RaceStarted,
    Rematch,
    Request,
    Resign,
    RevokeTokens,
    RoomSnapshot,
    ServerMessage,
    SetReady,
    SetSettings,
    StartDaily,
    StartRace,
    Sync,
    Welcome,
    codec_for,
)
from solrace.protocol.codec import MAX_INT
from solrace.protocol.messages import _Wire

CODECS = [MsgpackCodec, JsonCodec]


@pytest.fixture(params=CODECS, ids=["msgpack", "json"])
def codec(request: pytest.FixtureRequest) -> Codec:
    """Each codec with the default limits."""
    cls: type[Codec] = request.param
    return cls()


def raw(codec: Codec, data: Any) -> bytes | str:
    """A frame holding ``data`` as it is, whatever its shape, in the codec's encoding."""
    if isinstance(codec, MsgpackCodec):
        packed: bytes = msgpack.packb(data, use_bin_type=True)
        return packed
    return json.dumps(data)


def json_echoes(codec: Codec, request_id: int) -> int | None:
    """The id an over-long frame's error echoes: JSON parses the whole frame before it checks
    lengths, so it knows the id; msgpack's reader stops at the first long item, before."""
    return request_id if isinstance(codec, JsonCodec) else None


def refusal(codec: Codec, frame: bytes | str) -> ProtocolError:
    """The error that decoding ``frame`` raises."""
    with pytest.raises(ProtocolError) as caught:
        codec.decode(frame)
    return caught.value


def check(
    codec: Codec, frame: bytes | str, code: ErrorCode, request_id: int | None = None
) -> ProtocolError:
    """Decoding ``frame`` fails with ``code``, echoing ``request_id``."""
    error = refusal(codec, frame)
    assert error.code is code, error.message
    assert error.request_id == request_id
    assert error.message
    return error


# -- the frame itself ---------------------------------------------------------------------


def test_msgpack_takes_binary_frames_only() -> None:
    check(MsgpackCodec(), '{"type":"ping","id":1}', ErrorCode.MALFORMED_FRAME)


def test_json_takes_text_frames_only() -> None:
    check(JsonCodec(), b'{"type":"ping","id":1}', ErrorCode.MALFORMED_FRAME)


@pytest.mark.parametrize("data", [[], ["ping", 1], 7, "ping", None, True, 1.5])
def test_a_frame_is_one_map(codec: Codec, data: Any) -> None:
    check(codec, raw(codec, data), ErrorCode.MALFORMED_FRAME)


def test_an_oversized_frame_is_refused_before_parsing(codec: Codec) -> None:
    frame = raw(codec, {"type": "ping", "id": 1, "pad": "x" * 5000})
    assert len(frame) > codec.limits.max_frame_bytes
    check(codec, frame, ErrorCode.FRAME_TOO_LARGE)
    check(codec, frame[:-1], ErrorCode.FRAME_TOO_LARGE)  # not even parsed


@pytest.mark.parametrize("cls", CODECS)
def test_the_frame_limit_is_inclusive(cls: type[Codec]) -> None:
    frame = raw(cls(), {"type": "ping", "id": 1})
    assert cls(Limits(max_frame_bytes=len(frame))).decode(frame) == Ping(1)
    check(cls(Limits(max_frame_bytes=len(frame) - 1)), frame, ErrorCode.FRAME_TOO_LARGE)


def test_a_text_frame_counts_its_utf8_bytes() -> None:
    frame = '{"type":"ping","id":1,"pad":"' + "€" * 1400 + '"}'
    assert len(frame) < 4096 < len(frame.encode())
    check(JsonCodec(), frame, ErrorCode.FRAME_TOO_LARGE)


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\xc1",  # a byte msgpack never uses
        b"\x82\xa4type\xa4ping",  # a map of two with one pair
        msgpack.packb({"type": "ping", "id": 1}) + b"\x00",  # trailing data
        msgpack.packb({1: "ping"}),  # a key that is not a string
        msgpack.packb({"type": "ping", "id": 1, "b": b"\x00"}, use_bin_type=True),
        msgpack.packb({"type": "ping", "id": 1, "t": msgpack.ExtType(1, b"x")}),
        b"\xa3\xff\xfe\xfd",  # a string that is not UTF-8
        b"\x91" * 3000 + b"\x00",  # nested deeper than the reader's stack
    ],
    ids=["empty", "reserved", "truncated", "trailing", "int-key", "bin", "ext", "utf8", "deep"],
)
def test_invalid_msgpack(frame: bytes) -> None:
    error = check(MsgpackCodec(), frame, ErrorCode.MALFORMED_FRAME)
    assert error.message.startswith("not a valid msgpack frame: ")
    assert not error.message.endswith(": ")


@pytest.mark.parametrize(
    "frame",
    [
        "",
        "{",
        "{'type': 'ping', 'id': 1}",
        '{"type":"ping","id":1} {}',
        '{"type":"ping","id":1,}',
        "[" * 2000 + "]" * 2000,  # deeper than the parser recurses
    ],
    ids=["empty", "open", "quotes", "two", "comma", "deep"],
)
def test_invalid_json(frame: str) -> None:
    check(JsonCodec(), frame, ErrorCode.MALFORMED_FRAME)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_refuses_nan_and_infinities(constant: str) -> None:
    frame = f'{{"type":"move","id":3,"move":"d","rev":{constant}}}'
    error = check(JsonCodec(), frame, ErrorCode.MALFORMED_FRAME)
    assert constant.lstrip("-") in error.message


def test_json_refuses_a_lone_surrogate_and_echoes_the_id() -> None:
    frame = '{"type":"hello","id":4,"token":"\\ud800.x"}'
    check(JsonCodec(), frame, ErrorCode.MALFORMED_FRAME, 4)
    frame = '{"type":"hello","id":4,"\\udfff":1}'
    check(JsonCodec(), frame, ErrorCode.MALFORMED_FRAME, 4)


def test_json_takes_any_valid_unicode() -> None:
    frame = '{"type":"hello","id":4,"name":"Zoë \\ud83c\\udccf 🂡"}'
    assert JsonCodec().decode(frame) == Hello(4, name="Zoë 🃏 🂡")


# -- lengths and depth --------------------------------------------------------------------


def test_a_string_too_long(codec: Codec) -> None:
    at_limit = {"type": "hello", "id": 5, "name": "x" * codec.limits.max_str_len}
    assert codec.decode(raw(codec, at_limit)) == Hello(5, name="x" * 256)
    over = {"type": "hello", "id": 5, "name": "x" * (codec.limits.max_str_len + 1)}
    check(codec, raw(codec, over), ErrorCode.MALFORMED_FRAME, json_echoes(codec, 5))


def test_a_key_too_long(codec: Codec) -> None:
    frame = raw(codec, {"type": "ping", "id": 5, "k" * 257: 1})
    check(codec, frame, ErrorCode.MALFORMED_FRAME, json_echoes(codec, 5))


def test_an_array_too_long(codec: Codec) -> None:
    at_limit = raw(codec, {"type": "ping", "id": 6, "x": [0] * 16})
    check(codec, at_limit, ErrorCode.BAD_FIELD, 6)  # within the limits: an unknown field
    over = raw(codec, {"type": "ping", "id": 6, "x": [0] * 17})
    check(codec, over, ErrorCode.MALFORMED_FRAME, json_echoes(codec, 6))


def test_a_map_too_long(codec: Codec) -> None:
    top = {"type": "ping", "id": 7, **{f"k{i}": i for i in range(15)}}
    assert len(top) == 17
    check(codec, raw(codec, top), ErrorCode.MALFORMED_FRAME, json_echoes(codec, 7))
    inner = {"type": "ping", "id": 7, "x": {f"k{i}": i for i in range(17)}}
    check(codec, raw(codec, inner), ErrorCode.MALFORMED_FRAME, json_echoes(codec, 7))


def test_nesting_too_deep_echoes_the_id(codec: Codec) -> None:
    at_limit = raw(codec, {"type": "ping", "id": 8, "x": [[1]]})  # map, array, array: 3
    check(codec, at_limit, ErrorCode.BAD_FIELD, 8)
    over = raw(codec, {"type": "ping", "id": 8, "x": [[[1]]]})
    error = check(codec, over, ErrorCode.MALFORMED_FRAME, 8)
    assert "deep" in error.message
    mixed = raw(codec, {"type": "ping", "id": 8, "x": [{"a": {}}]})
    check(codec, mixed, ErrorCode.MALFORMED_FRAME, 8)


@pytest.mark.parametrize("cls", CODECS)
def test_the_limits_are_parameters(cls: type[Codec]) -> None:
    tight = cls(Limits(max_str_len=8, max_array_len=2, max_map_len=3, max_depth=1))
    assert tight.decode(raw(tight, {"type": "hello", "id": 1, "name": "12345678"})) == Hello(
        1, name="12345678"
    )
    long_name = raw(tight, {"type": "hello", "id": 1, "name": "123456789"})
    check(tight, long_name, ErrorCode.MALFORMED_FRAME, json_echoes(tight, 1))
    four_keys = raw(tight, {"type": "move", "id": 1, "move": "d", "rev": 0})
    check(tight, four_keys, ErrorCode.MALFORMED_FRAME, json_echoes(tight, 1))
    nested = raw(tight, {"type": "ping", "id": 1, "x": []})
    check(tight, nested, ErrorCode.MALFORMED_FRAME, 1)


# -- types, fields and values -------------------------------------------------------------


@pytest.mark.parametrize("kind", ["nope", "", "Ping", "PING"])
def test_an_unknown_type_echoes_the_id(codec: Codec, kind: str) -> None:
    check(codec, raw(codec, {"type": kind, "id": 9}), ErrorCode.UNKNOWN_TYPE, 9)


@pytest.mark.parametrize("kind", [None, 1, True, ["ping"]])
def test_a_type_that_is_not_a_string(codec: Codec, kind: Any) -> None:
    check(codec, raw(codec, {"type": kind, "id": 9}), ErrorCode.UNKNOWN_TYPE, 9)


def test_a_missing_type(codec: Codec) -> None:
    check(codec, raw(codec, {"id": 9}), ErrorCode.UNKNOWN_TYPE, 9)


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_an_unknown_field(codec: Codec, kind: str) -> None:
    error = check(codec, raw(codec, {"type": kind, "id": 10, "extra": 1}), ErrorCode.BAD_FIELD, 10)
    assert "'extra'" in error.message


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"type": "move", "id": 11, "move": "d"}, "rev"),
        ({"type": "move", "id": 11, "rev": 0}, "move"),
        ({"type": "create_room", "id": 11}, "variant"),
        ({"type": "join_room", "id": 11, "role": "player"}, "code"),
    ],
)
def test_a_missing_field(codec: Codec, data: dict[str, Any], field: str) -> None:
    error = check(codec, raw(codec, data), ErrorCode.BAD_FIELD, 11)
    assert repr(field) in error.message


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_a_missing_id_cannot_be_echoed(codec: Codec, kind: str) -> None:
    error = check(codec, raw(codec, {"type": kind}), ErrorCode.BAD_FIELD, None)
    assert "'id'" in error.message


BAD_VALUES: list[tuple[str, dict[str, Any], str]] = [
    # integers: no bools, no floats, no strings, no negatives, nothing past 2**53 - 1
    ("move", {"move": "d", "rev": True}, "rev"),
    ("move", {"move": "d", "rev": False}, "rev"),
    ("move", {"move": "d", "rev": 1.0}, "rev"),
    ("move", {"move": "d", "rev": "1"}, "rev"),
    ("move", {"move": "d", "rev": None}, "rev"),
    ("move", {"move": "d", "rev": -1}, "rev"),
    ("move", {"move": "d", "rev": MAX_INT + 1}, "rev"),
    ("move", {"move": "d", "rev": 2**64 - 1}, "rev"),
    ("move", {"move": "d", "rev": -(2**63)}, "rev"),
    ("create_room", {"variant": "canfield", "max_players": True}, "max_players"),
    ("create_room", {"variant": "canfield", "time_limit": 9.5}, "time_limit"),
    ("create_room", {"variant": "canfield", "countdown": -3}, "countdown"),
    # strings: no numbers, no null where a string is needed, no arrays or maps
    ("move", {"move": 5, "rev": 0}, "move"),
    ("move", {"move": None, "rev": 0}, "move"),
    ("move", {"move": ["d"], "rev": 0}, "move"),
    ("join_room", {"code": {"a": 1}}, "code"),
    ("create_room", {"variant": None}, "variant"),
    ("hello", {"name": 5}, "name"),
    ("hello", {"token": False}, "token"),
    # booleans: no 0 or 1, no strings
    ("ready", {"ready": 1}, "ready"),
    ("ready", {"ready": 0}, "ready"),
    ("ready", {"ready": "yes"}, "ready"),
    ("ready", {"ready": None}, "ready"),
    ("create_room", {"variant": "canfield", "undo": "false"}, "undo"),
    ("hello", {"name": "Ann", "legal_moves": 1}, "legal_moves"),
    ("hello", {"name": "Ann", "legal_moves": None}, "legal_moves"),
    # a spectator setting: a mode's name, the old boolean, or null; a delay: an int or null
    ("create_room", {"variant": "canfield", "spectators": 1}, "spectators"),
    ("create_room", {"variant": "canfield", "spectators": ["live"]}, "spectators"),
    ("create_room", {"variant": "canfield", "spectator_delay": "30"}, "spectator_delay"),
    ("create_room", {"variant": "canfield", "spectator_delay": True}, "spectator_delay"),
    ("set_settings", {"spectators": True}, "spectators"),
    ("set_settings", {"spectator_delay": -10}, "spectator_delay"),
    ("set_settings", {"spectator_delay": 2.5}, "spectator_delay"),
]


@pytest.mark.parametrize(("kind", "fields", "field"), BAD_VALUES)
def test_a_field_of_the_wrong_type(
    codec: Codec, kind: str, fields: dict[str, Any], field: str
) -> None:
    error = check(codec, raw(codec, {"type": kind, "id": 12, **fields}), ErrorCode.BAD_FIELD, 12)
    assert repr(field) in error.message


@pytest.mark.parametrize("value", [True, False, 1.0, "3", None, [3]])
def test_an_id_that_is_not_an_integer_is_not_echoed(codec: Codec, value: Any) -> None:
    error = check(codec, raw(codec, {"type": "ping", "id": value}), ErrorCode.BAD_FIELD, None)
    assert "'id'" in error.message


@pytest.mark.parametrize("value", [-1, MAX_INT + 1])
def test_an_integer_id_out_of_range_is_refused_and_not_echoed(codec: Codec, value: int) -> None:
    error = check(codec, raw(codec, {"type": "ping", "id": value}), ErrorCode.BAD_FIELD, None)
    assert "'id'" in error.message


def test_integer_bounds_are_inclusive(codec: Codec) -> None:
    frame = raw(codec, {"type": "move", "id": MAX_INT, "move": "d", "rev": 0})
    assert codec.decode(frame) == PlayMove(MAX_INT, "d", 0)


def test_optional_strings_take_null(codec: Codec) -> None:
    frame = raw(codec, {"type": "hello", "id": 1, "name": None, "token": "t.x"})
    assert codec.decode(frame) == Hello(1, None, "t.x")


@pytest.mark.parametrize("value", [True, False, None, "after", "any text"])
def test_create_room_spectators_take_a_name_the_old_boolean_or_null(
    codec: Codec, value: Any
) -> None:
    # The codec checks the kind only; the server says which names are modes (bad_settings).
    frame = raw(codec, {"type": "create_room", "id": 1, "variant": "canfield", "spectators": value})
    created = codec.decode(frame)
    assert isinstance(created, CreateRoom) and created.spectators == value


def test_a_bad_kind_names_every_kind_the_field_takes(codec: Codec) -> None:
    frame = raw(codec, {"type": "create_room", "id": 2, "variant": "canfield", "spectators": 3})
    error = check(codec, frame, ErrorCode.BAD_FIELD, 2)
    assert "true or false or a string" in error.message


# -- round trips --------------------------------------------------------------------------

SAMPLES: list[Request] = [
    Hello(1, name="Ann"),
    Hello(2, token="0123456789abcdef.c2lnbmF0dXJl"),
    Hello(3, name="Ann", token="0123456789abcdef.c2lnbmF0dXJl"),
    Hello(20, name="Ann", legal_moves=True),
    Hello(26, account="ann", password="correct horse battery"),
    Hello(27, name="beep", bot=True),
    CreateRoom(4, "canfield"),
    CreateRoom(5, "british-canister", 2, False, False, 120, 0),
    CreateRoom(21, "canfield", spectators="delayed", spectator_delay=45),
    CreateRoom(22, "canfield", spectators=True),
    JoinRoom(6, "ABCD2345"),
    JoinRoom(7, "ABCD2345", "spectator"),
    LeaveRoom(8),
    SetReady(9),
    SetReady(10, False),
    StartRace(11),
    PlayMove(12, "t1-t3x2", 0),
    PlayMove(13, "u", MAX_INT),
    Resign(14),
    Rematch(15),
    Sync(16),
    StartDaily(17, "canfield"),
    GetLeaderboard(18, "canfield"),
    GetLeaderboard(19, "rainbow-canfield", "2026-11-30", 5),
    SetSettings(23, "after"),
    SetSettings(24, "delayed", 60),
    SetSettings(25, spectator_delay=10),
    Claim(28, "correct horse battery"),
    ChangePassword(29, "correct horse battery", "staple it twice"),
    RevokeTokens(30),
    DeleteAccount(31, "staple it twice"),
    Ping(17),
    Ping(0),
]


def test_the_samples_cover_every_request() -> None:
    assert {r.type for r in SAMPLES} == set(REQUESTS)


@pytest.mark.parametrize("request_", SAMPLES, ids=lambda r: f"{r.type}-{r.id}")
def test_every_request_round_trips(codec: Codec, request_: Request) -> None:
    frame = codec.encode_request(request_)
    assert isinstance(frame, bytes) is codec.binary
    assert codec.decode(frame) == request_


@pytest.mark.parametrize("request_", SAMPLES, ids=lambda r: f"{r.type}-{r.id}")
def test_the_two_codecs_carry_the_same_data(request_: Request) -> None:
    packed = MsgpackCodec().encode_request(request_)
    text = JsonCodec().encode_request(request_)
    assert msgpack.unpackb(packed, raw=False) == json.loads(text)


def test_encoded_requests_leave_out_unset_optional_fields() -> None:
    # The token (None) is left out; legal_moves and bot have a value, False, so are sent.
    assert json.loads(JsonCodec().encode_request(Hello(1, name="Ann"))) == {
        "type": "hello",
        "id": 1,
        "name": "Ann",
        "legal_moves": False,
        "bot": False,
    }


def test_defaults_fill_fields_left_out(codec: Codec) -> None:
    created = codec.decode(raw(codec, {"type": "create_room", "id": 1, "variant": "canfield"}))
    assert created == CreateRoom(1, "canfield", 4, None, True, 900, 3, None)
    assert codec.decode(raw(codec, {"type": "join_room", "id": 2, "code": "X"})) == JoinRoom(
        2, "X", "player"
    )
    assert codec.decode(raw(codec, {"type": "ready", "id": 3})) == SetReady(3, True)
    assert codec.decode(raw(codec, {"type": "hello", "id": 4})) == Hello(4)
    assert Hello(4).legal_moves is False
    assert codec.decode(raw(codec, {"type": "hello", "id": 5, "legal_moves": True})) == Hello(
        5, legal_moves=True
    )


def test_the_catalogue_spec_matches_the_dataclasses() -> None:
    cls, spec = REQUESTS["create_room"]
    assert cls is CreateRoom
    assert spec == {
        "id": ("int", True),
        "variant": ("str", True),
        "max_players": ("int", False),
        "spectators": ("bool|str?", False),
        "undo": ("bool", False),
        "time_limit": ("int", False),
        "countdown": ("int", False),
        "spectator_delay": ("int?", False),
        "finish": ("str?", False),
        "finish_grace": ("int?", False),
        "winnable": ("bool?", False),
        "ghost": ("str?", False),
    }
    assert REQUESTS["set_settings"][1] == {
        "id": ("int", True),
        "spectators": ("str?", False),
        "spectator_delay": ("int?", False),
        "finish": ("str?", False),
        "finish_grace": ("int?", False),
    }
    assert REQUESTS["hello"][1] == {
        "id": ("int", True),
        "name": ("str?", False),
        "token": ("str?", False),
        "legal_moves": ("bool", False),
        "account": ("str?", False),
        "password": ("str?", False),
        "bot": ("bool", False),
    }
    assert REQUESTS["change_password"][1] == {
        "id": ("int", True),
        "old": ("str", True),
        "new": ("str", True),
    }


# -- server frames ------------------------------------------------------------------------

VIEW = {"variant": "canfield", "tableau": [["AD"], ["6S"]], "banked": 1}

SERVER_SAMPLES: list[ServerMessage] = [
    Welcome(1, "p1", "Ann", "p1.sig"),
    Ok(2),
    Pong(3),
    Error(None, "rate_limited", "too many messages: slow down"),
    Ack(4, 1, "d", delta={"piles": {"s": {"count": 20}}, "moves": 1}),
    RoomSnapshot(None, {"code": "ROOM", "seq": 3}),
    Members("ROOM", 1, "lobby", None, [], {"variant": "canfield"}),
    Countdown("ROOM", 2, 3),
    RaceStarted("ROOM", 3, 1, "canfield", 900, [{"player_id": "p1", "name": "Ann"}]),
    Progress(
        "ROOM",
        4,
        [{"player_id": "p1", "banked": 1, "moves": 1, "status": "playing", "elapsed_ms": 250}],
    ),
    RaceOver("ROOM", 5, 1, "canfield", 2**64 - 1, []),
    RaceOver("ROOM", 5, 1, "canfield", None, [], "2026-11-30", 1),
    RaceOver("ROOM", 5, 1, "canfield", 7, [], boards={"p1": VIEW}),
    Members("ROOM", 6, "lobby", "p1", [], {"spectators": "off"}, removed={"p2": "spectators_off"}),
    Boards("ROOM", 1, 30, {"p1": VIEW}),
    Leaderboard(9, {"date": "2026-11-30", "variant": "canfield", "top": []}),
    Welcome(1, "p1", "Ann", "p1.sig", account={"name": "Ann", "created_ms": 5}, bot=True),
    Account(10, "Ann", 1764512345678, "p1.sig2"),
]


def test_the_server_samples_cover_every_server_message() -> None:
    classes = typing.get_args(ServerMessage)
    assert {type(m) for m in SERVER_SAMPLES} == set(classes)


@pytest.mark.parametrize("message", SERVER_SAMPLES, ids=lambda m: m.type)
def test_to_wire_puts_the_type_first_and_leaves_out_none(message: ServerMessage) -> None:
    wire = message.to_wire()
    assert next(iter(wire)) == "type" and wire["type"] == message.type
    assert None not in wire.values()
    for name in message.__slots__:
        value = getattr(message, name)
        assert (name in wire) is (value is not None)


def test_none_fields_are_left_out_and_others_kept() -> None:
    assert Error(None, "bad_field", "no").to_wire() == {
        "type": "error",
        "code": "bad_field",
        "message": "no",
    }
    assert Error(3, "illegal_move", "no", "same_pile", 7).to_wire() == {
        "type": "error",
        "id": 3,
        "code": "illegal_move",
        "message": "no",
        "reason": "same_pile",
        "rev": 7,
    }
    assert "room" not in Welcome(1, "p1", "Ann", "t").to_wire()
    assert Welcome(1, "p1", "Ann", "t", room="ROOM").to_wire()["room"] == "ROOM"
    assert "id" not in RoomSnapshot(None, {}).to_wire()
    started = RaceStarted("ROOM", 3, 1, "canfield", 900, [])
    assert not {"view", "rev", "boards"} & set(started.to_wire())
    standing = {"player_id": "p1", "banked": 1, "moves": 1, "status": "playing"}
    assert Progress("ROOM", 4, [standing]).to_wire() == {
        "type": "progress",
        "room": "ROOM",
        "seq": 4,
        "players": [standing],
    }
    assert Progress("ROOM", 4, []).to_wire()["players"] == []  # an empty list is not None
    delta = {"piles": {"s": {"count": 20}}, "moves": 1}
    fresh = Ack(4, 1, "d", delta=delta).to_wire()
    assert fresh == {
        "type": "ack",
        "id": 4,
        "rev": 1,
        "move": "d",
        "duplicate": False,  # False is not None
        "delta": delta,
    }
    again = Ack(4, 1, "d", view=VIEW, duplicate=True).to_wire()
    assert again["view"] == VIEW and again["duplicate"] is True and "delta" not in again


def test_a_room_without_host_sends_members_without_host() -> None:
    # A room of spectators only has no host; like every None, it is left out of the frame.
    assert "host" not in Members("ROOM", 1, "lobby", None, [], {}).to_wire()
    assert Members("ROOM", 1, "lobby", "p1", [], {}).to_wire()["host"] == "p1"


@pytest.mark.parametrize("message", SERVER_SAMPLES, ids=lambda m: m.type)
def test_server_frames_encode_in_both_codecs(message: ServerMessage) -> None:
    packed = MsgpackCodec().encode(message)
    text = JsonCodec().encode(message)
    assert isinstance(packed, bytes) and isinstance(text, str)
    assert msgpack.unpackb(packed, raw=False) == message.to_wire()
    assert json.loads(text) == message.to_wire()


def test_json_frames_are_compact_and_keep_unicode() -> None:
    text = JsonCodec().encode(Welcome(1, "p1", "Zoë", "t"))
    assert " " not in text and "Zoë" in text


def test_codec_for_picks_by_subprotocol() -> None:
    assert isinstance(codec_for(JSON_SUBPROTOCOL), JsonCodec)
    assert isinstance(codec_for(MSGPACK_SUBPROTOCOL), MsgpackCodec)
    assert isinstance(codec_for(None), MsgpackCodec)
    limits = Limits(max_frame_bytes=100)
    assert codec_for(JSON_SUBPROTOCOL, limits).limits is limits
    assert JsonCodec.subprotocol == JSON_SUBPROTOCOL and JsonCodec.binary is False
    assert MsgpackCodec.subprotocol == MSGPACK_SUBPROTOCOL and MsgpackCodec.binary is True


# -- the short way for moves ------------------------------------------------------------------

MOVE_FRAMES: list[Any] = [
    {"type": "move", "id": 1, "move": "d", "rev": 0},
    {"type": "move", "id": MAX_INT, "move": "t1-t3x2", "rev": MAX_INT},
    {"type": "move", "id": 1, "move": "d", "rev": -1},
    {"type": "move", "id": 1, "move": "d", "rev": True},
    {"type": "move", "id": True, "move": "d", "rev": 0},
    {"type": "move", "id": 1, "move": 5, "rev": 0},
    {"type": "move", "id": 1, "move": "x" * 10_000, "rev": 0},
    {"type": "move", "id": 1, "move": "d"},
    {"type": "move", "id": 1, "move": "d", "rev": 0, "extra": 1},
    {"type": "move", "id": 1, "move": "d", "rev": MAX_INT + 1},
    {"type": "move", "id": 1, "move": "d", "rev": 1.0},
    {"type": "ping", "id": 1, "move": "d", "rev": 0},
    {"type": "move", "id": 1, "mov": "d", "rev": 0},
    {"type": "move", "id": 1, "move": b"d", "rev": 0},
    {"type": "move", "id": 1, "move": "d", "rev": msgpack.Timestamp(0)},
    {"type": "move", "id": 1, "move": [[["d"]]], "rev": 0},
    {"type": "move", "id": 1, 2: "d", "rev": 0},
    {"type": "move", "id": 1, "move": "\u3000" * 90 + "d", "rev": 0},  # 271 bytes, 91 characters
    [1, 2, 3],
]


@pytest.mark.parametrize("data", MOVE_FRAMES)
def test_decode_move_takes_exactly_the_plain_moves_decode_takes(data: Any) -> None:
    codec = MsgpackCodec()
    frame = msgpack.packb(data, use_bin_type=True)
    quick = codec.decode_move(frame)
    try:
        full = codec.decode(frame)
    except ProtocolError:
        full = None
    if isinstance(full, PlayMove):
        assert quick == (full.id, full.move, full.rev)
    else:
        assert quick is None


def test_decode_move_leaves_other_frames_to_decode() -> None:
    msgpack_codec, json_codec = MsgpackCodec(), JsonCodec()
    move = {"type": "move", "id": 1, "move": "d", "rev": 0}
    assert msgpack_codec.decode_move(b"\xc1") is None  # not msgpack
    assert msgpack_codec.decode_move(json.dumps(move)) is None  # text on a binary codec
    assert json_codec.decode_move(json.dumps(move)) == (1, "d", 0)
    assert json_codec.decode_move(msgpack.packb(move)) is None
    big = msgpack.packb({**move, "move": "d" + " " * 5000})
    assert msgpack_codec.decode_move(big) is None  # over the frame size limit


@pytest.mark.parametrize(
    "ack",
    [
        Ack(4, 1, "d", delta={"piles": {"s": {"count": 20}}, "moves": 1}),
        Ack(4, 1, "d", view={"moves": 1}, duplicate=True),
    ],
)
def test_an_acks_written_out_wire_form_is_the_generic_one(ack: Ack) -> None:
    generic = _Wire.to_wire(ack)
    assert ack.to_wire() == generic and list(ack.to_wire()) == list(generic)
    if ack.delta is not None and not ack.duplicate:
        fresh = Ack.fresh(ack.id, ack.rev, ack.move, ack.delta)
        assert fresh == generic and list(fresh) == list(generic)


def test_a_progress_events_written_out_wire_form_is_the_generic_one() -> None:
    event = Progress("ROOM", 7, [{"player_id": "p1", "banked": 3}])
    generic = _Wire.to_wire(event)
    assert event.to_wire() == generic and list(event.to_wire()) == list(generic)


def test_json_nested_past_the_parsers_depth_is_said_to_be_nested_too_deeply() -> None:
    # Within the frame size, deeper than the parser recurses: the same answer as a frame
    # past the depth limit, not the parser's own words.
    error = check(JsonCodec(), "[" * 2000 + "]" * 2000, ErrorCode.MALFORMED_FRAME)
    assert error.message == "the frame is nested too deeply"
