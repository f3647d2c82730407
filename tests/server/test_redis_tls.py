"""A node on a Redis that speaks TLS alone (``rediss://``), as managed Redis services do.

The Redis is a real redis-server on a TLS port of its own (plain TCP off), with a
certificate signed by a CA the test makes with the openssl command: no system trusts it,
so the node verifies it only against the CA file its URL names (``ssl_ca_certs``), and
presents a client certificate (``ssl_certfile``, ``ssl_keyfile``) to a Redis that asks
for one. Each test runs the real ``solrace serve``.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TIMEOUT
from process_support import NodeProcess, Player
from redis_server import RedisServer, TlsFiles, free_port, make_tls_files
from test_serve_cli import assert_one_clear_line, clean_env, serve

from solrace.client import Client

PASSWORD = "tls-test-password"

pytestmark = pytest.mark.skipif(
    not RedisServer.available() or shutil.which("openssl") is None,
    reason="needs redis-server and openssl",
)


@pytest.fixture
def tls(tmp_path: Path) -> TlsFiles:
    return make_tls_files(tmp_path / "tls")


def tls_redis(tmp_path: Path, tls: TlsFiles, *options: str) -> Iterator[RedisServer]:
    redis = RedisServer(tmp_path / "redis", tls=tls, password=PASSWORD, options=options)
    redis.start()
    yield redis
    redis.stop()


@pytest.fixture
def redis(tmp_path: Path, tls: TlsFiles) -> Iterator[RedisServer]:
    """A TLS Redis that wants no client certificate (as most managed services)."""
    yield from tls_redis(tmp_path, tls, "--tls-auth-clients", "no")


@pytest.fixture
def strict_redis(tmp_path: Path, tls: TlsFiles) -> Iterator[RedisServer]:
    """A TLS Redis that wants a client certificate signed by its CA (Redis' default)."""
    yield from tls_redis(tmp_path, tls)


async def play_a_move(node: NodeProcess) -> str:
    """Make a room, race alone and play one move until it is acked; the room's code."""
    client = Client(node.url, name="tls", request_timeout=TIMEOUT)
    await client.connect()
    try:
        for _ in range(5):  # about one deal in a hundred is stuck before its first move
            room = await client.create_room("canfield", countdown=0)
            await client.start()
            await client.next_event("race_started", timeout=TIMEOUT)
            if await Player(client, 0, random.Random(7)).play_one():
                return str(room["code"])
            await client.leave()
        raise AssertionError("five stuck deals in a row")
    finally:
        await client.close()


async def run_node(tmp_path: Path, url: str) -> NodeProcess:
    node = NodeProcess(tmp_path / "node", url)
    node.start()
    try:
        await asyncio.to_thread(node.wait_listening)
    except BaseException:
        node.stop()
        raise
    return node


async def test_a_node_verifies_redis_by_the_ca_in_its_url_and_plays(
    tmp_path: Path, redis: RedisServer, tls: TlsFiles
) -> None:
    assert redis.url.startswith(f"rediss://:{PASSWORD}@")
    node = await run_node(tmp_path, f"{redis.url}?ssl_ca_certs={tls.ca}")
    try:
        assert node.status("/readyz") == 200
        code = await play_a_move(node)
    finally:
        node.stop()
    with redis.client() as client:  # the move went over TLS into that Redis
        assert client.exists(f"solrace:{{{code}}}:room") == 1
        logs = list(client.scan_iter(match=f"solrace:{{{code}}}:log:*"))
        assert [client.xlen(key) for key in logs] == [1], logs


async def test_a_redis_that_asks_for_a_client_certificate_takes_the_nodes(
    tmp_path: Path, strict_redis: RedisServer, tls: TlsFiles
) -> None:
    query = f"ssl_ca_certs={tls.ca}&ssl_certfile={tls.client_cert}&ssl_keyfile={tls.client_key}"
    node = await run_node(tmp_path, f"{strict_redis.url}?{query}")
    try:
        await play_a_move(node)
    finally:
        node.stop()


def test_without_the_ca_the_node_refuses_the_redis_on_one_line(
    tmp_path: Path, redis: RedisServer
) -> None:
    result = serve(tmp_path, "--port", str(free_port()), "--redis", redis.url)
    assert_one_clear_line(result, "certificate verify failed")
    assert "cannot reach Redis at rediss://:***@127.0.0.1:" in result.stderr
    assert PASSWORD not in result.stderr


def test_without_a_client_certificate_a_strict_redis_is_refused_on_one_line(
    tmp_path: Path, strict_redis: RedisServer, tls: TlsFiles
) -> None:
    url = f"{strict_redis.url}?ssl_ca_certs={tls.ca}"
    result = serve(tmp_path, "--port", str(free_port()), "--redis", url)
    # The refusal arrives as the server's alert or as a closed connection, by timing; either
    # way the one line says what to give.
    assert_one_clear_line(result, "give ssl_certfile= and ssl_keyfile= in the URL")
    assert "cannot reach Redis at rediss://:***@127.0.0.1:" in result.stderr


def test_the_store_commands_take_the_same_url(
    tmp_path: Path, redis: RedisServer, tls: TlsFiles
) -> None:
    # An operator's tool opens the store as a node does: the CA in the URL serves it too.
    process = subprocess.run(
        [sys.executable, "-m", "solrace", "leaderboard", "export", "--variant", "canfield",
         "--redis", f"{redis.url}?ssl_ca_certs={tls.ca}"],
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=4 * TIMEOUT,
        check=False,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    assert process.stdout.startswith("rank,"), process.stdout
