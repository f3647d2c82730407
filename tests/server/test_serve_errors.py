"""``solrace serve`` with a bad setting: one line on stderr, a non-zero exit, no traceback.

Each test runs the real command in a process of its own against a real obstacle: a flag
value that is not one, a Redis URL that is not one, a Redis that refuses the node, a
data directory whose SQLite file cannot be opened or written. A bad flag exits 2 (the
usage error of every command), a store that cannot be used exits 1. The leaderboard
tools that open the store say the same. Also here: SIGHUP drains the node as SIGTERM
does, and the JSON log holds JSON lines alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import TIMEOUT
from process_support import NodeProcess
from redis_server import RedisServer, free_port
from test_serve_cli import Exit, assert_one_clear_line, clean_env, serve, serve_config

from solrace.client import Client
from solrace.server import EmbeddedBackend, ServerConfig
from solrace.server.budgets import forwarded_client, trusted_networks

# -- flag values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        # Before: accepted, and every websocket was closed 1011 and /api/ answered 500.
        ("--trusted-proxy", "nginx", "an IP address or network (CIDR) is wanted, not 'nginx'"),
        ("--trusted-proxy", "", "an IP address or network (CIDR) is wanted, not ''"),
        ("--trusted-proxy", "10.0.0.0/33", "an IP address or network (CIDR) is wanted, not '10."),
        # Kubernetes leaves $(NAME) as it is when the ConfigMap lacks NAME.
        (
            "--trusted-proxy",
            "$(SOLRACE_TRUSTED_PROXY)",
            "an IP address or network (CIDR) is wanted, not '$(SOLRACE_TRUSTED_PROXY)' "
            "(a variable that was never filled in",
        ),
        ("--allow-origin", "example.com", "an origin (https://host[:port]) is wanted"),
        ("--allow-origin", "https://example.com/play", "an origin (https://host[:port]) is wanted"),
        ("--allow-origin", "ftp://example.com", "an origin (https://host[:port]) is wanted, not"),
        # Before: uvloop listened on 34463 (99999 mod 65536), asyncio raised OverflowError.
        ("--port", "99999", "at most 65535 is wanted, not 99999"),
        ("--port", "-1", "at least 0 is wanted, not -1"),
        ("--metrics-port", "70000", "at most 65535 is wanted, not 70000"),
        ("--resume-grace", "-5", "at least 0 is wanted, not -5"),
        ("--guest-ttl", "-1", "more than 0 is wanted, not -1"),
        ("--guest-ttl", "0", "more than 0 is wanted, not 0"),
        ("--daily-account-age", "-1", "at least 0 is wanted, not -1"),
        ("--redis-socket-timeout", "0", "more than 0 is wanted, not 0"),
        ("--redis-connect-timeout", "-1", "more than 0 is wanted, not -1"),
        ("--redis-retries", "-1", "at least 0 is wanted, not -1"),
        ("--redis-pool-timeout", "-1", "at least 0 is wanted, not -1"),
        ("--redis-ping-interval", "nan", "more than 0 is wanted, not nan"),
        ("--redis-max-reconnect-delay", "0", "more than 0 is wanted, not 0"),
        ("--redis-room-ttl", "-60", "at least 0 is wanted, not -60"),
    ],
)
def test_a_bad_flag_value_is_one_line_naming_the_flag_and_exits_2(
    tmp_path: Path, flag: str, value: str, says: str
) -> None:
    result = serve(tmp_path, "--port", str(free_port()), f"{flag}={value}")
    assert result.code == 2
    assert_one_clear_line(result, f"argument {flag}: {says}")
    assert not (tmp_path / "data").exists()  # refused before anything started


@pytest.mark.parametrize(
    ("flag", "value", "setting", "wanted"),
    [
        ("--trusted-proxy", "10.0.0.0/8", lambda c: c.trusted_proxies, ("10.0.0.0/8",)),
        ("--trusted-proxy", "fd00::/8", lambda c: c.trusted_proxies, ("fd00::/8",)),
        ("--trusted-proxy", "172.30.57.10", lambda c: c.trusted_proxies, ("172.30.57.10",)),
        (
            "--allow-origin",
            "https://games.example",
            lambda c: c.allowed_origins,
            ("https://games.example",),
        ),
        ("--port", "0", lambda c: c.port, 0),
        ("--port", "65535", lambda c: c.port, 65535),
        ("--metrics-port", "9100", lambda c: c.metrics_port, 9100),
        ("--resume-grace", "0", lambda c: c.resume_grace_s, 0.0),
        ("--guest-ttl", "0.5", lambda c: c.guest_ttl_s, 43200.0),
        ("--daily-account-age", "0", lambda c: c.daily_account_age_days, 0),
        ("--redis-room-ttl", "0", lambda c: c.redis_room_ttl_s, None),
    ],
)
def test_good_flag_values_reach_the_config(
    flag: str, value: str, setting: Callable[[ServerConfig], object], wanted: object
) -> None:
    assert setting(serve_config(f"{flag}={value}")) == wanted


def test_trusted_networks_are_parsed_once_not_at_every_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[str] = []
    real = ipaddress.ip_network

    def counting(
        address: str, strict: bool = True
    ) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        parsed.append(address)
        return real(address, strict=strict)

    monkeypatch.setattr(ipaddress, "ip_network", counting)  # as budgets.py calls it
    trusted_networks.cache_clear()
    trusted = ("10.0.0.0/8", "192.0.2.7")
    for _ in range(50):
        assert forwarded_client("10.1.2.3", None, "198.51.100.4", trusted) == "198.51.100.4"
        assert forwarded_client("192.0.2.7", "198.51.100.9", None, trusted) == "198.51.100.9"
        assert forwarded_client("203.0.113.1", None, "198.51.100.4", trusted) == "203.0.113.1"
    assert parsed == list(trusted)
    trusted_networks.cache_clear()


# -- Redis URLs and a Redis that refuses the node ------------------------------------------


def leaderboard_export(cwd: Path, *argv: str) -> Exit:
    """Run ``solrace leaderboard export ARGV`` to its end."""
    return leaderboard(cwd, "export", *argv)


def leaderboard(cwd: Path, *argv: str) -> Exit:
    """Run ``solrace leaderboard ARGV`` to its end."""
    process = subprocess.run(
        [sys.executable, "-m", "solrace", "leaderboard", *argv],
        cwd=cwd,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=4 * TIMEOUT,
        check=False,
    )
    return Exit(process.returncode, process.stderr)


def assert_one_line_of(result: Exit, command: str, expected: str) -> None:
    """Exit 1, and stderr is one line of ``command`` that contains ``expected``."""
    assert result.code == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.lines) == 1, result.stderr
    assert result.lines[0].startswith(f"solrace {command}: "), result.stderr
    assert expected in result.lines[0], result.stderr


BAD_REDIS_URLS = [
    ("http://127.0.0.1:1/0", "it must begin with redis://"),
    ("redis://127.0.0.1:notaport/0", "port could not be cast to integer value as 'notaport'"),
    ("redis://127.0.0.1:99999/0", "port out of range 0-65535"),
    ("redis://:hunter2@[bad/0", "invalid IPv6 URL"),
    ("redis://:hunter2@127.0.0.1:99999/0", "port out of range"),
    ("redis://127.0.0.1:6379/zero", "the database must be a number"),
    ("redis+cluster://127.0.0.1:6379/3", "a Redis Cluster has database 0 alone"),
    ("redis://127.0.0.1:6379/0?socket_timeout=soon", "invalid value for 'socket_timeout'"),
]


@pytest.mark.parametrize(("url", "says"), BAD_REDIS_URLS)
@pytest.mark.parametrize("command", ["serve", "leaderboard export"])
def test_a_bad_redis_url_is_one_line_without_its_password(
    tmp_path: Path, command: str, url: str, says: str
) -> None:
    if command == "serve":
        result = serve(tmp_path, "--port", str(free_port()), "--redis", url)
    else:
        result = leaderboard_export(tmp_path, "--redis", url)
    shown = url.replace("hunter2", "***")
    assert_one_line_of(result, command, f"bad Redis URL {shown}: {says}")
    assert "hunter2" not in result.stderr


@pytest.fixture(scope="module")
def redis_with_password(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server of its own that wants the password ``hunter2``."""
    if not RedisServer.available():
        pytest.skip("redis-server is not installed")
    server = RedisServer(tmp_path_factory.mktemp("redis-password"), password="hunter2")
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("command", ["serve", "leaderboard export"])
def test_a_redis_database_it_lacks_is_named(
    tmp_path: Path, redis_server: RedisServer, command: str
) -> None:
    redis_server.start()  # a test may have stopped it
    url = redis_server.url.rsplit("/", 1)[0] + "/99"  # redis-server has 16 by default
    if command == "serve":
        result = serve(tmp_path, "--port", str(free_port()), "--redis", url)
    else:
        result = leaderboard_export(tmp_path, "--redis", url)
    assert_one_line_of(result, command, f"Redis at {url} has no database 99")


