"""The embedded backend: one process, in-process pub/sub, players and results in SQLite.

Rooms and move logs live in memory (a single node holds every member, so nothing else
could read them); players, the token secret and race results are on disk under the data
directory, so a restart keeps identities and results.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from pathlib import Path
from typing import Any

from ...protocol import ErrorCode, ProtocolError
from ..daily import Entry
from ..room import Outcome, Room
from .base import Backend, EventHandler, RoomUpdate

__all__ = ["EmbeddedBackend"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS players (
    player_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    room TEXT
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
CREATE TABLE IF NOT EXISTS daily_removals (
    date TEXT NOT NULL,
    variant TEXT NOT NULL,
    player_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    removed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE IF NOT EXISTS results (
    code TEXT NOT NULL,
    race INTEGER NOT NULL,
    variant TEXT NOT NULL,
    seed TEXT NOT NULL,
    results TEXT NOT NULL,
    PRIMARY KEY (code, race)
);
"""


class EmbeddedBackend(Backend):
    """Everything in this process; durable parts in ``data_dir/solrace.sqlite3``."""

    name = "embedded"
    in_process = True

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = Path(data_dir)
        self._db: sqlite3.Connection | None = None
        self._secret = b""
        self._rooms: dict[str, Room] = {}
        self._logs: dict[tuple[str, int, str], list[str]] = {}
        self._subscribers: dict[str, EventHandler] = {}

    async def start(self) -> None:
        """Open the SQLite file and the token secret, creating both on first run."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        secret_path = self.data_dir / "secret.key"
        if not secret_path.exists():
            fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
        self._secret = secret_path.read_bytes()
        self._db = sqlite3.connect(self.data_dir / "solrace.sqlite3", isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # With WAL, NORMAL survives a crash of the process; only a power loss may undo the
        # last commits. FULL made every join wait on the disk with the event loop blocked.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    async def close(self) -> None:
        """Close the SQLite file."""
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        """The open SQLite connection."""
        if self._db is None:
            raise RuntimeError("the embedded backend is not started")
        return self._db

    async def ready(self) -> bool:
        """Ready once started."""
        return self._db is not None

    async def secret(self) -> bytes:
        """The token key kept in ``data_dir/secret.key``."""
        return self._secret

    async def save_player(self, player_id: str, name: str) -> None:
        """Insert or rename a player."""
        self.db.execute(
            "INSERT INTO players (player_id, name) VALUES (?, ?) "
            "ON CONFLICT (player_id) DO UPDATE SET name = excluded.name",
            (player_id, name),
        )

    async def player_name(self, player_id: str) -> str | None:
        """The player's name from SQLite."""
        row = self.db.execute(
            "SELECT name FROM players WHERE player_id = ?", (player_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    async def set_player_room(self, player_id: str, code: str | None) -> None:
        """Remember the player's room."""
        self.db.execute("UPDATE players SET room = ? WHERE player_id = ?", (code, player_id))

    async def player_room(self, player_id: str) -> str | None:
        """The player's room, if it still exists."""
        row = self.db.execute(
            "SELECT room FROM players WHERE player_id = ?", (player_id,)
        ).fetchone()
        code = None if row is None else row[0]
        return code if code in self._rooms else None

    async def create_room(self, room: Room) -> bool:
        """Store the room unless its code is taken."""
        if room.code in self._rooms:
            return False
        self._rooms[room.code] = room
        return True

    async def load_room(self, code: str) -> Room | None:
        """The room from memory."""
        return self._rooms.get(code)

    async def update_room(self, code: str, change: RoomUpdate) -> Outcome:
        """Atomic by construction: nothing awaits between the read and the write."""
        return self.update_room_now(code, change)

    def update_room_now(self, code: str, change: RoomUpdate) -> Outcome:
        """Apply ``change`` to the in-memory record."""
        room = self._rooms.get(code)
        if room is None:
            raise ProtocolError(ErrorCode.ROOM_NOT_FOUND, f"no room {code!r}")
        outcome = change(room)
        if outcome.room is None:
            del self._rooms[code]
        else:
            self._rooms[code] = outcome.room
        return outcome

    async def room_count(self) -> int:
        """Rooms in memory."""
        return len(self._rooms)

    async def append_move(self, code: str, race: int, player_id: str, rev: int, move: str) -> None:
        """Append to the in-memory log, refusing a gap or a rewrite."""
        self.append_move_now(code, race, player_id, rev, move)

    def append_move_now(self, code: str, race: int, player_id: str, rev: int, move: str) -> None:
        """Append to the in-memory log, refusing a gap or a rewrite."""
        log = self._logs.setdefault((code, race, player_id), [])
        if rev != len(log):
            raise ProtocolError(ErrorCode.STALE_REVISION, f"the log holds {len(log)} moves")
        log.append(move)

    async def drop_room_logs(self, code: str) -> None:
        """Forget the room's in-memory logs."""
        for key in [k for k in self._logs if k[0] == code]:
            del self._logs[key]

    async def read_moves(self, code: str, race: int, player_id: str) -> list[str]:
        """A copy of the in-memory log."""
        return list(self._logs.get((code, race, player_id), ()))

    async def save_results(
        self, code: str, race: int, variant: str, seed: int, results: list[dict[str, Any]]
    ) -> None:
        """Keep the results in SQLite."""
        self.db.execute(
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

    _BOARD = "date = ? AND variant = ? AND ranked = 1 AND removed = 0"

    async def daily_attempt(self, date: str, variant: str, player_id: str) -> int:
        """Count the attempt in SQLite."""
        row = self.db.execute(
            "INSERT INTO daily_attempts (date, variant, player_id, attempts) VALUES (?, ?, ?, 1) "
            "ON CONFLICT DO UPDATE SET attempts = attempts + 1 RETURNING attempts",
            (date, variant, player_id),
        ).fetchone()
        return int(row[0])

    async def save_daily_entry(self, entry: Entry) -> None:
        """Insert the attempt (a repeat of the same attempt changes nothing)."""
        self.db.execute(
            "INSERT OR IGNORE INTO daily_entries "
            "(date, variant, player_id, attempt, ranked, score, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                entry.date,
                entry.variant,
                entry.player_id,
                entry.attempt,
                int(entry.ranked),
                entry.score,
                json.dumps(entry.to_dict()),
            ),
        )

    def _entries(self, sql: str, args: tuple[Any, ...]) -> list[Entry]:
        return [Entry.from_dict(json.loads(row[0])) for row in self.db.execute(sql, args)]

    async def daily_top(self, date: str, variant: str, offset: int, limit: int) -> list[Entry]:
        """The board from SQLite, ties in player id order."""
        return self._entries(
            f"SELECT data FROM daily_entries WHERE {self._BOARD} "
            "ORDER BY score, player_id LIMIT ? OFFSET ?",
            (date, variant, limit, offset),
        )

    async def daily_index(self, date: str, variant: str, player_id: str) -> int | None:
        """Entries before the player's, in board order."""
        row = self.db.execute(
            f"SELECT score FROM daily_entries WHERE {self._BOARD} AND player_id = ?",
            (date, variant, player_id),
        ).fetchone()
        if row is None:
            return None
        before = self.db.execute(
            f"SELECT COUNT(*) FROM daily_entries WHERE {self._BOARD} "
            "AND (score < ? OR (score = ? AND player_id < ?))",
            (date, variant, row[0], row[0], player_id),
        ).fetchone()
        return int(before[0])

    async def daily_better(self, date: str, variant: str, score: float) -> int:
        """Entries with a lower score."""
        row = self.db.execute(
            f"SELECT COUNT(*) FROM daily_entries WHERE {self._BOARD} AND score < ?",
            (date, variant, score),
        ).fetchone()
        return int(row[0])

    async def daily_count(self, date: str, variant: str) -> int:
        """Ranked entries of the day."""
        row = self.db.execute(
            f"SELECT COUNT(*) FROM daily_entries WHERE {self._BOARD}", (date, variant)
        ).fetchone()
        return int(row[0])

    async def daily_entries(self, date: str, variant: str) -> list[Entry]:
        """Every attempt of the day, the board's first."""
        return self._entries(
            "SELECT data FROM daily_entries WHERE date = ? AND variant = ? "
            "ORDER BY ranked DESC, removed, score, player_id, attempt",
            (date, variant),
        )

    async def player_history(self, player_id: str) -> list[Entry]:
        """The player's attempts, oldest first."""
        return self._entries(
            "SELECT data FROM daily_entries WHERE player_id = ? ORDER BY date, variant, attempt",
            (player_id,),
        )

    async def best_entries(self, variant: str, limit: int) -> list[Entry]:
        """The variant's best ranked entries over all days."""
        return self._entries(
            "SELECT data FROM daily_entries WHERE variant = ? AND ranked = 1 AND removed = 0 "
            "ORDER BY score, date, player_id LIMIT ?",
            (variant, limit),
        )

    async def remove_daily_entry(
        self, date: str, variant: str, player_id: str, reason: str
    ) -> bool:
        """Mark the ranked entry removed and log why."""
        cursor = self.db.execute(
            f"UPDATE daily_entries SET removed = 1 WHERE {self._BOARD} AND player_id = ?",
            (date, variant, player_id),
        )
        if cursor.rowcount == 0:
            return False
        self.db.execute(
            "INSERT INTO daily_removals (date, variant, player_id, reason) VALUES (?, ?, ?, ?)",
            (date, variant, player_id, reason),
        )
        return True
