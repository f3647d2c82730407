"""A serving node freezes what outlives a young collection, and thaws it all now and then.

The collector's settings are process-wide, so each case runs in a process of its own.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from conftest import TIMEOUT, ServerFactory

from solrace.client import Client
from solrace.server import app

_SCRIPT = """
import asyncio, gc, json, sys
from structlog.testing import capture_logs
from solrace.server import app

async def main(freeze):
    app.tune_gc(freeze_survivors=freeze)
    before = gc.get_freeze_count()
    kept = [[i] for i in range(100_000)]  # a connection's objects, as it were (lists stay
    # tracked; a dict of plain values would leave the collector's sight by itself)
    gc.collect(0)  # a young collection: they survive it
    await asyncio.sleep(0.05)  # the loop runs what the collection asked for
    after_young = gc.get_freeze_count()
    # Cycles among the frozen objects, dropped: reference counting cannot free them.
    for i in range(0, 20_000, 2):
        kept[i].append(kept[i + 1])
        kept[i + 1].append(kept[i])
    del kept
    plain = gc.collect()  # a full collection does not look at frozen objects
    thawed = None
    if freeze:
        with capture_logs() as logs:
            app.thaw()
        thawed = [e for e in logs if e["event"] == "gc_thawed"]
    print(json.dumps({
        "frozen_by_young": after_young - before,
        "collected_without_thaw": plain,
        "thawed": thawed,
        "timer": app._thaw_timer is not None and not app._thaw_timer.cancelled(),
        "frozen_after_thaw": gc.get_freeze_count(),
    }))

asyncio.run(main(sys.argv[1] == "freeze"))
"""


def _run(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, mode], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("mode", ["freeze", "plain"])
def test_what_outlives_a_young_collection_is_frozen_and_a_thaw_collects_its_cycles(
    mode: str,
) -> None:
    """Frozen, a connection's long-lived objects are never scanned again (no middle or
    full collection of hundreds of milliseconds for each wave of joins); a cycle left
    among them is found by the thaw, which freezes the rest again."""
    seen = _run(mode)
    if mode == "plain":
        assert int(str(seen["frozen_by_young"])) < 1_000  # what the loop's start left
        assert int(str(seen["collected_without_thaw"])) >= 20_000  # 10,000 pairs
        assert seen["timer"] is False
        return
    assert int(str(seen["frozen_by_young"])) >= 100_000
    assert seen["collected_without_thaw"] == 0  # frozen: out of the collector's sight
    thawed = seen["thawed"]
    assert isinstance(thawed, list) and len(thawed) == 1
    assert thawed[0]["collected"] >= 20_000 and thawed[0]["log_level"] == "info"
    assert int(str(seen["frozen_after_thaw"])) > 10_000  # the survivors, frozen again
    assert seen["timer"] is True  # the next thaw is due


_TIMER_SCRIPT = """
import asyncio, json
from structlog.testing import capture_logs
from solrace.server import app

async def main():
    app.GC_THAW_S = 0.05
    app.GC_THAW_AFTER_GONE = 3
    with capture_logs() as logs:
        app.tune_gc()
        await asyncio.sleep(0.3)  # six intervals, no connection gone
        quiet = sum(e["event"] == "gc_thawed" for e in logs)
        for _ in range(3):
            app.note_connection_gone()
        await asyncio.sleep(0.3)
        after = sum(e["event"] == "gc_thawed" for e in logs)
    print(json.dumps({"quiet": quiet, "after": after}))

asyncio.run(main())
"""


def test_the_thaw_waits_for_connections_to_have_gone() -> None:
    """A thaw's full collection stalls the node (690 ms at 6,000 players): the timer
    skips it while too few connections have ended to have left anything, and runs it
    once when they have."""
    done = subprocess.run(
        [sys.executable, "-c", _TIMER_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"quiet": 0, "after": 1}


async def test_a_connection_that_ends_is_counted_for_the_thaw(start_server: ServerFactory) -> None:
    server = await start_server()
    before = app._gone_since_thaw
    client = Client(server.url, name="gone", request_timeout=TIMEOUT)
    await client.connect()
    await client.close()
    async with asyncio.timeout(TIMEOUT):
        while app._gone_since_thaw == before:
            await asyncio.sleep(0.01)
    assert app._gone_since_thaw >= before + 1
