"""The files in deploy/ agree with each other and with the server they run.

No container engine runs here: the Dockerfile's health check runs against a real node,
deploy/redis.conf runs in a real redis-server, and the YAML files are read and checked
against one another (where PyYAML is installed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from conftest import TIMEOUT, RunningServer
from redis_server import free_port

from solrace.server import cli as server_cli

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"


@pytest.fixture
def backend_kind() -> str:
    """The probes are checked against a node on the embedded backend."""
    return "embedded"


# -- Dockerfile ----------------------------------------------------------------------------


def instructions() -> list[tuple[str, str]]:
    """The final stage's instructions of deploy/Dockerfile, continuation lines joined."""
    text = (DEPLOY / "Dockerfile").read_text()
    logical: list[str] = []
    current = ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        logical.append(current + line)
        current = ""
    parsed = [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip()) for line in logical]
    last_from = max(i for i, (name, _) in enumerate(parsed) if name == "FROM")
    return parsed[last_from:]


def instruction(name: str) -> str:
    """The argument of the last ``name`` instruction of the final stage."""
    found = [args for kind, args in instructions() if kind == name]
    assert found, f"deploy/Dockerfile has no {name}"
    return found[-1]


def serve_defaults(*argv: str, env: dict[str, str] | None = None) -> argparse.Namespace:
    """What ``solrace serve`` makes of ``argv`` (with ``env`` set)."""
    parser = argparse.ArgumentParser()
    with pytest.MonkeyPatch.context() as patch:
        for key, value in (env or {}).items():
            patch.setenv(key, value)
        server_cli.register(parser.add_subparsers())
        return parser.parse_args(["serve", *argv])


def test_the_image_runs_as_a_non_root_user_on_the_port_it_exposes() -> None:
    user = instruction("USER").split(":")[0]
    assert user.isdigit() and int(user) != 0, "a numeric, non-root user (runAsNonRoot checks it)"
    command = json.loads(instruction("CMD"))
    assert command[:2] == ["solrace", "serve"]
    args = serve_defaults(*command[2:])
    assert args.host == "0.0.0.0", "listen on every interface of the container"
    assert instruction("EXPOSE") == str(args.port)
    assert f"127.0.0.1:{args.port}/healthz" in instruction("HEALTHCHECK")


async def test_the_image_health_check_passes_against_a_node(server: RunningServer) -> None:
    healthcheck = instruction("HEALTHCHECK")
    command = json.loads(healthcheck.split(" CMD ", 1)[1])
    assert command[:2] == ["python", "-c"]
    code = command[2].replace(":8765/", f":{server.server.port}/")
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", code)
    assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0

    # And it fails when nothing answers, as a health check must.
    dead = command[2].replace(":8765/", f":{free_port()}/")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", dead, stderr=asyncio.subprocess.DEVNULL
    )
    assert await asyncio.wait_for(process.wait(), TIMEOUT) != 0


def test_the_build_context_holds_what_the_dockerfile_copies() -> None:
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    text = (DEPLOY / "Dockerfile").read_text()
    copied = re.findall(r"^COPY (?!--from)(.+?) \S+$", text, re.M)
    sources = {src.rstrip("/") for line in copied for src in line.split()}
    assert sources <= allowed, sources - allowed
    for source in sources:
        assert (ROOT / source).exists(), source


# -- Redis ---------------------------------------------------------------------------------


needs_redis = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="redis-server is not installed"
)


