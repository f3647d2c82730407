"""The HTTP side of a node: the web page, /healthz, /readyz, /metrics and the JSON API.

Every plain HTTP request reaches a :class:`Router`, which allows GET and HEAD only,
answers 404 for a path no route could hold, and puts the security headers on every
answer. The main port's router holds the page, the probes and the API; with
``metrics_port`` a second listener has a router of its own for ``/metrics`` (and the
place for the admin API). A request to the JSON API (``/api/``) first spends one of its
client address's ``api_requests_per_second``, and one more for each
``API_BYTES_PER_REQUEST`` of its answer past the first: over it, the answer is ``429``
with ``Retry-After``. A websocket handshake passes the origin check, then goes on to the
connection handler.
"""

from __future__ import annotations

import hmac
import http
import json
import math
import mimetypes
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import structlog
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from ..protocol import ProtocolError
from .backends import BackendUnavailable
from .budgets import client_address
from .config import ServerConfig
from .daily import parse_date
from .deal_pool import DealPending
from .leaderboard import (
    best_board,
    daily_info,
    day_board,
    player_history,
    ranked_attempt,
    seed_revealed,
)
from .node import Node
from .races import PUBLIC_MODES, RACE_FORMAT, readable_by
from .room import check_variant

__all__ = [
    "MAX_PATH_LENGTH",
    "WEB_ROOT",
    "HttpEndpoints",
    "MetricsListenFailed",
    "Router",
    "add_security_headers",
    "normal_origin",
    "origin_allowed",
    "security_headers",
]

log = structlog.get_logger("solrace.server")

WEB_ROOT = Path(__file__).resolve().parent.parent / "client" / "web"
MAX_PATH_LENGTH = 256
"""The longest path (without the query) a request may name; a longer one gets 404."""
METHODS = ("GET", "HEAD")
API = "/api/"
"""Where the JSON API is: each request under it reads the store, and is budgeted."""
LONGEST_RETRY_AFTER_S = 3600
"""The ``Retry-After`` of an API request refused at a rate of 0 (one that never refills)."""

Handler = Callable[[Request, str], Awaitable[Response]]
"""A route: the request and its path (without the query) to the answer."""

