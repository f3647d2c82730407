"""Room events out: published through the backend, sent on to this node's members.

Each room this node holds has a queue of its events and a task that sends them out in
order (:meth:`FanOut.worker`); a progress event with nothing queued before it goes out at
once, with no task switch. Players get progress without boards; spectators get the
boards too as the room's spectator setting allows: as they are (``live``), none until the
race is over (``after``), or each one ``spectator_delay`` seconds late (``delayed``: the
node holds back the boards it hears, and sends them in ``boards`` frames as they come
due). The events that change who is in the room or what state it is in make the node
read the room's record again first.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import structlog

from ..engine import player_view
from ..protocol import Boards, RaceOver, RaceStarted, RoomSnapshot
from .backends import BackendUnavailable
from .daily import entry_from_log, pace_flag, unranked_reason
from .races import RACE_FORMAT
from .room import Outcome, Role, Room, RoomState, SpectatorMode, race_over

if TYPE_CHECKING:
    from .local_room import LocalRoom
    from .node import Node
    from .session import Session

__all__ = ["STATE_EVENTS", "FanOut"]

log = structlog.get_logger("solrace.server")

STATE_EVENTS = frozenset({"members", "countdown", "race_started", "race_over"})
_STARTS = frozenset({"countdown", "race_started"})
"""The events that start a race's clock: a members event held back does not delay them."""
_RESYNC: dict[str, Any] = {"type": "resync"}
"""Queued (by identity) when the room's events may have been lost: send fresh snapshots."""
FAN_OUT_RETRY_S = 0.05
"""The first wait before an event whose fan-out found the store unavailable is tried again."""
FAN_OUT_RETRY_MAX_S = 2.0
"""The longest wait between two tries of such an event."""


class _NotYet(Exception):
    """The store did not answer while ``event`` went out: send it again later."""

    def __init__(self, event: dict[str, Any]) -> None:
        super().__init__(event.get("type"))
        self.event = event


