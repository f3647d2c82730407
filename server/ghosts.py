"""Ghost races: race alone against a recorded run whose progress moves on its own times.

A room made with ``ghost`` names a recorded run: ``CODE/RACE/PLAYER`` (a finished race
kept for its replay, :mod:`.races`: a friend's, from its replay link, or one's own best
on a deal) or ``daily/DATE/VARIANT/PLAYER`` (a ranked daily attempt, once the day's seed
is out). Each race of the room deals the run's deal, and the run takes part as a ghost:
it is in the standings, marked ``ghost``, and its standing moves on as its moves did, at
their recorded times from the race's start, until the people are done. No board of a
ghost is ever sent: everyone in the race plays its deal.

Who may race a run: whoever may watch its replay (a race whose room showed its boards,
else its players), and anyone once a day is over for its ranked daily runs.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from ..engine import IllegalMove, NotationError, new_game, parse_move
from ..protocol import ErrorCode, ProtocolError
from .backends import BackendUnavailable
from .daily import parse_date
from .leaderboard import ranked_attempt, seed_revealed
from .races import readable_by
from .room import Ghost, Outcome, Room, RoomState, Standing
from .room import standings as record_standings

if TYPE_CHECKING:
    from .node import Node

__all__ = ["GhostRun", "Ghosts"]

log = structlog.get_logger("solrace.server")


@dataclass(frozen=True, slots=True)
class GhostRun:
    """A recorded run, ready to be raced: its deal and its standing after each move."""

    ref: str
    name: str
    variant: str
    seed: int
    steps: list[tuple[int, int, int, str]]
    """``(time_ms, banked, moves, status)`` after each move, in order."""
    end: list[Any]
    """``[status, banked, moves, time_ms, banked_at_ms]``: how the run ended."""
    par: int | None = None
    """The par of the run's deal, where it was certified winnable."""

    @property
    def ghost(self) -> Ghost:
        """The run as a race's ghost."""
        return Ghost(f"ghost:{self.ref.rsplit('/', 1)[-1]}", f"{self.name} (ghost)", self.end)


async def _replayed(
    variant: str, seed: int, undo: bool, moves: list[str], times: list[int], most: int
) -> list[tuple[int, int, int, str]]:
    """The run's standings after each move (:func:`_steps`), for a run of at most ``most``
    moves, a game's ``max_moves_per_game`` (BAD_SETTINGS for a longer one, refused before
    any replay: a run kept from before the limit may be far longer, 108,000 moves in an
    hour's race at the message rate, half a second of the event loop), replayed on a
    thread so that the event loop goes on meanwhile."""
    if len(moves) > most:
        raise ProtocolError(
            ErrorCode.BAD_SETTINGS,
            f"ghost: the run is too long to race ({len(moves)} moves; at most {most})",
        )
    return await asyncio.to_thread(_steps, variant, seed, undo, moves, times)


def _steps(
    variant: str, seed: int, undo: bool, moves: list[str], times: list[int]
) -> list[tuple[int, int, int, str]]:
    game = new_game(variant, seed, undo_allowed=undo)
    steps = []
    try:
        for move, at in zip(moves, times, strict=True):
            game.apply(parse_move(move))
            steps.append((int(at), game.banked, game.moves, game.status.value))
    except (IllegalMove, NotationError, ValueError) as error:
        raise ProtocolError(
            ErrorCode.BAD_SETTINGS, f"ghost: the run does not replay: {error}"
        ) from None
    return steps


def _first_reached(steps: list[tuple[int, int, int, str]], banked: int) -> int:
    return next((at for at, b, _, _ in steps if b >= banked), 0)


