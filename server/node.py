"""One server node: a registry of sessions and of the rooms it holds, and their timers.

The node is the adapter around the pure room state machine (:mod:`.room`) and the
engine. Its parts live in modules named for them: :mod:`.identity` (hello),
:mod:`.commands` (rooms and snapshots), :mod:`.moves` (the move's way, and reports of
standings), :mod:`.fanout` (room events out to local members),
:mod:`.daily_commands` (the daily challenge) and :mod:`.accounts` (accounts). Each
room it holds is one :class:`~.local_room.LocalRoom`. It knows nothing of websockets:
a :class:`Session` is given callables to send frames with.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import structlog

from ..protocol import (
    ChangePassword,
    Claim,
    CreateRoom,
    DeleteAccount,
    Error,
    ErrorCode,
    GetLeaderboard,
    Hello,
    JoinRoom,
    LeaveRoom,
    Ping,
    PlayMove,
    ProtocolError,
    Rematch,
    Resign,
    RevokeTokens,
    SetReady,
    SetSettings,
    StartDaily,
    StartRace,
    Sync,
)
from . import room as rooms
from .accounts import Accounts
from .admin import Admin
from .aio import KeyedLock
from .backends import Backend, BackendUnavailable
from .budgets import Guard
from .commands import RoomCommands
from .config import ServerConfig
from .daily_commands import DailyCommands
from .deal_pool import DealPool
from .fanout import FanOut
from .ghosts import Ghosts
from .identity import Identity
from .local_room import LocalRoom
from .metrics import Metrics
from .moves import MovePath
from .pacing import ProgressPacer
from .room import Role, Room, RoomState
from .session import Session

__all__ = ["Node", "Session"]

log = structlog.get_logger("solrace.server")

HEAVY = frozenset({GetLeaderboard, RevokeTokens})
"""Requests that read or write the store at length (a board; every token of an account
revoked and each of its connections told): they count as ``heavy_request_cost`` messages."""

PRUNE_INTERVAL_S = 30.0
"""How often a node forgets the message-rate buckets it no longer needs."""

ORPHAN_SWEEP_S = 60.0
"""How often a node that shares its store looks for rooms whose deadline passed with no
node holding them to act on it (see :meth:`Node.sweep_orphans`)."""
ORPHAN_SLACK_MS = 5_000
"""How long past its deadline a room must be before a node that does not hold it acts:
the node that holds it acts on time, and two nodes acting at once is harmless but wasted."""
ORPHAN_ROOMS = 100_000
"""The most rooms' codes one sweep reads."""
ORPHAN_LOADS = 2_000
"""The most rooms one sweep reads whole, drawn at random from the codes: a node's cost
stays small however many rooms there are, and every room is looked at in time."""

NODE_NOTE_S = 2.0
"""How often a node that shares its store notes there that it runs (at most: four times
in ``node_silent_s``)."""
SILENT_SWEEP_S = 5.0
"""How often a node looks for nodes unnoted for ``node_silent_s`` (config): one taken for
dead has the members it held let go (each then has the resume grace to come back on
another node), as if their connections had dropped. A node looks only once it has been
noted itself for that long (after the store was away, every node is late)."""