@pytest.mark.parametrize("command", ["serve", "leaderboard export"])
def test_a_redis_that_wants_a_password_says_so(
    tmp_path: Path, redis_with_password: RedisServer, command: str
) -> None:
    url = f"redis://127.0.0.1:{redis_with_password.port}/0"
    if command == "serve":
        result = serve(tmp_path, "--port", str(free_port()), "--redis", url)
    else:
        result = leaderboard_export(tmp_path, "--redis", url)
    assert_one_line_of(result, command, f"Redis at {url} asks for a password")
    assert "HELLO" not in result.stderr


def test_a_wrong_redis_password_is_masked(tmp_path: Path, redis_with_password: RedisServer) -> None:
    url = f"redis://:letmein@127.0.0.1:{redis_with_password.port}/0"
    result = serve(tmp_path, "--port", str(free_port()), "--redis", url)
    shown = url.replace("letmein", "***")
    assert_one_line_of(result, "serve", f"Redis at {shown} refused the URL's user or password")
    assert "letmein" not in result.stderr


# -- a data directory the node cannot open or write ----------------------------------------


def node_data(directory: Path) -> Path:
    """A data directory as a node leaves it (its SQLite file in WAL mode, its secret)."""

    async def make() -> None:
        backend = EmbeddedBackend(directory)
        await backend.start()
        await backend.save_player("p1", "ann")
        await backend.close()

    asyncio.run(make())
    assert (directory / "solrace.sqlite3").is_file()
    return directory


