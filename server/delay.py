"""Boards held back for the spectators of a ``delayed`` room. Pure: the caller passes time.

A node keeps, for each room it holds whose spectators see boards late, the boards it
hears (in progress events, or from its own games when a spectator comes) and shows each
one ``delay_ms`` after it heard it: a board is never shown sooner than that after the
move that made it. On Redis the node that serves a spectator may play none of the
room's games; the boards it hears are all it needs.
"""

from __future__ import annotations

from collections import deque
from typing import Any

__all__ = ["MAX_WAITING", "DelayedBoards"]

MAX_WAITING = 120
"""About the most boards of one player a room holds back at once, whatever the delay."""


class DelayedBoards:
    """One race's boards of a room, each shown ``delay_ms`` after it was heard.

    Memory is bounded: the boards of a player heard within ``step_ms`` of the first of a
    run are kept as one entry, the latest of them, shown ``delay_ms`` after it was heard.
    So a player has at most ``delay_ms / step_ms + 1`` entries waiting, and ``step_ms`` is
    at least the progress interval and at least ``delay_ms / MAX_WAITING``.
    """

    __slots__ = ("delay_ms", "race", "shown", "step_ms", "waiting")

    def __init__(self, race: int, delay_ms: int, step_ms: int = 0) -> None:
        self.race = race
        self.delay_ms = delay_ms
        self.step_ms = max(step_ms, -(-delay_ms // MAX_WAITING), 1)  # ceil: <= MAX_WAITING runs
        # By player: [first heard, last heard, board] of each run, oldest first.
        self.waiting: dict[str, deque[list[Any]]] = {}
        self.shown: dict[str, dict[str, Any]] = {}  # by player: the board due last

    def hear(self, player_id: str, board: dict[str, Any], now_ms: int) -> None:
        """Keep ``board``, heard at ``now_ms``, to be shown ``delay_ms`` later."""
        queue = self.waiting.get(player_id)
        if queue is None:
            queue = self.waiting[player_id] = deque()
        if queue:
            last = queue[-1]
            now_ms = max(now_ms, last[1])  # a clock that steps back never brings one sooner
            if now_ms - last[0] < self.step_ms:
                last[1], last[2] = now_ms, board
                return
        queue.append([now_ms, now_ms, board])

    def due(self, now_ms: int) -> dict[str, dict[str, Any]]:
        """Take the boards due at ``now_ms``: each player's latest heard ``delay_ms`` ago or
        more, for the players whose shown board this changes."""
        cutoff = now_ms - self.delay_ms
        changed: dict[str, dict[str, Any]] = {}
        for player_id, queue in self.waiting.items():
            board = None
            while queue and queue[0][1] <= cutoff:
                board = queue.popleft()[2]
            if board is not None:
                self.shown[player_id] = changed[player_id] = board
        return changed

    def as_of(self, now_ms: int) -> dict[str, dict[str, Any]]:
        """Each player's board as shown at ``now_ms`` (nothing is taken): for a snapshot."""
        cutoff = now_ms - self.delay_ms
        boards = dict(self.shown)
        for player_id, queue in self.waiting.items():
            for _, heard, board in queue:
                if heard > cutoff:
                    break
                boards[player_id] = board
        return boards

    def next_due_ms(self) -> int | None:
        """When the next board waiting comes due, or None if none waits."""
        times = [queue[0][1] + self.delay_ms for queue in self.waiting.values() if queue]
        return min(times) if times else None

    def held(self) -> int:
        """How many boards wait."""
        return sum(len(queue) for queue in self.waiting.values())
