"""``solrace serve`` that cannot start says why on one line of stderr and exits non-zero.

Each test runs the real command in a process of its own, against a real obstacle: a
Redis address nothing answers on, a port another socket holds, a data directory that
cannot be one.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import TIMEOUT
from redis_server import free_port

ROOT = Path(__file__).resolve().parent.parent.parent


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without SOLRACE_ settings, importing this checkout's solrace."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOLRACE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return {**env, **extra}


@dataclass
class Exit:
    """How a command ended."""

    code: int
    stderr: str

    @property
    def lines(self) -> list[str]:
        """The non-empty lines of stderr."""
        return [line for line in self.stderr.splitlines() if line.strip()]


def serve(cwd: Path, *argv: str) -> Exit:
    """Run ``solrace serve ARGV`` until it exits (a node that starts would never exit)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "solrace", "serve", *argv],
        cwd=cwd,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, stderr = process.communicate(timeout=4 * TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
        raise AssertionError(f"solrace serve {' '.join(argv)} kept running:\n{stderr}") from None
    return Exit(process.returncode, stderr)


def assert_one_clear_line(result: Exit, expected: str) -> None:
    """A non-zero exit, and stderr is exactly one line that contains ``expected``."""
    assert result.code != 0
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.lines) == 1, result.stderr
    assert expected in result.lines[0], result.stderr
    assert result.lines[0].startswith("solrace serve: "), result.stderr


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port that another socket listens on for the test's length."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_serve_with_redis_down_says_which_redis_and_hides_its_password(tmp_path: Path) -> None:
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"  # nothing listens there
    result = serve(tmp_path, "--port", str(free_port()), "--redis", url)
    masked = url.replace("hunter2", "***")
    assert_one_clear_line(result, f"cannot reach Redis at {masked}: ")
    assert "hunter2" not in result.stderr


def test_serve_with_redis_down_from_the_environment_too(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    process = subprocess.run(
        [sys.executable, "-m", "solrace", "serve", "--port", str(free_port())],
        cwd=tmp_path,
        env=clean_env(SOLRACE_REDIS_URL=url),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=4 * TIMEOUT,
        check=False,
    )
    assert_one_clear_line(Exit(process.returncode, process.stderr), f"cannot reach Redis at {url}")


def test_serve_on_a_port_in_use_says_which_address(
    tmp_path: Path, taken_port: int, redis_url: str | None
) -> None:
    # On Redis the node has reached the store before it listens: that must not add noise.
    store = ["--redis", redis_url] if redis_url else ["--data-dir", str(tmp_path / "data")]
    result = serve(tmp_path, "--host", "127.0.0.1", "--port", str(taken_port), *store)
    assert_one_clear_line(
        result, f"cannot listen on 127.0.0.1:{taken_port}: address already in use"
    )


def test_serve_with_a_data_directory_that_cannot_be_one_says_which(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    data_dir = blocker / "data"
    result = serve(tmp_path, "--port", str(free_port()), "--data-dir", str(data_dir))
    assert_one_clear_line(result, f"cannot use the data directory {data_dir}: ")
