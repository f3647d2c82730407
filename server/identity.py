"""Player identity: ids, signed tokens, display names, and the node's ``hello``.

A guest's display name is never an account's, nor one that looks like it: the hello, or
the rename, is refused with ``name_taken``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import unicodedata
from typing import TYPE_CHECKING

import structlog

from ..protocol import ErrorCode, Hello, ProtocolError, RoomSnapshot, Welcome
from . import names
from . import room as rooms

if TYPE_CHECKING:
    from .node import Node
    from .room import Room
    from .session import Session

__all__ = [
    "Identity",
    "check_name",
    "new_player_id",
    "sign_token",
    "token_player",
    "verify_token",
]

log = structlog.get_logger("solrace.server")


def new_player_id() -> str:
    """A fresh, random player id."""
    return secrets.token_hex(8)


def _mac(secret: bytes, player_id: str, gen: int) -> str:
    signed = player_id if gen == 0 else f"{player_id}:{gen}"
    digest = hmac.new(secret, signed.encode(), hashlib.sha256).digest()[:18]
    return base64.urlsafe_b64encode(digest).decode()


def sign_token(secret: bytes, player_id: str, gen: int = 0) -> str:
    """The token that proves ``player_id``: the id and its HMAC-SHA256 under ``secret``.

    ``gen`` is the identity's token generation: revoking its tokens moves it on, and a
    token of an earlier generation no longer verifies.
    """
    return f"{player_id}.{_mac(secret, player_id, gen)}"


def token_player(token: str) -> str | None:
    """The player id a token names (not yet verified), or None if it is malformed."""
    player_id, _, mac = token.partition(".")
    if not player_id or not mac or len(player_id) > 64 or not token.isascii():
        return None
    return player_id


def verify_token(secret: bytes, token: str, gen: int = 0) -> str | None:
    """The player id a token proves (of generation ``gen``), or None if it is forged,
    malformed or of another generation."""
    player_id = token_player(token)
    if player_id is None:
        return None
    mac = token.partition(".")[2]
    return player_id if hmac.compare_digest(mac, _mac(secret, player_id, gen)) else None


def check_name(name: str, max_len: int) -> str:
    """The display name, NFKC-normalised and trimmed; raise ProtocolError(BAD_NAME) if it is
    empty, long, invisible or odd (the rules: :func:`.names.name_problem`)."""
    cleaned = " ".join(name.split())
    if names.longer_than(cleaned, 4 * max_len):  # far too long: spare normalising it
        raise ProtocolError(ErrorCode.BAD_NAME, f"a display name has at most {max_len} characters")
    cleaned = " ".join(unicodedata.normalize("NFKC", cleaned).split())
    problem = names.name_problem(cleaned, max_len)
    if problem is not None:
        raise ProtocolError(ErrorCode.BAD_NAME, problem)
    return cleaned


class Identity:
    """The node's ``hello``: a new player, or one coming back with a token."""

    def __init__(self, node: Node) -> None:
        self.node = node

    async def authenticate(self, token: str) -> tuple[str, str, int] | None:
        """The player a token proves, with its name and token generation, if the token is
        of the identity's current generation (not revoked) and the identity is known."""
        player_id = token_player(token)
        known = await self.node.backend.player(player_id) if player_id else None
        if player_id is None or known is None:
            return None
        name, gen = known
        if verify_token(self.node.secret, token, gen) is None:
            return None
        return player_id, name, gen

    async def hello(self, session: Session, req: Hello) -> None:
        """Identify the connection; a member of a room resumes with a fresh snapshot."""
        node = self.node
        backend = node.backend
        if session.player_id is not None:
            raise ProtocolError(ErrorCode.ALREADY_IDENTIFIED, "this connection said hello already")
        max_len = node.config.limits.max_name_len
        gen = 0
        if req.account is not None or req.password is not None:
            player_id, name, gen = await node.accounts.login(session, req)
        elif req.token is not None:
            known = await self.authenticate(req.token)
            if known is None:
                raise ProtocolError(ErrorCode.BAD_TOKEN, "that token is not valid here")
            player_id, name, gen = known
            if await backend.account(player_id) is None:  # an account keeps its name
                wanted = name if req.name is None else check_name(req.name, max_len)
                await self._check_guest_name(wanted, player_id if wanted == name else None)
                if wanted != name:
                    name = wanted
                    await backend.save_player(player_id, name)
        else:
            name = check_name(req.name or "", max_len)
            await self._check_guest_name(name)
            await node.guard.spend(session, node.guard.identities, node.now_ms())
            player_id = new_player_id()
            await backend.save_player(player_id, name)
        await backend.touch_player(player_id, node.now_ms(), node.config.guest_ttl_s)
        # The player's connection that dropped may still be leaving its room (a spectator)
        # or being marked dropped (a player): the two never interleave.
        async with node.player_lock(player_id):
            await self._take_over(session, req, player_id, name, gen)

    async def _room_of(self, player_id: str) -> tuple[str | None, Room | None]:
        """The room the player's pointer names, and that room if the player is a member
        of it (else None)."""
        backend = self.node.backend
        code = await backend.player_room(player_id)
        room = await backend.load_room(code) if code else None
        return code, room if room is not None and player_id in room.members else None

    async def _check_guest_name(self, name: str, keeping: str | None = None) -> None:
        """Refuse a guest a name an account has, or one that looks like it (the forms
        account names are compared by, :func:`.names.name_keys`): in a room the two would
        look the same. A guest named so before the account was claimed picks another,
        but for one coming back (``keeping``, its player id, with the name it had) to the
        room it is a member of: it keeps its name there, as refused it could not resume
        its race (a rival claiming a look-alike name while it was away made it lose)."""
        if await self.node.backend.account_named(names.name_keys(name)) is None:
            return
        if keeping is not None and (await self._room_of(keeping))[1] is not None:
            return
        raise ProtocolError(
            ErrorCode.NAME_TAKEN,
            f"an account has the name {name!r}, or one that looks like it: pick another "
            "name, or log in to the account",
        )

    async def _take_over(
        self, session: Session, req: Hello, player_id: str, name: str, gen: int
    ) -> None:
        node = self.node
        backend = node.backend
        max_len = node.config.limits.max_name_len
        old = node.sessions.get(player_id)
        if old is not None and old is not session:
            await node.detach(old)
            old.player_id = None
            node.spawn(old.close(4001, "connected again elsewhere"))
        session.player_id, session.name = player_id, name
        session.legal = req.legal_moves
        session.bot = req.bot
        node.guard.bind(session, time.monotonic())  # the identity's own message rate
        node.sessions[player_id] = session
        structlog.contextvars.bind_contextvars(player=player_id)
        token = sign_token(node.secret, player_id, gen)
        created_ms = await backend.account_created_ms(player_id)
        account = None if created_ms is None else {"name": name, "created_ms": created_ms}
        code, room = await self._room_of(player_id)
        if room is None:
            if code:
                await backend.forget_player_room(player_id, code)
            await session.reply(
                Welcome(
                    req.id,
                    player_id,
                    name,
                    token,
                    server=node.server_info,
                    account=account,
                    bot=req.bot,
                )
            )
            return
        outcome = await backend.update_room(
            room.code,
            lambda r: rooms.set_connected(
                r, player_id, True, node.now_ms(), name, max_name_len=max_len
            ),
        )
        assert outcome.room is not None
        await node.attach(session, outcome.room, room.members[player_id].role)
        await session.reply(
            Welcome(
                req.id,
                player_id,
                name,
                token,
                room=room.code,
                server=node.server_info,
                account=account,
                bot=req.bot,
            )
        )
        await node.fanout.publish(room.code, outcome)
        await session.reply(RoomSnapshot(None, await node.commands.snapshot(session)))
        log.info("resumed", room=room.code)
