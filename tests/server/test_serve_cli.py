"""``solrace serve``: its flags reach the node, and one that cannot start says why.

A node that cannot start says why on one line of stderr and exits non-zero: each such
test runs the real command in a process of its own, against a real obstacle (a Redis
address nothing answers on, a port another socket holds, a data directory that cannot be
one). The limit flags are read by the real parser into the node's settings, and the
message rate and room cap are checked on a running node. A node runs on the event loop
``--loop`` or ``SOLRACE_LOOP`` names, uvloop by default, and on asyncio's own where uvloop
does not import (a stub package that refuses to import stands for such a machine).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import TIMEOUT
from e2e_support import RawClient
from process_support import NodeProcess
from redis_server import free_port

from solrace.cli import build_parser
from solrace.protocol import Limits
from solrace.server import ServerConfig
from solrace.server.cli import NODE_FLAGS, config_from_args
from solrace.server.config import Budgets

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


# -- flags reach the node's settings -------------------------------------------------------


def serve_config(*argv: str) -> ServerConfig:
    """The settings ``solrace serve ARGV`` would run a node with (the real parser)."""
    return config_from_args(build_parser().parse_args(["serve", *argv]))


def test_without_flags_a_node_runs_with_every_default() -> None:
    config = serve_config()
    defaults = ServerConfig()
    assert config.limits == Limits()
    assert config.budgets == Budgets()
    for name in NODE_FLAGS:
        assert getattr(config, name) == getattr(defaults, name), name


@pytest.mark.parametrize(
    ("flag", "value", "setting"),
    [
        ("--messages-per-second", "7.5", lambda c: c.limits.messages_per_second),
        ("--burst", "9", lambda c: c.limits.burst),
        ("--max-rooms-per-node", "11", lambda c: c.max_rooms_per_node),
        ("--max-write-buffer", "65536", lambda c: c.max_write_buffer),
        ("--daily-flag-median-ms", "90", lambda c: c.daily_flag_median_ms),
        ("--daily-flag-min-moves", "12", lambda c: c.daily_flag_min_moves),
        ("--deal-pool-size", "3", lambda c: c.deal_pool_size),
        ("--solver-budget-s", "0.5", lambda c: c.solver_budget_s),
        ("--solver-workers", "2", lambda c: c.solver_workers),
        ("--commit-window-s", "0.02", lambda c: c.commit_window_s),
        ("--progress-interval-s", "0.5", lambda c: c.progress_interval_s),
        ("--progress-interval-max-s", "2", lambda c: c.progress_interval_max_s),
        ("--listen-backlog", "4000", lambda c: c.listen_backlog),
        ("--budget-room-share-per-address", "0.5", lambda c: c.budgets.room_share_per_address),
    ],
)
def test_each_limit_flag_reaches_the_node_config(
    flag: str, value: str, setting: Callable[[ServerConfig], float]
) -> None:
    wanted = float(value)
    assert setting(ServerConfig()) != wanted  # the flag, not the default, sets it
    got = setting(serve_config(flag, value))
    assert got == wanted and type(got) is type(setting(ServerConfig())), got


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--messages-per-second", "0", "more than 0 is wanted, not 0"),
        ("--burst", "-3", "more than 0 is wanted, not -3"),
        ("--max-rooms-per-node", "0", "at least 1 is wanted, not 0"),
        ("--max-write-buffer", "lots", "an integer is wanted, not 'lots'"),
        ("--daily-flag-median-ms", "-1", "at least 0 is wanted, not -1"),
        ("--budget-rooms-per-hour", "-1", "at least 0 is wanted, not -1"),
        ("--messages-per-second", "inf", "more than 0 is wanted, not inf"),
        ("--commit-window-s", "-0.1", "at least 0 is wanted, not -0.1"),
        ("--commit-window-s", "2", "at most 1 is wanted, not 2"),
        ("--progress-interval-s", "-1", "at least 0 is wanted, not -1"),
        ("--progress-interval-max-s", "60", "at most 10 is wanted, not 60"),
    ],
)
def test_a_limit_flag_out_of_range_is_refused_with_the_flag_named(
    flag: str, value: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        serve_config(flag, value)
    assert exit_.value.code == 2
    assert f"argument {flag}: {says}" in capsys.readouterr().err


async def test_the_rate_and_room_flags_hold_on_a_running_node(tmp_path: Path) -> None:
    # One token a hundred seconds: the burst is all the test's pings may take.
    node = NodeProcess(
        tmp_path, None, "--messages-per-second", "0.01", "--burst", "3", "--max-rooms-per-node", "1"
    )
    node.start()
    try:
        await asyncio.to_thread(node.wait_listening)
        first = await RawClient.open(node.url, name="ann")
        assert [(await first.request({"type": "ping"}))["type"] for _ in range(2)] == ["pong"] * 2
        await first.close()
        # The same identity again: its rate goes on where the last connection left it.
        again = await RawClient.open(node.url, token=first.token)
        assert (await again.request({"type": "ping"}))["type"] == "pong"
        refused = await again.request({"type": "ping"})
        assert refused["code"] == "rate_limited" and refused["retry_after"] > 1, refused
        await again.close()
        one, two = [await RawClient.open(node.url, name=n) for n in ("one", "two")]
        create = {"type": "create_room", "variant": "canfield"}
        assert (await one.request(create))["type"] == "room"
        assert (await two.request(create))["code"] == "too_many_rooms"
        await one.close()
        await two.close()
    finally:
        node.stop()


# -- the event loop ------------------------------------------------------------------------


def listening_loop(node: NodeProcess) -> str:
    """The event loop the node's ``listening`` log line names."""
    for line in (node.directory / "node.log").read_text().splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("event") == "listening":
                return str(entry["loop"])
    raise AssertionError("no listening line in node.log")


