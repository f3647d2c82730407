"""The websockets adapter: connections, HTTP endpoints and the server's life cycle."""

from __future__ import annotations

import asyncio
import contextlib
import http
import itertools
import json
import mimetypes
import signal
import struct
import time
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import structlog
from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.frames import DATA_OPCODES, Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import Event, Protocol, State
from websockets.streams import StreamReader
from websockets.typing import Subprotocol

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets built without its C extension
    from websockets.utils import apply_mask

from ..protocol import SUBPROTOCOLS, ProtocolError, RateLimiter, codec_for
from .backends import Backend, BackendUnavailable, EmbeddedBackend
from .config import ServerConfig
from .leaderboard import best_board, day_board, player_history
from .logs import configure_logging
from .node import Node, Session

__all__ = ["SolraceServer", "make_backend", "run"]

log = structlog.get_logger("solrace.server")
WEB_ROOT = Path(__file__).resolve().parent.parent / "client" / "web"
_conn_ids = itertools.count(1)
READ_CHUNK = 64 * 1024  # bytes read from a socket at most at once


OP_TEXT = 0x81  # FIN and the opcode: a whole text message in one frame
OP_BINARY = 0x82  # FIN and the opcode: a whole binary message in one frame
_SHORT = struct.Struct("!BBH")
_LONG = struct.Struct("!BBQ")


_AT_EOF = StreamReader.at_eof.__code__


def _between_frames(protocol: Protocol) -> bool:
    """Whether websockets' parser waits for the first byte of a frame.

    Its parser is a generator that, between two frames, waits in ``StreamReader.at_eof``
    (each generator's ``gi_yieldfrom`` names the one it is suspended in).
    """
    inner = protocol.parser
    for _ in range(8):
        below = getattr(inner, "gi_yieldfrom", None)
        if below is None:
            return getattr(inner, "gi_code", None) is _AT_EOF
        inner = below
    return False


def frame_header(first: int, length: int) -> bytes:
    """The header of an unmasked frame (RFC 6455, 5.2) whose first byte is ``first``."""
    if length < 126:
        return bytes((first, length))
    if length < 65536:
        return _SHORT.pack(first, 126, length)
    return _LONG.pack(first, 127, length)


class _Cork:
    """Connections with frames written but not yet sent, sent together once per loop pass.

    A frame pushed to a connection (an ack, a room event) goes into its protocol's
    outgoing buffer at once, so it keeps its place among the connection's frames, and the
    buffer is sent at the start of the event loop's next pass, after every callback of
    this one: a connection that gets an ack and a room event in one pass then costs one
    write to the socket instead of two. Anything else sent on the connection (a reply,
    a ping, a close) sends the buffer first.
    """

    def __init__(self) -> None:
        self.pending: list[_Connection] = []

    def add(self, connection: _Connection) -> None:
        if not self.pending:
            asyncio.get_running_loop().call_soon(self.flush)
        self.pending.append(connection)

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        for connection in pending:
            if connection.corked:
                try:
                    connection.send_data()
                except Exception:  # a broken socket is the connection's own business
                    log.warning("write_failed", conn=connection.id.hex)


