"""Codecs for the two subprotocols: ``solrace.v1.msgpack`` (binary) and ``solrace.v1.json`` (text).

Both carry the same messages: a map with a ``type`` key. Decoding a request checks the
frame's size, lengths and depth (:class:`~.limits.Limits`), then every field's type.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import msgpack
from msgpack import unpackb as _unpackb

from .errors import ErrorCode, ProtocolError
from .limits import Limits
from .messages import REQUESTS, Request, ServerMessage

__all__ = [
    "JSON_SUBPROTOCOL",
    "MSGPACK_SUBPROTOCOL",
    "SUBPROTOCOLS",
    "Codec",
    "JsonCodec",
    "MsgpackCodec",
    "codec_for",
]

MSGPACK_SUBPROTOCOL = "solrace.v1.msgpack"
JSON_SUBPROTOCOL = "solrace.v1.json"
SUBPROTOCOLS = (MSGPACK_SUBPROTOCOL, JSON_SUBPROTOCOL)
MAX_INT = 2**53 - 1  # the largest integer every JSON reader keeps exactly


def _depth_ok(value: Any, budget: int) -> bool:
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return True
    if budget <= 0:
        return False
    for item in items:
        if isinstance(item, dict | list) and not _depth_ok(item, budget - 1):
            return False
    return True


def _frame_size(frame: bytes | str) -> int:
    """A frame's size in bytes: a text frame counts as its UTF-8 encoding."""
    if isinstance(frame, str):
        return len(frame.encode("utf-8", "surrogatepass"))
    return len(frame)


def _request_id(data: dict[str, Any]) -> int | None:
    """The frame's ``id`` if it is one a request may carry (so an error can echo it), else None."""
    request_id = data.get("id")
    if type(request_id) is int and 0 <= request_id <= MAX_INT:
        return request_id
    return None


def _move_fields(data: Any, limits: Limits) -> tuple[int, str, int] | None:
    """``(id, move, rev)`` if ``data`` is a plain move request as :meth:`Codec.decode` would
    take it (a map of ``type``, ``id``, ``move`` and ``rev``, within the limits), else None.
    No PlayMove is made: one frame of this comes per move."""
    if type(data) is not dict or len(data) != 4 or data.get("type") != "move":
        return None
    request_id, move, rev = data.get("id"), data.get("move"), data.get("rev")
    if (
        type(request_id) is int
        and type(rev) is int
        and type(move) is str
        and 0 <= request_id <= MAX_INT
        and 0 <= rev <= MAX_INT
        and len(move) <= limits.max_str_len
    ):
        return request_id, move, rev
    return None


class _LongNumber:
    """A JSON integer of more digits than any number of the protocol (20, for 2^64 − 1).

    It stands for the number in parsed data and fails every check, so a 4,000-digit integer
    is refused as a bad field without the quadratic cost of turning it into an ``int``.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "<a number too long>"


_LONG_NUMBER = _LongNumber()
_MAX_DIGITS = len(str(2**64 - 1))


def _parse_int(text: str) -> Any:
    """A JSON integer's value, or :data:`_LONG_NUMBER` if it has too many digits to be one."""
    if len(text) > _MAX_DIGITS + 1:  # a minus sign is the one other character an integer has
        return _LONG_NUMBER
    return int(text)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


_KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "int": (_is_int, "a whole number from 0"),
    "bool": (_is_bool, "true or false"),
    "str": (_is_str, "a string"),
}


def _check_value(name: str, kind: str, value: Any, limits: Limits) -> None:
    """Refuse ``value`` unless it is of ``kind``: one kind or several joined by ``|``, and
    with a trailing ``?`` also None."""
    kinds = kind.rstrip("?").split("|")
    ok = (kind.endswith("?") and value is None) or any(_KINDS[k][0](value) for k in kinds)
    if not ok:
        what = " or ".join(_KINDS[k][1] for k in kinds)
        raise ProtocolError(ErrorCode.BAD_FIELD, f"field {name!r} must be {what}")
    if isinstance(value, str) and len(value) > limits.max_str_len:
        raise ProtocolError(ErrorCode.BAD_FIELD, f"field {name!r} is too long")


