"""A large answer of the JSON API counts against its address's budget by its size.

A race kept for its replay holds every move: a race as long as its time limit allows (an
hour at the message rate, 108,000 moves a player) is megabytes of JSON, read from the
store and written out whole for each ``/api/race``. Counted as one request each, an
address asked for ten a second: half a second of the node's loop each for a race of
eight such players, and, unread, each answer held in the node's memory (a script that
never read its answers grew a node by 250 MiB in 20 s). Now each
``API_BYTES_PER_REQUEST`` of an answer past the first counts as one more request.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

from conftest import LOOSE_BUDGETS, TIMEOUT, RunningServer, ServerFactory

from solrace.server.budgets import API_BYTES_PER_REQUEST

PROXIED = ("127.0.0.1",)
ATTACKER = "203.0.113.7"
NEIGHBOUR = "198.51.100.9"
CODE = "L0NGRACE"
RATE = 2.0
BURST = 10


async def get(server: RunningServer, path: str, address: str) -> tuple[int, dict[str, str], Any]:
    """GET ``path`` as a client at ``address`` (behind the trusted proxy)."""
    async with asyncio.timeout(TIMEOUT):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.server.port)
        lines = [f"GET {path} HTTP/1.1", "Host: localhost", f"X-Real-IP: {address}"]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status_line, *rest = head.strip().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in rest)}
        body = await reader.readexactly(int(headers["content-length"]))
        writer.close()
        await writer.wait_closed()
    return int(status_line.split()[1]), headers, json.loads(body)


async def long_race(server: RunningServer, moves: int) -> str:
    """A finished live race of one player who drew and undid ``moves`` times: its path."""
    line = ["d", "u"] * (moves // 2)
    record: dict[str, Any] = {
        "format": "solrace-race/1",
        "room": CODE,
        "race": 1,
        "variant": "canfield",
        "seed": 1,
        "par": None,
        "par_line": None,
        "ghost": None,
        "undo": True,
        "spectators": "live",
        "ended_ms": server.node.now_ms(),
        "players": {"0123456789abcdef": {"name": "runner", "moves": line, "times": [0] * moves}},
        "results": [],
    }
    now = server.node.now_ms()
    await server.node.backend.save_race(CODE, 1, record, now, 86_400_000)
    server.node.backend.flush_writes()
    return f"/api/race?room={CODE}&race=1"


async def node(start_server: ServerFactory) -> RunningServer:
    budgets = replace(LOOSE_BUDGETS, api_requests_per_second=RATE, api_burst=BURST)
    return await start_server(budgets=budgets, trusted_proxies=PROXIED)


async def test_a_large_answer_spends_the_budget_by_its_size(start_server: ServerFactory) -> None:
    server = await node(start_server)
    path = await long_race(server, 100_000)  # some 700 KB of JSON
    status, headers, body = await get(server, path, ATTACKER)
    assert status == 200 and len(body["players"]["0123456789abcdef"]["moves"]) == 100_000
    units = int(headers["content-length"]) // API_BYTES_PER_REQUEST
    assert units > BURST, "the answer is worth more than the whole burst"
    status, headers, body = await get(server, path, ATTACKER)
    assert status == 429, "the address spent its burst and more on the first answer"
    assert body["reason"] == "api_requests_per_second"
    # It waits for what it owes: the units past the burst, at the rate.
    assert body["retry_after"] >= (units + 1 - BURST) / RATE - 1, body
    assert int(headers["retry-after"]) >= 1
    # Another address is not held back.
    status, _, _ = await get(server, path, NEIGHBOUR)
    assert status == 200


async def test_small_answers_count_one_request_each(start_server: ServerFactory) -> None:
    server = await node(start_server)
    path = await long_race(server, 100)
    statuses = [(await get(server, path, ATTACKER))[0] for _ in range(BURST)]
    assert statuses == [200] * BURST
    assert (await get(server, path, ATTACKER))[0] == 429
