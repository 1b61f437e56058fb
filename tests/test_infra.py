"""The launcher of the local services (simplemem/infra/), tested for what it promises: `up` is idempotent and waits
for readiness, `down` stops only what `up` started, a stale pid file is not a running service, a taken
port or a server that dies is a clear error, and each real service runs as the launcher configured it.

The launcher's logic is tested on a stand-in service (a few lines of Python serving a port) registered
beside the real four, so it runs everywhere in seconds. The integration tests need the real services up
(`simplemem infra up`); a service that does not answer skips them, unless SIMPLEMEM_INTEGRATION=1:
then it fails them.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from simplemem.infra import process, stack
from simplemem.infra.daemon import Launch, Service
from simplemem.infra.errors import InfraError
from simplemem.infra.kafka_service import kafka_metadata
from simplemem.infra.settings import InfraSettings
from simplemem.schemas.settings import LOCAL_HOST as HOST
from simplemem.schemas.settings import REPO_ROOT
from simplemem.schemas.settings import Settings as ProductSettings

REQUIRED = os.environ.get("SIMPLEMEM_INTEGRATION") == "1"

# accepts and closes connections on the port given as argv[1]: "ready" for the stand-in's probe
SERVE = (
    "import socket, sys\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
    "while True: s.accept()[0].close()\n"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def stand_in(port: int, argv: list[str] | None = None) -> type[Service]:
    """A service class whose server is `argv` (default: SERVE on `port`); it counts its launches."""

    class StandIn(Service):
        name = "standin"
        launches = 0

        @property
        def endpoint(self) -> str:
            return f"{HOST}:{port}"

        @property
        def ports(self) -> list[int]:
            return [port]

        def install(self) -> None:
            pass

        def prepare(self) -> Launch:
            type(self).launches += 1
            return Launch(argv or [sys.executable, "-c", SERVE, str(port)], self.root)

        def probe(self, timeout: float) -> bool:
            try:
                socket.create_connection((HOST, port), timeout=timeout).close()
            except OSError:
                return False
            return True

    return StandIn


@pytest.fixture
def settings(tmp_path: Path) -> InfraSettings:
    return InfraSettings(infra_dir=tmp_path / "infra", infra_stop_grace=2.0, infra_ready_timeout=20.0)


@pytest.fixture
def register(monkeypatch: pytest.MonkeyPatch, settings: InfraSettings) -> Iterator[None]:
    """Stops the stand-in after the test, while `use` still has it registered (monkeypatch is set up
    before this fixture, so it is undone after it)."""
    yield
    if "standin" in stack.SERVICE_CLASSES:
        stack.down(["standin"], settings)


def use(monkeypatch: pytest.MonkeyPatch, cls: type[Service]) -> type[Service]:
    monkeypatch.setitem(stack.SERVICE_CLASSES, "standin", cls)
    return cls


@pytest.fixture
def foreign(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes the test starts itself, as another program would: never `up`'s to stop."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait()


def serve_foreign(port: int, procs: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(port)])
    procs.append(proc)
    deadline = time.monotonic() + 10
    while not process_listens(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def process_listens(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex((HOST, port)) == 0


# --------------------------------------------------------------------------------------------------
# the launcher's logic, on a stand-in service
# --------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("register")
def test_up_twice_starts_nothing_new(monkeypatch: pytest.MonkeyPatch, settings: InfraSettings) -> None:
    cls = use(monkeypatch, stand_in(free_port()))
    [first] = stack.up(["standin"], settings)
    assert first.state == "running" and first.pid is not None
    assert json.loads(cls(settings).pid_file.read_text())["pid"] == first.pid
    [again] = stack.up(["standin"], settings)
    assert (again.state, again.pid) == ("running", first.pid)
    assert cls.launches == 1  # type: ignore[attr-defined]
    [stopped] = stack.down(["standin"], settings)
    assert (stopped.state, stopped.pid) == ("stopped", None)
    assert not process.is_alive(first.pid)
    assert not cls(settings).pid_file.exists()


@pytest.mark.usefixtures("register")
def test_down_leaves_alone_what_up_did_not_start(
    monkeypatch: pytest.MonkeyPatch, settings: InfraSettings, foreign: list[subprocess.Popen[bytes]]
) -> None:
    port = free_port()
    cls = use(monkeypatch, stand_in(port))
    other = serve_foreign(port, foreign)  # the same server on the same port, started by someone else
    svc = cls(settings)
    svc.root.mkdir(parents=True)
    # ...even with a pid file naming it, when the process is not the one the file recorded (reused pid)
    svc.pid_file.write_text(json.dumps({"pid": other.pid, "created": time.time() - 3600}))
    [row] = stack.status(["standin"], settings)
    assert (row.state, row.pid) == ("stopped", None)
    stack.down(["standin"], settings)
    assert other.poll() is None, "down signalled a process that up did not start"
    assert process_listens(port)


@pytest.mark.usefixtures("register")
def test_stale_pid_file_is_not_a_running_service(
    monkeypatch: pytest.MonkeyPatch, settings: InfraSettings, foreign: list[subprocess.Popen[bytes]]
) -> None:
    cls = use(monkeypatch, stand_in(free_port()))
    svc = cls(settings)
    svc.root.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    bystander = subprocess.Popen(["sleep", "300"])
    foreign.append(bystander)
    for record in (
        {"pid": dead.pid, "created": time.time()},  # a pid that is gone
        {"pid": bystander.pid, "created": time.time() - 3600},  # a live pid of another process
        {"pid": bystander.pid, "start": 1},  # the same, in the pid file of the launcher before psutil
    ):
        svc.pid_file.write_text(json.dumps(record))
        assert svc.running_pid() is None, record
        [row] = stack.status(["standin"], settings)
        assert (row.state, row.pid) == ("stopped", None)
    [row] = stack.up(["standin"], settings)  # starts a server of its own instead
    assert row.state == "running" and row.pid not in (dead.pid, bystander.pid)
    assert cls.launches == 1  # type: ignore[attr-defined]
    assert bystander.poll() is None


def test_pid_file_of_the_launcher_before_psutil_still_counts(settings: InfraSettings) -> None:
    """Services started by the previous launcher (clock ticks in `start`) stay `down`-able."""
    svc = stand_in(free_port())(settings)
    svc.root.mkdir(parents=True)
    ticks = int(Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19])
    svc.pid_file.write_text(json.dumps({"pid": os.getpid(), "start": ticks}))
    assert svc.running_pid() == os.getpid()


def test_a_service_stays_ours_when_the_wall_clock_steps(settings: InfraSettings) -> None:
    """A VM resumed or an NTP step moves every creation time psutil derives from the boot time: the
    pid file's start in clock ticks still names the process (a test run once lost every service so)."""
    svc = stand_in(free_port())(settings)
    svc.root.mkdir(parents=True)
    svc.write_pid(os.getpid())
    record = json.loads(svc.pid_file.read_text())
    svc.pid_file.write_text(json.dumps({**record, "created": record["created"] + 3600}))
    assert svc.running_pid() == os.getpid()
    svc.pid_file.write_text(json.dumps({**record, "start": record["start"] + 1}))
    assert svc.running_pid() is None


