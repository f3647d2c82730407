"""Real ``solrace serve`` processes, and a player that records every acked move."""

from __future__ import annotations

import asyncio
import itertools
import random
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from conftest import TIMEOUT
from redis_server import free_port

from solrace.client import Client, ServerError
from solrace.protocol import PlayMove

__all__ = ["RETRY_PAUSE", "NodeProcess", "Player"]

RETRY_PAUSE = 0.2  # before sending an ``unavailable`` move again


PLAIN_DEAL_FLAGS = ("--no-winnable-default", "--no-daily-winnable")
"""``solrace serve`` flags of a test node that deals any seed and the day's first candidate
(conftest.PLAIN_DEALS): no solver worker busy certifying deals beside what is measured."""


class NodeProcess:
    """``solrace serve`` on a free port of its own, logging to a file."""

    def __init__(self, directory: Path, redis_url: str | None, *options: str) -> None:
        self.directory = directory
        self.redis_url = redis_url
        self.port = free_port()
        self.options = options
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        """The node's data directory (the embedded backend's storage)."""
        return self.directory / "data"

    @property
    def url(self) -> str:
        """The websocket URL."""
        return f"ws://127.0.0.1:{self.port}/"

    def start(self) -> None:
        """Start the process (see :meth:`wait_listening`)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "solrace", "serve", "--port", str(self.port)]
        if self.redis_url is not None:
            command += ["--redis", self.redis_url]
        command += ["--resume-grace", "60", "--data-dir", str(self.data_dir)]
        # These nodes race random deals; a node dealing winnable ones would keep a solver
        # worker busy filling its pools and certifying daily deals (tests/server/
        # test_winnable.py covers those).
        command += [*PLAIN_DEAL_FLAGS, *self.options]
        with (self.directory / "node.log").open("ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, cwd=self.directory
            )

    def status(self, path: str, timeout: float = TIMEOUT / 2) -> int:
        """The HTTP status of ``path`` (0 if nothing answers)."""
        url = f"http://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)
        except (urllib.error.URLError, OSError):
            return 0

    def wait_listening(self, timeout: float = 3 * TIMEOUT) -> None:
        """Wait until /healthz answers."""
        deadline = time.monotonic() + timeout
        while self.status("/healthz", timeout=1.0) != 200:
            assert self.process is not None
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = (self.directory / "node.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"node on port {self.port} did not start:\n{log}")
            time.sleep(0.05)

    def rss_kib(self) -> int:
        """The process's resident memory (VmRSS), in KiB."""
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(
            next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1]
        )

    def kill(self) -> None:
        """SIGKILL: the node dies with its connections, as a crashed process would."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Player:
    """A client playing random legal moves, and every move the server acked to it."""

    client: Client
    node: int
    rng: random.Random
    acked: list[str] = field(default_factory=list)
    acked_at: list[float] = field(default_factory=list)
    unavailable: int = 0
    in_flight: bool = False
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1_000_000))

    @property
    def playing(self) -> bool:
        """Whether the player's game goes on (a random line of play may end stuck)."""
        view = self.client.view
        if view is None:
            return False
        if view["status"] == "stuck":  # over unless undo is on: then the player undoes
            return bool(view.get("can_undo"))
        return view["status"] == "playing" and bool(view["legal"])

    def choose(self, legal: list[str]) -> str:
        """A random legal move, mostly a turn of the stock: that never leaves a game stuck."""
        turns = [m for m in legal if m in ("d", "rd")]
        if turns and self.rng.random() < 0.7:
            return turns[0]
        return self.rng.choice(legal)

    async def play_one(self) -> bool:
        """Play one random legal move until it is acked; False if the game is over."""
        if not self.playing:
            return False
        assert self.client.view is not None
        rev = len(self.acked)
        assert self.client.rev == rev, "the server holds a move that was never acked"
        view = self.client.view
        move = "u" if view["status"] == "stuck" else self.choose(view["legal"])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 4 * TIMEOUT
        while True:
            self.in_flight = True
            try:
                ack = await self.client.request(PlayMove(next(self.ids), move, rev))
                break
            except ServerError as error:
                # Unknown fate: logged with its reply lost, or never logged. Ask again.
                if error.code != "unavailable" or loop.time() > deadline:
                    raise
                self.unavailable += 1
                await asyncio.sleep(RETRY_PAUSE)
            finally:
                self.in_flight = False
        assert ack["type"] == "ack" and ack["move"] == move, ack
        assert ack["rev"] == rev + 1, ack
        self.acked.append(move)
        self.acked_at.append(loop.time())
        return True