class _Connection(ServerConnection):
    """A connection that offers each whole binary message to ``take`` before queuing it.

    ``take`` is the node's fast path for moves (:meth:`Node.take_move`): it returns True
    for a message it carried out, right as it came off the socket, and False for the
    rest, which go to the connection's task as usual. A message is offered only while
    none waits in the queue, so that messages are still handled in the order they came.

    :meth:`push` writes a frame without waiting, through ``cork``.
    """

    take: Callable[[bytes], bool] | None = None
    cork: _Cork | None = None
    corked = False  # frames wait in the protocol's buffer for the cork's flush
    queued = 0  # whole messages queued and not yet taken by the connection's task
    _receiving = False  # inside data_received
    _partial = False  # a fragmented message is being received
    max_buffer = 1 << 62  # bytes waiting in the socket's buffer before push gives up
    too_slow: Callable[[], None] | None = None

    def push(self, frame: bytes | str) -> None:
        """Send a whole frame at the end of this loop pass, if the connection is open.

        A connection whose socket buffer holds more than ``max_buffer`` bytes gets
        ``too_slow()`` instead (the frame is dropped).
        """
        protocol = self.protocol
        if protocol.state is not State.OPEN:
            return  # as broadcast: a frame to a closing connection is dropped
        if self.transport.get_write_buffer_size() > self.max_buffer:
            if self.too_slow is not None:
                self.too_slow()
            return
        if (
            self.cork is None
            or self.send_in_progress is not None
            or protocol.expect_continuation_frame
            or protocol.extensions
            or protocol.debug
        ):
            broadcast([self], frame)
            return
        # What protocol.send_binary (or send_text) would add to the protocol's buffer,
        # written here: a server's frames are not masked, and with no extension a
        # message is its header and its payload.
        if isinstance(frame, str):
            data = frame.encode()
            protocol.writes.append(frame_header(OP_TEXT, len(data)) + data)
        else:
            protocol.writes.append(frame_header(OP_BINARY, len(frame)) + frame)
        if not self.corked:
            self.corked = True
            self.cork.add(self)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # asyncio's socket transport reads into a fresh 256 KiB buffer on every read,
        # which glibc serves with mmap and munmap (its mmap threshold starts at 128 KiB):
        # a page fault and two system calls per message. Smaller reads come from the
        # heap; a frame larger than one read simply takes several.
        if isinstance(getattr(transport, "max_size", None), int):
            transport.max_size = READ_CHUNK  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        if self._reading or (self._reading is None and self._can_read()):
            self._read_frames(data)
            return
        self._receive(data)

    def _receive(self, data: bytes) -> None:
        """Hand bytes to websockets' own parser (always whole frames once reading here)."""
        self._receiving = True
        try:
            super().data_received(data)
        finally:
            self._receiving = False

    def eof_received(self) -> None:
        if self._unread:
            self._receive(self._unread)  # a frame cut short: websockets says so
            self._unread = b""
        self._reading = False
        super().eof_received()

    # Reading frames here: websockets parses each incoming frame with a generator in
    # Python, which costs as much as the move the frame holds. Once the handshake is done
    # (and the task is there to take moves), this connection splits the incoming bytes
    # into frames itself: a whole, masked binary message in one frame, within the size
    # limit, is unmasked and handled here; every other frame (control frames, text,
    # fragments, anything invalid) goes whole to websockets, whose parser thus always
    # stands between two frames. Anything this reader cannot size, or bytes after the
    # connection stops being open, go to websockets from then on.

    _reading: bool | None = None  # None: not yet; True: frames are split here; False: never
    _unread = b""  # the start of a frame whose rest has not come yet

    def _can_read(self) -> bool:
        protocol = self.protocol
        if self.take is None or protocol.state is not State.OPEN:
            return False  # not yet: the handshake, or the task, is still to come
        # websockets' parser must hold no byte and wait for a frame's first one (not for
        # the rest of a frame whose start it has read); if not, it reads this too, and
        # the question comes again with the next bytes.
        if protocol.reader.buffer or not _between_frames(protocol):
            return False
        self._reading = True
        return True

    def _read_frames(self, data: bytes) -> None:
        buf = self._unread + data if self._unread else data
        protocol = self.protocol
        limit = protocol.max_message_size
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
            if length == 127 or not second & 0x80 or (limit is not None and length > limit):
                break  # a huge or unmasked frame: websockets refuses it
            stop = head + 4 + length
            if stop > end:
                if stop - pos > READ_CHUNK:
                    break  # a frame larger than a read: websockets gathers it
                self._unread = buf[pos:]
                return
            if first == OP_BINARY and protocol.current_size is None:
                self._message(apply_mask(buf[head + 4 : stop], buf[head : head + 4]))
            else:
                self._receive(buf[pos:stop])
            pos = stop
        else:
            self._unread = b""
            return
        # From here on websockets reads everything, starting with what is left.
        self._reading = False
        self._unread = b""
        self._receive(buf[pos:])

    def _message(self, data: bytes) -> None:
        """A whole binary message read here: taken at once, or queued for the task."""
        if self._offer(data):
            return
        self.queued += 1
        super().process_event(Frame(Opcode.BINARY, data))

    def _offer(self, data: bytes) -> bool:
        return self.take is not None and not self._partial and self.queued == 0 and self.take(data)

    def send_data(self) -> None:
        if self._receiving and self.corked and self.protocol.state is State.OPEN:
            # Reading a message writes what the protocol has to answer (a pong, say)
            # before the message is handled; while frames wait for the cork, that waits
            # too, and the move's ack then goes out in the same write as the rest.
            return
        # As ServerConnection.send_data, but the frames buffered since the last write go
        # to the socket in one write, not one each.
        self.corked = False
        writes = self.protocol.data_to_send()
        run: list[bytes] = []
        for data in writes:
            if data:
                run.append(data)
                continue
            if run:
                self.transport.write(b"".join(run))
                run = []
            # An empty chunk asks for a half-close of the TCP connection (no TLS here).
            if self.transport.can_write_eof():
                with contextlib.suppress(Exception):
                    self.transport.write_eof()
            else:
                self.transport.close()
        if run:
            self.transport.write(run[0] if len(run) == 1 else b"".join(run))

    def process_event(self, event: Event) -> None:
        if self.request is not None and isinstance(event, Frame) and event.opcode in DATA_OPCODES:
            if event.opcode is Opcode.BINARY and event.fin and self._offer(bytes(event.data)):
                return
            self._partial = not event.fin
            if event.fin:
                self.queued += 1
        super().process_event(event)


