"""The websocket connection: one socket, whose frames the node reads and writes itself.

websockets does the opening handshake and everything rare (control frames, text,
fragments, closing, errors). Once the handshake is done, the connection splits the
incoming bytes into frames itself and hands websockets only whole frames, and it writes
the frames the node pushes in one socket write per event-loop pass; the move's way
through the house then costs no generator and no buffer of websockets' per frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import struct
import weakref
from collections.abc import Callable, Sequence
from typing import Any, cast

import structlog
from websockets.asyncio.messages import Assembler
from websockets.asyncio.server import ServerConnection, broadcast
from websockets.frames import DATA_OPCODES, CloseCode, Frame, Opcode
from websockets.http11 import MAX_LINE_LENGTH, MAX_NUM_HEADERS
from websockets.protocol import Event, State
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets built without its C extension
    from websockets.utils import apply_mask

__all__ = [
    "HELD_LIMIT",
    "OP_BINARY",
    "OP_TEXT",
    "READ_CHUNK",
    "Connection",
    "Cork",
    "Doors",
    "Reads",
    "frame_header",
]

log = structlog.get_logger("solrace.server")

READ_CHUNK = 64 * 1024  # bytes read from a socket at most at once
HELD_LIMIT = READ_CHUNK  # bytes held between the request and the handler before reads pause
# The longest request websockets reads before it refuses it (a request line, its
# headers, each a line at most MAX_LINE_LENGTH long, and the blank line).
REQUEST_LIMIT = (MAX_NUM_HEADERS + 2) * (MAX_LINE_LENGTH + 2)
CLOSE_TOO_SLOW = 1013  # try again later: resume, and the snapshot catches up
PING_BURST = 32.0
"""Pings a client may send at once; its own keepalive sends one every few seconds."""
PING_RATE = 2.0
"""Pings a second a client may go on sending. Each ping is a pong to write: a client
past this is closed (1008) before its pings cost the node the others' moves."""
OP_PING = 0x9
OP_PONG = 0xA
_PINGS_AND_PONGS = (OP_PING, OP_PONG)
"""Control frames that count against ``PING_BURST`` and ``PING_RATE``: a pong unasked
for costs the node a parse as a ping does (a client answers the keepalive's ping about
once every 20 s)."""

OP_TEXT = 0x81  # FIN and the opcode: a whole text message in one frame
OP_BINARY = 0x82  # FIN and the opcode: a whole binary message in one frame
_SHORT = struct.Struct("!BBH")
_LONG = struct.Struct("!BBQ")


def frame_header(first: int, length: int) -> bytes:
    """The header of an unmasked frame (RFC 6455, 5.2) whose first byte is ``first``."""
    if length < 126:
        return bytes((first, length))
    if length < 65536:
        return _SHORT.pack(first, 126, length)
    return _LONG.pack(first, 127, length)


class Reads(enum.Enum):
    """Who reads a connection's incoming bytes."""

    REQUEST = "request"  # websockets reads the handshake request, up to its blank line
    HELD = "held"  # bytes after the request wait for the handler to start reading
    FRAMES = "frames"  # the connection splits frames and gives websockets whole ones
    PASSED = "passed"  # websockets reads everything, for good


_HELD, _FRAMES, _PASSED = Reads.HELD, Reads.FRAMES, Reads.PASSED

# Why reading from a socket is paused (several may hold at once).
_PAUSE_QUEUE = 1  # the queue of messages for the handler is full
_PAUSE_WRITES = 2  # the socket does not take what is written to it
_PAUSE_HELD = 4  # too many bytes wait for the handler to start reading


SubprotocolChoice = Callable[[Sequence[Subprotocol]], "Subprotocol | None"]
"""Picks a connection's subprotocol among those its client offers (None: none)."""


def _weakly(method: Callable[[], None]) -> Callable[[], None]:
    """``method`` (a bound method) called through a weak reference to its object."""
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()

    return call


def _nothing() -> None:
    pass


