"""The JSON API over HTTP is budgeted per client address: 429 with Retry-After past it.

Requests go over plain HTTP/1.1 on loopback to a real node. To play clients at other
addresses, a node trusts 127.0.0.1 as a proxy and each request carries the ``X-Real-IP``
a proxy would; a node that trusts no proxy counts every request as 127.0.0.1's.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import replace
from typing import Any

from conftest import LOOSE_BUDGETS, TIMEOUT, RunningServer, ServerFactory

from solrace.server.config import Budgets

PROXIED = ("127.0.0.1",)
ATTACKER = "203.0.113.7"
NEIGHBOUR = "198.51.100.9"
API = "/api/best?variant=canfield"


async def get(
    server: RunningServer,
    path: str,
    headers: dict[str, str] | None = None,
    *,
    method: str = "GET",
) -> tuple[int, dict[str, str], bytes]:
    """``method path`` on the node's main port: status, headers (lower-case names), body."""
    async with asyncio.timeout(TIMEOUT):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.server.port)
        lines = [f"{method} {path} HTTP/1.1", "Host: localhost"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status_line, *rest = head.strip().split("\r\n")
        fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in rest)}
        length = 0 if method == "HEAD" else int(fields["content-length"])
        body = await reader.readexactly(length)
        writer.close()
        await writer.wait_closed()
    return int(status_line.split()[1]), fields, body


def at(address: str) -> dict[str, str]:
    """The header a trusted proxy adds for a client at ``address``."""
    return {"X-Real-IP": address}


async def serve(start_server: ServerFactory, **budgets: Any) -> RunningServer:
    return await start_server(budgets=replace(LOOSE_BUDGETS, **budgets), trusted_proxies=PROXIED)


def too_many(status: int, headers: dict[str, str], body: bytes, longest_s: float) -> bool:
    """Whether the answer is the API's refusal, with a wait of at most ``longest_s``."""
    if status != 429:
        return False
    data = json.loads(body)
    retry = int(headers["retry-after"])
    return (
        headers["content-type"] == "application/json"
        and data["code"] == "rate_limited"
        and data["reason"] == "api_requests_per_second"
        and 0 < data["retry_after"] <= longest_s
        and retry == max(1, math.ceil(data["retry_after"]))
        and f"try again in {retry} s" in data["message"]
        and headers["x-content-type-options"] == "nosniff"
    )


async def test_an_address_past_its_api_burst_gets_429_and_the_rest_do_not(
    start_server: ServerFactory,
) -> None:
    server = await serve(start_server, api_requests_per_second=0.2, api_burst=5)
    paths = [API, "/api/leaderboard?variant=canfield", "/api/daily?variant=canfield"]
    paths += ["/api/history", "/api/nope"]  # every answer under /api/ counts, 401 and 404 too
    statuses = [(await get(server, path, at(ATTACKER)))[0] for path in paths]
    assert statuses == [200, 200, 200, 401, 404], statuses
    over = await get(server, API, at(ATTACKER))
    assert too_many(*over, longest_s=5.0), over
    assert over[1]["retry-after"] == "5"  # one request each 5 s
    head = await get(server, API, at(ATTACKER), method="HEAD")
    assert head[0] == 429 and head[1]["retry-after"] == "5" and head[2] == b""
    # The page, the probes and the websocket are not the API's: none is counted.
    for path in ("/", "/daily", "/app.js", "/healthz", "/readyz"):
        assert (await get(server, path, at(ATTACKER)))[0] == 200, path
    # Another address has its own budget.
    assert (await get(server, API, at(NEIGHBOUR)))[0] == 200


async def test_the_rate_refills_after_retry_after(start_server: ServerFactory) -> None:
    server = await serve(start_server, api_requests_per_second=20.0, api_burst=2)
    for _ in range(2):
        assert (await get(server, API, at(ATTACKER)))[0] == 200
    status, headers, body = await get(server, API, at(ATTACKER))
    assert too_many(status, headers, body, longest_s=1 / 20), (status, body)
    await asyncio.sleep(json.loads(body)["retry_after"] + 0.01)
    assert (await get(server, API, at(ATTACKER)))[0] == 200


async def test_an_ipv6_address_counts_by_its_64(start_server: ServerFactory) -> None:
    server = await serve(start_server, api_requests_per_second=0.1, api_burst=2)
    for host in ("2001:db8:1:2::1", "2001:db8:1:2:ffff::9"):
        assert (await get(server, API, at(host)))[0] == 200
    assert (await get(server, API, at("2001:db8:1:2:abcd::5")))[0] == 429
    assert (await get(server, API, at("2001:db8:1:3::1")))[0] == 200


async def test_an_untrusted_peer_is_counted_at_its_own_address(
    start_server: ServerFactory,
) -> None:
    server = await start_server(
        budgets=replace(LOOSE_BUDGETS, api_requests_per_second=0.1, api_burst=3)
    )
    answers = [await get(server, API, at(f"192.0.2.{n}")) for n in range(4)]
    assert [a[0] for a in answers] == [200, 200, 200, 429], [a[0] for a in answers]


async def test_a_flood_from_one_address_is_held_to_the_default_rate(
    start_server: ServerFactory,
) -> None:
    server = await start_server()  # no proxy: every request is 127.0.0.1's
    budgets = server.config.budgets
    assert (budgets.api_requests_per_second, budgets.api_burst) == (10.0, 60)
    assert (Budgets().api_requests_per_second, Budgets().api_burst) == (10.0, 60)
    loop = asyncio.get_running_loop()
    began = loop.time()
    statuses: list[int] = []
    for _ in range(5):  # waves of requests at once, as a flood sends them
        answers = await asyncio.gather(*(get(server, API) for _ in range(40)))
        statuses += [status for status, _, _ in answers]
    took = loop.time() - began
    assert set(statuses) == {200, 429}, statuses
    assert 60 <= statuses.count(200) <= 60 + math.ceil(10 * took) + 1, (statuses, took)