def make_backend(config: ServerConfig) -> Backend:
    """The Redis backend when a URL is configured, else the embedded one."""
    if config.redis_url:
        from .backends.redis import RedisBackend  # type: ignore[import-not-found,unused-ignore]

        backend: Backend = RedisBackend(
            config.redis_url,
            socket_timeout=config.redis_socket_timeout_s,
            connect_timeout=config.redis_connect_timeout_s,
            retries=config.redis_retries,
            max_connections=config.redis_max_connections,
            pool_timeout=config.redis_pool_timeout_s,
            ready_timeout=config.redis_ready_timeout_s,
            poll_interval=config.redis_poll_interval_s,
            ping_interval=config.redis_ping_interval_s,
            subscribe_timeout=config.redis_subscribe_timeout_s,
            reconnect_delay=config.redis_reconnect_delay_s,
            max_reconnect_delay=config.redis_max_reconnect_delay_s,
            room_ttl=config.redis_room_ttl_s,
        )
        return backend
    return EmbeddedBackend(config.data_dir)


def _select_subprotocol(
    connection: ServerConnection, offered: Sequence[Subprotocol]
) -> Subprotocol | None:
    for name in SUBPROTOCOLS:
        if name in offered:
            return Subprotocol(name)
    if offered:
        from websockets.exceptions import NegotiationError

        raise NegotiationError("unsupported subprotocol; offer one of " + ", ".join(SUBPROTOCOLS))
    return None  # no subprotocol header in the reply; the connection speaks msgpack


def _response(status: http.HTTPStatus, body: bytes, content_type: str) -> Response:
    headers = Headers(
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-cache"),
        ]
    )
    return Response(status.value, status.phrase, headers, body)


def _json(status: http.HTTPStatus, data: dict[str, Any]) -> Response:
    return _response(status, json.dumps(data).encode(), "application/json")


