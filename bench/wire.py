"""The little websocket the benchmark harnesses speak by hand (client side only)."""

from __future__ import annotations

import base64
import os

__all__ = ["client_frame", "upgrade_request"]


def client_frame(payload: bytes, opcode: int = 0x2) -> bytes:
    """A client frame: FIN, masked with a zero key (the payload then goes as is)."""
    n = len(payload)
    if n < 126:
        header = bytes((0x80 | opcode, 0x80 | n))
    elif n < 65536:
        header = bytes((0x80 | opcode, 0x80 | 126)) + n.to_bytes(2, "big")
    else:
        header = bytes((0x80 | opcode, 0x80 | 127)) + n.to_bytes(8, "big")
    return header + b"\0\0\0\0" + payload


def upgrade_request(host: str, port: int, subprotocol: str) -> bytes:
    """The opening handshake's request, with a fresh key."""
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {subprotocol}\r\n\r\n"
    ).encode()
