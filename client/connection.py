"""The async client library: one connection to a solrace server, with automatic resume.

Requests are awaited for their reply; room events arrive through :meth:`Client.events`.
When the connection drops, the client reconnects with its token, says hello again (the
server answers with a full snapshot) and re-sends the requests still waiting for a
reply, so a move in flight is acked exactly once (the server answers a repeat
idempotently).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.typing import Subprotocol

from ..protocol import (
    MSGPACK_SUBPROTOCOL,
    ChangePassword,
    Claim,
    Codec,
    CreateRoom,
    DeleteAccount,
    GetLeaderboard,
    Hello,
    JoinRoom,
    LeaveRoom,
    Ping,
    PlayMove,
    ProtocolError,
    Rematch,
    Request,
    Resign,
    RevokeTokens,
    SetReady,
    SetSettings,
    StartDaily,
    StartRace,
    Sync,
    apply_delta,
    codec_for,
)

__all__ = ["RESUME_TIMEOUT_S", "SERVER_RESUME_GRACE_S", "Client", "ClientClosed", "ServerError"]

RESUMABLE_CLOSE_CODES = frozenset({1001, 1006, 1011, 1012, 1013, 1014})
#: Requests are spaced out by the interval the server's rate refusals show, times this:
#: room for the jitter of a busy machine between a send and its arrival.
PACE_MARGIN = 1.25
#: The longest interval between requests the refusals may set.
MAX_PACE_S = 2.0
SERVER_RESUME_GRACE_S = 60.0
"""How long a server keeps a dropped player's seat for it to resume (its default
``resume_grace_s``): counted from when it notices the drop, or from when it is back after
a restart. tests/client/test_cli_guests.py checks that it is the server's."""
RESUME_TIMEOUT_S = 90.0
"""How long a client tries to resume a dropped connection before giving up: longer than
the server keeps the seat (:data:`SERVER_RESUME_GRACE_S`), since the server may notice a
dead connection only later (its pings), so that a client never gives up a seat the server
still keeps."""


class ServerError(Exception):
    """The server refused a request: its stable ``code``, sentence and details."""

    def __init__(self, reply: dict[str, Any]) -> None:
        # In words, the stable code last (for looking it up in docs/protocol.md).
        super().__init__(f"{reply.get('message') or 'refused'} [{reply.get('code')}]")
        self.code: str = reply.get("code", "")
        self.message: str = reply.get("message", "")
        self.reason: str | None = reply.get("reason")
        self.rev: int | None = reply.get("rev")
        self.retry_after: float | None = reply.get("retry_after")
        """Seconds until the server would take the request (over a budget or a rate)."""


