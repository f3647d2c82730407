"""Faults with real processes: a redis-server and three ``solrace serve`` nodes.

The players of one room are spread over the three nodes and play random legal moves
while a fault strikes: a node killed with SIGKILL (its players resume on the others),
Redis frozen with SIGSTOP for ten seconds, Redis killed and started again on its append
only file. Each time the race must go on, and no acked move may be lost: every player
records each acked (revision, move), and at the end the server's snapshot stands at the
acked count and the player's stream in Redis holds exactly the acked moves, in order.

A move refused as ``unavailable`` is of unknown fate (Redis may have logged it and lost
the reply), so a player sends the same move at the same revision again until it is
acked, as a careful client does; the server acks a logged repeat as a duplicate.

Redis runs with the persistence settings of deploy/redis.conf (read from the file when
it is there). For the restart, ``appendfsync`` is ``always`` instead of the deployed
``everysec``. With ``everysec`` Redis writes a command to the AOF before it replies but
fsyncs once a second, and while an fsync is slow it may hold the write back for up to two
seconds and reply all the same: a kill could then lose a move acked in the last second or
two, a loss the deployed setting accepts (deploy/redis.conf says so). With ``always`` the
write and its fsync come before the reply, so the test can kill Redis while moves are in
flight and still demand that none be lost.

The last tests put a failure at one exact point, in process, where a race of tasks lost
an acked move or a member once.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory
from process_support import NodeProcess, Player
from redis_server import RedisServer

from solrace.client import Client
from solrace.server.backends import BackendUnavailable

ROOT = Path(__file__).resolve().parent.parent.parent
REDIS_CONF = ROOT / "deploy" / "redis.conf"
KEY_PREFIX = "solrace"  # the Redis backend's default key prefix
NODES = 3
PLAYERS_PER_NODE = 2
PACE = 0.05  # seconds between a player's moves: 20 a second, under the rate limit
FREEZE_S = 10.0
MARGIN = 1.0  # replies already on their way when Redis stops may still land this late
AOF_SETTINGS = (
    "appendonly",
    "appendfsync",
    "appenddirname",
    "appendfilename",
    "aof-use-rdb-preamble",
    "aof-load-truncated",
    "no-appendfsync-on-rewrite",
)

pytestmark = pytest.mark.skipif(not RedisServer.available(), reason="redis-server is not installed")


def deployed_persistence() -> dict[str, str]:
    """The append-only-file settings of deploy/redis.conf (its defaults if it is absent)."""
    settings = {"appendonly": "yes", "appendfsync": "everysec"}
    if REDIS_CONF.exists():
        for line in REDIS_CONF.read_text().splitlines():
            words = line.split("#", 1)[0].split()
            if len(words) == 2 and words[0].lower() in AOF_SETTINGS:
                settings[words[0].lower()] = words[1].strip("\"'")
    return settings


def redis_options(**overrides: str) -> list[str]:
    """redis-server arguments with the deployed persistence settings and ``overrides``."""
    settings = deployed_persistence()
    settings.update({k.replace("_", "-"): v for k, v in overrides.items()})
    return [arg for name, value in settings.items() for arg in (f"--{name}", value)]


@dataclass
class Cluster:
    """A redis-server and the nodes on it."""

    redis: RedisServer
    nodes: list[NodeProcess]
    clients: list[Client] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def readiness(self) -> list[int]:
        """Every node's /readyz status."""
        return [node.status("/readyz") for node in self.nodes]


ClusterFactory = Callable[..., Cluster]


@pytest.fixture
async def make_cluster(tmp_path: Path) -> AsyncIterator[ClusterFactory]:
    """Start a redis-server (with ``redis_options(**overrides)``) and three nodes on it."""
    started: list[Cluster] = []

    def make(**overrides: str) -> Cluster:
        redis = RedisServer(tmp_path / "redis", options=redis_options(**overrides))
        redis.start()
        nodes = [NodeProcess(tmp_path / f"node{i}", redis.url) for i in range(NODES)]
        cluster = Cluster(redis, nodes)
        started.append(cluster)
        for node in nodes:
            node.start()
        for node in nodes:
            node.wait_listening()
        return cluster

    yield make
    for cluster in started:
        for task in cluster.tasks:
            task.cancel()
        for client in cluster.clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.close(), TIMEOUT)
        for node in cluster.nodes:
            node.stop()
        cluster.redis.stop()


# -- the race ------------------------------------------------------------------------------


