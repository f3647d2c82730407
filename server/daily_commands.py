"""The daily challenge's requests: start today's attempt, and read a day's board."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from ..protocol import (
    ErrorCode,
    GetLeaderboard,
    Leaderboard,
    LeaveRoom,
    ProtocolError,
    RoomSnapshot,
    StartDaily,
)
from . import room as rooms
from .daily import (
    address_counted,
    address_tag,
    address_verdict,
    first_ranked_date,
    unranked_reason,
    utc_date,
)
from .leaderboard import day_board, player_history
from .room import Outcome, Role, RoomState, Settings, SpectatorMode

if TYPE_CHECKING:
    from .node import Node
    from .session import Session

__all__ = ["DailyCommands"]

log = structlog.get_logger("solrace.server")

START_HOLD_MS = 120_000
"""How long a daily start holds the account's right to start one at most (a start that
waits for the day's deal to be chosen takes a while; a node that died holding it)."""


class DailyCommands:
    """``daily`` and ``get_leaderboard``."""

    def __init__(self, node: Node) -> None:
        self.node = node

    async def start(self, session: Session, req: StartDaily) -> None:
        """Start today's attempt at the daily deal: a solo race, undo off, countdown 0.

        Only an account plays the daily deal: a guest is refused (``account_required``).
        An attempt that may be ranked is judged by the address rules as it starts
        (:meth:`_judge`).
        """
        node = self.node
        commands = node.commands
        player_id = node.identified(session)
        rooms.check_variant(req.variant)
        created_ms = await node.backend.account_created_ms(player_id)
        if created_ms is None:
            raise ProtocolError(
                ErrorCode.ACCOUNT_REQUIRED,
                "the daily deal is played by accounts: claim this identity with a password",
            )
        if session.room is not None:
            current = node.record(session.room)
            if (
                current is not None
                and current.settings.daily is not None
                and current.settings.variant == req.variant
                and current.state is RoomState.RACING
            ):
                await session.reply(RoomSnapshot(req.id, await commands.snapshot(session)))
                return
            if (
                current is None
                or current.settings.daily is None
                or current.state is not RoomState.FINISHED
            ):
                raise ProtocolError(ErrorCode.ALREADY_IN_ROOM, "leave your room first")
            # A finished daily attempt's room is left for the player.
            await commands.leave_room(session, LeaveRoom(0), reply=False)
        commands.check_capacity(session, None)
        now = node.now_ms()
        await node.guard.spend(session, node.guard.dailies + node.guard.rooms, now)
        # One start of an account's attempt at a time, on every node, and none while an
        # attempt of the account is still played: the same account connected to two nodes
        # (or twice to one) played attempt 2 beside attempt 1, to scout the ranked one's
        # deal, since each connection was in no room when it asked.
        backend = node.backend
        hold = await backend.claim_start(player_id, START_HOLD_MS)
        if hold is None:
            raise ProtocolError(
                ErrorCode.ALREADY_IN_ROOM,
                "a daily attempt of yours is starting on another connection",
            )
        try:
            await self._check_none_running(player_id)
            await self._start(session, req, player_id, created_ms, now)
        finally:
            await backend.release_start(player_id, hold)

    async def _check_none_running(self, player_id: str) -> None:
        """Refuse a start while another connection of the account plays an attempt (a
        daily room's one player: its race is on while the player's game is)."""
        commands = self.node.commands
        room = await commands.racing_room(player_id)  # the attempt's record read if need be
        if room is not None and room.settings.daily is None:
            # The room pointer names a race of another room, made on another connection
            # (another node) as this attempt started: the attempt's own record names it.
            room = await commands.racing_in(
                await self.node.backend.daily_room(player_id), player_id
            )
        if room is not None and room.settings.daily is not None:
            raise ProtocolError(
                ErrorCode.ALREADY_IN_ROOM,
                "your daily attempt goes on on another connection: play it there, or resign it",
            )

    async def _start(
        self, session: Session, req: StartDaily, player_id: str, created_ms: int, now: int
    ) -> None:
        node = self.node
        commands = node.commands
        date = utc_date(now)
        attempt = await node.backend.daily_attempt(date, req.variant, player_id)
        may_rank = (
            unranked_reason(
                attempt=attempt,
                date=date,
                account_created_ms=created_ms,
                account_age_days=node.config.daily_account_age_days,
            )
            is None
        )
        await self._judge(session, date, req.variant, player_id, may_rank=may_rank)
        settings = Settings(
            req.variant,
            max_players=1,
            spectators=SpectatorMode.OFF,  # no one watches a daily attempt
            undo=False,
            time_limit=node.config.daily_time_limit_s,
            countdown=0,
            daily=date,
            attempt=attempt,
            bot=session.bot,
        )
        created = await commands.store_new_room(settings, player_id, session.name)
        assert created.room is not None
        code = created.room.code
        # Noted before the race starts: the day's seed waits for every attempt noted.
        await node.backend.add_daily_room(date, req.variant, code)
        await node.backend.set_daily_room(player_id, code)  # before the start's hold goes
        deal = await node.deals.daily(date, req.variant)
        started = await node.backend.update_room(
            code, lambda r: rooms.start(r, player_id, now, deal.seed, deal.par)
        )
        assert started.room is not None
        await node.attach(session, started.room, Role.PLAYER)
        await node.backend.set_player_room(player_id, code)
        await session.reply(RoomSnapshot(req.id, await commands.snapshot(session)))
        await node.fanout.publish(code, Outcome(started.room, created.events + started.events))
        log.info(
            "daily_started",
            room=code,
            date=date,
            variant=req.variant,
            attempt=attempt,
            bot=session.bot,
        )

    async def _overlapped(self, date: str, variant: str, others: list[str]) -> None:
        """Flag for review the attempts still running of the accounts that started this
        deal before from the same address: one started now may be a scout that shows the
        deal to the one that started first and waits (only a later start was flagged)."""
        backend = self.node.backend
        for other in others:
            code = await backend.player_room(other)
            room = None if code is None else await backend.load_room(code)
            if (
                room is None
                or room.settings.daily != date
                or room.settings.variant != variant
                or room.state not in (RoomState.COUNTDOWN, RoomState.RACING)
                or other not in room.members
            ):
                continue
            verdict = await backend.daily_verdict(date, variant, other)
            if verdict is not None and any(verdict):
                continue  # not ranked anyway, or flagged already
            flag = "address: another account started this deal from the same address while it ran"
            await backend.keep_daily_verdict(date, variant, other, None, flag)
            log.info("daily_address_rule", date=date, variant=variant, flag=flag, player=other)

    async def _judge(
        self, session: Session, date: str, variant: str, player_id: str, *, may_rank: bool
    ) -> None:
        """The address rules, as an attempt starts: past ``daily_ranked_per_address``
        attempts that may be ranked from the client's address (an IPv6 one by its /64),
        the attempt is not ranked (``address_limit``); one started after another
        account's attempt at the deal from the address is flagged for review (a scout
        may have shown the deal). The verdict is kept for the entry, and the accounts that
        started before from the address are logged for the operator who reviews it (the
        flag, which the player sees, names none). Every attempt counts as one started
        before, ranked or not; clients on the node's own machine are not counted."""
        node = self.node
        cap = node.config.daily_ranked_per_address
        address = session.address  # a client_key already (an IPv6 address by its /64)
        if cap <= 0 or not address_counted(address):
            return
        tag = address_tag(node.secret, address)
        counted, others = await node.backend.note_daily_start(
            date, variant, player_id, tag, ranked=may_rank
        )
        await self._overlapped(date, variant, others)
        if not may_rank:
            return
        unranked, flag = address_verdict(ranked=counted, others=len(others), cap=cap)
        if session.bot:
            flag = None  # a declared bot is never flagged: it has the bots' board
        if unranked is None and flag is None:
            return
        await node.backend.keep_daily_verdict(date, variant, player_id, unranked, flag)
        log.info(
            "daily_address_rule",
            date=date,
            variant=variant,
            unranked=unranked,
            flag=flag,
            ranked_from_address=counted,
            started_before=others,
        )

    async def leaderboard(self, session: Session, req: GetLeaderboard) -> None:
        """A day's board, with the asking player's rank, history and streaks."""
        node = self.node
        player_id = node.identified(session)
        board = await day_board(
            node.backend,
            node.deals.daily,
            req.variant,
            req.date,
            now_ms=node.now_ms(),
            time_limit_s=node.config.daily_time_limit_s,
            limit=req.limit,
            player_id=player_id,
            board=req.board,
        )
        board.update(await player_history(node.backend, player_id, now_ms=node.now_ms()))
        # An account's first day that ranks, so that a new account is told before it plays.
        created = await node.backend.account_created_ms(player_id)
        age = node.config.daily_account_age_days
        board["ranked_from"] = None if created is None else first_ranked_date(created, age)
        await session.reply(Leaderboard(req.id, board))
