"""``solrace loadtest`` against a real node: bots race at a pace, and the report adds up."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TIMEOUT
from process_support import NodeProcess
from redis_server import free_port


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[NodeProcess, int]]:
    """``solrace serve`` trusting this machine as a proxy, with a metrics port."""
    metrics = free_port()
    process = NodeProcess(
        tmp_path / "node", None, "--trusted-proxy", "127.0.0.1", "--metrics-port", str(metrics)
    )
    process.start()
    process.wait_listening()
    yield process, metrics
    process.stop()


def test_bots_race_at_their_pace_and_the_report_counts_them(
    node: tuple[NodeProcess, int],
) -> None:
    process, metrics = node
    command = [sys.executable, "-m", "solrace", "loadtest", process.url, "--players", "12"]
    command += ["--pace", "200ms", "--duration", "4s", "--ramp", "0.5s", "--spectators", "2"]
    command += ["--addresses", "--metrics", f"http://127.0.0.1:{metrics}/", "--json"]
    command += ["--illegal-rate", "0.2", "--processes", "2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=6 * TIMEOUT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    total = report["total"]
    assert total["connected"] == 12 and total["spectators"] == 2, total
    # Twelve players at five moves a second for about three seconds, none refused but for
    # the moves played wrong on purpose (a fifth of them).
    assert 60 <= total["moves"] <= 12 * 5 * 4 + 12, total
    assert set(total["errors"]) <= {"illegal_move"}, total["errors"]
    assert 0 < total["refused"] < total["moves"] / 2
    assert total["p50_ms"] > 0 and total["p99_ms"] >= total["p50_ms"]
    assert total["server_rss_mib"] and total["server_rss_mib"] > 10
    assert len(report["seconds"]) >= 3 and all("p99_ms" in s for s in report["seconds"])


def test_a_duration_it_cannot_read_is_refused_plainly() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "solrace",
            "loadtest",
            "ws://127.0.0.1:9/",
            "--players",
            "1",
            "--pace",
            "soon",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert (
        done.returncode == 2 and "not a duration" in done.stderr and "Traceback" not in done.stderr
    )


def test_a_server_that_is_not_there_fails_the_run() -> None:
    url = f"ws://127.0.0.1:{free_port()}/"  # nothing listens there
    command = [sys.executable, "-m", "solrace", "loadtest", url, "--players", "2"]
    done = subprocess.run(
        [*command, "--duration", "2s"], capture_output=True, text=True, timeout=4 * TIMEOUT
    )
    assert done.returncode == 1, done.stderr
    assert "no move was played" in done.stderr and "ConnectionRefusedError" in done.stderr


async def test_a_moves_answer_from_a_race_since_ended_leaves_the_new_race_alone() -> None:
    """A bot's move in flight when its race ends and the next one starts: the refusal
    that comes back (``race_over``, with the old race's revision) counts as a refusal,
    and the bot plays the new race from its own revision, not the old one."""
    from solrace.client.loadtest import LoadTest, _Bot, _Run

    run = _Run(LoadTest(url="ws://127.0.0.1:9/", players=1, pace_s=60.0), 0, 1)
    bot = _Bot(run, None)
    sent: list[dict[str, object]] = []
    bot.send = sent.append  # type: ignore[method-assign]
    started = {"type": "race_started", "rev": 0, "view": {"status": "playing", "legal": ["d"]}}
    bot._message(started)
    assert bot.racing and bot.timer is not None
    bot.timer.cancel()
    bot._move()
    (move,) = sent
    assert move["rev"] == 0
    # The race ends and the next one starts while the move is in flight.
    bot._message({"type": "race_over", "race": 1})
    bot._message(started)
    old = {"type": "error", "id": move["id"], "code": "race_over", "rev": 7}
    bot._message(old)
    assert run.report.errors["race_over"] == 1 and run.report.moves == 1
    assert bot.rev == 0 and bot.racing, "the old race's answer was taken for the new one's"
    assert bot.timer is not None  # it plays on
    bot.timer.cancel()


async def test_a_handshake_answered_after_the_bot_gave_up_closes_quietly() -> None:
    """A node too busy to answer a bot's handshake in time: the bot gives up (the
    connection counts as failed and is closed), and the answer that comes later is
    dropped instead of failing the load generator's protocol with a traceback."""
    import asyncio
    import contextlib

    from solrace.client.loadtest import LoadTest, _Run

    accepted: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    came = asyncio.Event()

    async def late(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append((reader, writer))
        came.set()

    server = await asyncio.start_server(late, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()
    failures: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _, context: failures.append(context))
    try:
        run = _Run(
            LoadTest(url=f"ws://127.0.0.1:{port}/", players=1, handshake_timeout_s=0.2), 0, 1
        )
        with pytest.raises(TimeoutError):
            await run.connect(0)
        await came.wait()
        reader, writer = accepted[0]
        await reader.readuntil(b"\r\n\r\n")  # the bot's handshake
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
        await writer.drain()
        # The bot closed its side when it gave up (unread bytes may make that a reset).
        with contextlib.suppress(ConnectionResetError):
            assert await asyncio.wait_for(reader.read(), 5) == b""
        await asyncio.sleep(0.1)  # the late answer, had the bot still been reading
        assert not failures, failures
        assert run.bots == []
    finally:
        loop.set_exception_handler(None)
        for _, writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_the_load_process_reports_its_own_stalls_apart_from_the_servers() -> None:
    """A stall of the load process's own event loop (its collector, its bots' work) would
    be counted in every round trip in flight: each interval's report says how long the
    longest was, and the intervals add up to the longest of them."""
    import asyncio
    import time

    from solrace.client.loadtest import LoadTest, Report, _Run, _watch_lag

    run = _Run(LoadTest(url="ws://127.0.0.1:9/", players=1), 0, 1)
    watching = asyncio.ensure_future(_watch_lag(run))
    await asyncio.sleep(0.05)
    assert run.report.lag_ms < 100
    time.sleep(0.15)  # the loop held, as a full collection over thousands of bots holds it
    await asyncio.sleep(0.05)
    run.running = False
    await watching
    stalled = run.take()
    assert stalled.lag_ms >= 100 and stalled.figures()["load_lag_ms"] >= 100
    assert run.report.lag_ms == 0.0  # the next interval starts afresh
    total = Report()
    total.add(Report(lag_ms=20.0))
    total.add(stalled)
    total.add(Report(lag_ms=30.0))
    assert total.lag_ms == stalled.lag_ms


@pytest.mark.parametrize("joining", [3, 0])
async def test_the_ramp_holds_no_more_bots_joining_at_once_than_its_bound(joining: int) -> None:
    """Bots whose server does not answer yet: at most ``joining`` of them have
    connected and wait for it (the others wait their turn instead of piling into its
    listen queue); one that fails frees its place for the next. With no bound, every
    bot due on the ramp connects at once."""
    import asyncio

    from solrace.client.loadtest import LoadTest, _Run

    accepted: list[asyncio.StreamWriter] = []

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    test = LoadTest(
        url=f"ws://127.0.0.1:{port}/", players=12, rooms_of=1, ramp_s=0.0, joining=joining
    )
    run = _Run(test, 0, test.players)
    try:
        await run.start(0)
        await asyncio.sleep(0.5)
        assert len(accepted) == (joining or 12)
        if joining:
            for writer in accepted:
                writer.close()  # these bots fail to join: the next ones take their places
            await asyncio.sleep(0.5)
            assert len(accepted) == 2 * joining
            assert run.report.errors["ConnectionError"] == joining
            assert not run.ramped.is_set()
    finally:
        await run.stop()
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()
