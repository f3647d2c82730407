"""The websockets adapter: the connection handler and the server's life cycle (HTTP: ``http``)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import itertools
import resource
import signal
import ssl
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from typing import Any, TypeVar

import structlog
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from ..engine import native
from ..protocol import SUBPROTOCOLS, CloseCode, ErrorCode, RateLimiter, codec_for
from .backends import Backend, BackendUnavailable, EmbeddedBackend
from .budgets import client_address, client_key, is_trusted, trusted_networks
from .config import ServerConfig
from .connection import Connection, Cork, Doors, Keepalive
from .http import HttpEndpoints
from .logs import configure_logging
from .node import Node, Session

__all__ = [
    "LOOPS",
    "LoopUnavailable",
    "SolraceServer",
    "connection_limit",
    "loop_factory",
    "loop_name",
    "make_backend",
    "raise_open_files",
    "run",
    "run_on_loop",
]

log = structlog.get_logger("solrace.server")
_conn_ids = itertools.count(1)
_T = TypeVar("_T")

#: The event loops a node may run on (``solrace serve --loop``, ``SOLRACE_LOOP``): ``auto``
#: is uvloop where it imports (CPython on Linux and macOS, from the package's
#: dependencies), else asyncio's own.
LOOPS = ("auto", "uvloop", "asyncio")


FD_RESERVE = 256
"""File descriptors a node keeps for everything but its clients' connections: its store
(SQLite, or up to ``redis_max_connections`` to Redis and the pub/sub connection), the
solver workers' pipes, the metrics listener, its logs."""


def raise_open_files() -> int:
    """Raise this process's limit of open files to the most it may have (as nginx and
    Redis do: a node holds a socket for every player); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return soft
    target = max(soft, 1 << 20) if hard == resource.RLIM_INFINITY else hard
    if target > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    return soft


def connection_limit(config: ServerConfig) -> int:
    """The connections a node holds at most: ``max_connections``, lowered to what the
    process's limit of open files leaves once ``FD_RESERVE`` are kept back."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return config.max_connections
    room = soft - FD_RESERVE if soft > 2 * FD_RESERVE else soft // 2
    return max(1, min(config.max_connections, room))


class LoopUnavailable(RuntimeError):
    """The event loop asked for by name cannot be had here."""


