"""The files in deploy/ agree with each other and with the server they run.

No container engine runs here: the Dockerfile's health check runs against a real node,
deploy/redis.conf runs in a real redis-server, and the YAML files are read and checked
against one another (where PyYAML is installed).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from conftest import PLAIN_DEALS, TIMEOUT, RunningServer, ServerFactory
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis_server import free_port

from solrace.server import Node, ServerConfig, SolraceServer, make_backend
from solrace.server import cli as server_cli

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
#: How compose.yaml names Redis' password: from deploy/.env, or compose refuses to start.
PASSWORD_VARIABLE = "${SOLRACE_REDIS_PASSWORD:?run deploy/make-secrets.sh first}"


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
        return redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=2.0, retry=Retry(NoBackoff(), 0)
        )

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
            except redis.AuthenticationError:  # up, and it wants a password first
                raise AssertionError("redis-server answers only with a password") from None
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
        assert url.startswith(f"redis://:{PASSWORD_VARIABLE}@redis:"), url
        assert node["depends_on"]["redis"]["condition"] == "service_healthy"

    redis_service = services["redis"]
    volumes = mounts(redis_service["volumes"])
    # The AOF and snapshots live on a volume: the data folder is the volume's; the
    # password comes from deploy/.env, which deploy/make-secrets.sh writes.
    assert redis_service["command"] == [
        "redis-server",
        volumes["./redis.conf"],
        "--dir",
        volumes["redis-data"],
        "--requirepass",
        PASSWORD_VARIABLE,
    ]
    assert redis_service["environment"] == {"REDISCLI_AUTH": PASSWORD_VARIABLE}
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
    url = "rediss://:made-at-install@redis.internal:6380/0"
    parsed = serve_defaults(
        *(re.sub(r"\$\((\w+)\)", lambda m: configmap[m.group(1)], a) for a in args[1:]),
        env={"SOLRACE_REDIS_URL": url},
    )
    assert parsed.port == ports["http"]
    assert parsed.host == "0.0.0.0"
    assert parsed.redis == url
    assert parsed.trusted_proxy == [configmap["SOLRACE_TRUSTED_PROXY"]]
    (generated,) = load_yaml(K8S / "kustomization.yaml")[0]["secretGenerator"]
    sources = {next(iter(ref.values()))["name"] for ref in container["envFrom"]}
    assert sources == {objects["ConfigMap"]["metadata"]["name"], generated["name"]}
    assert "Secret" not in objects, "the Secret is made at install, not shipped"

    # /metrics on a port of its own, never the one the Service's clients and the Ingress use.
    assert (parsed.metrics_host, parsed.metrics_port) == ("0.0.0.0", ports["metrics"])
    assert parsed.metrics_port != parsed.port and parsed.metrics_token is None
    annotations = pod["metadata"]["annotations"]
    assert int(annotations["prometheus.io/port"]) == parsed.metrics_port
    assert annotations["prometheus.io/path"] == "/metrics"
    service_ports = {p["name"]: p["targetPort"] for p in objects["Service"]["spec"]["ports"]}
    assert service_ports == {"http": "http", "metrics": "metrics"}
    for rule in objects["Ingress"]["spec"]["rules"]:
        for path in rule["http"]["paths"]:
            assert path["backend"]["service"]["port"] == {"name": "http"}

    ready, live = container["readinessProbe"]["httpGet"], container["livenessProbe"]["httpGet"]
    assert (ready["path"], ports[ready["port"]]) == ("/readyz", parsed.port)
    # Liveness on the metrics listener: a node full of connections refuses every one on
    # its main port before reading it, and is alive all the same.
    assert (live["path"], ports[live["port"]]) == ("/healthz", parsed.metrics_port)

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


async def test_the_probe_paths_answer_on_a_node(start_server: ServerFactory) -> None:
    node = await start_server(metrics_port=0, metrics_host="127.0.0.1")
    port_of = {"http": node.server.port, "metrics": node.server.http.metrics_port}
    container = k8s()["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    for probe in ("readinessProbe", "livenessProbe"):
        path = container[probe]["httpGet"]["path"]
        port = port_of[container[probe]["httpGet"]["port"]]
        assert port is not None
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: pod\r\n\r\n".encode())
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), TIMEOUT)
        writer.close()
        assert status.split()[1] == b"200", (probe, status)


# -- secrets: made at install, never shipped ---------------------------------------------------

MAKE_SECRETS = DEPLOY / "make-secrets.sh"
needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is missing")


def shipped_files() -> list[Path]:
    """The files of deploy/ that the repository holds (or would, once added): not ignored."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "deploy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