class ClientClosed(Exception):
    """The client was closed, the server closed the connection for good, or the client
    could not resume in time. ``code`` and ``reason`` are the close frame's, when the
    server sent one."""

    def __init__(self, message: str, code: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


def _closed_by(code: int | None, reason: str) -> ClientClosed:
    """The error of a connection the server closed for good (or that was lost)."""
    if code is None or code == 1006:
        return ClientClosed("the connection to the server was lost", code, reason)
    said = f"{code} {reason}".strip()
    return ClientClosed(f"closed by the server: {said}", code, reason)


@dataclass
class _Pending:
    request: Request
    future: asyncio.Future[dict[str, Any]]


class Client:
    """A player's or spectator's connection to a solrace server."""

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        token: str | None = None,
        subprotocol: str = MSGPACK_SUBPROTOCOL,
        resume: bool = True,
        resume_timeout: float = RESUME_TIMEOUT_S,
        request_timeout: float = 30.0,
        legal_moves: bool = True,
        account: str | None = None,
        password: str | None = None,
        bot: bool = False,
        on_welcome: Callable[[Client], None] | None = None,
        drop_unknown_token: bool = False,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.url = url
        self.name = name
        self.token = token
        self.bot = bot
        self.on_welcome = on_welcome
        """Called after each welcome (the first and every resume), the identity known."""
        self.drop_unknown_token = drop_unknown_token
        """Whether a token the server refuses (``bad_token``) is dropped for a new guest
        named ``name``: a guest's token kept from an earlier run, on a server that has
        forgotten it."""
        self.on_close = on_close
        """Called once the client is closed (by :meth:`close`): what the caller held for
        the connection's life, let go of (a kept guest's lock)."""
        self.account: dict[str, Any] | None = None
        """The identity's account (``name``, ``created_ms``), or None for a guest."""
        self._login = (account, password) if account is not None else None
        self.subprotocol = subprotocol
        self.resume = resume
        self.resume_timeout = resume_timeout
        self.request_timeout = request_timeout
        self.legal_moves = legal_moves
        self.codec: Codec = codec_for(subprotocol)
        self.player_id: str | None = None
        self.room: dict[str, Any] | None = None
        self.seq = 0
        self.rev = 0
        self.view: dict[str, Any] | None = None
        self.resumes = 0
        self.server: dict[str, Any] | None = None
        """The node that answered the last hello (``node``, and ``boot``: when it started)."""
        self._ids = itertools.count(1)
        self._ws: ClientConnection | None = None
        self._pending: dict[int, _Pending] = {}
        self._events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._closing = False
        self._connected = asyncio.Event()
        self._resuming = False
        self._resumed_room: dict[str, Any] | None = None  # a resume's snapshot, said after it
        self._failure: BaseException | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._spectating: str | None = None
        self._pace = 0.0
        """Seconds between requests, learnt from the server's ``rate_limited`` refusals
        (0 until the first)."""
        self._next_send = 0.0
        """The loop's time before which no request goes out."""

    # -- life cycle ----------------------------------------------------------------------

    async def connect(self) -> dict[str, Any]:
        """Open the connection and say hello; return the welcome."""
        self._failure = None
        welcome = await self._open()
        self._reader = asyncio.ensure_future(self._read_loop())
        return welcome

    async def _open(self, *, resuming: bool = False) -> dict[str, Any]:
        ws = await connect(
            self.url,
            subprotocols=[Subprotocol(self.subprotocol)],
            compression=None,
            max_size=1 << 20,
            open_timeout=10,
        )
        self._ws = ws
        if self.token is None and self._login is not None:
            # Log in once; a resume then goes with the token, as any other.
            account, password = self._login
            hello = Hello(
                0, legal_moves=self.legal_moves, account=account, password=password, bot=self.bot
            )
        else:
            hello = Hello(0, self.name, self.token, self.legal_moves, bot=self.bot)
        await ws.send(self.codec.encode_request(hello))
        while True:
            reply = self._decode(await ws.recv())
            if reply.get("type") == "error" and reply.get("id") == 0:
                await ws.close()
                if (
                    reply.get("code") == "bad_token"
                    and self.drop_unknown_token
                    and self.token is not None
                    and self.name
                ):
                    self.token = None
                    return await self._open(resuming=resuming)
                raise ServerError(reply)
            if reply.get("type") == "welcome":
                break
            self._on_frame(reply)
        if reply.get("room") is not None:
            # A member coming back gets the room's snapshot right after the welcome: take
            # it before saying the connection is back, so that rev, view and room are
            # current when the caller (or the ``resumed`` event) sees the connection.
            async with asyncio.timeout(self.request_timeout):
                while True:
                    frame = self._decode(await ws.recv())
                    if resuming and frame.get("type") == "room":
                        # Its event goes out after ``resumed`` (:meth:`_resume`), as a
                        # spectator's that joins its room again does: the caller reads
                        # the room back after being told the connection is.
                        self._take_snapshot(frame["room"])
                        self._resumed_room = frame
                        break
                    self._on_frame(frame)
                    if frame.get("type") in ("room", "error"):
                        break
        self.player_id = reply["player_id"]
        self.name = reply["name"]
        self.token = reply["token"]
        self.account = reply.get("account")
        self._login = None  # the password is not kept once the token is had
        self.server = reply.get("server")
        self._connected.set()
        if self.on_welcome is not None:
            self.on_welcome(self)
        return reply

    async def close(self) -> None:
        """Close the connection for good."""
        self._closing = True
        try:
            if self._ws is not None:
                await self._ws.close()
            if self._reader is not None:
                self._reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._reader
        finally:
            self._connected.clear()
            self._resuming = False
            self._fail_all(ClientClosed("the client was closed"))
            self._events.put_nowait(None)
            if self.on_close is not None:
                on_close, self.on_close = self.on_close, None
                on_close()

    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def drop(self) -> None:
        """Close the socket abruptly, as a network failure would (for tests and tools)."""
        if self._ws is not None:
            self._ws.transport.abort()

    # -- reading -------------------------------------------------------------------------

    @staticmethod
    def _decode(frame: bytes | str) -> dict[str, Any]:
        data = msgpack.unpackb(frame, raw=False) if isinstance(frame, bytes) else json.loads(frame)
        if not isinstance(data, dict):
            raise ValueError("the server sent a frame that is not a map")
        return data

    async def _read_loop(self) -> None:
        while True:
            ws = self._ws
            assert ws is not None
            try:
                async for frame in ws:
                    self._on_frame(self._decode(frame))
                code, reason = ws.close_code, ws.close_reason or ""
            except ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd else 1006
                reason = closed.rcvd.reason if closed.rcvd else ""
            if self._closing:
                return
            if not self.resume or (code is not None and code not in RESUMABLE_CLOSE_CODES):
                # Closed for good: every request waiting, and any asked from now on, fails
                # at once with the server's code and reason.
                self._connected.clear()
                self._fail_all(_closed_by(code, reason))
                self._events.put_nowait({"type": "closed", "code": code, "reason": reason})
                self._events.put_nowait(None)
                return
            self._connected.clear()
            self._resuming = True
            if not await self._resume():
                return

    async def _resume(self) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.resume_timeout
        delay = 0.05
        before = self.server
        while not self._closing:
            try:
                welcome = await self._open(resuming=True)
            except (OSError, InvalidHandshake, ConnectionClosed, TimeoutError):
                if loop.time() + delay > deadline:
                    break
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            except ServerError as error:
                self._fail_all(error)
                break
            self.resumes += 1
            self._resuming = False
            # The same node under a new boot: the server restarted in between (rooms and
            # races survive that; the caller may want to say so).
            server = welcome.get("server") or {}
            restarted = (
                before is not None
                and server.get("node") == before.get("node")
                and server.get("boot") != before.get("boot")
            )
            resumed = {"type": "resumed", "restarted": restarted}
            rejoin = self._spectating if welcome.get("room") is None else None
            if rejoin is None:
                self._events.put_nowait(resumed)
                if self._resumed_room is not None:
                    self._events.put_nowait(self._resumed_room)
            self._resumed_room = None
            assert self._ws is not None
            for pending in list(self._pending.values()):
                await self._ws.send(self.codec.encode_request(pending.request))
            if rejoin is not None:
                # A spectator leaves its room when its connection drops: join it again,
                # and say the connection is back once the room is (the caller reads the
                # room's clock and standings then: a watcher's clock after a restart was
                # the one before).
                task = asyncio.ensure_future(self._rejoin(rejoin, resumed))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            return True
        self._connected.clear()
        self._resuming = False
        self._fail_all(ClientClosed("could not resume the connection"))
        self._events.put_nowait({"type": "closed", "code": None})
        self._events.put_nowait(None)
        return False

    def _fail_all(self, error: BaseException) -> None:
        self._failure = error
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(error)
        self._pending.clear()

    def _on_frame(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "room":
            self._take_snapshot(data["room"])
        elif kind == "ack":
            self._take_ack(data)
        request_id = data.get("id")
        if request_id is not None:
            pending = self._pending.pop(request_id, None)
            if pending is not None and not pending.future.done():
                pending.future.set_result(data)
            return
        seq = data.get("seq")
        if isinstance(seq, int):
            if seq <= self.seq:
                return
            since = data.get("since", seq)  # a members event may stand for a run of them
            if seq > self.seq + 1 and self.room is not None and since > self.seq + 1:
                task = asyncio.ensure_future(self._quiet_sync())
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            self.seq = seq
        if kind == "race_started" and "view" in data:
            self.view, self.rev = data["view"], data.get("rev", 0)
        if kind == "members" and self.player_id in (data.get("removed") or {}):
            self.room = None  # put out of the room (spectators turned off): not rejoined
            self._spectating = None
        self._events.put_nowait(data)

    def _take_ack(self, ack: dict[str, Any]) -> None:
        """Bring the view up to the ack's revision, and give the ack the whole view."""
        rev, delta = ack["rev"], ack.get("delta")
        if delta is None:
            self.rev, self.view = rev, ack["view"]
            return
        if self.view is not None and rev == self.rev + 1:
            self.rev, self.view = rev, apply_delta(self.view, delta)
        # A snapshot taken after the move already holds it (rev <= self.rev); a view older
        # than the move's (rev > self.rev + 1) is left for move() to replace.
        ack["view"] = self.view if rev <= self.rev else None

    def _take_snapshot(self, room: dict[str, Any]) -> None:
        self.room = room
        self.seq = room.get("seq", 0)
        you = room.get("you", {})
        if "view" in you:
            self.view, self.rev = you["view"], you["rev"]

    async def _quiet_sync(self) -> None:
        with contextlib.suppress(ServerError, ClientClosed, TimeoutError):
            await self.sync()

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Room events as they arrive (``members``, ``countdown``, ``race_started``, …)."""
        while True:
            event = await self._events.get()
            if event is None:
                return
            yield event

    async def next_event(self, *types: str, timeout: float = 10.0) -> dict[str, Any]:
        """The next event of one of ``types`` (any type if none given), skipping others."""
        async with asyncio.timeout(timeout):
            while True:
                event = await self._events.get()
                if event is None:
                    raise ClientClosed("the client is closed")
                if not types or event.get("type") in types:
                    return event

    # -- requests ------------------------------------------------------------------------

    async def request(self, request: Request) -> dict[str, Any]:
        """Send a request and return its reply; raise ServerError on an error reply, and
        ClientClosed without waiting when the connection is closed for good.

        A request refused for the rate limit was not carried out: it is sent again once
        the server's ``retry_after`` has passed, and until then no other request of this
        client goes out. From the first such refusal on, the client spaces its requests
        out to the rate the refusals show, so that it is not refused again (the server
        closes a connection refused too often).
        """
        pause = 0.05
        async with asyncio.timeout(self.request_timeout):
            while True:
                reply = await self._round_trip(request)
                if reply.get("type") != "error" or reply.get("code") != "rate_limited":
                    break
                self._slow_down(float(reply.get("retry_after") or 0), pause)
                pause = min(pause * 2, 2.0)
        if reply.get("type") == "error":
            raise ServerError(reply)
        return reply

    def _slow_down(self, retry_after: float, pause: float) -> None:
        """A request was refused for the rate: hold every request for ``retry_after`` (at
        least ``pause``, for a server that says nothing), and space them out further.

        A token bucket that refuses a request after one sent ``pace`` seconds before
        lacks ``retry_after`` more seconds of refill: the two together, with a margin, are
        at least the interval its rate allows.
        """
        now = asyncio.get_running_loop().time()
        self._next_send = max(self._next_send, now + max(retry_after, pause))
        self._pace = min(MAX_PACE_S, (self._pace + retry_after) * PACE_MARGIN)

    async def _take_turn(self) -> None:
        """Wait until a request may go out (see :meth:`_slow_down`), and take the turn."""
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            if now >= self._next_send:
                break
            await asyncio.sleep(self._next_send - now)
        if self._pace:
            self._next_send = now + self._pace

    @property
    def connected(self) -> bool:
        """Whether the client has a connection to the server now (False while it resumes)."""
        return self._connected.is_set()

    @property
    def resuming(self) -> bool:
        """Whether the connection dropped and the client is trying to resume it (False once
        it is back, given up, closed by the server for good, or closed by :meth:`close`)."""
        return self._resuming

    def _refused_here(self, request: Request) -> dict[str, Any] | None:
        """The error the server would answer a request outside the protocol's limits with
        (a text too long, say), worked out here: such a frame could not be read there,
        and its answer could not name the request."""
        try:
            self.codec.decode(self.codec.encode_request(request))
        except ProtocolError as error:
            return {
                "type": "error",
                "id": request.id,
                "code": error.code.value,
                "message": error.message,
            }
        return None

    def _check_open(self) -> None:
        """Raise ClientClosed if the connection is closed for good."""
        failure = self._failure
        if failure is None:
            return
        if isinstance(failure, ClientClosed):
            raise ClientClosed(str(failure), failure.code, failure.reason)
        raise ClientClosed(f"the connection is closed: {failure}")

    async def _round_trip(self, request: Request) -> dict[str, Any]:
        self._check_open()
        refused = self._refused_here(request)
        if refused is not None:
            return refused
        await self._take_turn()
        self._check_open()
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request.id] = _Pending(request, future)
        if self._connected.is_set() and self._ws is not None:
            with contextlib.suppress(ConnectionClosed):
                await self._ws.send(self.codec.encode_request(request))
        return await future

    def _id(self) -> int:
        return next(self._ids)

    async def create_room(self, variant: str, **settings: Any) -> dict[str, Any]:
        """Create a room (settings: max_players, spectators, spectator_delay, undo,
        time_limit, countdown, finish, finish_grace)."""
        reply = await self.request(CreateRoom(self._id(), variant, **settings))
        room: dict[str, Any] = reply["room"]
        return room

    async def join(self, code: str, role: str = "player") -> dict[str, Any]:
        """Join a room by code as ``player`` or ``spectator``; return its snapshot."""
        reply = await self.request(JoinRoom(self._id(), code, role))
        room: dict[str, Any] = reply["room"]
        self._spectating = room["code"] if role == "spectator" else None
        return room

    async def _rejoin(self, code: str, resumed: dict[str, Any]) -> None:
        try:
            await self.join(code, "spectator")
        except (ServerError, ClientClosed, TimeoutError):
            self._events.put_nowait(resumed)
            return
        self._events.put_nowait(resumed)
        self._events.put_nowait({"type": "room", "id": None, "room": self.room})

    async def leave(self) -> None:
        """Leave the room."""
        await self.request(LeaveRoom(self._id()))
        self.room = None
        self._spectating = None

    async def ready(self, ready: bool = True) -> None:
        """Say this player is (or is not) ready."""
        await self.request(SetReady(self._id(), ready))

    async def start(self) -> None:
        """Start the race (host only)."""
        await self.request(StartRace(self._id()))

    async def move(self, move: str) -> dict[str, Any]:
        """Play a move in the engine's notation on the current revision; return the ack.

        The ack's ``view`` is the whole view after the move, built from the server's delta.
        """
        ack = await self.request(PlayMove(self._id(), move, self.rev))
        if ack.get("view") is None:
            await self.sync()  # the view held here was older than the move: fetch it whole
            ack["view"] = self.view
        return ack

    async def undo(self) -> dict[str, Any]:
        """Undo the last move (where the room allows it)."""
        return await self.move("u")

    async def resign(self) -> None:
        """Give up the race."""
        await self.request(Resign(self._id()))

    async def rematch(self) -> None:
        """Ask for a new race on a new deal."""
        await self.request(Rematch(self._id()))

    async def set_settings(
        self,
        spectators: str | None = None,
        spectator_delay: int | None = None,
        finish: str | None = None,
        finish_grace: int | None = None,
    ) -> None:
        """Change the room's settings (host only, in the lobby or after a race):
        ``spectators`` is ``live``, ``delayed``, ``after`` or ``off``; ``spectator_delay``
        the seconds a ``delayed`` room holds boards back; ``finish`` is ``everyone`` or
        ``first`` (the race ends ``finish_grace`` seconds after the first win)."""
        await self.request(
            SetSettings(self._id(), spectators, spectator_delay, finish, finish_grace)
        )

    async def sync(self) -> dict[str, Any]:
        """Fetch a full snapshot of the room."""
        reply = await self.request(Sync(self._id()))
        room: dict[str, Any] = reply["room"]
        return room

    async def daily(self, variant: str) -> dict[str, Any]:
        """Start (or resume) today's attempt at the daily deal; return the room snapshot."""
        reply = await self.request(StartDaily(self._id(), variant))
        room: dict[str, Any] = reply["room"]
        return room

    async def leaderboard(
        self, variant: str, date: str | None = None, limit: int = 20, board: str = "people"
    ) -> dict[str, Any]:
        """A day's leaderboard (today's by default, the people's unless ``board`` is
        ``bots``) with this player's rank and history."""
        reply = await self.request(GetLeaderboard(self._id(), variant, date, limit, board))
        day: dict[str, Any] = reply["board"]
        return day

    async def ping(self) -> None:
        """Round-trip a ping."""
        await self.request(Ping(self._id()))

    # -- accounts ------------------------------------------------------------------------

    def _took_account(self, reply: dict[str, Any]) -> dict[str, Any]:
        self.token = reply["token"]
        self.name = reply["name"]
        self.account = {"name": reply["name"], "created_ms": reply["created_ms"]}
        return reply

    async def claim(self, password: str) -> dict[str, Any]:
        """Make this guest an account under its display name; return the ``account`` reply
        (``name``, ``created_ms``, ``token``)."""
        return self._took_account(await self.request(Claim(self._id(), password)))

    async def change_password(self, old: str, new: str) -> dict[str, Any]:
        """Change the account's password: every other device is logged out; this client
        goes on with the fresh token of the reply."""
        return self._took_account(await self.request(ChangePassword(self._id(), old, new)))

    async def revoke_tokens(self) -> dict[str, Any]:
        """Make every token of the account given so far stop working, but this client's
        fresh one."""
        return self._took_account(await self.request(RevokeTokens(self._id())))

    async def delete_account(self, password: str) -> None:
        """Delete the account (its daily entries are anonymised); the server then closes
        the connection."""
        await self.request(DeleteAccount(self._id(), password))
        self.token = None
        self.account = None
