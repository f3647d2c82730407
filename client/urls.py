"""Server URLs as people paste them: the websocket URL, or the page's address in a browser.

``ws://HOST:PORT/`` and ``wss://HOST/`` are taken as they are. The page's own address is
taken too: ``http://HOST:PORT/`` is the server at ``ws://HOST:PORT/`` (``https`` gives
``wss``), and a room's link ``http://HOST:PORT/r/CODE`` gives the server and the room's
code. A bare ``HOST:PORT`` is the server at ``ws://HOST:PORT/``.
"""

from __future__ import annotations

import errno
import re
import socket
import ssl
import urllib.error
import urllib.parse
from dataclasses import dataclass

from websockets.exceptions import InvalidHandshake, InvalidStatus, WebSocketException

__all__ = [
    "BadServerUrl",
    "ServerUrl",
    "parse_server_url",
    "room_link",
    "unreachable",
    "unreachable_http",
    "why_unreachable",
]

_SCHEMES = {"ws": "ws", "wss": "wss", "http": "ws", "https": "wss"}
_ROOM_PATH = re.compile(r"^/r/([A-Za-z0-9]+)/?$")
_HELP = (
    "give the server's address, such as ws://127.0.0.1:8765/, or the page's, such as "
    "http://127.0.0.1:8765/ or a room's link http://127.0.0.1:8765/r/CODE"
)


class BadServerUrl(ValueError):
    """A server URL that cannot be read; ``code`` is the stable ``bad_url`` (in brackets
    at the end of the sentence, as the server's refusals are shown)."""

    code = "bad_url"

    def __init__(self, text: str, why: str) -> None:
        super().__init__(f"{text!r} is not a server URL ({why}): {_HELP} [bad_url]")


@dataclass(frozen=True)
class ServerUrl:
    """Where to connect (``ws``), and the room the URL named (``code``), if any."""

    ws: str
    code: str | None = None


def parse_server_url(text: str) -> ServerUrl:
    """Read a server URL or a page address (see the module's description)."""
    raw = text.strip()
    if not raw:
        raise BadServerUrl(text, "it is empty")
    if "://" not in raw:
        raw = "ws://" + raw
    parts = urllib.parse.urlsplit(raw)
    scheme = _SCHEMES.get(parts.scheme.lower())
    if scheme is None:
        raise BadServerUrl(text, f"{parts.scheme}: is not ws, wss, http or https")
    try:
        host, port = parts.hostname, parts.port
    except ValueError as error:  # a port that is no number, or out of range
        raise BadServerUrl(text, str(error)) from None
    if not host:
        raise BadServerUrl(text, "it names no host")
    netloc = parts.netloc.rsplit("@", 1)[-1]
    del port  # read only to check it
    room = _ROOM_PATH.match(parts.path or "/")
    if room is not None:
        return ServerUrl(f"{scheme}://{netloc}/", room[1].upper())
    if parts.path == "/r" or parts.path.startswith("/r/"):
        raise BadServerUrl(text, "a room's link is /r/ and the room's code, letters and digits")
    if parts.scheme.lower() in ("ws", "wss"):
        # The server's own URL: taken as it is (a proxy may serve it under a path).
        return ServerUrl(raw if parts.path or parts.query else raw + "/")
    # The page's address: the page connects to the root of its own host.
    return ServerUrl(f"{scheme}://{netloc}/")


def room_link(ws_url: str, code: str) -> str:
    """The page's address of room ``code`` on the server at ``ws_url``, to send friends:
    ``http://HOST:PORT/r/CODE`` (``https`` for a ``wss`` server)."""
    parts = urllib.parse.urlsplit(ws_url)
    scheme = "https" if parts.scheme.lower() in ("wss", "https") else "http"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return f"{scheme}://{netloc}/r/{code}"


def unreachable(url: str, error: BaseException) -> str | None:
    """Why the server at ``url`` could not be reached, in plain words ("could not reach the
    server at ws://HOST:PORT/: connection refused"); None for an error that is not about
    reaching it (a refusal by the server, say)."""
    why = why_unreachable(url, error)
    return None if why is None else f"could not reach the server at {url}: {why}"


def why_unreachable(url: str, error: BaseException) -> str | None:
    """Why the server at ``url`` could not be reached ("connection refused", "no such host
    (HOST)"); None for an error that is not about reaching it."""
    if isinstance(error, socket.gaierror):
        host = urllib.parse.urlsplit(url).hostname or url
        return f"no such host ({host})"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, TimeoutError):
        return "it did not answer in time"
    if isinstance(error, InvalidStatus) and error.response.status_code in (429, 503):
        # A solrace server that is full (503), or holds as many connections from this
        # address as it may (429), says so in the body.
        said = error.response.body.decode(errors="replace").strip()[:200]
        return f"it answered HTTP {error.response.status_code}: {said or 'try again later'}"
    if isinstance(error, InvalidStatus):
        return (
            f"it answered HTTP {error.response.status_code}: is it a solrace server? "
            "(give the server's address, or the page's)"
        )
    if isinstance(error, InvalidHandshake):
        return "it did not answer as a solrace server"
    if isinstance(error, WebSocketException):
        return "the connection failed"
    if isinstance(error, ConnectionResetError) and url.startswith("wss:"):
        return "the connection was reset: does the server take wss (https)? Without TLS it is ws:// (http://)"
    if isinstance(error, ssl.SSLError):
        return f"the TLS handshake failed ({error.reason or type(error).__name__}): does the server take wss (https)?"
    if isinstance(error, OSError):
        if error.errno == errno.ECONNREFUSED or "Connect call failed" in str(error):
            return "connection refused"  # every address of the host refused it
        if error.errno == errno.ENETUNREACH:
            return "network unreachable"
        return error.strerror or str(error) or type(error).__name__
    return None


def unreachable_http(url: str, error: BaseException) -> str:
    """Why an HTTP request to the server at ``url`` failed short of an answer, in plain
    words ("could not reach the server at URL: connection refused"), not urllib's
    ``<urlopen error ...>``."""
    reason: object = error.reason if isinstance(error, urllib.error.URLError) else error
    why = why_unreachable(url, reason) if isinstance(reason, BaseException) else None
    if why is None:
        why = str(reason) or type(reason).__name__
    return f"could not reach the server at {url}: {why}"
