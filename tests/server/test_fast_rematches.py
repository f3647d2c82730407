"""A room that moves on faster than its events go out still tells its members every race.

A host alone in a room, with a spectator who has just come, sends start, resign and rematch back to back without waiting for
the answers, race after race. The room's events go out from its own task, which reads
the room as it is by then: a ``race_started`` whose race has already ended and been reset
by the rematch must still reach every member, in order, before that race's ``race_over``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conftest import LOOSE_BUDGETS, ServerFactory
from e2e_support import RawClient

from solrace.protocol import Limits

RACES = 4


async def test_back_to_back_races_each_reach_the_spectator_in_order(
    start_server: ServerFactory,
) -> None:
    # A room's members events go out at most every half second (the default), so the
    # watcher's arrival holds the room's task back while the host's requests run on.
    server = await start_server(
        limits=Limits(messages_per_second=1000, burst=1000),
        budgets=replace(LOOSE_BUDGETS, members_interval_s=0.5),
    )
    host = await RawClient.open(server.url, name="host")
    watcher = await RawClient.open(server.url, name="watcher")
    created = await host.request(
        {"type": "create_room", "variant": "canfield", "countdown": 0, "spectators": "live"}
    )
    code = created["room"]["code"]
    joined = await watcher.request({"type": "join_room", "code": code, "role": "spectator"})
    assert joined["type"] == "room", joined
    # Every request at once, none waiting for its answer.
    requests: list[dict[str, Any]] = [
        {"type": kind} for _ in range(RACES) for kind in ("start", "resign", "rematch")
    ]
    for number, request in enumerate(requests, start=1000):
        await host.send({**request, "id": number})
    answers = [
        await host.recv(lambda f, n=n: f.get("id") == n) for n in range(1000, 1000 + len(requests))
    ]
    assert all(a["type"] != "error" for a in answers), [a for a in answers if a["type"] == "error"]

    await watcher.recv(lambda f: f.get("type") == "race_over" and f["race"] == RACES)
    events = [f for f in watcher.frames if f.get("room") == code and "seq" in f]
    seqs = [f["seq"] for f in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "no event of the room is missing"
    order = [(f["type"], f["race"]) for f in events if f["type"] in ("race_started", "race_over")]
    assert order == [
        (kind, race) for race in range(1, RACES + 1) for kind in ("race_started", "race_over")
    ]
    # Neither reads the room's later events: a close handshake would wait behind them.
    for client in (host, watcher):
        client.ws.transport.abort()
