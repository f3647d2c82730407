"""A real Redis Cluster that a test starts itself: three primaries on free loopback ports.

Each primary is a ``redis-server --cluster-enabled yes`` in a folder of its own, keeping
nothing on disk; ``redis-cli --cluster create`` spreads the 16384 slots over them, with
no replicas. Each node's cluster bus gets a free port of its own too (``--cluster-port``),
since the default, the port plus 10000, may be out of range for a high free port.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import redis
from redis_server import free_port

__all__ = ["RedisClusterServers"]


class RedisClusterServers:
    """``masters`` redis-server processes in ``directory``, joined into one cluster."""

    def __init__(self, directory: Path, *, masters: int = 3, start_timeout: float = 20.0) -> None:
        self.directory = directory
        self.start_timeout = start_timeout
        self.ports = [free_port() for _ in range(masters)]
        self._bus_ports = [free_port() for _ in range(masters)]
        self._processes: list[subprocess.Popen[bytes]] = []

    @staticmethod
    def available() -> bool:
        """Whether redis-server and redis-cli are on the PATH."""
        return shutil.which("redis-server") is not None and shutil.which("redis-cli") is not None

    @property
    def url(self) -> str:
        """The URL nodes connect to: the first primary, as a cluster URL."""
        return f"redis+cluster://127.0.0.1:{self.ports[0]}"

    def client(self, port: int) -> redis.Redis:
        """A synchronous client of one node, for setting up and checking."""
        return redis.Redis(
            host="127.0.0.1", port=port, socket_timeout=2.0, socket_connect_timeout=2.0
        )

    def start(self) -> None:
        """Start every node, create the cluster and wait until every node says it is ok."""
        for port, bus_port in zip(self.ports, self._bus_ports, strict=True):
            folder = self.directory / str(port)
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / "redis.log").open("ab") as log:
                self._processes.append(
                    subprocess.Popen(
                        [
                            "redis-server",
                            "--port",
                            str(port),
                            "--cluster-port",
                            str(bus_port),
                            "--bind",
                            "127.0.0.1",
                            "--cluster-enabled",
                            "yes",
                            "--cluster-config-file",
                            "nodes.conf",
                            "--save",
                            "",
                            "--appendonly",
                            "no",
                            "--dir",
                            str(folder),
                        ],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        cwd=folder,
                    )
                )
        deadline = time.monotonic() + self.start_timeout
        for port in self.ports:
            self._wait(deadline, lambda port=port: self._answers(port))
        subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "create",
                *(f"127.0.0.1:{port}" for port in self.ports),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=self.start_timeout,
        )
        for port in self.ports:
            self._wait(deadline, lambda port=port: self._ok(port))

    def _answers(self, port: int) -> bool:
        try:
            with self.client(port) as client:
                return bool(client.ping())
        except redis.ConnectionError:
            return False

    def _ok(self, port: int) -> bool:
        with self.client(port) as client:
            info = client.execute_command("CLUSTER", "INFO")
        text = info.decode() if isinstance(info, bytes) else str(info)
        return "cluster_state:ok" in text

    def _wait(self, deadline: float, ready: Callable[[], bool]) -> None:
        while not ready():
            for process in self._processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a redis-server exited; see the logs in {self.directory}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the Redis Cluster did not come up")
            time.sleep(0.05)

    def owner(self, key: str) -> int:
        """The port of the primary that owns ``key``'s slot."""
        with self.client(self.ports[0]) as client:
            slot = int(client.execute_command("CLUSTER", "KEYSLOT", key))
            for start, end, primary, *_ in client.execute_command("CLUSTER", "SLOTS"):
                if int(start) <= slot <= int(end):
                    return int(primary[1])
        raise LookupError(f"no primary owns slot {slot}")

    def migrate(self, key: str, port: int) -> None:
        """Move ``key``'s slot, with its keys, to the primary on ``port`` (as a resharding does)."""
        with self.client(self.ports[0]) as client:
            slot = int(client.execute_command("CLUSTER", "KEYSLOT", key))
        source_port = self.owner(key)
        with self.client(source_port) as source, self.client(port) as target:
            source_id = source.execute_command("CLUSTER", "MYID")
            target_id = target.execute_command("CLUSTER", "MYID")
            target.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
            source.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
            while keys := source.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
                source.execute_command("MIGRATE", "127.0.0.1", port, "", 0, 5000, "KEYS", *keys)
            for other in [port, source_port, *self.ports]:
                with self.client(other) as client:
                    client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)

    def flush(self) -> None:
        """Delete every key on every primary."""
        for port in self.ports:
            with self.client(port) as client:
                client.flushall()

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL if one lingers)."""
        processes, self._processes = self._processes, []
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
