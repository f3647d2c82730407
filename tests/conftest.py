"""Fixtures shared by the whole suite: running servers and clients on loopback."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from redis_server import RedisServer

from solrace.client import Client
from solrace.engine import Status, new_game
from solrace.server import Node, ServerConfig, SolraceServer, make_backend
from solrace.server import commands as commands_module
from solrace.server.config import Budgets

#: Budgets for tests that play as many people from one address (every test client is on
#: 127.0.0.1): only the identity's message rate keeps its default. The budgets' own tests
#: set what they check (tests/server/test_budgets.py).
LOOSE_BUDGETS = Budgets(
    address_messages_per_second=1e6,
    address_burst=1 << 30,
    connections_per_address=1 << 20,
    address_connections_per_second=1e6,
    address_connection_burst=1 << 30,
    rooms_per_hour=1 << 20,
    address_rooms_per_hour=1 << 20,
    room_share_per_address=1.0,
    joins_per_minute=1 << 20,
    address_joins_per_minute=1 << 20,
    identities_per_hour=1 << 20,
    daily_starts_per_day=1 << 20,
    address_daily_starts_per_day=1 << 20,
    logins_per_minute=1 << 20,
    account_logins_per_hour=1 << 20,
    accounts_per_day=1 << 20,
    races_per_hour=1 << 20,
    address_races_per_hour=1 << 20,
    address_winnable_races_per_hour=1 << 20,
    members_interval_s=0.0,
)

#: Every wait in the tests is a multiple of this, so a slow machine can scale them all.
TIMEOUT = float(os.environ.get("SOLRACE_TEST_TIMEOUT", "10"))
PLAIN_DEALS: dict[str, Any] = {"winnable_default": False, "daily_winnable": False}
"""Settings of a test node whose rooms deal any seed (tests choose their deals) and whose
daily deal is the day's first candidate seed: no solver worker busy certifying deals."""


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


@pytest.fixture(autouse=True)
def playable_deals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Race seeds that the node draws give a Canfield deal with a move to make.

    About one Canfield deal in a hundred is stuck before its first move, and such a race
    ends at its start; tests that play a draw first would then fail by chance. Tests that
    need a given seed set it themselves (e2e_support.deal_seed).
    """
    draw = secrets.randbits

    def playable(bits: int) -> int:
        while True:
            seed = draw(bits)
            if new_game("canfield", seed).status is Status.PLAYING:
                return seed

    monkeypatch.setattr(commands_module.secrets, "randbits", playable)


@pytest.fixture(params=["embedded", "redis"])
def backend_kind(request: pytest.FixtureRequest) -> str:
    """Which backend the server tests run on."""
    return str(request.param)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server of the test run's own, started on first use, stopped at the end."""
    if not RedisServer.available():
        pytest.skip("redis-server is not installed")
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(backend_kind: str, request: pytest.FixtureRequest) -> str | None:
    """For the redis kind, the URL of an emptied (and running) Redis; else None."""
    if backend_kind != "redis":
        return None
    server: RedisServer = request.getfixturevalue("redis_server")
    server.start()  # a test may have stopped it
    server.flush()
    return server.url


@pytest.fixture
async def start_server(tmp_path: Path, redis_url: str | None) -> AsyncIterator[ServerFactory]:
    """Start server nodes (sharing one backend store) with any config overrides."""
    servers: list[SolraceServer] = []

    async def start(clock: Callable[[], float] = time.time, **overrides: Any) -> RunningServer:
        # Every move is reported (most tests count one progress event per move);
        # tests/server/test_progress_interval.py covers the default interval.
        # Embedded nodes running at once each have a data directory of their own (a node
        # takes its directory for itself); one started after another stopped reuses it.
        busy = {
            s.node.config.data_dir
            for s in servers
            if s.node.backend.in_process and not s.node.stopped
        }
        data_dir = next(
            tmp_path / name
            for name in ("data", *(f"data{n}" for n in range(2, 100)))
            if tmp_path / name not in busy
        )
        # Tests choose their deals (e2e_support.deal_seed): rooms deal any seed unless a
        # test asks for winnable deals (tests/server/test_winnable.py does). PLAIN_DEALS.
        base = ServerConfig(
            port=0,
            data_dir=data_dir,
            redis_url=redis_url,
            progress_interval_s=0.0,
            budgets=LOOSE_BUDGETS,
            **PLAIN_DEALS,
        )
        config = replace(base, **overrides)
        server = SolraceServer(Node(make_backend(config), config, clock=clock), config)
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
