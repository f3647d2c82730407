"""The node's log formats: JSON lines by default; the console format for a person, in
colour only on a terminal."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
from solrace.server.logs import configure_logging
import structlog
configure_logging({fmt!r})
structlog.get_logger().info("listening", port=1)
"""


def _log_of(fmt: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(fmt=fmt)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stderr


def test_the_console_format_written_to_a_file_or_pipe_has_no_colour_codes() -> None:
    text = _log_of("console")
    assert "listening" in text and "port" in text
    assert "\x1b[" not in text, repr(text)


def test_the_json_format_is_one_object_a_line() -> None:
    import json

    (line,) = _log_of("json").splitlines()
    assert json.loads(line)["event"] == "listening"
