"""One connection as the node sees it: who it is, which room and role, how to send to it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ..protocol import Codec, RateLimiter, ServerMessage
from .room import Role

__all__ = ["Session"]


class Session:
    """One connection: who it is, which room and role, and how to send to it.

    The node knows nothing of websockets: a session is given ``send`` (awaits the
    socket), ``push`` (queues a frame without waiting) and ``close``.
    """

    __slots__ = (
        "address",
        "address_rate",
        "bot",
        "busy",
        "close",
        "codec",
        "conn_id",
        "inflight",
        "legal",
        "limiter",
        "link",
        "lock",
        "name",
        "player_id",
        "push",
        "rate",
        "role",
        "room",
        "send",
    )

    def __init__(
        self,
        conn_id: str,
        codec: Codec,
        send: Callable[[bytes | str], Awaitable[None]],
        push: Callable[[bytes | str], None],
        close: Callable[[int, str], Awaitable[None]],
        limiter: RateLimiter,
        address: str = "local",
    ) -> None:
        self.conn_id = conn_id
        self.codec = codec
        self.send = send
        self.push = push
        self.close = close
        self.limiter = limiter  # before hello: the connection's own message rate
        self.address = address  # the client's address key (see budgets.client_key)
        self.rate: RateLimiter | None = None  # the identity's message rate, once known
        self.address_rate: RateLimiter | None = None  # the address's message rate
        self.lock = asyncio.Lock()  # held while a request runs: no snapshot shows half of one
        self.player_id: str | None = None
        self.name = ""
        self.room: str | None = None
        self.role: Role | None = None
        self.link = 0  # the room member's Member.link when this connection came into it
        self.legal = False  # send the legal moves in every ack's delta (hello legal_moves)
        self.bot = False  # the client said in its hello that it is a bot
        self.busy = False  # the connection's task is handling one of its frames
        # A move taken from the socket whose append is not yet confirmed (a backend in
        # another process): the connection's next requests wait for it.
        self.inflight: asyncio.Future[None] | None = None

    async def settled(self) -> None:
        """Wait until no move taken from the socket waits for its append."""
        while self.inflight is not None:
            await asyncio.wait((self.inflight,))

    async def reply(self, message: ServerMessage) -> None:
        """Send a reply, waiting for the socket to take it."""
        await self.send(self.codec.encode(message))