@dataclass
class Race:
    """One room's race over the cluster's nodes."""

    cluster: Cluster
    players: list[Player]
    spectator: Client
    code: str
    race: int
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def play(self) -> None:
        """Every player starts playing, one move after another."""

        async def run(player: Player) -> None:
            while not self.stop.is_set() and await player.play_one():
                await asyncio.sleep(PACE)

        self.tasks = [asyncio.ensure_future(run(p)) for p in self.players]
        self.cluster.tasks += self.tasks

    async def until(self, test: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait until ``test()`` holds; fail if a player fails or the time runs out."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not test():
            for task in self.tasks:
                if task.done():
                    task.result()  # raises the player's failure
            if loop.time() > deadline:
                counts = [len(p.acked) for p in self.players]
                pytest.fail(f"timed out waiting for {what}; acked so far: {counts}")
            await asyncio.sleep(0.05)

    async def in_flight(self, players: list[Player]) -> None:
        """Wait until one of ``players`` has a move on its way, so that a fault hits it."""
        async with asyncio.timeout(TIMEOUT):
            while not any(p.in_flight for p in players):
                await asyncio.sleep(0.002)

    async def moves_each(self, more: int, timeout: float = 3 * TIMEOUT) -> list[int]:
        """Wait until every player has ``more`` acked moves beyond now; return the counts.

        A player whose game ended (won, or stuck where undo is off) is done; most games must go on.
        """
        counts = [len(p.acked) for p in self.players]
        states = [
            (len(p.acked), p.client.view and p.client.view["status"], p.playing)
            for p in self.players
        ]
        assert sum(p.playing for p in self.players) > len(self.players) // 2, states
        await self.until(
            lambda: all(
                len(p.acked) >= n + more or not p.playing
                for p, n in zip(self.players, counts, strict=True)
            ),
            timeout,
            f"{more} more acked moves from every player",
        )
        return counts

    def acked_between(self, start: float, end: float) -> int:
        """How many acks arrived in the interval (event-loop time)."""
        return sum(start < t < end for p in self.players for t in p.acked_at)

    async def finish(self) -> None:
        """Stop playing, check that no acked move was lost, then end the race."""
        self.stop.set()
        await asyncio.wait_for(asyncio.gather(*self.tasks), 4 * TIMEOUT)
        with self.cluster.redis.client() as redis:
            for player in self.players:
                key = f"{KEY_PREFIX}:{{{self.code}}}:log:{self.race}:{player.client.player_id}"
                entries = redis.xrange(key)
                ids = [entry_id.decode() for entry_id, _ in entries]
                moves = [fields[b"m"].decode() for _, fields in entries]
                assert moves == player.acked, f"the log of {player.client.name} differs"
                assert ids == [f"0-{n}" for n in range(1, len(moves) + 1)]
                snapshot = await player.client.sync()
                assert snapshot["you"]["rev"] == len(player.acked)
        for player in self.players:
            if player.playing:
                await player.client.resign()
        # Pub/sub may have lost the race_over event (a node that lost Redis sends a
        # snapshot once it is subscribed again instead): read the room from the store.
        async with asyncio.timeout(TIMEOUT):
            while (room := await self.players[0].client.sync())["state"] != "finished":
                await asyncio.sleep(0.05)
        moves = {r["player_id"]: r["moves"] for r in room["results"]}
        assert moves == {p.client.player_id: len(p.acked) for p in self.players}
        for client in [*(p.client for p in self.players), self.spectator]:
            await client.close()
            self.cluster.clients.remove(client)


async def open_race(cluster: Cluster, *, seed: int) -> Race:
    """A room with two players on each node and a spectator on the second; racing."""
    rng = random.Random(seed)
    players: list[Player] = []
    for index in range(NODES * PLAYERS_PER_NODE):
        node = index % NODES
        client = Client(
            cluster.nodes[node].url,
            name=f"p{index}n{node}",
            request_timeout=2 * TIMEOUT,
            resume_timeout=3 * TIMEOUT,
        )
        cluster.clients.append(client)
        await client.connect()
        players.append(Player(client, node, random.Random(rng.random())))
    spectator = Client(cluster.nodes[1].url, name="watcher", request_timeout=2 * TIMEOUT)
    cluster.clients.append(spectator)
    await spectator.connect()
    host = players[0].client
    room = await host.create_room(
        "canfield",
        max_players=len(players),
        countdown=0,
        time_limit=600,
        undo=True,  # a player whose random line of play ends stuck undoes and goes on
        spectators="live",
    )
    for player in players[1:]:
        await player.client.join(room["code"])
    await spectator.join(room["code"], role="spectator")
    for _ in range(5):
        await host.start()
        for player in players:
            await player.client.next_event("race_started", timeout=TIMEOUT)
        started = await spectator.next_event("race_started", timeout=TIMEOUT)
        if players[0].playing:
            return Race(cluster, players, spectator, room["code"], started["race"])
        for player in players:  # a deal stuck from the start: deal again
            await player.client.resign()
        await host.next_event("race_over", timeout=TIMEOUT)
        await host.rematch()
    pytest.fail("every deal was stuck from the start")


async def wait_readiness(cluster: Cluster, status: int, timeout: float) -> None:
    """Wait until every node's /readyz answers ``status``."""
    deadline = time.monotonic() + timeout
    while True:
        seen = await asyncio.to_thread(cluster.readiness)
        if all(s == status for s in seen):
            return
        if time.monotonic() > deadline:
            pytest.fail(f"/readyz answered {seen}, not {status} everywhere")
        await asyncio.sleep(0.1)


# -- the faults ----------------------------------------------------------------------------


async def test_a_killed_nodes_players_resume_on_the_others_and_lose_no_acked_move(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster()
    race = await open_race(cluster, seed=1)
    race.play()
    await race.moves_each(10)

    # Kill a node whose players still play (a random line of play may end stuck), and
    # not the spectator's (open_race puts it on the second node).
    doomed = next(
        (k for k in (NODES - 1, 0) if any(p.playing for p in race.players if p.node == k)),
        None,
    )
    if doomed is None:
        pytest.fail("every game on the nodes that may be killed ended stuck")
    victims = [p for p in race.players if p.node == doomed]
    await race.in_flight(victims)
    cluster.nodes[doomed].kill()
    survivors = [node for k, node in enumerate(cluster.nodes) if k != doomed]
    for i, player in enumerate(victims):
        # What a load balancer does for a node that is gone: send the client elsewhere.
        player.client.url = survivors[i % len(survivors)].url
    at_kill = await race.moves_each(10)

    assert all(p.client.resumes >= 1 for p in victims)
    # The spectator, on a surviving node, sees the moved players play on (those whose
    # game went on after the kill: one may have ended stuck).
    waiting = {
        p.client.player_id: at_kill[race.players.index(p)]
        for p in victims
        if len(p.acked) > at_kill[race.players.index(p)]
    }
    assert waiting, "no moved player played on after the kill"
    async with asyncio.timeout(TIMEOUT):
        while waiting:
            event = await race.spectator.next_event("progress")
            for standing in event["players"]:
                if standing["moves"] > waiting.get(standing["player_id"], 1 << 30):
                    del waiting[standing["player_id"]]
    await race.finish()


async def test_a_frozen_redis_acks_nothing_fails_readiness_and_the_race_goes_on(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster()
    race = await open_race(cluster, seed=2)
    race.play()
    await race.moves_each(5)
    assert await asyncio.to_thread(cluster.readiness) == [200] * NODES

    loop = asyncio.get_running_loop()
    await race.in_flight(race.players)
    cluster.redis.pause()
    frozen = loop.time()
    try:
        await wait_readiness(cluster, 503, timeout=FREEZE_S - 2 * MARGIN)
        await asyncio.sleep(max(0.0, frozen + FREEZE_S - loop.time()))
    finally:
        cluster.redis.resume()
    thawed = loop.time()

    assert race.acked_between(frozen + MARGIN, thawed) == 0, "a move was acked without Redis"
    await wait_readiness(cluster, 200, timeout=2 * TIMEOUT)
    await race.moves_each(5)
    await race.finish()


async def test_redis_killed_and_restarted_on_its_aof_loses_no_acked_move(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(appendfsync="always")
    race = await open_race(cluster, seed=3)
    race.play()
    await race.moves_each(5)

    loop = asyncio.get_running_loop()
    await race.in_flight(race.players)
    cluster.redis.kill()
    killed = loop.time()
    await wait_readiness(cluster, 503, timeout=TIMEOUT)
    await asyncio.sleep(max(0.0, killed + 2 * MARGIN - loop.time()))
    restarting = loop.time()
    await asyncio.to_thread(cluster.redis.start)

    assert race.acked_between(killed + MARGIN, restarting) == 0, "a move was acked without Redis"
    aof = cluster.redis.directory / deployed_persistence().get("appenddirname", "appendonlydir")
    assert aof.is_dir() and any(aof.iterdir()), "Redis kept no append-only file"
    await wait_readiness(cluster, 200, timeout=2 * TIMEOUT)
    await race.moves_each(5)
    await race.finish()


# -- a failure at one exact point, in process ------------------------------------------------


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_resignation_counts_the_acked_move_whose_progress_was_not_recorded(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = await make_client("alice")
    bob = await make_client("bob")
    room = await alice.create_room("canfield", countdown=0)
    await bob.join(room["code"])
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    assert (await alice.move("d"))["rev"] == 1

    # Redis fails right after the move is logged: the ack goes out, the room's record of
    # the player's standing does not change.
    backend = server.node.backend
    update_room = backend.update_room_publishing  # the write of a report of standings
    failures = [BackendUnavailable("redis: gone for a moment")]

    async def flaky(code: str, change: Any) -> Any:
        if failures:
            raise failures.pop()
        return await update_room(code, change)

    monkeypatch.setattr(backend, "update_room_publishing", flaky)
    assert (await alice.move("d"))["rev"] == 2
    async with asyncio.timeout(TIMEOUT):
        while failures:  # the ack may go out before the room is updated
            await asyncio.sleep(0.01)

    await alice.resign()
    await bob.resign()
    over = await alice.next_event("race_over", timeout=TIMEOUT)
    moves = {r["name"]: r["moves"] for r in over["results"]}
    assert moves == {"alice": 2, "bob": 0}


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_game_rebuilt_twice_at_once_keeps_the_move_played_in_between(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = await make_client("alice")
    room = await alice.create_room("canfield", countdown=0)
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    node = server.node
    held = node.held[room["code"]]
    held.games.clear()  # as after a failed append: the next use rebuilds it from the log

    # A room task (a resync's snapshot, a race start's fan-out) starts rebuilding the game
    # and is slow to read the log; meanwhile the player's move rebuilds it too and plays.
    read_moves = node.backend.read_timed_moves
    release = asyncio.Event()
    read = asyncio.Event()
    calls = 0

    async def slow_once(code: str, race: int, player_id: str) -> list[tuple[str, int]]:
        nonlocal calls
        calls += 1
        moves = await read_moves(code, race, player_id)
        if calls == 1:
            read.set()
            await release.wait()
        return moves

    monkeypatch.setattr(node.backend, "read_timed_moves", slow_once)
    assert alice.player_id is not None
    rebuild = asyncio.ensure_future(node.moves.game(held, held.record, alice.player_id))
    await asyncio.wait_for(read.wait(), TIMEOUT)
    assert (await alice.move("d"))["rev"] == 1
    release.set()
    await rebuild
    assert (await alice.move("d"))["rev"] == 2
    assert (await alice.sync())["you"]["rev"] == 2


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_room_record_read_before_a_join_does_not_throw_the_joiner_out(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = await make_client("alice")
    bob = await make_client("bob")
    carol = await make_client("carol")
    room = await alice.create_room("canfield", countdown=0)
    code = room["code"]
    node = server.node

    # The room's fan-out task reads the record for Bob's "members" event, then is slow to
    # go on; Carol joins through the same node meanwhile.
    load_room = node.backend.load_room
    release = asyncio.Event()
    delayed = asyncio.Event()

    async def slow_in_fan_out(code: str) -> Any:
        record = await load_room(code)
        held = node.held.get(code)
        fan_out = held is not None and asyncio.current_task() is held.task
        if fan_out and bob.player_id in record.members and not delayed.is_set():
            delayed.set()
            await release.wait()
        return record

    monkeypatch.setattr(node.backend, "load_room", slow_in_fan_out)
    await bob.join(code)
    await asyncio.wait_for(delayed.wait(), TIMEOUT)
    await carol.join(code)
    release.set()
    everyone = ["alice", "bob", "carol"]
    while [
        m["name"] for m in (await alice.next_event("members", timeout=TIMEOUT))["members"]
    ] != everyone:
        pass  # Carol's join is fanned out after Bob's
    assert [m["name"] for m in (await carol.sync())["members"]] == everyone


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_snapshot_is_never_older_than_an_event_its_client_has_had(
    server: RunningServer,
    start_server: ServerFactory,
    make_client: ClientFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sync reads the room, then a progress event goes out before the reply does.

    A node hears the events of another node's changes on their own connection, so a
    record read just before a change can reach it after that change's event. The client,
    given a snapshot older than an event it had, went back, took the next event for a gap,
    and dropped the race_over that the snapshot it then asked for already covered.
    """
    other = await start_server()
    alice = await make_client("alice")
    bob = await make_client("bob", url=other.url)
    room = await alice.create_room("canfield", countdown=0)
    await bob.join(room["code"])
    await alice.start()
    await alice.next_event("race_started", timeout=TIMEOUT)
    await bob.next_event("race_started", timeout=TIMEOUT)
    node = server.node

    load_room = node.backend.load_room
    release = asyncio.Event()
    read = asyncio.Event()

    async def slow_once(code: str) -> Any:
        record = await load_room(code)
        if not read.is_set():
            read.set()
            await release.wait()
        return record

    monkeypatch.setattr(node.backend, "load_room", slow_once)
    sync = asyncio.ensure_future(alice.sync())
    await asyncio.wait_for(read.wait(), TIMEOUT)
    await bob.move("d")
    heard = await alice.next_event("progress", timeout=TIMEOUT)
    release.set()
    snapshot = await sync
    assert snapshot["seq"] >= heard["seq"]
    assert alice.seq >= heard["seq"]

    await bob.resign()
    await alice.resign()
    over = await alice.next_event("race_over", timeout=TIMEOUT)
    assert {r["name"] for r in over["results"]} == {"alice", "bob"}


def refuse_fan_out_reads(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, refuse: Callable[[], bool]
) -> list[str]:
    """Make the room fan-out tasks' reads of their room's record fail, as a node's Redis
    connection pool all busy makes them, while ``refuse()``; the codes of those refused."""
    node = server.node
    load_room = node.backend.load_room
    refused: list[str] = []

    async def pool_busy(code: str) -> Any:
        held = node.held.get(code)
        if held is not None and asyncio.current_task() is held.task and refuse():
            refused.append(code)
            raise BackendUnavailable("redis: No connection available.")
        return await load_room(code)

    monkeypatch.setattr(node.backend, "load_room", pool_busy)
    return refused


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_a_state_event_whose_fan_out_finds_redis_unavailable_goes_out_once_it_answers(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node out of Redis connections (its pool all busy under a burst of joins) could not
    read the room's record for a state event, and dropped the event: a lobby lacked its
    last joiner, a player got no race_started and no board. Each such event now goes out
    once Redis answers, before the room's later events."""
    alice = await make_client("alice")
    bob = await make_client("bob")
    room = await alice.create_room("canfield", countdown=0)
    code = room["code"]
    refusals = 3
    refused = refuse_fan_out_reads(server, monkeypatch, lambda: len(refused) < refusals)
    await bob.join(code)
    members = await alice.next_event("members", timeout=TIMEOUT)
    assert [m["name"] for m in members["members"]] == ["alice", "bob"]
    assert refused == [code] * refusals

    refused.clear()
    await alice.start()
    for player in (alice, bob):
        started = await player.next_event("race_started", timeout=TIMEOUT)
        assert started["rev"] == 0
        assert started["view"]["foundations"] is not None
    assert refused == [code] * refusals
    assert (await bob.move("d"))["rev"] == 1
    progress = await alice.next_event("progress", timeout=TIMEOUT)
    assert progress["seq"] > started["seq"]


@pytest.mark.parametrize("backend_kind", ["redis"], indirect=True)
async def test_members_events_folded_while_redis_is_unavailable_keep_the_first_seq(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob's members event waits for Redis; Carol's join queues another behind it. They go
    out as one, which says ``since`` the first it folds: the client counts both as come."""
    alice = await make_client("alice")
    bob = await make_client("bob")
    carol = await make_client("carol")
    room = await alice.create_room("canfield", countdown=0)
    code = room["code"]
    carol_in = asyncio.Event()
    refused = refuse_fan_out_reads(server, monkeypatch, lambda: not carol_in.is_set())
    before = alice.seq
    await bob.join(code)
    while not refused:
        await asyncio.sleep(0.01)
    await carol.join(code)
    carol_in.set()
    members = await alice.next_event("members", timeout=TIMEOUT)
    assert [m["name"] for m in members["members"]] == ["alice", "bob", "carol"]
    # Folded from the first event refused (Bob's, or the room's own before it) on.
    assert members["since"] <= before + 1 < members["seq"] == before + 2
    assert alice.seq == before + 2
