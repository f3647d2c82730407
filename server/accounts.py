"""Accounts: a guest claims its name with a password, and logs in with it from anywhere.

An account is an identity (a player id, with its history) that never expires, whose
display name is its own: no other account's looks like it (:func:`.names.name_keys`).
Passwords are hashed with argon2id (argon2-cffi's defaults, RFC 9106's second
recommended profile: 64 MiB, 3 passes, 4 lanes) on a few threads of the node's own
(``password_hashers``), never on the event loop. Every password check (a login,
``change_password``, ``delete_account``) is budgeted per client address and per account,
before any hashing, so a flood of logins costs the node a bounded number of hashes; a
login to an unknown name hashes all the same, so the time of a refusal does not tell
which names are accounts.

Changing the password, or revoking the tokens, moves the identity's token generation on:
every token given before stops working, and the account's connections elsewhere are
closed (4003), on every node, through the notices channel. The connection that asked keeps
going with the fresh token in its reply.
"""

from __future__ import annotations

import asyncio
import hashlib
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import structlog
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from ..protocol import (
    Account,
    ChangePassword,
    Claim,
    CloseCode,
    DeleteAccount,
    ErrorCode,
    Hello,
    Ok,
    ProtocolError,
    RevokeTokens,
)
from . import names
from .admin import NOTICES
from .backends import AccountRecord
from .daily import address_tag
from .identity import check_name, sign_token

if TYPE_CHECKING:
    from .node import Node
    from .session import Session

__all__ = [
    "DELETED_NAME",
    "MAX_PASSWORD_BYTES",
    "MAX_PASSWORD_LEN",
    "MIN_PASSWORD_LEN",
    "Accounts",
    "check_password",
]

log = structlog.get_logger("solrace.server")

MIN_PASSWORD_LEN = 8
MAX_PASSWORD_LEN = 128
"""A password's length in characters (code points, after NFKC)."""
MAX_PASSWORD_BYTES = 256
"""A password's length in UTF-8 bytes: what a msgpack string of a request may hold."""
DELETED_NAME = names.DELETED_NAME


def check_password(password: str) -> str:
    """The password NFKC-normalised (as NIST SP 800-63B advises); raise
    ProtocolError(BAD_PASSWORD) if it is too short or too long."""
    if len(password) > MAX_PASSWORD_BYTES:  # spare normalising a long one
        raise ProtocolError(ErrorCode.BAD_PASSWORD, _LENGTHS)
    normal = unicodedata.normalize("NFKC", password)
    if not MIN_PASSWORD_LEN <= len(normal) <= MAX_PASSWORD_LEN or (
        len(normal.encode("utf-8", "surrogatepass")) > MAX_PASSWORD_BYTES
    ):
        raise ProtocolError(ErrorCode.BAD_PASSWORD, _LENGTHS)
    return normal


_LENGTHS = (
    f"a password has {MIN_PASSWORD_LEN} to {MAX_PASSWORD_LEN} characters "
    f"(at most {MAX_PASSWORD_BYTES} bytes of UTF-8)"
)
_WRONG = "wrong account name or password"


def _budget_key(keys: frozenset[str]) -> str:
    """The key the account budgets of a name that is no account's are kept under (an
    account's are kept under its player id, whatever form of its name a login gives)."""
    return hashlib.sha256(min(keys).encode()).hexdigest()[:32]


