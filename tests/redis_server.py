"""A real ``redis-server`` that a test run starts itself, on a free loopback port.

By default it keeps nothing on disk (``--save ''``, no AOF), so a restart comes back
empty: the way a Redis that lost its data looks to the nodes. ``options`` adds settings
(``["--appendonly", "yes"]`` keeps an AOF in ``directory``, which a restart loads). Fault
tests stop, kill, pause and restart it.

With ``tls`` (files from :func:`make_tls_files`) it speaks TLS alone on its port, and
asks clients for a certificate unless ``options`` say ``--tls-auth-clients no``; with
``password`` it wants that password.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = ["RedisServer", "TlsFiles", "free_port", "make_tls_files"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class TlsFiles:
    """A certificate authority of a test's own, and a server's and a client's keys it signed."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_tls_files(directory: Path, openssl: str = "openssl") -> TlsFiles:
    """Make a CA, and a certificate for 127.0.0.1 and a client's, with the openssl command."""
    directory.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(
        ca=directory / "ca.crt",
        server_cert=directory / "server.crt",
        server_key=directory / "server.key",
        client_cert=directory / "client.crt",
        client_key=directory / "client.key",
    )
    ca_key = directory / "ca.key"

    def run(*argv: str | Path) -> None:
        subprocess.run([openssl, *map(str, argv)], check=True, capture_output=True, cwd=directory)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=solrace test CA",
        "-keyout", ca_key, "-out", files.ca)  # fmt: skip
    for name, cert, key, extension in (
        ("127.0.0.1", files.server_cert, files.server_key, "subjectAltName=IP:127.0.0.1"),
        ("solrace node", files.client_cert, files.client_key, "extendedKeyUsage=clientAuth"),
    ):
        request = directory / f"{key.stem}.csr"
        extensions = directory / f"{key.stem}.ext"
        extensions.write_text(extension + "\n")
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
            "-keyout", key, "-out", request)  # fmt: skip
        run("x509", "-req", "-in", request, "-CA", files.ca, "-CAkey", ca_key, "-CAcreateserial",
            "-days", "2", "-extfile", extensions, "-out", cert)  # fmt: skip
    return files


class RedisServer:
    """One redis-server process in ``directory``; the port is kept across restarts."""

    def __init__(
        self,
        directory: Path,
        *,
        executable: str = "redis-server",
        start_timeout: float = 10.0,
        options: Sequence[str] = (),
        tls: TlsFiles | None = None,
        password: str | None = None,
    ) -> None:
        self.directory = directory
        self.executable = executable
        self.start_timeout = start_timeout
        self.options = list(options)
        self.tls = tls
        self.password = password
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def available(executable: str = "redis-server") -> bool:
        """Whether a redis-server binary is on the PATH."""
        return shutil.which(executable) is not None

    @property
    def url(self) -> str:
        """The URL nodes connect to (with TLS, ``rediss://``: a node also needs the CA)."""
        scheme = "redis" if self.tls is None else "rediss"
        auth = "" if self.password is None else f":{self.password}@"
        return f"{scheme}://{auth}127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self._process is not None and self._process.poll() is None

    def client(self) -> redis.Redis:
        """A synchronous client with short timeouts, for setting up and checking."""
        tls: dict[str, Any] = {}
        if self.tls is not None:
            tls = {
                "ssl": True,
                "ssl_ca_certs": str(self.tls.ca),
                "ssl_certfile": str(self.tls.client_cert),
                "ssl_keyfile": str(self.tls.client_key),
            }
        return redis.Redis(
            host="127.0.0.1",
            port=self.port,
            password=self.password,
            socket_timeout=2.0,
            socket_connect_timeout=2.0,
            retry=Retry(NoBackoff(), 0),  # callers poll by themselves
            **tls,
        )

    def start(self) -> None:
        """Start the server and wait until it answers PING."""
        if self.running:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        log = (self.directory / "redis.log").open("ab")
        listen = ["--port", str(self.port)]
        if self.tls is not None:
            listen = [
                "--port", "0", "--tls-port", str(self.port),
                "--tls-cert-file", str(self.tls.server_cert),
                "--tls-key-file", str(self.tls.server_key),
                "--tls-ca-cert-file", str(self.tls.ca),
            ]  # fmt: skip
        if self.password is not None:
            listen += ["--requirepass", self.password]
        self._process = subprocess.Popen(
            [
                self.executable,
                *listen,
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
