"""Request ids: 0 to 2^53 - 1 on both codecs; any other id is refused and never echoed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgpack
import pytest
from conftest import TIMEOUT, RunningServer
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from solrace.protocol import (
    JSON_SUBPROTOCOL,
    MSGPACK_SUBPROTOCOL,
    Codec,
    Error,
    ErrorCode,
    JsonCodec,
    Limits,
    MsgpackCodec,
    Ping,
    PlayMove,
    ProtocolError,
)
from solrace.protocol.codec import MAX_INT

HUGE = "9" * 4000  # a 4,000-digit integer, as JSON text
BEYOND_INT_LIMIT = "7" * 5000  # more digits than Python's int() takes from text (4300)


@pytest.fixture(params=[MsgpackCodec, JsonCodec], ids=["msgpack", "json"])
def codec(request: pytest.FixtureRequest) -> Codec:
    """Each codec with the default limits."""
    cls: type[Codec] = request.param
    return cls()


def frame(codec: Codec, data: dict[str, Any]) -> bytes | str:
    """``data`` in the codec's encoding, as a client would send it."""
    if isinstance(codec, MsgpackCodec):
        packed: bytes = msgpack.packb(data, use_bin_type=True)
        return packed
    return json.dumps(data)


def refused(codec: Codec, raw: bytes | str) -> ProtocolError:
    """The bad_field error that decoding ``raw`` raises; it carries no request id."""
    with pytest.raises(ProtocolError) as caught:
        codec.decode(raw)
    error = caught.value
    assert error.code is ErrorCode.BAD_FIELD, error.message
    assert error.request_id is None
    assert "'id'" in error.message
    # The error frame the server sends for it has no id.
    wire = Error(error.request_id, error.code.value, error.message).to_wire()
    assert wire.get("id") is None
    assert codec.decode_move(raw) is None
    return error


@pytest.mark.parametrize("request_id", [0, 1, 2**32, MAX_INT])
def test_ids_in_the_range_are_taken(codec: Codec, request_id: int) -> None:
    assert codec.decode(frame(codec, {"type": "ping", "id": request_id})) == Ping(request_id)
    move = frame(codec, {"type": "move", "id": request_id, "move": "d", "rev": 0})
    assert codec.decode(move) == PlayMove(request_id, "d", 0)
    assert codec.decode_move(move) == (request_id, "d", 0)


def test_the_top_of_the_range_is_two_to_the_53_minus_one() -> None:
    assert MAX_INT == 2**53 - 1 == 9007199254740991


@pytest.mark.parametrize(
    "request_id", [2**53, 2**53 + 1, 2**63, 2**64 - 1, -5, -1, -(2**63)], ids=str
)
def test_ids_out_of_the_range_are_refused_unechoed(codec: Codec, request_id: int) -> None:
    refused(codec, frame(codec, {"type": "ping", "id": request_id}))
    refused(codec, frame(codec, {"type": "move", "id": request_id, "move": "d", "rev": 0}))


@pytest.mark.parametrize("request_id", [True, 1.0, 1.5, "7", None, [1], {"a": 1}], ids=repr)
def test_ids_that_are_not_integers_are_refused_unechoed(codec: Codec, request_id: Any) -> None:
    refused(codec, frame(codec, {"type": "ping", "id": request_id}))
    refused(codec, frame(codec, {"type": "move", "id": request_id, "move": "d", "rev": 0}))


def test_msgpack_uint64_max_is_refused() -> None:
    codec = MsgpackCodec()
    raw = msgpack.packb({"type": "ping", "id": 2**64 - 1})
    assert b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff" in raw  # a uint 64 on the wire
    refused(codec, raw)


@pytest.mark.parametrize(
    "text",
    [HUGE, "-" + HUGE, "1" + "0" * 20, "18446744073709551616"],
    ids=["4000-digits", "minus-4000-digits", "10^20", "2^64"],
)
def test_json_huge_integers_are_refused_unechoed(text: str) -> None:
    codec = JsonCodec()
    refused(codec, '{"type":"ping","id":' + text + "}")
    refused(codec, '{"type":"move","id":' + text + ',"move":"d","rev":0}')


