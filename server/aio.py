"""Small asyncio helpers the node's parts share."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

__all__ = ["cancel_until_done"]


async def cancel_until_done(tasks: Iterable[asyncio.Future[Any]], every_s: float = 0.1) -> None:
    """Cancel ``tasks`` and wait until each is done, cancelling again every ``every_s``.

    A cancellation can be lost inside a library (redis-py turns one that lands as a read's
    own timeout fires into a timeout, which the task may catch and go on), so a single
    ``cancel()`` and ``await`` could wait for as long as the task would have run.
    """
    for task in tasks:
        while not task.done():
            task.cancel()
            await asyncio.wait([task], timeout=every_s)
        with contextlib.suppress(BaseException):  # cancelled or failed: gone either way
            task.result()