class SolraceServer:
    """A node served over websockets, with /healthz, /readyz, /metrics and the web page."""

    def __init__(self, node: Node, config: ServerConfig) -> None:
        self.node = node
        self.config = config
        self._server: Server | None = None
        self._cork = _Cork()

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        assert self._server is not None
        sockets = list(self._server.sockets)
        return int(sockets[0].getsockname()[1])

    async def start(self) -> None:
        """Start the node and listen."""
        await self.node.start()
        self._server = await serve(
            self._handler,
            self.config.host,
            self.config.port,
            subprotocols=[Subprotocol(s) for s in SUBPROTOCOLS],
            select_subprotocol=_select_subprotocol,
            process_request=self._process_request,
            compression=None,
            max_size=self.config.limits.max_frame_bytes,
            max_queue=32,
            ping_interval=self.config.ping_interval_s,
            server_header="solrace",
            create_connection=_Connection,
        )
        log.info("listening", host=self.config.host, port=self.port, backend=self.node.backend.name)

    async def close(self) -> None:
        """Close every connection with 1001 (going away), then stop the node."""
        if self._server is not None:
            self._server.close(close_connections=True)
            await self._server.wait_closed()
        await self.node.stop()

    async def _process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return None
        path = request.path.split("?", 1)[0]
        if path == "/healthz":
            return _response(http.HTTPStatus.OK, b"ok\n", "text/plain")
        if path == "/readyz":
            ready = await self.node.backend.ready()
            status = http.HTTPStatus.OK if ready else http.HTTPStatus.SERVICE_UNAVAILABLE
            return _response(status, b"ready\n" if ready else b"not ready\n", "text/plain")
        if path.startswith("/api/"):
            return await self._api(path, request.path)
        if path == "/metrics":
            return _response(
                http.HTTPStatus.OK, self.node.metrics.render(), "text/plain; version=0.0.4"
            )
        return self._static(path)

    async def _api(self, path: str, target: str) -> Response:
        """The leaderboard's JSON endpoints (docs/protocol.md, "HTTP")."""
        query = {
            k: v[-1] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(target).query).items()
        }
        node = self.node
        now = node.now_ms()
        try:
            limit = int(query.get("limit", "20"))
            if path == "/api/leaderboard":
                data = await day_board(
                    node.backend,
                    node.secret,
                    query.get("variant", ""),
                    query.get("date"),
                    now_ms=now,
                    limit=limit,
                    player_id=query.get("player"),
                )
            elif path == "/api/history" and query.get("player"):
                data = await player_history(node.backend, query["player"], now_ms=now)
            elif path == "/api/best":
                data = await best_board(node.backend, query.get("variant", ""), limit=limit)
            else:
                return _json(
                    http.HTTPStatus.NOT_FOUND, {"code": "not_found", "message": "no such endpoint"}
                )
        except ValueError:
            return _json(
                http.HTTPStatus.BAD_REQUEST, {"code": "bad_field", "message": "limit is a number"}
            )
        except ProtocolError as error:
            return _json(
                http.HTTPStatus.BAD_REQUEST, {"code": error.code.value, "message": error.message}
            )
        except BackendUnavailable:
            return _json(
                http.HTTPStatus.SERVICE_UNAVAILABLE,
                {"code": "unavailable", "message": "storage is unavailable: try again"},
            )
        return _json(http.HTTPStatus.OK, data)

    def _static(self, path: str) -> Response:
        if path == "/" or path.startswith("/r/") or path == "/daily":
            path = "/index.html"
        target = (WEB_ROOT / path.lstrip("/")).resolve()
        if WEB_ROOT not in target.parents or not target.is_file():
            return _response(http.HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")
        content_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if target.suffix == ".js":
            content_type = "text/javascript"
        return _response(http.HTTPStatus.OK, target.read_bytes(), content_type)

    async def _handler(self, ws: ServerConnection) -> None:
        assert isinstance(ws, _Connection)  # start() serves with create_connection=_Connection
        conn_id = f"c{next(_conn_ids)}"
        structlog.contextvars.bind_contextvars(conn=conn_id)
        codec = codec_for(ws.subprotocol, self.config.limits)
        limits = self.config.limits
        max_buffer = self.config.max_write_buffer

        async def send(frame: bytes | str) -> None:
            # A reply to a connection that has gone is lost like any frame in flight (the
            # client resumes from a snapshot); the request it answers must still run to its
            # end, so that a move already logged is also published to the room.
            with contextlib.suppress(ConnectionClosed):
                await ws.send(frame)

        def too_slow() -> None:
            # A push has no backpressure: a client that lets its buffer grow is closed
            # and resumes from a snapshot instead of holding the server's memory.
            self.node._spawn(ws.close(1013, "too slow: resume to catch up"))

        ws.max_buffer, ws.too_slow, ws.cork = max_buffer, too_slow, self._cork
        closing = False

        async def close(code: int, reason: str) -> None:
            # The closing handshake waits for the client's close frame, which may sit behind
            # frames not read yet (a flood fills the queue and reading pauses): close in the
            # background while the loop below drains, and no longer handles, those frames.
            nonlocal closing
            closing = True
            self.node._spawn(ws.close(code, reason))

        session = Session(
            conn_id,
            codec,
            send,
            ws.push,
            close,
            RateLimiter(limits.messages_per_second, limits.burst, time.monotonic()),
        )
        metrics = self.node.metrics
        metrics.connections.inc()

        def take(frame: bytes) -> bool:
            return not closing and self.node.take_move(session, frame)

        ws.take = take
        try:
            async for frame in ws:
                ws.queued -= 1
                if not closing:
                    session.busy = True
                    try:
                        await self.node.handle_frame(session, frame)
                    finally:
                        session.busy = False
        except ConnectionClosed:
            pass
        finally:
            ws.take = None
            metrics.connections.dec()
            await self.node.disconnected(session)


async def run(config: ServerConfig) -> None:
    """Serve until SIGTERM or SIGINT, then close every connection with 1001."""
    configure_logging(config.log_format)
    server = SolraceServer(Node(make_backend(config), config), config)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting_down")
    await server.close()