def test_json_integers_past_pythons_digit_limit_are_a_bad_field_too() -> None:
    """Such a number is never turned into an int: int() would raise on 5,000 digits."""
    codec = JsonCodec(Limits(max_frame_bytes=16384))
    refused(codec, '{"type":"ping","id":' + BEYOND_INT_LIMIT + "}")
    with pytest.raises(ProtocolError) as caught:
        codec.decode('{"type":"move","id":4,"move":"d","rev":' + BEYOND_INT_LIMIT + "}")
    assert caught.value.code is ErrorCode.BAD_FIELD and caught.value.request_id == 4
    assert "'rev'" in caught.value.message


def test_json_huge_numbers_elsewhere_fail_their_own_field() -> None:
    codec = JsonCodec()
    with pytest.raises(ProtocolError) as caught:
        codec.decode('{"type":"move","id":3,"move":"d","rev":' + HUGE + "}")
    assert caught.value.code is ErrorCode.BAD_FIELD and caught.value.request_id == 3
    assert "'rev'" in caught.value.message
    assert codec.decode_move('{"type":"move","id":3,"move":"d","rev":' + HUGE + "}") is None
    with pytest.raises(ProtocolError) as caught:
        codec.decode('{"type":"ping","id":3,"pad":[' + HUGE[:1000] + "]}")
    assert caught.value.code is ErrorCode.BAD_FIELD and caught.value.request_id == 3


def test_json_twenty_digit_integers_are_still_numbers() -> None:
    """The seed of a race is up to 2^64 - 1: the JSON codec reads it as the number it is."""
    codec = JsonCodec()
    assert codec.loads('{"seed":18446744073709551615}') == {"seed": 2**64 - 1}
    assert codec.loads('{"seed":-18446744073709551615}') == {"seed": -(2**64 - 1)}


def test_a_bad_id_is_named_before_any_other_problem(codec: Codec) -> None:
    refused(codec, frame(codec, {"type": "no_such_type", "id": -5}))
    refused(codec, frame(codec, {"type": "ping", "id": 2**53, "extra": 1}))


def test_an_over_long_json_frame_echoes_only_a_good_id() -> None:
    codec = JsonCodec()
    pad = "x" * (codec.limits.max_str_len + 1)
    for request_id, echoed in ((7, 7), (-5, None), (2**53, None)):
        with pytest.raises(ProtocolError) as caught:
            codec.decode(json.dumps({"type": "ping", "id": request_id, "pad": pad}))
        assert caught.value.code is ErrorCode.MALFORMED_FRAME
        assert caught.value.request_id == echoed


# -- over a real connection ---------------------------------------------------------------


@pytest.mark.parametrize("subprotocol", [MSGPACK_SUBPROTOCOL, JSON_SUBPROTOCOL])
async def test_the_server_answers_a_bad_id_without_it(
    server: RunningServer, subprotocol: str
) -> None:
    binary = subprotocol == MSGPACK_SUBPROTOCOL
    bad: list[bytes | str] = [
        frame(MsgpackCodec() if binary else JsonCodec(), {"type": "ping", "id": request_id})
        for request_id in (2**53, 2**64 - 1, -5)
    ]
    if not binary:
        bad.append('{"type":"ping","id":' + HUGE + "}")
    async with connect(server.url, subprotocols=[Subprotocol(subprotocol)], compression=None) as ws:
        for raw in bad:
            await ws.send(raw)
            async with asyncio.timeout(TIMEOUT):
                reply = await ws.recv()
            error = msgpack.unpackb(reply) if binary else json.loads(reply)
            assert error["type"] == "error" and error["code"] == "bad_field", error
            assert error.get("id") is None, error
        await ws.send(
            frame(MsgpackCodec() if binary else JsonCodec(), {"type": "ping", "id": MAX_INT})
        )
        async with asyncio.timeout(TIMEOUT):
            reply = await ws.recv()
        pong = msgpack.unpackb(reply) if binary else json.loads(reply)
        assert pong == {"type": "pong", "id": MAX_INT}
