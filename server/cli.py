"""``solrace serve``: run a node."""

from __future__ import annotations

import argparse
import dataclasses
import errno
import math
import os
import re
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from ..protocol import Limits
from .app import LOOPS
from .backends import BackendUnavailable
from .backends.base import MAX_COMMIT_WINDOW_S
from .budgets import trusted_networks
from .config import Budgets, ServerConfig, field_docs
from .pacing import MAX_PROGRESS_INTERVAL_S

__all__ = ["config_from_args", "masked_url", "register", "store_problem"]

#: The protocol limits that are ``serve`` flags (``--`` and the name with dashes): the
#: message rate of an identity.
LIMIT_FLAGS = ("messages_per_second", "burst")
#: The node's own limits that are ``serve`` flags: each one's metavar and least value
#: (and greatest, where one is given).
NODE_FLAGS: dict[str, tuple[str, float] | tuple[str, float, float]] = {
    "max_connections": ("N", 1),
    "max_rooms_per_node": ("N", 1),
    "max_write_buffer": ("BYTES", 1),
    "daily_flag_median_ms": ("MS", 0),
    "daily_flag_min_moves": ("N", 0),
    "daily_ranked_per_address": ("N", 0),
    "race_retention_days": ("DAYS", 0),
    "deal_pool_size": ("N", 0),
    "solver_budget_s": ("S", 0.01),
    "solver_workers": ("N", 1),
    "commit_window_s": ("S", 0, MAX_COMMIT_WINDOW_S),
    "progress_interval_s": ("S", 0, MAX_PROGRESS_INTERVAL_S),
    "progress_interval_max_s": ("S", 0, MAX_PROGRESS_INTERVAL_S),
    "listen_backlog": ("N", 1),
}


def _at_least(
    kind: type[Any], least: float, *, above: bool = False, most: float = math.inf
) -> Callable[[str], Any]:
    """An argparse type: a finite ``kind`` of at least ``least`` (over it, with ``above``),
    and at most ``most``."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{'an integer' if kind is int else 'a number'} is wanted, not {text!r}"
            ) from None
        if not math.isfinite(value) or value < least or (above and value == least):
            raise argparse.ArgumentTypeError(
                f"{'more than' if above else 'at least'} {least:g} is wanted, not {text}"
            )
        if value > most:
            raise argparse.ArgumentTypeError(f"at most {most:g} is wanted, not {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


_port = _at_least(int, 0, most=65535)
_port.__name__ = "port"


def _unexpanded(text: str) -> str:
    """A hint for a value that is a variable nothing filled in, such as Kubernetes'
    ``$(NAME)`` when the ConfigMap lacks NAME."""
    if text.startswith("$"):
        return " (a variable that was never filled in: is it set?)"
    return ""


def _network(text: str) -> str:
    """An argparse type: an IP address or network (CIDR), as the node will read it."""
    try:
        trusted_networks((text,))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"an IP address or network (CIDR) is wanted, not {text!r}{_unexpanded(text)}"
        ) from None
    return text


_network.__name__ = "address"


def _origin(text: str) -> str:
    """An argparse type: an origin, ``scheme://host[:port]``, as a browser sends it."""
    from .http import normal_origin

    if normal_origin(text) is None:
        raise argparse.ArgumentTypeError(
            f"an origin (https://host[:port]) is wanted, not {text!r}{_unexpanded(text)}"
        )
    return text