# A value standing for a secret, not a secret: a variable, or a placeholder in capitals.
PLACEHOLDER = re.compile(r'"?(\$\{\w+(:\?[^}]*)?\}|\$\(\w+\)|\$\w+|[A-Z_]+|\.\.\.)"?')


def test_no_secret_value_is_shipped_under_deploy() -> None:
    files = shipped_files()
    assert DEPLOY / "make-secrets.sh" in files and DEPLOY / "compose.yaml" in files
    for path in files:
        text = path.read_text()
        name = path.relative_to(ROOT)
        assert "change-me" not in text.lower(), name
        # The password of every Redis URL is a variable or a placeholder.
        for match in re.finditer(r"rediss?(?:\+cluster)?://([^@\s'\"]*)@", text):
            password = match.group(1).partition(":")[2]
            assert PLACEHOLDER.fullmatch(password), f"{name}: a password in {match.group(0)}"
        # So is every requirepass given on a line.
        for match in re.finditer(r"(?:^|[\s`])-{0,2}requirepass[ \t]+([^\s`,]+)", text, re.M):
            assert PLACEHOLDER.fullmatch(match.group(1)), f"{name}: requirepass {match.group(1)}"
        # And nothing that looks made by `openssl rand`.
        assert not re.search(r"\b[0-9a-fA-F]{32,}\b", text), name
    assert not re.search(r"^\s*requirepass\s", (DEPLOY / "redis.conf").read_text(), re.M)


def test_redis_conf_keeps_protected_mode_on() -> None:
    text = (DEPLOY / "redis.conf").read_text()
    assert re.findall(r"^protected-mode (\S+)$", text, re.M) == ["yes"]


def test_the_generated_files_are_ignored_by_git() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for path in ("deploy/.env", "deploy/k8s/secrets/solrace-redis.env"):
        checked = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, check=False)
        assert checked.returncode == 0, f"{path} is not ignored"


