"""/metrics: on the metrics listener, or on the main port to the metrics token alone."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from process_support import PLAIN_DEAL_FLAGS
from test_serve_cli import clean_env

from solrace.server.http import security_headers


@pytest.fixture
def backend_kind() -> str:
    """The listeners do not depend on the backend: the embedded one serves them."""
    return "embedded"


async def get(
    port: int, path: str, headers: dict[str, str] | None = None, *, upgrade: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """GET ``path`` on ``port`` over plain HTTP/1.1: status, headers and body."""
    lines = [f"GET {path} HTTP/1.1", "Host: localhost"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if upgrade:
        lines += [
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13",
        ]
    async with asyncio.timeout(TIMEOUT):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status_line, *rest = head.strip().split("\r\n")
        found = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in rest)}
        body = await reader.readexactly(int(found.get("content-length", "0")))
        writer.close()
        await writer.wait_closed()
    return int(status_line.split()[1]), found, body


async def test_metrics_are_not_public_on_the_main_port(server: RunningServer) -> None:
    port = server.server.port
    assert (await get(port, "/metrics"))[0] == 404
    bearer = {"Authorization": "Bearer anything"}
    assert (await get(port, "/metrics", bearer))[0] == 404, "no token set: no /metrics at all"
    assert server.server.http.metrics_port is None, "no metrics port unless asked for"


async def test_the_main_port_serves_metrics_to_the_metrics_token_alone(
    start_server: ServerFactory, make_client: ClientFactory
) -> None:
    token = "s3cret-metrics-token"
    node = await start_server(metrics_token=token)
    port = node.server.port
    for refused in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {token}"},
        {"Authorization": f"Bearer {token}x"},
        {"Authorization": "Bearer"},
    ):
        status, headers, body = await get(port, "/metrics", refused)
        assert (status, body) == (404, b"not found\n"), refused
        assert headers["x-content-type-options"] == "nosniff"
    status, headers, body = await get(port, "/metrics", {"Authorization": f"Bearer {token}"})
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert b"solrace_connections" in body
    status, _, _ = await get(port, "/metrics", {"authorization": f"bearer  {token} "})
    assert status == 200, "the scheme's case and spaces around the token do not matter"


async def test_the_metrics_listener_serves_metrics_and_nothing_else(
    start_server: ServerFactory, make_client: ClientFactory
) -> None:
    node = await start_server(metrics_port=0, metrics_host="127.0.0.1")
    metrics_port = node.server.http.metrics_port
    assert metrics_port is not None and metrics_port != node.server.port
    await make_client("alice", url=node.url)

    status, headers, body = await get(metrics_port, "/metrics")
    assert status == 200 and headers["content-type"] == "text/plain; version=0.0.4"
    assert b"\nsolrace_connections 1.0\n" in body
    for name, value in security_headers("localhost"):
        assert headers[name.lower()] == value

    # The page, the API and websockets stay on the main port; the probes answer on both
    # (a liveness probe here still answers when the main port is full).
    for path in ("/", "/api/best?variant=canfield", "/app.js", "/metrics/x"):
        assert (await get(metrics_port, path))[0] == 404, path
    for path in ("/healthz", "/readyz"):
        assert (await get(metrics_port, path))[0] == 200, path
    status, _, _ = await get(metrics_port, "/", upgrade=True)
    assert status == 404, "no websocket on the metrics listener"
    assert (await get(node.server.port, "/metrics"))[0] == 404


async def test_closing_the_node_closes_the_metrics_listener(start_server: ServerFactory) -> None:
    node = await start_server(metrics_port=0)
    metrics_port = node.server.http.metrics_port
    assert metrics_port is not None
    assert (await get(metrics_port, "/metrics"))[0] == 200
    await node.server.close()
    assert node.server.http.metrics_port is None
    with pytest.raises(OSError):
        await asyncio.wait_for(asyncio.open_connection("127.0.0.1", metrics_port), TIMEOUT)


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port that another socket listens on for the test's length."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_serve_with_the_metrics_port_in_use_says_which(tmp_path: Path, taken_port: int) -> None:
    command = [sys.executable, "-m", "solrace", "serve", "--port", "0", *PLAIN_DEAL_FLAGS]
    process = subprocess.run(
        [*command, "--data-dir", str(tmp_path / "data"), "--metrics-port", str(taken_port)],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=4 * TIMEOUT,
        check=False,
    )
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    assert process.returncode != 0
    assert "Traceback" not in process.stderr, process.stderr
    assert lines == [
        f"solrace serve: cannot listen on 127.0.0.1:{taken_port} (--metrics-port): "
        "address already in use"
    ], process.stderr
