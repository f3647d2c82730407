"""A node stopped between a race's end and the write of its results records them when it
starts again on its data.

The race's end and its results are two writes: the room's record says the race is over,
then its ``race_over`` is published and the results written. A node stopped between the two
(here: the write of the results fails, and the node is stopped) left a race without its
results and a daily attempt without its entry, so that the player's next start was
attempt 2, unranked, with attempt 1 on no board.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from conftest import TIMEOUT, ServerFactory
from daily_support import AT_ONCE, PASSWORD

from solrace.client import Client, ServerError
from solrace.server.daily import utc_date

pytestmark = pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)


class Stopped(Exception):
    """The node's process ends here."""


def stops_at(monkeypatch: pytest.MonkeyPatch, backend: Any, name: str) -> list[str]:
    """Make the backend's ``name`` write fail as a process killed before it would; the
    list gets a line for each call."""
    calls: list[str] = []

    async def killed(*args: Any, **kwargs: Any) -> None:
        calls.append(name)
        raise Stopped(name)

    monkeypatch.setattr(backend, name, killed)
    return calls


async def written(calls: list[str]) -> None:
    """Wait until the node came to the write it does not live through."""
    async with asyncio.timeout(TIMEOUT):
        while not calls:
            await asyncio.sleep(0.01)


async def test_a_race_whose_results_were_not_written_gets_them_after_a_restart(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = await start_server()
    calls = stops_at(monkeypatch, running.node.backend, "save_results")
    async with Client(running.url, name="ann", request_timeout=TIMEOUT, resume=False) as ann:
        room = await ann.create_room("canfield", countdown=0)
        await ann.start()
        await ann.next_event("race_started", timeout=TIMEOUT)
        await ann.move("d")
        with contextlib.suppress(ServerError, TimeoutError):
            await ann.resign()
    await written(calls)  # the race ended; its results are not written
    code = room["code"]
    assert await running.node.backend.load_results(code, 1) is None
    await running.server.close()
    monkeypatch.undo()

    again = await start_server()
    results = await again.node.backend.load_results(code, 1)
    assert results is not None
    (only,) = results["results"]
    assert (only["name"], only["status"], only["moves"]) == ("ann", "resigned", 1)
    # Kept for its replay too.
    assert await again.node.backend.load_race(code, 1, again.node.now_ms()) is not None


async def test_a_daily_attempt_whose_entry_was_not_written_is_on_the_board_after_a_restart(
    start_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = await start_server(**AT_ONCE)
    calls = stops_at(monkeypatch, running.node.backend, "save_daily_entry")
    async with Client(running.url, name="owl", request_timeout=TIMEOUT, resume=False) as owl:
        await owl.claim(PASSWORD)
        room = await owl.daily("canfield")
        assert room["settings"]["attempt"] == 1
        await owl.move("d")
        with contextlib.suppress(ServerError, TimeoutError):
            await owl.resign()
        player_id = owl.player_id
    await written(calls)
    date = utc_date(running.node.now_ms())
    assert await running.node.backend.daily_entries(date, "canfield") == []
    await running.server.close()
    monkeypatch.undo()

    again = await start_server(**AT_ONCE)
    (entry,) = await again.node.backend.daily_entries(date, "canfield")
    assert (entry.player_id, entry.attempt, entry.ranked) == (player_id, 1, True)
    assert entry.log == ["d"] and entry.status == "resigned"
    assert room["code"] not in await again.node.backend.daily_rooms(date, "canfield")
    # Recorded once: a second restart finds nothing missing.
    await again.server.close()
    third = await start_server(**AT_ONCE)
    assert len(await third.node.backend.daily_entries(date, "canfield")) == 1
