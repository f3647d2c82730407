"""Stable error codes for error frames, and the close codes the server uses."""

from __future__ import annotations

from enum import IntEnum, StrEnum

__all__ = ["CloseCode", "ErrorCode", "ProtocolError"]


class ErrorCode(StrEnum):
    """The ``code`` of an error frame; clients may branch on these, they never change."""

    MALFORMED_FRAME = "malformed_frame"
    FRAME_TOO_LARGE = "frame_too_large"
    UNKNOWN_TYPE = "unknown_type"
    BAD_FIELD = "bad_field"
    RATE_LIMITED = "rate_limited"
    OVER_BUDGET = "over_budget"
    NOT_IDENTIFIED = "not_identified"
    ALREADY_IDENTIFIED = "already_identified"
    BAD_NAME = "bad_name"
    BAD_TOKEN = "bad_token"
    UNKNOWN_VARIANT = "unknown_variant"
    ACCOUNT_REQUIRED = "account_required"
    BAD_SETTINGS = "bad_settings"
    ROOM_NOT_FOUND = "room_not_found"
    ROOM_FULL = "room_full"
    TOO_MANY_ROOMS = "too_many_rooms"
    SPECTATORS_NOT_ALLOWED = "spectators_not_allowed"
    ALREADY_IN_ROOM = "already_in_room"
    NOT_IN_ROOM = "not_in_room"
    NOT_HOST = "not_host"
    NOT_A_PLAYER = "not_a_player"
    WRONG_STATE = "wrong_state"
    RACE_NOT_STARTED = "race_not_started"
    RACE_OVER = "race_over"
    GAME_OVER = "game_over"
    MOVE_LIMIT = "move_limit"
    STALE_REVISION = "stale_revision"
    BAD_MOVE = "bad_move"
    ILLEGAL_MOVE = "illegal_move"
    UNAVAILABLE = "unavailable"
    WRONG_PASSWORD = "wrong_password"
    BAD_PASSWORD = "bad_password"
    NAME_TAKEN = "name_taken"
    ALREADY_AN_ACCOUNT = "already_an_account"
    NOT_AN_ACCOUNT = "not_an_account"
    INTERNAL = "internal_error"


class CloseCode(IntEnum):
    """Websocket close codes the server sends."""

    NORMAL = 1000
    GOING_AWAY = 1001
    UNSUPPORTED_DATA = 1003
    POLICY_VIOLATION = 1008
    MESSAGE_TOO_BIG = 1009
    INTERNAL_ERROR = 1011
    TRY_AGAIN_LATER = 1013
    REPLACED = 4001
    """The same player connected again elsewhere; this connection is no longer theirs."""
    REVOKED = 4003
    """The identity's tokens were revoked (by an operator, or its account: a new password,
    revoke_tokens, or the account deleted): they no longer work anywhere."""


class ProtocolError(Exception):
    """A frame or request the server refuses: an error code and a sentence."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        request_id: int | None = None,
        reason: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.reason = reason
        self.retry_after = retry_after