class Accounts:
    """The node's account requests, and the password checks of a login."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.hasher = PasswordHasher()
        self._pool: ThreadPoolExecutor | None = None
        self._dummy: str | None = None  # a hash to check a login to no account against

    def close(self) -> None:
        """Let the hashing threads go."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    # -- hashing, off the event loop -----------------------------------------------------

    async def _run(self, func: Any, *args: Any) -> Any:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=max(1, self.node.config.password_hashers),
                thread_name_prefix="solrace-hash",
            )
        return await asyncio.get_running_loop().run_in_executor(self._pool, func, *args)

    async def hash(self, password: str) -> str:
        """The password's argon2id hash."""
        hashed: str = await self._run(self.hasher.hash, password)
        return hashed

    async def verify(self, hashed: str | None, password: str) -> bool:
        """Whether the password is the one hashed (None: no account, checked all the same)."""
        if hashed is None:
            if self._dummy is None:
                self._dummy = await self.hash("not the password of anyone")
            hashed = self._dummy
            password = password + "\0"  # never a match, at the same cost
        try:
            return bool(await self._run(self.hasher.verify, hashed, password))
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    async def _checked(
        self, session: Session, record: AccountRecord | None, keys: frozenset[str], password: str
    ) -> bool:
        """Spend the password-check budgets (of the address, and of the account unless the
        address is one of its last right ones), then check the password against the
        account's (none: a wrong one); a right one keeps the address among the account's."""
        node = self.node
        account = record.player_id if record is not None else _budget_key(keys)
        # From an address the password was given right from before, the account's own
        # budget is not spent (the address's is): guesses from elsewhere, which spend it,
        # cannot lock the owner out of their account at home.
        tag = address_tag(node.secret, session.address)
        known = record is not None and await node.backend.known_login_address(account, tag)
        budgets = node.guard.logins[:1] if known else node.guard.logins
        await node.guard.spend(session, budgets, node.now_ms(), account=account)
        try:
            normal = check_password(password)
        except ProtocolError:
            normal = None  # no password of any account: refused, at the cost of a check
        hashed = record.password_hash if record is not None and normal is not None else None
        right = await self.verify(hashed, normal or password)  # with None, never a match
        if right and record is not None:
            await node.backend.note_login_address(account, tag, node.now_ms())
        return right

    async def _rehash(self, record: AccountRecord, password: str) -> None:
        """Hash again a password hashed with older parameters (keeping its tokens)."""
        if not self.hasher.check_needs_rehash(record.password_hash):
            return
        new = await self.hash(check_password(password))
        await self.node.backend.set_password(
            record.player_id, record.password_hash, new, revoke=False
        )

    # -- hello ---------------------------------------------------------------------------

    async def login(self, session: Session, req: Hello) -> tuple[str, str, int]:
        """The account a hello logs in to: its player id, name and token generation; raise
        WRONG_PASSWORD for a wrong name or password (the same either way)."""
        node = self.node
        backend = node.backend
        if req.token is not None or req.password is None or req.account is None:
            raise ProtocolError(
                ErrorCode.BAD_FIELD, "a login sends 'account' and 'password', and no 'token'"
            )
        keys = names.name_keys(check_name(req.account, node.config.limits.max_name_len))
        player_id = await backend.account_named(keys)
        record = await backend.account(player_id) if player_id is not None else None
        if not await self._checked(session, record, keys, req.password) or record is None:
            log.info("login_refused")
            raise ProtocolError(ErrorCode.WRONG_PASSWORD, _WRONG)
        known = await backend.player(record.player_id)
        if known is None:  # deleted meanwhile
            raise ProtocolError(ErrorCode.WRONG_PASSWORD, _WRONG)
        await self._rehash(record, req.password)
        log.info("logged_in", player=record.player_id)
        return record.player_id, record.name, known[1]

    # -- requests ------------------------------------------------------------------------

    async def _account(self, session: Session) -> AccountRecord:
        record = await self.node.backend.account(self.node.identified(session))
        if record is None:
            raise ProtocolError(
                ErrorCode.NOT_AN_ACCOUNT, "this identity is a guest: claim an account first"
            )
        return record

    async def _token(self, player_id: str) -> str:
        known = await self.node.backend.player(player_id)
        if known is None:
            raise ProtocolError(ErrorCode.BAD_TOKEN, "this identity is gone")
        return sign_token(self.node.secret, player_id, known[1])

    async def _log_out_elsewhere(self, session: Session, player_id: str, why: str) -> None:
        """Close the account's connections on every node but this one (4003)."""
        await self.node.backend.publish(
            NOTICES,
            {
                "type": "revoked",
                "player_id": player_id,
                "keep": self.connection(session),
                "why": why,
            },
        )

    def connection(self, session: Session) -> str:
        """The session's name across the nodes: the node, its boot and the connection."""
        info = self.node.server_info
        return f"{info.get('node')}/{info.get('boot')}/{session.conn_id}"

    async def claim(self, session: Session, req: Claim) -> None:
        """The connected guest becomes an account under its display name."""
        node = self.node
        backend = node.backend
        player_id = node.identified(session)
        if await backend.account(player_id) is not None:
            raise ProtocolError(ErrorCode.ALREADY_AN_ACCOUNT, "this identity is an account already")
        password = check_password(req.password)
        name = session.name
        keys = names.name_keys(name)
        taken = f"an account has the name {name!r}, or one that looks like it: pick another"
        if await backend.account_named(keys) not in (None, player_id):
            raise ProtocolError(ErrorCode.NAME_TAKEN, taken)
        now = node.now_ms()
        await node.guard.spend(session, node.guard.accounts, now)
        hashed = await self.hash(password)
        if not await backend.create_account(player_id, name, keys, hashed, now):
            if await backend.account(player_id) is not None:
                raise ProtocolError(
                    ErrorCode.ALREADY_AN_ACCOUNT, "this identity is an account already"
                )
            raise ProtocolError(ErrorCode.NAME_TAKEN, taken)
        # Its owner set the password from here: a right one from here spends no account
        # budget (see _checked).
        await backend.note_login_address(player_id, address_tag(node.secret, session.address), now)
        log.info("account_claimed", player=player_id)
        await session.reply(Account(req.id, name, now, await self._token(player_id)))

    async def change_password(self, session: Session, req: ChangePassword) -> None:
        """A new password; every other token of the account stops working."""
        record = await self._account(session)
        new = check_password(req.new)
        if not await self._checked(session, record, names.name_keys(record.name), req.old):
            raise ProtocolError(ErrorCode.WRONG_PASSWORD, "wrong password")
        hashed = await self.hash(new)
        # Only over the hash just checked: a change made meanwhile elsewhere wins.
        gen = await self.node.backend.set_password(record.player_id, record.password_hash, hashed)
        if gen is None:
            raise ProtocolError(ErrorCode.WRONG_PASSWORD, "the password changed meanwhile")
        await self._log_out_elsewhere(session, record.player_id, "the account's password changed")
        log.info("password_changed", player=record.player_id)
        token = sign_token(self.node.secret, record.player_id, gen)
        await session.reply(Account(req.id, record.name, record.created_ms, token))

    async def revoke_tokens(self, session: Session, req: RevokeTokens) -> None:
        """Every token of the account given so far stops working; this connection stays."""
        record = await self._account(session)
        await self.node.backend.revoke_player(record.player_id)
        await self._log_out_elsewhere(
            session, record.player_id, "the account's tokens were revoked"
        )
        log.info("tokens_revoked", player=record.player_id)
        token = await self._token(record.player_id)
        await session.reply(Account(req.id, record.name, record.created_ms, token))

    async def delete_account(self, session: Session, req: DeleteAccount) -> None:
        """Delete the account (its daily entries anonymised), then close the connection."""
        node = self.node
        record = await self._account(session)
        if session.room is not None or await node.backend.player_room(record.player_id):
            raise ProtocolError(ErrorCode.ALREADY_IN_ROOM, "leave your room first")
        await node.commands.check_not_racing_elsewhere(record.player_id)  # a daily attempt
        if not await self._checked(session, record, names.name_keys(record.name), req.password):
            raise ProtocolError(ErrorCode.WRONG_PASSWORD, "wrong password")
        if not await node.backend.delete_account(record.player_id, DELETED_NAME):
            raise ProtocolError(ErrorCode.NOT_AN_ACCOUNT, "this account is gone already")
        await self._log_out_elsewhere(session, record.player_id, "the account was deleted")
        log.warning("account_deleted", player=record.player_id)
        await session.reply(Ok(req.id))
        node.spawn(session.close(CloseCode.NORMAL, "the account was deleted"))