# What RFC 3986 allows in a path, and a file name of the page's folder.
_PATH = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*")
_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# A Host header fit to be named in the Content-Security-Policy: a name or an IPv6
# literal, and an optional port.
_HOST = re.compile(r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def security_headers(host: str | None) -> list[tuple[str, str]]:
    """The headers of every answer; ``host`` (the request's Host) names the page's websocket."""
    connect = "'self'"
    if host is not None and _HOST.fullmatch(host):
        connect += f" ws://{host} wss://{host}"
    policy = (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        f"connect-src {connect}; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    )
    return [
        ("Content-Security-Policy", policy),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
    ]


def _response(
    status: http.HTTPStatus,
    body: bytes,
    content_type: str,
    extra: list[tuple[str, str]] | None = None,
    *,
    cache: str = "no-cache",
) -> Response:
    headers = Headers(
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("Cache-Control", cache),
            *(extra or []),
        ]
    )
    return Response(status.value, status.phrase, headers, body)


def _json(
    status: http.HTTPStatus,
    data: dict[str, Any],
    extra: list[tuple[str, str]] | None = None,
    *,
    cache: str = "no-cache",
) -> Response:
    return _response(status, json.dumps(data).encode(), "application/json", extra, cache=cache)


def _error(status: http.HTTPStatus, code: str, message: str) -> Response:
    return _json(status, {"code": code, "message": message})


def _too_many(wait: float) -> Response:
    """429 for an address over its API rate, with the seconds until a request is taken."""
    wait = min(wait, LONGEST_RETRY_AFTER_S)
    seconds = max(1, math.ceil(wait))
    return _json(
        http.HTTPStatus.TOO_MANY_REQUESTS,
        {
            "code": "rate_limited",
            "message": f"too many API requests from this address: try again in {seconds} s",
            "reason": "api_requests_per_second",
            "retry_after": round(max(wait, 0.001), 3),
        },
        [("Retry-After", str(seconds))],
    )


def _not_found() -> Response:
    return _response(http.HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")


def _bearer(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, if the request has one."""
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _token_is(request: Request, expected: str) -> bool:
    given = _bearer(request)
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def normal_origin(origin: str) -> str | None:
    """``scheme://host[:port]`` in lower case without the scheme's default port, or None."""
    try:
        parts = urllib.parse.urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.username is not None or parts.query or parts.fragment:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def origin_allowed(headers: Headers, allowed: tuple[str, ...]) -> bool:
    """Whether a websocket handshake with these headers may go on.

    A request without ``Origin`` (not from a browser) may; one from a page of the request's
    own host (the origin's host and port are the ``Host`` header), or of an origin in
    ``allowed``, may; any other, ``null`` included, may not.
    """
    origins = headers.get_all("Origin")
    if not origins:
        return True
    if len(origins) > 1:
        return False
    origin = normal_origin(origins[0])
    if origin is None:
        return False
    if origin in {normal_origin(a) for a in allowed}:
        return True
    host = headers.get_all("Host")
    if len(host) != 1:
        return False
    scheme = origin.partition(":")[0]
    return normal_origin(f"{scheme}://{host[0]}") == origin


class Router:
    """Routes a plain HTTP request to its handler, and makes every answer a safe one."""

    def __init__(self, fallback: Handler | None = None, methods: tuple[str, ...] = METHODS) -> None:
        self._exact: dict[str, Handler] = {}
        self._prefixes: list[tuple[str, Handler]] = []
        self._fallback = fallback
        self.methods = methods

    def add(self, path: str, handler: Handler) -> None:
        """Route ``path`` to ``handler``; a path ending in ``/`` routes everything under it."""
        if path.endswith("/"):
            self._prefixes.append((path, handler))
        else:
            self._exact[path] = handler

    def _handler(self, path: str) -> Handler | None:
        if path in self._exact:
            return self._exact[path]
        for prefix, handler in self._prefixes:
            if path.startswith(prefix):
                return handler
        return self._fallback

    async def answer(self, request: Request) -> Response:
        """The answer to ``request``, with the security headers."""
        return self.finish(request, await self._route(request))

    def finish(self, request: Request, response: Response) -> Response:
        """``response`` as it goes out to ``request``: with the security headers, and
        without its body to a HEAD."""
        add_security_headers(request, response)
        if request.method == "HEAD":
            # The headers of the GET (its Content-Length included), without the body.
            response = Response(response.status_code, response.reason_phrase, response.headers, b"")
        return response

    async def _route(self, request: Request) -> Response:
        if request.method not in self.methods:
            return _response(
                http.HTTPStatus.METHOD_NOT_ALLOWED,
                b"method not allowed\n",
                "text/plain",
                [("Allow", ", ".join(self.methods))],
            )
        path = request.path.split("?", 1)[0]
        if not _possible(path):
            return _not_found()
        handler = self._handler(path)
        if handler is None:
            return _not_found()
        try:
            return await handler(request, path)
        except Exception:
            log.exception("http_failed", path=path[:MAX_PATH_LENGTH])
            return _response(
                http.HTTPStatus.INTERNAL_SERVER_ERROR, b"internal error\n", "text/plain"
            )


def _possible(path: str) -> bool:
    """Whether a route could hold ``path``: short, of URL characters, no dot segments."""
    if len(path) > MAX_PATH_LENGTH or not _PATH.fullmatch(path):
        return False
    segments = path.split("/")[1:]
    return not any(urllib.parse.unquote(s) in (".", "..") for s in segments)


def add_security_headers(request: Request, response: Response) -> None:
    """Put the security headers on ``response`` where it lacks them."""
    host = request.headers.get_all("Host")
    for name, value in security_headers(host[0] if len(host) == 1 else None):
        if name not in response.headers:
            response.headers[name] = value


class MetricsListenFailed(OSError):
    """The metrics listener could not listen on ``metrics_host:metrics_port``."""


class HttpEndpoints:
    """A node's HTTP: the main port's requests, and the metrics listener."""

    def __init__(self, node: Node, config: ServerConfig) -> None:
        self.node = node
        self.config = config
        for origin in config.allowed_origins:
            if normal_origin(origin) is None:
                log.warning(
                    "allowed_origin_unusable", origin=origin, expected="https://host[:port]"
                )
        self.router = Router(self._static)
        """The main port's routes."""
        self.router.add("/healthz", self._healthz)
        self.router.add("/readyz", self._readyz)
        self.router.add("/metrics", self._metrics_with_token)
        self.router.add(API, self._api)
        self.metrics_router = Router(methods=(*METHODS, "POST"))
        """The metrics listener's routes: /metrics and the admin API."""
        self.metrics_router.add("/metrics", self._metrics)
        # Probes too: a liveness probe here still answers when the main port is full
        # (max_connections) and refuses every connection at once.
        self.metrics_router.add("/healthz", self._healthz)
        self.metrics_router.add("/readyz", self._readyz)
        self.metrics_router.add("/admin/", self._admin)
        self._metrics_server: Server | None = None

    # -- the listeners ---------------------------------------------------------------------

    async def process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        """The answer to a request, or None to go on with the websocket handshake."""
        if request.headers.get("Upgrade", "").lower() == "websocket":
            if origin_allowed(request.headers, self.config.allowed_origins):
                return None
            response = _response(http.HTTPStatus.FORBIDDEN, b"origin not allowed\n", "text/plain")
            add_security_headers(request, response)
            return response
        if request.method not in METHODS or not request.path.startswith(API):
            return await self.router.answer(request)
        # The JSON API: one request of the address's budget, then one more for each
        # API_BYTES_PER_REQUEST of the answer past the first (a race kept for its replay
        # may be megabytes of moves, each answer read from the store and written out
        # whole), so that the address's next request waits for them.
        peer = connection.remote_address[0] if connection.remote_address else ""
        address = client_address(peer, request.headers, self.config.trusted_proxies)
        guard = self.node.guard
        wait = guard.take_api(address, time.monotonic())
        if wait is not None:
            return self.router.finish(request, _too_many(wait))
        response = await self.router.answer(request)
        # By its length, a HEAD's too (the answer was made whole all the same).
        size = int(response.headers.get("Content-Length") or len(response.body))
        guard.charge_api(address, time.monotonic(), size)
        return response

    def process_response(
        self, connection: ServerConnection, request: Request, response: Response
    ) -> None:
        """Put the security headers on websockets' own refusals (a handshake gone wrong)."""
        if response.status_code != http.HTTPStatus.SWITCHING_PROTOCOLS:
            add_security_headers(request, response)

    async def start_metrics(self) -> None:
        """Listen on ``metrics_host:metrics_port``, when a metrics port is set."""
        if self.config.metrics_port is None:
            return
        try:
            self._metrics_server = await serve(
                _no_websocket,
                self.config.metrics_host,
                self.config.metrics_port,
                process_request=self._process_metrics_request,
                process_response=self.process_response,
                compression=None,
                server_header="solrace",
            )
        except OSError as error:
            raise MetricsListenFailed(error.errno, error.strerror) from error
        log.info("metrics_listening", host=self.config.metrics_host, port=self.metrics_port)

    @property
    def metrics_port(self) -> int | None:
        """The port the metrics listener bound (useful with port 0), or None without one."""
        if self._metrics_server is None:
            return None
        return int(next(iter(self._metrics_server.sockets)).getsockname()[1])

    async def close_metrics(self) -> None:
        """Stop the metrics listener."""
        if self._metrics_server is not None:
            self._metrics_server.close()
            await self._metrics_server.wait_closed()
            self._metrics_server = None

    async def _process_metrics_request(
        self, connection: ServerConnection, request: Request
    ) -> Response:
        return await self.metrics_router.answer(request)

    # -- the routes ------------------------------------------------------------------------

    async def _healthz(self, request: Request, path: str) -> Response:
        return _response(http.HTTPStatus.OK, b"ok\n", "text/plain")

    async def _readyz(self, request: Request, path: str) -> Response:
        ready = await self.node.backend.ready()
        status = http.HTTPStatus.OK if ready else http.HTTPStatus.SERVICE_UNAVAILABLE
        return _response(status, b"ready\n" if ready else b"not ready\n", "text/plain")

    async def _metrics(self, request: Request, path: str) -> Response:
        return _response(
            http.HTTPStatus.OK, self.node.metrics.render(), "text/plain; version=0.0.4"
        )

    async def _metrics_with_token(self, request: Request, path: str) -> Response:
        """/metrics on the main port: only to the metrics token, else as if it were not there."""
        token = self.config.metrics_token
        if not token or not _token_is(request, token):
            return _not_found()
        return await self._metrics(request, path)

    async def _api(self, request: Request, path: str) -> Response:
        """The daily challenge's JSON endpoints (docs/protocol.md, "HTTP"): the boards, a
        day's commitment and revealed seed, the all-time best, a player's history."""
        query = {
            k: v[-1]
            for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(request.path).query).items()
        }
        node = self.node
        now = node.now_ms()
        try:
            limit = int(query.get("limit", "20"))
            if path == "/api/leaderboard":
                data = await day_board(
                    node.backend,
                    node.deals.daily_soon,
                    query.get("variant", ""),
                    query.get("date"),
                    now_ms=now,
                    time_limit_s=self.config.daily_time_limit_s,
                    limit=limit,
                    player_id=query.get("player"),
                    board=query.get("board", "people"),
                )
            elif path == "/api/daily":
                data = await daily_info(
                    node.backend,
                    node.deals.daily_soon,
                    query.get("variant", ""),
                    query.get("date"),
                    now_ms=now,
                    time_limit_s=self.config.daily_time_limit_s,
                )
            elif path == "/api/history":
                return await self._history(request, query)
            elif path == "/api/race":
                return await self._race(request, query)
            elif path == "/api/best":
                data = await best_board(
                    node.backend,
                    query.get("variant", ""),
                    limit=limit,
                    board=query.get("board", "people"),
                )
            else:
                return _error(http.HTTPStatus.NOT_FOUND, "not_found", "no such endpoint")
        except ValueError:
            return _error(http.HTTPStatus.BAD_REQUEST, "bad_field", "limit is a number")
        except ProtocolError as error:
            return _error(http.HTTPStatus.BAD_REQUEST, error.code.value, error.message)
        except BackendUnavailable:
            return _unavailable()
        except DealPending:
            return _deal_pending()
        return _json(http.HTTPStatus.OK, data)

    async def _history(self, request: Request, query: dict[str, str]) -> Response:
        """A player's attempts, to that player alone: the token proves who asks."""
        token = _bearer(request)
        try:
            known = await self.node.identity.authenticate(token) if token else None
        except BackendUnavailable:
            return _unavailable()
        player_id = known[0] if known is not None else None
        if player_id is None:
            return _json(
                http.HTTPStatus.UNAUTHORIZED,
                {
                    "code": "bad_token",
                    "message": "send the player's token: Authorization: Bearer TOKEN",
                },
                [("WWW-Authenticate", 'Bearer realm="solrace"')],
            )
        if query.get("player", player_id) != player_id:
            return _error(
                http.HTTPStatus.FORBIDDEN, "forbidden", "a player's history is theirs alone"
            )
        try:
            data = await player_history(self.node.backend, player_id, now_ms=self.node.now_ms())
        except BackendUnavailable:
            return _unavailable()
        # One player's own: kept by no cache, shared or not.
        return _json(http.HTTPStatus.OK, data, cache="private, no-store")

    async def _race(self, request: Request, query: dict[str, str]) -> Response:
        """A finished race kept for its replay: to anyone if its room showed the boards as
        it ran (spectators ``live`` or ``delayed``), else to its players alone; or a ranked
        daily attempt as one, to anyone once the day's seed is out."""
        if "daily" in query:
            return await self._daily_race(query)
        code = query.get("room", "").upper()
        try:
            race = int(query.get("race", ""))
        except ValueError:
            return _error(http.HTTPStatus.BAD_REQUEST, "bad_field", "race is a number")
        if not (0 < len(code) <= 16 and code.isalnum()) or not 0 < race < 2**31:
            return _error(http.HTTPStatus.BAD_REQUEST, "bad_field", "room CODE and race N")
        node = self.node
        token = _bearer(request)
        try:
            record = await node.backend.load_race(code, race, node.now_ms())
            known = await node.identity.authenticate(token) if token else None
        except BackendUnavailable:
            return _unavailable()
        if record is None:
            return _error(http.HTTPStatus.NOT_FOUND, "not_found", "no such race is kept")
        player_id = known[0] if known is not None else None
        if not readable_by(record, player_id):
            return _error(
                http.HTTPStatus.FORBIDDEN,
                "forbidden",
                "this room did not show its boards: its replay is its players' alone "
                "(send a player's token: Authorization: Bearer TOKEN)",
            )
        public = record.get("spectators") in PUBLIC_MODES
        return _json(
            http.HTTPStatus.OK, record, cache="no-cache" if public else "private, no-store"
        )

    async def _daily_race(self, query: dict[str, str]) -> Response:
        """``/api/race?daily=DATE&variant=V&player=ID``: a ranked daily attempt in the form
        of a kept race (:mod:`.races`), once the day's seed is out."""
        node = self.node
        variant, player_id = query.get("variant", ""), query.get("player", "")
        try:
            date = parse_date(query.get("daily", ""))
            check_variant(variant)
            revealed = await seed_revealed(
                node.backend,
                date,
                variant,
                now_ms=node.now_ms(),
                time_limit_s=self.config.daily_time_limit_s,
            )
            if not revealed:
                return _error(
                    http.HTTPStatus.FORBIDDEN,
                    "forbidden",
                    "a day's attempts are replayed once its seed is out",
                )
            entry = (
                await ranked_attempt(node.backend, player_id, date, variant) if player_id else None
            )
            if entry is None:
                return _error(http.HTTPStatus.NOT_FOUND, "not_found", "no such ranked attempt")
            deal = await node.deals.daily_soon(date, variant)
        except ProtocolError as error:
            return _error(http.HTTPStatus.BAD_REQUEST, error.code.value, error.message)
        except BackendUnavailable:
            return _unavailable()
        except DealPending:
            return _deal_pending()
        record = {
            "format": RACE_FORMAT,
            "room": f"daily/{date}/{variant}",
            "race": entry.attempt,
            "variant": variant,
            "seed": deal.seed,
            "par": deal.par,
            "par_line": None,
            "undo": False,
            "spectators": "live",
            "ended_ms": None,
            "ghost": None,
            "players": {
                entry.player_id: {"name": entry.name, "moves": entry.log, "times": entry.times}
            },
            "results": [
                {
                    "rank": 1,
                    "player_id": entry.player_id,
                    "name": entry.name,
                    "status": entry.status,
                    "banked": entry.banked,
                    "moves": entry.moves,
                    "time_ms": entry.time_ms,
                }
            ],
        }
        return _json(http.HTTPStatus.OK, record)

    async def _admin(self, request: Request, path: str) -> Response:
        """The admin API (docs/operations.md, "Admin"), to the admin token alone.

        ``GET /admin/rooms``, ``POST /admin/rooms/CODE/close?reason=...`` and
        ``POST /admin/players/ID/revoke``.
        """
        expected = self.config.admin_token
        if not expected:
            return _error(
                http.HTTPStatus.NOT_FOUND, "not_found", "no admin API: the node has no admin token"
            )
        if not _token_is(request, expected):
            sent = _bearer(request) is not None
            said = (
                "wrong admin token (the node's --admin-token)"
                if sent
                else "send the admin token: Authorization: Bearer TOKEN"
            )
            return _json(
                http.HTTPStatus.UNAUTHORIZED,
                {"code": "bad_token", "message": said},
                [("WWW-Authenticate", 'Bearer realm="solrace-admin"')],
            )
        parts = path.strip("/").split("/")
        query = {
            k: v[-1]
            for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(request.path).query).items()
        }
        admin = self.node.admin
        try:
            if parts == ["admin", "rooms"] and request.method in METHODS:
                return _json(http.HTTPStatus.OK, {"rooms": await admin.rooms()})
            if request.method != "POST":
                return _error(http.HTTPStatus.METHOD_NOT_ALLOWED, "bad_method", "POST it")
            if len(parts) == 4 and parts[:2] == ["admin", "rooms"] and parts[3] == "close":
                reason = query.get("reason", "closed by an operator")[:200]
                if not await admin.close_room(parts[2], reason):
                    return _error(http.HTTPStatus.NOT_FOUND, "room_not_found", "no such room")
                return _json(http.HTTPStatus.OK, {"closed": parts[2], "reason": reason})
            if len(parts) == 4 and parts[:2] == ["admin", "players"] and parts[3] == "revoke":
                if not await admin.revoke(parts[2]):
                    return _error(http.HTTPStatus.NOT_FOUND, "not_found", "no such player")
                return _json(http.HTTPStatus.OK, {"revoked": parts[2]})
        except BackendUnavailable:
            return _unavailable()
        return _not_found()

    async def _static(self, request: Request, path: str) -> Response:
        if path == "/" or path.startswith("/r/") or path == "/daily":
            path = "/index.html"
        elif path.startswith("/replay/"):  # /replay/CODE/RACE: the replay page reads the rest
            path = "/replay.html"
        name = path[1:]
        if not all(_FILE.fullmatch(part) for part in name.split("/")):
            return _not_found()
        try:
            target = (WEB_ROOT / name).resolve()
            if WEB_ROOT not in target.parents or not target.is_file():
                return _not_found()
            body = target.read_bytes()
        except (OSError, ValueError):
            return _not_found()
        content_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if target.suffix == ".js":
            content_type = "text/javascript"
        return _response(http.HTTPStatus.OK, body, content_type)


def _unavailable() -> Response:
    return _error(
        http.HTTPStatus.SERVICE_UNAVAILABLE, "unavailable", "storage is unavailable: try again"
    )


DEAL_RETRY_S = 2
"""Seconds a request that found the day's deal still being chosen is told to wait."""


def _deal_pending() -> Response:
    """503 while the day's deal is still being chosen (a fresh node's first of the day)."""
    return _json(
        http.HTTPStatus.SERVICE_UNAVAILABLE,
        {
            "code": "deal_pending",
            "message": "the day's deal is still being chosen: try again in a few seconds",
            "retry_after": DEAL_RETRY_S,
        },
        [("Retry-After", str(DEAL_RETRY_S))],
    )


async def _no_websocket(connection: ServerConnection) -> None:
    """The metrics listener answers every request itself: no handshake gets this far."""
    await connection.close()
