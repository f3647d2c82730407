"""The backend interface: shared room records, move logs, players, results and pub/sub.

Two implementations pass the same tests: :mod:`.embedded` (one process, SQLite) and,
for several nodes, a Redis one.
"""

from __future__ import annotations

import asyncio
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from ..daily import Entry
from ..room import Outcome, Room

LOGIN_ADDRESSES = 8
"""Addresses an account's password was given right from that the store keeps for it."""

__all__ = [
    "LOGIN_ADDRESSES",
    "AccountRecord",
    "Backend",
    "BackendUnavailable",
    "EventHandler",
    "ResyncHandler",
    "RoomUpdate",
]

EventHandler = Callable[[str, dict[str, Any]], None]
"""Called with a room code and an event's plain data, in publishing order."""

ResyncHandler = Callable[[list[str]], None]
"""Called with the codes of subscribed rooms whose events may have been lost."""

RoomUpdate = Callable[[Room], Outcome]
"""A pure change of a room record; it may raise ProtocolError to refuse."""


class BackendUnavailable(Exception):
    """The backend cannot be reached now; nothing was written."""


COMMIT_WINDOW_S = 0.004
"""How long the first write of a group waits for others before the group goes to the
store (seconds): one SQLite commit on the embedded backend, one round trip to Redis."""
MAX_COMMIT_WINDOW_S = 1.0
"""The longest commit window a node may be given (seconds)."""


@dataclass(frozen=True, slots=True)
class AccountRecord:
    """An identity that is an account: its name, password hash and when it was made (ms)."""

    player_id: str
    name: str
    password_hash: str
    created_ms: int