class FanOut:
    """Publishing a room's events, and sending those of held rooms to their members."""

    def __init__(self, node: Node) -> None:
        self.node = node

    # -- out through the backend ---------------------------------------------------------

    async def publish(self, code: str, outcome: Outcome, *, published: bool = False) -> None:
        """Keep a command's new record, record a finished race, publish its events (unless
        the backend ``published`` them with the write)."""
        node = self.node
        held = node.held.get(code)
        if outcome.room is not None and held is not None and not held.closed:
            held.keep(outcome.room)
            node.arm(held)
        for event in outcome.events:
            if isinstance(event, RaceStarted):
                node.metrics.races.inc()
                if outcome.room is not None and outcome.room.settings.ghost is not None:
                    node.spawn(node.ghosts.race(code, outcome.room))
            if isinstance(event, RaceOver):
                record = outcome.room or (held.record if held is not None else None)
                await self._record_results(code, event, record)
            if not published:
                await node.backend.publish(code, event.to_wire())
        if outcome.room is None:
            await node.backend.drop_room_logs(code)

    async def record_missed(self, room: Room, noted: dict[tuple[str, str], set[str]]) -> bool:
        """Record a finished race's results that the node stopped before recording (it
        was stopped between the race's end and their write); whether it did.

        A race's results are recorded when their ``race_over`` is published, a write after
        the one that ended the race: a node killed between the two left a daily attempt
        without its entry (the next start was attempt 2, unranked, and attempt 1 was on no
        board) and a race without its results. ``noted`` caches the daily rooms noted and
        not yet recorded, by date and game: a daily room is dropped from them once its
        entry is written."""
        if room.state is not RoomState.FINISHED or not room.results or room.seed is None:
            return False
        backend = self.node.backend
        daily = room.settings.daily
        if daily is None:
            if await backend.load_results(room.code, room.race) is not None:
                return False
        else:
            key = (daily, room.settings.variant)
            if key not in noted:
                noted[key] = set(await backend.daily_rooms(*key))
            if room.code not in noted[key]:
                return False
        await self._record_results(room.code, race_over(room, room.seq), room)
        log.warning("results_recorded_late", room=room.code, race=room.race, daily=daily)
        return True

    async def _record_results(self, code: str, event: RaceOver, room: Room | None) -> None:
        """Keep a race's results; score a daily attempt from its timed move log.

        The attempt is ranked if it is an account's first of the day, from the account's
        second day (``daily_account_age_days``); a bot's goes on the bots' board; a
        person's ranked attempt at a pace no person keeps is flagged for review.
        """
        node = self.node
        backend = node.backend
        config = node.config
        people = [r["player_id"] for r in event.results if not r.get("ghost")]
        if event.daily is None:
            assert event.seed is not None
            await backend.save_results(code, event.race, event.variant, event.seed, event.results)
            await self._archive(code, event, room)
            await backend.drop_race_logs(code, event.race, people)  # copied for replays
            return
        seed = (await node.deals.daily(event.daily, event.variant)).seed
        board = "bots" if event.bot else "people"
        attempt = event.attempt or 1
        for result in event.results:
            player_id = result["player_id"]
            timed = await backend.read_timed_moves(code, event.race, player_id)
            unranked = unranked_reason(
                attempt=attempt,
                date=event.daily,
                account_created_ms=await backend.account_created_ms(player_id),
                account_age_days=config.daily_account_age_days,
            )
            entry = entry_from_log(
                date=event.daily,
                variant=event.variant,
                seed=seed,
                player_id=player_id,
                name=result["name"],
                attempt=attempt,
                log=timed,
                race_status=result["status"],
                time_ms=result["time_ms"],
                board=board,
                unranked=unranked,
            )
            if entry.ranked and board == "people":
                flag = pace_flag(
                    entry.times,
                    min_moves=config.daily_flag_min_moves,
                    median_ms=config.daily_flag_median_ms,
                    moves=entry.log,
                )
                entry = replace(entry, flag=flag)
            # As kept: the address rules' verdict, kept when the attempt started, is in it.
            entry = await backend.save_daily_entry(entry)
            log.info(
                "daily_recorded",
                date=event.daily,
                variant=event.variant,
                status=entry.status,
                banked=entry.banked,
                ranked=entry.ranked,
                board=board,
                unranked=entry.unranked,
                flag=entry.flag,
            )
        await backend.drop_daily_rooms(event.daily, event.variant, [code])
        await backend.drop_race_logs(code, event.race, people)  # the entries hold them

    # -- in from the backend -------------------------------------------------------------

    def on_event(self, code: str, event: dict[str, Any]) -> None:
        """An event of a room this node subscribes to."""
        held = self.node.held.get(code)
        if held is None or held.closed:
            return
        if event["type"] == "progress" and not held.events and not held.fanning:
            # Nothing of the room's waits to go out before it, and a progress event
            # needs no await: it goes out now, without a pass through the room's task.
            try:
                self._progress(held, event)
            except Exception:
                log.exception("fan_out_failed", kind="progress", room=code)
            return
        held.put(event)

    def on_resync(self, codes: list[str]) -> None:
        """The events of these rooms may have been lost: send their members snapshots."""
        for code in codes:
            self.on_event(code, _RESYNC)

    async def worker(self, held: LocalRoom) -> None:
        """The room's task: send its queued events out, one at a time, in order.

        An event whose fan-out needs the store (a state event reads the room's record
        first) and finds it unavailable goes out once the store answers: it is tried
        again after ``FAN_OUT_RETRY_S``, doubling up to ``FAN_OUT_RETRY_MAX_S``, and the
        room's later events wait behind it. Dropped, a lost ``members`` event left a
        lobby without its last joiner, a lost ``race_started`` a player without a board.
        """
        structlog.contextvars.bind_contextvars(room=held.code)
        wait = 0.0
        while not held.closed:
            if not held.events:
                held.wake.clear()
                await held.wake.wait()
                continue
            event = held.events.popleft()
            held.fanning = True
            try:
                await self._fan_out(held, event)
            except _NotYet as error:
                held.events.appendleft(error.event)
                if not wait:  # once an event, not at every try of a long outage
                    log.warning(
                        "fan_out_delayed", kind=error.event.get("type"), error=str(error.__cause__)
                    )
                wait = min(FAN_OUT_RETRY_MAX_S, max(FAN_OUT_RETRY_S, 2 * wait))
                await asyncio.sleep(wait)
            except Exception:
                log.exception("fan_out_failed", kind=event.get("type"))
            else:
                wait = 0.0
            finally:
                held.fanning = False

    async def _fan_out(self, held: LocalRoom, event: dict[str, Any]) -> None:
        """Send one event to the room's members here; raise :class:`_NotYet` with the
        event to send again if the store does not answer."""
        if event["type"] == "members":
            event = await self._coalesced(held, event)
        try:
            await self._send_out(held, event)
        except BackendUnavailable as error:
            raise _NotYet(event) from error

    async def _send_out(self, held: LocalRoom, event: dict[str, Any]) -> None:
        if event is _RESYNC:
            await self._resync(held)
            return
        node = self.node
        kind = event["type"]
        if kind in STATE_EVENTS:
            room = await node.backend.load_room(held.code)
            if room is None:  # the room is gone (closed): its last event, and it lets go
                self._deliver(held, event, event)
                for session in list(held.members):
                    await node.detach(session)
                    if session.player_id is not None:
                        await node.backend.forget_player_room(session.player_id, held.code)
                return
            room = held.keep(room)
            node.arm(held)
            if kind == "race_started":
                await self._deliver_start(held, room, event)
                return
            if kind == "race_over":
                await node.moves.save_boards(held)  # the last boards, for later spectators
                boards = await self._final_boards(held, room, int(event["race"]))
                held.end_race(int(event["race"]))  # its results are recorded
                self._deliver(held, event, event if boards is None else {**event, "boards": boards})
                return
            if kind == "members":
                self._tell_removed(held, event)
                await self._drop_gone(held, room, event)
        if kind == "progress":
            self._progress(held, event)
            return
        self._deliver(held, event, event)

    async def _coalesced(self, held: LocalRoom, event: dict[str, Any]) -> dict[str, Any]:
        """The members event to send now: this one, or the last of those queued behind it.

        A room sends its members at most once per ``members_interval_s``: one that comes
        sooner waits (the room's later events wait behind it, so that they keep their
        order). Then the members events queued behind it, up to the first event that is
        neither members nor progress, are folded into the last of them, which says
        ``since``: the first ``seq`` it stands for (each members event in between made out
        of date by it). The progress events among them go out first, each saying the same
        ``since``: a client counts the members events folded as coming, not lost. Without
        the fold past progress, a member who dropped and came back in a loop queued a
        members event a drop, each waiting its interval, and every event of the room
        waited behind them, seconds more each second.

        It does not wait when a race's start is queued behind it (its countdown, or the
        deal with countdown 0): the race clock runs from the start, and a host's start
        right after a join would cost every player here that wait. A room starts a race
        at most once per race, so its members still go out about once an interval.
        """
        loop = asyncio.get_running_loop()
        until = held.members_at + self.node.config.budgets.members_interval_s
        while not any(e.get("type") in _STARTS for e in held.events):
            wait = until - loop.time()
            if wait <= 0:
                break
            held.wake.clear()  # set by the next event queued: it may be the start
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await held.wake.wait()
        first = event
        since = first.get("since", first["seq"])  # one folded already, tried again
        removed: dict[str, str] = dict(first.get("removed") or {})
        queued = held.events
        last = -1  # the last members event in the run of members and progress events
        for index, later in enumerate(queued):
            kind = later.get("type")
            if kind == "members":
                last = index
            elif kind != "progress":
                break
        for _ in range(last + 1):
            later = queued.popleft()
            if later.get("type") == "members":
                event = later
                removed.update(event.get("removed") or {})
            else:
                self._progress(held, {**later, "since": since})
        held.members_at = loop.time()
        if event is not first:
            # Those an event folded into this one put out, and still out, are told here.
            present = {m["player_id"] for m in event["members"]}
            removed = {p: why for p, why in removed.items() if p not in present}
            event = {**event, "since": since}
            event.pop("removed", None)
            if removed:
                event["removed"] = removed
        return event

    def _tell_removed(self, held: LocalRoom, event: dict[str, Any]) -> None:
        """Send the members event to the local members it puts out (they then go)."""
        removed = event.get("removed")
        if not removed:
            return
        for session in held.members:
            if session.player_id in removed:
                session.push(session.codec.dumps(event))

    async def _final_boards(
        self, held: LocalRoom, room: Room, race: int
    ) -> dict[str, dict[str, Any]] | None:
        """Every player's last board of the race just over, for the spectators here (None
        if there are none, or the room has moved on to another race)."""
        if not any(s.role is Role.SPECTATOR for s in held.members):
            return None
        if room.race != race or room.state is not RoomState.FINISHED:
            return None
        try:
            return await self.node.commands.boards(held, room)
        except BackendUnavailable:
            return None  # a snapshot brings them

    async def _archive(self, code: str, event: RaceOver, room: Room | None) -> None:
        """Keep the whole race for its replay, ``race_retention_days``: every player's
        timed moves, the deal and the results (docs/protocol.md, "Races kept")."""
        node = self.node
        if node.config.race_retention_days <= 0:
            return
        players: dict[str, Any] = {}
        for result in event.results:
            if result.get("ghost"):
                continue  # its run is kept where it came from (the room's ``ghost``)
            timed = await node.backend.read_timed_moves(code, event.race, result["player_id"])
            players[result["player_id"]] = {
                "name": result["name"],
                "moves": [move for move, _ in timed],
                "times": [at for _, at in timed],
            }
        settings = room.settings if room is not None else None
        now = node.now_ms()
        line = None
        if event.par is not None and event.seed is not None:
            line = await node.backend.certified_line(event.variant, event.seed, now)
        record = {
            "format": RACE_FORMAT,
            "room": code,
            "race": event.race,
            "variant": event.variant,
            "seed": event.seed,
            "par": event.par,
            "par_line": line.split() if line else None,
            "ghost": settings.ghost if settings is not None else None,
            "undo": settings.undo if settings is not None else True,
            "spectators": settings.spectators.value if settings is not None else "off",
            "ended_ms": now,
            "players": players,
            "results": event.results,
        }
        keep_ms = int(node.config.race_retention_days * 86_400_000)
        await node.backend.save_race(code, event.race, record, now, keep_ms)

    async def _drop_gone(self, held: LocalRoom, room: Room, event: dict[str, Any]) -> None:
        """Local sessions whose member the room no longer has are no longer in it.

        A record read ahead of the event (the room has changed since, and its later events
        are on their way here) may lack a member whom a later event puts out and tells
        why (``removed``): that member stays until then, unless this event leaves them out
        too. Dropped now, they would never hear why: with no member left here, the node
        lets go of the room's channel before that event comes (a spectator on another
        node than the host, put out as the host turned spectators off, was left so).
        """
        later = room.seq > int(event.get("seq", room.seq))
        listed = {m["player_id"] for m in event.get("members", ())} if later else set()
        for session in list(held.members):
            if session.player_id not in room.members and session.player_id not in listed:
                await self.node.detach(session)
                if session.player_id is not None:
                    await self.node.backend.forget_player_room(session.player_id, held.code)

    def _progress(self, held: LocalRoom, event: dict[str, Any]) -> None:
        """Send a progress event: the players' boards to spectators only, and only in a
        ``live`` room (a ``delayed`` one's are held back here, and sent when due)."""
        if any("view" in p for p in event["players"]):
            bare = [
                {k: v for k, v in entry.items() if k != "view"} if "view" in entry else entry
                for entry in event["players"]
            ]
            stripped = {**event, "players": bare}
            record = held.record
            if record.settings.spectators is SpectatorMode.LIVE:
                self._deliver(held, stripped, event)
                return
            delayed = held.delay(record, self._step_ms())
            if delayed is not None:
                now = self.node.now_ms()
                for entry in event["players"]:
                    if "view" in entry:
                        delayed.hear(entry["player_id"], entry["view"], now)
            self._deliver(held, stripped, stripped)
            if delayed is not None:
                self.show_due(held)
            return
        self._deliver(held, event, event)

    def _step_ms(self) -> int:
        return int(self.node.config.progress_interval_s * 1000)

    def hold_back(self, held: LocalRoom, boards: dict[str, dict[str, Any]]) -> None:
        """Hold back ``boards`` (as they are now) for the spectators of a ``delayed`` room."""
        delayed = held.delay(held.record, self._step_ms())
        if delayed is None:
            return
        now = self.node.now_ms()
        for player_id, board in boards.items():
            delayed.hear(player_id, board, now)
        self.show_due(held)

    def show_due(self, held: LocalRoom) -> None:
        """Send the local spectators the held-back boards now due, and set the timer for
        the next (every node that hears boards takes them, so none waits for ever)."""
        if held.delay_timer is not None:
            held.delay_timer.cancel()
            held.delay_timer = None
        delayed = held.delayed
        if delayed is None or held.closed or delayed.race != held.record.race:
            return
        now = self.node.now_ms()
        due = delayed.due(now)
        if due:
            frames: dict[int, bytes | str] = {}
            shown = self.masked(held, held.record, due)
            message = Boards(held.code, delayed.race, delayed.delay_ms // 1000, shown)
            for session in held.members:
                if session.role is Role.SPECTATOR:
                    key = id(type(session.codec))
                    frame = frames.get(key)
                    if frame is None:
                        frame = frames[key] = session.codec.encode(message)
                    session.push(frame)
        when = delayed.next_due_ms()
        if when is not None:
            held.delay_timer = asyncio.get_running_loop().call_later(
                max(0.0, (when - now) / 1000), self.show_due, held
            )

    def masked(
        self, held: LocalRoom, room: Room, boards: dict[str, dict[str, Any]]
    ) -> dict[str, dict[str, Any]]:
        """A ``delayed`` room's boards as its spectators may see them while the race runs:
        each card face up only once every player still racing has had it face up (see
        :class:`DelayedBoards`), for a racer may be watching from a second connection."""
        delayed = held.delay(room, self._step_ms())
        if delayed is None:
            return boards
        undo = room.settings.undo
        racing = [
            player_id
            for player_id, standing in room.players.items()
            if standing.ghost is None and not standing.over(undo)
        ]
        return delayed.hidden_from(racing, boards)

    async def _resync(self, held: LocalRoom) -> None:
        """Reload the room, re-arm its timer and send every local member a snapshot."""
        node = self.node
        room = await node.backend.load_room(held.code)
        if room is None:
            log.warning("resync_room_gone")
            return
        room = held.keep(room)
        node.arm(held)
        for session in list(held.members):
            if session.player_id not in room.members:
                await node.detach(session)
                if session.player_id is not None:
                    await node.backend.forget_player_room(session.player_id, held.code)
                continue
            # After the session's request in flight, if any (a move applied, not yet
            # logged), in a task of its own: a slow socket must not hold the room's events.
            node.spawn(self._push_snapshot(session, held.code))
        log.info("resynced", seq=room.seq)

    async def _push_snapshot(self, session: Session, code: str) -> None:
        async with session.lock:
            if session.room != code:
                return
            try:
                snapshot = await self.node.commands.snapshot(session)
            except BackendUnavailable as error:
                log.warning("resync_failed", room=code, error=str(error))
                return
            except Exception as error:  # the room is gone, say
                log.warning("resync_failed", room=code, error=str(error))
                return
            session.push(session.codec.encode(RoomSnapshot(None, snapshot)))

    def _deliver(
        self, held: LocalRoom, to_players: dict[str, Any], to_spectators: dict[str, Any]
    ) -> None:
        held.sent = max(held.sent, to_players.get("seq", 0))
        frames: dict[tuple[int, bool], bytes | str] = {}
        for session in held.members:
            spectator = session.role is Role.SPECTATOR
            key = (id(type(session.codec)), spectator)
            frame = frames.get(key)
            if frame is None:
                frame = frames[key] = session.codec.dumps(
                    to_spectators if spectator else to_players
                )
            session.push(frame)

    async def _deliver_start(self, held: LocalRoom, room: Room, event: dict[str, Any]) -> None:
        if room.seed is None or room.race != event["race"]:
            # The room moved on before this event went out (its race ended and a rematch
            # reset it): the members hear it bare, in order, and the race_over queued
            # behind it says how that race ended.
            self._deliver(held, event, event)
            return
        held.sent = max(held.sent, event["seq"])
        fields = {k: v for k, v in event.items() if k != "type"}
        boards: dict[str, dict[str, Any]] = {}
        for session in list(held.members):
            player_id = session.player_id
            if session.role is Role.PLAYER and player_id is not None and player_id in room.players:
                game = await self.node.moves.game(held, room, player_id)
                message = replace(
                    RaceStarted(**fields), view=player_view(game, legal=True), rev=game.moves
                )
            elif room.settings.spectators is SpectatorMode.AFTER:
                message = RaceStarted(**fields)  # no board until the race is over
            else:
                if not boards:
                    deal = held.deal_board(room)
                    boards = {p: deal for p in room.players}
                message = replace(RaceStarted(**fields), boards=boards)
            session.push(session.codec.encode(message))
