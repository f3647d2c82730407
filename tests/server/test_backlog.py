"""The node listens with a queue long enough for every client to reconnect at once."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import ServerFactory

from solrace.server import ServerConfig


def listen_queue(port: int) -> int:
    """The backlog of the socket listening on ``port``, as the kernel reports it (``ss``
    shows a listening socket's backlog as its Send-Q)."""
    assert shutil.which("ss"), "ss (iproute2) is needed to read a socket's backlog"
    lines = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    (line,) = [line for line in lines if line.strip()]
    return int(line.split()[2])


@pytest.mark.parametrize("backend_kind", ["embedded"], indirect=True)
async def test_the_node_listens_with_its_backlog(start_server: ServerFactory) -> None:
    assert ServerConfig().listen_backlog == 1024
    assert listen_queue((await start_server()).server.port) == 1024
    assert listen_queue((await start_server(listen_backlog=333)).server.port) == 333