def test_a_database_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    # Stands for a file system mounted read-only (which only a privileged test could
    # mount): SQLite cannot open the write-ahead log, here because a directory has its
    # name, and fails as it does there ("unable to open database file").
    data = node_data(tmp_path / "data")
    (data / "solrace.sqlite3-wal").mkdir()
    database = data / "solrace.sqlite3"
    said = f"cannot open {database}: unable to open database file"
    assert_one_line_of(
        serve(tmp_path, "--port", str(free_port()), "--data-dir", str(data)), "serve", said
    )
    assert_one_line_of(
        leaderboard_export(tmp_path, "--data-dir", str(data)), "leaderboard export", said
    )


def test_a_database_the_node_may_only_read_is_refused_at_start(tmp_path: Path) -> None:
    # Stands for a file the node's user cannot write (restored as root), which chmod
    # cannot make for a test run as root: SQLite cannot open the shared-memory file, here
    # because a directory has its name, so it opens the database read-only, and the first
    # write fails as it does there ("attempt to write a readonly database"). Before,
    # that was a traceback from the node's first write; now the node does not start.
    data = node_data(tmp_path / "data")
    (data / "solrace.sqlite3-shm").mkdir()
    database = data / "solrace.sqlite3"
    result = serve(tmp_path, "--port", str(free_port()), "--data-dir", str(data))
    assert_one_line_of(result, "serve", f"cannot write to {database}: attempt to write a readonly")
    # The export only reads: it works on such a store.
    exported = leaderboard_export(tmp_path, "--data-dir", str(data))
    assert exported.code == 0 and "Traceback" not in exported.stderr, exported.stderr
    # A removal writes: one line (it was a traceback).
    removed = leaderboard(
        tmp_path, "remove", "2026-12-04", "canfield", "p1", "--reason", "x", "--data-dir", str(data)
    )
    assert_one_line_of(
        removed, "leaderboard remove", "refused a write: attempt to write a readonly database"
    )