async def test_serve_keeps_its_startup_objects_out_of_the_collector(tmp_path: Path) -> None:
    """What the node allocated to start is frozen, and young collections come less often."""
    from solrace.server.app import GC_THRESHOLDS

    node = NodeProcess(tmp_path, None)
    await serve_and_ping(node)
    entries = [
        json.loads(line)
        for line in (node.directory / "node.log").read_text().splitlines()
        if line.startswith("{")
    ]
    tuned = [entry for entry in entries if entry.get("event") == "gc_tuned"]
    assert len(tuned) == 1
    assert tuned[0]["thresholds"] == list(GC_THRESHOLDS)
    assert tuned[0]["frozen"] > 10_000  # the modules, the engine's tables


async def test_a_collection_that_holds_the_loop_is_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A collection past ``GC_PAUSE_LOGGED_S`` is a ``gc_pause`` warning with its
    generation and length: the cause of a p99 an operator would otherwise not see."""
    import gc

    from structlog.contextvars import bound_contextvars, get_contextvars, merge_contextvars
    from structlog.testing import capture_logs

    from solrace.server import app

    async def collect_logged(threshold: float) -> list[dict[str, object]]:
        monkeypatch.setattr(app, "GC_PAUSE_LOGGED_S", threshold)
        gc.callbacks.append(app._log_pause)
        try:
            merged = capture_logs(processors=[merge_contextvars])  # as the node's logs
            with merged as logs, bound_contextvars(conn="c7", player="p7"):
                gc.collect()
                assert get_contextvars() == {"conn": "c7", "player": "p7"}  # untouched
                await asyncio.sleep(0.05)  # the loop logs the line
        finally:
            gc.callbacks.remove(app._log_pause)
        return [entry for entry in logs if entry["event"] == "gc_pause"]

    assert await collect_logged(60.0) == []
    logged = await collect_logged(0.0)
    assert [entry["generation"] for entry in logged] == [2]
    assert logged[0]["log_level"] == "warning" and float(str(logged[0]["ms"])) >= 0
    assert "conn" not in logged[0] and "player" not in logged[0]  # not the request's doing


_COLLECTIONS_INSIDE_SETS = """
import asyncio, contextvars, gc, sys
import structlog
from solrace.server import app
from solrace.server.logs import configure_logging

async def main():
    configure_logging("json")
    app.GC_PAUSE_LOGGED_S = 0.0  # every collection is logged
    app._freezing = True  # and asks the loop to freeze what it left
    gc.callbacks.append(app._log_pause)
    pads = [contextvars.ContextVar(f"pad{i}") for i in range(40)]
    for var in pads:
        var.set(object())  # a mapping of several levels
    gc.set_threshold(1, 1, 1)  # a collection on nearly every allocation
    for i in range(3000):
        structlog.contextvars.bind_contextvars(conn=str(i), room=[i], player={i: i})
        pads[i % 40].set([i])
    gc.set_threshold(700, 10, 10)
    await asyncio.sleep(0.1)
    print("survived", file=sys.stderr)

