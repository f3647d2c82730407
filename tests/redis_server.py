"""A real ``redis-server`` that a test run starts itself, on a free loopback port.

By default it keeps nothing on disk (``--save ''``, no AOF), so a restart comes back
empty: the way a Redis that lost its data looks to the nodes. ``options`` adds settings
(``["--appendonly", "yes"]`` keeps an AOF in ``directory``, which a restart loads). Fault
tests stop, kill, pause and restart it.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import redis

__all__ = ["RedisServer", "free_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process in ``directory``; the port is kept across restarts."""

    def __init__(
        self,
        directory: Path,
        *,
        executable: str = "redis-server",
        start_timeout: float = 10.0,
        options: Sequence[str] = (),
    ) -> None:
        self.directory = directory
        self.executable = executable
        self.start_timeout = start_timeout
        self.options = list(options)
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def available(executable: str = "redis-server") -> bool:
        """Whether a redis-server binary is on the PATH."""
        return shutil.which(executable) is not None

    @property
    def url(self) -> str:
        """The URL nodes connect to."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self._process is not None and self._process.poll() is None

    def client(self) -> redis.Redis:
        """A synchronous client with short timeouts, for setting up and checking."""
        return redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=2.0, socket_connect_timeout=2.0
        )

    def start(self) -> None:
        """Start the server and wait until it answers PING."""
        if self.running:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        log = (self.directory / "redis.log").open("ab")
        self._process = subprocess.Popen(
            [
                self.executable,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.directory),
                *self.options,  # later settings win over the defaults above
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.directory,
        )
        log.close()
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"redis-server exited; see {self.directory / 'redis.log'}")
            try:
                with self.client() as client:
                    if client.ping():
                        return
            except redis.ConnectionError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer on port {self.port}")
            time.sleep(0.02)

    @property
    def pid(self) -> int | None:
        """The process id while it runs."""
        return self._process.pid if self.running and self._process is not None else None

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL if it lingers)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGCONT)  # a paused server would never see the SIGTERM
        process.terminate()
        try:
            process.wait(timeout=self.start_timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def kill(self) -> None:
        """Kill the server with SIGKILL, as a crash would: no shutdown, no last write."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.kill()
        process.wait()

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections stay open and nothing answers."""
        if self._process is not None:
            self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Thaw a paused server (SIGCONT)."""
        if self._process is not None:
            self._process.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        """Stop and start again on the same port (empty, unless ``options`` keep an AOF)."""
        self.stop()
        self.start()

    def flush(self) -> None:
        """Delete every key."""
        with self.client() as client:
            client.flushall()