def test_a_token_secret_cut_short_is_refused(tmp_path: Path) -> None:
    """A secret file cut short (a disk that filled as it was written) would have signed
    every token with what it held."""
    data = node_data(tmp_path / "data")
    (data / "secret.key").write_bytes(b"\x01\x02")
    result = serve(tmp_path, "--port", str(free_port()), "--data-dir", str(data))
    assert_one_line_of(result, "serve", f"the token secret {data / 'secret.key'} holds 2 bytes")


def test_a_new_data_directory_on_a_full_disk_is_one_line(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"no tmpfs to fill here: {mounted.stderr.decode().strip()}")
    try:
        with contextlib.suppress(OSError), (small / "filler").open("wb") as filler:
            filler.write(bytes(1 << 20))  # more than it holds: full
        data = small / "data"
        result = serve(tmp_path, "--port", str(free_port()), "--data-dir", str(data))
        assert_one_line_of(result, "serve", "no space left on device")
        assert "is full" in result.lines[0]
        assert not (data / "secret.key").exists()  # nothing half written
    finally:
        subprocess.run(["umount", str(small)], check=False)


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="chmod does not stop root: the -wal and -shm tests above stand for this",
)
def test_a_read_only_data_directory_is_one_line(tmp_path: Path) -> None:
    data = node_data(tmp_path / "data")
    database = data / "solrace.sqlite3"
    database.chmod(0o444)  # a restore done as another user
    try:
        result = serve(tmp_path, "--port", str(free_port()), "--data-dir", str(data))
        assert_one_line_of(result, "serve", f"cannot write to {database}: ")
        assert f"({database} is read-only to this process)" in result.lines[0]
        data.chmod(0o555)  # and the directory too: a read-only file system
        said = f"{database}: "  # cannot open it, or cannot write to it
        result = serve(tmp_path, "--port", str(free_port()), "--data-dir", str(data))
        assert_one_line_of(result, "serve", said)
        exported = leaderboard_export(tmp_path, "--data-dir", str(data))
        assert_one_line_of(exported, "leaderboard export", said)
    finally:
        data.chmod(0o755)
        database.chmod(0o644)


# -- SIGHUP, and the log ---------------------------------------------------------------------


async def test_sighup_drains_the_node_as_sigterm_does(tmp_path: Path) -> None:
    node = NodeProcess(tmp_path, None)
    node.start()
    clients: list[Client] = []
    try:
        await asyncio.to_thread(node.wait_listening)
        for name in ("ann", "bob"):
            client = Client(node.url, name=name, resume=False, request_timeout=TIMEOUT)
            await client.connect()
            clients.append(client)
        room = await clients[0].create_room("canfield")
        await clients[1].join(room["code"])
        assert node.process is not None
        node.process.send_signal(signal.SIGHUP)
        for client in clients:
            closed = await client.next_event("closed", timeout=TIMEOUT)
            assert closed["code"] == 1001  # going away: resume elsewhere (was 1006)
        assert await asyncio.to_thread(node.process.wait, TIMEOUT) == 0
    finally:
        for client in clients:
            with contextlib.suppress(Exception):
                await client.close()
        node.stop()
    events = [json.loads(line)["event"] for line in log_lines(node)]
    assert "shutting_down" in events


def log_lines(node: NodeProcess) -> list[str]:
    """The non-empty lines the node wrote (stdout and stderr together)."""
    text = (node.directory / "node.log").read_text()
    return [line for line in text.splitlines() if line.strip()]


def test_the_json_log_holds_json_lines_alone(tmp_path: Path) -> None:
    node = NodeProcess(tmp_path, None)
    node.start()
    try:
        node.wait_listening()
    finally:
        node.stop()
    entries = [json.loads(line) for line in log_lines(node)]  # each line is JSON
    pages = [entry for entry in entries if entry["event"] == "page_address"]
    assert [entry["url"] for entry in pages] == [f"http://127.0.0.1:{node.port}/"]