class Codec:
    """Turns frames into requests and server messages into frames, for one subprotocol."""

    subprotocol: str = ""
    binary: bool = True

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    def loads(self, frame: bytes | str) -> Any:
        """Parse a frame into plain data, within the limits."""
        raise NotImplementedError

    def dumps(self, data: dict[str, Any]) -> bytes | str:
        """Serialize plain data into a frame."""
        raise NotImplementedError

    def decode_move(self, frame: bytes | str) -> tuple[int, str, int] | None:
        """A plain, well-formed move request's ``(id, move, rev)``; None for any other frame.

        It takes what :meth:`decode` would take as a ``move`` with nothing more (a map of
        ``type``, ``id``, ``move`` and ``rev``, within the limits); :meth:`decode` says
        what any other frame is, or what is wrong with it.
        """
        if (
            isinstance(frame, str) == self.binary
            or _frame_size(frame) > self.limits.max_frame_bytes
        ):
            return None
        try:
            data = self.loads(frame)
        except ProtocolError:
            return None
        return _move_fields(data, self.limits)

    def decode(self, frame: bytes | str) -> Request:
        """Return the request a client's frame holds, or raise ProtocolError saying what is wrong."""
        if _frame_size(frame) > self.limits.max_frame_bytes:
            raise ProtocolError(
                ErrorCode.FRAME_TOO_LARGE, f"frames are at most {self.limits.max_frame_bytes} bytes"
            )
        data = self.loads(frame)
        if not isinstance(data, dict):
            raise ProtocolError(ErrorCode.MALFORMED_FRAME, "a frame holds one map with a 'type'")
        request_id = _request_id(data)
        try:
            if not _depth_ok(data, self.limits.max_depth):
                raise ProtocolError(ErrorCode.MALFORMED_FRAME, "the frame is nested too deeply")
            if request_id is None and "id" in data:
                raise ProtocolError(
                    ErrorCode.BAD_FIELD, "field 'id' must be a whole number from 0 to 2^53 - 1"
                )
            return self._build(data)
        except ProtocolError as error:
            error.request_id = request_id
            raise

    def _build(self, data: dict[str, Any]) -> Request:
        kind = data.get("type")
        entry = REQUESTS.get(kind) if isinstance(kind, str) else None
        if entry is None:
            raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"unknown message type {kind!r}")
        cls, spec = entry
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key == "type":
                continue
            field_spec = spec.get(key)
            if field_spec is None:
                raise ProtocolError(ErrorCode.BAD_FIELD, f"{kind!r} has no field {key!r}")
            _check_value(key, field_spec[0], value, self.limits)
            values[key] = value
        for key, (_, required) in spec.items():
            if required and key not in values:
                raise ProtocolError(ErrorCode.BAD_FIELD, f"{kind!r} needs the field {key!r}")
        request: Request = cls(**values)
        return request

    def encode(self, message: ServerMessage) -> bytes | str:
        """Serialize a server message into a frame."""
        return self.dumps(message.to_wire())

    def encode_request(self, request: Request) -> bytes | str:
        """Serialize a request into a frame (for clients)."""
        data = {"type": request.type}
        data.update((k, v) for k, v in asdict(request).items() if v is not None)
        return self.dumps(data)


_local = threading.local()


