"""The node's HTTP under abuse: origins, security headers, methods and impossible paths.

Every request is written by hand on a raw socket, so that the test sends exactly the
bytes a hostile client would (a forged Origin, an odd method, a path no browser makes).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
from dataclasses import dataclass

import pytest
from conftest import TIMEOUT, RunningServer, ServerFactory
from websockets.http11 import Request, Response

from solrace.server.http import MAX_PATH_LENGTH


@pytest.fixture
def backend_kind() -> str:
    """HTTP does not depend on the backend: the embedded one serves it."""
    return "embedded"


@dataclass
class Answer:
    """A raw HTTP answer: status, headers (lower-case names), body, and all the bytes."""

    status: int
    headers: dict[str, str]
    body: bytes
    raw: bytes


async def send(port: int, request: bytes) -> Answer | None:
    """Send ``request`` as it is and read the answer to the end; None if none came."""
    async with asyncio.timeout(TIMEOUT):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        await writer.drain()
        raw = b""
        while chunk := await reader.read(65536):
            raw += chunk
            if raw.startswith(b"HTTP/1.1 101 "):
                break  # an open websocket: the server waits for frames
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    if not raw:
        return None
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    assert len(headers) == len(lines), f"a header sent twice:\n{head!r}"
    return Answer(int(status_line.split()[1]), headers, body, raw)


def plain(method: str, path: str, *extra: str, host: str = "localhost") -> bytes:
    """A plain HTTP/1.1 request head."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", *extra, "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def handshake(host: str, origin: str | None) -> bytes:
    """A websocket opening handshake from ``origin`` (none: a non-browser client)."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET / HTTP/1.1",
        f"Host: {host}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def answer(server: RunningServer, request: bytes) -> Answer:
    """The node's answer to ``request`` (there must be one)."""
    reply = await send(server.server.port, request)
    assert reply is not None, f"no answer to {request[:80]!r}"
    return reply


def assert_safe_headers(reply: Answer, host: str | None = None) -> None:
    """The security headers every answer carries."""
    policy = reply.headers.get("content-security-policy", "")
    directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}
    assert directives.get("default-src") == ["'self'"], policy
    assert directives.get("script-src") == ["'self'"], policy
    assert directives.get("style-src") == ["'self'"], policy
    assert directives.get("frame-ancestors") == ["'none'"], policy
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy, policy
    connect = directives.get("connect-src", [])
    assert connect[:1] == ["'self'"], policy
    if host is not None:
        assert f"ws://{host}" in connect and f"wss://{host}" in connect, policy
    assert reply.headers.get("x-content-type-options") == "nosniff"
    assert reply.headers.get("x-frame-options") == "DENY"
    assert reply.headers.get("referrer-policy") == "no-referrer"


# -- the websocket's Origin ----------------------------------------------------------------


@pytest.fixture
async def guarded(start_server: ServerFactory) -> RunningServer:
    """A node that also lets the pages of one other origin connect."""
    return await start_server(
        allowed_origins=("https://play.example:8443", "HTTPS://Friends.Example")
    )


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "null",
        "http://evil.example:{port}",  # the right port on another host
        "http://127.0.0.1:1",  # the right host on another port
        "https://play.example",  # an allowed host without its port
        "https://play.example:8443.evil.example",
        "not a url",
        "",
    ],
)
async def test_a_handshake_from_another_origin_is_refused(
    guarded: RunningServer, origin: str
) -> None:
    port = guarded.server.port
    host = f"127.0.0.1:{port}"
    reply = await answer(guarded, handshake(host, origin.format(port=port)))
    assert reply.status == 403, reply.raw
    assert reply.body == b"origin not allowed\n"
    assert_safe_headers(reply, host)


@pytest.mark.parametrize(
    "origin",
    [
        None,  # not a browser: the Python client, a bot
        "http://127.0.0.1:{port}",  # the page of the node itself
        "HTTP://127.0.0.1:{port}",
        "https://play.example:8443",
        "https://friends.example",
        "https://friends.example:443",  # the default port, said
    ],
)
async def test_a_handshake_from_the_own_host_an_allowed_origin_or_no_browser_opens(
    guarded: RunningServer, origin: str | None
) -> None:
    port = guarded.server.port
    given = origin.format(port=port) if origin is not None else None
    reply = await answer(guarded, handshake(f"127.0.0.1:{port}", given))
    assert reply.status == 101, reply.raw


@pytest.mark.parametrize(
    ("host", "origin", "status"),
    [
        # Behind a proxy that ends TLS: the page is https, the Host has no port.
        ("solrace.example", "https://solrace.example", 101),
        ("solrace.example:443", "https://solrace.example", 101),
        ("solrace.example", "http://solrace.example", 101),
        ("solrace.example", "https://solrace.example:8443", 403),
        ("solrace.example:8080", "http://solrace.example:8080", 101),
        ("solrace.example:8080", "http://solrace.example", 403),
        ("[::1]:8080", "http://[::1]:8080", 101),
    ],
)
async def test_the_own_host_is_the_host_header_with_its_port(
    guarded: RunningServer, host: str, origin: str, status: int
) -> None:
    reply = await answer(guarded, handshake(host, origin))
    assert reply.status == status, reply.raw


async def test_two_origin_headers_are_refused(guarded: RunningServer) -> None:
    host = f"127.0.0.1:{guarded.server.port}"
    request = handshake(host, f"http://{host}").replace(
        b"\r\n\r\n", b"\r\nOrigin: https://evil.example\r\n\r\n"
    )
    assert (await answer(guarded, request)).status == 403