@pytest.mark.usefixtures("register")
def test_a_taken_port_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, settings: InfraSettings, foreign: list[subprocess.Popen[bytes]]
) -> None:
    port = free_port()
    cls = use(monkeypatch, stand_in(port))
    serve_foreign(port, foreign)
    with pytest.raises(InfraError) as caught:
        stack.up(["standin"], settings)
    message = str(caught.value)
    assert "standin" in message and str(port) in message and "already in use" in message
    assert cls.launches == 0  # type: ignore[attr-defined]
    assert not cls(settings).pid_file.exists()


@pytest.mark.usefixtures("register")
def test_a_server_that_dies_while_starting_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, settings: InfraSettings
) -> None:
    argv = [sys.executable, "-c", "import sys; print('cannot start: no disk'); sys.exit(3)"]
    cls = use(monkeypatch, stand_in(free_port(), argv))
    began = time.monotonic()
    with pytest.raises(InfraError) as caught:
        stack.up(["standin"], settings)
    assert time.monotonic() - began < 10, "a dead server is noticed, not waited for until the timeout"
    message = str(caught.value)
    assert "standin: exited while starting" in message
    assert "cannot start: no disk" in message  # the log's tail is quoted
    assert not cls(settings).pid_file.exists()


@pytest.mark.usefixtures("register")
def test_not_ready_in_time_is_stopped_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = InfraSettings(infra_dir=tmp_path / "infra", infra_stop_grace=2.0, infra_ready_timeout=1.0)
    cls = use(monkeypatch, stand_in(free_port(), ["sleep", "300"]))  # runs, never serves
    with pytest.raises(InfraError, match=r"standin: not ready after 1 s \(stopped it again\)"):
        stack.up(["standin"], settings)
    [row] = stack.status(["standin"], settings)
    assert row.state == "stopped"
    assert not cls(settings).pid_file.exists()