asyncio.run(main())
"""


def test_logging_a_collection_started_inside_a_context_variables_set_is_safe() -> None:
    """A collection can start inside ``ContextVar.set`` (``bind_contextvars`` on every
    connection), and CPython 3.11 crashes if a collector callback sets a context
    variable then (gh-148891): the pause logger once cleared and bound the request's
    variables around its line, and a node under load died of a general protection fault.
    With a collection on nearly every allocation and every one logged, 3,000 sets: the
    old logger crashed on each of three tries."""
    done = subprocess.run(
        [sys.executable, "-c", _COLLECTIONS_INSIDE_SETS],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "survived" in done.stderr


@pytest.fixture
def without_uvloop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """PYTHONPATH for a machine where uvloop does not import (set for child processes)."""
    stub = tmp_path / "no-uvloop" / "uvloop"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text('raise ImportError("no uvloop on this machine")\n')
    path = os.pathsep.join(
        filter(None, [str(stub.parent), str(ROOT), os.environ.get("PYTHONPATH")])
    )
    monkeypatch.setenv("PYTHONPATH", path)
    return path


async def serve_and_ping(node: NodeProcess) -> str:
    """Start ``node``, check that it answers a player, stop it; the loop it ran on."""
    node.start()
    try:
        await asyncio.to_thread(node.wait_listening)
        client = await RawClient.open(node.url, name="ann")
        assert (await client.request({"type": "ping"}))["type"] == "pong"
        await client.close()
        return listening_loop(node)
    finally:
        node.stop()


@pytest.mark.parametrize(
    ("flag", "env", "loop"),
    [
        (["--loop", "asyncio"], None, "asyncio"),
        (["--loop", "uvloop"], None, "uvloop"),
        ([], "asyncio", "asyncio"),
        ([], None, "uvloop"),
    ],
)
async def test_serve_runs_on_the_event_loop_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: list[str], env: str | None, loop: str
) -> None:
    pytest.importorskip("uvloop")  # a dependency wherever it installs
    monkeypatch.delenv("SOLRACE_LOOP", raising=False)
    if env is not None:
        monkeypatch.setenv("SOLRACE_LOOP", env)
    assert await serve_and_ping(NodeProcess(tmp_path, None, *flag)) == loop


async def test_serve_falls_back_to_asyncio_where_uvloop_does_not_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, without_uvloop: str
) -> None:
    monkeypatch.delenv("SOLRACE_LOOP", raising=False)
    assert await serve_and_ping(NodeProcess(tmp_path, None)) == "asyncio"


def test_serve_asked_for_uvloop_where_it_does_not_import_says_so(
    tmp_path: Path, without_uvloop: str
) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "solrace", "serve", "--port", str(free_port()), "--loop", "uvloop"],
        cwd=tmp_path,
        env=clean_env(PYTHONPATH=without_uvloop),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=4 * TIMEOUT,
        check=False,
    )
    result = Exit(process.returncode, process.stderr)
    assert_one_clear_line(result, "--loop uvloop: uvloop cannot be imported")
    assert "--loop asyncio" in result.lines[0]


def test_serve_with_an_unknown_loop_in_the_environment_says_so(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "solrace", "serve", "--port", str(free_port())],
        cwd=tmp_path,
        env=clean_env(SOLRACE_LOOP="tokio"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=4 * TIMEOUT,
        check=False,
    )
    result = Exit(process.returncode, process.stderr)
    assert_one_clear_line(result, "unknown event loop 'tokio' (--loop or SOLRACE_LOOP)")


def test_serve_says_which_address_to_open(tmp_path: Path) -> None:
    # For a person at a terminal; the JSON log has it as a line of its own
    # (tests/server/test_serve_errors.py).
    node = NodeProcess(tmp_path, None, "--log-format", "console")
    node.start()
    try:
        node.wait_listening()
        said = (node.directory / "node.log").read_text()
    finally:
        node.stop()
    assert f"solrace: open http://127.0.0.1:{node.port}/ in a browser" in said.splitlines()


def test_the_address_to_open_names_this_machine_for_a_node_on_every_address() -> None:
    from solrace.server.app import page_url

    assert page_url("0.0.0.0", 8765) == "http://127.0.0.1:8765/"
    assert page_url("::", 8765) == "http://127.0.0.1:8765/"
    assert page_url("::1", 80) == "http://[::1]:80/"
    assert page_url("games.example", 8765) == "http://games.example:8765/"


async def test_the_listening_line_says_which_rainbow_canfield_search_runs(tmp_path: Path) -> None:
    """The C search where the build made it (CI: always), the Python one otherwise."""
    from solrace.engine import native

    node = NodeProcess(tmp_path, None)
    await serve_and_ping(node)
    (entry,) = [
        json.loads(line)
        for line in (node.directory / "node.log").read_text().splitlines()
        if line.startswith("{") and json.loads(line).get("event") == "listening"
    ]
    built = native.extension("_rainbow") is not None
    assert entry["rainbow_search"] == ("C" if built else "Python"), entry
    if os.environ.get("CI") == "true" and os.environ.get("SOLRACE_PURE") != "1":
        assert entry["rainbow_search"] == "C"