class Cork:
    """Connections with frames pushed but not yet sent, sent together once per loop pass.

    A frame pushed to a connection (an ack, a room event) is queued on the connection at
    once, so that it keeps its place among the connection's frames, and sent at the start
    of the event loop's next pass, after every callback of this one: a connection that
    gets an ack and a room event in one pass then costs one write to the socket instead
    of two. Anything else sent on the connection (a reply, a pong, a close) sends the
    queued frames first. While ``hold()`` says that the backend's open group of writes
    is due later (seconds), the frames wait for it, so that one commit serves the moves
    of many passes.
    """

    def __init__(self, hold: Callable[[], float] = lambda: 0.0) -> None:
        self.pending: list[Connection] = []
        self.hold = hold

    def add(self, connection: Connection) -> None:
        """Send ``connection``'s pushed frames at the start of the loop's next pass, or once
        the backend's group of writes open now is due."""
        if not self.pending:
            loop = asyncio.get_running_loop()
            wait = self.hold()
            if wait > 0:
                loop.call_later(wait, self.flush)
            else:
                loop.call_soon(self.flush)
        self.pending.append(connection)

    def flush(self) -> None:
        """Send the pushed frames of every connection waiting for it.

        The frames wait for the group of writes that was open when the first of them was
        pushed, not for the groups opened since (under a steady load one is nearly always
        open): each write commits whatever is open before it goes (``before_write``).
        """
        pending, self.pending = self.pending, []
        for connection in pending:
            if connection.corked:
                try:
                    connection.send_data()
                except Exception:  # a broken socket is the connection's own business
                    log.warning("write_failed", conn=connection.id.hex)


class Doors:
    """The node's bound on the TCP connections it holds, checked as each is accepted.

    At most ``limit`` at once, whatever each is (a websocket, a page's request, a
    handshake under way): one more is answered ``503`` and closed before a byte of its
    request is read, so that the node never runs out of file descriptors (its store and
    its solver workers need some too) or of memory, and the players it holds go on.

    ``door(peer)`` tells, for a peer's address, the key its connections count under
    (None: not counted, a trusted proxy whose clients count by the address it reports)
    and how many more of them may open now, besides those already opening. A connection
    counts as *opening* from its accept until its handshake is over (a websocket, or the
    answer to a plain request) or it is gone: a script that opens connections and never
    finishes their requests holds each for the handshake's timeout, and without this one
    address could hold every connection the node has. One past it is answered ``429``.
    """

    def __init__(self, limit: int, door: Callable[[str], tuple[str | None, int]]) -> None:
        if limit < 1:
            raise ValueError("the node's connection limit must be at least 1")
        self.limit = limit
        self.door = door
        self.count = 0
        """TCP connections held now."""
        self.opening: dict[str, int] = {}
        """Connections in their opening handshake, by the key of their peer's address."""
        self.refused_full = 0
        """Connections refused because the node held ``limit`` already."""
        self.refused_address = 0
        """Connections refused because their address had as many as it may."""

    def enter(self, connection: Connection, peer: str) -> bytes | None:
        """Count a connection just accepted; the answer that refuses it, if it may not
        open (it is then not counted)."""
        if self.count >= self.limit:
            self.refused_full += 1
            return _FULL
        key, room = self.door(peer)
        if key is not None:
            opening = self.opening.get(key, 0)
            if opening >= room:
                self.refused_address += 1
                return _TOO_MANY
            self.opening[key] = opening + 1
            connection.door_key = key
        self.count += 1
        connection.entered = True
        return None

    def opened(self, connection: Connection) -> None:
        """The connection's handshake is over (or it is gone): it opens no more."""
        key = connection.door_key
        if key is not None:
            connection.door_key = None
            left = self.opening.get(key, 0) - 1
            if left > 0:
                self.opening[key] = left
            else:
                self.opening.pop(key, None)

    def left(self, connection: Connection) -> None:
        """The connection is gone."""
        if connection.entered:
            connection.entered = False
            self.opened(connection)
            self.count -= 1


def _refusal(status: int, phrase: str, text: str) -> bytes:
    body = (text + "\n").encode()
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n"
        "Server: solrace\r\n\r\n"
    )
    return head.encode() + body


_FULL = _refusal(503, "Service Unavailable", "the server is full: try again later")
_TOO_MANY = _refusal(429, "Too Many Requests", "too many connections from your address")