def loop_factory(name: str = "auto") -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the event loop called ``name`` (one of :data:`LOOPS`).

    ``auto`` falls back to asyncio's loop where uvloop does not import; ``uvloop`` asked
    for by name raises :class:`LoopUnavailable` there instead.
    """
    if name not in LOOPS:
        raise LoopUnavailable(
            f"unknown event loop {name!r} (--loop or SOLRACE_LOOP): say one of {', '.join(LOOPS)}"
        )
    if name != "asyncio":
        try:
            import uvloop
        except ImportError as error:
            if name == "uvloop":
                raise LoopUnavailable(
                    f"--loop uvloop: uvloop cannot be imported ({error}); "
                    "install it (pip install uvloop) or say --loop asyncio"
                ) from None
        else:
            new_loop: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
            return new_loop
    return asyncio.new_event_loop


def loop_name(loop: asyncio.AbstractEventLoop | None = None) -> str:
    """``uvloop`` or ``asyncio``: which event loop ``loop`` (or the running one) is."""
    loop = loop or asyncio.get_running_loop()
    return "uvloop" if type(loop).__module__.partition(".")[0] == "uvloop" else "asyncio"


def run_on_loop(main: Coroutine[Any, Any, _T], loop: str = "auto") -> _T:
    """Run ``main`` to its end on a new event loop of the kind ``loop`` names."""
    try:
        factory = loop_factory(loop)
    except LoopUnavailable:
        main.close()  # never started: no warning that it was never awaited
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


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
            commit_window_s=config.commit_window_s,
        )
        return backend
    return EmbeddedBackend(config.data_dir, commit_window_s=config.commit_window_s)


def _select_subprotocol(offered: Sequence[Subprotocol]) -> Subprotocol | None:
    """The first of the server's subprotocols that the client offers; none offered, none
    (the connection speaks msgpack); only others, refused."""
    for name in SUBPROTOCOLS:
        if name in offered:
            return Subprotocol(name)
    if offered:
        from websockets.exceptions import NegotiationError

        raise NegotiationError("unsupported subprotocol; offer one of " + ", ".join(SUBPROTOCOLS))
    return None  # no subprotocol header in the reply; the connection speaks msgpack


class SolraceServer:
    """A node served over websockets, with /healthz, /readyz, /metrics and the web page."""

    def __init__(self, node: Node, config: ServerConfig) -> None:
        # A proxy that is neither an address nor a network is said now (ValueError naming
        # it), not by every connection's failure once the node serves.
        trusted_networks(config.trusted_proxies)
        self.node = node
        self.config = config
        self._server: Server | None = None
        self.http = HttpEndpoints(node, config)
        """The HTTP side: the main port's routes and the metrics listener."""
        self.failure: BaseException | None = None
        self.failed = asyncio.Event()
        """Set when the store failed and the node must stop (:attr:`failure` says why)."""
        self.keepalive = (
            None
            if config.ping_interval_s is None
            else Keepalive(config.ping_interval_s, config.ping_timeout_s)
        )
        """Pings the connections that have gone silent (None: no keepalive)."""
        self.doors = Doors(connection_limit(config), self._door)
        """The node's bound on connections, at their accept."""
        doors = self.doors
        node.metrics.doors = lambda: (doors.count, doors.refused_full, doors.refused_address)
        # Every byte a connection writes waits for the backend's writes to be durable.
        self._connection = Connection.configured(
            max_size=config.limits.max_frame_bytes,
            max_buffer=config.max_write_buffer,
            cork=Cork(node.backend.commit_due_in),
            keepalive=self.keepalive,
            doors=self.doors,
            before_write=node.backend.flush_writes,
            choose_subprotocol=_select_subprotocol,
        )

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        assert self._server is not None
        sockets = list(self._server.sockets)
        return int(sockets[0].getsockname()[1])

    async def start(self) -> None:
        """Start the node and listen."""
        self.node.backend.set_failure_handler(self._storage_failed)
        await self.node.start()
        await self.http.start_metrics()
        self._server = await serve(
            self._handler,
            self.config.host,
            self.config.port,
            subprotocols=[Subprotocol(s) for s in SUBPROTOCOLS],
            process_request=self._process_request,
            process_response=self.http.process_response,
            compression=None,
            max_size=self.config.limits.max_frame_bytes,
            max_queue=32,
            # Writes pause at the cap, where the connection drops a client that does not
            # read; below it they go on, so that the keepalive's pings (and their
            # timeout) are never held back by a full buffer.
            write_limit=self.config.max_write_buffer,
            ping_interval=None,  # self.keepalive pings the connections gone silent
            server_header="solrace",
            create_connection=self._connection,
            backlog=self.config.listen_backlog,  # on to loop.create_server
        )
        log.info(
            "listening",
            host=self.config.host,
            port=self.port,
            backend=self.node.backend.name,
            loop=loop_name(),
            solver="compiled" if native.stale() == [] and native.compiled() else "plain Python",
            rainbow_search="C" if native.extension("_rainbow") is not None else "Python",
        )

    def _storage_failed(self, error: BaseException) -> None:
        """The store lost writes already taken: no frame may leave any more.

        Every connection is aborted at once (what was pushed since the last commit, acks
        among them, never reaches a client) and :meth:`failed` is set, so that the
        process stops; started again, it has every acked move.
        """
        log.critical("storage_failed", error=str(error))
        if self._server is not None:
            for connection in self._server.connections:
                connection.transport.abort()
        self.failure = error
        self.failed.set()

    async def close(self) -> None:
        """Close every connection with 1001 (going away), then stop the node."""
        self.node.stopping()  # the race clocks stop now, not once the last client answers
        if self._server is not None:
            self._server.close(close_connections=True)
            await self._server.wait_closed()
        if self.keepalive is not None:
            self.keepalive.close()
        await self.http.close_metrics()
        await self.node.stop()

    async def _process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        return await self.http.process_request(connection, request)

    async def _handler(self, ws: ServerConnection) -> None:
        assert isinstance(ws, Connection)  # start() serves with create_connection=Connection
        conn_id = f"c{next(_conn_ids)}"
        structlog.contextvars.bind_contextvars(conn=conn_id)
        codec = codec_for(ws.subprotocol, self.config.limits)
        limits = self.config.limits

        async def send(frame: bytes | str) -> None:
            # A reply to a connection that has gone is lost like any frame in flight (the
            # client resumes from a snapshot); the request it answers must still run to its
            # end, so that a move already logged is also published to the room.
            with contextlib.suppress(ConnectionClosed):
                await ws.send(frame)

        # A push has no backpressure: a client that lets its buffer grow past
        # max_write_buffer is closed by the connection and resumes from a snapshot.
        closing = False

        async def close(code: int, reason: str) -> None:
            # The closing handshake waits for the client's close frame, which may sit behind
            # frames not read yet (a flood fills the queue and reading pauses): close in the
            # background while the loop below drains, and no longer handles, those frames.
            nonlocal closing
            closing = True
            ws.take = None  # the frames read from now on are drained by the loop below
            if code == CloseCode.POLICY_VIOLATION:  # a flood: its frames are not waited for
                ws.drop(code, reason)
                return
            self.node.spawn(ws.close(code, reason))

        address = self._client_address(ws)
        session = Session(
            conn_id,
            codec,
            send,
            ws.push,
            close,
            RateLimiter(limits.messages_per_second, limits.burst, time.monotonic()),
            address,
        )
        guard = self.node.guard
        if guard.connections[address] >= self.config.budgets.connections_per_address:
            # Said in a frame too, with its budget's name, before the close.
            ws.start_reading(None)
            await self.node.error(
                session,
                None,
                ErrorCode.OVER_BUDGET,
                "too many connections from your address: close one first",
                reason="connections_per_address",
                retry_after=1.0,
            )
            await ws.close(CloseCode.TRY_AGAIN_LATER, "too many connections from your address")
            return
        guard.connections[address] += 1
        metrics = self.node.metrics
        metrics.connections.inc()

        ws.start_reading(None if closing else partial(self.node.moves.take, session))
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
            note_connection_gone()
            guard.connections[address] -= 1
            if guard.connections[address] <= 0:
                del guard.connections[address]
            await self.node.disconnected(session)

    def _door(self, peer: str) -> tuple[str | None, int]:
        """The key a TCP connection from ``peer`` counts under while it opens, and how
        many of them may be opening: what ``connections_per_address`` leaves besides the
        address's open ones, none past its ``address_connections_per_second``. A trusted
        proxy's connections are not counted here (each is counted by the client address
        it reports, once its request is read)."""
        if is_trusted(peer, self.config.trusted_proxies):
            return None, 0
        key = client_key(peer)
        guard = self.node.guard
        if not guard.take_connection(key, time.monotonic()):
            return key, 0  # past its rate of new connections: none may open now
        return key, self.config.budgets.connections_per_address - guard.connections[key]

    def _client_address(self, ws: Connection) -> str:
        """The key of the client's address: the peer's, or a trusted proxy's word for it."""
        peer = ws.remote_address[0] if ws.remote_address else ""
        headers = ws.request.headers if ws.request is not None else None
        return client_address(peer, headers, self.config.trusted_proxies)