class Ghosts:
    """A node's ghost runs: found for the rooms that race them, and driven in their races."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self._driving: set[tuple[str, int]] = set()  # the races this node drives a ghost in

    async def find(self, ref: str, player_id: str | None) -> GhostRun:
        """The run ``ref`` names, if ``player_id`` may race it (None: the room that races
        it was allowed to already); raise ProtocolError (BAD_SETTINGS, naming what is
        wrong) if not."""
        parts = ref.strip().split("/")
        if len(parts) == 4 and parts[0] == "daily":
            return await self._daily(parts[1], parts[2], parts[3])
        # ASCII digits only (str.isdigit takes any script's), and a race number a store
        # holds (an SQLite integer is 64-bit): anything else is no run, not an error.
        if len(parts) == 3 and parts[1].isascii() and parts[1].isdigit() and len(parts[1]) <= 18:
            return await self._race(parts[0].upper(), int(parts[1]), parts[2], player_id)
        raise ProtocolError(
            ErrorCode.BAD_SETTINGS, "ghost: CODE/RACE/PLAYER or daily/DATE/VARIANT/PLAYER"
        )

    async def _race(self, code: str, race: int, ghost_id: str, player_id: str | None) -> GhostRun:
        node = self.node
        record = await node.backend.load_race(code, race, node.now_ms())
        if record is not None and ghost_id not in record.get("players", {}):
            # A player's name, as the results show it, names the run too, where it is one
            # player's alone.
            named = [
                p
                for p, played in record.get("players", {}).items()
                if str(played.get("name", "")).casefold() == ghost_id.casefold()
            ]
            if len(named) == 1:
                ghost_id = named[0]
        if record is None or ghost_id not in record.get("players", {}):
            raise ProtocolError(
                ErrorCode.BAD_SETTINGS,
                "ghost: no such run is kept (PLAYER is the player's id, or their name in "
                "the race's results)",
            )
        if player_id is not None and not readable_by(record, player_id):
            raise ProtocolError(
                ErrorCode.BAD_SETTINGS, "ghost: that race's replay is its players' alone"
            )
        played = record["players"][ghost_id]
        result = next(r for r in record["results"] if r["player_id"] == ghost_id)
        steps = await _replayed(
            record["variant"],
            record["seed"],
            record.get("undo", True),
            played["moves"],
            played["times"],
            node.config.limits.max_moves_per_game,
        )
        end = [result["status"], result["banked"], result["moves"], result["time_ms"]]
        return GhostRun(
            f"{code}/{race}/{ghost_id}",
            played.get("name", "ghost"),
            record["variant"],
            int(record["seed"]),
            steps,
            [*end, _first_reached(steps, result["banked"])],
            record.get("par"),
        )

    async def _daily(self, date: str, variant: str, ghost_id: str) -> GhostRun:
        node = self.node
        date = parse_date(date)
        revealed = await seed_revealed(
            node.backend,
            date,
            variant,
            now_ms=node.now_ms(),
            time_limit_s=node.config.daily_time_limit_s,
        )
        if not revealed:
            raise ProtocolError(
                ErrorCode.BAD_SETTINGS, "ghost: a day's runs are raced once its seed is out"
            )
        entry = await ranked_attempt(node.backend, ghost_id, date, variant)
        if entry is None:
            raise ProtocolError(ErrorCode.BAD_SETTINGS, "ghost: no such ranked run that day")
        deal = await node.deals.daily(date, variant)
        seed = deal.seed
        most = node.config.limits.max_moves_per_game
        steps = await _replayed(variant, seed, False, entry.log, entry.times, most)
        end = [entry.status, entry.banked, entry.moves, entry.time_ms, entry.reached]
        ref = f"daily/{date}/{variant}/{ghost_id}"
        return GhostRun(ref, entry.name, variant, seed, steps, end, deal.par)

    async def race(self, code: str, room: Room) -> None:
        """Drive the ghost of ``room``'s running race (found again from its setting), unless
        this node drives it already. A node that comes to hold the room (its player back
        through it after the node that drove the ghost drained) drives it on from where
        it is; a standing the ghost has already is not recorded twice, so two nodes driving
        one ghost for a while is harmless."""
        ref = room.settings.ghost
        if ref is None or room.state is not RoomState.RACING or room.starts_ms is None:
            return
        key = (code, room.race)
        if key in self._driving:
            return
        self._driving.add(key)
        try:
            try:
                run = await self.find(ref, None)
            except (ProtocolError, BackendUnavailable):
                log.warning("ghost_not_found", room=code, ghost=ref)
                return
            await self._drive(code, room.race, room.starts_ms, run)
        finally:
            self._driving.discard(key)

    async def _drive(self, code: str, race: int, starts_ms: int, run: GhostRun) -> None:
        node = self.node
        ghost_id = run.ghost.player_id
        room = await node.backend.load_room(code)
        done = room.players[ghost_id].moves if room and ghost_id in room.players else 0
        for at, banked, moves, status in run.steps[done:]:
            wait = (starts_ms + at - node.now_ms()) / 1000
            if wait > 0:
                await asyncio.sleep(wait)
            standing = Standing(ghost_id, starts_ms + at, status, banked, moves)
            try:
                outcome = await node.backend.update_room(
                    code, functools.partial(self._step, race=race, standing=standing)
                )
            except ProtocolError:
                return  # the room is gone
            except BackendUnavailable:
                continue  # the next standing says more
            await node.fanout.publish(code, outcome)
            room = outcome.room
            if room is None or room.race != race or room.state is not RoomState.RACING:
                return

    @staticmethod
    def _step(room: Room, race: int, standing: Standing) -> Outcome:
        """The ghost's next standing, in the race it drives (nothing once that is over)."""
        if room.race != race or room.state is not RoomState.RACING:
            return Outcome(room)
        kept = room.players.get(standing.player_id)
        if kept is not None and standing.moves is not None and kept.moves >= standing.moves:
            return Outcome(room)  # another node's driver recorded it already
        return record_standings(room, [standing])
