"""docs/protocol.md against the code: every message has an example, every code and limit a row."""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from solrace.protocol import (
    REQUESTS,
    CloseCode,
    ErrorCode,
    JsonCodec,
    Limits,
    ServerMessage,
)
from solrace.server import ServerConfig
from solrace.server.config import Budgets
from solrace.server.room import TRANSITIONS, RoomState

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
SERVER_MESSAGES: dict[str, type[Any]] = {cls.type: cls for cls in typing.get_args(ServerMessage)}
NOT_LIMITS = {"host", "port", "data_dir", "redis_url", "limits", "budgets", "log_format"}


@cache
def _text() -> str:
    return DOC.read_text(encoding="utf-8")


@cache
def _examples() -> list[tuple[str, dict[str, Any]]]:
    """Every ```json block of the page: its source and the object it holds."""
    blocks = re.findall(r"```json\n(.*?)```", _text(), flags=re.S)
    return [(block, json.loads(block)) for block in blocks]


def _rows() -> list[str]:
    return [line for line in _text().splitlines() if line.startswith("|")]


def _row_of(name: str) -> str:
    rows = [row for row in _rows() if row.startswith(f"| `{name}` |")]
    assert len(rows) == 1, f"no table row (or more than one) starts with `{name}`"
    return rows[0]


def test_every_example_is_a_map_with_a_known_type() -> None:
    assert _examples()
    for _, example in _examples():
        assert isinstance(example, dict)
        assert example.get("type") in {*REQUESTS, *SERVER_MESSAGES}, example


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_every_request_has_an_example_that_decodes(kind: str) -> None:
    sources = [source for source, example in _examples() if example["type"] == kind]
    assert sources, f"docs/protocol.md has no example of {kind!r}"
    for source in sources:
        request = JsonCodec().decode(source)
        assert request.type == kind


@pytest.mark.parametrize("kind", sorted(SERVER_MESSAGES))
def test_every_server_message_has_an_example_with_its_fields(kind: str) -> None:
    examples = [example for _, example in _examples() if example["type"] == kind]
    assert examples, f"docs/protocol.md has no example of {kind!r}"
    cls = SERVER_MESSAGES[kind]
    names = {f.name for f in dataclasses.fields(cls)}
    required = {
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
        and "None" not in str(f.type)
    }
    for example in examples:
        keys = set(example) - {"type"}
        assert keys <= names, f"{kind}: unknown keys {keys - names}"
        assert required <= keys, f"{kind}: missing {required - keys}"


def test_every_request_and_event_has_a_section() -> None:
    headings = re.findall(r"^### `(\w+)`", _text(), flags=re.M)
    assert set(headings) == {*REQUESTS, *SERVER_MESSAGES}


@pytest.mark.parametrize("code", list(ErrorCode), ids=str)
def test_every_error_code_is_listed(code: ErrorCode) -> None:
    row = _row_of(code.value)
    assert row.count("|") >= 3 and len(row) > len(code.value) + 12


@pytest.mark.parametrize("code", list(CloseCode), ids=str)
def test_every_close_code_is_listed(code: CloseCode) -> None:
    rows = [row for row in _rows() if row.startswith(f"| {code.value} |")]
    assert len(rows) == 1, f"close code {code.value} has no row"


def _default_text(value: Any) -> str:
    if value is None or value == ():
        return "none"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


LIMITS = [(f.name, f.default) for f in dataclasses.fields(Limits)]
BUDGETS = [(f.name, f.default) for f in dataclasses.fields(Budgets)]
SERVER_LIMITS = [
    (f.name, f.default) for f in dataclasses.fields(ServerConfig) if f.name not in NOT_LIMITS
]


@pytest.mark.parametrize(("name", "default"), LIMITS + BUDGETS + SERVER_LIMITS)
def test_every_limit_is_listed_with_its_default(name: str, default: Any) -> None:
    cells = [cell.strip() for cell in _row_of(name).strip("|").split("|")]
    assert cells[1] == _default_text(default), f"{name}: the page says {cells[1]}"


def test_every_state_and_transition_is_in_the_lifecycle_table() -> None:
    lifecycle = [row for row in _rows() if re.match(r"\| `\w+` \| .* \| `\w+` \|$", row)]
    pairs = {(row.split("`")[1], row.split("`")[-2]) for row in lifecycle}
    for (source, _), target in TRANSITIONS.items():
        assert (source.value, target.value) in pairs
    assert {s for pair in pairs for s in pair} >= {state.value for state in RoomState}


def test_the_http_endpoints_are_listed() -> None:
    for path in ("/healthz", "/readyz", "/metrics"):
        assert any(row.startswith(f"| `{path}` |") for row in _rows())