class MsgpackCodec(Codec):
    """``solrace.v1.msgpack``: binary frames, one msgpack map each."""

    subprotocol = MSGPACK_SUBPROTOCOL
    binary = True

    def loads(self, frame: bytes | str) -> Any:
        """Parse a binary msgpack frame within the limits."""
        if isinstance(frame, str):
            raise ProtocolError(ErrorCode.MALFORMED_FRAME, "this subprotocol sends binary frames")
        limits = self.limits
        try:
            return msgpack.unpackb(
                frame,
                raw=False,
                strict_map_key=True,
                max_str_len=limits.max_str_len,
                max_bin_len=0,
                max_ext_len=0,
                max_array_len=limits.max_array_len,
                max_map_len=limits.max_map_len,
            )
        except Exception as error:  # msgpack raises several internal types on bad input
            detail = str(error) or type(error).__name__  # StackError has no message
            raise ProtocolError(
                ErrorCode.MALFORMED_FRAME, f"not a valid msgpack frame: {detail}"
            ) from None

    def decode_move(self, frame: bytes | str) -> tuple[int, str, int] | None:
        """As :meth:`Codec.decode_move`, in fewer steps: one frame of this per move.

        The frame is parsed with only the string limit of :meth:`loads` (in bytes): a map
        that can pass the checks below has four short fields, and whatever else a frame
        of at most ``max_frame_bytes`` holds is refused here and decoded by
        :meth:`decode`, which applies every limit.
        """
        if type(frame) is not bytes or len(frame) > self.limits.max_frame_bytes:
            return None
        try:
            # A move of wide characters within max_str_len in characters but not in
            # bytes is refused by decode, so it is refused here too.
            data = _unpackb(frame, max_str_len=self.limits.max_str_len)
        except Exception:  # msgpack raises several internal types on bad input
            return None
        return _move_fields(data, self.limits)

    def dumps(self, data: dict[str, Any]) -> bytes:
        """Serialize to msgpack."""
        # One packer per thread, kept: packb makes (and frees) a 256 KiB buffer per call.
        try:
            packer = _local.packer
        except AttributeError:
            packer = _local.packer = msgpack.Packer(use_bin_type=True)
        return packer.pack(data)  # type: ignore[no-any-return]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


# One decoder, kept: json.loads with arguments makes a new one per call.
_JSON_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_int=_parse_int)


class JsonCodec(Codec):
    """``solrace.v1.json``: text frames, one JSON object each."""

    subprotocol = JSON_SUBPROTOCOL
    binary = False

    def loads(self, frame: bytes | str) -> Any:
        """Parse a text JSON frame within the limits."""
        if isinstance(frame, bytes):
            raise ProtocolError(ErrorCode.MALFORMED_FRAME, "this subprotocol sends text frames")
        try:
            data = _JSON_DECODER.decode(frame)
        except RecursionError:  # nested past the parser's own depth: far past the limit
            raise ProtocolError(
                ErrorCode.MALFORMED_FRAME, "the frame is nested too deeply"
            ) from None
        except ValueError as error:
            raise ProtocolError(
                ErrorCode.MALFORMED_FRAME, f"not a valid JSON frame: {error}"
            ) from None
        if not _depth_ok(data, self.limits.max_depth):
            problem: str | None = "the frame is nested too deeply"
        else:
            problem = _json_problem(data, self.limits)
        if problem is not None:
            request_id = _request_id(data) if isinstance(data, dict) else None
            raise ProtocolError(ErrorCode.MALFORMED_FRAME, problem, request_id=request_id)
        return data

    def dumps(self, data: dict[str, Any]) -> str:
        """Serialize to compact JSON."""
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _json_problem(value: Any, limits: Limits) -> str | None:
    """What breaks the limits in parsed JSON (msgpack's reader checks these itself), or None."""
    if isinstance(value, str):
        if len(value) > limits.max_str_len:
            return f"a string is longer than {limits.max_str_len} characters"
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate, from an escape such as \ud800
                return "a string is not valid Unicode"
        return None
    if isinstance(value, list):
        if len(value) > limits.max_array_len:
            return f"an array has more than {limits.max_array_len} items"
        items: list[Any] = value
    elif isinstance(value, dict):
        if len(value) > limits.max_map_len:
            return f"a map has more than {limits.max_map_len} keys"
        items = [*value.keys(), *value.values()]
    else:
        return None
    for item in items:
        problem = _json_problem(item, limits)
        if problem is not None:
            return problem
    return None


def codec_for(subprotocol: str | None, limits: Limits | None = None) -> Codec:
    """The codec of a negotiated subprotocol (msgpack when none was negotiated)."""
    if subprotocol == JSON_SUBPROTOCOL:
        return JsonCodec(limits)
    return MsgpackCodec(limits)
