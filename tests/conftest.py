"""Fixtures shared by the whole suite: running servers and clients on loopback."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from solrace.client import Client
from solrace.server import Node, ServerConfig, SolraceServer, make_backend

#: Every wait in the tests is a multiple of this, so a slow machine can scale them all.
TIMEOUT = float(os.environ.get("SOLRACE_TEST_TIMEOUT", "10"))


@dataclass
class RunningServer:
    """A server node on a free loopback port."""

    server: SolraceServer
    config: ServerConfig

    @property
    def url(self) -> str:
        """The websocket URL of the node."""
        return f"ws://127.0.0.1:{self.server.port}/"

    @property
    def node(self) -> Node:
        """The node behind the server."""
        return self.server.node


ServerFactory = Callable[..., Awaitable[RunningServer]]


@pytest.fixture(params=["embedded"])
def backend_kind(request: pytest.FixtureRequest) -> str:
    """Which backend the server tests run on."""
    return str(request.param)


@pytest.fixture
async def start_server(tmp_path: Path, backend_kind: str) -> AsyncIterator[ServerFactory]:
    """Start server nodes (sharing one backend store) with any config overrides."""
    servers: list[SolraceServer] = []

    async def start(**overrides: Any) -> RunningServer:
        config = replace(ServerConfig(port=0, data_dir=tmp_path / "data"), **overrides)
        server = SolraceServer(Node(make_backend(config), config), config)
        await server.start()
        servers.append(server)
        return RunningServer(server, config)

    yield start
    for server in servers:
        await server.close()


@pytest.fixture
async def server(start_server: ServerFactory) -> RunningServer:
    """One running node with the default settings."""
    return await start_server()


ClientFactory = Callable[..., Awaitable[Client]]


@pytest.fixture
async def make_client(server: RunningServer) -> AsyncIterator[ClientFactory]:
    """Connect clients to ``server`` (closed at the end of the test)."""
    clients: list[Client] = []

    async def make(name: str = "player", url: str | None = None, **kwargs: Any) -> Client:
        client = Client(url or server.url, name=name, request_timeout=TIMEOUT, **kwargs)
        await client.connect()
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()
