"""The client library under the server's message rate, and once the server closes.

A client refused for the rate (``rate_limited``) waits out the reply's ``retry_after``
before any request and then spaces its requests out, so that a fast bot is slowed down
rather than refused until the server closes it (``max_rate_violations``). A connection the
server closes for good fails every request at once, with the close code and reason.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import TIMEOUT, ClientFactory, RunningServer, ServerFactory

from solrace.client import Client, ClientClosed
from solrace.protocol import Limits
from solrace.server import commands as server_commands

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"
#: A Canfield deal on which random play goes on for ever (no game of a thousand random
#: ones from it ended within 600 moves): the bot plays it until the race's time is up.
ENDLESS_SEED = 2**63 + 1


@pytest.fixture
def backend_kind() -> str:
    """The client does not depend on the backend: the embedded one serves it."""
    return "embedded"


def _bot() -> Any:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    namespace: dict[str, Any] = {"__name__": "bot_example"}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)
    return namespace["bot"]


async def test_the_documented_bot_plays_a_long_race_at_the_default_rate_and_is_not_closed(
    server: RunningServer, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits = server.config.limits
    assert limits == Limits()  # the shipped message rate
    monkeypatch.setattr(server_commands.secrets, "randbits", lambda _bits: ENDLESS_SEED)
    host = await make_client("host")
    room = await host.create_room("canfield", countdown=0, undo=False, time_limit=10)
    task = asyncio.ensure_future(_bot()(server.url, room["code"]))
    joined = await host.next_event("members", timeout=TIMEOUT)
    while len(joined["members"]) < 2 or not joined["members"][1]["ready"]:
        joined = await host.next_event("members", timeout=TIMEOUT)
    bot_id = joined["members"][1]["player_id"]
    await host.start()
    await host.resign()
    last: dict[str, Any] = {}
    async with asyncio.timeout(10 + TIMEOUT):
        while True:
            event = await host.next_event("progress", "race_over")
            if event["type"] == "race_over":
                break
            for standing in event["players"]:
                if standing["player_id"] == bot_id:
                    last = standing
            session = server.node.sessions.get(bot_id)
            if session is not None:
                # A few refusals set the client's pace; a busy machine's jitter may add
                # some, far from the count that closes a connection.
                assert session.limiter.violations <= limits.max_rate_violations // 4, (
                    "the bot is refused again and again"
                )
    await asyncio.wait_for(task, TIMEOUT)  # it ends without an error: it was not closed
    # Far more moves than the burst and a refusal every other move would have allowed.
    assert last["moves"] > limits.burst + 2 * limits.max_rate_violations, last


async def test_a_fast_client_is_slowed_to_the_rate_and_not_closed(
    start_server: ServerFactory,
) -> None:
    server = await start_server(
        limits=Limits(messages_per_second=20.0, burst=5, max_rate_violations=10)
    )
    client = Client(server.url, name="quick", request_timeout=TIMEOUT)
    await client.connect()
    try:
        started = time.monotonic()
        for _ in range(60):
            await client.ping()
        took = time.monotonic() - started
        assert client.connected
        assert server.node.sessions[client.player_id or ""].limiter.violations <= 10
        assert took >= (60 - 5) / 20.0 * 0.9, took  # at the rate, not over it
    finally:
        await client.close()


async def test_a_request_waiting_out_the_rate_fails_at_once_when_the_server_closes(
    start_server: ServerFactory,
) -> None:
    # The first refusal closes the connection (1008) while the refused ping waits to be
    # sent again: it fails then, with the close's code and reason, not at its timeout.
    server = await start_server(
        limits=Limits(messages_per_second=0.5, burst=2, max_rate_violations=0)
    )
    client = Client(server.url, name="quick", request_timeout=TIMEOUT * 3)
    await client.connect()
    try:
        await client.ping()
        await client.ping()
        started = time.monotonic()
        with pytest.raises(ClientClosed) as closed:
            await client.ping()
        assert time.monotonic() - started < TIMEOUT, "it waited for the request's timeout"
        assert str(closed.value) == "closed by the server: 1008 rate limit exceeded"
        assert (closed.value.code, closed.value.reason) == (1008, "rate limit exceeded")
        assert not client.connected
        started = time.monotonic()
        with pytest.raises(ClientClosed, match="1008 rate limit exceeded"):
            await client.move("d")
        assert time.monotonic() - started < 0.5  # at once: nothing is sent
    finally:
        await client.close()


async def test_a_request_after_the_connection_was_taken_over_fails_at_once(
    make_client: ClientFactory,
) -> None:
    phone = await make_client("ann")
    assert phone.token is not None
    laptop = await make_client("ann", token=phone.token)  # the same player: 4001 to the phone
    closed = await phone.next_event("closed", timeout=TIMEOUT)
    assert closed["code"] == 4001
    assert not phone.connected
    started = time.monotonic()
    with pytest.raises(ClientClosed, match=r"^closed by the server: 4001"):
        await phone.ping()
    assert time.monotonic() - started < 0.5
    await laptop.ping()
