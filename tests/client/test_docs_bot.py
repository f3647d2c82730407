"""The bot in docs/client.md runs as written and plays a whole game."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from conftest import TIMEOUT, ClientFactory, RunningServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def _bot_source() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks, "docs/client.md has no python example"
    return str(blocks[0])


async def test_the_documented_bot_plays_until_its_game_ends(
    server: RunningServer, make_client: ClientFactory
) -> None:
    namespace: dict[str, Any] = {"__name__": "bot_example"}
    exec(compile(_bot_source(), str(DOC), "exec"), namespace)
    host = await make_client("host")
    # Rainbow Canfield always ends: no move in it can be undone by another move.
    room = await host.create_room("rainbow-canfield", countdown=0, undo=False)
    task = asyncio.ensure_future(namespace["bot"](server.url, room["code"]))
    joined = await host.next_event("members", timeout=TIMEOUT)
    while len(joined["members"]) < 2 or not joined["members"][1]["ready"]:
        joined = await host.next_event("members", timeout=TIMEOUT)
    await host.start()
    await host.next_event("race_started", timeout=TIMEOUT)
    bot_id = joined["members"][1]["player_id"]
    assert server.node.sessions[bot_id].bot  # it says it is a bot
    last: dict[str, Any] = {}
    async with asyncio.timeout(TIMEOUT * 3):
        while last.get("status", "playing") == "playing":
            event = await host.next_event("progress")
            for standing in event["players"]:
                if standing["player_id"] == bot_id:
                    last = standing
    await asyncio.wait_for(task, TIMEOUT)
    assert last["status"] in ("stuck", "resigned", "won")
    assert last["moves"] > 0
