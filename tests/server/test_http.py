"""The HTTP endpoints beside the websocket: health, readiness, metrics (on the metrics
listener), and 404."""

from __future__ import annotations

import asyncio
import gc
import re

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from e2e_support import FAST, apply_text, deal_seed, fresh, steady_move

from solrace.client import ServerError

SEED = 99


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """A node whose rate limit lets a test play at full speed, with a metrics listener."""
    return await start_server(limits=FAST, metrics_port=0)


async def get(
    server: RunningServer, path: str, port: int | None = None
) -> tuple[int, dict[str, str], str]:
    """GET ``path`` from the node (its main port) over plain HTTP/1.1: status, headers, body."""
    async with asyncio.timeout(TIMEOUT):
        reader, writer = await asyncio.open_connection("127.0.0.1", port or server.server.port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status_line, *lines = head.strip().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        body = await reader.readexactly(int(headers["content-length"]))
        writer.close()
        await writer.wait_closed()
    return int(status_line.split()[1]), headers, body.decode()


async def test_health_and_readiness(server: RunningServer) -> None:
    assert (await get(server, "/healthz"))[0] == 200
    status, headers, body = await get(server, "/readyz")
    assert status == 200 and body == "ready\n"
    assert headers["content-type"].startswith("text/plain")
    assert (await get(server, "/healthz?probe=1"))[0] == 200


async def test_not_ready_while_the_backend_is_not(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def not_ready() -> bool:
        return False

    monkeypatch.setattr(server.node.backend, "ready", not_ready)
    status, _, body = await get(server, "/readyz")
    assert status == 503 and body == "not ready\n"
    assert (await get(server, "/healthz"))[0] == 200  # alive all the same


@pytest.mark.parametrize("path", ["/nope", "/metrics/x", "/../pyproject.toml", "/%2e%2e/README.md"])
async def test_an_unknown_path_is_404(server: RunningServer, path: str) -> None:
    status, _, body = await get(server, path)
    assert status == 404 and body == "not found\n"


def sample(text: str, name: str, labels: str = "") -> float:
    """The value of one sample in the Prometheus text format (0 if absent)."""
    pattern = rf"^{re.escape(name + labels)} (\S+)$"
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def test_metrics_count_moves_and_refusals_by_reason(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    deal_seed(monkeypatch, SEED)
    alice = await make_client("alice")
    bob = await make_client("bob")
    room = await alice.create_room("canfield", countdown=0)
    await bob.join(room["code"])
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    game = fresh("canfield", SEED)
    for _ in range(3):
        move = steady_move(game)
        await alice.move(move)
        apply_text(game, move)
    for illegal in ("t1-t1", "t1-t1", "t9-f"):
        with pytest.raises(ServerError) as refused:
            await alice.move(illegal)
        assert refused.value.code == "illegal_move"

    assert (await get(server, "/metrics"))[0] == 404, "not public on the main port"
    status, headers, text = await get(server, "/metrics", server.server.http.metrics_port)
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert "# TYPE solrace_moves_total counter" in text or "# TYPE solrace_moves counter" in text
    assert sample(text, "solrace_moves_total") == 3
    assert sample(text, "solrace_moves_refused_total", '{reason="same_pile"}') == 2
    assert sample(text, "solrace_moves_refused_total", '{reason="no_such_pile"}') == 1
    assert sample(text, "solrace_errors_total", '{code="illegal_move"}') == 3
    assert sample(text, "solrace_connections") == 2
    assert sample(text, "solrace_rooms") == 1
    # The cyclic collector's runs (this process's, the node's own in a test).
    young = sample(text, "python_gc_collections_total", '{generation="0"}')
    assert 1 <= young <= gc.get_stats()[0]["collections"]