_origin.__name__ = "origin"


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make a bad flag of ``parser`` one line on stderr (exit 2), without the usage."""

    def error(message: str) -> NoReturn:
        parser.exit(2, f"{parser.prog}: {message}\n")

    parser.error = error  # type: ignore[method-assign]


def register(subparsers: Any) -> None:
    """Add the ``serve`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve", help="run a race server node", description="Run a race server node."
    )
    _one_line_errors(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8765, help="port to listen on (8765)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("SOLRACE_DATA_DIR", "data")),
        help="where the embedded backend keeps its SQLite file and secret (./data)",
    )
    parser.add_argument(
        "--redis",
        default=os.environ.get("SOLRACE_REDIS_URL"),
        metavar="URL",
        help=(
            "run on the Redis backend (or set SOLRACE_REDIS_URL): redis://HOST:PORT/DB, "
            "rediss:// for TLS, redis+cluster://HOST:PORT for any node of a Redis Cluster"
        ),
    )
    _redis_timeouts(parser)
    _guards(parser)
    parser.add_argument(
        "--daily-account-age",
        type=_at_least(int, 0),
        default=ServerConfig().daily_account_age_days,
        metavar="DAYS",
        help="days after the day an account is made from which its daily attempts are "
        f"ranked; 0 ranks them at once ({ServerConfig().daily_account_age_days})",
    )
    _node_limits(parser)
    parser.add_argument(
        "--log-format",
        choices=("json", "console"),
        default="json",
        help="log lines as JSON or for a terminal",
    )
    parser.add_argument(
        "--loop",
        choices=LOOPS,
        default=os.environ.get("SOLRACE_LOOP", "auto"),
        help="the event loop: uvloop, asyncio's own, or auto, uvloop where it imports and "
        "asyncio's otherwise (or set SOLRACE_LOOP); the 'listening' log line says which (auto)",
    )
    parser.add_argument(
        "--resume-grace",
        type=_at_least(float, 0),
        default=60.0,
        metavar="SECONDS",
        help="how long a dropped player may resume (60)",
    )
    parser.add_argument(
        "--node-silent",
        type=_at_least(float, 1),
        default=15.0,
        metavar="SECONDS",
        help="on Redis: how long a node goes unheard before the others let go of its members (15)",
    )
    parser.add_argument(
        "--winnable-default",
        action=argparse.BooleanOptionalAction,
        default=ServerConfig().winnable_default,
        help="rooms of Canfield, Rainbow Canfield and American Canister deal only deals the "
        "solver certified winnable unless they ask otherwise (on)",
    )
    parser.add_argument(
        "--daily-winnable",
        action=argparse.BooleanOptionalAction,
        default=ServerConfig().daily_winnable,
        help="the daily deal of Canfield, Rainbow Canfield and American Canister is "
        "certified winnable, its par revealed with its seed (on)",
    )
    parser.add_argument(
        "--spectators-default",
        choices=("live", "delayed", "after", "off"),
        default=ServerConfig().spectators_default,
        help="the spectator setting of a room whose creator names none; live lets a racer "
        "watching their own room learn their face-down cards (after)",
    )
    parser.set_defaults(func=_serve)


def _redis_timeouts(parser: argparse.ArgumentParser) -> None:
    """The Redis backend's main timeouts (the others are ServerConfig fields)."""
    defaults = ServerConfig()
    group = parser.add_argument_group("Redis timeouts", "Seconds, except --redis-retries.")
    group.add_argument(
        "--redis-socket-timeout",
        type=_at_least(float, 0, above=True),
        default=defaults.redis_socket_timeout_s,
        metavar="S",
        help=f"longest wait for a reply ({defaults.redis_socket_timeout_s:g})",
    )
    group.add_argument(
        "--redis-connect-timeout",
        type=_at_least(float, 0, above=True),
        default=defaults.redis_connect_timeout_s,
        metavar="S",
        help=f"longest wait to connect ({defaults.redis_connect_timeout_s:g})",
    )
    group.add_argument(
        "--redis-retries",
        type=_at_least(int, 0),
        default=defaults.redis_retries,
        metavar="N",
        help=f"retries of a command that timed out or lost its link ({defaults.redis_retries})",
    )
    group.add_argument(
        "--redis-pool-timeout",
        type=_at_least(float, 0),
        default=defaults.redis_pool_timeout_s,
        metavar="S",
        help=f"longest wait for a free connection ({defaults.redis_pool_timeout_s:g})",
    )
    group.add_argument(
        "--redis-ping-interval",
        type=_at_least(float, 0, above=True),
        default=defaults.redis_ping_interval_s,
        metavar="S",
        help=f"silence before a pub/sub connection is pinged ({defaults.redis_ping_interval_s:g})",
    )
    group.add_argument(
        "--redis-max-reconnect-delay",
        type=_at_least(float, 0, above=True),
        default=defaults.redis_max_reconnect_delay_s,
        metavar="S",
        help=(
            "longest pause between attempts to reopen pub/sub "
            f"({defaults.redis_max_reconnect_delay_s:g})"
        ),
    )
    group.add_argument(
        "--redis-room-ttl",
        type=_at_least(float, 0),
        default=defaults.redis_room_ttl_s,
        metavar="S",
        help=f"drop a room untouched this long, 0 keeps it ({defaults.redis_room_ttl_s or 0:g})",
    )


def _node_limits(parser: argparse.ArgumentParser) -> None:
    """The node's limits that are flags: rooms, a slow client's buffer, the daily pace flag."""
    defaults = ServerConfig()
    docs = field_docs(ServerConfig)
    group = parser.add_argument_group("Node limits")
    for name, (metavar, least, *most) in NODE_FLAGS.items():
        default = getattr(defaults, name)
        group.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            type=_at_least(type(default), least, most=most[0] if most else math.inf),
            default=default,
            metavar=metavar,
            help=f"{docs[name].replace('``', '')} ({default})",
        )


def _guards(parser: argparse.ArgumentParser) -> None:
    """Who may connect and how much each client may do; metrics and the admin API."""
    defaults = ServerConfig()
    group = parser.add_argument_group("Clients", "Where clients come from, and their budgets.")
    group.add_argument(
        "--trusted-proxy",
        action="append",
        type=_network,
        default=[],
        metavar="ADDR",
        help="an address or network (CIDR) of a proxy whose X-Forwarded-For or X-Real-IP "
        "names the client (repeat for more)",
    )
    group.add_argument(
        "--allow-origin",
        action="append",
        type=_origin,
        default=[],
        metavar="ORIGIN",
        help="an origin (https://host[:port]) whose pages may connect, besides the server's "
        "own (repeat for more)",
    )
    group.add_argument(
        "--guest-ttl",
        type=_at_least(float, 0, above=True),
        default=defaults.guest_ttl_s / 86400,
        metavar="DAYS",
        help=f"forget a guest not seen for this long ({defaults.guest_ttl_s / 86400:g})",
    )
    limits = Limits()
    limit_docs = field_docs(Limits)
    for name in LIMIT_FLAGS:
        default = getattr(limits, name)
        group.add_argument(
            "--" + name.replace("_", "-"),
            dest="limit_" + name,
            type=_at_least(type(default), 0, above=True),  # a rate of 0 would take nothing
            default=default,
            metavar="N",
            help=f"{limit_docs[name].replace('``', '')} ({default:g})",
        )
    docs = field_docs(Budgets)
    for item in dataclasses.fields(Budgets):
        default = getattr(defaults.budgets, item.name)
        group.add_argument(
            "--budget-" + item.name.replace("_", "-"),
            dest="budget_" + item.name,
            type=_at_least(type(default), 0),
            default=default,
            metavar="N",
            help=f"{docs.get(item.name, '').replace('``', '')} ({default:g})",
        )
    metrics = parser.add_argument_group("Metrics and admin")
    metrics.add_argument(
        "--metrics-port",
        type=_port,
        default=defaults.metrics_port,
        metavar="PORT",
        help="serve /metrics and the admin API on this port of --metrics-host (off)",
    )
    metrics.add_argument(
        "--metrics-host",
        default=defaults.metrics_host,
        metavar="ADDR",
        help=f"where the metrics port listens ({defaults.metrics_host})",
    )
    metrics.add_argument(
        "--metrics-token",
        default=os.environ.get("SOLRACE_METRICS_TOKEN"),
        metavar="TOKEN",
        help="serve /metrics on the main port too, to this bearer token (or SOLRACE_METRICS_TOKEN)",
    )
    metrics.add_argument(
        "--admin-token",
        default=os.environ.get("SOLRACE_ADMIN_TOKEN"),
        metavar="TOKEN",
        help="the admin API's bearer token, on the metrics port (or SOLRACE_ADMIN_TOKEN)",
    )


def _budgets(args: argparse.Namespace) -> Budgets:
    return Budgets(
        **{item.name: getattr(args, "budget_" + item.name) for item in dataclasses.fields(Budgets)}
    )


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    """The node's settings that ``solrace serve ARGS`` asks for."""
    limits = dataclasses.replace(
        Limits(), **{name: getattr(args, "limit_" + name) for name in LIMIT_FLAGS}
    )
    return ServerConfig(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        redis_url=args.redis,
        redis_socket_timeout_s=args.redis_socket_timeout,
        redis_connect_timeout_s=args.redis_connect_timeout,
        redis_retries=args.redis_retries,
        redis_pool_timeout_s=args.redis_pool_timeout,
        redis_ping_interval_s=args.redis_ping_interval,
        redis_max_reconnect_delay_s=args.redis_max_reconnect_delay,
        redis_room_ttl_s=args.redis_room_ttl or None,
        log_format=args.log_format,
        resume_grace_s=args.resume_grace,
        node_silent_s=args.node_silent,
        spectators_default=args.spectators_default,
        winnable_default=args.winnable_default,
        daily_winnable=args.daily_winnable,
        budgets=_budgets(args),
        trusted_proxies=tuple(args.trusted_proxy),
        allowed_origins=tuple(args.allow_origin),
        guest_ttl_s=args.guest_ttl * 86400,
        metrics_host=args.metrics_host,
        metrics_port=args.metrics_port,
        metrics_token=args.metrics_token,
        admin_token=args.admin_token,
        daily_account_age_days=args.daily_account_age,
        limits=limits,
        **{name: getattr(args, name) for name in NODE_FLAGS},
    )


def _serve(args: argparse.Namespace) -> int:
    from .app import LoopUnavailable, run, run_on_loop

    config = config_from_args(args)
    try:
        run_on_loop(run(config), args.loop)
    except LoopUnavailable as error:
        _fail(str(error))
        return 1
    except BackendUnavailable as error:
        _fail(store_problem(error, config.redis_url, config.data_dir))
        return 1
    except OSError as error:
        problem = _os_failure(config, error)
        if problem is None:
            raise
        _fail(problem)
        return 1
    return 0


def _fail(problem: str) -> None:
    """Say on one line of stderr why the node did not start."""
    print(f"solrace serve: {problem}", file=sys.stderr)


def store_problem(error: BackendUnavailable, redis_url: str | None, data_dir: Path) -> str:
    """What the store's refusal means, on one line naming the store (never a password):
    Redis at ``redis_url`` if one is given, else the data directory."""
    if redis_url:
        from .backends.redis import RedisNotUsable

        if isinstance(error, RedisNotUsable):
            return error.said(masked_url(redis_url))
        reason = str(error.__cause__ or error).strip() or type(error).__name__
        reason = reason.removeprefix("redis: ")
        return f"cannot reach Redis at {masked_url(redis_url)}: {reason}{_certificate_hint(redis_url, reason)}"
    if str(data_dir) in str(error):  # the error names the directory or its file
        return str(error)
    reason = str(error.__cause__ or error).strip() or type(error).__name__
    if str(data_dir) in reason:
        return reason
    return f"the data directory {data_dir} is unavailable: {reason}"


# How a TLS Redis that requires a client certificate turns a client without one away. With
# TLS 1.3 the client's handshake completes before the server checks for a certificate, so
# the refusal reaches the client either as the server's alert or as a closed connection,
# whichever its first read or write meets.
_NO_CERTIFICATE_SIGNS = ("certificate required", "closed by the server", "connection reset")


def _certificate_hint(redis_url: str, reason: str) -> str:
    """A hint that a TLS Redis may want a client certificate the URL does not give."""
    query = urlsplit(redis_url).query
    if not redis_url.startswith("rediss://") or "ssl_certfile=" in query:
        return ""
    if not any(sign in reason.lower() for sign in _NO_CERTIFICATE_SIGNS):
        return ""
    return (
        " (if this Redis requires a client certificate, give ssl_certfile= and ssl_keyfile= "
        "in the URL)"
    )


# What a failed listen raises: the address is taken, not this machine's, or not allowed.
_LISTEN_ERRNOS = {errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES}


def _os_failure(config: ServerConfig, error: OSError) -> str | None:
    """One line for a failed listen or an unusable data directory; None for anything else."""
    from .http import MetricsListenFailed

    where = f"cannot listen on {config.host}:{config.port}"
    if isinstance(error, MetricsListenFailed):
        where = f"cannot listen on {config.metrics_host}:{config.metrics_port} (--metrics-port)"
        reason = error.strerror or str(error)
        if error.errno is not None and error.errno in _LISTEN_ERRNOS:
            reason = os.strerror(error.errno)  # asyncio's own message repeats the address
        return f"{where}: {reason.lower()}"
    if isinstance(error, socket.gaierror):
        return f"{where}: {(error.strerror or str(error)).lower()}"
    if error.filename is None and error.errno in _LISTEN_ERRNOS:
        # The errno's own words: asyncio's message repeats the address.
        return f"{where}: {os.strerror(error.errno).lower()}"
    if error.filename is not None and not config.redis_url:
        return (
            f"cannot use the data directory {config.data_dir}: "
            f"{(error.strerror or str(error)).lower()}: {error.filename}"
        )
    return None


def masked_url(url: str) -> str:
    """``url`` with any password masked, fit for a message: read from the URL's text, so
    that a URL too broken to parse is masked as well."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    netloc, slash, tail = rest.partition("/")
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:***@{host}"
    masked = f"{scheme}{sep}{netloc}{slash}{tail}"
    return re.sub(r"(?i)([?&]password=)[^&#]*", r"\1***", masked)
