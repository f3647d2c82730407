"""The move's way: checked, applied to the player's game, logged, acked and reported.

One path with two entrances. :meth:`MovePath.take` runs as a move's frame comes off the
socket, when nothing needs awaiting (the game is in memory and the backend lives in
this process); :meth:`MovePath.move` runs in the connection's task for everything else
(a game to rebuild from its log, a log in Redis). Both make the same checks
(:meth:`MovePath.checked`) and have the same effects once the move is logged
(:meth:`MovePath.logged`): the ack, and the player's new standing, which the room hears
in its next report (:meth:`MovePath.flush`), at most one progress interval later.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

import structlog

from ..engine import (
    STATUS_TEXT,
    Change,
    Game,
    IllegalMove,
    Move,
    NotationError,
    Status,
    delta_view,
    format_move,
    new_game,
    parse_move,
    player_view,
    spectator_view,
)
from ..protocol import Ack, ErrorCode, Ok, PlayMove, ProtocolError, Resign
from . import room as rooms
from .backends import BackendUnavailable
from .room import Finish, Role, Room, RoomState, SpectatorMode, Standing

if TYPE_CHECKING:
    from .local_room import LocalRoom
    from .node import Node
    from .session import Session

__all__ = ["MovePath", "normalise", "replayed"]

log = structlog.get_logger("solrace.server")

MAX_NOTATIONS = 4096
BOARD_SAVE_INTERVAL_S = 2.0
"""How often a round of saves starts, on a backend shared by nodes, of the boards of
unwatched rooms that the store lacks (for a spectator who comes to another node)."""
BOARD_SAVE_SPREAD = 0.75
"""The share of the interval over which a round's rooms are spread evenly: a board goes
unsaved for at most about ``(1 + BOARD_SAVE_SPREAD) * BOARD_SAVE_INTERVAL_S``."""
BOARD_SAVE_TICK_S = 0.02
"""The step of a round: the rooms due by then are saved together."""
BOARD_SAVE_ROOMS = 50
"""Rooms whose boards are kept in one pass of the event loop at most (the rest in the next)."""
REPORT_TICK_S = 0.02
"""On a backend in another process (Redis), a report of standings waits for the next
multiple of this on the loop's clock: the rooms due in one tick report in the same pass,
so their writes share one round trip instead of one each."""
SHOWN_WHILE_RACING = frozenset({SpectatorMode.LIVE, SpectatorMode.DELAYED})
"""The spectator settings whose progress events carry boards (a ``delayed`` room's nodes
hold them back from their spectators)."""


def replayed(room: Room, timed: Iterable[tuple[str, int]]) -> tuple[Game, list[int]]:
    """A player's game of the room's race rebuilt from its log of timed moves, and when
    (ms, the node's clock) each count of cards banked was first reached."""
    assert room.seed is not None
    game = new_game(room.settings.variant, room.seed, undo_allowed=room.settings.undo)
    starts = room.starts_ms or 0
    reached = [starts] * (game.banked + 1)
    for text, at in timed:
        game.apply(parse_move(text))
        reached.extend([starts + at] * (game.banked + 1 - len(reached)))
    return game, reached


def normalise(text: str) -> str:
    """A move's canonical text, or the text itself if it is not a move."""
    try:
        return format_move(parse_move(text))
    except NotationError:
        return text


_Fields: TypeAlias = "tuple[Session, int, str, Change, Game, LocalRoom, Room, str]"
"""A move taken from the socket, applied to its game: :class:`_Taken`'s fields, in order."""


class _Taken(NamedTuple):
    """A move taken from the socket, applied to its game, as :meth:`MovePath.logged`
    takes it once logged."""

    session: Session
    request_id: int
    notation: str
    change: Change
    game: Game
    held: LocalRoom
    room: Room
    player_id: str


class MovePath:
    """Moves, resignations, and the reports of the standings they reach."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self._timings = node.metrics.handled("move")
        self._max_moves = node.config.limits.max_moves_per_game
        self._notations: dict[str, tuple[Move, str]] = {}
        self._unsaved: set[LocalRoom] = set()  # rooms with boards the store lacks
        self._board_timer: asyncio.TimerHandle | asyncio.Handle | None = None
        self._saving: list[LocalRoom] = []  # this round's rooms, not yet saved
        self._round = (0.0, 0)  # when this round began (the loop's clock), and its rooms

    # -- the checks ----------------------------------------------------------------------

    def checked(self, session: Session, now_ms: int | None = None) -> tuple[LocalRoom, Room, str]:
        """The room, its record and the player, if the session may move now (``now_ms``:
        the node's clock, read here if not given); else raise."""
        node = self.node
        if node.stopping_ms is not None:
            raise ProtocolError(
                ErrorCode.UNAVAILABLE,
                "the server is restarting: your move was not taken; send it again once back",
            )
        player_id, code = session.player_id, session.room
        if player_id is None:
            player_id = node.identified(session)  # raises NOT_IDENTIFIED
        if code is None:
            code = node.in_room(session)  # raises NOT_IN_ROOM
        held = node.held.get(code)
        room = held.record if held is not None else None
        if held is None or room is None or room.state is not RoomState.RACING:
            if room is not None and room.state is RoomState.FINISHED:
                raise ProtocolError(ErrorCode.RACE_OVER, "the race is over")
            raise ProtocolError(ErrorCode.RACE_NOT_STARTED, "the race has not started")
        standing = room.players.get(player_id)
        if session.role is not Role.PLAYER or standing is None:
            raise ProtocolError(ErrorCode.NOT_A_PLAYER, "only the race's players make moves")
        if room.deadline_ms is not None or held.ends_ms is not None:
            now = node.now_ms() if now_ms is None else now_ms
            if room.deadline_ms is not None and now >= room.deadline_ms:
                raise ProtocolError(ErrorCode.RACE_OVER, "the race's time is up")
            if held.ends_ms is not None and now >= held.ends_ms:
                raise ProtocolError(ErrorCode.RACE_OVER, "the race is over")
        if standing.over(room.settings.undo):
            raise ProtocolError(ErrorCode.GAME_OVER, f"your game is over ({standing.status})")
        return held, room, player_id

    def notation(self, text: str) -> tuple[Move, str]:
        """The move ``text`` names and its written form; raises NotationError.

        Players send few different texts, so each is read once and kept (a few thousand
        at most).
        """
        known = self._notations.get(text)
        if known is None:
            move = parse_move(text)
            if len(self._notations) >= MAX_NOTATIONS:
                self._notations.clear()
            known = self._notations[text] = (move, format_move(move))
        return known

    async def game(
        self,
        held: LocalRoom,
        room: Room,
        player_id: str,
        *,
        check: bool = False,
        charge: Session | None = None,
    ) -> Game:
        """The player's game in the room's current race, kept for the race's length.

        Rebuilt from the move log when this node has none. With ``check``, a game kept
        here is first checked against the log's length, for the player may have played
        on through another node meanwhile (a log only grows, so the same length is the
        same log). A game rebuilt for ``charge`` (a session's snapshot, move or resign)
        is charged to its message rates (:meth:`.budgets.Guard.owe_replay`).
        """
        game = held.games_of(room.race).get(player_id)
        backend = self.node.backend
        if (
            game is not None
            and check
            and not backend.in_process
            and await backend.log_length(room.code, room.race, player_id) != game.moves
        ):
            game = None
            held.games_of(room.race).pop(player_id, None)
        if game is None:
            timed = await backend.read_timed_moves(room.code, room.race, player_id)
            rebuilt, reached = replayed(room, timed)
            if charge is not None:  # the rebuild's CPU, on the rates of whom it was for
                self.node.guard.owe_replay(charge, len(timed), time.monotonic())
            # Another task may have rebuilt it while the log was read, and played a move on
            # it since: keep that one, never a copy that misses the move.
            game = held.games_of(room.race).setdefault(player_id, rebuilt)
            if game is rebuilt:
                held.reached[player_id] = reached
        return game

    # -- the two entrances ---------------------------------------------------------------

    def take(self, session: Session, frame: bytes) -> bool:
        """Carry out a move as its frame comes off the socket, if nothing needs awaiting.

        That is a move on the player's current revision, in a running race, of a game in
        memory. It is then checked, logged, acked and reported exactly as :meth:`move`
        would, without a task switch. Where the backend lives in another process (Redis),
        the append is sent with the pass's others and the ack goes out once it is
        confirmed (:meth:`_appended`); meanwhile the connection's next requests wait for
        it (``session.inflight``). Every other frame returns False with nothing changed
        (no token of the rate limit taken), and the connection's task handles it as
        usual.
        """
        node = self.node
        if session.busy or session.inflight is not None or session.lock.locked():
            return False
        started = time.perf_counter()
        fields = session.codec.decode_move(frame)
        if fields is None:
            return False
        request_id, text, rev = fields
        now_ms = node.now_ms()
        try:
            held, room, player_id = self.checked(session, now_ms)
        except ProtocolError:
            return False  # the task answers with the error
        game = held.games.get(player_id) if held.race == room.race else None
        if (
            game is None
            or game.moves != rev
            or game.status is not Status.PLAYING
            or rev >= self._max_moves
        ):
            return False
        try:
            move, notation = self.notation(text)
        except NotationError:
            return False
        if node.guard.take(session, time.monotonic(), count=False) is not None:
            return False  # the task refuses it, and counts it
        backend = node.backend
        try:
            change = game.apply(move)
        except IllegalMove as error:
            self.refused(session, request_id, error, rev)
            self._timings.observe(time.perf_counter() - started)
            return True
        except Exception as error:
            self._not_logged(session, request_id, held, room, player_id, error)
            self._timings.observe(time.perf_counter() - started)
            return True
        starts = room.starts_ms or 0
        at = now_ms - starts
        if not backend.in_process:
            pending = backend.append_move_soon(room.code, room.race, player_id, rev, notation, at)
            session.inflight = pending
            pending.add_done_callback(
                partial(
                    self._appended,
                    _Taken(session, request_id, notation, change, game, held, room, player_id),
                    at + starts,
                    started,
                )
            )
            return True
        try:
            backend.append_move_now(room.code, room.race, player_id, rev, notation, at)
        except Exception as error:
            self._not_logged(session, request_id, held, room, player_id, error)
        else:
            # A plain tuple: a _Taken costs more to make, and nothing waits for this one.
            self._report(
                (session, request_id, notation, change, game, held, room, player_id), now_ms
            )
        self._timings.observe(time.perf_counter() - started)
        return True

    def _appended(
        self, taken: _Taken, now_ms: int, started: float, pending: asyncio.Future[None]
    ) -> None:
        """A move taken from the socket is confirmed logged (or not): ack it, or say why."""
        session = taken.session
        if session.inflight is pending:
            session.inflight = None
        error = (
            BackendUnavailable("the append was cancelled")
            if pending.cancelled()
            else pending.exception()
        )
        if error is None:
            self._report(taken, now_ms)
        else:
            self._not_logged(
                session, taken.request_id, taken.held, taken.room, taken.player_id, error
            )
        self._timings.observe(time.perf_counter() - started)

    def _report(self, taken: _Fields, now_ms: int) -> None:
        """The effects of a move taken from the socket once it is logged."""
        session, _, _, _, _, held, room, _ = taken
        try:
            if self.logged(*taken, now_ms):
                self.flush_now(held)
        except Exception:  # the move is logged and acked: the room hears of it later
            log.exception("report_failed", conn=session.conn_id, room=room.code)

    def _not_logged(
        self,
        session: Session,
        request_id: int,
        held: LocalRoom,
        room: Room,
        player_id: str,
        error: BaseException,
    ) -> None:
        """A move applied to the game but not logged: the game is rebuilt from the log on
        its next use, and the player hears why, as :meth:`move`'s caller would say."""
        held.games.pop(player_id, None)
        node = self.node
        if isinstance(error, ProtocolError):  # the log refused it
            node.push_error(session, request_id, error.code, error.message)
        elif isinstance(error, BackendUnavailable):
            node.push_error(
                session, request_id, ErrorCode.UNAVAILABLE, "storage is unavailable: try again"
            )
        else:
            log.error(
                "request_failed",
                type="move",
                conn=session.conn_id,
                room=room.code,
                player=player_id,
                exc_info=error,
            )
            node.push_error(session, request_id, ErrorCode.INTERNAL, "the server failed")

    async def move(self, session: Session, req: PlayMove) -> None:
        """A move, from the connection's task."""
        held, room, player_id = self.checked(session)
        # A game this node lets go of (a failed append, a stale copy) is rebuilt for the
        # player's next move: its CPU is theirs to pay for, as a sync's is.
        game = await self.game(held, room, player_id, charge=session)
        rev = game.moves
        if req.rev != rev:
            if req.rev < rev and format_move(game.log[req.rev]) == normalise(req.move):
                await session.reply(
                    Ack(
                        req.id,
                        rev,
                        format_move(game.log[req.rev]),
                        view=player_view(game, legal=True),
                        duplicate=True,
                    )
                )
                return
            await self.node.error(
                session,
                req.id,
                ErrorCode.STALE_REVISION,
                f"your board is at revision {req.rev}; the game is at {rev}",
                rev=rev,
            )
            return
        try:
            move, notation = self.notation(req.move)
        except NotationError as error:
            raise ProtocolError(ErrorCode.BAD_MOVE, str(error)) from None
        if rev >= self._max_moves:
            raise ProtocolError(
                ErrorCode.MOVE_LIMIT,
                f"your game holds {rev} moves, the most a game may: resign, or wait for the "
                "race to end",
            )
        try:
            change = game.apply(move)
        except IllegalMove as error:
            self.refused(session, req.id, error, rev)
            return
        try:
            at = self.node.now_ms() - (room.starts_ms or 0)
            await self.node.backend.append_move(room.code, room.race, player_id, rev, notation, at)
        except BaseException:
            held.games.pop(player_id, None)  # rebuilt from the log on next use
            raise
        now = at + (room.starts_ms or 0)
        if self.logged(session, req.id, notation, change, game, held, room, player_id, now):
            await self.flush(held)

    async def resign(self, session: Session, req: Resign) -> None:
        """Give up the game; the standing comes from the game as its log has it (a game
        kept here is checked against the log: the player may have played on through
        another node, and a stale game's standing would overwrite theirs)."""
        node = self.node
        held, room, player_id = self.checked(session)
        # No move of the player's is logged after this (one through another node), so the
        # log read next is the game resigned.
        await node.backend.close_log(room.code, room.race, player_id)
        game = await self.game(held, room, player_id, check=True, charge=session)
        game.resign()
        held.pending.pop(player_id, None)
        # The standing comes from the game (rebuilt from the log), not from the room: the
        # room may have missed the last move's progress if Redis failed after its ack.
        banked, moves = game.banked, game.moves
        now = node.now_ms()
        banked_at = held.first_reached(player_id, banked, now)
        await node.backend.save_boards(room.code, room.race, {player_id: spectator_view(game)})
        outcome = await node.backend.update_room(
            room.code,
            lambda r: rooms.progress(
                r,
                player_id,
                now_ms=now,
                status="resigned",
                banked=banked,
                moves=moves,
                banked_at=banked_at,
            ),
        )
        await session.reply(Ok(req.id))
        await node.fanout.publish(room.code, outcome)

    # -- the shared effects --------------------------------------------------------------

    def refused(self, session: Session, request_id: int, error: IllegalMove, rev: int) -> None:
        """An illegal move: count it and say why."""
        self.node.metrics.refused.labels(error.reason.value).inc()
        self.node.push_error(
            session,
            request_id,
            ErrorCode.ILLEGAL_MOVE,
            error.message,
            reason=error.reason.value,
            rev=rev,
        )

    def logged(
        self,
        session: Session,
        request_id: int,
        notation: str,
        change: Change,
        game: Game,
        held: LocalRoom,
        room: Room,
        player_id: str,
        now_ms: int,
    ) -> bool:
        """A move is logged (at ``now_ms``): ack it and keep the player's new standing for
        the room's next report; True if that report is due now."""
        self.node.metrics.moves.inc()
        # The ack goes out without waiting for the socket (the write-buffer limit still
        # guards a slow client), so the room hears of the move at once; a socket that
        # fails here must not keep a logged move from the room either.
        try:
            delta = delta_view(game, change.touched, legal=session.legal)
            session.push(session.codec.dumps(Ack.fresh(request_id, game.moves, notation, delta)))
        except Exception:
            log.warning("ack_not_sent", rev=game.moves)
        return self.stand(held, player_id, game, room, now_ms)

    def stand(self, held: LocalRoom, player_id: str, game: Game, room: Room, now_ms: int) -> bool:
        """Keep a player's new standing for the room's next report; True if that is due now.

        The room hears its players' standings in one report per progress interval. A
        finished game is told at once, with every standing of the room that waits;
        otherwise a standing reached too soon after the room's last report waits (a timer
        reports it), and a later move replaces it, so nothing is ever reported late by
        more than the interval (and its times are those of the moves themselves, as logged:
        ``now_ms`` is the move's). On a backend in another process a report waits for the
        next tick of ``REPORT_TICK_S``, with the other rooms due by then.
        """
        now = now_ms
        status = STATUS_TEXT[game.status]
        banked = game.banked
        banked_at = held.first_reached(player_id, banked, now)
        waiting = held.pending
        previous = waiting.get(player_id)
        if previous is None:
            waiting[player_id] = Standing(
                player_id, now, status, banked, game.moves, None, banked_at
            )
        else:  # a standing waits for the report: the newer one takes its place
            previous.at_ms = now
            previous.status = status
            previous.banked = banked
            previous.moves = game.moves
            previous.banked_at_ms = banked_at
        node = self.node
        if status == "won":
            settings = room.settings
            if settings.finish is Finish.FIRST and held.race == room.race:
                ends = now + settings.finish_grace * 1000
                if held.ends_ms is None or ends < held.ends_ms:
                    held.ends_ms = ends
        interval = node.pacer.interval
        if status != "playing" or interval <= 0:
            return True
        since = time.monotonic() - held.reported_at
        due_now = since >= interval
        in_process = node.backend.in_process
        if due_now and in_process:
            return True
        if held.report_timer is None:
            loop = asyncio.get_running_loop()
            at = loop.time() + (0.0 if due_now else interval - since)
            if not in_process:  # on the tick, with the other rooms due
                at = math.ceil(at / REPORT_TICK_S) * REPORT_TICK_S
            held.report_timer = loop.call_at(at, self.flush_now, held)
        return False

    # -- reports of standings ------------------------------------------------------------

    def _boards(self, held: LocalRoom, updates: list[Standing]) -> dict[str, dict[str, Any]]:
        """The boards to keep now of the reported players whose games are played here.

        A finished game's board is kept at once. A watched room's spectators get each
        board in the report (unless the room shows them none before the race is over).
        On a backend shared by nodes, the store keeps a watched room's boards at once and
        any other within about 3.5 s (:meth:`_save_unsaved`), for a spectator
        who comes to another node. On the embedded backend this node is the only one, and
        its spectators see the games it holds: a board still being played is kept when
        the node lets go of the game (the race ends, the room's last member here goes, a
        deadline passes), and a restart works every running game's board out from its
        log (:meth:`Commands.recover`). Rewriting each one every 2 s was most of what the
        node wrote to disk.
        """
        boards: dict[str, dict[str, Any]] = {}
        record = held.record
        watched = held.watched(record)
        shown = watched and record.settings.spectators in SHOWN_WHILE_RACING
        shared = not self.node.backend.in_process
        for update in updates:
            player_id = update.player_id
            game = held.games.get(player_id)
            if game is None:
                continue
            kept_now = update.status != "playing" or (watched and shared)
            if kept_now or shown:
                board = spectator_view(game)
                if shown:
                    update.view = board
                if kept_now:
                    boards[player_id] = board
                    held.unsaved.discard(player_id)
                    continue
            held.unsaved.add(player_id)
            if shared:
                self._unsaved.add(held)
        if self._unsaved and self._board_timer is None:
            self._board_timer = asyncio.get_running_loop().call_later(
                BOARD_SAVE_INTERVAL_S, self._save_unsaved
            )
        return boards

    def _save_unsaved(self) -> None:
        """Keep the boards the store lacks: a round every ``BOARD_SAVE_INTERVAL_S``, its
        rooms spread evenly over ``BOARD_SAVE_SPREAD`` of the interval, the rooms due
        every ``BOARD_SAVE_TICK_S`` together (at most ``BOARD_SAVE_ROOMS`` a pass of the
        loop). A room that lacks a board again meanwhile waits for the next round.

        A round's saves go to Redis with the moves' appends. Thousands of rooms' boards
        at once would hold every move of the node behind them (tens of milliseconds at
        2,500 players); a slice a pass, one pass after another, still put a whole round
        in Redis within a few tens of milliseconds, and the appends queued behind it
        there: at 5,000 players one move in twenty waited 50 to 120 ms, every 2 s.
        """
        self._board_timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        if not self._saving:
            self._saving, self._unsaved = list(self._unsaved), set()
            self._round = (now, len(self._saving))
        began, total = self._round
        saving = self._saving
        done = total - len(saving)
        spread = BOARD_SAVE_INTERVAL_S * BOARD_SAVE_SPREAD
        due = total if spread <= 0 else min(total, math.ceil(total * (now - began) / spread))
        for _ in range(min(BOARD_SAVE_ROOMS, max(0, due - done), len(saving))):
            held = saving.pop()
            if held.closed or not held.unsaved:
                continue
            if self.node.backend.in_process:
                self.node.backend.save_boards_now(held.code, held.race, self._views(held))
            else:
                self.node.spawn(self.save_boards(held))
        if saving:
            done = total - len(saving)
            if done < due:  # more were due than a pass keeps
                self._board_timer = loop.call_soon(self._save_unsaved)
            else:  # when the next room is due, a step at the soonest
                wait = max(BOARD_SAVE_TICK_S, began + spread * done / total - now)
                self._board_timer = loop.call_later(wait, self._save_unsaved)
        elif self._unsaved:
            wait = max(BOARD_SAVE_TICK_S, began + BOARD_SAVE_INTERVAL_S - now)
            self._board_timer = loop.call_later(wait, self._save_unsaved)

    def _views(self, held: LocalRoom) -> dict[str, dict[str, Any]]:
        views = {p: spectator_view(g) for p in held.unsaved if (g := held.games.get(p))}
        held.unsaved.clear()
        return views

    def keep_boards_now(self, held: LocalRoom) -> None:
        """On a backend in this process, keep the room's boards the store lacks with this
        pass's writes (before a change that may end the race, so that they share its
        commit)."""
        if held.unsaved and self.node.backend.in_process:
            self.node.backend.save_boards_now(held.code, held.race, self._views(held))

    async def save_boards(self, held: LocalRoom) -> None:
        """Keep the boards of the room's games played here that the store lacks."""
        if held.unsaved:
            with contextlib.suppress(BackendUnavailable):
                await self.node.backend.save_boards(held.code, held.race, self._views(held))

    def flush_now(self, held: LocalRoom) -> None:
        """Report the room's waiting standings without awaiting, where that can be done.

        It can when the backend lives in this process and every waiting game is still
        being played (a finished one may end the race, whose results are stored); else
        a task reports them, after any request in flight on a finished game's connection.
        """
        if not held.pending:
            if held.report_timer is not None:
                held.report_timer.cancel()
                held.report_timer = None
            return
        node = self.node
        backend = node.backend
        if not backend.in_process or any(s.status != "playing" for s in held.pending.values()):
            node.spawn(self._flush_locked(held))
            return
        race = held.race
        updates = held.take_waiting(time.monotonic())
        boards = self._boards(held, updates)
        try:
            backend.save_boards_now(held.code, race, boards)
            outcome = backend.update_room_now(
                held.code, lambda r: rooms.standings(r, updates), lazily=True
            )
        except ProtocolError:
            return  # the race ended meanwhile (its results came from the log and the room)
        new = outcome.room
        if new is not None and not held.closed:
            old = held.record
            held.keep(new)
            if (
                held.timer is None
                or new.deadline_ms != old.deadline_ms
                or new.members is not old.members
            ):
                node.arm(held)  # else its timer is set for the deadlines it has kept
        for event in outcome.events:  # progress only: no game in it is over
            backend.publish_now(held.code, event.to_wire())

    async def _flush_locked(self, held: LocalRoom) -> None:
        """Flush the room while the sessions of its finished games handle no request."""
        sessions = self.node.sessions
        finished = [
            sessions.get(player_id)
            for player_id, standing in sorted(held.pending.items())
            if standing.status != "playing"
        ]
        if not finished:  # most reports: every waiting game goes on
            await self.flush(held)
            return
        async with contextlib.AsyncExitStack() as stack:
            for session in finished:
                if session is not None:
                    await stack.enter_async_context(session.lock)
            await self.flush(held)

    async def flush(self, held: LocalRoom) -> None:
        """Report the room's waiting standings now, as one progress event."""
        race = held.race
        updates = held.take_waiting(time.monotonic())
        if not updates:
            return
        node = self.node
        backend = node.backend
        try:
            await backend.save_boards(held.code, race, self._boards(held, updates))
            outcome, published = await backend.update_room_publishing(
                held.code, lambda r: rooms.standings(r, updates)
            )
        except ProtocolError:
            return  # the race ended meanwhile (its results came from the log and the room)
        except BackendUnavailable:
            if held.closed:
                raise
            # The moves are logged and acked; their standings are told once storage is
            # back, unless newer ones are told first.
            for update in updates:
                held.pending.setdefault(update.player_id, update)
            if held.report_timer is None:
                held.report_timer = asyncio.get_running_loop().call_later(1.0, self.flush_now, held)
            return
        await node.fanout.publish(held.code, outcome, published=published)
