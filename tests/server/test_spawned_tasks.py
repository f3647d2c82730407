"""Work a node spawns and nothing awaits: a failure is one structured log line at once."""

from __future__ import annotations

import asyncio

import pytest
from conftest import RunningServer
from structlog.testing import capture_logs

from solrace.server.backends import BackendUnavailable

pytestmark = pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)


async def storage_away() -> None:
    raise BackendUnavailable("redis: No connection available.")


async def broken() -> None:
    raise ValueError("a bug")


async def fine() -> None:
    await asyncio.sleep(0)


async def test_a_spawned_tasks_failure_is_logged_as_it_ends(server: RunningServer) -> None:
    node = server.node
    with capture_logs() as logs:
        for coro in (storage_away(), broken(), fine()):
            node.spawn(coro)
        for _ in range(5):
            await asyncio.sleep(0)
    failed = [entry for entry in logs if entry["event"] == "task_failed"]
    assert [(entry["log_level"], entry["task"]) for entry in failed] == [
        ("warning", "storage_away"),
        ("error", "broken"),
    ]
    assert failed[0]["error"] == "redis: No connection available."
    assert isinstance(failed[1]["exc_info"], ValueError)
    assert not node._tasks  # none kept once done
