"""The node's asyncio helpers."""

from __future__ import annotations

import asyncio

from solrace.server.aio import cancel_until_done


async def test_a_task_that_loses_a_cancellation_is_still_stopped() -> None:
    # As a task does whose cancellation a library turned into a timeout that it caught:
    # it goes on to a long sleep (the node's daily deal chooser sleeps an hour).
    lost = 0

    async def stubborn() -> None:
        nonlocal lost
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            lost += 1
        await asyncio.sleep(3600)

    async def failing() -> None:
        raise RuntimeError("gone")

    tasks = [asyncio.ensure_future(stubborn()), asyncio.ensure_future(failing())]
    await asyncio.sleep(0)
    await asyncio.wait_for(cancel_until_done(tasks, every_s=0.05), 5)
    assert lost == 1 and all(task.done() for task in tasks)
    assert tasks[0].cancelled()
