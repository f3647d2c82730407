"""/api/history shows a player's attempts to that player alone, who proves it with a token."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from conftest import TIMEOUT, ClientFactory, RunningServer

from solrace.server.daily import Entry
from solrace.server.identity import sign_token

DATE = "2026-11-20"


async def get(
    server: RunningServer, path: str, token: str | None = None, *, scheme: str = "Bearer"
) -> tuple[int, dict[str, str], Any]:
    """GET ``path`` with the token, if any: status, headers and the JSON body."""
    lines = [f"GET {path} HTTP/1.1", "Host: localhost"]
    if token is not None:
        lines.append(f"Authorization: {scheme} {token}")
    async with asyncio.timeout(TIMEOUT):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.server.port)
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status_line, *rest = head.strip().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in rest)}
        assert len(headers) == len(rest), f"a header sent twice:\n{head}"
        body = await reader.readexactly(int(headers["content-length"]))
        writer.close()
        await writer.wait_closed()
    return int(status_line.split()[1]), headers, json.loads(body)


async def played(server: RunningServer, player_id: str, name: str, banked: int) -> None:
    """Record a daily attempt of the player."""
    await server.node.backend.save_daily_entry(
        Entry(DATE, "canfield", player_id, name, 1, "stuck", banked, 40, 90_000)
    )


async def test_a_player_reads_their_own_history_with_their_token(
    server: RunningServer, make_client: ClientFactory
) -> None:
    olga = await make_client("olga")
    assert olga.token is not None and olga.player_id is not None
    await played(server, olga.player_id, "olga", 17)

    for path in ("/api/history", f"/api/history?player={olga.player_id}"):
        status, headers, body = await get(server, path, olga.token)
        assert status == 200, body
        assert body["player_id"] == olga.player_id
        assert [e["banked"] for e in body["history"]] == [17]
        assert "streaks" in body
        assert headers["cache-control"] == "private, no-store", "one player's data: not cached"


async def test_history_without_a_valid_token_is_refused(
    server: RunningServer, make_client: ClientFactory
) -> None:
    olga = await make_client("olga")
    assert olga.token is not None and olga.player_id is not None
    await played(server, olga.player_id, "olga", 17)
    path = f"/api/history?player={olga.player_id}"
    forged = sign_token(b"not the node's secret", olga.player_id)
    for token, scheme in (
        (None, "Bearer"),
        ("", "Bearer"),
        (forged, "Bearer"),
        (olga.token + "x", "Bearer"),
        (olga.player_id, "Bearer"),
        (olga.token, "Basic"),
    ):
        status, headers, body = await get(server, path, token, scheme=scheme)
        assert (status, body["code"]) == (401, "bad_token"), (token, scheme)
        assert headers["www-authenticate"].startswith("Bearer")
        assert "history" not in body


async def test_a_token_does_not_open_another_players_history(
    server: RunningServer, make_client: ClientFactory
) -> None:
    olga = await make_client("olga")
    mallory = await make_client("mallory")
    assert olga.player_id is not None and mallory.token is not None
    await played(server, olga.player_id, "olga", 17)

    status, _, body = await get(server, f"/api/history?player={olga.player_id}", mallory.token)
    assert (status, body["code"]) == (403, "forbidden")
    assert "history" not in body
    # Her own, without naming anyone, is empty.
    status, _, body = await get(server, "/api/history", mallory.token)
    assert status == 200 and body["player_id"] == mallory.player_id and body["history"] == []


async def test_the_boards_stay_public(server: RunningServer, make_client: ClientFactory) -> None:
    olga = await make_client("olga")
    assert olga.player_id is not None
    await played(server, olga.player_id, "olga", 17)
    query = f"/api/leaderboard?variant=canfield&date={DATE}&player={olga.player_id}"
    status, _, board = await get(server, query)
    assert status == 200 and board["you"]["player_id"] == olga.player_id
    assert "history" not in board
    status, _, best = await get(server, "/api/best?variant=canfield")
    assert status == 200 and [e["name"] for e in best["best"]] == ["olga"]