def page_url(host: str, port: int) -> str:
    """The address a person opens for a node listening on ``host``:``port`` (a node on
    every address is reached on this machine at 127.0.0.1)."""
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/"


GC_THRESHOLDS = (50_000, 20, 10)
"""The cyclic collector's thresholds on a serving node (CPython's default: 700, 10, 10)."""


def tune_gc(freeze_survivors: bool = True) -> None:
    """Keep the cyclic garbage collector from stalling a busy node for long.

    A node holds a few hundred thousand container objects at a few thousand players
    (about 150 a connection), and CPython's collector scans all of them in a full
    collection: about 0.37 s at 2,500 players, every few tens of seconds at the default
    thresholds, which every move waiting behind it feels. Measured with ``solrace
    loadtest`` (2,500 players, a move every 2 s): 8 full collections in 45 s and a move
    p99 of 214 ms at the defaults; none in the steady load and a p99 of 47 ms with these.
    What the node has allocated by the time it listens (modules, the engine's tables)
    lives as long as the process: :func:`gc.freeze` leaves it out of every later scan.
    Fewer young collections (every 50,000 allocations rather than 700) promote fewer
    short-lived objects (a move's futures, a frame), so the older generations, whose
    growth starts their collections, fill far more slowly. In a steady load the
    collector finds no garbage at all (everything goes by reference counting), so its
    scans are pure cost: at 10,000 the middle generation's collection came every 5 to
    15 s and took 80 to 130 ms at 2,340 players on Redis, the move p99's bound; at 50,000
    it does not come within a 25 s window, and a young collection takes 20 to 70 ms
    every few seconds (``bench/capacity.py`` on Redis, back to back: 2,268 players held
    at 10,000, 2,884 at 50,000). Garbage is still collected: only less often, in more
    work at a time.

    With ``freeze_survivors``, what outlives a young collection is frozen too, just after
    it (:func:`_freeze_survivors`).
    """
    global _pause_loop, _freezing
    with contextlib.suppress(RuntimeError):
        _pause_loop = asyncio.get_running_loop()
    _freezing = freeze_survivors
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    if _log_pause not in gc.callbacks:
        gc.callbacks.append(_log_pause)
    if _thaw_timer is not None:
        _thaw_timer.cancel()
    if freeze_survivors and _pause_loop is not None:
        _thaw_later(_pause_loop)


