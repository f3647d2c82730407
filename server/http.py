"""The HTTP endpoints: the web page, /healthz, /readyz, /metrics and the JSON API."""

from __future__ import annotations

import http
import json
import mimetypes
import urllib.parse
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from ..protocol import ProtocolError
from .backends import BackendUnavailable
from .config import ServerConfig
from .leaderboard import best_board, day_board, player_history
from .node import Node

__all__ = ["WEB_ROOT", "HttpEndpoints"]

WEB_ROOT = Path(__file__).resolve().parent.parent / "client" / "web"


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


class HttpEndpoints:
    """Answers a node's plain HTTP requests; a websocket upgrade passes through."""

    def __init__(self, node: Node, config: ServerConfig) -> None:
        self.node = node
        self.config = config

    async def process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        """The answer to a request, or None to go on with the websocket handshake."""
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
