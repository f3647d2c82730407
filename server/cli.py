"""``solrace serve``: run a node."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

from .config import ServerConfig

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``serve`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve", help="run a race server node", description="Run a race server node."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (8765)")
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
        help="run on the Redis backend (or set SOLRACE_REDIS_URL)",
    )
    parser.add_argument(
        "--log-format",
        choices=("json", "console"),
        default="json",
        help="log lines as JSON or for a terminal",
    )
    parser.add_argument(
        "--resume-grace",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long a dropped player may resume (60)",
    )
    parser.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from .app import run

    config = ServerConfig(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        redis_url=args.redis,
        log_format=args.log_format,
        resume_grace_s=args.resume_grace,
    )
    asyncio.run(run(config))
    return 0