GC_PAUSE_LOGGED_S = 0.05
"""A collection that holds the event loop this long or longer is logged (``gc_pause``)."""

_gc_started = 0.0
_pause_loop: asyncio.AbstractEventLoop | None = None
"""The node's loop, which logs the pauses of collections run off it (in a thread)."""
_freezing = False
_freeze_due = False
_thaw_timer: asyncio.TimerHandle | None = None

GC_THAW_S = 3600.0
"""How often a node that freezes what outlives its young collections thaws it all and
collects it in full (:func:`thaw`), if ``GC_THAW_AFTER_GONE`` connections have gone since
the last thaw."""
GC_THAW_AFTER_GONE = 1000
_gone_since_thaw = 0


def note_connection_gone() -> None:
    """Count a connection that has ended (it may have left a cycle for the thaw)."""
    global _gone_since_thaw
    _gone_since_thaw += 1


def thaw() -> None:
    """Unfreeze everything, collect it in full, and freeze what is left.

    A frozen object that goes is freed by reference counting, unless it was part of a
    cycle: such cycles (a few objects a closed connection, in an in-process churn of
    1,600 connections with young collections forced every 2,000 allocations) stay until
    they are thawed. This is the one full collection a freezing node makes, once every
    ``GC_THAW_S`` at most, and only once connections have come and gone: 690 ms at 6,000
    players (and nothing found, where the players stayed and only their races ended),
    where without freezing a middle collection of 450 to 850 ms came every few minutes
    of joins, and a full one as the long-lived objects grew by a quarter.
    """
    global _gone_since_thaw
    _gone_since_thaw = 0
    gc.unfreeze()
    began = time.perf_counter()
    found = gc.collect()
    took = time.perf_counter() - began
    gc.freeze()
    log.info("gc_thawed", collected=found, ms=round(took * 1000, 1))


def _thaw_later(loop: asyncio.AbstractEventLoop) -> None:
    global _thaw_timer

    def run() -> None:
        if _gone_since_thaw >= GC_THAW_AFTER_GONE:
            thaw()
        _thaw_later(loop)

    _thaw_timer = loop.call_later(GC_THAW_S, run, context=contextvars.Context())


def _freeze_survivors() -> None:
    """Freeze what is left after a young collection, so that no later collection scans it.

    A player's connection is about 130 container objects (its coroutines, futures,
    buffers, its game), which live as long as the player stays. Each young collection
    promotes the new ones to the middle generation, and the next collection of that
    generation scans them all: at 6,000 players just connected, 765,000 objects, some
    500 ms in which no move is answered. Frozen at once, they are never scanned: young
    collections stay the only ones, and they scan only what is new since the last.
    Nothing is lost that reference counting frees (almost everything: the collections
    of a node under load find no garbage); what a frozen object leaves as a cycle when
    it goes waits for :func:`thaw`.
    """
    global _freeze_due
    _freeze_due = False
    gc.freeze()


