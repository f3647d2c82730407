"""Debian's nginx, run with deploy/nginx.conf, in front of nodes that share one Redis.

The shipped file is loaded as it is, with only the nodes' addresses changed (`nginx -t`):
Debian 12's nginx 1.22 must take it. To run it, the test also changes the listening
port and the web page folder, and nothing else (a test checks the difference line by
line); it wraps the file in a small main config of its own (pid file, logs and temporary
folders in the test's folder), puts one node behind each `server` line, and races,
reads the leaderboards and loads the page through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAIN_DEALS, TIMEOUT
from redis_server import free_port

from solrace.client import Client
from solrace.server import Node, ServerConfig, SolraceServer, make_backend
from solrace.server.daily import Entry
from solrace.server.http import security_headers
from solrace.server.identity import sign_token

ROOT = Path(__file__).resolve().parent.parent.parent
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
WEB_ROOT = ROOT / "client" / "web"
NGINX = Path("/usr/sbin/nginx")
MIME_TYPES = Path("/etc/nginx/mime.types")

pytestmark = pytest.mark.skipif(not NGINX.exists(), reason="nginx is not installed")


@pytest.fixture
def backend_kind() -> str:
    """Nodes behind a load balancer share Redis."""
    return "redis"


# -- the config ----------------------------------------------------------------------------

NODES_BLOCK = re.compile(r"^[ \t]*# nodes: begin\n(.*?)^[ \t]*# nodes: end\n", re.M | re.S)
NODE_LINE = re.compile(r"^([ \t]*server )(\S+)(\s.*)?;$", re.M)


def shipped_nodes(text: str) -> list[str]:
    """The addresses of the `server` lines between the nodes markers."""
    block = NODES_BLOCK.search(text)
    assert block is not None, "deploy/nginx.conf lost its '# nodes: begin/end' markers"
    return [match.group(2) for match in NODE_LINE.finditer(block.group(1))]


def with_nodes(text: str, addresses: list[str]) -> str:
    """``text`` with the address of each node's `server` line replaced, in order.

    Nothing else of a line changes: its parameters are what nginx has to accept.
    """
    block = NODES_BLOCK.search(text)
    assert block is not None, "deploy/nginx.conf lost its '# nodes: begin/end' markers"
    assert len(addresses) == len(shipped_nodes(text))
    given = iter(addresses)
    body = NODE_LINE.sub(lambda m: f"{m.group(1)}{next(given)}{m.group(3) or ''};", block.group(1))
    start, end = block.span(1)
    return text[:start] + body + text[end:]


def site_config(text: str, *, port: int, nodes: list[str], web_root: Path) -> str:
    """deploy/nginx.conf with the nodes, the port and the page folder of this machine."""

    def replace(pattern: str, new: str) -> None:
        nonlocal text
        text, count = re.subn(pattern, lambda _: new, text, flags=re.M)
        assert count == 1, f"deploy/nginx.conf should match {pattern!r} once, not {count} times"

    text = with_nodes(text, nodes)
    replace(r"^([ \t]*)listen 80;$", f"    listen 127.0.0.1:{port};")
    replace(r"^([ \t]*)root /usr/share/solrace/web;$", f"    root {web_root};")
    return text


def main_config(prefix: Path, site: Path) -> str:
    """A main nginx.conf that keeps everything under ``prefix`` and includes ``site``."""
    # As root, nginx would run its workers as `nobody`, who may not read the checkout.
    user = "user root;\n" if os.geteuid() == 0 else ""
    temp = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""{user}worker_processes 1;
pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} info;
events {{
    worker_connections 256;
}}
http {{
    include {MIME_TYPES};
    default_type application/octet-stream;
    access_log {prefix / "access.log"};
{temp}
    include {site};
}}
"""


def nginx_command(prefix: Path, site_text: str) -> list[str]:
    """The nginx command line for ``site_text`` wrapped in a main config under ``prefix``."""
    prefix.mkdir(parents=True, exist_ok=True)
    site = prefix / "solrace.conf"
    site.write_text(site_text)
    conf = prefix / "nginx.conf"
    conf.write_text(main_config(prefix, site))
    return [str(NGINX), "-p", f"{prefix}/", "-e", str(prefix / "error.log"), "-c", str(conf)]


