"""Everything one node holds for one room, in one object.

A node holds a room while one of its connections is a member of it. The
:class:`LocalRoom` is made when the first such member attaches and torn down when the
last one goes, both under the room's own lock, so that attaching and forgetting never
interleave (a resume that arrives while the room is being forgotten waits, then finds
it gone and makes a fresh one). It owns the members here, the room's latest record, the
queue of its events and the task that sends them out, its timers, the standings that
wait for the next report, and the games of the current race that this node plays.
Everything of a race (its games, its waiting standings, the start board, the boards held
back for spectators) goes when the race ends.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from typing import TYPE_CHECKING, Any

from ..engine import Game, new_game, spectator_view
from .delay import DelayedBoards
from .room import Member, Role, Room, RoomState, SpectatorMode, Standing

if TYPE_CHECKING:
    from .session import Session

__all__ = ["LocalRoom"]


class LocalRoom:
    """One room as this node holds it."""

    __slots__ = (
        "armed",
        "closed",
        "code",
        "delay_timer",
        "delayed",
        "ends_ms",
        "events",
        "fanning",
        "games",
        "lock",
        "members",
        "members_at",
        "opened",
        "pending",
        "race",
        "reached",
        "record",
        "report_timer",
        "reported_at",
        "sent",
        "spectated",
        "start_board",
        "task",
        "timer",
        "unsaved",
        "wake",
    )

    def __init__(self, code: str, record: Room) -> None:
        self.code = code
        self.lock = asyncio.Lock()  # held while the room is made ready or torn down
        self.members: set[Session] = set()
        self.record = record
        self.events: deque[dict[str, Any]] = deque()  # waiting for the room's task
        self.wake = asyncio.Event()  # set when an event is put in ``events``
        self.members_at = -math.inf  # loop time of the last members event sent here
        self.sent = 0  # the ``seq`` of the last room event sent to the members here
        self.task: asyncio.Task[None] | None = None
        self.fanning = False  # the task is sending an event out
        self.timer: asyncio.TimerHandle | None = None
        self.armed: int | None = None  # the deadline the timer is set for (ms)
        self.pending: dict[str, Standing] = {}  # standings waiting for the report, by player
        self.report_timer: asyncio.TimerHandle | None = None
        self.reported_at = 0.0  # monotonic time of the last report
        self.race = 0  # the race whose games are held
        self.games: dict[str, Game] = {}  # by player, of race ``race``
        # By player, of race ``race``: when (ms) each count of cards banked was first reached.
        self.reached: dict[str, list[int]] = {}
        # When race ``race`` ends by a win played here (a ``first`` room), before the
        # record says so: the record's deadline comes with the win's report, a task away,
        # and a move another player sends meanwhile must already be too late.
        self.ends_ms: int | None = None
        self.unsaved: set[str] = set()  # players whose board the store lacks
        self.start_board: dict[str, Any] | None = None  # the deal, as spectators see it
        self.delayed: DelayedBoards | None = None  # boards held back for spectators
        self.delay_timer: asyncio.TimerHandle | None = None  # shows the next one due
        # a record's members, and whether a spectator is among them: a record's members
        # are replaced, never changed in place, so a report (a new record, the same
        # members) reuses the answer
        self.spectated: tuple[dict[str, Member], bool] | None = None
        self.opened = False  # subscribed: the room's events come here
        self.closed = False  # torn down: a new LocalRoom takes its place

    def keep(self, record: Room) -> Room:
        """The newer of ``record`` and the one held, which is kept.

        A record read before a change this node made meanwhile (a join through it, say)
        must not undo it: a member it lacks would be sent away.
        """
        if record.seq < self.record.seq:
            return self.record
        self.record = record
        if record.race != self.race:
            self._new_race(record.race)
        return record

    def _new_race(self, race: int) -> None:
        self.race = race
        self.games = {}
        self.reached = {}
        self.ends_ms = None
        self.unsaved = set()
        self.start_board = None
        self.end_race(race)

    def games_of(self, race: int) -> dict[str, Game]:
        """The games of ``race`` held here (none kept of an earlier race)."""
        if race != self.race:
            self._new_race(race)
        return self.games

    def end_race(self, race: int) -> None:
        """The race is over and its results recorded: let go of what it needed."""
        if race == self.race:
            self.games = {}
            self.reached = {}
            self.unsaved = set()
        if self.delayed is not None and self.delayed.race <= race:
            self.delayed = None
        if self.delay_timer is not None:
            self.delay_timer.cancel()
            self.delay_timer = None
        self.pending = {}
        if self.report_timer is not None:
            self.report_timer.cancel()
            self.report_timer = None

    def first_reached(self, player_id: str, banked: int, now_ms: int) -> int:
        """When the player's game first had ``banked`` cards banked (ms), ``now_ms`` if it
        has just got there: a count lost and regained (a card played back from a
        foundation, an undo) ranks from the first time."""
        reached = self.reached.get(player_id)
        if reached is not None and banked < len(reached):
            return reached[banked]  # most moves: a count reached before
        if reached is None:
            reached = self.reached[player_id] = []
        while len(reached) <= banked:
            reached.append(now_ms)
        return reached[banked]

    def watched(self, record: Room) -> bool:
        """Whether the room (as ``record`` has it) has a spectator."""
        seen = self.spectated
        members = record.members
        if seen is None or seen[0] is not members:
            seen = self.spectated = (
                members,
                any(m.role is Role.SPECTATOR for m in members.values()),
            )
        return seen[1]

    def delay(self, record: Room, step_ms: int) -> DelayedBoards | None:
        """The boards held back for the spectators of the running race, if the room's
        spectators see them late (made on first use); else None."""
        settings = record.settings
        if settings.spectators is not SpectatorMode.DELAYED or record.state is not RoomState.RACING:
            return None
        self.games_of(record.race)  # let go of an earlier race's
        delayed = self.delayed
        if delayed is None or delayed.race != record.race:
            delayed = self.delayed = DelayedBoards(
                record.race, settings.spectator_delay * 1000, step_ms, self.deal_board(record)
            )
        return delayed

    def deal_board(self, record: Room) -> dict[str, Any]:
        """The race's deal as a spectator sees it before any move."""
        assert record.seed is not None
        self.games_of(record.race)
        if self.start_board is None:
            self.start_board = spectator_view(new_game(record.settings.variant, record.seed))
        return self.start_board

    def take_waiting(self, now: float) -> list[Standing]:
        """The waiting standings, taken for a report that starts at ``now`` (monotonic)."""
        if self.report_timer is not None:
            self.report_timer.cancel()
            self.report_timer = None
        if not self.pending:
            return []
        waiting = list(self.pending.values())
        self.pending = {}
        self.reported_at = now
        return waiting

    def put(self, event: dict[str, Any]) -> None:
        """Queue an event for the room's task."""
        self.events.append(event)
        self.wake.set()

    def close(self) -> None:
        """Stop the timers and the task (unless the task is the caller, which then ends)."""
        self.closed = True
        for timer in (self.timer, self.report_timer, self.delay_timer):
            if timer is not None:
                timer.cancel()
        self.timer = self.report_timer = self.delay_timer = None
        self.armed = None
        task, self.task = self.task, None  # a cancelled task's error would hold the room
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self.games = {}
        self.reached = {}
        self.unsaved = set()
        self.pending = {}
        self.delayed = None
