"""Player tokens and display names."""

from __future__ import annotations

import pytest

from solrace.protocol import ErrorCode, ProtocolError
from solrace.server.identity import check_name, new_player_id, sign_token, verify_token

SECRET = b"k" * 32


def test_a_signed_token_proves_its_player() -> None:
    player_id = new_player_id()
    assert verify_token(SECRET, sign_token(SECRET, player_id)) == player_id


@pytest.mark.parametrize(
    "token",
    ["", "abc", "abc.", ".abc", "abc.é", "é.abc", "x" * 80 + ".abc"],
)
def test_malformed_tokens_are_refused_without_raising(token: str) -> None:
    assert verify_token(SECRET, token) is None


def test_a_token_signed_with_another_secret_is_refused() -> None:
    assert verify_token(SECRET, sign_token(b"other", "p1")) is None


def test_names_are_trimmed_and_checked() -> None:
    assert check_name("  ann   lee ", 24) == "ann lee"
    for bad in ("", "   ", "x" * 25, "bad\x07name"):
        with pytest.raises(ProtocolError) as caught:
            check_name(bad, 24)
        assert caught.value.code is ErrorCode.BAD_NAME
