"""One server node: sessions, the rooms it holds members of, and the way a move travels.

The node is the adapter around the pure room state machine (:mod:`.room`) and the engine:
it decodes requests, checks them against the session, applies moves to the player's own
game, logs them before the ack, updates the shared room record through the backend, and
fans published room events out to its local members. It knows nothing of websockets: a
:class:`Session` is given two callables to send frames with.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import structlog

from ..engine import (
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
from ..protocol import (
    Ack,
    Codec,
    CreateRoom,
    Error,
    ErrorCode,
    GetLeaderboard,
    Hello,
    JoinRoom,
    Leaderboard,
    LeaveRoom,
    Ok,
    Ping,
    PlayMove,
    Pong,
    ProtocolError,
    RaceOver,
    RaceStarted,
    RateLimiter,
    Rematch,
    Resign,
    RoomSnapshot,
    ServerMessage,
    SetReady,
    StartDaily,
    StartRace,
    Sync,
    Welcome,
)
from . import room as rooms
from .backends import Backend, BackendUnavailable
from .config import ServerConfig
from .daily import daily_seed, entry_from_log, utc_date
from .identity import check_name, new_player_id, sign_token, verify_token
from .leaderboard import day_board, player_history
from .metrics import Metrics
from .room import Outcome, Role, Room, RoomState, Settings

__all__ = ["Node", "Session"]

log = structlog.get_logger("solrace.server")

SEED_BITS = 53
"""Race seeds stay below 2**53 so that every JSON reader (JavaScript's too) keeps them exact."""
ROOM_CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
ROOM_CODE_LENGTH = 8
STATE_EVENTS = frozenset({"members", "countdown", "race_started", "race_over"})
_RESYNC: dict[str, Any] = {"type": "resync"}
"""Queued (by identity) when the room's events may have been lost: send fresh snapshots."""


def new_room_code() -> str:
    """A short, unguessable room code (31^8 possibilities)."""
    return "".join(secrets.choice(ROOM_CODE_ALPHABET) for _ in range(ROOM_CODE_LENGTH))


class Session:
    """One connection: who it is, which room and role, and how to send to it."""

    __slots__ = (
        "busy",
        "close",
        "codec",
        "conn_id",
        "legal",
        "limiter",
        "lock",
        "name",
        "player_id",
        "push",
        "role",
        "room",
        "send",
    )

    def __init__(
        self,
        conn_id: str,
        codec: Codec,
        send: Callable[[bytes | str], Awaitable[None]],
        push: Callable[[bytes | str], None],
        close: Callable[[int, str], Awaitable[None]],
        limiter: RateLimiter,
    ) -> None:
        self.conn_id = conn_id
        self.codec = codec
        self.send = send
        self.push = push
        self.close = close
        self.limiter = limiter
        self.lock = asyncio.Lock()  # held while a request runs: no snapshot shows half of one
        self.player_id: str | None = None
        self.name = ""
        self.room: str | None = None
        self.role: Role | None = None
        self.legal = False  # send the legal moves in every ack's delta (hello legal_moves)
        self.busy = False  # the connection's task is handling one of its frames

    async def reply(self, message: ServerMessage) -> None:
        """Send a reply, waiting for the socket to take it."""
        await self.send(self.codec.encode(message))


class Node:
    """A server node on one backend."""

    def __init__(
        self,
        backend: Backend,
        config: ServerConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.backend = backend
        self.config = config or ServerConfig()
        self.clock = clock
        self.metrics = Metrics()
        self._move_timings = self.metrics.handled("move")
        self.secret = b""
        self.sessions: dict[str, Session] = {}
        self.local: dict[str, set[Session]] = {}
        self.rooms: dict[str, Room] = {}
        self.games: dict[tuple[str, int, str], Game] = {}
        self.boards: dict[str, dict[str, dict[str, Any]]] = {}
        self._queues: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._fanning: set[str] = set()  # rooms whose task is sending an event out
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._armed: dict[str, int] = {}
        self._pending: dict[str, dict[str, rooms.Standing]] = {}  # by room, by player
        self._report_timers: dict[str, asyncio.TimerHandle] = {}
        self._reported_at: dict[str, float] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._later: set[asyncio.TimerHandle] = set()
        self._notations: dict[str, tuple[Move, str]] = {}
        self._watched: dict[str, tuple[Room, bool]] = {}  # by room: its record, spectated
        self.grace_ms = int(self.config.resume_grace_s * 1000)
        self._handlers: dict[type[Any], Callable[[Session, Any], Awaitable[None]]] = {
            Hello: self._hello,
            CreateRoom: self._create_room,
            JoinRoom: self._join_room,
            LeaveRoom: self._leave_room,
            SetReady: self._ready,
            StartRace: self._start,
            PlayMove: self._move,
            Resign: self._resign,
            Rematch: self._rematch,
            Sync: self._sync,
            StartDaily: self._daily,
            GetLeaderboard: self._leaderboard,
            Ping: self._ping,
        }

    async def start(self) -> None:
        """Start the backend and read the token secret."""
        self.backend.set_resync_handler(self._on_resync)
        await self.backend.start()
        self.secret = await self.backend.secret()

    async def stop(self) -> None:
        """Report waiting standings, cancel timers and workers, then close the backend."""
        for code in list(self._pending):
            try:
                await self._flush_room(code)
            except BackendUnavailable:
                break
        for timer in [*self._timers.values(), *self._later]:
            timer.cancel()
        for task in [*self._workers.values(), *self._tasks]:
            task.cancel()
        await self.backend.close()

    def now_ms(self) -> int:
        """Milliseconds since the epoch, from the node's clock."""
        return int(self.clock() * 1000)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- frames in -----------------------------------------------------------------------

    async def handle_frame(self, session: Session, frame: bytes | str) -> None:
        """Decode, check and carry out one frame; every failure becomes an error frame."""
        started = time.perf_counter()
        allowed = session.limiter.allow(time.monotonic())
        try:
            request = session.codec.decode(frame)
        except ProtocolError as error:
            if not allowed:  # a flood of unreadable frames is a flood all the same
                await self._rate_limited(session, error.request_id)
                return
            await self._error(session, error.request_id, error.code, error.message)
            return
        if not allowed:
            # Decoding is bounded by the frame size limit, so the error can name the request.
            await self._rate_limited(session, request.id)
            return
        try:
            async with session.lock:
                await self._handlers[type(request)](session, request)
        except ProtocolError as error:
            await self._error(session, request.id, error.code, error.message, rev=None)
        except BackendUnavailable:
            await self._error(
                session, request.id, ErrorCode.UNAVAILABLE, "storage is unavailable: try again"
            )
        except Exception:
            log.exception("request_failed", type=request.type)
            await self._error(session, request.id, ErrorCode.INTERNAL, "the server failed")
        self.metrics.handled(request.type).observe(time.perf_counter() - started)

    async def _rate_limited(self, session: Session, request_id: int | None) -> None:
        await self._error(
            session, request_id, ErrorCode.RATE_LIMITED, "too many messages: slow down"
        )
        if session.limiter.violations > self.config.limits.max_rate_violations:
            await session.close(1008, "rate limit exceeded")

    async def _error(
        self,
        session: Session,
        request_id: int | None,
        code: ErrorCode,
        message: str,
        *,
        reason: str | None = None,
        rev: int | None = None,
    ) -> None:
        self.metrics.errors.labels(code.value).inc()
        await session.reply(Error(request_id, code.value, message, reason, rev))

    def _push_error(
        self,
        session: Session,
        request_id: int | None,
        code: ErrorCode,
        message: str,
        *,
        reason: str | None = None,
        rev: int | None = None,
    ) -> None:
        """As :meth:`_error`, without waiting for the socket (for the move's fast path)."""
        self.metrics.errors.labels(code.value).inc()
        session.push(session.codec.encode(Error(request_id, code.value, message, reason, rev)))

    @staticmethod
    def _identified(session: Session) -> str:
        if session.player_id is None:
            raise ProtocolError(ErrorCode.NOT_IDENTIFIED, "say hello first")
        return session.player_id

    @staticmethod
    def _in_room(session: Session) -> str:
        if session.room is None:
            raise ProtocolError(ErrorCode.NOT_IN_ROOM, "you are not in a room")
        return session.room

    # -- identity ------------------------------------------------------------------------

    async def _hello(self, session: Session, req: Hello) -> None:
        if session.player_id is not None:
            raise ProtocolError(ErrorCode.ALREADY_IDENTIFIED, "this connection said hello already")
        max_len = self.config.limits.max_name_len
        if req.token is not None:
            player_id = verify_token(self.secret, req.token)
            name = await self.backend.player_name(player_id) if player_id else None
            if player_id is None or name is None:
                raise ProtocolError(ErrorCode.BAD_TOKEN, "that token is not valid here")
            if req.name is not None and check_name(req.name, max_len) != name:
                name = check_name(req.name, max_len)
                await self.backend.save_player(player_id, name)
        else:
            name = check_name(req.name or "", max_len)
            player_id = new_player_id()
            await self.backend.save_player(player_id, name)
        old = self.sessions.get(player_id)
        if old is not None and old is not session:
            await self._detach(old)
            old.player_id = None
            self._spawn(old.close(4001, "connected again elsewhere"))
        session.player_id, session.name = player_id, name
        session.legal = req.legal_moves
        self.sessions[player_id] = session
        structlog.contextvars.bind_contextvars(player=player_id)
        code = await self.backend.player_room(player_id)
        room = await self.backend.load_room(code) if code else None
        if room is None or player_id not in room.members:
            if code:
                await self.backend.set_player_room(player_id, None)
            await session.reply(
                Welcome(req.id, player_id, name, sign_token(self.secret, player_id))
            )
            return
        await self._attach(session, room, room.members[player_id].role)
        await session.reply(
            Welcome(req.id, player_id, name, sign_token(self.secret, player_id), room=room.code)
        )
        outcome = await self.backend.update_room(
            room.code, lambda r: rooms.set_connected(r, player_id, True, self.now_ms(), name)
        )
        await self._publish(room.code, outcome)
        await session.reply(RoomSnapshot(None, await self._snapshot(session)))
        log.info("resumed", room=room.code)

    # -- rooms ---------------------------------------------------------------------------

    def _check_room_capacity(self, code: str | None) -> None:
        if code not in self.local and len(self.local) >= self.config.max_rooms_per_node:
            raise ProtocolError(ErrorCode.TOO_MANY_ROOMS, "this server holds all the rooms it can")

    def _settings(self, req: CreateRoom) -> Settings:
        rooms.check_variant(req.variant)
        cfg = self.config
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
        return Settings(
            req.variant, req.max_players, req.spectators, req.undo, req.time_limit, req.countdown
        )

    async def _store_new_room(self, settings: Settings, host_id: str, host_name: str) -> Outcome:
        """A new room under a fresh code (drawn again in the unlikely case it is taken)."""
        while True:
            outcome = rooms.create(new_room_code(), settings, host_id, host_name)
            assert outcome.room is not None
            if await self.backend.create_room(outcome.room):
                return outcome

    async def _create_room(self, session: Session, req: CreateRoom) -> None:
        player_id = self._identified(session)
        if session.room is not None:
            raise ProtocolError(ErrorCode.ALREADY_IN_ROOM, "leave your room first")
        settings = self._settings(req)
        self._check_room_capacity(None)
        outcome = await self._store_new_room(settings, player_id, session.name)
        room = outcome.room
        assert room is not None
        await self._attach(session, room, Role.PLAYER)
        await self.backend.set_player_room(player_id, room.code)
        await session.reply(RoomSnapshot(req.id, await self._snapshot(session)))
        await self._publish(room.code, outcome)
        log.info("room_created", room=room.code, variant=settings.variant)

    async def _join_room(self, session: Session, req: JoinRoom) -> None:
        player_id = self._identified(session)
        code = req.code.strip().upper()
        if session.room is not None:
            raise ProtocolError(ErrorCode.ALREADY_IN_ROOM, "leave your room first")
        if req.role not in ("player", "spectator"):
            raise ProtocolError(ErrorCode.BAD_FIELD, "role is 'player' or 'spectator'")
        role = Role(req.role)
        self._check_room_capacity(code)
        outcome = await self.backend.update_room(
            code,
            lambda r: rooms.join(
                r, player_id, session.name, role, max_spectators=self.config.max_spectators_per_room
            ),
        )
        assert outcome.room is not None
        await self._attach(session, outcome.room, role)
        await self.backend.set_player_room(player_id, code)
        await session.reply(RoomSnapshot(req.id, await self._snapshot(session)))
        await self._publish(code, outcome)

    async def _leave_room(self, session: Session, req: LeaveRoom, *, reply: bool = True) -> None:
        player_id = self._identified(session)
        code = self._in_room(session)
        await self._flush_room(code)  # a leaver resigns with every move it made
        outcome = await self.backend.update_room(
            code, lambda r: rooms.leave(r, player_id, self.now_ms())
        )
        await self._publish(code, outcome)
        await self._detach(session)
        await self.backend.set_player_room(player_id, None)
        if reply:
            await session.reply(Ok(req.id))

    async def _ready(self, session: Session, req: SetReady) -> None:
        player_id = self._identified(session)
        code = self._in_room(session)
        self._not_daily(code)
        seed = secrets.randbits(SEED_BITS)
        outcome = await self.backend.update_room(
            code, lambda r: rooms.set_ready(r, player_id, req.ready, self.now_ms(), seed)
        )
        await session.reply(Ok(req.id))
        await self._publish(code, outcome)

    async def _start(self, session: Session, req: StartRace) -> None:
        player_id = self._identified(session)
        code = self._in_room(session)
        self._not_daily(code)
        seed = secrets.randbits(SEED_BITS)
        outcome = await self.backend.update_room(
            code, lambda r: rooms.start(r, player_id, self.now_ms(), seed)
        )
        await session.reply(Ok(req.id))
        await self._publish(code, outcome)

    async def _rematch(self, session: Session, req: Rematch) -> None:
        player_id = self._identified(session)
        code = self._in_room(session)
        self._not_daily(code)
        outcome = await self.backend.update_room(code, lambda r: rooms.rematch(r, player_id))
        await session.reply(Ok(req.id))
        await self._publish(code, outcome)

    def _not_daily(self, code: str) -> None:
        """A daily room plays its one attempt: no ready, start or rematch in it."""
        room = self.rooms.get(code)
        if room is not None and room.settings.daily is not None:
            raise ProtocolError(
                ErrorCode.WRONG_STATE, "a daily attempt is played once: ask for 'daily' again"
            )

    async def _daily(self, session: Session, req: StartDaily) -> None:
        """Start today's attempt at the daily deal: a solo race, undo off, countdown 0."""
        player_id = self._identified(session)
        rooms.check_variant(req.variant)
        if session.room is not None:
            current = self.rooms.get(session.room)
            if (
                current is not None
                and current.settings.daily is not None
                and current.settings.variant == req.variant
                and current.state is RoomState.RACING
            ):
                await session.reply(RoomSnapshot(req.id, await self._snapshot(session)))
                return
            if (
                current is None
                or current.settings.daily is None
                or current.state is not RoomState.FINISHED
            ):
                raise ProtocolError(ErrorCode.ALREADY_IN_ROOM, "leave your room first")
            # A finished daily attempt's room is left for the player.
            await self._leave_room(session, LeaveRoom(0), reply=False)
        self._check_room_capacity(None)
        now = self.now_ms()
        date = utc_date(now)
        attempt = await self.backend.daily_attempt(date, req.variant, player_id)
        settings = Settings(
            req.variant,
            max_players=1,
            spectators=False,
            undo=False,
            time_limit=self.config.daily_time_limit_s,
            countdown=0,
            daily=date,
            attempt=attempt,
        )
        created = await self._store_new_room(settings, player_id, session.name)
        assert created.room is not None
        code = created.room.code
        seed = daily_seed(self.secret, date, req.variant)
        started = await self.backend.update_room(
            code, lambda r: rooms.start(r, player_id, now, seed)
        )
        assert started.room is not None
        await self._attach(session, started.room, Role.PLAYER)
        await self.backend.set_player_room(player_id, code)
        await session.reply(RoomSnapshot(req.id, await self._snapshot(session)))
        await self._publish(code, Outcome(started.room, created.events + started.events))
        log.info("daily_started", room=code, date=date, variant=req.variant, attempt=attempt)

    async def _leaderboard(self, session: Session, req: GetLeaderboard) -> None:
        """A day's board, with the asking player's rank, history and streaks."""
        player_id = self._identified(session)
        board = await day_board(
            self.backend,
            self.secret,
            req.variant,
            req.date,
            now_ms=self.now_ms(),
            limit=req.limit,
            player_id=player_id,
        )
        board.update(await player_history(self.backend, player_id, now_ms=self.now_ms()))
        await session.reply(Leaderboard(req.id, board))

    async def _sync(self, session: Session, req: Sync) -> None:
        self._identified(session)
        self._in_room(session)
        await session.reply(RoomSnapshot(req.id, await self._snapshot(session)))

    async def _ping(self, session: Session, req: Ping) -> None:
        await session.reply(Pong(req.id))

    # -- racing --------------------------------------------------------------------------

    def _racing(self, session: Session) -> tuple[str, Room, str]:
        player_id = self._identified(session)
        code = self._in_room(session)
        room = self.rooms.get(code)
        if room is None or room.state is not RoomState.RACING:
            if room is not None and room.state is RoomState.FINISHED:
                raise ProtocolError(ErrorCode.RACE_OVER, "the race is over")
            raise ProtocolError(ErrorCode.RACE_NOT_STARTED, "the race has not started")
        standing = room.players.get(player_id)
        if session.role is not Role.PLAYER or standing is None:
            raise ProtocolError(ErrorCode.NOT_A_PLAYER, "only the race's players make moves")
        if room.deadline_ms is not None and self.now_ms() >= room.deadline_ms:
            raise ProtocolError(ErrorCode.RACE_OVER, "the race's time is up")
        if standing.done:
            raise ProtocolError(ErrorCode.GAME_OVER, f"your game is over ({standing.status})")
        return code, room, player_id

    async def _game(self, room: Room, player_id: str) -> Game:
        """The player's game in the room's current race, kept for the race's length."""
        key = (room.code, room.race, player_id)
        game = self.games.get(key)
        if game is None:
            replayed = await self._replayed(room, player_id)
            # Another task may have rebuilt it while the log was read, and played a move on
            # it since: keep that one, never a copy that misses the move.
            game = self.games.setdefault(key, replayed)
        return game

    async def _move(self, session: Session, req: PlayMove) -> None:
        code, room, player_id = self._racing(session)
        game = await self._game(room, player_id)
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
            await self._error(
                session,
                req.id,
                ErrorCode.STALE_REVISION,
                f"your board is at revision {req.rev}; the game is at {rev}",
                rev=rev,
            )
            return
        try:
            move, notation = self._notation(req.move)
        except NotationError as error:
            raise ProtocolError(ErrorCode.BAD_MOVE, str(error)) from None
        try:
            change = game.apply(move)
        except IllegalMove as error:
            self._refused(session, req.id, error, rev)
            return
        try:
            await self.backend.append_move(code, room.race, player_id, rev, notation)
        except BaseException:
            del self.games[(code, room.race, player_id)]  # rebuilt from the log on next use
            raise
        self._acked(session, req.id, notation, change, game)
        if self._stand(code, player_id, game, room):
            await self._flush_room(code)

    def take_move(self, session: Session, frame: bytes) -> bool:
        """Carry out a move as its frame comes off the socket, if nothing needs awaiting.

        That is a move on the player's current revision, in a running race, of a game in
        memory, on a backend that lives in this process. It is then checked, logged,
        acked and reported exactly as :meth:`handle_frame` would, without a task switch.
        Every other frame returns False with nothing changed (no token of the rate limit
        taken), and the connection's task handles it as usual.
        """
        if session.busy or session.lock.locked() or not self.backend.in_process:
            return False
        started = time.perf_counter()
        fields = session.codec.decode_move(frame)
        if fields is None:
            return False
        request_id, text, rev = fields
        try:
            code, room, player_id = self._racing(session)
        except ProtocolError:
            return False  # the task answers with the error
        game = self.games.get((code, room.race, player_id))
        if game is None or game.moves != rev or game.status is not Status.PLAYING:
            return False
        try:
            move, notation = self._notation(text)
        except NotationError:
            return False
        if not session.limiter.take(time.monotonic()):
            return False
        try:
            change = game.apply(move)
            self.backend.append_move_now(code, room.race, player_id, rev, notation)
        except IllegalMove as error:
            self._refused(session, request_id, error, rev)
        except ProtocolError as error:  # the log refused it: the game is rebuilt from the log
            self.games.pop((code, room.race, player_id), None)
            self._push_error(session, request_id, error.code, error.message)
        except Exception:
            log.exception(
                "request_failed", type="move", conn=session.conn_id, room=code, player=player_id
            )
            self.games.pop((code, room.race, player_id), None)  # rebuilt from the log
            self._push_error(session, request_id, ErrorCode.INTERNAL, "the server failed")
        else:
            self._acked(session, request_id, notation, change, game)
            try:
                if self._stand(code, player_id, game, room):
                    self._flush_room_now(code)
            except Exception:  # the move is logged and acked: the room hears of it later
                log.exception("report_failed", conn=session.conn_id, room=code, player=player_id)
        self._move_timings.observe(time.perf_counter() - started)
        return True

    def _notation(self, text: str) -> tuple[Move, str]:
        """The move ``text`` names and its written form; raises NotationError.

        Players send few different texts, so each is read once and kept (a few thousand
        at most).
        """
        known = self._notations.get(text)
        if known is None:
            move = parse_move(text)
            if len(self._notations) >= 4096:
                self._notations.clear()
            known = self._notations[text] = (move, format_move(move))
        return known

    def _refused(self, session: Session, request_id: int, error: IllegalMove, rev: int) -> None:
        self.metrics.refused.labels(error.reason.value).inc()
        self._push_error(
            session,
            request_id,
            ErrorCode.ILLEGAL_MOVE,
            error.message,
            reason=error.reason.value,
            rev=rev,
        )

    def _acked(
        self, session: Session, request_id: int, notation: str, change: Change, game: Game
    ) -> None:
        """Count a logged move and send its ack."""
        self.metrics.moves.inc()
        # The ack goes out without waiting for the socket (the write-buffer limit still
        # guards a slow client), so the room hears of the move at once; a socket that
        # fails here must not keep a logged move from the room either.
        try:
            delta = delta_view(game, change.touched, legal=session.legal)
            session.push(session.codec.dumps(Ack.fresh(request_id, game.moves, notation, delta)))
        except Exception:
            log.warning("ack_not_sent", rev=game.moves)

    def _stand(self, code: str, player_id: str, game: Game, room: Room) -> bool:
        """Keep a player's new standing for the room's next report; True if that is due now.

        The room hears its players' standings in one report per progress interval. A
        finished game is told at once, with every standing of the room that waits;
        otherwise a standing reached too soon after the room's last report waits (a timer
        reports it), and a later move replaces it, so nothing is ever reported late by
        more than the interval (and its times are those of the moves themselves).
        """
        now = self.now_ms()
        status = game.status.value
        waiting = self._pending.get(code)
        if waiting is None:
            waiting = self._pending[code] = {}
        previous = waiting.get(player_id)
        last_at: int | None = None
        if previous is not None:
            last_banked, last_at = previous.banked, previous.banked_at_ms
        else:
            reported = room.players.get(player_id)
            last_banked = reported.banked if reported is not None else None
        banked = game.banked
        banked_at = now if banked != last_banked or last_at is None else last_at
        seen = self._watched.get(code)
        if seen is None or seen[0] is not room:
            seen = self._watched[code] = (
                room,
                any(m.role is Role.SPECTATOR for m in room.members.values()),
            )
        view = spectator_view(game) if seen[1] else None
        if previous is None:
            waiting[player_id] = rooms.Standing(
                player_id, now, status, banked, game.moves, view, banked_at
            )
        else:  # a standing waits for the report: the newer one takes its place
            previous.at_ms = now
            previous.status = status
            previous.banked = banked
            previous.moves = game.moves
            previous.view = view
            previous.banked_at_ms = banked_at
        interval = self.config.progress_interval_s
        since = time.monotonic() - self._reported_at.get(code, 0.0)
        if status != "playing" or interval <= 0 or since >= interval:
            return True
        if code not in self._report_timers:
            self._report_timers[code] = asyncio.get_running_loop().call_later(
                interval - since, lambda: self._flush_room_now(code)
            )
        return False

    def _drop_pending(self, code: str, player_id: str) -> None:
        waiting = self._pending.get(code)
        if waiting is not None:
            waiting.pop(player_id, None)

    def _flush_room_now(self, code: str) -> None:
        """Report the room's waiting standings without awaiting, where that can be done.

        It can when the backend lives in this process and every waiting game is still
        being played (a finished one may end the race, whose results are stored); else
        a task reports them, after any request in flight on a finished game's connection.
        """
        waiting = self._pending.get(code)
        if not waiting:
            self._report_timers.pop(code, None)
            return
        if not self.backend.in_process or any(s.status != "playing" for s in waiting.values()):
            self._spawn(self._flush_room_locked(code, waiting))
            return
        updates = self._take_waiting(code)
        try:
            outcome = self.backend.update_room_now(code, lambda r: rooms.standings(r, updates))
        except ProtocolError:
            return  # the race ended meanwhile (its results came from the log and the room)
        room = outcome.room
        if room is not None and code in self.local:
            self.rooms[code] = room
            self._arm(room)
        for event in outcome.events:  # progress only: no game in it is over
            self.backend.publish_now(code, event.to_wire())

    async def _flush_room_locked(self, code: str, waiting: dict[str, rooms.Standing]) -> None:
        """Flush the room while the sessions of its finished games handle no request."""
        finished = [
            self.sessions.get(player_id)
            for player_id, standing in sorted(waiting.items())
            if standing.status != "playing"
        ]
        async with contextlib.AsyncExitStack() as stack:
            for session in finished:
                if session is not None:
                    await stack.enter_async_context(session.lock)
            await self._flush_room(code)

    def _take_waiting(self, code: str) -> list[rooms.Standing]:
        """The room's waiting standings, taken for a report that starts now."""
        timer = self._report_timers.pop(code, None)
        if timer is not None:
            timer.cancel()
        waiting = self._pending.pop(code, None)
        if not waiting:
            return []
        self._reported_at[code] = time.monotonic()
        return list(waiting.values())

    async def _flush_room(self, code: str) -> None:
        """Report the room's waiting standings now, as one progress event."""
        updates = self._take_waiting(code)
        if not updates:
            return
        try:
            outcome = await self.backend.update_room(code, lambda r: rooms.standings(r, updates))
        except ProtocolError:
            return  # the race ended meanwhile (its results came from the log and the room)
        except BackendUnavailable:
            # The moves are logged and acked; their standings are told once storage is
            # back, unless newer ones are told first.
            again = self._pending.setdefault(code, {})
            for update in updates:
                again.setdefault(update.player_id, update)
            if code not in self._report_timers:
                self._report_timers[code] = asyncio.get_running_loop().call_later(
                    1.0, lambda: self._flush_room_now(code)
                )
            return
        await self._publish(code, outcome)

    async def _resign(self, session: Session, req: Resign) -> None:
        code, room, player_id = self._racing(session)
        game = await self._game(room, player_id)
        game.resign()
        self._drop_pending(code, player_id)
        # The standing comes from the game (rebuilt from the log), not from the room: the
        # room may have missed the last move's progress if Redis failed after its ack.
        banked, moves = game.banked, game.moves
        outcome = await self.backend.update_room(
            code,
            lambda r: rooms.progress(
                r, player_id, now_ms=self.now_ms(), status="resigned", banked=banked, moves=moves
            ),
        )
        await session.reply(Ok(req.id))
        await self._publish(code, outcome)

    # -- membership on this node ---------------------------------------------------------

    async def _attach(self, session: Session, room: Room, role: Role) -> None:
        code = room.code
        session.room, session.role = code, role
        members = self.local.get(code)
        if members is None:
            members = self.local[code] = set()
            queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            self._queues[code] = queue
            self._workers[code] = asyncio.ensure_future(self._fan_out_worker(code, queue))
            await self.backend.subscribe(code, self._on_event)
            self.metrics.rooms.set(len(self.local))
        members.add(session)
        self.rooms[code] = room
        self._arm(room)

    async def _detach(self, session: Session) -> None:
        code = session.room
        session.room = session.role = None
        if code is None:
            return
        members = self.local.get(code)
        if members is None:
            return
        members.discard(session)
        # The player may play on through another node: rebuild from the log if they return.
        for key in [k for k in self.games if k[0] == code and k[2] == session.player_id]:
            del self.games[key]
        if not members:
            await self._forget(code)

    async def _forget(self, code: str) -> None:
        """Drop the subscription and every reference to a room this node no longer holds."""
        self.local.pop(code, None)
        await self.backend.unsubscribe(code)
        worker = self._workers.pop(code, None)
        self._queues.pop(code, None)
        if worker is not None:
            worker.cancel()
        timer = self._timers.pop(code, None)
        self._armed.pop(code, None)
        if timer is not None:
            timer.cancel()
        await self._flush_room(code)
        self._reported_at.pop(code, None)
        self._watched.pop(code, None)
        self.rooms.pop(code, None)
        self.boards.pop(code, None)
        for key in [k for k in self.games if k[0] == code]:
            del self.games[key]
        self.metrics.rooms.set(len(self.local))

    async def disconnected(self, session: Session) -> None:
        """A connection closed: spectators leave, players may resume within the grace period."""
        player_id = session.player_id
        if player_id is None:
            return
        if self.sessions.get(player_id) is session:
            del self.sessions[player_id]
        code, role = session.room, session.role
        if code is None:
            return
        try:
            if role is Role.SPECTATOR:
                outcome = await self.backend.update_room(
                    code, lambda r: rooms.leave(r, player_id, self.now_ms())
                )
                await self.backend.set_player_room(player_id, None)
            else:
                outcome = await self.backend.update_room(
                    code, lambda r: rooms.set_connected(r, player_id, False, self.now_ms())
                )
                self._tick_later(code, self.config.resume_grace_s + 0.05)
            await self._publish(code, outcome)
        except (ProtocolError, BackendUnavailable):
            pass
        finally:
            await self._detach(session)

    # -- events out ----------------------------------------------------------------------

    async def _publish(self, code: str, outcome: Outcome) -> None:
        if outcome.room is not None and code in self.local:
            self.rooms[code] = outcome.room
            self._arm(outcome.room)
        for event in outcome.events:
            if isinstance(event, RaceStarted):
                self.metrics.races.inc()
            if isinstance(event, RaceOver):
                await self._record_results(code, event)
            await self.backend.publish(code, event.to_wire())
        if outcome.room is None:
            await self.backend.drop_room_logs(code)

    async def _record_results(self, code: str, event: RaceOver) -> None:
        """Keep a race's results; score a daily attempt from its move log."""
        if event.daily is None:
            assert event.seed is not None
            await self.backend.save_results(
                code, event.race, event.variant, event.seed, event.results
            )
            return
        seed = daily_seed(self.secret, event.daily, event.variant)
        for result in event.results:
            log_ = await self.backend.read_moves(code, event.race, result["player_id"])
            entry = entry_from_log(
                date=event.daily,
                variant=event.variant,
                seed=seed,
                player_id=result["player_id"],
                name=result["name"],
                attempt=event.attempt or 1,
                log=log_,
                race_status=result["status"],
                time_ms=result["time_ms"],
            )
            await self.backend.save_daily_entry(entry)
            log.info(
                "daily_recorded",
                date=event.daily,
                variant=event.variant,
                status=entry.status,
                banked=entry.banked,
                ranked=entry.ranked,
            )

    def _on_event(self, code: str, event: dict[str, Any]) -> None:
        queue = self._queues.get(code)
        if queue is None:
            return
        if event["type"] == "progress" and queue.empty() and code not in self._fanning:
            # Nothing of the room's waits to go out before it, and a progress event
            # needs no await: it goes out now, without a pass through the room's task.
            try:
                self._fan_out_progress(code, event)
            except Exception:
                log.exception("fan_out_failed", event="progress", room=code)
            return
        queue.put_nowait(event)

    def _on_resync(self, codes: list[str]) -> None:
        for code in codes:
            self._on_event(code, _RESYNC)

    async def _fan_out_worker(self, code: str, queue: asyncio.Queue[dict[str, Any]]) -> None:
        structlog.contextvars.bind_contextvars(room=code)
        while True:
            event = await queue.get()
            self._fanning.add(code)
            try:
                await self._fan_out(code, event)
            except Exception:
                log.exception("fan_out_failed", event=event.get("type"))
            finally:
                self._fanning.discard(code)

    async def _fan_out(self, code: str, event: dict[str, Any]) -> None:
        if event is _RESYNC:
            await self._resync(code)
            return
        kind = event["type"]
        if kind in STATE_EVENTS:
            room = await self.backend.load_room(code)
            if room is None:
                self._deliver(code, event, event)
                return
            room = self._newer(code, room)
            self._arm(room)
            if kind == "race_started":
                await self._deliver_start(room, event)
                return
            if kind == "members":
                for session in list(self.local.get(code, ())):
                    if session.player_id not in room.members:
                        await self._detach(session)
                        if session.player_id is not None:
                            await self.backend.set_player_room(session.player_id, None)
        if kind == "progress":
            self._fan_out_progress(code, event)
            return
        self._deliver(code, event, event)

    def _fan_out_progress(self, code: str, event: dict[str, Any]) -> None:
        """Send a progress event: the players' boards to spectators only."""
        if any("view" in p for p in event["players"]):
            boards = self.boards.setdefault(code, {})
            bare = []
            for entry in event["players"]:
                view = entry.get("view")
                if view is not None:
                    boards[entry["player_id"]] = view
                    entry = {k: v for k, v in entry.items() if k != "view"}
                bare.append(entry)
            self._deliver(code, {**event, "players": bare}, event)
            return
        self._deliver(code, event, event)

    def _newer(self, code: str, room: Room) -> Room:
        """The newer of a record just read and the one this node holds, which it keeps.

        A record read before a change this node made meanwhile (a join through it, say)
        must not undo it: a member it lacks would be sent away.
        """
        known = self.rooms.get(code)
        if known is not None and known.seq > room.seq:
            return known
        self.rooms[code] = room
        return room

    async def _resync(self, code: str) -> None:
        """Reload the room, re-arm its timer and send every local member a snapshot."""
        room = await self.backend.load_room(code)
        if room is None:
            log.warning("resync_room_gone")
            return
        room = self._newer(code, room)
        self._arm(room)
        for session in list(self.local.get(code, ())):
            if session.player_id not in room.members:
                await self._detach(session)
                if session.player_id is not None:
                    await self.backend.set_player_room(session.player_id, None)
                continue
            # After the session's request in flight, if any (a move applied, not yet
            # logged), in a task of its own: a slow socket must not hold the room's events.
            self._spawn(self._push_snapshot(session, code))
        log.info("resynced", seq=room.seq)

    async def _push_snapshot(self, session: Session, code: str) -> None:
        async with session.lock:
            if session.room != code:
                return
            try:
                snapshot = await self._snapshot(session)
            except (ProtocolError, BackendUnavailable) as error:
                log.warning("resync_failed", room=code, error=str(error))
                return
            session.push(session.codec.encode(RoomSnapshot(None, snapshot)))

    def _deliver(
        self, code: str, to_players: dict[str, Any], to_spectators: dict[str, Any]
    ) -> None:
        frames: dict[tuple[int, bool], bytes | str] = {}
        for session in self.local.get(code, ()):
            spectator = session.role is Role.SPECTATOR
            key = (id(type(session.codec)), spectator)
            frame = frames.get(key)
            if frame is None:
                frame = frames[key] = session.codec.dumps(
                    to_spectators if spectator else to_players
                )
            session.push(frame)

    async def _deliver_start(self, room: Room, event: dict[str, Any]) -> None:
        assert room.seed is not None
        boards: dict[str, dict[str, Any]] = {}
        for session in list(self.local.get(room.code, ())):
            if session.role is Role.PLAYER and session.player_id in room.players:
                game = await self._game(room, session.player_id)
                message = replace(
                    RaceStarted(**{k: v for k, v in event.items() if k != "type"}),
                    view=player_view(game, legal=True),
                    rev=game.moves,
                )
                session.push(session.codec.encode(message))
            else:
                if not boards:
                    fresh = new_game(room.settings.variant, room.seed)
                    boards = {p: spectator_view(fresh) for p in room.players}
                    self.boards[room.code] = dict(boards)
                message = replace(
                    RaceStarted(**{k: v for k, v in event.items() if k != "type"}), boards=boards
                )
                session.push(session.codec.encode(message))

    # -- timers --------------------------------------------------------------------------

    def _arm(self, room: Room) -> None:
        code = room.code
        when = rooms.next_deadline(room, self.grace_ms) if code in self.local else None
        if when is not None and code in self._timers and self._armed.get(code) == when:
            return  # most updates (a move's progress) leave the deadline as it was
        old = self._timers.pop(code, None)
        self._armed.pop(code, None)
        if old is not None:
            old.cancel()
        if when is None:
            return
        delay = max(0.0, (when - self.now_ms()) / 1000)
        if room.state is RoomState.RACING:
            # Every node reports its players' last standings within the progress interval
            # (moves stop at the deadline), so the race is closed only once they are in.
            delay += self.config.progress_interval_s + 0.1
        loop = asyncio.get_running_loop()
        self._timers[code] = loop.call_later(delay, lambda: self._fire(code))
        self._armed[code] = when

    def _fire(self, code: str) -> None:
        self._timers.pop(code, None)
        self._armed.pop(code, None)
        self._spawn(self._tick(code))

    def _tick_later(self, code: str, delay: float) -> None:
        """Tick the room after ``delay`` seconds, unless the node stops first."""

        def fire() -> None:
            self._later.discard(handle)
            self._spawn(self._tick(code))

        handle = asyncio.get_running_loop().call_later(delay, fire)
        self._later.add(handle)

    async def _tick(self, code: str) -> None:
        try:
            outcome = await self.backend.update_room(
                code, lambda r: rooms.tick(r, self.now_ms(), self.grace_ms)
            )
        except ProtocolError:
            return
        except BackendUnavailable:
            self._tick_later(code, 1.0)
            return
        await self._publish(code, outcome)

    # -- snapshots -----------------------------------------------------------------------

    async def _snapshot(self, session: Session) -> dict[str, Any]:
        """The whole room as this session may see it; the seed only once the race is over."""
        code = self._in_room(session)
        room = await self.backend.load_room(code)
        if room is None:
            raise ProtocolError(ErrorCode.ROOM_NOT_FOUND, "the room is gone")
        self.rooms[code] = room
        now = self.now_ms()
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
            data["elapsed_ms"] = max(0, min(now, room.deadline_ms or now) - room.starts_ms)
            data["time_limit"] = room.settings.time_limit
            data["players"] = [
                {
                    "player_id": p,
                    "name": r.name,
                    "banked": r.banked,
                    "moves": r.moves,
                    "status": r.status,
                    "elapsed_ms": r.elapsed_ms,
                }
                for p, r in room.players.items()
            ]
            if session.role is Role.PLAYER and session.player_id in room.players:
                game = await self._game(room, session.player_id)
                data["you"]["view"] = player_view(game, legal=True)
                data["you"]["rev"] = game.moves
            elif session.role is Role.SPECTATOR:
                data["boards"] = {
                    p: spectator_view(await self._replayed(room, p)) for p in room.players
                }
        if room.state is RoomState.FINISHED:
            data["results"] = room.results
            data["seed"] = None if room.settings.daily else room.seed
        return data

    async def _replayed(self, room: Room, player_id: str) -> Game:
        """The player's game rebuilt from the deal and the move log (cached if held here)."""
        cached = self.games.get((room.code, room.race, player_id))
        if cached is not None:
            return cached
        assert room.seed is not None
        game = new_game(room.settings.variant, room.seed, undo_allowed=room.settings.undo)
        for text in await self.backend.read_moves(room.code, room.race, player_id):
            game.apply(parse_move(text))
        return game


def normalise(text: str) -> str:
    """A move's canonical text, or the text itself if it is not a move."""
    try:
        return format_move(parse_move(text))
    except NotationError:
        return text