def _log_pause(phase: str, info: dict[str, int]) -> None:
    """Log each collection that stalls the node for ``GC_PAUSE_LOGGED_S`` or more: every
    move waits behind it, and without this line an operator sees a p99 with no cause.
    On a node that freezes survivors, ask the loop to freeze what the collection left.

    The line is handed to the loop, not logged here, and nothing here sets a context
    variable: a collection can start inside ``ContextVar.set`` (structlog's
    ``bind_contextvars``), on the allocation of a node of the context's mapping, and a
    set from a collector callback then frees the mapping that the interrupted set is
    still walking (CPython gh-148891, on 3.11 and older): a node under load crashed so,
    with a general protection fault in ``hamt_node_bitmap_assoc``, when the line was
    logged here with the request's variables cleared and bound again around it.
    """
    global _gc_started, _freeze_due
    if phase == "start":
        _gc_started = time.perf_counter()
        return
    took = time.perf_counter() - _gc_started
    logged = took >= GC_PAUSE_LOGGED_S
    freeze = _freezing and not _freeze_due
    if not (logged or freeze):
        return
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = _pause_loop
    if loop is None or loop.is_closed():
        return
    if freeze:  # not from inside the collection: just after it, on the loop
        _freeze_due = True
        loop.call_soon_threadsafe(_freeze_survivors, context=contextvars.Context())
    if logged:
        # In a context of its own, empty: not the conn, room and player of the request
        # that happened to allocate last.
        loop.call_soon_threadsafe(
            _pause_logged,
            info.get("generation"),
            round(took * 1000, 1),
            info.get("collected"),
            context=contextvars.Context(),
        )


def _pause_logged(generation: int | None, ms: float, collected: int | None) -> None:
    log.warning("gc_pause", generation=generation, ms=ms, collected=collected)


def _quiet_tls_handshakes(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's handler of unhandled errors, less one: uvloop keeps a failed TLS
    handshake's error in a future of its own as well as raising it to the connection's
    caller (redis-py, which reports it), and that future, never read, was written out as a
    traceback when it went, breaking ``solrace serve``'s one clear line about Redis."""
    unread = str(context.get("message", "")).startswith("Future exception was never retrieved")
    if unread and isinstance(context.get("exception"), ssl.SSLError):
        return
    loop.default_exception_handler(context)


async def run(config: ServerConfig) -> None:
    """Serve until SIGTERM, SIGINT or SIGHUP, then close every connection with 1001.

    Raises BackendUnavailable, after closing, if the store failed while serving.
    """
    configure_logging(config.log_format)
    asyncio.get_running_loop().set_exception_handler(_quiet_tls_handshakes)
    open_files = raise_open_files()
    server = SolraceServer(Node(make_backend(config), config), config)
    try:
        await server.start()
    except BaseException:
        # What did start goes (the solver's worker processes among it) before the error
        # is told: nothing of a node that never listened is left running.
        with contextlib.suppress(Exception):
            await server.close()
        raise
    tune_gc()
    log.info("gc_tuned", thresholds=list(gc.get_threshold()), frozen=gc.get_freeze_count())
    limit = server.doors.limit
    if limit < config.max_connections:
        # Worth a warning where the operator asked for more; the default is a ceiling, and
        # the open files a system allows (20,000 on many) make it lower every start.
        said = log.info if config.max_connections == ServerConfig().max_connections else log.warning
        said(
            "connections_capped",
            max_connections=limit,
            asked=config.max_connections,
            open_files=open_files,
            hint="raise the open-file limit (ulimit -n, systemd LimitNOFILE=)",
        )
    url = page_url(config.host, server.port)
    if config.log_format == "json" and not sys.stderr.isatty():
        log.info("page_address", url=url)  # the log stays JSON lines, one object each
    else:  # a person reads it
        print(f"solrace: open {url} in a browser", file=sys.stderr)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # SIGHUP too (the terminal closed, or a supervisor's stop): a drain, not a drop.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(server.failed.wait())]
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for wait in waits:
        wait.cancel()
    log.info("shutting_down")
    await server.close()
    if server.failure is not None:
        raise BackendUnavailable(f"storage failed: {server.failure}") from server.failure