class RedisWithDeployConf:
    """``redis-server deploy/redis.conf`` as it is, on a free loopback port.

    Only the port and the address are set on the command line (the port of a Redis this
    machine may already run, and every interface, are not the test's to take), plus any
    ``extra`` arguments.
    """

    def __init__(self, cwd: Path, *extra: str) -> None:
        self.cwd = cwd
        self.extra = extra
        self.port = free_port()
        self.log = cwd.parent / f"redis-{self.port}.log"  # its output, kept out of ``cwd``
        self.process: subprocess.Popen[bytes] | None = None

    def client(self) -> redis.Redis:
        """A client with short timeouts."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2.0)

    def start(self) -> None:
        """Start it and wait for a PING; fail with its output if it exits."""
        self.cwd.mkdir(parents=True, exist_ok=True)
        command = ["redis-server", str(DEPLOY / "redis.conf"), "--port", str(self.port)]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*command, "--bind", "127.0.0.1", *self.extra],
                cwd=self.cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + TIMEOUT
        while True:
            if self.process.poll() is not None:
                output = self.log.read_text()
                raise AssertionError(f"redis-server refused deploy/redis.conf:\n{output}")
            try:
                with self.client() as c:
                    if c.ping():
                        return
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not answer"
                time.sleep(0.02)

    def stop(self) -> int:
        """Stop it (SIGTERM: Redis finishes its writes) and return its exit code."""
        process, self.process = self.process, None
        if process is None:
            return 0
        process.terminate()
        return process.wait(timeout=TIMEOUT)


@needs_redis
def test_redis_conf_starts_outside_a_container_and_keeps_acked_writes(tmp_path: Path) -> None:
    # Started as the docs say for a Redis of one's own: in the folder that is to hold it.
    here = tmp_path / "redis"
    server = RedisWithDeployConf(here)
    server.start()
    try:
        with server.client() as c:
            settings = {
                key: c.config_get(key)[key]
                for key in ("appendonly", "appendfsync", "maxmemory-policy", "save", "dir")
            }
            assert settings == {
                "appendonly": "yes",
                "appendfsync": "everysec",
                "maxmemory-policy": "noeviction",
                "save": "3600 1 300 100 60 10000",
                "dir": str(here),
            }
            c.xadd("solrace:{ROOM}:log:1:p", {"m": "d"}, id="0-1")
        assert server.stop() == 0
        # Without the snapshot, the append-only file alone brings the move back.
        (here / "dump.rdb").unlink(missing_ok=True)
        assert (here / "appendonlydir").is_dir()
        server.start()
        with server.client() as c:
            assert c.xlen("solrace:{ROOM}:log:1:p") == 1
    finally:
        server.stop()


@needs_redis
def test_redis_conf_keeps_its_files_where_the_command_line_says(tmp_path: Path) -> None:
    # compose.yaml's way: the data folder on the command line, whatever the working one.
    data = tmp_path / "data"
    data.mkdir()
    server = RedisWithDeployConf(tmp_path / "elsewhere", "--dir", str(data))
    server.start()
    try:
        with server.client() as c:
            assert c.config_get("dir")["dir"] == str(data)
            c.set("solrace:secret", b"k")
        assert server.stop() == 0
        assert (data / "appendonlydir").is_dir()
        assert not (tmp_path / "elsewhere" / "appendonlydir").exists()
    finally:
        server.stop()


# -- YAML: compose and Kubernetes ------------------------------------------------------------


def load_yaml(path: Path) -> list[Any]:
    """Every document of a YAML file (the test is skipped without PyYAML)."""
    yaml = pytest.importorskip("yaml")
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def nginx_nodes() -> list[str]:
    """The node host names in deploy/nginx.conf's upstream."""
    text = (DEPLOY / "nginx.conf").read_text()
    block = re.search(r"# nodes: begin\n(.*?)# nodes: end", text, re.S)
    assert block is not None
    return re.findall(r"^\s*server (\S+):8765\b", block.group(1), re.M)


def mounts(volumes: list[str]) -> dict[str, str]:
    """A compose service's ``source:target[:mode]`` volumes, as source -> target."""
    found = {}
    for volume in volumes:
        source, target, *_mode = volume.split(":")
        found[source] = target
    return found


