"""A node's CPU while one address asks for the page flat out, and a racer's latency meanwhile.

``solrace serve`` (its defaults, no trusted proxy) runs pinned to the first core; a flood
process asks for ``/`` from 127.0.0.9, ``--concurrency`` connections at a time, a new one
each, and a canary (from 127.0.0.1, in this process) plays a draw or an undo every 0.05 s
in a room of its own; both on the second core. After ``--seconds``: the node's CPU
(cores), the pages served and refused a second, the canary's move p50 and p99. The last
line of stdout holds them as ``key=value`` pairs.

    python3 bench/page_flood.py [--seconds 8] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attacks
import msgpack
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

SOURCE = "127.0.0.9"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def flood(port: int, seconds: float, concurrency: int, out: Any) -> None:
    """In a process of its own: bench/attacks.py's page flood for ``seconds``; (pages
    served, refused) put on ``out``."""

    async def run() -> attacks.Tally:
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(seconds, stop.set)
        return await attacks.page_flood(port, stop, SOURCE, concurrency)

    replies = asyncio.run(run()).replies
    out.put([replies["200"], replies.total() - replies["200"] - replies["connect_failed"]])


async def main(args: argparse.Namespace) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        command = [sys.executable, "-m", "solrace", "serve", "--port", str(port)]
        command += ["--data-dir", data, "--no-winnable-default"]
        node = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if len(cpus) > 1:
                os.sched_setaffinity(node.pid, {cpus[0]})
                os.sched_setaffinity(0, {cpus[1]})
            for _ in range(200):
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                    writer.close()
                    break
                except OSError:
                    await asyncio.sleep(0.05)
            figures = await measure(port, node.pid, args)
        finally:
            node.terminate()
            node.wait(10)
    print(
        f"node CPU {figures['node_cpu']:.2f} cores; pages {figures['pages_per_s']:.0f}/s, "
        f"refused {figures['refused_per_s']:.0f}/s; canary move p50 "
        f"{figures['canary_p50_ms']:.1f} ms, p99 {figures['canary_p99_ms']:.1f} ms",
        file=sys.stderr,
    )
    print(" ".join(f"{k}={v:.2f}" for k, v in figures.items()))


async def measure(port: int, pid: int, args: argparse.Namespace) -> dict[str, float]:
    ws = await connect(f"ws://127.0.0.1:{port}/", subprotocols=[Subprotocol("solrace.v1.msgpack")])
    ids = iter(range(1, 1 << 30))

    async def request(data: dict[str, Any]) -> dict[str, Any]:
        request_id = next(ids)
        await ws.send(msgpack.packb({**data, "id": request_id}))
        while True:
            reply = msgpack.unpackb(await ws.recv())
            if reply.get("id") == request_id:
                return dict(reply)

    await request({"type": "hello", "name": "canary"})
    await request({"type": "create_room", "variant": "canfield", "countdown": 0, "max_players": 1})
    await request({"type": "start"})
    out: Any = multiprocessing.Queue()
    flooder = multiprocessing.Process(
        target=flood, args=(port, args.seconds, args.concurrency, out)
    )
    cpu0 = node_cpu_s(pid)
    flooder.start()
    latencies: list[float] = []
    rev = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        reply = await request({"type": "move", "move": "d" if rev % 2 == 0 else "u", "rev": rev})
        if reply["type"] != "ack":
            raise RuntimeError(f"the canary's move was refused: {reply}")
        rev += 1
        latencies.append(time.perf_counter() - started)
        await asyncio.sleep(0.05)
    served, refused = await asyncio.to_thread(out.get)
    flooder.join()
    cpu = node_cpu_s(pid) - cpu0
    await ws.close()
    latencies.sort()
    return {
        "node_cpu": cpu / args.seconds,
        "pages_per_s": served / args.seconds,
        "refused_per_s": refused / args.seconds,
        "canary_p50_ms": 1000 * latencies[len(latencies) // 2],
        "canary_p99_ms": 1000 * latencies[int(len(latencies) * 0.99)],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--concurrency", type=int, default=64)
    asyncio.run(main(parser.parse_args()))
