"""docs/operations.md tells the operator what the commands and the deploy files do.

Read against the code: every flag of ``serve`` and ``leaderboard``, every ``SOLRACE_``
variable the code reads, the export's columns, and the Redis URLs a node accepts.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from solrace.cli import build_parser
from solrace.cli_leaderboard import COLUMNS

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = (ROOT / "docs" / "operations.md").read_text()
SOURCES = ("engine", "protocol", "server", "client", "solrace")


def section(title: str) -> str:
    """The text of the ``## title`` section, up to the next section of that level."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", DOC, re.M | re.S)
    assert match is not None, f"docs/operations.md has no section {title!r}"
    return match.group(1)


def command(name: str) -> argparse.ArgumentParser:
    """The real parser of ``solrace NAME``."""
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise AssertionError("no subcommands")


def options(parser: argparse.ArgumentParser) -> set[str]:
    """The long options of ``parser``, --help aside."""
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }


def test_every_solrace_environment_variable_the_code_reads_is_documented() -> None:
    read: set[str] = set()
    for folder in SOURCES:
        for path in (ROOT / folder).rglob("*.py"):
            read |= set(
                re.findall(r"""environ(?:\.get)?[(\[]\s*["'](SOLRACE_\w+)""", path.read_text())
            )
    assert {"SOLRACE_URL", "SOLRACE_DATA_DIR", "SOLRACE_REDIS_URL"} <= read
    assert {name for name in read if f"`{name}`" not in DOC} == set()


def test_every_serve_flag_is_documented() -> None:
    assert {flag for flag in options(command("serve")) if f"`{flag}" not in DOC} == set()


def test_the_leaderboard_section_covers_every_flag_action_and_column() -> None:
    text = section("The daily leaderboards")
    parser = command("leaderboard")
    assert {flag for flag in options(parser) if f"`{flag}" not in text} == set()
    (actions,) = [a.choices for a in parser._actions if a.dest == "action"]
    assert actions is not None
    assert {a for a in actions if f"`{a}`" not in text} == set()
    assert {c for c in COLUMNS if f"`{c}`" not in text} == set()
    for name in ("SOLRACE_URL", "SOLRACE_DATA_DIR", "SOLRACE_REDIS_URL"):
        assert name in text, name


def test_one_story_about_redis_cluster() -> None:
    # A node runs on Redis Cluster through redis-py's cluster client (server/backends/
    # redis.py): nowhere may the doc say it does not follow the cluster.
    assert not re.search(r"not\s+follow\s+(the\s+)?cluster", DOC), "contradicts 'Redis Cluster'"
    redis_row = next(line for line in DOC.splitlines() if line.startswith("| `--redis URL`"))
    cluster = section("Redis Cluster")
    for scheme in ("redis://", "rediss://", "redis+cluster://"):
        assert scheme in redis_row, scheme
    for scheme in ("redis+cluster://", "rediss+cluster://"):
        assert scheme in cluster, scheme
    scaling = section("Scaling out")
    assert "redis+cluster://" in scaling and "[Redis Cluster](#redis-cluster)" in scaling
