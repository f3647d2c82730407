"""Player identity: ids, signed tokens and display names."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import unicodedata

from ..protocol import ErrorCode, ProtocolError

__all__ = ["check_name", "new_player_id", "sign_token", "verify_token"]


def new_player_id() -> str:
    """A fresh, random player id."""
    return secrets.token_hex(8)


def _mac(secret: bytes, player_id: str) -> str:
    digest = hmac.new(secret, player_id.encode(), hashlib.sha256).digest()[:18]
    return base64.urlsafe_b64encode(digest).decode()


def sign_token(secret: bytes, player_id: str) -> str:
    """The token that proves ``player_id``: the id and its HMAC-SHA256 under ``secret``."""
    return f"{player_id}.{_mac(secret, player_id)}"


def verify_token(secret: bytes, token: str) -> str | None:
    """The player id a token proves, or None if it is forged or malformed."""
    player_id, _, mac = token.partition(".")
    if not player_id or not mac or len(player_id) > 64 or not token.isascii():
        return None
    return player_id if hmac.compare_digest(mac, _mac(secret, player_id)) else None


def check_name(name: str, max_len: int) -> str:
    """The display name, trimmed; raise ProtocolError(BAD_NAME) if it is empty, long or odd."""
    cleaned = " ".join(name.split())
    if not cleaned:
        raise ProtocolError(ErrorCode.BAD_NAME, "a display name cannot be empty")
    if len(cleaned) > max_len:
        raise ProtocolError(ErrorCode.BAD_NAME, f"a display name has at most {max_len} characters")
    if any(unicodedata.category(ch).startswith("C") for ch in cleaned):
        raise ProtocolError(ErrorCode.BAD_NAME, "a display name cannot hold control characters")
    return cleaned
