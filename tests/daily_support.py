"""Helpers for the daily challenge's tests: a clock moved by hand, players with accounts,
whole attempts, the JSON endpoints, and a deal of the day with a line that banks a card."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from conftest import TIMEOUT, RunningServer

from solrace.client import Client
from solrace.engine import new_game, parse_move
from solrace.server.daily import daily_seed

PASSWORD = "a daily pass phrase"
AT_ONCE: dict[str, Any] = {"daily_account_age_days": 0}
"""Server settings under which an account is ranked from the day it is made."""


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def account(url: str, name: str, **kwargs: Any) -> AsyncIterator[Client]:
    """A connected client whose guest identity has just claimed an account."""
    async with Client(url, name=name, request_timeout=TIMEOUT, **kwargs) as client:
        await client.claim(PASSWORD)
        yield client


async def attempt(client: Client, variant: str, moves: int) -> dict[str, Any]:
    """Play ``moves`` legal moves of today's deal, resign, and return the race_over event."""
    room = await client.daily(variant)
    assert room["settings"]["daily"] and room["settings"]["undo"] is False
    if client.view is None:
        await client.next_event("race_started", timeout=TIMEOUT)
    over = await play_and_end(client, moves)
    await client.leave()
    return over


async def play_and_end(client: Client, moves: int) -> dict[str, Any]:
    """Play up to ``moves`` legal moves, resign unless stuck, and return race_over."""
    room = client.room
    if room is not None and room.get("state") == "finished":
        # About one Canfield deal in a hundred has no move at its start, and the day's
        # deal comes from the node's fresh secret: such an attempt ends as it starts, its
        # race_over gone out with the start. The snapshot holds what it said.
        return {
            "type": "race_over",
            "attempt": room["settings"].get("attempt"),
            "results": room["results"],
        }
    for _ in range(moves):
        assert client.view is not None
        if not client.view["legal"]:
            break
        await client.move(client.view["legal"][0])
    assert client.view is not None
    if client.view["status"] == "playing":
        await client.resign()
    return await client.next_event("race_over", timeout=TIMEOUT)


def http_url(server: RunningServer, path: str) -> str:
    """The node's HTTP URL of ``path``."""
    return server.url.replace("ws://", "http://").rstrip("/") + path


async def http(server: RunningServer, path: str, token: str | None = None) -> Any:
    """GET a JSON endpoint from a thread, so the server on this loop can answer; with a
    player's ``token`` as its bearer (a history is its player's alone)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get() -> Any:
        request = urllib.request.Request(http_url(server, path), headers=headers)
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return json.loads(response.read())

    loop = asyncio.get_running_loop()
    give_up = loop.time() + TIMEOUT
    while True:
        try:
            return await asyncio.to_thread(get)
        except urllib.error.HTTPError as error:
            # A fresh node's first request of the day may come before the day's deal is
            # chosen (a busy machine): answered 503 with the wait, as a client retries.
            said = json.loads(error.read())
            if said.get("code") != "deal_pending" or loop.time() > give_up:
                raise
            await asyncio.sleep(float(error.headers["Retry-After"]))


async def http_answer(server: RunningServer, path: str) -> tuple[int, dict[str, str], Any]:
    """GET ``path``: the status, the headers and the JSON body, errors included."""

    def get() -> tuple[int, dict[str, str], Any]:
        try:
            with urllib.request.urlopen(http_url(server, path), timeout=TIMEOUT) as response:
                return response.status, dict(response.headers), json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), json.loads(error.read())

    return await asyncio.to_thread(get)


def scalars(value: Any) -> Iterator[Any]:
    """Every number and string inside ``value`` (frames, boards), keys aside."""
    if isinstance(value, dict):
        for item in value.values():
            yield from scalars(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from scalars(item)
    else:
        yield value


def shows(value: Any, seed: int) -> bool:
    """Whether ``value`` carries ``seed``, as a number or as its text."""
    return any(v == seed or v == str(seed) for v in scalars(value) if not isinstance(v, bool))


def banking_line(variant: str, seed: int, limit: int = 400) -> list[str] | None:
    """Moves of the deal up to one that banks a card (foundation moves first), the game
    still going after it; None if none is found within ``limit`` moves."""
    game = new_game(variant, seed, undo_allowed=False)
    start, line = game.banked, []
    while len(line) < limit and game.status.value == "playing":
        legal = [str(m) for m in game.legal_moves()]
        if not legal:
            return None
        move = next((m for m in legal if "-f" in m), legal[0])
        game.apply(parse_move(move))
        line.append(move)
        if game.banked > start:
            return line if game.status.value == "playing" else None
    return None


def banking_deal(secret: bytes, date: str) -> tuple[str, list[str]]:
    """A variant whose deal of the day has a line that banks a card, and that line."""
    for variant in ("canfield", "rainbow-canfield", "american-canister", "british-canister"):
        line = banking_line(variant, daily_seed(secret, date, variant))
        if line is not None:
            return variant, line
    pytest.skip("no deal of the day banks a card within reach")  # pragma: no cover


DAY = "2026-11-30"
NOON = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC).timestamp()


async def played_day(
    start_server: Any, name: str, gap_s: float = 0.25, **overrides: Any
) -> tuple[RunningServer, Clock, str, list[str], str]:
    """A server whose clock stands at noon of :data:`DAY`, where the account ``name`` has
    played a ranked attempt at a deal of the day that banks a card (a move each ``gap_s``
    seconds), then resigned: the server, its clock, the variant, the line and the player."""
    clock = Clock(NOON)
    server = await start_server(clock=clock, **AT_ONCE, **overrides)
    variant, line = banking_deal(server.node.secret, DAY)
    async with account(server.url, name) as client:
        await client.daily(variant)
        for move in line:
            clock.now += gap_s
            await client.move(move)
        await client.resign()
        await client.next_event("race_over", timeout=TIMEOUT)
        assert client.player_id is not None
        return server, clock, variant, line, client.player_id
