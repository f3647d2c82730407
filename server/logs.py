"""structlog set-up: JSON lines, or a console format for a person at a terminal."""

from __future__ import annotations

import logging
import os
import sys

import structlog

__all__ = ["configure_logging"]


def configure_logging(fmt: str = "json", level: int = logging.INFO) -> None:
    """Log through structlog with context variables (connection, room, player) merged in."""
    renderer: structlog.types.Processor
    if fmt == "console":
        # Colours for a terminal only: a file or a pipe gets plain text (NO_COLOR too).
        colors = sys.stderr.isatty() and "NO_COLOR" not in os.environ
        renderer = structlog.dev.ConsoleRenderer(colors=colors)
    else:
        renderer = structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
