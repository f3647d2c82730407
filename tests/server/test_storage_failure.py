"""The embedded store failing to commit: no frame leaves, the node stops, nothing acked is lost.

The SQLite file is capped at its size mid-race, so the next commit fails (the disk is
full, as far as SQLite can tell). The moves taken since the last commit are lost with it;
none of them may have been acked. Started again on the same data, the node has exactly
the moves its player saw acked.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from conftest import TIMEOUT, ServerFactory

from solrace.client import Client, ClientClosed, ServerError
from solrace.server import EmbeddedBackend

pytestmark = pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)


async def test_a_failed_commit_acks_nothing_more_and_stops_the_node(
    start_server: ServerFactory,
) -> None:
    running = await start_server()
    backend = running.node.backend
    assert isinstance(backend, EmbeddedBackend)
    ann = Client(running.url, name="ann", request_timeout=TIMEOUT / 2, resume=False)
    await ann.connect()
    acked: list[str] = []
    try:
        room = await ann.create_room("canfield", countdown=0, undo=True)
        await ann.start()
        await ann.next_event("race_started", timeout=TIMEOUT)
        for move in ("d", "u", "d"):
            acked.append((await ann.move(move))["move"])
        pages = backend.db.execute("PRAGMA page_count").fetchone()[0]
        backend.db.execute(f"PRAGMA max_page_count = {pages}")  # full: the next growth fails
        with contextlib.suppress(ServerError, ClientClosed, TimeoutError):
            for rev in range(3, 400):
                ack = await ann.move("u" if rev % 2 == 0 else "d")
                acked.append(ack["move"])
        async with asyncio.timeout(TIMEOUT):
            await running.server.failed.wait()
        assert running.server.failure is not None
        assert not await backend.ready()
    finally:
        await ann.close()
    await running.server.close()

    again = await start_server()
    assert again.config.data_dir == running.config.data_dir
    assert ann.player_id is not None
    logged = await again.node.backend.read_moves(room["code"], 1, ann.player_id)
    assert logged[: len(acked)] == acked
    assert logged == acked, "a move was lost after its ack, or kept without one"
