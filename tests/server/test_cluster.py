"""Two server nodes on a three-primary Redis Cluster race players on either node.

A room's keys and channel share the room code as a hash tag, so each room lives on the
primary that owns its slot: the rooms here are made until one lives on every primary,
and a node then reads its rooms' events over one pub/sub connection per primary.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAIN_DEALS, TIMEOUT, RunningServer
from e2e_support import standing_of, standings
from redis_cluster import RedisClusterServers

from solrace.client import Client
from solrace.server import Node, ServerConfig, SolraceServer, make_backend
from solrace.server.backends.redis import RedisBackend, cluster_url

pytestmark = pytest.mark.skipif(
    not RedisClusterServers.available(), reason="redis-server or redis-cli is not installed"
)

Connect = Callable[[str, RunningServer], Awaitable[Client]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterServers]:
    """A three-primary Redis Cluster of this module's own."""
    servers = RedisClusterServers(tmp_path_factory.mktemp("cluster"))
    servers.start()
    yield servers
    servers.stop()


@pytest.fixture
async def nodes(cluster: RedisClusterServers, tmp_path: Path) -> AsyncIterator[list[RunningServer]]:
    """Two server nodes on the emptied cluster."""
    cluster.flush()
    started: list[RunningServer] = []
    for _ in range(2):
        config = ServerConfig(
            port=0, data_dir=tmp_path / "data", redis_url=cluster.url, **PLAIN_DEALS
        )
        server = SolraceServer(Node(make_backend(config), config), config)
        await server.start()
        started.append(RunningServer(server, config))
    yield started
    for running in started:
        await running.server.close()


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """Connect clients to a node (closed at the end of the test)."""
    clients: list[Client] = []

    async def open_client(name: str, node: RunningServer) -> Client:
        client = Client(node.url, name=name, request_timeout=TIMEOUT)
        await client.connect()
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        await client.close()


