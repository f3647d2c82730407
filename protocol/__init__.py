"""Wire messages, codecs, limits and error codes. No I/O."""

from __future__ import annotations

from .codec import (
    JSON_SUBPROTOCOL,
    MSGPACK_SUBPROTOCOL,
    SUBPROTOCOLS,
    Codec,
    JsonCodec,
    MsgpackCodec,
    codec_for,
)
from .delta import apply_delta
from .errors import CloseCode, ErrorCode, ProtocolError
from .limits import Limits, RateLimiter
from .messages import *  # noqa: F403
from .messages import __all__ as _messages

__all__ = [
    "JSON_SUBPROTOCOL",
    "MSGPACK_SUBPROTOCOL",
    "SUBPROTOCOLS",
    "CloseCode",
    "Codec",
    "ErrorCode",
    "JsonCodec",
    "Limits",
    "MsgpackCodec",
    "ProtocolError",
    "RateLimiter",
    "apply_delta",
    "codec_for",
    *_messages,
]