# -- security headers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        (plain("GET", "/"), 200),
        (plain("GET", "/r/ABCD2345"), 200),
        (plain("GET", "/app.js"), 200),
        (plain("GET", "/style.css"), 200),
        (plain("GET", "/healthz"), 200),
        (plain("GET", "/readyz"), 200),
        (plain("GET", "/api/best?variant=canfield"), 200),
        (plain("GET", "/api/best?variant=klondike"), 400),
        (plain("GET", "/api/history"), 401),
        (plain("GET", "/api/nope"), 404),
        (plain("GET", "/nope.js"), 404),
        (plain("GET", "/metrics"), 404),
        (plain("POST", "/"), 405),
        (plain("HEAD", "/"), 200),
        # websockets' own refusals: a handshake without its key, or not GET.
        (plain("GET", "/", "Upgrade: websocket", "Connection: Upgrade"), 400),
        (plain("POST", "/", "Upgrade: websocket", "Connection: Upgrade"), 405),
    ],
)
async def test_every_answer_carries_the_security_headers(
    server: RunningServer, request_head: bytes, status: int
) -> None:
    reply = await answer(server, request_head)
    assert reply.status == status, reply.raw[:300]
    assert_safe_headers(reply, "localhost")


async def test_a_host_unfit_for_the_policy_leaves_connect_src_at_self(
    server: RunningServer,
) -> None:
    reply = await answer(server, plain("GET", "/", host="a.example;script-src *"))
    assert reply.status == 200
    assert_safe_headers(reply)
    policy = reply.headers["content-security-policy"]
    assert "a.example" not in policy and "script-src *" not in policy
    assert "connect-src 'self';" in policy


# -- methods ---------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "TRACE", "OPTIONS"])
@pytest.mark.parametrize("path", ["/", "/api/best?variant=canfield", "/healthz", "/nope"])
async def test_only_get_and_head_are_allowed(server: RunningServer, method: str, path: str) -> None:
    reply = await answer(server, plain(method, path, "Content-Length: 0"))
    assert reply.status == 405, reply.raw[:300]
    assert reply.headers["allow"] == "GET, HEAD"
    assert reply.body == b"method not allowed\n"
    assert b"<html" not in reply.raw


async def test_a_request_with_a_body_gets_no_page(server: RunningServer) -> None:
    # websockets reads no request body: it closes the connection without an answer.
    for extra in ("Content-Length: 5", "Transfer-Encoding: chunked"):
        head = plain("POST", "/", extra)
        reply = await send(server.server.port, head + b"hello")
        assert reply is None or reply.status >= 400, reply


async def test_head_gets_the_headers_of_get_without_the_body(server: RunningServer) -> None:
    for path in ("/", "/app.js", "/healthz", "/api/best?variant=canfield"):
        got = await answer(server, plain("GET", path))
        head = await answer(server, plain("HEAD", path))
        assert (head.status, head.body) == (got.status, b""), path
        assert head.headers["content-length"] == str(len(got.body)), path
        assert head.headers["content-type"] == got.headers["content-type"], path


# -- impossible paths ------------------------------------------------------------------------

IMPOSSIBLE = [
    "/" + "a" * 300,
    "/r/" + "A" * 300,
    "/api/" + "b" * 300,
    "/" + "a" * (MAX_PATH_LENGTH + 1),
    "/a\x00b",
    "/a%00b",
    "/%ff%fe",
    "/..",
    "/../pyproject.toml",
    "/r/../../pyproject.toml",
    "/%2e%2e/README.md",
    "/.%2e/README.md",
    "/index.html/..",
    "/./index.html",
    "//etc/passwd",
    "/.gitignore",
    "/a\\b",
    "/<script>",
]


@pytest.mark.parametrize("path", IMPOSSIBLE)
async def test_an_impossible_path_is_404_without_a_traceback(
    server: RunningServer,
    path: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    reply = await answer(server, f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    assert reply.status == 404, reply.raw[:300]
    assert reply.body == b"not found\n"
    assert_safe_headers(reply, "localhost")
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert "http_failed" not in out + err
    for record in caplog.records:
        assert record.exc_info is None, record.getMessage()
        assert record.levelno < logging.WARNING, record.getMessage()


async def test_a_path_of_the_longest_length_is_still_read(server: RunningServer) -> None:
    path = "/r/" + "A" * (MAX_PATH_LENGTH - 3)
    assert len(path) == MAX_PATH_LENGTH
    assert (await answer(server, plain("GET", path))).status == 200
    assert (await answer(server, plain("GET", path + "A"))).status == 404


@pytest.mark.parametrize("path", [b"/\xff\xfe", b"/a b", b"/\x80"])
async def test_a_request_line_of_odd_bytes_is_dropped_without_a_traceback(
    server: RunningServer,
    path: bytes,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    # websockets reads only well-formed ASCII request lines: it closes the connection
    # unanswered (and says why at debug level only).
    caplog.set_level(logging.DEBUG)
    reply = await send(server.server.port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert reply is None
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert all(r.levelno < logging.WARNING for r in caplog.records)


async def test_a_route_that_fails_answers_500_with_the_headers_and_logs_it(
    server: RunningServer, capfd: pytest.CaptureFixture[str]
) -> None:
    async def broken(request: Request, path: str) -> Response:
        raise RuntimeError("a bug")

    # A route added as the admin API's will be: the router's place for new paths.
    server.server.http.router.add("/broken", broken)
    reply = await answer(server, plain("GET", "/broken"))
    assert (reply.status, reply.body) == (500, b"internal error\n")
    assert_safe_headers(reply, "localhost")
    out, err = capfd.readouterr()
    assert "http_failed" in out + err and "RuntimeError: a bug" in out + err
    assert (await answer(server, plain("GET", "/healthz"))).status == 200