class Keepalive:
    """Pings the connections that have gone silent, and closes those that stay so.

    One timer for the whole node, every ``tick`` seconds, instead of websockets' task per
    connection that pings every connection every interval: a player who moves every few
    seconds never needs a ping (any bytes from the client show that it is there), and a
    task and its timer per connection cost memory and CPU at thousands of connections.
    A connection that sent nothing for ``interval`` seconds gets a ping; if nothing at
    all comes back within ``timeout`` seconds after it (a pong is something), the
    connection is failed with 1011, "keepalive ping timeout", as websockets would.
    """

    def __init__(self, interval: float, timeout: float) -> None:
        if interval <= 0 or timeout <= 0:
            raise ValueError("the keepalive's interval and timeout must be positive")
        self.interval = interval
        self.timeout = timeout
        self.tick = min(1.0, interval / 4, timeout / 4)
        self.connections: set[Connection] = set()
        self._timer: asyncio.TimerHandle | None = None
        self.pings = 0
        """Pings sent."""
        self.timeouts = 0
        """Connections failed for want of an answer."""

    def add(self, connection: Connection) -> None:
        self.connections.add(connection)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.tick, self._sweep)

    def discard(self, connection: Connection) -> None:
        self.connections.discard(connection)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        interval, timeout = self.interval, self.timeout
        for connection in list(self.connections):
            if connection.heard_since:  # bytes came since the last sweep: alive
                connection.heard_since = False
                connection.heard = now
                connection.pinged = None
                continue
            pinged = connection.pinged
            try:
                if pinged is not None:
                    if now - pinged >= timeout:
                        self.timeouts += 1
                        connection.fail_keepalive()
                elif now - connection.heard >= interval and connection.ping_now():
                    self.pings += 1
                    connection.pinged = now
            except Exception:  # a broken socket is the connection's own business
                log.warning("keepalive_failed", conn=connection.id.hex)
        self._timer = loop.call_later(self.tick, self._sweep) if self.connections else None


