"""Accounts in the embedded backend's SQLite file.

``accounts`` holds each account's name, password hash (argon2id) and when it was made;
``account_names`` the forms of each account's name that another name must not share
(:func:`..names.name_keys`), so that two accounts never look alike. A guest becomes an
account by a row in each; deleting one removes its rows and its ``players`` row, and
rewrites its daily entries under a fresh player id each day and an anonymous name.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from .base import LOGIN_ADDRESSES, AccountRecord

__all__ = ["ACCOUNTS_SCHEMA", "EmbeddedAccountsMixin"]

ACCOUNTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS accounts (
    player_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    password TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS account_names (
    key TEXT PRIMARY KEY,
    player_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS account_names_player ON account_names (player_id);
CREATE TABLE IF NOT EXISTS login_addresses (
    player_id TEXT NOT NULL,
    tag TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (player_id, tag)
);
"""


def anonymised(data: str, player_id: str, name: str) -> str:
    """A stored entry's JSON with another player id and name."""
    entry: dict[str, Any] = json.loads(data)
    entry["player_id"], entry["name"] = player_id, name
    return json.dumps(entry)


class EmbeddedAccountsMixin:
    """Account storage for :class:`~.embedded.EmbeddedBackend`."""

    if TYPE_CHECKING:  # the backend's own

        @property
        def db(self) -> sqlite3.Connection: ...

        def _write(self) -> sqlite3.Connection: ...

    async def account(self, player_id: str) -> AccountRecord | None:
        """The account's row, if the player has one."""
        row = self.db.execute(
            "SELECT name, password, created_ms FROM accounts WHERE player_id = ?", (player_id,)
        ).fetchone()
        if row is None:
            return None
        return AccountRecord(player_id, str(row[0]), str(row[1]), int(row[2]))

    async def account_named(self, keys: Collection[str]) -> str | None:
        """The account whose name has one of ``keys``."""
        for key in sorted(keys):
            row = self.db.execute(
                "SELECT player_id FROM account_names WHERE key = ?", (key,)
            ).fetchone()
            if row is not None:
                return str(row[0])
        return None

    async def create_account(
        self, player_id: str, name: str, keys: Collection[str], password_hash: str, now_ms: int
    ) -> bool:
        """Insert the account and its name's keys, in this pass's transaction."""
        db = self.db
        if db.execute("SELECT 1 FROM players WHERE player_id = ?", (player_id,)).fetchone() is None:
            return False
        if db.execute("SELECT 1 FROM accounts WHERE player_id = ?", (player_id,)).fetchone():
            return False
        for key in keys:
            row = db.execute("SELECT player_id FROM account_names WHERE key = ?", (key,)).fetchone()
            if row is not None and row[0] != player_id:
                return False
        db = self._write()
        db.execute(
            "INSERT INTO accounts (player_id, name, password, created_ms) VALUES (?, ?, ?, ?)",
            (player_id, name, password_hash, now_ms),
        )
        db.executemany(
            "INSERT OR REPLACE INTO account_names (key, player_id) VALUES (?, ?)",
            [(key, player_id) for key in keys],
        )
        db.execute("UPDATE players SET name = ? WHERE player_id = ?", (name, player_id))
        return True

    async def set_password(
        self, player_id: str, old_hash: str, new_hash: str, *, revoke: bool = True
    ) -> int | None:
        """Swap the hash if it is still ``old_hash``; move the generation on."""
        db = self._write()
        changed = db.execute(
            "UPDATE accounts SET password = ? WHERE player_id = ? AND password = ?",
            (new_hash, player_id, old_hash),
        ).rowcount
        if not changed:
            return None
        if revoke:
            db.execute("UPDATE players SET gen = gen + 1 WHERE player_id = ?", (player_id,))
        row = db.execute("SELECT gen FROM players WHERE player_id = ?", (player_id,)).fetchone()
        return int(row[0]) if row is not None else None

    async def known_login_address(self, player_id: str, tag: str) -> bool:
        """A row of ``login_addresses``."""
        row = self.db.execute(
            "SELECT 1 FROM login_addresses WHERE player_id = ? AND tag = ?", (player_id, tag)
        ).fetchone()
        return row is not None

    async def note_login_address(self, player_id: str, tag: str, now_ms: int) -> None:
        """Keep the row, and the account's newest ``LOGIN_ADDRESSES`` alone."""
        db = self._write()
        db.execute(
            "INSERT OR REPLACE INTO login_addresses VALUES (?, ?, ?)", (player_id, tag, now_ms)
        )
        db.execute(
            "DELETE FROM login_addresses WHERE player_id = ? AND tag NOT IN ("
            "SELECT tag FROM login_addresses WHERE player_id = ? ORDER BY at_ms DESC LIMIT ?)",
            (player_id, player_id, LOGIN_ADDRESSES),
        )

    async def delete_account(self, player_id: str, name: str) -> bool:
        """Delete the account's rows and anonymise its daily entries, in one transaction."""
        if await self.account(player_id) is None:
            return False
        db = self._write()
        days = db.execute(
            "SELECT DISTINCT date, variant FROM daily_entries WHERE player_id = ? "
            "UNION SELECT DISTINCT date, variant FROM daily_attempts WHERE player_id = ?",
            (player_id, player_id),
        ).fetchall()
        for date, variant in days:
            anonymous = secrets.token_hex(8)  # a player id, of no one
            day = (date, variant, player_id)
            rows = db.execute(
                "SELECT attempt, data FROM daily_entries "
                "WHERE date = ? AND variant = ? AND player_id = ?",
                day,
            ).fetchall()
            db.executemany(
                "UPDATE daily_entries SET player_id = ?, data = ? "
                "WHERE date = ? AND variant = ? AND player_id = ? AND attempt = ?",
                [(anonymous, anonymised(data, anonymous, name), *day, n) for n, data in rows],
            )
            for table in ("daily_attempts", "daily_removals"):
                db.execute(
                    f"UPDATE {table} SET player_id = ? "
                    "WHERE date = ? AND variant = ? AND player_id = ?",
                    (anonymous, *day),
                )
        db.execute("DELETE FROM account_names WHERE player_id = ?", (player_id,))
        db.execute("DELETE FROM login_addresses WHERE player_id = ?", (player_id,))
        db.execute("DELETE FROM accounts WHERE player_id = ?", (player_id,))
        db.execute("DELETE FROM players WHERE player_id = ?", (player_id,))
        return True