class Backend(ABC):
    """Where nodes keep what they share."""

    name: str = "backend"
    in_process: bool = False
    """Whether the room records, move logs and pub/sub live in this process, so that the
    ``*_now`` methods work: a node then takes a move from its socket without awaiting."""

    def update_room_now(self, code: str, change: RoomUpdate, *, lazily: bool = False) -> Outcome:
        """:meth:`update_room` at once (only where :attr:`in_process`); ``lazily``: a
        report of standings alone, which the node can work out again from the move logs,
        so that the store may keep the change later."""
        raise NotImplementedError

    def append_move_now(
        self, code: str, race: int, player_id: str, rev: int, move: str, at_ms: int = 0
    ) -> None:
        """:meth:`append_move` at once (only where :attr:`in_process`)."""
        raise NotImplementedError

    def publish_now(self, code: str, event: dict[str, Any]) -> None:
        """:meth:`publish` at once (only where :attr:`in_process`)."""
        raise NotImplementedError

    def save_boards_now(self, code: str, race: int, views: dict[str, dict[str, Any]]) -> None:
        """:meth:`save_boards` at once (only where :attr:`in_process`)."""
        raise NotImplementedError

    def claim(self) -> None:
        """Take the storage for this node alone (only where :attr:`in_process`); raise
        BackendUnavailable if another node has it."""
        raise NotImplementedError

    async def room_codes(self, limit: int | None = None) -> list[str]:
        """The rooms' codes, at most ``limit`` of them (every one where :attr:`in_process`:
        its node recovers them all after a restart)."""
        raise NotImplementedError

    last_alive_ms: int | None = None
    """Where :attr:`in_process`: when the node that used this storage before was last
    known to run (ms), so that a restart knows how long it was down; None if unknown."""

    def note_alive(self, now_ms: int) -> None:  # noqa: B027 (an optional hook)
        """Record that the node runs at ``now_ms`` (where :attr:`in_process`)."""

    def flush_writes(self) -> None:  # noqa: B027 (an optional hook)
        """Make durable every write taken so far; called before any frame leaves the node.

        A backend that commits writes in groups (the embedded one: one transaction per
        commit window) commits the open group here, so that no ack, snapshot or event
        ever reaches a client before what it tells of is on disk. Others do nothing.
        """

    def draining(self) -> None:  # noqa: B027 (an optional hook)
        """The node stops: from now on, writes go to the store without waiting for a
        window (a node with thousands of rooms reports each in turn as it stops)."""

    def commit_due_in(self) -> float:
        """Seconds until the open group of writes is committed (0: none waits for it).

        The server holds the frames it pushes (acks, room events) until then, so that
        one commit serves every move of the group; a backend that does not commit in
        groups never holds them.
        """
        return 0.0

    def set_failure_handler(self, handler: Callable[[BaseException], None] | None) -> None:  # noqa: B027
        """Be told if writes already taken are lost (a backend that commits in groups); the
        server then lets no frame out any more and stops. By default that never happens."""

    async def start(self) -> None:  # noqa: B027 (an optional hook)
        """Connect and prepare storage."""

    async def close(self) -> None:  # noqa: B027 (an optional hook)
        """Flush and disconnect."""

    @abstractmethod
    async def ready(self) -> bool:
        """Whether the backend answers now."""

    @abstractmethod
    async def secret(self) -> bytes:
        """The key that signs player tokens, the same on every node."""

    async def node_id(self) -> str:
        """This node's lasting id (by default a new one each run)."""
        node_id: str | None = getattr(self, "_fresh_node_id", None)
        if node_id is None:
            node_id = f"n-{secrets.token_hex(4)}"
            self._fresh_node_id = node_id
        return node_id

    # budgets ----------------------------------------------------------------------------

    @abstractmethod
    async def spend(
        self, budgets: list[tuple[str, int, float]], now_ms: int, *, force: bool = False
    ) -> tuple[int, float] | None:
        """Spend one of each budget ``(key, count, period_s)``, all or none.

        A budget allows ``count`` at once, then one more each ``period_s / count`` (a
        generic cell rate: the key keeps when its next one is theoretically due). Returns
        None when all are spent, else the index of the first one spent out and the
        seconds until it would be taken. With ``force`` all are spent even past their
        end, and None is returned.
        """

    # players ----------------------------------------------------------------------------

    @abstractmethod
    async def save_player(self, player_id: str, name: str) -> None:
        """Remember a player's display name."""

    @abstractmethod
    async def player(self, player_id: str) -> tuple[str, int] | None:
        """A player's display name and token generation, or None for an unknown player."""

    async def player_name(self, player_id: str) -> str | None:
        """A player's display name, or None for an unknown player."""
        known = await self.player(player_id)
        return None if known is None else known[0]

    async def account_created_ms(self, player_id: str) -> int | None:
        """When the identity became an account (ms), or None for a guest."""
        record = await self.account(player_id)
        return None if record is None else record.created_ms

    # accounts ---------------------------------------------------------------------------

    @abstractmethod
    async def account(self, player_id: str) -> AccountRecord | None:
        """The identity's account, or None for a guest (or an unknown player)."""

    @abstractmethod
    async def account_named(self, keys: Collection[str]) -> str | None:
        """The player id of the account whose name has one of ``keys`` (see
        :func:`..names.name_keys`), or None."""

    @abstractmethod
    async def known_login_address(self, player_id: str, tag: str) -> bool:
        """Whether the account's password was given right from the address ``tag`` stands
        for (an HMAC of it) at one of its last ``LOGIN_ADDRESSES`` addresses."""

    @abstractmethod
    async def note_login_address(self, player_id: str, tag: str, now_ms: int) -> None:
        """Keep ``tag`` among the account's last ``LOGIN_ADDRESSES`` addresses where its
        password was given right (the oldest goes)."""

    @abstractmethod
    async def create_account(
        self, player_id: str, name: str, keys: Collection[str], password_hash: str, now_ms: int
    ) -> bool:
        """Make a known guest an account under ``name``, never to expire; False (nothing
        changed) if another account's name has one of ``keys``, or the player is unknown."""

    @abstractmethod
    async def set_password(
        self, player_id: str, old_hash: str, new_hash: str, *, revoke: bool = True
    ) -> int | None:
        """Replace the account's password hash if it is still ``old_hash``, and with
        ``revoke`` move its token generation on; the generation now, or None if the
        hash was another (or there is no such account)."""

    @abstractmethod
    async def delete_account(self, player_id: str, name: str) -> bool:
        """Delete the account and its identity (its tokens stop working), and anonymise
        its daily entries: each day's get ``name`` and a fresh player id that names no
        one; the player's history goes. False if there is no such account."""

    @abstractmethod
    async def revoke_player(self, player_id: str) -> bool:
        """Move the player's token generation on, so that every token given so far stops
        working; False for an unknown player."""

    @abstractmethod
    async def touch_player(self, player_id: str, now_ms: int, ttl_s: float) -> None:
        """The player was seen now: a guest is forgotten once not seen for ``ttl_s``."""

    async def expire_players(self, now_ms: int, ttl_s: float) -> int:
        """Forget guests not seen for ``ttl_s`` (where the store does not do it itself);
        how many went."""
        return 0

    @abstractmethod
    async def set_player_room(self, player_id: str, code: str | None) -> None:
        """Remember which room a player is in (None: none)."""

    @abstractmethod
    async def forget_player_room(self, player_id: str, code: str) -> None:
        """Forget the player's room if it is still ``code`` (one step): leaving a room on
        one connection must not forget the room another connection of the account went
        to meanwhile (a running daily attempt, say)."""

    @abstractmethod
    async def player_room(self, player_id: str) -> str | None:
        """The room a player is in, if any."""

    @abstractmethod
    async def set_daily_room(self, player_id: str, code: str) -> None:
        """Remember the room of the account's latest daily attempt. Only a daily start
        writes it, under its hold (:meth:`claim_start`): unlike the room pointer, which a
        room made on another connection overwrites (and leaving that room clears), it
        names a running attempt for as long as it runs."""

    @abstractmethod
    async def daily_room(self, player_id: str) -> str | None:
        """The room of the account's latest daily attempt, if it still exists."""

    @abstractmethod
    async def claim_start(self, player_id: str, ttl_ms: int) -> str | None:
        """Hold the player's right to start a daily attempt, for every node: a token to
        give back to :meth:`release_start`, or None if another start holds it. The hold
        lapses by itself after ``ttl_ms`` (a node that died holding it)."""

    @abstractmethod
    async def release_start(self, player_id: str, token: str) -> None:
        """Give back a hold :meth:`claim_start` gave (nothing if it lapsed meanwhile)."""

    # which node holds whom, where nodes share the store ----------------------------------

    async def hold_member(self, node: str, entry: str) -> None:  # noqa: B027 (optional)
        """Note that ``node`` holds a member's connection (``entry`` names the room, the
        member and its link), so that if ``node`` dies the others let the member go. A
        store that serves one node does nothing (a restart lets every member go)."""

    async def release_member(self, node: str, entry: str) -> None:  # noqa: B027 (optional)
        """``node`` no longer holds the member's connection that ``entry`` names."""

    async def note_node(self, node: str, now_ms: int) -> None:  # noqa: B027 (optional)
        """Record that ``node`` runs at ``now_ms``."""

    async def silent_nodes(self, before_ms: int) -> list[str]:
        """The nodes not noted since ``before_ms`` (none where one node owns the store)."""
        return []

    async def take_node(self, node: str, before_ms: int) -> list[str] | None:
        """Take the members a ``node`` silent since ``before_ms`` held, once: their entries,
        or None if another node took them first (or ``node`` was noted since)."""
        return None

    # rooms ------------------------------------------------------------------------------

    @abstractmethod
    async def create_room(self, room: Room) -> bool:
        """Store a new room record; False if its code is taken."""

    @abstractmethod
    async def load_room(self, code: str) -> Room | None:
        """The room's record, or None."""

    @abstractmethod
    async def update_room(self, code: str, change: RoomUpdate) -> Outcome:
        """Apply ``change`` to the record atomically; a None room deletes it (not its logs).

        Raises ProtocolError(ROOM_NOT_FOUND) for an unknown room, and whatever ``change``
        raises, leaving the record as it was.
        """

    async def update_room_publishing(self, code: str, change: RoomUpdate) -> tuple[Outcome, bool]:
        """:meth:`update_room`, and True if the backend has published the outcome's events
        itself, with the write (a backend may do that for progress reports alone); else
        False, and the caller publishes them."""
        return await self.update_room(code, change), False

    @abstractmethod
    async def room_count(self) -> int:
        """How many rooms exist."""

    # move logs --------------------------------------------------------------------------

    @abstractmethod
    async def append_move(
        self, code: str, race: int, player_id: str, rev: int, move: str, at_ms: int = 0
    ) -> None:
        """Log move number ``rev`` (counting from 0) durably, before it is acked, with its
        time in the race (``at_ms``: ms since the race started)."""

    def append_move_soon(
        self, code: str, race: int, player_id: str, rev: int, move: str, at_ms: int = 0
    ) -> asyncio.Future[None]:
        """:meth:`append_move`, started now: its future is done once the move is logged,
        or holds the error :meth:`append_move` would raise. A node takes a move from its
        socket with it, without a task of its own, where the backend is not in process."""
        return asyncio.ensure_future(self.append_move(code, race, player_id, rev, move, at_ms))

    @abstractmethod
    async def log_length(self, code: str, race: int, player_id: str) -> int:
        """How many moves a player's log of a race holds."""

    @abstractmethod
    async def drop_room_logs(self, code: str) -> None:
        """Delete a deleted room's move logs and boards (the node calls it once the
        room's last events, which may need the logs, are handled)."""

    @abstractmethod
    async def close_log(self, code: str, race: int, player_id: str) -> None:
        """Take no more moves into the player's log of the race (the player resigns),
        before the log is read for the resignation's standing: with nodes sharing the
        store, a move through another node could otherwise be logged after it, a move the
        results would not count."""

    @abstractmethod
    async def drop_race_logs(self, code: str, race: int, player_ids: list[str]) -> None:
        """Delete a finished race's move logs once its results (and its copy for replays,
        or the daily attempt's entry) are written: a room that races on and on would
        otherwise keep every race's logs for as long as it lives."""

    async def read_moves(self, code: str, race: int, player_id: str) -> list[str]:
        """A player's logged moves in a race, in order."""
        return [move for move, _ in await self.read_timed_moves(code, race, player_id)]

    @abstractmethod
    async def read_timed_moves(self, code: str, race: int, player_id: str) -> list[tuple[str, int]]:
        """A player's logged moves in a race, in order, each with its time (ms since the
        race started)."""

    # races kept for their replays -------------------------------------------------------

    @abstractmethod
    async def save_race(
        self, code: str, race: int, record: dict[str, Any], now_ms: int, keep_ms: int
    ) -> None:
        """Keep a finished race's record (:mod:`..races`) for ``keep_ms`` from ``now_ms``."""

    @abstractmethod
    async def load_race(self, code: str, race: int, now_ms: int) -> dict[str, Any] | None:
        """A race's record, if it is kept still."""

    async def expire_races(self, now_ms: int) -> int:
        """Forget the races kept past their time (where the store does not do it itself);
        how many went."""
        return 0

    # certified deals --------------------------------------------------------------------

    @abstractmethod
    async def daily_deal(self, date: str, variant: str) -> tuple[int, int | None] | None:
        """Which candidate seed was chosen for a day's deal, and its par; None if none is."""

    @abstractmethod
    async def keep_daily_deal(
        self, date: str, variant: str, candidate: int, par: int | None
    ) -> tuple[int, int | None]:
        """Keep the choice of a day's deal unless one is kept already; the one kept."""

    @abstractmethod
    async def put_certified(self, variant: str, seed: int, par: int, line: str) -> None:
        """Add a certified-winnable deal (its seed, par and winning line) to ``variant``'s
        pool."""

    @abstractmethod
    async def take_certified(self, variant: str) -> tuple[int, int, str] | None:
        """Take one deal out of ``variant``'s pool, ``(seed, par, line)``; None if it is
        empty (no two takers ever get the same one)."""

    @abstractmethod
    async def keep_line(
        self, variant: str, seed: int, line: str, now_ms: int, keep_ms: int
    ) -> None:
        """Keep a dealt deal's winning line for ``keep_ms`` (for its races' replays)."""

    @abstractmethod
    async def certified_line(self, variant: str, seed: int, now_ms: int) -> str | None:
        """The winning line kept for a deal, if any."""

    @abstractmethod
    async def certified_count(self, variant: str) -> int:
        """How many certified deals ``variant``'s pool holds."""

    # spectator boards -------------------------------------------------------------------

    @abstractmethod
    async def save_boards(self, code: str, race: int, views: dict[str, dict[str, Any]]) -> None:
        """Keep each player's latest board as spectators see it (by player id)."""

    @abstractmethod
    async def load_boards(self, code: str, race: int) -> dict[str, dict[str, Any]]:
        """The latest boards kept for a race, by player id (players with none left out)."""

    # results ----------------------------------------------------------------------------

    @abstractmethod
    async def save_results(
        self, code: str, race: int, variant: str, seed: int, results: list[dict[str, Any]]
    ) -> None:
        """Keep a finished race's ranked results."""

    @abstractmethod
    async def load_results(self, code: str, race: int) -> dict[str, Any] | None:
        """A finished race's results, with its variant and seed."""

    # pub/sub ----------------------------------------------------------------------------

    @abstractmethod
    async def publish(self, code: str, event: dict[str, Any]) -> None:
        """Send an event to every node subscribed to the room."""

    @abstractmethod
    async def subscribe(self, code: str, handler: EventHandler) -> None:
        """Receive the room's events while this node holds a member of it."""

    @abstractmethod
    async def unsubscribe(self, code: str) -> None:
        """Stop receiving the room's events."""

    def set_resync_handler(self, handler: ResyncHandler | None) -> None:  # noqa: B027
        """Be told of rooms whose events may have been lost (by default none ever are).

        A backend whose pub/sub can lose events (the Redis one, while its connection is
        down) calls ``handler`` once it receives such a room's events again, before any
        event published after that; the node then re-reads the room from the store.
        """

    # daily challenge --------------------------------------------------------------------
    #
    # A day's boards: ``people`` (the default) and ``bots``. A ranked entry of a person
    # that is flagged waits off the board until an operator keeps or removes it.

    @abstractmethod
    async def daily_attempt(self, date: str, variant: str, player_id: str) -> int:
        """Count a new attempt at a day's deal and return its number (1 is the ranked one)."""

    @abstractmethod
    async def note_daily_start(
        self, date: str, variant: str, player_id: str, address: str, *, ranked: bool
    ) -> tuple[int, list[str]]:
        """Note that the player started an attempt at a day's deal from ``address`` (a tag
        of the client address, :func:`..daily.address_tag`), one that may be ranked if
        ``ranked``. Returns how many attempts that may be ranked the address has started
        at the deal, this one included, and the other players who started one from it
        before. Kept :data:`..daily.ADDRESS_KEEP_DAYS` days."""

    @abstractmethod
    async def keep_daily_verdict(
        self, date: str, variant: str, player_id: str, unranked: str | None, flag: str | None
    ) -> None:
        """Keep what the address rules say of the player's first attempt at a day's deal
        (:func:`..daily.address_verdict`), for :meth:`save_daily_entry` to apply."""

    @abstractmethod
    async def daily_verdict(
        self, date: str, variant: str, player_id: str
    ) -> tuple[str | None, str | None] | None:
        """The verdict kept for the player's first attempt at a day's deal, ``(unranked,
        flag)``, or None if none was."""

    @abstractmethod
    async def save_daily_entry(self, entry: Entry) -> Entry:
        """Keep a finished attempt, with the verdict kept for it when it started
        (:func:`..daily.judged`); a ranked one joins its board of the day and of all time,
        unless it is flagged: it then waits for review (:meth:`daily_flagged`). The entry
        as kept, verdict and all."""

    @abstractmethod
    async def daily_top(
        self, date: str, variant: str, offset: int, limit: int, board: str = "people"
    ) -> list[Entry]:
        """Ranked entries of a day's board in score order, from ``offset``, without their
        move logs (a board's cost must not grow with its entries' logs)."""

    @abstractmethod
    async def daily_index(
        self, date: str, variant: str, player_id: str, board: str = "people"
    ) -> int | None:
        """The player's place (from 0) on the day's board, or None."""

    @abstractmethod
    async def daily_better(
        self, date: str, variant: str, score: float, board: str = "people"
    ) -> int:
        """How many entries of the day's board score strictly better than ``score``."""

    @abstractmethod
    async def daily_count(self, date: str, variant: str, board: str = "people") -> int:
        """How many entries the day's board holds."""

    @abstractmethod
    async def daily_entries(self, date: str, variant: str) -> list[Entry]:
        """Every attempt of the day, ranked or not, on either board (for exports)."""

    @abstractmethod
    async def player_history(self, player_id: str) -> list[Entry]:
        """Every attempt the player made, oldest day first, without their move logs (a
        history of many attempts is read whole for each look at it)."""

    @abstractmethod
    async def daily_entry(
        self, date: str, variant: str, player_id: str, attempt: int
    ) -> Entry | None:
        """One attempt at a day's deal, with its move log."""

    @abstractmethod
    async def best_entries(self, variant: str, limit: int, board: str = "people") -> list[Entry]:
        """The best entries of a variant's board over all days, in score order, without
        their move logs."""

    @abstractmethod
    async def remove_daily_entry(
        self, date: str, variant: str, player_id: str, reason: str
    ) -> bool:
        """Take a player's ranked entry off the boards (or out of review), keeping the
        reason; False if none."""

    @abstractmethod
    async def daily_flagged(self) -> list[Entry]:
        """Every flagged entry still waiting for review, oldest day first."""

    @abstractmethod
    async def keep_daily_entry(
        self, date: str, variant: str, player_id: str, reason: str
    ) -> Entry | None:
        """Put a flagged entry on its board, keeping the reason; the entry, or None if no
        entry of the player waits for review there."""

    @abstractmethod
    async def add_daily_room(self, date: str, variant: str, code: str) -> None:
        """Note the room of an attempt at a day's deal, before its race starts."""

    @abstractmethod
    async def daily_rooms(self, date: str, variant: str) -> list[str]:
        """The rooms of a day's attempts not yet known to be over."""

    @abstractmethod
    async def drop_daily_rooms(self, date: str, variant: str, codes: list[str]) -> None:
        """Forget rooms of a day's attempts: they are over."""