class Connection(ServerConnection):
    """A server connection that reads and writes the frames of the move's way itself.

    Reading: websockets gets the handshake request exactly, up to and including its
    blank line (a websockets request has no body); what follows is held until the
    handler calls :meth:`start_reading` (reading pauses past ``HELD_LIMIT`` bytes, and a
    handler that never calls it never gets a message). From then on the connection splits the bytes into
    frames: a whole masked binary message within ``max_size`` is unmasked and offered to
    ``take``, the node's fast path for moves (:meth:`Node.take_move`), which returns True
    for a message it carried out and False for the rest, which go to the handler's queue
    as usual (a message is offered only while none waits in the queue, so that messages
    are still handled in the order they came). Every other frame (control frames, text,
    fragments, anything invalid) goes whole to websockets, whose parser thus always waits
    between two frames. A frame larger than one read, past ``max_size`` or unmasked hands
    the rest of the stream to websockets for good (it refuses the last two), as does a
    connection that stops being open.

    Writing: :meth:`push` queues a whole frame without waiting and ``cork`` sends it at
    the end of the loop pass. Every write to the socket goes through :meth:`send_data`,
    which calls ``before_write()`` first and sends the pushed frames before whatever
    websockets has to send (a pong, a close, an awaited send), in one write.

    Limits: more than ``max_buffer`` bytes waiting to be sent (pushed frames and the
    socket's buffer, pongs included) close the connection with 1013, or abort it when the
    socket's buffer itself is past the cap (a close frame would only wait behind what
    the client does not read). While the socket does not take what is written (asyncio
    pauses writing, at ``serve(write_limit=...)``, or at ``max_buffer`` if that is
    lower), the connection reads nothing from it either; with ``write_limit`` at
    ``max_buffer``, a client that never reads reaches the cap rather than stalling below
    it, and the keepalive's pings are never held back by a buffer below the cap. A
    client's pings, each a pong to write, and its pongs, each a parse, are limited to
    ``PING_BURST`` at once and ``PING_RATE`` a second (together); past that the
    connection is closed with 1008 and dropped.
    """

    # Settings, set on the class by configured() (or on an instance before it reads).
    max_size: int | None = 1 << 20  # as serve(max_size=...): the largest message read
    max_buffer: int = 1 << 20  # bytes waiting to be sent before the client is too slow
    cork: Cork | None = None
    keeper: Keepalive | None = None  # (websockets' own keepalive is a method)
    doors: Doors | None = None  # the node's bound on connections (None: none)
    door_key: str | None = None  # the key this connection counts under while opening
    entered = False  # counted by the doors
    refused = False  # answered at its accept, and closed: websockets never had it

    take: Callable[[bytes], bool] | None = None
    corked = False  # pushed frames wait for the cork's flush
    queued = 0  # whole messages queued and not yet taken by the handler
    _reads = Reads.REQUEST
    _receiving = False  # inside data_received, eof_received or start_reading
    _deferred = False  # websockets had something to send while receiving
    _partial = False  # a fragmented message is being received
    _unread = b""  # the start of a frame whose rest has not come yet
    _tail = b""  # the request's last bytes so far, for a blank line cut across reads
    _request_size = 0
    _held_size = 0
    _holds = 0  # why reading is paused: _PAUSE_QUEUE, _PAUSE_WRITES, _PAUSE_HELD
    _out_size = 0  # bytes in _out
    _too_slow = False  # closing with 1013
    heard = 0.0  # the loop's time when the client was last known to send (keepalive)
    heard_since = False  # bytes came since the keepalive's last sweep
    pinged: float | None = None  # when the keepalive's ping was sent, while unanswered
    _aborted = False
    _closer: asyncio.Task[None] | None = None
    _out: list[bytes]  # frames pushed and not yet written, header and payload
    _held: list[bytes]  # bytes after the request, until the handler starts reading
    _pings: float  # the pings the client may send now (PING_BURST at most)
    _pinged_at: float  # the loop's time when they were counted
    _raw: bool  # whether pushed frames are written here (no extension, no debug log)

    choose_subprotocol: SubprotocolChoice | None = None

    @classmethod
    def configured(
        cls,
        *,
        max_size: int | None,
        max_buffer: int,
        cork: Cork | None = None,
        keepalive: Keepalive | None = None,
        doors: Doors | None = None,
        before_write: Callable[[], None] = _nothing,
        choose_subprotocol: SubprotocolChoice | None = None,
    ) -> type[Connection]:
        """A subclass for ``serve(create_connection=...)`` with these settings.

        ``max_size`` must be the one given to ``serve``; ``before_write`` runs before any
        byte is written to any of its sockets. With ``keepalive``, give ``serve``
        ``ping_interval=None``: the keepalive pings instead of websockets.
        ``choose_subprotocol(offered)`` picks the subprotocol among those the client
        offers, as ``serve(select_subprotocol=...)`` would (give ``serve`` none): that
        one is kept by the protocol as a closure over its connection, a cycle that only
        the cyclic collector frees, once per connection.
        """
        settings: dict[str, Any] = {
            "max_size": max_size,
            "max_buffer": max_buffer,
            "cork": cork,
            "keeper": keepalive,
            "doors": doors,
            "before_write": staticmethod(before_write),
            "choose_subprotocol": (
                None if choose_subprotocol is None else staticmethod(choose_subprotocol)
            ),
        }
        return cast("type[Connection]", type(cls.__name__, (cls,), settings))

    def __init__(self, protocol: ServerProtocol, *args: Any, **kwargs: Any) -> None:
        super().__init__(protocol, *args, **kwargs)
        choose = type(self).choose_subprotocol
        if choose is not None:
            # The Sans-I/O protocol calls its select_subprotocol(offered).
            protocol.select_subprotocol = choose  # type: ignore[method-assign,assignment]

    def before_write(self) -> None:
        """Called before any byte is written to the socket (see :meth:`configured`)."""

    # -- the handler's side -----------------------------------------------------------

    def start_reading(self, take: Callable[[bytes], bool] | None = None) -> None:
        """Offer whole binary messages to ``take`` from now on, and read what is held."""
        self.take = take
        if self._reads is not _HELD:
            return
        self._receiving = True
        try:
            self._read_held()
        finally:
            self._done_receiving()

    def push(self, frame: bytes | str) -> None:
        """Send a whole frame at the end of this loop pass, if the connection is open.

        Past ``max_buffer`` bytes waiting to be sent, the frame is dropped and the
        connection closed with 1013 (the client resumes and catches up from a snapshot).
        """
        if self.protocol.state is not State.OPEN or self._too_slow:
            return  # as broadcast: a frame to a closing connection is dropped
        if isinstance(frame, str):
            data, first = frame.encode(), OP_TEXT
        else:
            data, first = frame, OP_BINARY
        if self._out_size + len(data) + self.transport.get_write_buffer_size() > self.max_buffer:
            self._close_too_slow()
            return
        if self.cork is None or self.send_in_progress is not None or not self._raw:
            broadcast([self], frame)
            return
        # What protocol.send_binary (or send_text) would write: a server's frames are not
        # masked, and with no extension a message is its header and its payload.
        data = frame_header(first, len(data)) + data
        self._out.append(data)
        self._out_size += len(data)
        if not self.corked:
            self.corked = True
            self.cork.add(self)

    # -- writing ----------------------------------------------------------------------

    def send_data(self) -> None:
        """Write the pushed frames, then what websockets has to send, in one write."""
        if self._receiving and self.protocol.state is State.OPEN:
            # Reading writes what the protocol has to answer (a pong, say) as each frame
            # is read; that waits for the end of the read (or, while frames are pushed,
            # for the cork), and goes out in one write with the rest.
            self._deferred = True
            return
        self._deferred = False
        self.corked = False
        writes = self.protocol.data_to_send()
        transport = self.transport
        if self._out:
            out, self._out = self._out, []
            self._out_size = 0
            if not writes:  # most writes: frames pushed, nothing of websockets' own
                self.before_write()
                transport.write(out[0] if len(out) == 1 else b"".join(out))
                self._check_paused()
                return
            out.extend(writes)
            writes = out
        if not writes:
            return
        self.before_write()
        run: list[bytes] = []
        for data in writes:
            if data:
                run.append(data)
                continue
            if run:
                transport.write(b"".join(run))
                run = []
            # An empty chunk asks for a half-close of the TCP connection (no TLS here).
            if transport.can_write_eof():
                with contextlib.suppress(Exception):
                    transport.write_eof()
            else:
                transport.close()
        if run:
            transport.write(run[0] if len(run) == 1 else b"".join(run))
        self._check_paused()

    def _check_paused(self) -> None:
        """Abort the connection if its socket holds more than the write buffer's limit."""
        if self._holds & _PAUSE_WRITES and self.transport.get_write_buffer_size() > self.max_buffer:
            self._abort_too_slow()

    def ping_now(self) -> bool:
        """Send a keepalive ping if the connection is open; whether it was sent."""
        if self.protocol.state is not State.OPEN or self._too_slow:
            return False
        self.protocol.send_ping(b"keepalive")
        self.send_data()
        return True

    def fail_keepalive(self) -> None:
        """Nothing came back after the keepalive's ping: fail the connection with 1011."""
        if self.protocol.state is State.OPEN:
            self.protocol.fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
            with contextlib.suppress(Exception):
                self.send_data()
        self.transport.abort()  # the client is gone: its socket would hold the close

    def _ping_allowed(self) -> bool:
        """Take a ping (or a pong) from the connection's allowance; past it, drop the
        connection."""
        now = self.loop.time()
        pings = min(PING_BURST, self._pings + (now - self._pinged_at) * PING_RATE)
        self._pinged_at = now
        if pings >= 1.0:
            self._pings = pings - 1.0
            return True
        self._pings = pings
        log.info("too_many_pings", conn=self.id.hex)
        self.drop(CloseCode.POLICY_VIOLATION, "too many pings")
        return False

    def drop(self, code: int, reason: str) -> None:
        """Send a close frame and drop the connection at once, reading nothing more.

        For a client that floods: its frames come faster than it reads, so the closing
        handshake would wait behind them (websockets' ``close_timeout``), each read and
        parsed meanwhile at the cost of every other connection of the node.
        """
        if self.protocol.state is State.OPEN:
            self.protocol.fail(code, reason)
            with contextlib.suppress(Exception):
                self.send_data()
        self._reads = _PASSED
        self.transport.abort()

    def _close_too_slow(self) -> None:
        """Too many bytes wait to be sent: close with 1013 (the client resumes)."""
        if self._too_slow:
            return
        self._too_slow = True
        log.info("too_slow", conn=self.id.hex, waiting=self._waiting())
        self._closer = self.loop.create_task(
            self.close(CLOSE_TOO_SLOW, "too slow: resume to catch up")
        )

    def _abort_too_slow(self) -> None:
        """The socket's buffer is past the cap: a close frame would only wait behind what
        the client does not read, holding it all, so the connection is dropped at once
        (the client resumes as after 1013)."""
        if self._aborted:
            return
        self._too_slow = self._aborted = True
        log.info("too_slow", conn=self.id.hex, waiting=self._waiting(), aborted=True)
        self._out, self._out_size, self.corked = [], 0, False
        self.transport.abort()

    def _waiting(self) -> int:
        return self._out_size + self.transport.get_write_buffer_size()

    def pause_writing(self) -> None:
        super().pause_writing()
        self._hold(_PAUSE_WRITES)
        if self.transport.get_write_buffer_size() > self.max_buffer:
            self._abort_too_slow()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._release(_PAUSE_WRITES)

    def _hold(self, reason: int) -> None:
        """Stop reading from the socket for ``reason``."""
        if not self._holds:
            self.transport.pause_reading()
        self._holds |= reason

    def _release(self, reason: int) -> None:
        """Read from the socket again, unless paused for another reason too."""
        if self._holds & reason:
            self._holds &= ~reason
            if not self._holds:
                self.transport.resume_reading()

    # -- asyncio's callbacks ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self.doors is not None:
            peer = transport.get_extra_info("peername")
            refusal = self.doors.enter(self, str(peer[0]) if peer else "")
            if refusal is not None:
                # Answered before its request is read, and before websockets starts a
                # handshake for it: a refusal costs the node little more than its accept
                # (a script that opens connections flat out is refused by the thousand).
                self.refused = True
                cast("asyncio.WriteTransport", transport).write(refusal)
                transport.close()
                return
        super().connection_made(transport)
        self._out = []
        self._held = []
        self._raw = False  # until the handshake is done
        self._pings = PING_BURST
        self._pinged_at = self.loop.time()
        # The queue of messages pauses reading through this connection, which knows of
        # the other reasons to pause it too.
        # (Through weak references: a closure over the connection, kept by the
        # connection, is a cycle, which only the cyclic collector frees.)
        self.recv_messages = Assembler(
            self.max_queue_high,
            self.max_queue_low,
            pause=_weakly(self._pause_queue),
            resume=_weakly(self._resume_queue),
        )
        # asyncio's socket transport reads into a fresh 256 KiB buffer on every read,
        # which glibc serves with mmap and munmap (its mmap threshold starts at 128 KiB):
        # a page fault and two system calls per message. Smaller reads come from the
        # heap; a frame larger than one read simply takes several.
        if isinstance(getattr(transport, "max_size", None), int):
            transport.max_size = READ_CHUNK  # type: ignore[attr-defined]
        # Writes pause at the cap at the latest, where the socket's buffer is checked.
        if self.transport.get_write_buffer_limits()[1] > self.max_buffer:
            self.transport.set_write_buffer_limits(high=self.max_buffer)

    def _pause_queue(self) -> None:
        self._hold(_PAUSE_QUEUE)

    def _resume_queue(self) -> None:
        self._release(_PAUSE_QUEUE)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.refused:
            return  # websockets never had it
        if self.keeper is not None:
            self.keeper.discard(self)
        if self.doors is not None:
            self.doors.left(self)
        self._out, self._out_size, self.corked = [], 0, False
        self._held, self._unread = [], b""
        self._reads = _PASSED
        super().connection_lost(exc)
        # A handshake that failed (one never finished, timed out or cut off) leaves its
        # error on the protocol, and the error's traceback holds the parser's frames,
        # which hold the protocol: a cycle of about 70 objects (the connection, its
        # transport, socket, futures and buffers) that only the cyclic collector frees.
        # Half-open handshakes from many addresses piled up thousands of them, and the
        # collections that came for them held the loop for over a second. Nothing reads
        # the error once the connection is lost (the handshake sees a connection that is
        # not open, and the handler aborts it).
        self.protocol.handshake_exc = None

    async def handshake(self, *args: Any, **kwargs: Any) -> None:
        try:
            await super().handshake(*args, **kwargs)
        finally:
            if self.doors is not None:
                self.doors.opened(self)
        protocol = self.protocol
        if protocol.state is State.OPEN:
            self._raw = not protocol.extensions and not protocol.debug
            if self.keeper is not None and self.transport is not None:
                self.heard = self.loop.time()
                self.keeper.add(self)
        elif self._reads is _HELD:
            self._read_held()  # refused: nothing is read any more

    def data_received(self, data: bytes) -> None:
        self.heard_since = True
        reads = self._reads
        self._receiving = True
        try:
            if reads is _FRAMES:
                self._read_frames(data)
            elif reads is _PASSED:
                self._receive(data)
            elif reads is _HELD:
                self._held.append(data)
                self._held_size += len(data)
                if self._held_size > HELD_LIMIT:
                    self._hold(_PAUSE_HELD)
            else:
                self._read_request(data)
        finally:
            self._receiving = False
            if self._deferred and not self.corked:
                self._send_deferred()

    def eof_received(self) -> None:
        self._receiving = True
        try:
            if self._reads is _HELD:
                # The client ends its stream before the handler started reading: what it
                # sent is read now (or, if the handshake is not over, dropped with it).
                self._read_held()
            if self._unread:
                self._receive(self._unread)  # a frame cut short: websockets says so
                self._unread = b""
            self._reads = _PASSED
            super().eof_received()
        finally:
            self._done_receiving()

    def _read_held(self) -> None:
        """Read the bytes held since the request; frames are split here if it is open."""
        held, self._held = b"".join(self._held), []
        self._held_size = 0
        if self.protocol.state is State.OPEN:
            self._reads = _FRAMES
            if held:
                self._read_frames(held)
        else:
            self._reads = _PASSED  # refused, or closed: websockets discards the rest
        self._release(_PAUSE_HELD)

    def _done_receiving(self) -> None:
        self._receiving = False
        if self._deferred and not self.corked:
            self._send_deferred()

    def _send_deferred(self) -> None:
        """Send what websockets had to send while the connection was reading."""
        try:
            self.send_data()
        except Exception as exc:  # as websockets' data_received: the socket is gone
            self.set_connection_exc(exc)

    # -- reading ----------------------------------------------------------------------

    def _receive(self, data: bytes) -> None:
        """Hand bytes to websockets' own parser (always whole frames once reading here)."""
        super().data_received(data)

    def _read_request(self, data: bytes) -> None:
        """Give websockets the request up to its blank line; hold what follows."""
        seen = self._tail + data
        at = seen.find(b"\r\n\r\n")
        if at < 0:
            self._request_size += len(data)
            if self._request_size > REQUEST_LIMIT:
                self._reads = _PASSED  # no request websockets would read: it refuses
            else:
                self._tail = seen[-3:]
            self._receive(data)
            return
        end = at + 4 - len(self._tail)
        self._tail = b""
        self._reads = _HELD
        rest = data[end:]
        if rest:
            self._held.append(rest)
            self._held_size = len(rest)
            if self._held_size > HELD_LIMIT:
                self._hold(_PAUSE_HELD)
        self._receive(data[:end])

    def _read_frames(self, data: bytes) -> None:
        buf = self._unread + data if self._unread else data
        protocol = self.protocol
        limit = self.max_size
        pos, end = 0, len(buf)
        while pos < end:
            if protocol.state is not State.OPEN:
                break
            if end - pos < 2:
                self._unread = buf[pos:]  # the rest comes with the next read
                return
            first, second = buf[pos], buf[pos + 1]
            length = second & 0x7F
            head = pos + 2
            if length == 126:
                if end - pos < 4:
                    self._unread = buf[pos:]
                    return
                length = (buf[head] << 8) | buf[head + 1]
                head += 2
            elif length == 127:  # a length in 64 bits (a small one too: read it here)
                if end - pos < 10:
                    self._unread = buf[pos:]
                    return
                length = int.from_bytes(buf[head : head + 8], "big")
                head += 8
            if not second & 0x80 or (limit is not None and length > limit):
                break  # a huge or unmasked frame: websockets refuses it
            stop = head + 4 + length
            if stop > end:
                if stop - pos > READ_CHUNK:
                    break  # a frame larger than a read: websockets gathers it
                self._unread = buf[pos:]
                return
            if first == OP_BINARY and not self._partial:
                data = apply_mask(buf[head + 4 : stop], buf[head : head + 4])
                # A whole binary message: taken at once, or queued for the handler.
                if not self._offer(data):
                    self.queued += 1
                    super().process_event(Frame(Opcode.BINARY, data))
            elif first & 0x0F in _PINGS_AND_PONGS and not self._ping_allowed():
                self._unread = b""
                return
            else:
                # websockets' events then say whether a fragmented message goes on.
                self._receive(buf[pos:stop])
            pos = stop
        else:
            self._unread = b""
            return
        # From here on websockets reads everything, starting with what is left.
        self._reads = _PASSED
        self._unread = b""
        self._receive(buf[pos:])

    def _offer(self, data: bytes) -> bool:
        return self.take is not None and not self._partial and self.queued == 0 and self.take(data)

    def process_event(self, event: Event) -> None:
        if self.request is not None and isinstance(event, Frame) and event.opcode in DATA_OPCODES:
            if event.opcode is Opcode.BINARY and event.fin and self._offer(bytes(event.data)):
                return
            # The frame's FIN bit and opcode: a fragmented message starts, goes on or ends.
            self._partial = not event.fin
            if event.fin:
                self.queued += 1
        super().process_event(event)