async def event_where(
    client: Client, kind: str, test: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The next ``kind`` event that passes ``test``, skipping the others."""
    while True:
        event = await client.next_event(kind, timeout=TIMEOUT)
        if test(event):
            return event


async def progress_of(client: Client, player_id: str | None) -> dict[str, Any]:
    """``player_id``'s standing in the next progress event with one that ``client`` hears."""
    event = await event_where(client, "progress", lambda e: bool(standings([e], player_id)))
    return standing_of(event, player_id)


def room_key(code: str) -> str:
    """The key of a room's record (its slot is the room's)."""
    return f"solrace:{{{code}}}:room"


def shard_ports(node: RunningServer) -> set[int]:
    """The ports of the primaries the node holds pub/sub connections to."""
    backend = node.node.backend
    assert isinstance(backend, RedisBackend)
    return {int(name.rpartition(":")[2]) for name in backend._shards}


async def rooms_on_every_primary(
    cluster: RedisClusterServers, node: RunningServer, connect: Connect
) -> dict[int, tuple[Client, str]]:
    """A host on ``node`` in a room of its own on each primary, by the primary's port."""
    hosts: dict[int, tuple[Client, str]] = {}
    for attempt in range(100):
        if len(hosts) == len(cluster.ports):
            break
        host = await connect(f"host{attempt}", node)
        code = (await host.create_room("canfield", countdown=0))["code"]
        owner = cluster.owner(room_key(code))
        if owner in hosts:
            await host.leave()
            continue
        hosts[owner] = (host, code)
    assert len(hosts) == len(cluster.ports), "room codes never reached every primary"
    return hosts


def test_a_cluster_url_is_told_from_a_plain_one() -> None:
    assert cluster_url("redis+cluster://10.0.0.5:7000") == "redis://10.0.0.5:7000"
    assert cluster_url("REDISS+CLUSTER://:pw@redis:7000/0") == "rediss://:pw@redis:7000/0"
    assert cluster_url("redis://10.0.0.5:6379/0") is None
    assert cluster_url("unix:///run/redis.sock") is None


async def test_players_on_two_nodes_race_in_rooms_on_every_primary(
    cluster: RedisClusterServers, nodes: list[RunningServer], connect: Connect
) -> None:
    first, second = nodes
    hosts = await rooms_on_every_primary(cluster, first, connect)
    assert await second.node.backend.room_count() == len(hosts), "SCAN on every primary"
    assert await second.node.backend.ready()
    assert shard_ports(first) == set(cluster.ports), "one pub/sub connection per primary"

    for owner, (host, code) in hosts.items():
        guest = await connect(f"guest{owner}", second)
        await guest.join(code)
        await event_where(host, "members", lambda e: len(e["members"]) == 2)
        await host.start()
        started_host = await host.next_event("race_started", timeout=TIMEOUT)
        started_guest = await guest.next_event("race_started", timeout=TIMEOUT)
        assert started_host["view"] == started_guest["view"], "one deal on both nodes"

        assert (await host.move("d"))["rev"] == 1
        assert (await progress_of(guest, host.player_id))["moves"] == 1
        assert (await guest.move("d"))["rev"] == 1
        assert (await progress_of(host, guest.player_id))["moves"] == 1

        await host.resign()
        await guest.resign()
        over_host = await host.next_event("race_over", timeout=TIMEOUT)
        over_guest = await guest.next_event("race_over", timeout=TIMEOUT)
        assert over_host["results"] == over_guest["results"]
        kept = await first.node.backend.load_results(code, over_host["race"])
        assert kept is not None and kept["results"] == over_host["results"]
    assert shard_ports(second) == set(cluster.ports)


async def test_a_room_whose_slot_moves_to_another_primary_plays_on(
    cluster: RedisClusterServers, nodes: list[RunningServer], connect: Connect
) -> None:
    first, second = nodes
    host = await connect("host", first)
    guest = await connect("guest", second)
    code = (await host.create_room("canfield", countdown=0))["code"]
    await guest.join(code)
    await event_where(host, "members", lambda e: len(e["members"]) == 2)
    await host.start()
    await host.next_event("race_started", timeout=TIMEOUT)
    await guest.next_event("race_started", timeout=TIMEOUT)
    assert (await host.move("d"))["rev"] == 1
    await progress_of(guest, host.player_id)

    # Redis drops the channel's subscribers as the slot leaves: each node subscribes on
    # the new primary and, since events may have been lost meanwhile, resyncs its members.
    target = next(port for port in cluster.ports if port != cluster.owner(room_key(code)))
    cluster.migrate(room_key(code), target)
    for client in (host, guest):
        snapshot = await client.next_event("room", timeout=TIMEOUT)
        assert snapshot["room"]["code"] == code
        assert snapshot["room"]["state"] == "racing"

    assert (await guest.move("d"))["rev"] == 1
    assert (await progress_of(host, guest.player_id))["moves"] == 1
    assert (await host.move("d"))["rev"] == 2
    assert (await progress_of(guest, host.player_id))["moves"] == 2
    assert target in shard_ports(first) and target in shard_ports(second)


async def test_a_pub_sub_connection_to_one_primary_drops_and_its_rooms_resync(
    cluster: RedisClusterServers, nodes: list[RunningServer], connect: Connect
) -> None:
    first, second = nodes
    host = await connect("host", first)
    guest = await connect("guest", second)
    code = (await host.create_room("canfield", countdown=0))["code"]
    await guest.join(code)
    await event_where(host, "members", lambda e: len(e["members"]) == 2)

    with cluster.client(cluster.owner(room_key(code))) as client:
        assert client.client_kill_filter(_type="pubsub") >= 2
    for client in (host, guest):
        snapshot = await client.next_event("room", timeout=TIMEOUT)
        assert [m["name"] for m in snapshot["room"]["members"]] == ["host", "guest"]

    await host.start()
    await host.next_event("race_started", timeout=TIMEOUT)
    await guest.next_event("race_started", timeout=TIMEOUT)
    assert (await guest.move("d"))["rev"] == 1
    assert (await progress_of(host, guest.player_id))["moves"] == 1
