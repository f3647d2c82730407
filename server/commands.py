"""Room commands: create, join, leave, ready, start, rematch, settings, snapshots, recovery."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import structlog

from ..engine import new_game, player_view, spectator_view
from ..protocol import (
    CreateRoom,
    ErrorCode,
    JoinRoom,
    LeaveRoom,
    Ok,
    Ping,
    Pong,
    ProtocolError,
    Rematch,
    RoomSnapshot,
    SetReady,
    SetSettings,
    StartRace,
    Sync,
)
from . import room as rooms
from .budgets import Budget
from .daily import address_counted
from .deal_pool import CERTIFIABLE, playable_seed
from .ghosts import GhostRun
from .moves import replayed
from .room import (
    MIN_SPECTATOR_DELAY,
    Ghost,
    Outcome,
    Role,
    Room,
    RoomState,
    Settings,
    SpectatorMode,
    Standing,
)

if TYPE_CHECKING:
    from .local_room import LocalRoom
    from .node import Node
    from .session import Session

__all__ = ["ROOM_CODE_ALPHABET", "ROOM_CODE_LENGTH", "SEED_BITS", "RoomCommands", "new_room_code"]

log = structlog.get_logger("solrace.server")

SEED_BITS = 53
"""Race seeds stay below 2**53 so that every JSON reader (JavaScript's too) keeps them exact."""
ROOM_CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
ROOM_CODE_LENGTH = 8
_SNAPSHOT_READS = 3
"""A snapshot made older than the room's events already sent here is made again, at most
this many times in all (a busy room's next event may come while the last is made)."""


def new_room_code() -> str:
    """A short, unguessable room code (31^8 possibilities)."""
    return "".join(secrets.choice(ROOM_CODE_ALPHABET) for _ in range(ROOM_CODE_LENGTH))


DEAL_TRIES = 4
"""A start's deal chosen again at most this often when the room changed under it."""


class _Redeal(Exception):
    """A command would start the race with a deal not chosen for a start."""


Deal = tuple[int, int | None, Ghost | None, bool]
"""A seed, its par, its ghost, and whether it was chosen for a start."""


def _with_deal(
    change: Callable[[Room, str, int, int | None, Ghost | None], Outcome],
    ready: bool | None,
    deal: Deal,
    room: Room,
    player_id: str,
) -> Outcome:
    """``change`` with ``deal``, unless it would start the race with a deal not chosen for
    a start (raise _Redeal)."""
    seed, par, ghost, starts = deal
    if not starts and rooms.will_start(room, player_id, ready):
        raise _Redeal
    return change(room, player_id, seed, par, ghost)


class RoomCommands:
    """The requests that make, join, leave, start and show rooms."""

    def __init__(self, node: Node) -> None:
        self.node = node
        try:
            self.default_spectators = SpectatorMode(node.config.spectators_default)
        except ValueError:
            modes = ", ".join(m.value for m in SpectatorMode)
            raise ValueError(f"spectators_default: one of {modes}") from None

    def check_capacity(self, session: Session, code: str | None) -> None:
        """Refuse a room this node does not hold yet once it holds all it may, or one that
        the session's address would hold past its share of them."""
        node = self.node
        if code not in node.held and len(node.held) >= node.config.max_rooms_per_node:
            raise ProtocolError(ErrorCode.TOO_MANY_ROOMS, "this server holds all the rooms it can")
        node.guard.check_room(session, code)

    def _settings(self, req: CreateRoom, ghost: GhostRun | None = None) -> Settings:
        if ghost is not None:  # alone against the run, on its deal, with time to finish it
            longest = self.node.config.max_time_limit_s
            req = replace(
                req,
                variant=ghost.variant,
                max_players=1,
                winnable=False,
                time_limit=min(longest, max(req.time_limit, ghost.end[3] // 1000 + 10)),
                # The person plays on to the end: the run's own finish is not a first win
                # that ends the race (it would end it before the person could win it).
                finish=rooms.Finish.EVERYONE.value,
            )
        rooms.check_variant(req.variant)
        cfg = self.node.config
        checks = (
            (
                1 <= req.max_players <= cfg.max_players_per_room,
                f"max_players: 1 to {cfg.max_players_per_room}",
            ),
            (
                10 <= req.time_limit <= cfg.max_time_limit_s,
                f"time_limit: 10 to {cfg.max_time_limit_s} seconds",
            ),
            (
                0 <= req.countdown <= cfg.max_countdown_s,
                f"countdown: 0 to {cfg.max_countdown_s} seconds",
            ),
        )
        for ok, message in checks:
            if not ok:
                raise ProtocolError(ErrorCode.BAD_SETTINGS, message)
        delay = self.spectator_delay(req.spectator_delay)
        grace = self.finish_grace(req.finish_grace, req.time_limit)
        certifiable = req.variant in CERTIFIABLE
        if req.winnable and not certifiable:
            raise ProtocolError(
                ErrorCode.BAD_SETTINGS,
                "winnable: British Canister deals are almost never winnable (about 1.3 in a "
                "million), so no deal of it is certified: its races are about cards banked",
            )
        winnable = certifiable and (cfg.winnable_default if req.winnable is None else req.winnable)
        return Settings(
            req.variant,
            req.max_players,
            rooms.spectator_mode(req.spectators, self.default_spectators),
            req.undo,
            req.time_limit,
            req.countdown,
            spectator_delay=rooms.DEFAULT_SPECTATOR_DELAY if delay is None else delay,
            finish=rooms.finish_mode(req.finish),
            finish_grace=rooms.DEFAULT_FINISH_GRACE if grace is None else grace,
            winnable=winnable,
            ghost=None if ghost is None else ghost.ref,
        )

    @staticmethod
    def finish_grace(grace: int | None, time_limit: int) -> int | None:
        """``grace`` if a room may ask for it (None stays None); raise BAD_SETTINGS if not."""
        if grace is not None and not 0 <= grace <= time_limit:
            raise ProtocolError(
                ErrorCode.BAD_SETTINGS, f"finish_grace: 0 to {time_limit} seconds (the time limit)"
            )
        return grace

    def spectator_delay(self, delay: int | None) -> int | None:
        """``delay`` if a room may ask for it (None stays None); raise BAD_SETTINGS if not."""
        longest = self.node.config.max_spectator_delay_s
        if delay is not None and not MIN_SPECTATOR_DELAY <= delay <= longest:
            raise ProtocolError(
                ErrorCode.BAD_SETTINGS,
                f"spectator_delay: {MIN_SPECTATOR_DELAY} to {longest} seconds",
            )
        return delay

    async def store_new_room(self, settings: Settings, host_id: str, host_name: str) -> Outcome:
        """A new room under a fresh code (drawn again in the unlikely case it is taken)."""
        while True:
            outcome = rooms.create(new_room_code(), settings, host_id, host_name)
            assert outcome.room is not None
            if await self.node.backend.create_room(outcome.room):
                return outcome

    async def racing_room(self, player_id: str) -> Room | None:
        """The room whose race the account plays, as its room pointer names it: a race
        that is on, the account a player in it whose game is not over (finished or
        resigned, it is free to go on elsewhere)."""
        backend = self.node.backend
        room = await self.racing_in(await backend.player_room(player_id), player_id)
        if room is None:
            # The pointer may miss a running daily attempt: a room made on another node as
            # the attempt started overwrote it, and leaving that room cleared it. The
            # attempt's own record, which only a daily start writes, names it still.
            room = await self.racing_in(await backend.daily_room(player_id), player_id)
        return room

    async def racing_in(self, code: str | None, player_id: str) -> Room | None:
        """Room ``code``, if its race is on and the account plays in it, its game not over."""
        room = None if code is None else await self.node.backend.load_room(code)
        if (
            room is None
            or room.state not in (RoomState.COUNTDOWN, RoomState.RACING)
            or player_id not in room.members
            or room.members[player_id].role is not Role.PLAYER
        ):
            return None
        race = room.players.get(player_id)
        return room if race is None or race.status == "playing" else None

    async def check_not_racing_elsewhere(self, player_id: str) -> None:
        """Refuse a room to an account whose other connection (on another node) plays a
        race that is on: an account races in one room at a time. Its room pointer names
        that race, and must go on naming it, for the checks that read it (no daily attempt
        beside another, no account deleted mid-race)."""
        room = await self.racing_room(player_id)
        if room is None:
            return
        raise ProtocolError(
            ErrorCode.ALREADY_IN_ROOM,
            f"you are racing in room {room.code} on another connection: finish or leave "
            "that race first",
        )

    async def create_room(self, session: Session, req: CreateRoom) -> None:
        """Make a room with the asker as its host and first player."""
        node = self.node
        player_id = node.identified(session)
        if session.room is not None:
            raise ProtocolError(ErrorCode.ALREADY_IN_ROOM, "leave your room first")
        await self.check_not_racing_elsewhere(player_id)
        if req.ghost is None:
            settings = self._settings(req)
            self.check_capacity(session, None)
            await node.guard.spend(session, node.guard.rooms, node.now_ms())
        else:
            # Finding a run reads its record and replays it: that is paid for first, so
            # that a request refused after it (its settings, say) cannot be sent again for
            # nothing.
            self.check_capacity(session, None)
            await node.guard.spend(session, node.guard.rooms, node.now_ms())
            settings = self._settings(req, await node.ghosts.find(req.ghost, player_id))
        if settings.winnable:
            node.deals.warm(settings.variant)  # its first race's deal is on its way
        outcome = await self.store_new_room(settings, player_id, session.name)
        room = outcome.room
        assert room is not None
        await node.attach(session, room, Role.PLAYER)
        await node.backend.set_player_room(player_id, room.code)
        await session.reply(RoomSnapshot(req.id, await self.snapshot(session)))
        await node.fanout.publish(room.code, outcome)
        log.info("room_created", room=room.code, variant=settings.variant)

    async def join_room(self, session: Session, req: JoinRoom) -> None:
        """Join a room as a player (before a race) or a spectator."""
        node = self.node
        player_id = node.identified(session)
        code = req.code.strip().upper()
        if session.room is not None:
            raise ProtocolError(ErrorCode.ALREADY_IN_ROOM, "leave your room first")
        if req.role not in ("player", "spectator"):
            raise ProtocolError(ErrorCode.BAD_FIELD, "role is 'player' or 'spectator'")
        await self.check_not_racing_elsewhere(player_id)
        role = Role(req.role)
        self.check_capacity(session, code)
        await node.guard.spend(session, node.guard.joins, node.now_ms())
        limit = node.config.max_spectators_per_room
        longest = node.config.limits.max_name_len
        outcome = await node.backend.update_room(
            code,
            lambda r: rooms.join(
                r, player_id, session.name, role, max_spectators=limit, max_name_len=longest
            ),
        )
        assert outcome.room is not None
        held = await node.attach(session, outcome.room, role)
        record = held.record
        if (
            role is Role.SPECTATOR
            and record.state is RoomState.RACING
            and record.settings.spectators is SpectatorMode.DELAYED
        ):
            # The boards as they are now, shown once the delay is over: a node that held
            # no member of the room before heard none of them.
            node.fanout.hold_back(held, await self.boards(held, record))
        await node.backend.set_player_room(player_id, code)
        await session.reply(RoomSnapshot(req.id, await self.snapshot(session)))
        await node.fanout.publish(code, outcome)

    async def leave_room(self, session: Session, req: LeaveRoom, *, reply: bool = True) -> None:
        """Leave the room (a racing player resigns with every move made)."""
        node = self.node
        player_id = node.identified(session)
        code = node.in_room(session)
        # A leave is never refused, but it counts against the next join.
        await node.guard.spend(session, node.guard.joins, node.now_ms(), force=True)
        held = node.held.get(code)
        if held is not None:
            await node.moves.flush(held)  # a leaver resigns with every move it made
        record = node.record(code)
        if record is not None and record.state is RoomState.RACING and player_id in record.players:
            # As a resignation does: no move through another node is logged after it.
            await node.backend.close_log(code, record.race, player_id)
        await self.settle(code)  # and with those its logs hold that no one reported
        outcome = await node.backend.update_room(
            code, lambda r: rooms.leave(r, player_id, node.now_ms())
        )
        await node.fanout.publish(code, outcome)
        await node.detach(session)
        await node.backend.forget_player_room(player_id, code)
        if reply:
            await session.reply(Ok(req.id))

    async def ready(self, session: Session, req: SetReady) -> None:
        """Say ready (or not); the race starts once every player (two or more) is."""
        now = self.node.now_ms
        await self._dealt(
            session,
            req.id,
            req.ready,
            lambda r, p, seed, par, ghost: rooms.set_ready(
                r, p, req.ready, now(), seed, par, ghost
            ),
        )

    async def start(self, session: Session, req: StartRace) -> None:
        """The host starts the countdown."""
        now = self.node.now_ms
        await self._dealt(
            session,
            req.id,
            None,
            lambda r, p, seed, par, ghost: rooms.start(r, p, now(), seed, par, ghost),
        )

    async def _dealt(
        self,
        session: Session,
        request_id: int,
        ready: bool | None,
        change: Callable[[Room, str, int, int | None, Ghost | None], Outcome],
    ) -> None:
        """A command that may start the race (``ready``, or the host's start): dealt for
        a start only if the room, as it is when the command changes it, starts.

        The deal is chosen before the change, from the room as this node last knew it;
        where the store is shared (Redis), another player's ``ready`` may have come
        through another node (or at the same moment) since. A command that would start
        the race with the deal of a command that does not (any seed: not certified, not
        the ghost's, maybe with no move at its start) is not carried out: its deal is
        chosen again from the room read afresh."""
        fresh = False
        for _ in range(DEAL_TRIES):
            deal = await self._deal(session, ready, fresh=fresh)
            try:
                await self._lobby(session, request_id, partial(_with_deal, change, ready, deal))
                return
            except _Redeal:
                fresh = True
        raise ProtocolError(
            ErrorCode.UNAVAILABLE, "the room changed too often to start its race: try again"
        )

    async def _deal(self, session: Session, ready: bool | None, *, fresh: bool = False) -> Deal:
        """The seed of the race this command may start, its par, its ghost, and whether it
        is a deal for a start: a ghost room's run's deal; a certified deal from the pool
        if the room deals only winnable ones and the command starts its race
        (:func:`rooms.will_start`, on the room as this node knows it, or as the store has
        it if ``fresh``); else a seed for a command that does not start it.

        A command that starts the race first spends the asker's race budgets
        (``races_per_hour``, ``address_races_per_hour``): one over them is refused before
        any deal is taken."""
        node = self.node
        code = session.room
        if code is None:
            room = None
        elif fresh:
            room = await node.backend.load_room(code)
        else:
            room = node.record(code)
        player_id = session.player_id
        if room is None or player_id is None or not rooms.will_start(room, player_id, ready):
            return secrets.randbits(SEED_BITS), None, None, False  # no start: never dealt
        ghost, winnable = room.settings.ghost, room.settings.winnable
        budgets: tuple[Budget, ...] = node.guard.races
        if ghost is None and winnable:
            budgets += node.guard.winnable_races
        await node.guard.spend(session, budgets, node.now_ms())
        if ghost is not None:
            run = await node.ghosts.find(ghost, None)
            return run.seed, run.par, run.ghost, True
        if winnable:
            asker = session.address if address_counted(session.address) else None
            seed, par = await node.deals.take(room.settings.variant, asker)
            return seed, par, None, True
        return playable_seed(room.settings.variant), None, None, True

    async def rematch(self, session: Session, req: Rematch) -> None:
        """Back to the lobby after a race, for a new deal."""
        await self._lobby(session, req.id, rooms.rematch)

    async def set_settings(self, session: Session, req: SetSettings) -> None:
        """The host changes who may watch, and how, or how the race ends, in the lobby or
        after a race."""
        code = self.node.in_room(session)  # out of a room, that is the answer
        asked = (req.spectators, req.spectator_delay, req.finish, req.finish_grace)
        if all(value is None for value in asked):
            raise ProtocolError(
                ErrorCode.BAD_SETTINGS,
                "name spectators, spectator_delay, finish or finish_grace",
            )
        mode = None if req.spectators is None else rooms.spectator_mode(req.spectators)
        delay = self.spectator_delay(req.spectator_delay)
        finish = None if req.finish is None else rooms.finish_mode(req.finish)
        record = self.node.record(code)
        limit = (
            record.settings.time_limit if record is not None else self.node.config.max_time_limit_s
        )
        grace = self.finish_grace(req.finish_grace, limit)
        await self._lobby(
            session,
            req.id,
            lambda r, p: rooms.set_settings(r, p, mode, delay, finish, grace),
        )

    async def _lobby(
        self, session: Session, request_id: int, change: Callable[[Room, str], Outcome]
    ) -> None:
        """A player's command to a room that is not a daily attempt's: the room changed
        by ``change(room, player_id)``, ok, and its events published."""
        node = self.node
        player_id = node.identified(session)
        code = node.in_room(session)
        self.not_daily(code)
        outcome = await node.backend.update_room(code, lambda r: change(r, player_id))
        await session.reply(Ok(request_id))
        await node.fanout.publish(code, outcome)

    def not_daily(self, code: str) -> None:
        """A daily room plays its one attempt: no ready, start or rematch in it."""
        room = self.node.record(code)
        if room is not None and room.settings.daily is not None:
            raise ProtocolError(
                ErrorCode.WRONG_STATE, "a daily attempt is played once: ask for 'daily' again"
            )

    async def sync(self, session: Session, req: Sync) -> None:
        """A fresh snapshot of the room."""
        self.node.identified(session)
        self.node.in_room(session)
        try:
            snapshot = await self.snapshot(session)
        except ProtocolError as error:
            # The room was closed (or deleted) and this node has not let the session go
            # yet (on Redis the closing node tells the others through the store): the
            # member is no longer in a room, as the event they were sent says.
            if error.code is not ErrorCode.ROOM_NOT_FOUND:
                raise
            raise ProtocolError(ErrorCode.NOT_IN_ROOM, "you are no longer in that room") from None
        await session.reply(RoomSnapshot(req.id, snapshot))

    async def ping(self, session: Session, req: Ping) -> None:
        """Pong."""
        await session.reply(Pong(req.id))

    # -- snapshots -----------------------------------------------------------------------

    async def snapshot(self, session: Session) -> dict[str, Any]:
        """The whole room as this session may see it; the seed only once the race is over.

        A player's own game comes from memory, or is rebuilt from its log (the player
        needs it to play on); every board a spectator sees, and every board after the
        race, comes from memory or the boards kept in the store, never from a replay.
        """
        code = self.node.in_room(session)
        data = await self._snapshot(session, code)
        for _ in range(_SNAPSHOT_READS - 1):
            held = self.node.held.get(code)
            if held is None or data["seq"] >= held.sent:
                break
            # The room was read before a change whose event went out here while the
            # snapshot was made. A snapshot older than an event its client has had sets
            # the client back: the next event looks like a gap, and the snapshot it then
            # asks for covers events still on their way, which the client drops (a
            # race_over among them). The store has the change (written before its event
            # goes out), so the room read again has it.
            data = await self._snapshot(session, code)
        return data

    async def _snapshot(self, session: Session, code: str) -> dict[str, Any]:
        node = self.node
        room = await node.backend.load_room(code)
        if room is None:
            raise ProtocolError(ErrorCode.ROOM_NOT_FOUND, "the room is gone")
        held = node.held.get(code)
        if held is not None:
            room = held.keep(room)
        now = node.now_ms()
        data: dict[str, Any] = {
            "code": room.code,
            "seq": room.seq,
            "state": room.state.value,
            "host": room.host,
            "settings": room.settings.to_wire(),
            "members": [m.to_wire() for m in room.members.values()],
            "race": room.race,
            "you": {
                "player_id": session.player_id,
                "role": session.role.value if session.role else None,
            },
        }
        if room.state is RoomState.COUNTDOWN and room.starts_ms is not None:
            data["starts_in_ms"] = max(0, room.starts_ms - now)
        if room.state in (RoomState.RACING, RoomState.FINISHED) and room.starts_ms is not None:
            data["elapsed_ms"] = rooms.race_length_ms(room, now)
            data["time_limit"] = room.settings.time_limit
            if room.state is RoomState.RACING and room.deadline_ms is not None:
                data["left_ms"] = max(0, room.deadline_ms - now)  # sooner after a `first` win
            placed = rooms.places(room)
            data["players"] = [
                {
                    "player_id": p,
                    "name": r.name,
                    "banked": r.banked,
                    "moves": r.moves,
                    "status": r.status,
                    "elapsed_ms": r.elapsed_ms,
                    "banked_at_ms": r.banked_at_ms,
                    **({"place": placed[p]} if p in placed else {}),
                }
                for p, r in room.players.items()
            ]
            player = session.role is Role.PLAYER and session.player_id in room.players
            if player and room.state is RoomState.RACING and held is not None:
                assert session.player_id is not None
                game = await node.moves.game(
                    held, room, session.player_id, check=True, charge=session
                )
                data["you"]["view"] = player_view(game, legal=True)
                data["you"]["rev"] = game.moves
            elif player:
                assert session.player_id is not None
                board = (await self.boards(held, room))[session.player_id]
                data["you"]["view"] = {**board, "can_undo": False, "legal": []}
                data["you"]["rev"] = board["moves"]
            elif session.role is Role.SPECTATOR:
                boards = await self.spectator_boards(held, room)
                if boards is not None:
                    data["boards"] = boards
        if room.state is RoomState.FINISHED:
            data["results"] = room.results
            data["seed"] = None if room.settings.daily else room.seed
            if room.par is not None and not room.settings.daily:  # a daily's: with its seed
                data["par"] = room.par
        return data

    async def spectator_boards(
        self, held: LocalRoom | None, room: Room
    ) -> dict[str, dict[str, Any]] | None:
        """The boards a spectator may see now, as the room's setting says: while a race
        runs, none in an ``after`` room, and those of ``spectator_delay`` seconds before
        (the deal, for a player none was heard of that long ago) in a ``delayed`` one."""
        mode = room.settings.spectators
        if room.state is not RoomState.RACING or mode is SpectatorMode.LIVE:
            return await self.boards(held, room)
        if mode is not SpectatorMode.DELAYED or held is None:
            return None
        delayed = held.delayed
        shown = delayed.as_of(self.node.now_ms()) if delayed and delayed.race == room.race else {}
        boards = {p: shown.get(p) or held.deal_board(room) for p in room.players}
        return self.node.fanout.masked(held, room, boards)

    async def boards(self, held: LocalRoom | None, room: Room) -> dict[str, dict[str, Any]]:
        """Every player's board as a spectator sees it, without replaying any log.

        From the games this node plays, else the latest boards kept in the store (on
        Redis each at most about 3.5 s old, :meth:`MovePath._save_unsaved`; on the
        embedded backend, whose node plays every game, kept when the node let go of the
        game, and worked out from the log by a restart), else the deal itself (no move
        reported yet).
        """
        games = held.games_of(room.race) if held is not None else {}
        boards: dict[str, dict[str, Any]] = {}
        stored: dict[str, dict[str, Any]] | None = None
        for player_id in room.players:
            game = games.get(player_id)
            if game is not None:
                boards[player_id] = spectator_view(game)
                continue
            if stored is None:
                stored = await self.node.backend.load_boards(room.code, room.race)
            board = stored.get(player_id)
            if board is None:
                if held is not None:
                    board = held.deal_board(room)
                else:
                    assert room.seed is not None
                    board = spectator_view(new_game(room.settings.variant, room.seed))
            boards[player_id] = board
        return boards

    # -- after a restart -----------------------------------------------------------------

    async def recover(self) -> None:
        """Take back every room of the storage this node alone serves, after a restart.

        The race clock stops while the server is down: a running race's start and
        deadline move later by the downtime, from the last time the storage shows the
        node running (:meth:`_last_ran_ms`). Every member counts as dropped from now on,
        and so has the resume grace period to come back; spectators leave. A standing
        the node had not reported yet is worked out again from the player's move log.
        """
        node = self.node
        backend = node.backend
        now = node.now_ms()
        codes = await backend.room_codes()
        last = await self._last_ran_ms(codes)
        downtime = max(0, now - last) if last is not None else 0
        noted: dict[tuple[str, str], set[str]] = {}
        for code in codes:
            try:
                stored = await backend.load_room(code)
                if stored is not None:
                    # Before anything else: a room without players left is dropped, and
                    # its logs with it.
                    await node.fanout.record_missed(stored, noted)
                outcome = await backend.update_room(
                    code, lambda r: rooms.restarted(r, now, downtime)
                )
                room = outcome.room
                if room is not None and room.state is RoomState.RACING:
                    outcome = await self._reconcile(room, outcome)
                await node.fanout.publish(code, outcome)
                if outcome.room is not None and outcome.room.settings.ghost is not None:
                    node.spawn(node.ghosts.race(code, outcome.room))  # the ghost goes on
            except Exception:
                log.exception("room_not_recovered", room=code)
                continue
            node.tick_later(code, 0.0)
        if codes:
            log.info("rooms_recovered", rooms=len(codes), downtime_ms=downtime)

    async def _last_ran_ms(self, codes: list[str]) -> int | None:
        """When the node last ran, as its storage shows: its last note that it ran, or the
        last move it logged, whichever is later (None: never noted).

        The note is written once a second, a move as it is acked: a node killed up to a
        second after its note had run on meanwhile, and a clock moved on by the downtime
        from the note alone would run back (a move after the restart timed before the
        last ones acked before it, and the race's record no longer in order).
        """
        backend = self.node.backend
        last = backend.last_alive_ms
        if last is None:
            return None
        for code in codes:
            room = await backend.load_room(code)
            if room is None or room.state is not RoomState.RACING or room.starts_ms is None:
                continue
            for player_id in room.players:
                timed = await backend.read_timed_moves(code, room.race, player_id)
                if timed:
                    last = max(last, room.starts_ms + timed[-1][1])
        return last

    async def settle(self, code: str, *, due_only: bool = False) -> None:
        """Standings of a running race caught up with its move logs, where the store is
        shared (Redis): a node stopped after a move's append and before its report left
        the room's standing behind its log, and a race ended by its time limit, or a
        player's leave, on another node then ranked the player without those moves (and
        the results disagreed with the replays). With ``due_only``, only when one of the
        room's deadlines has passed (a tick that may end the race or a player's game)."""
        node = self.node
        if node.backend.in_process:
            return  # one node: its logs and standings are caught up at its restart
        room = await node.backend.load_room(code)
        if room is None or room.state is not RoomState.RACING:
            return
        if due_only:
            when = rooms.next_deadline(room, node.grace_ms)
            if when is None or node.now_ms() < when:
                return
        held = node.held.get(code)
        if held is not None:
            await node.moves.flush(held)  # this node's own reports first
            room = await node.backend.load_room(code)
            if room is None or room.state is not RoomState.RACING:
                return
        outcome = await self._reconcile(room, Outcome(room), boards=False)
        if outcome.events:
            await node.fanout.publish(code, outcome)

    async def _reconcile(self, room: Room, outcome: Outcome, *, boards: bool = True) -> Outcome:
        """Standings and boards the room lacks (moves logged, not reported or not kept
        before the stop: a board still being played is kept only when the node lets go of
        its game). Without ``boards``, standings only: a log is replayed only for a player
        whose standing is behind it."""
        node = self.node
        backend = node.backend
        assert room.seed is not None
        updates: list[Standing] = []
        stored = await backend.load_boards(room.code, room.race) if boards else {}
        for player_id, standing in room.players.items():
            if standing.over(room.settings.undo) or standing.ghost is not None:
                continue
            length = await backend.log_length(room.code, room.race, player_id)
            board = stored.get(player_id)
            reported = length == standing.moves
            if reported and (not boards or (board is not None and board.get("moves") == length)):
                continue
            timed = await backend.read_timed_moves(room.code, room.race, player_id)
            game, reached = replayed(room, timed)
            if not reported:
                # The standing as of the player's last move, its banked count as of the
                # move that first reached it (the log's times count from the race's start).
                updates.append(
                    Standing(
                        player_id,
                        (room.starts_ms or 0) + (timed[-1][1] if timed else 0),
                        game.status.value,
                        game.banked,
                        game.moves,
                        banked_at_ms=reached[game.banked],
                    )
                )
            await backend.save_boards(room.code, room.race, {player_id: spectator_view(game)})
        if not updates:
            return outcome
        more = await backend.update_room(room.code, lambda r: rooms.standings(r, updates))
        return Outcome(more.room, outcome.events + more.events)