def make_secrets(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run deploy/make-secrets.sh with ``env`` added to this environment."""
    return subprocess.run(
        ["sh", str(MAKE_SECRETS), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def compose_value(value: str, password: str) -> str:
    """``value`` of compose.yaml as compose fills it in from deploy/.env."""
    return value.replace(PASSWORD_VARIABLE, password)


@needs_openssl
@needs_redis
async def test_compose_redis_wants_the_password_the_nodes_are_given(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    made = make_secrets(SOLRACE_ENV_FILE=str(env_file))
    assert made.returncode == 0, made.stderr
    assert env_file.stat().st_mode & 0o777 == 0o600
    (line,) = env_file.read_text().splitlines()
    name, _, password = line.partition("=")
    assert name == "SOLRACE_REDIS_PASSWORD" and re.fullmatch(r"[0-9a-f]{64}", password)
    assert make_secrets(SOLRACE_ENV_FILE=str(env_file)).returncode == 0
    assert env_file.read_text() == f"{line}\n", "a second run keeps the password"

    (compose,) = load_yaml(DEPLOY / "compose.yaml")
    services = compose["services"]
    command = [compose_value(arg, password) for arg in services["redis"]["command"]]
    assert command[command.index("--requirepass") + 1] == password
    # Redis as compose starts it (its own port and address, a folder of the test's).
    extra = command[command.index("--requirepass") :]
    server = RedisWithDeployConf(tmp_path / "redis", *extra)
    with pytest.raises(AssertionError):
        server.start()  # no PING without the password: the helper says so, Redis is up
    try:
        with server.client() as anonymous, pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        url = compose_value(services["node1"]["environment"]["SOLRACE_REDIS_URL"], password)
        local = url.replace("@redis:6379/", f"@127.0.0.1:{server.port}/")
        with redis.Redis.from_url(local, socket_timeout=2.0) as c:
            assert c.ping()
            assert c.config_get("protected-mode") == {"protected-mode": "yes"}

        # The health check passes with the password compose gives redis-cli, not without.
        check = services["redis"]["healthcheck"]["test"]
        assert check[0] == "CMD-SHELL"
        script = check[1].replace("redis-cli", f"redis-cli -p {server.port}")
        auth = compose_value(services["redis"]["environment"]["REDISCLI_AUTH"], password)
        ok = subprocess.run(["sh", "-c", script], env={**os.environ, "REDISCLI_AUTH": auth})
        assert ok.returncode == 0
        env = {k: v for k, v in os.environ.items() if k != "REDISCLI_AUTH"}
        assert subprocess.run(["sh", "-c", script], env=env).returncode != 0

        # And a node started with the nodes' URL is ready on it.
        config = ServerConfig(port=0, redis_url=local, data_dir=tmp_path / "node", **PLAIN_DEALS)
        node = SolraceServer(Node(make_backend(config), config), config)
        await node.start()
        try:
            assert await node.node.backend.ready()
        finally:
            await node.close()
    finally:
        server.stop()


@needs_openssl
def test_make_secrets_for_kubernetes_renders_the_secret(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    k8s_dir = tmp_path / "k8s"
    shutil.copytree(K8S, k8s_dir, ignore=shutil.ignore_patterns("secrets"))
    secrets = k8s_dir / "secrets"
    refused = subprocess.run([kubectl, "kustomize", str(k8s_dir)], capture_output=True, check=False)
    assert refused.returncode != 0, "no Secret without deploy/make-secrets.sh"

    made = make_secrets("k8s", "rediss://redis.internal:6380/0", SOLRACE_K8S_SECRETS=str(secrets))
    assert made.returncode == 0, made.stderr
    password = (secrets / "redis-password").read_text().strip()
    assert re.fullmatch(r"[0-9a-f]{64}", password)
    for path in secrets.iterdir():
        assert path.stat().st_mode & 0o777 == 0o600, path
    rendered = subprocess.run(
        [kubectl, "kustomize", str(k8s_dir)], capture_output=True, text=True, check=True
    ).stdout
    yaml = pytest.importorskip("yaml")
    objects = {doc["kind"]: doc for doc in yaml.safe_load_all(rendered) if doc}
    secret = objects["Secret"]
    url = base64.b64decode(secret["data"]["SOLRACE_REDIS_URL"]).decode().strip()
    assert url == f"rediss://:{password}@redis.internal:6380/0"
    container = objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    names = {next(iter(ref.values()))["name"] for ref in container["envFrom"]}
    assert secret["metadata"]["name"] in names

    # A managed Redis's own password, percent-encoded where it must be.
    given = make_secrets(
        "k8s",
        "rediss+cluster://redis.internal:6380",
        SOLRACE_K8S_SECRETS=str(tmp_path / "managed"),
        REDIS_PASSWORD="a+b/c=",
    )
    assert given.returncode == 0, given.stderr
    line = (tmp_path / "managed" / "solrace-redis.env").read_text().strip()
    url = line.removeprefix("SOLRACE_REDIS_URL=")
    assert redis.connection.parse_url(url.replace("+cluster", ""))["password"] == "a+b/c="
    assert not (tmp_path / "managed" / "redis-password").exists()
    with_password = make_secrets(
        "k8s", "redis://:pw@redis:6379/0", SOLRACE_K8S_SECRETS=str(tmp_path)
    )
    assert with_password.returncode != 0 and "without a password" in with_password.stderr


# -- metrics: a port of their own ------------------------------------------------------------


def test_compose_nodes_serve_metrics_on_a_private_port_and_trust_nginx() -> None:
    (compose,) = load_yaml(DEPLOY / "compose.yaml")
    services = compose["services"]
    nginx_address = services["nginx"]["networks"]["default"]["ipv4_address"]
    (subnet,) = compose["networks"]["default"]["ipam"]["config"]
    assert ipaddress.ip_address(nginx_address) in ipaddress.ip_network(subnet["subnet"])
    for name in ("node1", "node2", "node3"):
        node = services[name]
        assert node["command"][:2] == ["solrace", "serve"]
        args = serve_defaults(*node["command"][2:])
        assert args.metrics_host == "0.0.0.0" and args.metrics_port not in (None, args.port)
        assert [str(p) for p in node["expose"]] == [str(args.metrics_port)]
        assert "ports" not in node
        assert args.trusted_proxy == [nginx_address]
        assert args.metrics_token is None
    lines = (DEPLOY / "nginx.conf").read_text().splitlines()
    directives = "\n".join(line.split("#", 1)[0] for line in lines)
    assert f":{args.metrics_port}" not in directives, "nginx reaches no metrics port"


def test_nginx_conf_never_proxies_metrics() -> None:
    text = (DEPLOY / "nginx.conf").read_text()
    blocks = re.findall(r"location\s+([^{]*?)\s*\{(.*?)\}", text, re.S)
    metrics = [(where, body) for where, body in blocks if "/metrics" in where]
    assert metrics, "a location for /metrics"
    for where, body in metrics:
        assert "proxy_pass" not in body and "return 404;" in body, where
    # A prefix location: /metrics/anything is refused as well.
    assert any(where.strip() == "/metrics" for where, _ in metrics)
