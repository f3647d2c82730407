"""The embedded backend: one process, in-process pub/sub, everything durable in SQLite.

Players, rooms, running races, move logs, spectator boards, results and the daily boards
are kept in ``data_dir/solrace.sqlite3`` (WAL). Writes are committed in groups: the first
write opens a transaction, and it is committed ``commit_window_s`` later (0: at the end
of the event-loop pass), or earlier by :meth:`flush_writes`, which the server calls
before any frame leaves for a socket; the server holds the frames it pushes (acks, room
events) until the group is due (:meth:`commit_due_in`). An ack therefore never reaches
a player before its move is committed, and a restart, even after ``kill -9``, finds
every acked move and every room as it was. At a person's pace most passes carry one
move, so a window of a few milliseconds turns hundreds of commits a second (each a few
pages written to the WAL, a room record copied, and file locks taken) into a few dozen,
for an ack that leaves at most that much later.

Room records are also kept in memory (this process is the only writer, so the memory is
the truth and the file its durable copy). The moves of running races are kept in memory
too, and made durable in a journal: one row per commit holds every move of the commit,
so that a pass of many moves costs one small append, not a write to a page of each
player's log. When a race ends, each player's whole log becomes one row of ``logs``, and
the journal's rows that no running race needs any more are deleted now and then. After
a restart the running races' logs are read back from the journal.

A report of standings alone (every game in it goes on) changes a running race's record
several times a second, and each of its players' moves is in the journal already: the
node works such a standing out again from the log after a restart. So that record is
written lazily (:meth:`update_room_now` with ``lazily``): at least
``LAZY_ROOM_WRITE_S`` after it changed, ``LAZY_ROOMS_A_COMMIT`` records a commit, and
at once by any other change of the room and by :meth:`close`.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import datetime as dt
import fcntl
import json
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgpack
import structlog

from ...protocol import ErrorCode, ProtocolError
from ..daily import ADDRESS_KEEP_DAYS, Entry, judged
from ..room import Outcome, Room, RoomState
from .base import (
    COMMIT_WINDOW_S,
    MAX_COMMIT_WINDOW_S,
    Backend,
    BackendUnavailable,
    EventHandler,
    RoomUpdate,
)
from .embedded_accounts import ACCOUNTS_SCHEMA, EmbeddedAccountsMixin

__all__ = ["EmbeddedBackend", "unwritable"]

log = structlog.get_logger("solrace.server")

DB_FILE = "solrace.sqlite3"
"""The SQLite file's name in the data directory."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS players (
    player_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    room TEXT,
    gen INTEGER NOT NULL DEFAULT 0,
    seen_ms INTEGER,
    daily_room TEXT
);
CREATE TABLE IF NOT EXISTS rooms (
    code TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY,
    moves BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS logs (
    code TEXT NOT NULL,
    race INTEGER NOT NULL,
    player_id TEXT NOT NULL,
    moves TEXT NOT NULL,
    times TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (code, race, player_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS boards (
    code TEXT NOT NULL,
    player_id TEXT NOT NULL,
    race INTEGER NOT NULL,
    view BLOB NOT NULL,
    PRIMARY KEY (code, player_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS daily_attempts (
    date TEXT NOT NULL,
    variant TEXT NOT NULL,
    player_id TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    PRIMARY KEY (date, variant, player_id)
);
CREATE TABLE IF NOT EXISTS daily_entries (
    date TEXT NOT NULL,
    variant TEXT NOT NULL,
    player_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    ranked INTEGER NOT NULL,
    removed INTEGER NOT NULL DEFAULT 0,
    score REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (date, variant, player_id, attempt)
);
CREATE INDEX IF NOT EXISTS daily_board ON daily_entries (variant, ranked, removed, score);
CREATE INDEX IF NOT EXISTS daily_player ON daily_entries (player_id);
CREATE TABLE IF NOT EXISTS daily_addresses (
    date TEXT NOT NULL,
    variant TEXT NOT NULL,
    address TEXT NOT NULL,
    player_id TEXT NOT NULL,
    ranked INTEGER NOT NULL,
    PRIMARY KEY (date, variant, address, player_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS daily_verdicts (
    date TEXT NOT NULL,
    variant TEXT NOT NULL,
    player_id TEXT NOT NULL,
    unranked TEXT,
    flag TEXT,
    PRIMARY KEY (date, variant, player_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS daily_rooms (
    date TEXT NOT NULL,
    variant TEXT NOT NULL,
    code TEXT NOT NULL,
    PRIMARY KEY (date, variant, code)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS daily_removals (
    date TEXT NOT NULL,
    variant TEXT NOT NULL,
    player_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    removed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE IF NOT EXISTS races (
    code TEXT NOT NULL,
    race INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (code, race)
);
CREATE INDEX IF NOT EXISTS races_expiry ON races (expires_ms);
CREATE TABLE IF NOT EXISTS certified (
    variant TEXT NOT NULL,
    seed TEXT NOT NULL,
    par INTEGER NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (variant, seed)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lines (
    variant TEXT NOT NULL,
    seed TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (variant, seed)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS results (
    code TEXT NOT NULL,
    race INTEGER NOT NULL,
    variant TEXT NOT NULL,
    seed TEXT NOT NULL,
    results TEXT NOT NULL,
    PRIMARY KEY (code, race)
);
"""

LogKey = tuple[str, int, str]

BUDGET_PRUNE_EVERY = 1024
"""Spends between two sweeps of budgets that are back to full."""

PRUNE_EVERY = 256
"""Commits between two prunings of the journal."""

LAZY_ROOM_WRITE_S = 30.0
"""The shortest a room record changed by standings alone waits to be written.

Nothing reads those records from the file but a restart, which works every such standing
out again from the move logs however old the record is: the write only spares that
replay. At 2 s, 1,000 racing rooms rewrote 500 records a second, spread over the table's
pages, and the commits that carried them were the node's largest cost after its sockets."""
LAZY_ROOMS_A_COMMIT = 64
"""Room records waiting to be written lazily that one commit writes at most."""


class _Log:
    """A running race's log of one player: its moves, and their times in the race (ms)."""

    __slots__ = ("moves", "times")

    def __init__(self) -> None:
        self.moves: list[str] = []
        self.times = array.array("q")

    def add(self, move: str, at_ms: int) -> None:
        self.moves.append(move)
        self.times.append(at_ms)

    def cut(self, length: int) -> None:
        del self.moves[length:]
        del self.times[length:]

    def timed(self) -> list[tuple[str, int]]:
        return list(zip(self.moves, self.times, strict=True))

    def joined(self) -> tuple[str, str]:
        return " ".join(self.moves), " ".join(map(str, self.times))


def _pack(data: Any) -> bytes:
    packed: bytes = msgpack.packb(data, use_bin_type=True)
    return packed


class EmbeddedBackend(EmbeddedAccountsMixin, Backend):
    """Everything in this process; durable in ``data_dir/solrace.sqlite3``."""

    name = "embedded"
    in_process = True

    def __init__(
        self, data_dir: str | os.PathLike[str], *, commit_window_s: float = COMMIT_WINDOW_S
    ) -> None:
        if not 0.0 <= commit_window_s <= MAX_COMMIT_WINDOW_S:
            raise ValueError(
                f"commit_window_s must be between 0 and {MAX_COMMIT_WINDOW_S:g} second"
            )
        self.data_dir = Path(data_dir)
        self.commit_window_s = commit_window_s
        self._db: sqlite3.Connection | None = None
        self._secret = b""
        self._node_id = ""
        self._rooms: dict[str, Room] = {}
        self._starting: dict[str, tuple[str, float]] = {}  # daily starts held, by player
        self._logs: dict[LogKey, _Log] = {}  # the logs of running races
        self._first: dict[tuple[str, int], int] = {}  # a running race's first journal row
        self._commits = 0
        self._subscribers: dict[str, EventHandler] = {}
        self._budgets: dict[str, float] = {}  # by key: when its next one is due (ms)
        self._spends = 0
        # Writes of this pass, made at the commit: moves in order, rooms by code (None:
        # deleted), finished races' logs, boards by (code, player).
        self._moves: list[tuple[str, int, str, int, str, int]] = []
        self._finished: dict[LogKey, tuple[str, str]] = {}  # moves, times: space-joined
        self._dirty: dict[str, Room | None] = {}
        self._lazy: dict[str, float] = {}  # code -> loop time its record changed, oldest first
        self._lazy_timer: asyncio.TimerHandle | None = None
        self._boards: dict[tuple[str, str], tuple[int, bytes]] = {}
        self._timer: asyncio.Handle | None = None  # the open group's commit, when scheduled
        # The loop time the open group is due at (None: at the end of this pass). Kept
        # apart from the timer, whose class is the loop's own (uvloop's is no
        # asyncio.TimerHandle).
        self._due: float | None = None
        self._failed: BaseException | None = None
        self._lock: int | None = None
        self._on_failure: Callable[[BaseException], None] | None = None
        self.last_alive_ms: int | None = None
        """When the previous run of this data directory was last known alive (ms)."""

    async def start(self) -> None:
        """Open the SQLite file and the token secret, creating both on first run."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        secret_path = self.data_dir / "secret.key"
        if not secret_path.exists():
            _write_secret(secret_path)
        self._secret = secret_path.read_bytes()
        if len(self._secret) < SECRET_BYTES:
            raise BackendUnavailable(
                f"the token secret {secret_path} holds {len(self._secret)} bytes, not "
                f"{SECRET_BYTES}: restore it from a backup (a new one, made if it is "
                "removed, logs every player out)"
            )
        try:
            self._open()
        except sqlite3.Error as error:
            if self._db is not None:
                self._db.close()
                self._db = None
            raise self._unusable(error) from error

    def _open(self) -> None:
        """Open the SQLite file, bring its schema up to date and read what it holds."""
        db = sqlite3.connect(self.data_dir / DB_FILE, isolation_level=None)
        self._db = db
        db.execute("PRAGMA journal_mode=WAL")
        # With WAL, NORMAL keeps every commit through a crash of the process (kill -9
        # included); only a power loss may undo the last ones. FULL would wait on the
        # disk at every commit with the event loop blocked.
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
        db.executescript(ACCOUNTS_SCHEMA)
        self._migrate_daily(db)
        if "times" not in {row[1] for row in db.execute("PRAGMA table_info(logs)")}:
            db.execute("ALTER TABLE logs ADD COLUMN times TEXT NOT NULL DEFAULT ''")
        columns = {row[1] for row in db.execute("PRAGMA table_info(players)")}
        for column, kind in (
            ("gen", "INTEGER NOT NULL DEFAULT 0"),
            ("seen_ms", "INTEGER"),
            ("daily_room", "TEXT"),
        ):
            if column not in columns:  # a data directory from before the column
                db.execute(f"ALTER TABLE players ADD COLUMN {column} {kind}")
        db.execute("CREATE INDEX IF NOT EXISTS players_seen ON players (seen_ms)")
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        self._node_id = meta.get("node_id") or f"n-{secrets.token_hex(4)}"
        if "node_id" not in meta:
            db.execute("INSERT INTO meta VALUES ('node_id', ?)", (self._node_id,))
        alive = meta.get("alive_ms")
        self.last_alive_ms = int(alive) if alive is not None else None
        self._rooms = {
            code: Room.from_dict(msgpack.unpackb(data, raw=False))
            for code, data in db.execute("SELECT code, data FROM rooms")
        }
        self._read_journal(db)

    def _read_journal(self, db: sqlite3.Connection) -> None:
        """The running races' logs, from the journal."""
        running = {(r.code, r.race) for r in self._rooms.values() if r.state is RoomState.RACING}
        for seq, packed in db.execute("SELECT seq, moves FROM journal ORDER BY seq"):
            for code, race, player_id, rev, move, *at in msgpack.unpackb(packed, raw=False):
                if (code, race) not in running:
                    continue
                log = self._logs.setdefault((code, race, player_id), _Log())
                if rev < len(log.moves):  # a room of the same code long ago: its rows go first
                    log.cut(rev)
                if rev == len(log.moves):
                    log.add(move, at[0] if at else 0)
                    self._first.setdefault((code, race), seq)
        for code, race in running:
            for player_id in self._rooms[code].players:
                self._logs.setdefault((code, race, player_id), _Log())

    def claim(self) -> None:
        """Take the data directory for this node alone (a lock held while it runs).

        A node takes back every room of its storage when it starts, so two nodes on one
        data directory would play the same races twice; the second is refused.
        """
        if self._lock is not None:
            return
        path = self.data_dir / "node.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise BackendUnavailable(
                f"the data directory {self.data_dir} is in use by another node"
            ) from None
        # The node will write: a file it may only read (restored by another user, on a
        # file system mounted read-only) is said now, not at the first move. A row is
        # written and rolled back (in WAL mode, BEGIN IMMEDIATE succeeds on such a file).
        db = self.db
        if not db.in_transaction:  # else writes are under way: the file takes them
            try:
                db.execute("BEGIN IMMEDIATE")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('node_id', ?)", (self._node_id,))
            except sqlite3.Error as error:
                os.close(fd)
                raise self._unusable(error) from error
            finally:
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
        self._lock = fd

    def _unusable(self, error: sqlite3.Error) -> BackendUnavailable:
        """The SQLite file cannot be opened or written: why, naming it."""
        path = self.data_dir / DB_FILE
        doing = "write to" if error.sqlite_errorname.startswith("SQLITE_READONLY") else "open"
        why = str(error) + (unwritable(self.data_dir) or _disk_full(self.data_dir))
        return BackendUnavailable(f"cannot {doing} {path}: {why}")

    async def close(self) -> None:
        """Commit what is pending and close the SQLite file (and the directory's lock)."""
        if self._lazy_timer is not None:
            self._lazy_timer.cancel()
            self._lazy_timer = None
        if self._db is not None:
            if self._failed is None:
                self._write_lazy(everything=True)
            self.flush_writes()
            self._db.close()
            self._db = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    @property
    def db(self) -> sqlite3.Connection:
        """The open SQLite connection."""
        if self._db is None:
            raise RuntimeError("the embedded backend is not started")
        return self._db

    async def ready(self) -> bool:
        """Ready once started, while its file takes writes."""
        return self._db is not None and self._failed is None

    async def secret(self) -> bytes:
        """The token key kept in ``data_dir/secret.key``."""
        return self._secret

    async def node_id(self) -> str:
        """This data directory's lasting node id."""
        return self._node_id

    # group commit -----------------------------------------------------------------------

    def set_failure_handler(self, handler: Callable[[BaseException], None] | None) -> None:
        """Call ``handler`` if a commit fails: what was taken since the last one is lost,
        so nothing may reach a client any more (the server aborts every connection)."""
        self._on_failure = handler

    def _write(self) -> sqlite3.Connection:
        """The connection, inside this pass's transaction (opened on the first write)."""
        if self._failed is not None:
            raise BackendUnavailable(f"sqlite: {self._failed}")
        db = self.db
        if not db.in_transaction:
            db.execute("BEGIN")
        if self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a tool): the next flush_writes commits
                return db
            window = self.commit_window_s
            if window > 0:
                self._due = loop.time() + window
                self._timer = loop.call_at(self._due, self.flush_writes)
            else:
                self._timer = loop.call_soon(self.flush_writes)
        return db

    @property
    def commits(self) -> int:
        """Transactions committed since the backend opened."""
        return self._commits

    def commit_due_in(self) -> float:
        """Seconds until the open group of writes is committed (0: none waits for it)."""
        due = self._due
        if self._timer is None or due is None:  # none, or at the end of this pass
            return 0.0
        return max(0.0, due - asyncio.get_running_loop().time())

    def _write_pending(self, db: sqlite3.Connection) -> None:
        """Put the writes held for this pass into the open transaction."""
        if self._moves:
            seq = db.execute(
                "INSERT INTO journal (moves) VALUES (?)", (_pack(self._moves),)
            ).lastrowid
            assert seq is not None
            for code, race, player_id, *_ in self._moves:
                if (code, race, player_id) in self._logs:
                    self._first.setdefault((code, race), seq)
            self._moves = []
        if self._finished:
            db.executemany(
                "INSERT OR REPLACE INTO logs VALUES (?, ?, ?, ?, ?)",
                [(*key, *log) for key, log in self._finished.items()],
            )
            self._finished = {}
        if self._lazy:
            self._write_lazy()
        if self._dirty:
            gone = [(code,) for code, room in self._dirty.items() if room is None]
            kept = [(code, _pack(room.to_dict())) for code, room in self._dirty.items() if room]
            self._dirty.clear()
            if gone:
                db.executemany("DELETE FROM rooms WHERE code = ?", gone)
            if kept:
                db.executemany("INSERT OR REPLACE INTO rooms VALUES (?, ?)", kept)
        if self._boards:
            db.executemany(
                "INSERT OR REPLACE INTO boards VALUES (?, ?, ?, ?)",
                [(c, p, race, view) for (c, p), (race, view) in self._boards.items()],
            )
            self._boards.clear()

    def _write_lazy(self, everything: bool = False) -> None:
        """Move the records waiting to be written lazily whose time has come (all of
        them with ``everything``) into this commit's writes, a slice at a time."""
        lazy = self._lazy
        rooms = self._rooms
        dirty = self._dirty
        if everything:
            for code in lazy:
                if code not in dirty and code in rooms:
                    dirty[code] = rooms[code]
            lazy.clear()
            return
        try:
            now = asyncio.get_running_loop().time()
        except RuntimeError:
            return
        due = now - LAZY_ROOM_WRITE_S
        ready: list[str] = []
        for code, since in lazy.items():
            if since > due or len(ready) >= LAZY_ROOMS_A_COMMIT:
                break
            ready.append(code)
        for code in ready:
            del lazy[code]
            if code not in dirty and code in rooms:
                dirty[code] = rooms[code]

    def _lazy_due(self) -> None:
        """Open a group for the records waiting to be written lazily, and look again."""
        self._lazy_timer = None
        if not self._lazy or self._db is None or self._failed is not None:
            return
        self._write()
        loop = asyncio.get_running_loop()
        self._lazy_timer = loop.call_later(LAZY_ROOM_WRITE_S / 4, self._lazy_due)

    def flush_writes(self) -> None:
        """Commit the open group of writes, if there is one."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._due = None
        db = self._db
        if db is None or self._failed is not None:
            return
        if not db.in_transaction and not (
            self._moves or self._dirty or self._boards or self._finished
        ):
            return
        try:
            if not db.in_transaction:
                db.execute("BEGIN")
            self._write_pending(db)
            self._commits += 1
            if self._commits % PRUNE_EVERY == 0:
                self._prune(db)
            db.execute("COMMIT")
        except sqlite3.Error as error:
            self._fail(error)

    def _prune(self, db: sqlite3.Connection) -> None:
        """Delete the journal's rows that hold no move of a running race."""
        row = db.execute("SELECT MAX(seq) FROM journal").fetchone()
        last = row[0] if row and row[0] is not None else 0
        keep = min(self._first.values(), default=last + 1)
        db.execute("DELETE FROM journal WHERE seq < ?", (keep,))

    def _fail(self, error: BaseException) -> None:
        self._failed = error
        self._moves = []
        self._finished = {}
        self._dirty.clear()
        self._lazy.clear()
        self._boards.clear()
        log.critical("storage_failed", error=str(error))
        with contextlib.suppress(sqlite3.Error):
            self.db.rollback()
        if self._on_failure is not None:
            self._on_failure(error)

    def note_alive(self, now_ms: int) -> None:
        """Record that the node runs at ``now_ms`` (a restart measures its downtime by it)."""
        try:
            self._write().execute(
                "INSERT OR REPLACE INTO meta VALUES ('alive_ms', ?)", (str(now_ms),)
            )
        except sqlite3.Error as error:
            raise self._unusable(error) from error

    # budgets ----------------------------------------------------------------------------

    async def spend(
        self, budgets: list[tuple[str, int, float]], now_ms: int, *, force: bool = False
    ) -> tuple[int, float] | None:
        """The budgets' next due times kept in memory (the node's only; a restart renews
        them, which no client can cause)."""
        due: list[tuple[str, float]] = []
        for index, (key, count, period_s) in enumerate(budgets):
            period = period_s * 1000
            step = period / count if count > 0 else period
            then = max(self._budgets.get(key, now_ms), now_ms) + step
            if (count <= 0 or then - now_ms > period) and not force:
                return index, (then - period - now_ms) / 1000 if count > 0 else period_s
            due.append((key, then))
        for key, then in due:
            self._budgets[key] = then
        self._spends += 1
        if self._spends % BUDGET_PRUNE_EVERY == 0:
            self._budgets = {k: t for k, t in self._budgets.items() if t > now_ms}
        return None

    # players ----------------------------------------------------------------------------

    async def save_player(self, player_id: str, name: str) -> None:
        """Insert or rename a player."""
        self._write().execute(
            "INSERT INTO players (player_id, name) VALUES (?, ?) "
            "ON CONFLICT (player_id) DO UPDATE SET name = excluded.name",
            (player_id, name),
        )

    async def player(self, player_id: str) -> tuple[str, int] | None:
        """The player's name and token generation from SQLite."""
        row = self.db.execute(
            "SELECT name, gen FROM players WHERE player_id = ?", (player_id,)
        ).fetchone()
        return None if row is None else (str(row[0]), int(row[1]))

    async def revoke_player(self, player_id: str) -> bool:
        """Move the generation on."""
        cursor = self._write().execute(
            "UPDATE players SET gen = gen + 1 WHERE player_id = ?", (player_id,)
        )
        return cursor.rowcount > 0

    async def touch_player(self, player_id: str, now_ms: int, ttl_s: float) -> None:
        """Note when the player was seen (:meth:`expire_players` forgets the idle)."""
        self._write().execute(
            "UPDATE players SET seen_ms = ? WHERE player_id = ?", (now_ms, player_id)
        )

    async def expire_players(self, now_ms: int, ttl_s: float) -> int:
        """Delete the guests not seen for ``ttl_s`` who are in no room (accounts stay)."""
        cursor = self._write().execute(
            "DELETE FROM players WHERE seen_ms < ? AND room IS NULL "
            "AND player_id NOT IN (SELECT player_id FROM accounts)",
            (now_ms - int(ttl_s * 1000),),
        )
        return cursor.rowcount

    async def set_player_room(self, player_id: str, code: str | None) -> None:
        """Remember the player's room."""
        self._write().execute("UPDATE players SET room = ? WHERE player_id = ?", (code, player_id))

    async def forget_player_room(self, player_id: str, code: str) -> None:
        """Clear the player's room where it is ``code``."""
        self._write().execute(
            "UPDATE players SET room = NULL WHERE player_id = ? AND room = ?", (player_id, code)
        )

    async def player_room(self, player_id: str) -> str | None:
        """The player's room, if it still exists."""
        return self._existing_room(player_id, "room")

    async def set_daily_room(self, player_id: str, code: str) -> None:
        """Remember the attempt's room in the player's row."""
        self._write().execute(
            "UPDATE players SET daily_room = ? WHERE player_id = ?", (code, player_id)
        )

    async def daily_room(self, player_id: str) -> str | None:
        """The latest attempt's room, if it still exists."""
        return self._existing_room(player_id, "daily_room")

    def _existing_room(self, player_id: str, column: str) -> str | None:
        """The room a column of the player's row names (``room``, ``daily_room``), if it
        still exists."""
        row = self.db.execute(
            f"SELECT {column} FROM players WHERE player_id = ?", (player_id,)
        ).fetchone()
        code = None if row is None else row[0]
        return code if code in self._rooms else None

    async def claim_start(self, player_id: str, ttl_ms: int) -> str | None:
        """A hold in memory: one process serves every connection of the store."""
        now = time.monotonic()
        held = self._starting.get(player_id)
        if held is not None and held[1] > now:
            return None
        token = secrets.token_hex(8)
        self._starting[player_id] = (token, now + ttl_ms / 1000)
        return token

    async def release_start(self, player_id: str, token: str) -> None:
        """Forget the hold if it is still this one."""
        held = self._starting.get(player_id)
        if held is not None and held[0] == token:
            del self._starting[player_id]

    # rooms ------------------------------------------------------------------------------

    async def create_room(self, room: Room) -> bool:
        """Store the room unless its code is taken."""
        if room.code in self._rooms:
            return False
        self._write()
        self._rooms[room.code] = room
        self._dirty[room.code] = room
        return True

    async def load_room(self, code: str) -> Room | None:
        """The room from memory."""
        return self._rooms.get(code)

    async def room_codes(self, limit: int | None = None) -> list[str]:
        """The rooms' codes."""
        codes = list(self._rooms)
        return codes if limit is None else codes[:limit]

    async def update_room(self, code: str, change: RoomUpdate) -> Outcome:
        """Atomic by construction: nothing awaits between the read and the write."""
        return self.update_room_now(code, change)

    def update_room_now(self, code: str, change: RoomUpdate, *, lazily: bool = False) -> Outcome:
        """Apply ``change`` to the record, to be committed with this pass's writes.

        With ``lazily`` (a report of standings in which every game goes on, which the
        node works out again from the move logs after a restart), a change that keeps
        the race running is written later (see the module's docstring).
        """
        room = self._rooms.get(code)
        if room is None:
            raise ProtocolError(ErrorCode.ROOM_NOT_FOUND, f"no room {code!r}")
        outcome = change(room)
        new = outcome.room
        if new is room:
            return outcome
        if (
            lazily
            and new is not None
            and new.state is RoomState.RACING
            and room.state is RoomState.RACING
            and new.race == room.race
        ):
            if self._failed is not None:
                raise BackendUnavailable(f"sqlite: {self._failed}")
            self._rooms[code] = new
            if code in self._dirty:  # written with this group anyway: the newest
                self._dirty[code] = new
            elif code not in self._lazy:
                loop = asyncio.get_running_loop()
                self._lazy[code] = loop.time()
                if self._lazy_timer is None:
                    self._lazy_timer = loop.call_later(LAZY_ROOM_WRITE_S, self._lazy_due)
            return outcome
        self._write()
        if new is None:
            del self._rooms[code]
        else:
            self._rooms[code] = new
        self._dirty[code] = new
        self._lazy.pop(code, None)
        if room.state is RoomState.RACING and (new is None or new.state is not RoomState.RACING):
            self._race_over(code, room.race)
        return outcome

    def _race_over(self, code: str, race: int) -> None:
        """The race takes no more moves: its logs leave memory for one row each."""
        for key in [k for k in self._logs if k[0] == code and k[1] == race]:
            self._finished[key] = self._logs.pop(key).joined()
        self._first.pop((code, race), None)

    async def room_count(self) -> int:
        """Rooms held."""
        return len(self._rooms)

    # move logs --------------------------------------------------------------------------

    async def append_move(
        self, code: str, race: int, player_id: str, rev: int, move: str, at_ms: int = 0
    ) -> None:
        """Log the move in this pass's transaction, refusing a gap or a rewrite."""
        self.append_move_now(code, race, player_id, rev, move, at_ms)

    def append_move_now(
        self, code: str, race: int, player_id: str, rev: int, move: str, at_ms: int = 0
    ) -> None:
        """Log the move in this pass's transaction, refusing a gap or a rewrite.

        It is committed before any frame leaves the node (see :meth:`flush_writes`).
        Only a running race takes moves.
        """
        key = (code, race, player_id)
        log = self._logs.get(key)
        if log is None:
            room = self._rooms.get(code)
            if room is not None and room.state is RoomState.RACING and room.race == race:
                log = self._logs[key] = _Log()
            else:  # not a running race's (the node never does this): its row, at once
                self._append_finished(key, rev, move, at_ms)
                return
        if rev != len(log.moves):
            raise ProtocolError(ErrorCode.STALE_REVISION, f"the log holds {len(log.moves)} moves")
        if self._timer is None or self._failed is not None:
            self._write()  # opens the group its commit writes the move in (one a pass or window)
        self._moves.append((code, race, player_id, rev, move, at_ms))
        log.add(move, at_ms)

    def _append_finished(self, key: LogKey, rev: int, move: str, at_ms: int) -> None:
        log = self._stored(key)
        if rev != len(log):
            raise ProtocolError(ErrorCode.STALE_REVISION, f"the log holds {len(log)} moves")
        self._write()
        moves = [m for m, _ in log] + [move]
        times = [t for _, t in log] + [at_ms]
        self._finished[key] = (" ".join(moves), " ".join(map(str, times)))

    async def log_length(self, code: str, race: int, player_id: str) -> int:
        """How many moves the player's log of the race holds."""
        log = self._logs.get((code, race, player_id))
        if log is not None:
            return len(log.moves)
        return len(self._stored((code, race, player_id)))

    async def drop_room_logs(self, code: str) -> None:
        """Delete a deleted room's move logs and boards."""
        db = self._write()
        self._write_pending(db)
        db.execute("DELETE FROM logs WHERE code = ?", (code,))
        db.execute("DELETE FROM boards WHERE code = ?", (code,))
        for key in [k for k in self._logs if k[0] == code]:
            del self._logs[key]
        for race in [r for c, r in self._first if c == code]:
            del self._first[(code, race)]

    async def close_log(self, code: str, race: int, player_id: str) -> None:
        """Nothing to do: one node logs a player's moves and reads the log for their
        resignation one after the other (a second connection of the player takes the
        first one's place)."""

    async def drop_race_logs(self, code: str, race: int, player_ids: list[str]) -> None:
        """Delete the race's rows of ``logs`` (and what this pass holds of them)."""
        db = self._write()
        self._write_pending(db)
        db.execute("DELETE FROM logs WHERE code = ? AND race = ?", (code, race))
        for key in [k for k in self._logs if k[0] == code and k[1] == race]:
            del self._logs[key]

    async def read_timed_moves(self, code: str, race: int, player_id: str) -> list[tuple[str, int]]:
        """The player's logged moves, in order, each with its time in the race (ms)."""
        key = (code, race, player_id)
        log = self._logs.get(key)
        return log.timed() if log is not None else self._stored(key)

    def _stored(self, key: LogKey) -> list[tuple[str, int]]:
        """A log that is not a running race's, from this pass's writes or the file."""
        log = self._finished.get(key)
        if log is None:
            row = self.db.execute(
                "SELECT moves, times FROM logs WHERE code = ? AND race = ? AND player_id = ?",
                key,
            ).fetchone()
            log = (row[0], row[1]) if row else ("", "")
        moves = log[0].split(" ") if log[0] else []
        times = [int(t) for t in log[1].split(" ")] if log[1] else [0] * len(moves)
        return list(zip(moves, times, strict=True))

    # spectator boards -------------------------------------------------------------------

    async def save_boards(self, code: str, race: int, views: dict[str, dict[str, Any]]) -> None:
        """Keep each player's latest board as a spectator sees it."""
        self.save_boards_now(code, race, views)

    def save_boards_now(self, code: str, race: int, views: dict[str, dict[str, Any]]) -> None:
        """Keep each player's latest board, with this pass's writes."""
        if not views:
            return
        self._write()
        for player_id, view in views.items():
            self._boards[(code, player_id)] = (race, _pack(view))

    async def load_boards(self, code: str, race: int) -> dict[str, dict[str, Any]]:
        """The latest boards kept for the room's race."""
        boards: dict[str, dict[str, Any]] = {}
        for (c, player_id), (r, view) in self._boards.items():
            if c == code and r == race:
                boards[player_id] = msgpack.unpackb(view, raw=False)
        for player_id, view in self.db.execute(
            "SELECT player_id, view FROM boards WHERE code = ? AND race = ?", (code, race)
        ):
            boards.setdefault(player_id, msgpack.unpackb(view, raw=False))
        return boards

    # results ----------------------------------------------------------------------------

    async def save_race(
        self, code: str, race: int, record: dict[str, Any], now_ms: int, keep_ms: int
    ) -> None:
        """Keep the record in ``races``."""
        self._write().execute(
            "INSERT OR REPLACE INTO races (code, race, expires_ms, data) VALUES (?, ?, ?, ?)",
            (code, race, now_ms + keep_ms, json.dumps(record)),
        )

    async def load_race(self, code: str, race: int, now_ms: int) -> dict[str, Any] | None:
        """The record from ``races``, unless past its time."""
        row = self.db.execute(
            "SELECT data FROM races WHERE code = ? AND race = ? AND expires_ms > ?",
            (code, race, now_ms),
        ).fetchone()
        if row is None:
            return None
        record: dict[str, Any] = json.loads(row[0])
        return record

    async def expire_races(self, now_ms: int) -> int:
        """Delete the rows of ``races`` (and of ``lines``) past their time."""
        db = self._write()
        db.execute("DELETE FROM lines WHERE expires_ms <= ?", (now_ms,))
        return int(db.execute("DELETE FROM races WHERE expires_ms <= ?", (now_ms,)).rowcount)

    async def daily_deal(self, date: str, variant: str) -> tuple[int, int | None] | None:
        """The choice kept in ``meta``."""
        row = self.db.execute(
            "SELECT value FROM meta WHERE key = ?", (f"daily_deal:{date}:{variant}",)
        ).fetchone()
        if row is None:
            return None
        candidate, par = json.loads(row[0])
        return int(candidate), None if par is None else int(par)

    async def keep_daily_deal(
        self, date: str, variant: str, candidate: int, par: int | None
    ) -> tuple[int, int | None]:
        """INSERT OR IGNORE the choice into ``meta``; the one kept."""
        self._write().execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
            (f"daily_deal:{date}:{variant}", json.dumps([candidate, par])),
        )
        kept = await self.daily_deal(date, variant)
        assert kept is not None
        return kept

    async def put_certified(self, variant: str, seed: int, par: int, line: str) -> None:
        """Add the deal to the ``certified`` table."""
        self._write().execute(
            "INSERT OR IGNORE INTO certified (variant, seed, par, line) VALUES (?, ?, ?, ?)",
            (variant, str(seed), par, line),
        )

    async def take_certified(self, variant: str) -> tuple[int, int, str] | None:
        """Delete one deal of ``variant`` from the table and return it."""
        row = (
            self._write()
            .execute(
                "DELETE FROM certified WHERE variant = ? AND seed = "
                "(SELECT seed FROM certified WHERE variant = ? LIMIT 1) "
                "RETURNING seed, par, line",
                (variant, variant),
            )
            .fetchone()
        )
        return None if row is None else (int(row[0]), int(row[1]), str(row[2]))

    async def keep_line(
        self, variant: str, seed: int, line: str, now_ms: int, keep_ms: int
    ) -> None:
        """Keep the line in ``lines`` (the races' pruning forgets it with them)."""
        self._write().execute(
            "INSERT OR REPLACE INTO lines (variant, seed, expires_ms, line) VALUES (?, ?, ?, ?)",
            (variant, str(seed), now_ms + keep_ms, line),
        )

    async def certified_line(self, variant: str, seed: int, now_ms: int) -> str | None:
        """The line from ``lines``, unless past its time."""
        row = self.db.execute(
            "SELECT line FROM lines WHERE variant = ? AND seed = ? AND expires_ms > ?",
            (variant, str(seed), now_ms),
        ).fetchone()
        return None if row is None else str(row[0])

    async def certified_count(self, variant: str) -> int:
        """The rows of ``variant`` in the ``certified`` table."""
        row = self.db.execute(
            "SELECT COUNT(*) FROM certified WHERE variant = ?", (variant,)
        ).fetchone()
        return int(row[0])

    async def save_results(
        self, code: str, race: int, variant: str, seed: int, results: list[dict[str, Any]]
    ) -> None:
        """Keep the results in SQLite."""
        self._write().execute(
            "INSERT OR REPLACE INTO results (code, race, variant, seed, results) "
            "VALUES (?, ?, ?, ?, ?)",
            (code, race, variant, str(seed), json.dumps(results)),
        )

    async def load_results(self, code: str, race: int) -> dict[str, Any] | None:
        """The results from SQLite."""
        row = self.db.execute(
            "SELECT variant, seed, results FROM results WHERE code = ? AND race = ?", (code, race)
        ).fetchone()
        if row is None:
            return None
        return {"variant": row[0], "seed": int(row[1]), "results": json.loads(row[2])}

    async def publish(self, code: str, event: dict[str, Any]) -> None:
        """Hand the event to this process's subscriber, if any."""
        self.publish_now(code, event)

    def publish_now(self, code: str, event: dict[str, Any]) -> None:
        """Hand the event to this process's subscriber, if any."""
        handler = self._subscribers.get(code)
        if handler is not None:
            handler(code, event)

    async def subscribe(self, code: str, handler: EventHandler) -> None:
        """Register the room's handler."""
        self._subscribers[code] = handler

    async def unsubscribe(self, code: str) -> None:
        """Drop the room's handler."""
        self._subscribers.pop(code, None)

    # daily challenge --------------------------------------------------------------------

    # A board's entries: ranked, not removed, not waiting for review.
    _BOARD = "date = ? AND variant = ? AND board = ? AND ranked = 1 AND removed = 0 AND flagged = 0"

    @staticmethod
    def _migrate_daily(db: sqlite3.Connection) -> None:
        """Columns of the daily entries a data directory from before them lacks."""
        columns = {row[1] for row in db.execute("PRAGMA table_info(daily_entries)")}
        for column, kind in (
            ("board", "TEXT NOT NULL DEFAULT 'people'"),
            ("flagged", "INTEGER NOT NULL DEFAULT 0"),
        ):
            if column not in columns:
                db.execute(f"ALTER TABLE daily_entries ADD COLUMN {column} {kind}")
        db.execute(
            "CREATE INDEX IF NOT EXISTS daily_boards "
            "ON daily_entries (date, variant, board, ranked, removed, flagged, score)"
        )

    async def daily_attempt(self, date: str, variant: str, player_id: str) -> int:
        """Count the attempt in SQLite."""
        row = (
            self._write()
            .execute(
                "INSERT INTO daily_attempts (date, variant, player_id, attempts) VALUES (?, ?, ?, 1) "
                "ON CONFLICT DO UPDATE SET attempts = attempts + 1 RETURNING attempts",
                (date, variant, player_id),
            )
            .fetchone()
        )
        return int(row[0])

    async def note_daily_start(
        self, date: str, variant: str, player_id: str, address: str, *, ranked: bool
    ) -> tuple[int, list[str]]:
        """A row per player and address of the day's deal (the first start's says whether
        it may be ranked); the rows of days gone are deleted."""
        db = self._write()
        gone = (dt.date.fromisoformat(date) - dt.timedelta(days=ADDRESS_KEEP_DAYS)).isoformat()
        db.execute("DELETE FROM daily_addresses WHERE date < ?", (gone,))
        key = (date, variant, address)
        db.execute(
            "INSERT OR IGNORE INTO daily_addresses VALUES (?, ?, ?, ?, ?)",
            (*key, player_id, int(ranked)),
        )
        where = "date = ? AND variant = ? AND address = ?"
        others = db.execute(
            f"SELECT player_id FROM daily_addresses WHERE {where} AND player_id != ? "
            "ORDER BY player_id",
            (*key, player_id),
        ).fetchall()
        counted = db.execute(
            f"SELECT COUNT(*) FROM daily_addresses WHERE {where} AND ranked = 1", key
        ).fetchone()
        return int(counted[0]), [row[0] for row in others]

    async def keep_daily_verdict(
        self, date: str, variant: str, player_id: str, unranked: str | None, flag: str | None
    ) -> None:
        """A row of the day's verdicts."""
        self._write().execute(
            "INSERT OR REPLACE INTO daily_verdicts VALUES (?, ?, ?, ?, ?)",
            (date, variant, player_id, unranked, flag),
        )

    async def daily_verdict(
        self, date: str, variant: str, player_id: str
    ) -> tuple[str | None, str | None] | None:
        """The row of the day's verdicts, if any."""
        row = self.db.execute(
            "SELECT unranked, flag FROM daily_verdicts "
            "WHERE date = ? AND variant = ? AND player_id = ?",
            (date, variant, player_id),
        ).fetchone()
        return None if row is None else (row[0], row[1])

    async def save_daily_entry(self, entry: Entry) -> Entry:
        """Insert the attempt (a repeat of the same attempt changes nothing)."""
        if entry.ranked:
            verdict = self.db.execute(
                "SELECT unranked, flag FROM daily_verdicts "
                "WHERE date = ? AND variant = ? AND player_id = ?",
                (entry.date, entry.variant, entry.player_id),
            ).fetchone()
            if verdict is not None:
                entry = judged(entry, verdict[0], verdict[1])
        self._write().execute(
            "INSERT OR IGNORE INTO daily_entries "
            "(date, variant, player_id, attempt, ranked, score, data, board, flagged) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.date,
                entry.variant,
                entry.player_id,
                entry.attempt,
                int(entry.ranked),
                entry.score,
                json.dumps(entry.to_dict()),
                entry.board,
                int(entry.held),
            ),
        )
        return entry

    def _entries(self, sql: str, args: tuple[Any, ...]) -> list[Entry]:
        return [Entry.from_dict(json.loads(row[0])) for row in self.db.execute(sql, args)]

    # An entry's data without its move log: SQLite leaves the log out before Python reads
    # a byte of it (a 10,000-move log is over 100 KB of JSON).
    _PUBLIC = "json_remove(data, '$.log', '$.times')"

    async def daily_top(
        self, date: str, variant: str, offset: int, limit: int, board: str = "people"
    ) -> list[Entry]:
        """The board from SQLite, ties in player id order."""
        return self._entries(
            f"SELECT {self._PUBLIC} FROM daily_entries WHERE {self._BOARD} "
            "ORDER BY score, player_id LIMIT ? OFFSET ?",
            (date, variant, board, limit, offset),
        )

    async def daily_index(
        self, date: str, variant: str, player_id: str, board: str = "people"
    ) -> int | None:
        """Entries before the player's, in board order."""
        row = self.db.execute(
            f"SELECT score FROM daily_entries WHERE {self._BOARD} AND player_id = ?",
            (date, variant, board, player_id),
        ).fetchone()
        if row is None:
            return None
        before = self.db.execute(
            f"SELECT COUNT(*) FROM daily_entries WHERE {self._BOARD} "
            "AND (score < ? OR (score = ? AND player_id < ?))",
            (date, variant, board, row[0], row[0], player_id),
        ).fetchone()
        return int(before[0])

    async def daily_better(
        self, date: str, variant: str, score: float, board: str = "people"
    ) -> int:
        """Entries with a lower score."""
        row = self.db.execute(
            f"SELECT COUNT(*) FROM daily_entries WHERE {self._BOARD} AND score < ?",
            (date, variant, board, score),
        ).fetchone()
        return int(row[0])

    async def daily_count(self, date: str, variant: str, board: str = "people") -> int:
        """Entries on the day's board."""
        row = self.db.execute(
            f"SELECT COUNT(*) FROM daily_entries WHERE {self._BOARD}", (date, variant, board)
        ).fetchone()
        return int(row[0])

    async def daily_entries(self, date: str, variant: str) -> list[Entry]:
        """Every attempt of the day, the boards' first."""
        return self._entries(
            "SELECT data FROM daily_entries WHERE date = ? AND variant = ? "
            "ORDER BY ranked DESC, removed, flagged, board DESC, score, player_id, attempt",
            (date, variant),
        )

    async def player_history(self, player_id: str) -> list[Entry]:
        """The player's attempts, oldest first."""
        return self._entries(
            f"SELECT {self._PUBLIC} FROM daily_entries WHERE player_id = ? "
            "ORDER BY date, variant, attempt",
            (player_id,),
        )

    async def daily_entry(
        self, date: str, variant: str, player_id: str, attempt: int
    ) -> Entry | None:
        """The attempt's row, whole."""
        entries = self._entries(
            "SELECT data FROM daily_entries WHERE date = ? AND variant = ? AND player_id = ? "
            "AND attempt = ?",
            (date, variant, player_id, attempt),
        )
        return entries[0] if entries else None

    async def best_entries(self, variant: str, limit: int, board: str = "people") -> list[Entry]:
        """The variant's best entries of a board over all days."""
        return self._entries(
            f"SELECT {self._PUBLIC} FROM daily_entries WHERE variant = ? AND board = ? "
            "AND ranked = 1 "
            "AND removed = 0 AND flagged = 0 ORDER BY score, date, player_id LIMIT ?",
            (variant, board, limit),
        )

    async def remove_daily_entry(
        self, date: str, variant: str, player_id: str, reason: str
    ) -> bool:
        """Mark the ranked entry removed (on a board or in review) and log why."""
        db = self._write()
        cursor = db.execute(
            "UPDATE daily_entries SET removed = 1 WHERE date = ? AND variant = ? "
            "AND player_id = ? AND ranked = 1 AND removed = 0",
            (date, variant, player_id),
        )
        if cursor.rowcount == 0:
            return False
        db.execute(
            "INSERT INTO daily_removals (date, variant, player_id, reason) VALUES (?, ?, ?, ?)",
            (date, variant, player_id, reason),
        )
        return True

    async def daily_flagged(self) -> list[Entry]:
        """Flagged entries not yet reviewed."""
        return self._entries(
            "SELECT data FROM daily_entries WHERE ranked = 1 AND removed = 0 AND flagged = 1 "
            "ORDER BY date, variant, score, player_id",
            (),
        )

    async def keep_daily_entry(
        self, date: str, variant: str, player_id: str, reason: str
    ) -> Entry | None:
        """Put the flagged entry on its board, the reason in its data."""
        where = (
            "date = ? AND variant = ? AND player_id = ? AND ranked = 1 AND removed = 0 "
            "AND flagged = 1"
        )
        key = (date, variant, player_id)
        row = self.db.execute(f"SELECT data FROM daily_entries WHERE {where}", key).fetchone()
        if row is None:
            return None
        kept = replace(Entry.from_dict(json.loads(row[0])), kept=reason)
        self._write().execute(
            f"UPDATE daily_entries SET flagged = 0, data = ? WHERE {where}",
            (json.dumps(kept.to_dict()), *key),
        )
        return kept

    async def add_daily_room(self, date: str, variant: str, code: str) -> None:
        """Note the attempt's room."""
        self._write().execute(
            "INSERT OR IGNORE INTO daily_rooms (date, variant, code) VALUES (?, ?, ?)",
            (date, variant, code),
        )

    async def daily_rooms(self, date: str, variant: str) -> list[str]:
        """The rooms noted for the day and not dropped."""
        rows = self.db.execute(
            "SELECT code FROM daily_rooms WHERE date = ? AND variant = ? ORDER BY code",
            (date, variant),
        )
        return [row[0] for row in rows]

    async def drop_daily_rooms(self, date: str, variant: str, codes: list[str]) -> None:
        """Forget the rooms."""
        if codes:
            self._write().executemany(
                "DELETE FROM daily_rooms WHERE date = ? AND variant = ? AND code = ?",
                [(date, variant, code) for code in codes],
            )


SECRET_BYTES = 32
"""The token secret's length."""


def _write_secret(path: Path) -> None:
    """A new token secret at ``path``, whole or not at all: a secret file cut short (a full
    disk) would sign every token of the node with what it held."""
    partial = path.with_name(path.name + ".new")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(SECRET_BYTES))
            f.flush()
            os.fsync(f.fileno())
        os.link(partial, path)  # fails if another start wrote one meanwhile: that one stands
    except FileExistsError:
        pass
    except OSError as error:
        reason = (error.strerror or str(error)).lower()
        raise BackendUnavailable(
            f"cannot write the token secret {path}: {reason}{_disk_full(path.parent)}"
        ) from error
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()


def unwritable(data_dir: Path) -> str:
    """Words on the data directory, or its SQLite file, where this process may not write
    to it; else nothing."""
    for item in (data_dir / DB_FILE, data_dir):
        if item.exists() and not os.access(item, os.W_OK):
            return f" ({item} is read-only to this process)"
    return ""


def _disk_full(folder: Path) -> str:
    """Words on the disk holding ``folder`` when it is (nearly) full, else nothing."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    return f" (the disk holding {folder} is full: {free} bytes free)" if free < 1 << 20 else ""