def nginx_test(command: list[str]) -> str | None:
    """Run ``command`` with ``-t``: None if nginx takes the config, else what it said."""
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True, check=False)
    if checked.returncode == 0:
        return None
    # With -e, the reason is in the error log rather than on stderr.
    log = Path(command[command.index("-e") + 1])
    return checked.stderr + (log.read_text() if log.exists() else "")


@dataclass
class Nginx:
    """nginx listening on a loopback port."""

    port: int
    prefix: Path

    @property
    def ws_url(self) -> str:
        """Where clients connect."""
        return f"ws://127.0.0.1:{self.port}/"

    def http_url(self, path: str) -> str:
        """A plain HTTP URL on the balancer."""
        return f"http://127.0.0.1:{self.port}{path}"


@contextlib.asynccontextmanager
async def running_nginx(prefix: Path, nodes: list[str]) -> AsyncIterator[Nginx]:
    """deploy/nginx.conf in nginx on a free port, one of ``nodes`` behind each server line."""
    port = free_port()
    site = site_config(NGINX_CONF.read_text(), port=port, nodes=nodes, web_root=WEB_ROOT)
    command = nginx_command(prefix, site)
    refused = nginx_test(command)
    assert refused is None, f"nginx -t refused the config:\n{refused}"
    process = subprocess.Popen(
        [*command, "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        await wait_listening(port, process, prefix / "error.log")
        yield Nginx(port, prefix)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def wait_listening(port: int, process: subprocess.Popen[bytes], error_log: Path) -> None:
    """Wait until nginx accepts connections on ``port``; fail with its log if it exits."""
    async with asyncio.timeout(TIMEOUT):
        while True:
            if process.poll() is not None:
                log = error_log.read_text() if error_log.exists() else ""
                raise AssertionError(f"nginx exited with {process.returncode}:\n{log}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.02)
                continue
            writer.close()
            await writer.wait_closed()
            return


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture
async def nodes(tmp_path: Path, redis_url: str | None) -> AsyncIterator[list[SolraceServer]]:
    """One node on one Redis per node of the config; a test that shuts one down removes it."""
    assert redis_url is not None
    running: list[SolraceServer] = []
    try:
        for i, _ in enumerate(shipped_nodes(NGINX_CONF.read_text()), 1):
            config = ServerConfig(
                port=0,
                data_dir=tmp_path / f"node{i}",
                redis_url=redis_url,
                metrics_port=0,
                **PLAIN_DEALS,
            )
            server = SolraceServer(Node(make_backend(config), config), config)
            await server.start()
            running.append(server)
        yield running
    finally:
        for server in running:
            await server.close()


@pytest.fixture
async def nginx(nodes: list[SolraceServer], tmp_path: Path) -> AsyncIterator[Nginx]:
    """nginx with the deploy config, round robin over ``nodes``."""
    async with running_nginx(tmp_path / "nginx", [f"127.0.0.1:{n.port}" for n in nodes]) as n:
        yield n


ClientFactory = Callable[[str], Awaitable[Client]]


@pytest.fixture
async def connect(nginx: Nginx) -> AsyncIterator[ClientFactory]:
    """Connect clients through nginx (closed before nginx and the nodes stop)."""
    clients: list[Client] = []

    async def make(name: str) -> Client:
        client = Client(nginx.ws_url, name=name, request_timeout=TIMEOUT)
        await client.connect()
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


# -- helpers -------------------------------------------------------------------------------


@dataclass
class Reply:
    """An HTTP response, read whole."""

    status: int
    headers: dict[str, str]
    body: bytes
    cache_control: list[str] = field(default_factory=list)
    header_list: list[tuple[str, str]] = field(default_factory=list)


async def get(url: str, headers: dict[str, str] | None = None) -> Reply:
    """GET ``url`` off the event loop (the nodes that answer run on it)."""

    def fetch() -> Reply:
        request = urllib.request.Request(url, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                found = response.headers
                status, body = response.status, response.read()
        except urllib.error.HTTPError as error:
            found = error.headers
            status, body = error.code, error.read()
        return Reply(status, dict(found.items()), body, found.get_all("Cache-Control") or [])

    return await asyncio.to_thread(fetch)


async def connections(node: SolraceServer) -> int:
    """Open websockets on ``node``, from its own /metrics (on its metrics port)."""
    reply = await get(f"http://127.0.0.1:{node.http.metrics_port}/metrics")
    match = re.search(rb"^solrace_connections (\S+)$", reply.body, re.M)
    assert match is not None, reply.body
    return int(float(match.group(1)))


async def event_where(
    client: Client, kind: str, test: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The next ``kind`` event that passes ``test``, skipping the others."""
    while True:
        event = await client.next_event(kind, timeout=TIMEOUT)
        if test(event):
            return event


def standing(event: dict[str, Any], client: Client) -> dict[str, Any] | None:
    """The standing of ``client``'s player in a progress event, if it has one."""
    found = [s for s in event["players"] if s["player_id"] == client.player_id]
    assert len(found) <= 1, event
    return found[0] if found else None


def progress_of(client: Client, moves: int) -> Callable[[dict[str, Any]], bool]:
    """Matches a progress event with ``client``'s player at ``moves`` moves."""
    return lambda e: (s := standing(e, client)) is not None and s["moves"] == moves


# -- the file itself -----------------------------------------------------------------------


def test_the_shipped_config_loads_with_only_the_node_addresses_changed(tmp_path: Path) -> None:
    # The names (node1, ...) only resolve on the compose network; everything else is the
    # file as shipped, `listen 80` included (`nginx -t` binds nothing).
    shipped = NGINX_CONF.read_text()
    addresses = [f"127.0.0.1:{free_port()}" for _ in shipped_nodes(shipped)]
    command = nginx_command(tmp_path / "nginx", with_nodes(shipped, addresses))
    refused = nginx_test(command)
    version = subprocess.run([str(NGINX), "-v"], capture_output=True, text=True, check=False)
    assert refused is None, f"{version.stderr.strip()} refused it:\n{refused}"


def test_the_running_config_changes_only_the_nodes_the_port_and_the_page_folder() -> None:
    shipped = NGINX_CONF.read_text()
    count = len(shipped_nodes(shipped))
    assert count >= 2, "a balancer of one node"
    ran = site_config(
        shipped, port=8000, nodes=[f"127.0.0.1:{9000 + i}" for i in range(count)], web_root=ROOT
    )
    changed = [
        line[1:].strip()
        for line in difflib.unified_diff(shipped.splitlines(), ran.splitlines(), n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    node_lines = [line for line in changed if line.startswith("server ")]
    assert len(node_lines) == 2 * count
    for old, new in zip(node_lines[:count], node_lines[count:], strict=True):
        assert old.split(None, 2)[2:] == new.split(None, 2)[2:], "only the address changes"
    others = sorted(line for line in changed if not line.startswith("server "))
    assert others == sorted(
        ["listen 80;", "listen 127.0.0.1:8000;", "root /usr/share/solrace/web;", f"root {ROOT};"]
    )


# -- through nginx, in front of real nodes -------------------------------------------------


async def test_two_players_race_through_nginx_on_two_nodes(
    nodes: list[SolraceServer], connect: ClientFactory
) -> None:
    alice = await connect("alice")
    bob = await connect("bob")
    # Round robin: two connections on two nodes, and the race still sees both players.
    assert sorted([await connections(node) for node in nodes]) == [0] * (len(nodes) - 2) + [1, 1]

    room = await alice.create_room("canfield", countdown=0)
    joined = await bob.join(room["code"])
    assert [m["name"] for m in joined["members"]] == ["alice", "bob"]
    await alice.start()
    started_a = await alice.next_event("race_started", timeout=TIMEOUT)
    started_b = await bob.next_event("race_started", timeout=TIMEOUT)
    assert started_a["view"] == started_b["view"], "one deal on both nodes"

    assert (await alice.move("d"))["rev"] == 1
    await event_where(bob, "progress", progress_of(alice, 1))
    assert (await bob.move("d"))["rev"] == 1
    assert (await bob.move("d"))["rev"] == 2
    await event_where(alice, "progress", progress_of(bob, 2))

    await alice.resign()
    event = await event_where(bob, "progress", lambda e: standing(e, alice) is not None)
    gave_up = standing(event, alice)
    assert gave_up is not None and gave_up["status"] == "resigned"
    await bob.resign()
    over_a = await alice.next_event("race_over", timeout=TIMEOUT)
    over_b = await bob.next_event("race_over", timeout=TIMEOUT)
    assert over_a["results"] == over_b["results"]
    assert {r["player_id"] for r in over_a["results"]} == {alice.player_id, bob.player_id}


async def test_a_player_whose_node_shuts_down_resumes_on_another_through_nginx(
    nodes: list[SolraceServer], connect: ClientFactory
) -> None:
    alice = await connect("alice")
    counts = [await connections(node) for node in nodes]
    assert sorted(counts) == [0] * (len(nodes) - 1) + [1]
    home = nodes[counts.index(1)]
    bob = await connect("bob")
    assert await connections(home) == 1, "round robin put bob on another node"
    room = await alice.create_room("canfield", countdown=0)
    await bob.join(room["code"])
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    await bob.next_event("race_started", timeout=TIMEOUT)
    assert (await alice.move("d"))["rev"] == 1

    # Alice's node is upgraded: it closes her websocket with 1001, and her client comes
    # back through nginx, which skips the node that no longer listens.
    nodes.remove(home)
    await home.close()
    await alice.next_event("resumed", timeout=TIMEOUT)
    assert alice.resumes == 1 and alice.rev == 1

    assert (await alice.move("d"))["rev"] == 2
    await event_where(bob, "progress", progress_of(alice, 2))
    assert bob.resumes == 0, "bob's node kept running: his connection never dropped"
    assert sum([await connections(node) for node in nodes]) == 2


async def test_nginx_passes_the_leaderboard_api_to_the_nodes(
    nodes: list[SolraceServer], nginx: Nginx
) -> None:
    date = "2026-11-20"  # over: the board carries its seed
    await nodes[0].node.backend.save_daily_entry(
        Entry(date, "canfield", "p-olga", "olga", 1, "stuck", 17, 40, 90_000)
    )
    query = f"/api/leaderboard?variant=canfield&date={date}&player=p-olga"
    through = await get(nginx.http_url(query))
    direct = await get(f"http://127.0.0.1:{nodes[1].port}{query}")
    assert through.status == 200, through.body
    assert through.headers["Content-Type"] == "application/json"
    assert through.cache_control == ["no-cache"], "the node's header, once"
    board = json.loads(through.body)
    assert board == json.loads(direct.body)
    assert [e["name"] for e in board["top"]] == ["olga"] and board["you"]["rank"] == 1

    best = await get(nginx.http_url("/api/best?variant=canfield&limit=5"))
    assert best.status == 200 and [e["name"] for e in json.loads(best.body)["best"]] == ["olga"]
    # A player's history, to that player's token alone (a token of a known player).
    await nodes[0].node.backend.save_player("p-olga", "olga")
    token = sign_token(nodes[0].node.secret, "p-olga")
    history = await get(
        nginx.http_url("/api/history?player=p-olga"), {"Authorization": f"Bearer {token}"}
    )
    assert history.status == 200 and json.loads(history.body)["history"][0]["banked"] == 17
    assert history.cache_control == ["private, no-store"]
    anyone = await get(nginx.http_url("/api/history?player=p-olga"))
    assert (anyone.status, json.loads(anyone.body)["code"]) == (401, "bad_token")
    # The node's own answers, errors included, not nginx's file server.
    unknown = await get(nginx.http_url("/api/no-such-endpoint"))
    assert (unknown.status, json.loads(unknown.body)["code"]) == (404, "not_found")
    bad = await get(nginx.http_url("/api/leaderboard?variant=canfield&limit=many"))
    assert (bad.status, json.loads(bad.body)["code"]) == (400, "bad_field")

    # And the command line reads it through the balancer, as the docs tell operators to.
    shown = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "solrace", "leaderboard", "show", "--url", nginx.ws_url),
        *("--date", date, "--variant", "canfield"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(shown.communicate(), TIMEOUT)
    assert shown.returncode == 0, err.decode()
    assert "olga" in out.decode()


async def test_nginx_serves_the_page_and_passes_healthz_through(nginx: Nginx) -> None:
    health = await get(nginx.http_url("/healthz"))
    assert (health.status, health.body) == (200, b"ok\n")
    assert health.cache_control == ["no-cache"], "the node's header, once"
    for private in ("/metrics", "/metrics/x", "/%6Detrics", "/readyz"):
        assert (await get(nginx.http_url(private))).status == 404, private

    index = WEB_ROOT / "index.html"
    if not index.exists():
        pytest.skip("the web page is not in this checkout")
    for path in ("/", "/r/ABCD2345", "/daily"):
        page = await get(nginx.http_url(path))
        assert page.status == 200, path
        assert page.headers["Content-Type"].startswith("text/html"), path
        assert page.body == index.read_bytes(), path
        assert page.cache_control == ["no-cache"], path
        assert "ETag" in page.headers, f"{path} came from a node, not from nginx's files"
    replay_page = await get(nginx.http_url("/replay/ABCD2345/1"))
    assert replay_page.status == 200
    assert replay_page.body == (WEB_ROOT / "replay.html").read_bytes()
    script = await get(nginx.http_url("/app.js"))
    assert script.status == 200
    assert script.headers["Content-Type"].split(";")[0] in {
        "application/javascript",
        "text/javascript",
    }
    assert script.body == (WEB_ROOT / "app.js").read_bytes()
    assert script.cache_control == ["no-cache"]
    again = await get(nginx.http_url("/app.js"), {"If-None-Match": script.headers["ETag"]})
    assert again.status == 304, "an unchanged file is revalidated, not sent again"
    assert (await get(nginx.http_url("/no-such-file.js"))).status == 404
    assert (await get(nginx.http_url("/../pyproject.toml"))).status in {400, 404}


# -- what nginx tells the nodes ------------------------------------------------------------


@dataclass
class Received:
    """The head of one request as it reached a node's address."""

    request_line: str
    headers: dict[str, list[str]]

    def one(self, name: str) -> str | None:
        """The value of a header sent at most once."""
        values = self.headers.get(name.lower(), [])
        assert len(values) <= 1, (name, values)
        return values[0] if values else None


@contextlib.asynccontextmanager
async def listener() -> AsyncIterator[tuple[int, asyncio.Queue[Received]]]:
    """A socket where the nodes would be, which keeps what nginx sends and answers plainly.

    The nodes do not report the headers they receive, so this stands in their place for
    the one thing it checks: the request as nginx forwards it.
    """
    received: asyncio.Queue[Received] = asyncio.Queue()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                request_line, *lines = head.rstrip("\r\n").split("\r\n")
                headers: dict[str, list[str]] = {}
                for line in lines:
                    name, _, value = line.partition(":")
                    headers.setdefault(name.strip().lower(), []).append(value.strip())
                await received.put(Received(request_line, headers))
                if "upgrade" in headers:
                    writer.write(
                        b"HTTP/1.1 101 Switching Protocols\r\n"
                        b"Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
                    )
                    await writer.drain()
                    break
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1], received


async def ask(nginx: Nginx, head: str) -> str:
    """Send a request head to nginx and return its status line."""
    reader, writer = await asyncio.open_connection("127.0.0.1", nginx.port)
    try:
        writer.write(head.encode())
        await writer.drain()
        return (await asyncio.wait_for(reader.readline(), TIMEOUT)).decode().strip()
    finally:
        writer.close()


async def test_nginx_tells_the_nodes_who_asked_and_passes_websocket_upgrades(
    tmp_path: Path,
) -> None:
    async with listener() as (port, received):
        count = len(shipped_nodes(NGINX_CONF.read_text()))
        async with running_nginx(tmp_path / "nginx", [f"127.0.0.1:{port}"] * count) as nginx:
            who = "X-Forwarded-For: 203.0.113.7\r\n"
            plain = "GET {} HTTP/1.1\r\nHost: play.example\r\n" + who + "Connection: close\r\n\r\n"
            upgrade = (
                "GET {} HTTP/1.1\r\nHost: play.example\r\n" + who + "Upgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
            )
            asked = [
                (plain.format("/api/leaderboard?variant=canfield"), "HTTP/1.1 200"),
                (plain.format("/healthz"), "HTTP/1.1 200"),
                (upgrade.format("/"), "HTTP/1.1 101"),
                (upgrade.format("/r/ABCD2345"), "HTTP/1.1 101"),
            ]
            for head, status in asked:
                assert (await ask(nginx, head)).startswith(status), head
                got = await asyncio.wait_for(received.get(), TIMEOUT)
                assert got.request_line == head.split("\r\n", 1)[0], "HTTP/1.1, path as asked"
                assert got.one("Host") == "play.example"
                assert got.one("X-Real-IP") == "127.0.0.1"
                assert got.one("X-Forwarded-For") == "203.0.113.7, 127.0.0.1"
                assert got.one("X-Forwarded-Proto") == "http"
                if status.endswith("101"):
                    assert got.one("Upgrade") == "websocket"
                    assert got.one("Connection") == "upgrade"
                    assert got.one("Sec-WebSocket-Key") == "dGhlIHNhbXBsZSBub25jZQ=="
                else:
                    # No `Connection: close`: the connection to the node is kept alive.
                    assert got.one("Upgrade") is None and got.one("Connection") is None
            assert received.empty()


def assert_safe_headers(reply: Reply, host: str) -> None:
    """The node's security headers, each once, whoever answered."""
    for name, value in security_headers(host):
        found = [v for k, v in reply.header_list if k.lower() == name.lower()]
        assert found == [value], (name, found)


async def get_all(url: str, headers: dict[str, str] | None = None) -> Reply:
    """``get``, keeping every header line (a header sent twice shows twice)."""

    def fetch() -> Reply:
        request = urllib.request.Request(url, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                found, status, body = response.headers, response.status, response.read()
        except urllib.error.HTTPError as error:
            found, status, body = error.headers, error.code, error.read()
        reply = Reply(status, dict(found.items()), body, found.get_all("Cache-Control") or [])
        reply.header_list = list(found.items())
        return reply

    return await asyncio.to_thread(fetch)


async def test_every_answer_through_nginx_has_the_nodes_security_headers(
    nodes: list[SolraceServer], nginx: Nginx
) -> None:
    host = f"127.0.0.1:{nginx.port}"
    for path, status in [
        ("/", 200),  # nginx's files
        ("/daily", 200),
        ("/app.js", 200),
        ("/no-such-file.js", 404),
        ("/metrics", 404),  # nginx's own answers
        ("/readyz", 404),
        ("/healthz", 200),  # a node's answers, passed through
        ("/api/best?variant=canfield", 200),
        ("/api/history", 401),
    ]:
        reply = await get_all(nginx.http_url(path))
        assert reply.status == status, path
        assert_safe_headers(reply, host)
        assert len(reply.cache_control) == 1, (path, reply.cache_control)
    # The same policy as a node's, for the host the browser asked for.
    direct = await get_all(f"http://127.0.0.1:{nodes[0].port}/healthz", {"Host": host})
    assert_safe_headers(direct, host)
    odd = await get_all(nginx.http_url("/"), {"Host": "a.example;script-src *"})
    policy = odd.headers["Content-Security-Policy"]
    assert "a.example" not in policy and "connect-src 'self';" in policy


async def handshake_status(nginx: Nginx, host: str, origin: str | None) -> str:
    """The status line of a websocket handshake sent through nginx."""
    head = (
        f"GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    )
    if origin is not None:
        head += f"Origin: {origin}\r\n"
    return await ask(nginx, head + "\r\n")


async def test_a_page_of_the_balancers_own_host_opens_a_websocket_and_no_other(
    nodes: list[SolraceServer], nginx: Nginx
) -> None:
    # nginx passes the Host as the browser sent it, port included, so that the node sees
    # the page's own origin as its own.
    host = f"127.0.0.1:{nginx.port}"
    assert (await handshake_status(nginx, host, f"http://{host}")).startswith("HTTP/1.1 101")
    assert (await handshake_status(nginx, host, None)).startswith("HTTP/1.1 101")
    for origin in ("https://evil.example", "null", "http://127.0.0.1"):
        status = await handshake_status(nginx, host, origin)
        assert status.startswith("HTTP/1.1 403"), (origin, status)


async def test_nginx_never_sends_metrics_to_a_node(tmp_path: Path) -> None:
    async with listener() as (port, received):
        count = len(shipped_nodes(NGINX_CONF.read_text()))
        async with running_nginx(tmp_path / "nginx", [f"127.0.0.1:{port}"] * count) as nginx:
            for path in ("/metrics", "/metrics/", "/metrics?x=1", "/%6detrics", "/api/../metrics"):
                head = (
                    f"GET {path} HTTP/1.1\r\nHost: play.example:8080\r\nConnection: close\r\n\r\n"
                )
                assert (await ask(nginx, head)).startswith("HTTP/1.1 404"), path
            # The Host reaches a node as the browser sent it, port and all.
            head = "GET /healthz HTTP/1.1\r\nHost: play.example:8080\r\nConnection: close\r\n\r\n"
            assert (await ask(nginx, head)).startswith("HTTP/1.1 200")
            got = await asyncio.wait_for(received.get(), TIMEOUT)
            assert got.request_line == "GET /healthz HTTP/1.1"
            assert got.one("Host") == "play.example:8080"
            assert received.empty(), "no /metrics request reached a node"