ALIVE_INTERVAL_S = 1.0
"""How often a node that owns its storage notes that it runs (a restart measures its
downtime from the last note)."""


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
        self.pacer = ProgressPacer(
            self.config.progress_interval_s,
            self.config.progress_interval_max_s,
            on_change=self.metrics.progress_interval.set,
        )
        self.metrics.progress_interval.set(self.pacer.interval)
        self.secret = b""
        self.server_info: dict[str, Any] = {}
        self.sessions: dict[str, Session] = {}
        self.held: dict[str, LocalRoom] = {}
        self.grace_ms = int(self.config.resume_grace_s * 1000)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._later: set[asyncio.TimerHandle] = set()
        self._alive: asyncio.TimerHandle | None = None
        self._pruning: asyncio.TimerHandle | None = None
        self._sweeping: asyncio.TimerHandle | None = None
        self._noting: asyncio.TimerHandle | None = None
        self._noted_since: int | None = None  # since when each note of this node went in
        self._silent_swept = 0  # when this node last looked for silent ones
        self._stopped = False
        self._looked_at: set[tuple[str, int]] = set()  # finished races checked for results
        self.stopping_ms: int | None = None  # when the node stopped taking moves
        self._player_locks = KeyedLock()
        self.guard = Guard(self.config, backend)
        self.admin = Admin(self)
        self.identity = Identity(self)
        self.accounts = Accounts(self)
        self.commands = RoomCommands(self)
        self.moves = MovePath(self)
        self.fanout = FanOut(self)
        self.daily = DailyCommands(self)
        self.deals = DealPool(self)
        self.ghosts = Ghosts(self)
        self._handlers: dict[type[Any], Callable[[Session, Any], Awaitable[None]]] = {
            Hello: self.identity.hello,
            CreateRoom: self.commands.create_room,
            JoinRoom: self.commands.join_room,
            LeaveRoom: self.commands.leave_room,
            SetReady: self.commands.ready,
            StartRace: self.commands.start,
            PlayMove: self.moves.move,
            Resign: self.moves.resign,
            Rematch: self.commands.rematch,
            SetSettings: self.commands.set_settings,
            Sync: self.commands.sync,
            StartDaily: self.daily.start,
            GetLeaderboard: self.daily.leaderboard,
            Claim: self.accounts.claim,
            ChangePassword: self.accounts.change_password,
            RevokeTokens: self.accounts.revoke_tokens,
            DeleteAccount: self.accounts.delete_account,
            Ping: self.commands.ping,
        }

    async def start(self) -> None:
        """Start the backend, read the token secret, and take back rooms left running."""
        self.backend.set_resync_handler(self.fanout.on_resync)
        await self.backend.start()
        if self.backend.in_process:
            self.backend.claim()
        self.secret = await self.backend.secret()
        self.server_info = {"node": await self.backend.node_id(), "boot": self.now_ms()}
        await self.admin.start()
        if self.backend.in_process:
            await self.commands.recover()
            self._note_alive()
        self._prune()
        self.pacer.start()
        if not self.backend.in_process:
            self._sweeping = asyncio.get_running_loop().call_later(ORPHAN_SWEEP_S, self._sweep_soon)
            self._note_node()
        self.deals.start()

    async def stop(self) -> None:
        """Report waiting standings, cancel timers and tasks, then close the backend."""
        if self._stopped:
            return
        self._stopped = True
        self.backend.draining()
        for held in list(self.held.values()):
            try:
                await self.moves.flush(held)
            except BackendUnavailable:
                break
            await self.moves.save_boards(held)
        for held in list(self.held.values()):
            held.close()
        for timer in (self._alive, self._pruning, self._sweeping, self._noting):
            if timer is not None:
                timer.cancel()
        self.pacer.stop()
        for timer in self._later:
            timer.cancel()
        for task in self._tasks:
            task.cancel()
        if self.backend.in_process:
            with contextlib.suppress(BackendUnavailable):
                self.backend.note_alive(self.stopping_ms or self.now_ms())
        self.accounts.close()
        await self.deals.close()
        await self.backend.close()

    def stopping(self) -> None:
        """The node stops taking moves (its clients are being told to go): a restart
        counts its downtime from now, however long the connections then take to close."""
        if self.stopping_ms is not None:
            return
        self.stopping_ms = self.now_ms()
        if self._alive is not None:
            self._alive.cancel()
            self._alive = None
        if self.backend.in_process:
            with contextlib.suppress(BackendUnavailable):
                self.backend.note_alive(self.stopping_ms)

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` has run."""
        return self._stopped

    def _prune(self) -> None:
        """Forget message-rate buckets no connection uses that are full again, and the
        guests not seen for ``guest_ttl_s`` (where the store does not forget them itself)."""
        self.guard.prune(time.monotonic())
        self.spawn(self.expire_guests())
        self._pruning = asyncio.get_running_loop().call_later(PRUNE_INTERVAL_S, self._prune)

    async def expire_guests(self) -> int:
        """Forget the guests not seen for ``guest_ttl_s``, and the races kept past their
        time; how many guests went."""
        try:
            gone = await self.backend.expire_players(self.now_ms(), self.config.guest_ttl_s)
            await self.backend.expire_races(self.now_ms())
        except BackendUnavailable:
            return 0
        if gone:
            log.info("guests_expired", count=gone)
        return gone

    def _sweep_soon(self) -> None:
        self.spawn(self.sweep_orphans())
        self._sweeping = asyncio.get_running_loop().call_later(ORPHAN_SWEEP_S, self._sweep_soon)

    async def sweep_orphans(self) -> int:
        """Act on the rooms past a deadline that no node holds; how many were ticked.

        A room's timers (a dropped player's grace, the time limit, a countdown) run on the
        nodes that hold one of its members. When the node holding all of them stops and
        its clients do not come back (a rolling upgrade whose clients left meanwhile),
        no node holds the room: its race would stay open, its players away, its results
        unrecorded, until the store forgot it. Each node that shares its store looks at
        the rooms now and then, and ticks those ``ORPHAN_SLACK_MS`` past their deadline.
        """
        try:
            codes = await self.backend.room_codes(ORPHAN_ROOMS)
        except BackendUnavailable:
            return 0
        ticked = 0
        codes = [code for code in codes if code not in self.held]
        noted: dict[tuple[str, str], set[str]] = {}
        for code in random.sample(codes, min(len(codes), ORPHAN_LOADS)):
            if code in self.held or self._stopped:
                continue
            try:
                room = await self.backend.load_room(code)
                if room is not None and room.state is RoomState.FINISHED:
                    await self._record_orphaned(room, noted)
            except BackendUnavailable:
                return ticked
            if room is None:
                continue
            when = rooms.next_deadline(room, self.grace_ms)
            if when is not None and self.now_ms() >= when + ORPHAN_SLACK_MS:
                await self.tick(code)
                ticked += 1
        if ticked:
            log.info("orphans_ticked", count=ticked)
        return ticked

    async def _record_orphaned(self, room: Room, noted: dict[tuple[str, str], set[str]]) -> None:
        """Record a finished race's results that the node that ended it did not live to
        write (once the race is ``ORPHAN_SLACK_MS`` over: a live node writes them at
        once). Each race is looked at once by this node."""
        key = (room.code, room.race)
        if key in self._looked_at:
            return
        end = (room.starts_ms or 0) + rooms.race_length_ms(room, self.now_ms())
        if self.now_ms() < end + ORPHAN_SLACK_MS:
            return
        await self.fanout.record_missed(room, noted)
        if len(self._looked_at) >= ORPHAN_LOADS * 8:
            self._looked_at.clear()
        self._looked_at.add(key)

    @property
    def name(self) -> str:
        """This node's process across the nodes: its store's node id and its boot."""
        return f"{self.server_info.get('node')}/{self.server_info.get('boot')}"

    def _note_node(self) -> None:
        self.spawn(self._note_and_sweep())
        every = min(NODE_NOTE_S, self.config.node_silent_s / 4)
        self._noting = asyncio.get_running_loop().call_later(every, self._note_node)

    async def _note_and_sweep(self) -> None:
        now = self.now_ms()
        try:
            await self.backend.note_node(self.name, now)
        except BackendUnavailable:
            self._noted_since = None
            return
        if self._noted_since is None:
            self._noted_since = now
        sweep_ms = min(SILENT_SWEEP_S, self.config.node_silent_s / 3) * 1000
        if now - self._silent_swept >= sweep_ms:
            self._silent_swept = now
            await self.let_go_of_silent_nodes()

    async def let_go_of_silent_nodes(self) -> int:
        """Let go of the members held by nodes not noted for ``node_silent_s`` (a node killed,
        or cut off): each is dropped as its connection would have been, spectators leave.
        Returns how many members were let go."""
        now = self.now_ms()
        silent_ms = int(self.config.node_silent_s * 1000)
        if self._noted_since is None or now - self._noted_since < silent_ms:
            return 0
        before = now - silent_ms
        try:
            silent = await self.backend.silent_nodes(before)
        except BackendUnavailable:
            return 0
        let_go = 0
        for node in silent:
            if node == self.name or self._stopped:
                continue
            try:
                entries = await self.backend.take_node(node, before)
            except BackendUnavailable:
                return let_go
            if entries is None:
                continue  # another node took it
            if entries:  # a node that stopped cleanly let go of its members itself
                log.warning("node_silent", node=node, members=len(entries))
            for entry in entries:
                let_go += await self._let_go(entry)
        return let_go

    async def _let_go(self, entry: str) -> int:
        """Drop the member that a silent node's ``entry`` names (1), unless it is gone or
        has come back since (0)."""
        try:
            code, player_id, link_text, role_text = entry.split("\t")
            link, role = int(link_text), Role(role_text)
        except ValueError:
            return 0
        return int(await self._drop(code, player_id, role, link))

    @staticmethod
    def _held_entry(code: str, player_id: str, link: int, role: Role) -> str:
        return f"{code}\t{player_id}\t{link}\t{role.value}"

    def _note_alive(self) -> None:
        try:
            self.backend.note_alive(self.now_ms())
        except BackendUnavailable:
            return
        self._alive = asyncio.get_running_loop().call_later(ALIVE_INTERVAL_S, self._note_alive)

    def now_ms(self) -> int:
        """Milliseconds since the epoch, from the node's clock."""
        return int(self.clock() * 1000)

    def spawn(self, coro: Awaitable[Any]) -> None:
        """Run ``coro`` in a task of its own, cancelled when the node stops.

        Nothing awaits the task: if it fails, its error is logged (``task_failed``, a
        warning when storage was unavailable, else an error with the traceback) as it
        ends, one JSON line like the rest, not asyncio's text about an exception never
        retrieved, written whenever the task happens to be collected."""
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._spawned_done)

    def _spawned_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            return
        coro = task.get_coro()
        name = getattr(coro, "__qualname__", None) or task.get_name()
        if isinstance(error, BackendUnavailable):
            log.warning("task_failed", task=name, error=str(error))
        else:
            log.error("task_failed", task=name, exc_info=error)

    def record(self, code: str) -> Room | None:
        """The latest record this node holds of a room it holds."""
        held = self.held.get(code)
        return None if held is None else held.record

    def take_move(self, session: Session, frame: bytes) -> bool:
        """Carry out a move as its frame comes off the socket (see :meth:`MovePath.take`)."""
        return self.moves.take(session, frame)

    # -- frames in -----------------------------------------------------------------------

    async def handle_frame(self, session: Session, frame: bytes | str) -> None:
        """Decode, check and carry out one frame; every failure becomes an error frame."""
        await session.settled()  # a move taken from the socket goes first
        started = time.perf_counter()
        now = time.monotonic()
        guard = self.guard
        if session.address_rate is None:
            guard.bind(session, now)
        wait = guard.take(session, now)
        try:
            request = session.codec.decode(frame)
        except ProtocolError as error:
            if wait is not None:  # a flood of unreadable frames is a flood all the same
                await self._rate_limited(session, error.request_id, wait)
                return
            await self.error(session, error.request_id, error.code, error.message)
            return
        if wait is None and type(request) in HEAVY:
            wait = guard.take(session, now, self.config.budgets.heavy_request_cost - 1)
        if wait is not None:
            # Decoding is bounded by the frame size limit, so the error can name the request.
            await self._rate_limited(session, request.id, wait)
            return
        try:
            async with session.lock:
                await self._handlers[type(request)](session, request)
        except ProtocolError as error:
            await self.error(
                session,
                request.id,
                error.code,
                error.message,
                reason=error.reason,
                retry_after=error.retry_after,
            )
        except BackendUnavailable:
            await self.error(
                session, request.id, ErrorCode.UNAVAILABLE, "storage is unavailable: try again"
            )
        except Exception:
            log.exception("request_failed", type=request.type)
            await self.error(session, request.id, ErrorCode.INTERNAL, "the server failed")
        self.metrics.handled(request.type).observe(time.perf_counter() - started)

    async def _rate_limited(self, session: Session, request_id: int | None, wait: float) -> None:
        await self.error(
            session,
            request_id,
            ErrorCode.RATE_LIMITED,
            "too many messages: slow down",
            retry_after=max(wait, 0.001),
        )
        if session.limiter.violations > self.config.limits.max_rate_violations:
            await session.close(1008, "rate limit exceeded")

    def _error_frame(
        self,
        session: Session,
        request_id: int | None,
        code: ErrorCode,
        message: str,
        reason: str | None,
        rev: int | None,
        retry_after: float | None = None,
    ) -> bytes | str:
        self.metrics.errors.labels(code.value).inc()
        if retry_after is not None:
            retry_after = round(retry_after, 3)
        return session.codec.encode(
            Error(request_id, code.value, message, reason, rev, retry_after)
        )

    async def error(
        self,
        session: Session,
        request_id: int | None,
        code: ErrorCode,
        message: str,
        *,
        reason: str | None = None,
        rev: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Send an error frame, waiting for the socket."""
        frame = self._error_frame(session, request_id, code, message, reason, rev, retry_after)
        await session.send(frame)

    def push_error(
        self,
        session: Session,
        request_id: int | None,
        code: ErrorCode,
        message: str,
        *,
        reason: str | None = None,
        rev: int | None = None,
    ) -> None:
        """Send an error frame without waiting for the socket (for the move's fast path)."""
        session.push(self._error_frame(session, request_id, code, message, reason, rev))

    @staticmethod
    def identified(session: Session) -> str:
        """The session's player id; raises NOT_IDENTIFIED before hello."""
        if session.player_id is None:
            raise ProtocolError(ErrorCode.NOT_IDENTIFIED, "say hello first")
        return session.player_id

    @staticmethod
    def in_room(session: Session) -> str:
        """The session's room code; raises NOT_IN_ROOM outside a room."""
        if session.room is None:
            raise ProtocolError(ErrorCode.NOT_IN_ROOM, "you are not in a room")
        return session.room

    # -- membership on this node ---------------------------------------------------------

    async def attach(self, session: Session, room: Room, role: Role) -> LocalRoom:
        """Make ``session`` a local member of ``room``, holding the room if not yet held."""
        code = room.code
        while True:
            held = self.held.get(code)
            if held is None:
                held = self.held[code] = LocalRoom(code, room)
            async with held.lock:
                if held.closed:
                    continue  # forgotten while this waited: hold it afresh
                if not held.opened:
                    held.opened = True
                    held.task = asyncio.ensure_future(self.fanout.worker(held))
                    await self.backend.subscribe(code, self.fanout.on_event)
                    self.metrics.rooms.set(len(self.held))
                    if room.settings.ghost is not None and room.state is RoomState.RACING:
                        # Its ghost goes on here if it stopped with the node driving it.
                        self.spawn(self.ghosts.race(code, room))
                held.members.add(session)
                session.room, session.role = code, role
                member = room.members.get(session.player_id or "")
                session.link = member.link if member is not None else 0
                self.guard.hold(session, code)
                held.keep(room)
                self.arm(held)
                break
        if not self.backend.in_process and session.player_id is not None:
            entry = self._held_entry(code, session.player_id, session.link, role)
            with contextlib.suppress(BackendUnavailable):
                await self.backend.hold_member(self.name, entry)
        return held

    async def detach(self, session: Session) -> None:
        """``session`` is no longer a member here; the room is forgotten with its last one."""
        code, role = session.room, session.role
        session.room = session.role = None
        entry = None  # the store's note that this node holds the member (shared stores)
        if not self.backend.in_process and code and role and session.player_id is not None:
            entry = self._held_entry(code, session.player_id, session.link, role)
        held = self.held.get(code) if code is not None else None
        if held is not None and session in held.members:
            held.members.discard(session)
            self.guard.release(session, held.code)
            if not held.members:
                await self._forget(held)
        if entry is not None:
            with contextlib.suppress(BackendUnavailable):
                await self.backend.release_member(self.name, entry)

    async def _forget(self, held: LocalRoom) -> None:
        """Report what waits, drop the subscription and everything held for the room."""
        async with held.lock:
            if held.members or held.closed:
                return  # someone attached meanwhile, or another task forgets it
            try:
                try:
                    await self.moves.flush(held)
                except BackendUnavailable:
                    log.warning("standings_lost", room=held.code)
                await self.moves.save_boards(held)
                await self.backend.unsubscribe(held.code)
            finally:
                held.close()
                if self.held.get(held.code) is held:
                    del self.held[held.code]
                self.metrics.rooms.set(len(self.held))

    @contextlib.asynccontextmanager
    async def player_lock(self, player_id: str) -> AsyncIterator[None]:
        """Held while a player's connection comes or goes, so that a resume and the drop
        it follows never interleave (one lock per player, kept while in use)."""
        async with self._player_locks.hold(player_id):
            yield

    def player_lock_count(self) -> int:
        """How many players' connections are coming or going now."""
        return len(self._player_locks)

    async def disconnected(self, session: Session) -> None:
        """A connection closed: spectators leave, players may resume within the grace period."""
        self.guard.unbind(session)
        await session.settled()  # its last move is acked (or refused) first
        player_id = session.player_id
        if player_id is None:
            return
        async with self.player_lock(player_id):
            await self._gone(session, player_id)

    async def _gone(self, session: Session, player_id: str) -> None:
        if self.sessions.get(player_id) is session:
            del self.sessions[player_id]
        code, role, link = session.room, session.role, session.link
        if code is None:
            return
        try:
            await self._drop(code, player_id, role, link)
        finally:
            await self.detach(session)

    async def _drop(self, code: str, player_id: str, role: Role | None, link: int) -> bool:
        """A member's connection is gone: a spectator leaves, a player is dropped and may
        resume within the grace period; whether the room took it.

        With that connection's ``link``: if the member came back meanwhile (on another node,
        while this one drains, say), the room stays as that connection made it."""
        try:
            if role is Role.SPECTATOR:
                outcome = await self.backend.update_room(
                    code, lambda r: rooms.leave(r, player_id, self.now_ms(), link=link)
                )
                if outcome.room is None or player_id not in outcome.room.members:
                    await self.backend.forget_player_room(player_id, code)
            else:
                outcome = await self.backend.update_room(
                    code,
                    lambda r: rooms.set_connected(r, player_id, False, self.now_ms(), link=link),
                )
                self.tick_later(code, self.config.resume_grace_s + 0.05)
            await self.fanout.publish(code, outcome)
        except (ProtocolError, BackendUnavailable):
            return False
        return True

    # -- timers --------------------------------------------------------------------------

    def arm(self, held: LocalRoom) -> None:
        """Set the room's timer for its next deadline (a countdown, the time limit, a
        dropped member's grace), unless it is set for it already."""
        room = held.record
        when = None if held.closed else rooms.next_deadline(room, self.grace_ms)
        if when is not None and held.timer is not None and held.armed == when:
            return  # most updates (a move's progress) leave the deadline as it was
        if held.timer is not None:
            held.timer.cancel()
        held.timer = held.armed = None
        if when is None:
            return
        delay = self._until(room, when)
        held.timer = asyncio.get_running_loop().call_later(delay, self._fire, held)
        held.armed = when

    def _until(self, room: Room, when: int) -> float:
        """Seconds until the room is ticked for its deadline ``when`` (ms)."""
        delay = max(0.0, (when - self.now_ms()) / 1000)
        if room.state is RoomState.RACING:
            # Every node reports its players' last standings within the progress interval,
            # however long a busy node has made it (moves stop at the deadline), so the
            # race is closed only once they are in.
            delay += self.pacer.longest + 0.1
        return delay

    def _fire(self, held: LocalRoom) -> None:
        held.timer = held.armed = None
        self.spawn(self.tick(held.code))

    def tick_later(self, code: str, delay: float) -> None:
        """Tick the room after ``delay`` seconds, unless the node stops first."""

        def fire() -> None:
            self._later.discard(handle)
            self.spawn(self.tick(code))

        handle = asyncio.get_running_loop().call_later(delay, fire)
        self._later.add(handle)

    async def tick(self, code: str) -> None:
        """Let time pass for the room; a room held nowhere here is ticked again later."""
        held = self.held.get(code)
        if held is not None:
            self.moves.keep_boards_now(held)  # a deadline may end the race
        try:
            await self.commands.settle(code, due_only=True)  # with every move logged
            outcome = await self.backend.update_room(
                code, lambda r: rooms.tick(r, self.now_ms(), self.grace_ms)
            )
        except ProtocolError:
            return
        except BackendUnavailable:
            self.tick_later(code, 1.0)
            return
        await self.fanout.publish(code, outcome)
        room = outcome.room
        if room is not None and code not in self.held:
            # No member of it here: its timer is this (dropped players' grace, say).
            when = rooms.next_deadline(room, self.grace_ms)
            if when is not None:
                self.tick_later(code, self._until(room, when) + 0.05)
