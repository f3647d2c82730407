"""``solrace serve`` as a real process: SIGTERM or SIGINT closes every connection with 1001."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from conftest import TIMEOUT
from process_support import PLAIN_DEAL_FLAGS

from solrace.client import Client


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def healthy(port: int) -> bool:
    """Whether the node answers /healthz."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    try:
        status = await reader.readline()
    except OSError:
        return False
    finally:
        writer.close()
    return status.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_closes_connections_with_1001_and_exits_0(
    tmp_path: Path, sig: signal.Signals
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "SOLRACE_REDIS_URL"}
    log = (tmp_path / "serve.log").open("wb")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "solrace",
        "serve",
        "--port",
        str(port),
        "--data-dir",
        str(tmp_path / "data"),
        *PLAIN_DEAL_FLAGS,
        stdout=log,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    clients: list[Client] = []
    try:
        async with asyncio.timeout(TIMEOUT):
            while not await healthy(port):
                assert process.returncode is None, "the server exited at start"
                await asyncio.sleep(0.05)  # polling for the process to listen
        url = f"ws://127.0.0.1:{port}/"
        for name in ("alice", "bob"):
            client = Client(url, name=name, resume=False, request_timeout=TIMEOUT)
            await client.connect()
            clients.append(client)
        room = await clients[0].create_room("canfield")
        await clients[1].join(room["code"], role="spectator")

        process.send_signal(sig)
        for client in clients:
            closed = await client.next_event("closed", timeout=TIMEOUT)
            assert closed["code"] == 1001
        async with asyncio.timeout(TIMEOUT):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        log.close()
        for client in clients:
            await client.close()
    assert (tmp_path / "data").is_dir()
