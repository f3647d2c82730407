"""What an operator may do to a running deployment: list rooms, close one, revoke an identity.

Each acts on the store, so it holds for every node at once, and tells the nodes through
the backend: a closed room's last event goes out on the room's channel (every node
holding a member of it sends its members that event and lets them go), and a revoked
identity is named on the nodes' notices channel (each node closes that player's
connection; the tokens given so far no longer verify anywhere).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from ..protocol import CloseCode, ErrorCode, ProtocolError
from . import room as rooms
from .room import Role

if TYPE_CHECKING:
    from .node import Node

__all__ = ["NOTICES", "Admin"]

log = structlog.get_logger("solrace.server")

NOTICES = "notices"
"""The channel (a pseudo room: no room code has lower-case letters) of node-wide notices."""
MAX_LISTED = 1000


class Admin:
    """The operator's requests, and the node's side of the notices they send."""

    def __init__(self, node: Node) -> None:
        self.node = node

    async def start(self) -> None:
        """Hear the notices every node hears."""
        await self.node.backend.subscribe(NOTICES, self.on_notice)

    async def rooms(self, limit: int = MAX_LISTED) -> list[dict[str, Any]]:
        """Every room in the store (at most ``limit``), as an operator needs to see it."""
        backend = self.node.backend
        listed = []
        for code in await backend.room_codes(limit):
            room = await backend.load_room(code)
            if room is None:
                continue
            members = list(room.members.values())
            listed.append(
                {
                    "code": room.code,
                    "variant": room.settings.variant,
                    "state": room.state.value,
                    "race": room.race,
                    "daily": room.settings.daily,
                    "players": [
                        {"player_id": m.player_id, "name": m.name, "connected": m.connected}
                        for m in members
                        if m.role is Role.PLAYER
                    ],
                    "spectators": sum(1 for m in members if m.role is Role.SPECTATOR),
                    "held_here": code in self.node.held,
                }
            )
        return listed

    async def close_room(self, code: str, reason: str) -> bool:
        """Close a room: its members are let go, told why; False if there is no such room."""
        node = self.node
        try:
            outcome = await node.backend.update_room(code, lambda r: rooms.close(r, reason))
        except ProtocolError as error:
            if error.code is ErrorCode.ROOM_NOT_FOUND:
                return False
            raise
        await node.fanout.publish(code, outcome)
        log.warning("room_closed_by_operator", room=code, reason=reason)
        return True

    async def revoke(self, player_id: str) -> bool:
        """Revoke an identity's tokens on every node at once; False if it is unknown."""
        node = self.node
        if not await node.backend.revoke_player(player_id):
            return False
        await node.backend.publish(NOTICES, {"type": "revoked", "player_id": player_id})
        log.warning("identity_revoked", player=player_id)
        return True

    def on_notice(self, code: str, notice: dict[str, Any]) -> None:
        """A notice to every node: a revoked identity's connection here is closed (but the
        one named ``keep``: the account's own connection that revoked its tokens)."""
        if notice.get("type") != "revoked":
            return
        session = self.node.sessions.get(str(notice.get("player_id")))
        if session is None or self.node.accounts.connection(session) == notice.get("keep"):
            return
        why = str(notice.get("why") or "this identity was revoked")
        self.node.spawn(session.close(CloseCode.REVOKED, why))