def test_compose_runs_three_nodes_on_redis_with_aof_behind_nginx() -> None:
    (compose,) = load_yaml(DEPLOY / "compose.yaml")
    services = compose["services"]
    nodes = sorted(name for name in services if name.startswith("node"))
    assert nodes == ["node1", "node2", "node3"]
    assert nginx_nodes() == nodes, "nginx balances over exactly the compose nodes"
    for name in nodes:
        node = services[name]
        assert node["build"]["dockerfile"] == "deploy/Dockerfile"
        assert (DEPLOY / node["build"]["context"] / node["build"]["dockerfile"]).is_file()
        url = node["environment"]["SOLRACE_REDIS_URL"]
        assert url.startswith("redis://redis:"), url
        assert node["depends_on"]["redis"]["condition"] == "service_healthy"

    redis_service = services["redis"]
    volumes = mounts(redis_service["volumes"])
    # The AOF and snapshots live on a volume: the data folder is the volume's.
    assert redis_service["command"] == [
        "redis-server",
        volumes["./redis.conf"],
        "--dir",
        volumes["redis-data"],
    ]
    assert "redis-data" in compose["volumes"]
    assert re.search(r"^appendonly yes$", (DEPLOY / "redis.conf").read_text(), re.M)

    proxy = services["nginx"]
    volumes = mounts(proxy["volumes"])
    assert volumes["./nginx.conf"] == "/etc/nginx/conf.d/default.conf"
    web = volumes["../client/web"]
    assert f"root {web};" in (DEPLOY / "nginx.conf").read_text()
    assert (DEPLOY / "../client/web").resolve() == ROOT / "client" / "web"
    assert [p.split(":")[-1] for p in proxy["ports"]] == ["80"]
    assert not any("ports" in services[name] for name in [*nodes, "redis"])


def k8s() -> dict[str, dict[str, Any]]:
    """The Kubernetes objects of deploy/k8s, by kind."""
    objects: dict[str, dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in load_yaml(path):
            objects[doc["kind"]] = doc
    return objects


def test_kustomization_lists_every_manifest() -> None:
    (kustomization,) = load_yaml(K8S / "kustomization.yaml")
    manifests = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == manifests


def test_the_deployment_probes_drains_and_is_selected_by_service_and_budget() -> None:
    objects = k8s()
    deployment = objects["Deployment"]
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == labels
    for kind in ("Service", "PodDisruptionBudget"):
        spec = objects[kind]["spec"]
        selector = spec["selector"].get("matchLabels", spec["selector"])
        assert selector.items() <= labels.items(), kind
    (container,) = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}

    args = container["args"]
    assert container["command"] == ["solrace"] and args[0] == "serve"
    configmap = objects["ConfigMap"]["data"]
    for name in re.findall(r"\$\((\w+)\)", " ".join(args)):
        assert name in configmap, f"{name} is not in the ConfigMap"
    parsed = serve_defaults(
        *(re.sub(r"\$\((\w+)\)", lambda m: configmap[m.group(1)], a) for a in args[1:]),
        env=objects["Secret"]["stringData"],
    )
    assert parsed.port == ports["http"]
    assert parsed.host == "0.0.0.0"
    assert parsed.redis == objects["Secret"]["stringData"]["SOLRACE_REDIS_URL"]
    sources = {next(iter(ref.values()))["name"] for ref in container["envFrom"]}
    assert sources == {
        objects["ConfigMap"]["metadata"]["name"],
        objects["Secret"]["metadata"]["name"],
    }

    ready, live = container["readinessProbe"]["httpGet"], container["livenessProbe"]["httpGet"]
    assert (ready["path"], ports[ready["port"]]) == ("/readyz", parsed.port)
    assert (live["path"], ports[live["port"]]) == ("/healthz", parsed.port)

    sleep = container["lifecycle"]["preStop"]["exec"]["command"]
    assert sleep[0] == "sleep"
    assert 0 < int(sleep[1]) < pod["spec"]["terminationGracePeriodSeconds"]
    user = int(instruction("USER").split(":")[0])
    assert pod["spec"]["securityContext"]["runAsUser"] == user
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True

    rolling = deployment["spec"]["strategy"]["rollingUpdate"]
    assert rolling["maxUnavailable"] == 0
    assert objects["PodDisruptionBudget"]["spec"]["maxUnavailable"] == 1
    assert objects["Service"]["spec"]["ports"][0]["targetPort"] == "http"


async def test_the_probe_paths_answer_on_a_node(server: RunningServer) -> None:
    container = k8s()["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    for probe in ("readinessProbe", "livenessProbe"):
        path = container[probe]["httpGet"]["path"]
        reader, writer = await asyncio.open_connection("127.0.0.1", server.server.port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: pod\r\n\r\n".encode())
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), TIMEOUT)
        writer.close()
        assert status.split()[1] == b"200", (probe, status)
