"""Small asyncio helpers the node's parts share."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Hashable, Iterable
from typing import Any

__all__ = ["KeyedLock", "cancel_until_done"]


class KeyedLock:
    """One lock a key, kept while anyone holds it or waits for it, then let go."""

    def __init__(self) -> None:
        self._locks: dict[Hashable, tuple[asyncio.Lock, list[int]]] = {}

    def __len__(self) -> int:
        """How many keys are held or waited for now."""
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        """Held while the block runs; one holder of ``key`` at a time."""
        entry = self._locks.get(key)
        if entry is None:
            entry = self._locks[key] = (asyncio.Lock(), [0])
        lock, users = entry  # users: holding it or waiting for it
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[key]


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
