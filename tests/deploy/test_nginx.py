"""Debian's nginx, run with deploy/nginx.conf, in front of two nodes that share one Redis.

The test copies the deploy config and rewrites only what differs from compose (the
listening port, the nodes' addresses and the web page folder), wraps it in a small main
config of its own (pid file, logs and temporary folders in the test's folder), and races
through it with the Python client library.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT
from redis_server import free_port

from solrace.client import Client
from solrace.server import Node, ServerConfig, SolraceServer, make_backend

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


def site_config(text: str, *, port: int, nodes: list[int], web_root: Path) -> str:
    """deploy/nginx.conf with the port, the nodes and the page folder of this machine."""

    def replace(pattern: str, new: str, flags: int = 0) -> None:
        nonlocal text
        text, count = re.subn(pattern, lambda _: new, text, flags=flags)
        assert count == 1, f"deploy/nginx.conf should match {pattern!r} once, not {count} times"

    servers = "".join(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=5s;\n" for p in nodes)
    replace(r"^[ \t]*# nodes: begin\n.*?^[ \t]*# nodes: end\n", servers, re.M | re.S)
    replace(r"^([ \t]*)listen 80;$", f"    listen 127.0.0.1:{port};", re.M)
    replace(r"^([ \t]*)root /usr/share/solrace/web;$", f"    root {web_root};", re.M)
    # Docker's DNS is not here, and nothing in the test needs a resolver.
    replace(r"^[ \t]*resolver 127\.0\.0\.11 .*;\n", "", re.M)
    replace(r"^[ \t]*resolver_timeout .*;\n", "", re.M)
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


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture
async def nodes(tmp_path: Path, redis_url: str | None) -> AsyncIterator[list[SolraceServer]]:
    """Two nodes on one Redis; a test that shuts one down removes it from the list."""
    assert redis_url is not None
    running: list[SolraceServer] = []
    try:
        for i in (1, 2):
            config = ServerConfig(port=0, data_dir=tmp_path / f"node{i}", redis_url=redis_url)
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
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    port = free_port()
    site = prefix / "solrace.conf"
    site.write_text(
        site_config(
            NGINX_CONF.read_text(),
            port=port,
            nodes=[node.port for node in nodes],
            web_root=WEB_ROOT,
        )
    )
    conf = prefix / "nginx.conf"
    conf.write_text(main_config(prefix, site))
    error_log = prefix / "error.log"
    command = [str(NGINX), "-p", f"{prefix}/", "-e", str(error_log), "-c", str(conf)]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, f"nginx -t refused the config:\n{checked.stderr}"
    process = subprocess.Popen(
        [*command, "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        await wait_listening(port, process, error_log)
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


async def get(url: str, headers: dict[str, str] | None = None) -> Reply:
    """GET ``url`` off the event loop (the nodes that answer run on it)."""

    def fetch() -> Reply:
        request = urllib.request.Request(url, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return Reply(response.status, dict(response.headers.items()), response.read())
        except urllib.error.HTTPError as error:
            return Reply(error.code, dict(error.headers.items()), error.read())

    return await asyncio.to_thread(fetch)


async def connections(node: SolraceServer) -> int:
    """Open websockets on ``node``, from its own /metrics."""
    reply = await get(f"http://127.0.0.1:{node.port}/metrics")
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


# -- tests ---------------------------------------------------------------------------------


async def test_two_players_race_through_nginx_on_two_nodes(
    nodes: list[SolraceServer], connect: ClientFactory
) -> None:
    alice = await connect("alice")
    bob = await connect("bob")
    # Round robin: one connection on each node, and the race still sees both players.
    assert [await connections(node) for node in nodes] == [1, 1]

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


async def test_a_player_whose_node_shuts_down_resumes_on_the_other_through_nginx(
    nodes: list[SolraceServer], connect: ClientFactory
) -> None:
    alice = await connect("alice")
    counts = [await connections(node) for node in nodes]
    assert sorted(counts) == [0, 1]
    home = nodes[counts.index(1)]
    bob = await connect("bob")
    assert await connections(home) == 1, "round robin put bob on the other node"
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
    assert await connections(nodes[0]) == 2


async def test_nginx_serves_the_page_and_passes_healthz_through(nginx: Nginx) -> None:
    health = await get(nginx.http_url("/healthz"))
    assert (health.status, health.body) == (200, b"ok\n")
    for private in ("/metrics", "/readyz"):
        assert (await get(nginx.http_url(private))).status == 404, private

    index = WEB_ROOT / "index.html"
    if not index.exists():
        pytest.skip("the web page is not in this checkout")
    for path in ("/", "/r/ABCD2345", "/daily"):
        page = await get(nginx.http_url(path))
        assert page.status == 200, path
        assert page.headers["Content-Type"].startswith("text/html"), path
        assert page.body == index.read_bytes(), path
        assert page.headers["Cache-Control"] == "no-cache", path
        assert "ETag" in page.headers, f"{path} came from a node, not from nginx's files"
    script = await get(nginx.http_url("/app.js"))
    assert script.status == 200
    assert script.headers["Content-Type"].split(";")[0] in {
        "application/javascript",
        "text/javascript",
    }
    assert script.body == (WEB_ROOT / "app.js").read_bytes()
    again = await get(nginx.http_url("/app.js"), {"If-None-Match": script.headers["ETag"]})
    assert again.status == 304, "an unchanged file is revalidated, not sent again"
    assert (await get(nginx.http_url("/no-such-file.js"))).status == 404
    assert (await get(nginx.http_url("/../pyproject.toml"))).status in {400, 404}
