"""The line client's steps that its tests share: a room it hosts that others join, a kept
guest racing in another's room (and dying there), and ``q`` that asks before it resigns."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import TIMEOUT, ClientFactory
from test_terminal import ScriptedConsole

from solrace.client import Client
from solrace.client.terminal import play

RESIGN_ASKED = r"resign this race\? y/N$"
"""What ``q`` asks while the player's game goes on."""


def start_play(url: str, console: ScriptedConsole, **kwargs: Any) -> asyncio.Future[int]:
    """``play`` of the line client on ``console``, running beside the test."""
    return asyncio.ensure_future(play(url, console, **kwargs))


async def joined(
    console: ScriptedConsole,
    make_client: ClientFactory,
    host: str,
    *names: str,
    room: str = r"^room (\w+) ",
) -> list[Client]:
    """Clients of ``names`` join the room the line client hosts as ``host`` (its code read
    with ``room``), once each made; the console lists them after the host."""
    code = (await console.shows(room))[1]
    clients = [await make_client(name) for name in names]
    for client in clients:
        await client.join(code)
    await console.shows(rf"in the room: {host} \(host\), {', '.join(names)}")
    return clients


async def quit_resigning(
    console: ScriptedConsole, task: asyncio.Future[int], since: int = 0
) -> None:
    """``q`` in a game that goes on asks first (seen from line ``since`` on); ``y`` resigns,
    and the client ends with 0."""
    console.type("q")
    await console.shows(RESIGN_ASKED, since=since)
    console.type("y")
    assert await asyncio.wait_for(task, TIMEOUT) == 0


def as_kept_quinn(url: str, console: ScriptedConsole, **kwargs: Any) -> asyncio.Future[int]:
    """``play`` as Quinn, the guest the command line keeps (back in its race if it has one)."""
    return start_play(url, console, name="Quinn", keep_guest=True, **kwargs)


async def guest_racing(
    url: str, host: Client, console: ScriptedConsole, **kwargs: Any
) -> tuple[str, asyncio.Future[int]]:
    """Quinn, a kept guest, joins a room ``host`` creates (any deal) and races in it once
    the host starts: the room's code and the line client's run."""
    code = (await host.create_room("canfield", countdown=0, winnable=False))["code"]
    task = as_kept_quinn(url, console, join=code, **kwargs)
    await console.shows(r"^room \w+ \(canfield\); you are Quinn")
    await host.start()
    await console.shows(r"^race 1 started")
    return code, task


async def dies_after_a_move(console: ScriptedConsole, task: asyncio.Future[int]) -> None:
    """The player draws, then its terminal dies (no leave: the server keeps the seat)."""
    console.type("d")
    await console.shows(r"^played d")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