def test_unhealthy_then_down_stops_the_whole_group(settings: InfraSettings) -> None:
    """A recorded live process that does not answer is `unhealthy`; `down` SIGKILLs what SIGTERM left."""
    svc = stand_in(free_port())(settings)
    svc.root.mkdir(parents=True)
    # the leader dies on SIGTERM and leaves a child behind, which only the group's SIGKILL reaches
    pid = svc.spawn(Launch(["bash", "-c", "sleep 300 & wait"], settings.infra_dir))
    try:
        assert svc.running_pid() == pid
        assert (svc.status().state, svc.status().pid) == ("unhealthy", pid)
        deadline = time.monotonic() + 5
        while len(process.group_members(pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(process.group_members(pid)) == 2
        assert svc.stop() == pid
        assert process.group_members(pid) == []
        assert not svc.pid_file.exists()
        assert svc.status().state == "stopped"
    finally:
        process.terminate_group(pid, 0)


def test_status_json_from_the_command_line(tmp_path: Path) -> None:
    """`simplemem infra status --json`, from a directory that is not the repo, on the ports of the env."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMPLEMEM_")}
    env["SIMPLEMEM_INFRA_DIR"] = str(tmp_path / "infra")
    for key in ("KAFKA", "KAFKA_CONTROLLER", "OPENSEARCH", "OPENSEARCH_TRANSPORT", "MILVUS", "REDIS"):
        env[f"SIMPLEMEM_{key}_PORT"] = str(free_port())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run(
        [str(REPO_ROOT / "bin" / "simplemem"), "infra", "status", "--json"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    rows = json.loads(out.stdout)
    assert [r["name"] for r in rows] == list(stack.SERVICE_NAMES)
    for row in rows:
        assert set(row) == {"name", "endpoint", "pid", "state"}
        assert (row["state"], row["pid"]) == ("stopped", None)
    ports = {r["name"]: r["endpoint"].rsplit(":", 1)[1].split("/")[0] for r in rows}
    assert ports["redis"] == env["SIMPLEMEM_REDIS_PORT"]
    assert ports["kafka"] == env["SIMPLEMEM_KAFKA_PORT"]
    assert list(elsewhere.iterdir()) == [], "status wrote into the directory it was run from"


def test_the_products_service_urls_default_to_the_local_services(monkeypatch: pytest.MonkeyPatch) -> None:
    """The product's settings hold no local port: its service URLs default to where `simplemem infra`
    starts the services on their default ports."""
    for name in ("OPENSEARCH_URL", "MILVUS_URI", "REDIS_URL", "KAFKA_BOOTSTRAP"):
        monkeypatch.delenv(f"SIMPLEMEM_{name}", raising=False)
    for name in ("KAFKA", "OPENSEARCH", "MILVUS", "REDIS"):
        monkeypatch.delenv(f"SIMPLEMEM_{name}_PORT", raising=False)
    product = ProductSettings()
    services = {svc.name: svc.endpoint for svc in stack.select(None, InfraSettings())}
    assert services == {
        "kafka": product.kafka_endpoint,
        "opensearch": product.opensearch_endpoint,
        "milvus": product.milvus_server_uri,
        "redis": product.redis_endpoint,
    }
    infra_only = set(InfraSettings.model_fields)
    assert infra_only and not infra_only & set(ProductSettings.model_fields)


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SIMPLEMEM_REDIS_PORT", "16379")
    monkeypatch.setenv("SIMPLEMEM_INFRA_DIR", str(tmp_path))
    monkeypatch.setenv("SIMPLEMEM_INFRA_READY_TIMEOUT", "7")
    monkeypatch.delenv("SIMPLEMEM_KAFKA_PORT", raising=False)
    settings = InfraSettings()
    assert settings.redis_port == 16379
    assert settings.kafka_port == 9092
    assert settings.infra_ready_timeout == 7
    assert stack.Redis(settings).pid_file == tmp_path.resolve() / "redis" / "redis.pid"


def test_kafka_metadata_gives_up_in_time() -> None:
    """The readiness request is bounded: a port that accepts and never answers does not hang `status`."""
    with socket.socket() as silent:
        silent.bind((HOST, 0))
        silent.listen()
        began = time.monotonic()
        with pytest.raises((TimeoutError, OSError)):
            kafka_metadata(silent.getsockname()[1], timeout=1.0)
        assert time.monotonic() - began < 5


# --------------------------------------------------------------------------------------------------
# integration: the real services, as the launcher started them
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real() -> InfraSettings:
    return InfraSettings()


def require(name: str, settings: InfraSettings) -> Service:
    """The running service, else skip (or, with SIMPLEMEM_INTEGRATION=1, fail)."""
    svc = stack.SERVICE_CLASSES[name](settings)
    if svc.running_pid() is not None and svc.probe(timeout=5.0):
        return svc
    message = f"{name} is not running at {svc.endpoint} (start it: simplemem infra up {name})"
    if REQUIRED:
        pytest.fail(message)
    pytest.skip(message)


@pytest.mark.integration
def test_status_reports_running_services(real: InfraSettings) -> None:
    """With SIMPLEMEM_INTEGRATION=1 every service must be up *and* recorded by `up` (its pid file)."""
    if not REQUIRED:
        pytest.skip("only with SIMPLEMEM_INTEGRATION=1")
    rows = stack.status(None, real)
    assert {r.name: r.state for r in rows} == dict.fromkeys(stack.SERVICE_NAMES, "running")
    assert all(r.pid is not None for r in rows)


@pytest.mark.integration
def test_up_on_running_services_is_a_no_op(real: InfraSettings) -> None:
    pids = {name: require(name, real).running_pid() for name in stack.SERVICE_NAMES}
    began = time.monotonic()
    rows = stack.up(None, real)
    assert time.monotonic() - began < 30
    assert {r.name: r.pid for r in rows} == pids
    assert {r.state for r in rows} == {"running"}


@pytest.mark.integration
def test_another_infra_dir_neither_stops_nor_doubles_the_services(
    real: InfraSettings, tmp_path: Path
) -> None:
    """Same ports, other state folder: `down` there leaves them alone, `up` there refuses the ports."""
    svcs = [require(name, real) for name in ("kafka", "redis")]
    pids = [svc.running_pid() for svc in svcs]
    other = real.model_copy(update={"infra_dir": tmp_path / "other"})
    (tmp_path / "other" / "kafka").mkdir(parents=True)
    (tmp_path / "other" / "redis").mkdir(parents=True)
    stack.down(["kafka", "redis"], other)
    assert all(svc.probe(timeout=5.0) for svc in svcs)
    with pytest.raises(InfraError, match="already in use by a process that `up` did not start"):
        stack.up(["kafka", "redis"], other)
    assert [svc.running_pid() for svc in svcs] == pids
    assert all(svc.probe(timeout=5.0) for svc in svcs)


@pytest.mark.integration
def test_kafka_broker_as_configured(real: InfraSettings) -> None:
    """One broker that is its own controller, and no topic created by a client that merely uses it."""
    require("kafka", real)
    brokers, cluster_id, controller = kafka_metadata(real.kafka_port, timeout=10)
    assert brokers == [(1, HOST, real.kafka_port)]
    assert controller == 1 and cluster_id
    from aiokafka import AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaError

    topic = f"simplemem-never-declared-{uuid.uuid4().hex[:8]}"
    bootstrap = f"{HOST}:{real.kafka_port}"

    async def publish_then_list() -> list[str]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=3000)
        await producer.start()
        try:
            with pytest.raises(KafkaError):  # UnknownTopicOrPartitionError
                await producer.send_and_wait(topic, b"too early")
        finally:
            await producer.stop()
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return list(await admin.list_topics())
        finally:
            await admin.close()

    assert topic not in asyncio.run(publish_then_list())


@pytest.mark.integration
def test_opensearch_node_as_configured(real: InfraSettings) -> None:
    """One node of cluster `simplemem`, its data in the service folder, HTTP on loopback only."""
    import httpx

    svc = require("opensearch", real)
    url = f"{svc.endpoint}/_nodes/_local/http,settings"
    node = httpx.get(url, trust_env=False, timeout=10).json()
    [info] = node["nodes"].values()
    assert node["cluster_name"] == "simplemem"
    assert info["settings"]["discovery"]["type"] == "single-node"
    assert info["settings"]["path"]["data"] == [str(svc.data_dir)]
    assert info["settings"]["network"]["host"] == HOST
    assert info["http"]["publish_address"] == f"{HOST}:{real.opensearch_port}"


@pytest.mark.integration
def test_milvus_server_is_in_the_launchers_process_group(real: InfraSettings) -> None:
    """`down` signals the launcher's group: the C++ server must be in it, or it would outlive `down`."""
    import psutil

    svc = require("milvus", real)
    pid = svc.running_pid()
    assert pid is not None
    names = {psutil.Process(p).name() for p in process.group_members(pid)}
    assert "milvus" in names, names


@pytest.mark.integration
def test_milvus_collects_what_a_run_drops_while_it_runs(real: InfraSettings) -> None:
    """The server runs minutes at a time: with Milvus's defaults (a pass an hour, a dropped collection's
    files kept 3 h) the files of every collection a test or bench dropped stayed on disk."""
    import yaml

    svc = require("milvus", real)
    config = yaml.safe_load((svc.data_dir / "configs" / "milvus.yaml").read_text())
    gc = config["dataCoord"]["gc"]
    assert gc["interval"] <= 120 and gc["dropTolerance"] <= 120, gc


def _tree(root: Path, *parts: str, age: float, file: bool = False) -> Path:
    """A folder ``root/parts`` (with a file in it if ``file``), each folder of it last changed ``age``
    seconds ago."""
    folder = root.joinpath(*parts)
    folder.mkdir(parents=True, exist_ok=True)
    if file:
        (folder / "HNSW").write_bytes(b"index")
    then = time.time() - age
    for i in range(len(parts), 0, -1):
        os.utime(root.joinpath(*parts[:i]), (then, then))
    return folder


def test_milvus_storage_loses_its_empty_trees_not_its_files(tmp_path: Path) -> None:
    """Milvus's collector deletes files on local storage but not their folders, and lists every
    leftover folder again at each pass: the runner removes the empty trees (before the server starts:
    every one; the age bound keeps a folder just made for a file)."""
    from simplemem.infra.milvus.server import prune_empty_trees

    old, fresh = 3600.0, 1.0
    _tree(tmp_path, "index_files", "41", "1", "7", "9", age=old)  # a dropped build: four levels
    kept = _tree(tmp_path, "index_files", "42", "1", "7", "9", age=old, file=True)
    just_made = _tree(tmp_path, "insert_log", "5", "6", "7", age=fresh)  # about to get its file
    _tree(tmp_path, "stats_log", "5", "6", "new", age=fresh)
    half = _tree(tmp_path, "stats_log", "5", "6", age=old)  # old, but with a fresh folder in it
    _tree(tmp_path, "delta_log", "5", age=old)
    queue = _tree(tmp_path, "rocksmq", "empty", age=old)  # not an object folder: never touched

    assert prune_empty_trees(tmp_path, min_age=300.0) == 5
    assert not (tmp_path / "index_files" / "41").exists() and kept.is_dir()
    assert just_made.is_dir() and (half / "new").is_dir() and queue.is_dir()
    assert not (tmp_path / "delta_log" / "5").exists() and (tmp_path / "delta_log").is_dir()
    assert prune_empty_trees(tmp_path, min_age=0.0) == 6  # at start: every empty tree
    assert kept.is_dir() and queue.is_dir() and not (tmp_path / "insert_log" / "5").exists()


@pytest.mark.integration
def test_redis_as_configured_and_restartable(real: InfraSettings) -> None:
    """No persistence, data in its folder; `down` then `up` gives a new process on the same port."""
    import redis

    svc = require("redis", real)
    client = redis.Redis(host=HOST, port=real.redis_port, socket_timeout=5)
    try:
        config = client.config_get("*")
        assert (config["save"], config["appendonly"], config["bind"]) == ("", "no", HOST)
        assert config["dir"] == str(svc.data_dir)
    finally:
        client.close()
    before = svc.running_pid()
    [row] = stack.down(["redis"], real)
    assert (row.state, row.pid) == ("stopped", None)
    assert not process_listens(real.redis_port)
    [row] = stack.up(["redis"], real)
    assert row.state == "running" and row.pid not in (None, before)


@pytest.mark.integration
def test_up_says_what_it_does_as_a_user_runs_it(real: InfraSettings, tmp_path: Path) -> None:
    """`simplemem infra up` from another directory reports each service's step on stderr (a first `up`
    installs for minutes and must not look hung); `--json` keeps stdout machine-readable and quiet."""
    require("redis", real)
    cli = [str(REPO_ROOT / "bin" / "simplemem"), "infra", "up", "redis"]
    shown = subprocess.run(cli, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True)
    assert "redis: already running" in " ".join(shown.stderr.split())
    quiet = subprocess.run(
        [*cli, "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True
    )
    assert quiet.stderr == "" and json.loads(quiet.stdout)[0]["state"] == "running"


@pytest.mark.parametrize(("status", "body", "healthy"), [(200, b"OK", True), (500, b"not ready", False)])
def test_milvus_counts_as_up_only_when_its_own_health_check_says_ok(
    tmp_path: Path, status: int, body: bytes, healthy: bool
) -> None:
    """Its coordinator answers before its query node joins; a load in between fails."""
    import http.server
    import threading

    from simplemem.infra.milvus_service import Milvus

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status if self.path == "/healthz" else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer((HOST, 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings = InfraSettings(infra_dir=tmp_path / "infra", milvus_metrics_port=server.server_address[1])
        assert Milvus(settings)._healthy(timeout=2) is healthy
    finally:
        server.shutdown()
