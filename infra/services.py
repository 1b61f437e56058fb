"""Starts, stops and reports the project's four real services on 127.0.0.1, with nothing but registries.

    python -m infra.services up [kafka opensearch milvus redis]
    python -m infra.services status [--json]
    python -m infra.services down

- Kafka 4 (KRaft, one node): the broker's jars from Maven Central (infra/kafka/pom.xml).
- OpenSearch 2.19: a node started in-process from Maven Central jars (infra/opensearch/).
- Milvus standalone: the C++ server shipped in the PyPI package ``milvus`` (infra/milvus/server.py).
- Redis: Debian's ``redis-server``.

Whatever is missing (Java, Maven, jars, the ``milvus`` package, ``redis-server``) is installed on first
use; jars and the Milvus venv are cached outside the repo (``InfraSettings.infra_cache_dir``). State lives
in ``<infra_dir>/<service>/``: ``data/``, ``logs/<service>.log`` (the process's stdout and stderr),
``<service>.pid``. ``up`` is idempotent and ``down`` stops only what ``up`` started (by pid file).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from infra.settings import HOST, REPO_ROOT, InfraSettings

log = logging.getLogger("infra.services")

State = Literal["running", "stopped", "unhealthy"]
SERVICE_NAMES: tuple[str, ...] = ("kafka", "opensearch", "milvus", "redis")

INFRA_SRC = REPO_ROOT / "infra"


class InfraError(RuntimeError):
    """A service could not be installed, started or stopped; the message names it and its log file."""


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    endpoint: str
    pid: int | None
    state: State

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Launch:
    """How to start a service's process (after its install and prepare steps)."""

    argv: list[str]
    cwd: Path
    env: dict[str, str] | None = None


# --------------------------------------------------------------------------------------------------
# processes: /proc identity, pid files, process groups
# --------------------------------------------------------------------------------------------------

# Popen objects of the processes this interpreter started, so that they are reaped (no zombies) when
# `down` runs in the same process as `up` (e.g. a test session).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, start time in clock ticks) of a process, or None when there is none."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[2]), int(fields[19])


def _alive(pid: int, start_ticks: int | None = None) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None and child.poll() is not None:
        _CHILDREN.pop(pid, None)
        return False
    stat = _proc_stat(pid)
    if stat is None or stat[0] in ("Z", "X"):
        return False
    return start_ticks is None or stat[2] == start_ticks


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _proc_stat(int(entry.name))
        if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def _wait_group_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        child = _CHILDREN.get(pgid)
        if child is not None and child.poll() is not None:
            _CHILDREN.pop(pgid, None)
        if not _group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def _terminate(pid: int, grace: float) -> None:
    """SIGTERM the service's leader process, then SIGKILL its whole process group after `grace` s.

    Every service is started with start_new_session=True, so its pid is also its process group id and
    the group holds exactly the processes the service started (Milvus's server binary, for one).
    """
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if _wait_group_gone(pid, grace):
        return
    log.warning("pid %d: still running %.0f s after SIGTERM, sending SIGKILL", pid, grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    if not _wait_group_gone(pid, 10.0):
        raise InfraError(f"process group {pid} survived SIGKILL: {_group_members(pid)}")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except FileNotFoundError:
        return "(no log file)"
    return "\n".join("    " + line[:300] for line in text)


def _port_open(port: int, timeout: float = 0.5) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        return sock.connect_ex((HOST, port)) == 0


# --------------------------------------------------------------------------------------------------
# installers
# --------------------------------------------------------------------------------------------------


def _run_logged(argv: Sequence[str], log_path: Path, what: str, env: dict[str, str] | None = None) -> None:
    """Runs a setup command with its output appended to `log_path`; raises InfraError when it fails."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        code = subprocess.call(
            list(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
    if code != 0:
        raise InfraError(f"{what} failed (exit code {code}); see {log_path}:\n{_tail(log_path)}")


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _apt_install(packages: Sequence[str], log_path: Path) -> None:
    """`apt-get install -y` (as root, or through `sudo -n`), running `apt-get update` first when needed."""
    if shutil.which("apt-get") is None:
        raise InfraError(f"{' '.join(packages)} missing and there is no apt-get to install it")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*sudo, "apt-get", "install", "-y", "--no-install-recommends", *packages]
    lists = Path("/var/lib/apt/lists")
    have_lists = lists.is_dir() and any(p.name.endswith("_Packages") for p in lists.iterdir())
    log.info("installing Debian packages %s (log: %s)", " ".join(packages), log_path)
    with _file_lock(Path("/tmp/simplemem-infra-apt.lock")):
        if not have_lists:
            _run_logged([*sudo, "apt-get", "update"], log_path, "apt-get update", env)
        try:
            _run_logged(install, log_path, f"apt-get install {' '.join(packages)}", env)
        except InfraError:
            if not have_lists:
                raise
            # the package lists may be stale (a version no longer served): refresh them once
            _run_logged([*sudo, "apt-get", "update"], log_path, "apt-get update", env)
            _run_logged(install, log_path, f"apt-get install {' '.join(packages)}", env)


def _ensure_java(log_path: Path, need_compiler: bool = False) -> str:
    """The `java` command (17+); installs Debian's OpenJDK 17 when it, or javac, is missing."""
    if shutil.which("java") is None or (need_compiler and shutil.which("javac") is None):
        _apt_install(["openjdk-17-jdk-headless"], log_path)
    java = shutil.which("java")
    if java is None:
        raise InfraError(f"java not found after installing it; see {log_path}")
    return java


def ensure_kcat(settings: InfraSettings | None = None) -> str:
    """The `kcat` command (a Kafka client that is not ours, for tests and operators); from Debian."""
    if shutil.which("kcat") is None:
        settings = settings or InfraSettings()
        log_path = settings.service_dir("kafka") / "kcat-install.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        _apt_install(["kcat"], log_path)
    kcat = shutil.which("kcat")
    if kcat is None:
        raise InfraError("kcat not found after installing it")
    return kcat


def _maven_libs(pom: Path, prefix: str, settings: InfraSettings, log_path: Path) -> Path:
    """The runtime jars of `pom` copied into a cache folder keyed by the pom's hash (downloads once)."""
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    cache = settings.infra_cache_dir.expanduser().resolve()
    libs = cache / f"{prefix}-libs-{digest}"
    if (libs / ".complete").exists():
        return libs
    _ensure_java(log_path)
    if shutil.which("mvn") is None:
        _apt_install(["maven"], log_path)
    with _file_lock(cache / f"{prefix}-libs.lock"):
        if (libs / ".complete").exists():
            return libs
        tmp = libs.with_name(f"{libs.name}.tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        log.info("%s: resolving jars from Maven Central into %s (log: %s)", prefix, libs, log_path)
        _run_logged(
            [
                "mvn",
                "-B",
                "-q",
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={tmp}",
            ],
            log_path,
            f"{prefix}: mvn dependency:copy-dependencies",
        )
        if not any(tmp.glob("*.jar")):
            raise InfraError(f"{prefix}: maven copied no jars into {tmp}; see {log_path}")
        (tmp / ".complete").write_text(f"{pom}\n")
        shutil.rmtree(libs, ignore_errors=True)
        tmp.rename(libs)
    return libs


def _uv(log_path: Path) -> list[str]:
    """The command that runs uv (installed with the system Python's pip, as infra/bootstrap.sh does)."""
    found = shutil.which("uv")
    if found:
        return [found]
    python = shutil.which("python3.11") or shutil.which("python3") or sys.executable
    _run_logged([python, "-m", "pip", "install", "--quiet", "uv"], log_path, "pip install uv")
    found = shutil.which("uv")
    return [found] if found else [python, "-m", "uv"]


# --------------------------------------------------------------------------------------------------
# services
# --------------------------------------------------------------------------------------------------


class Service(ABC):
    name: ClassVar[str]

    def __init__(self, settings: InfraSettings) -> None:
        self.settings = settings
        self.root = settings.service_dir(self.name)
        self.data_dir = self.root / "data"
        self.log_dir = self.root / "logs"
        self.log_file = self.log_dir / f"{self.name}.log"
        self.install_log = self.log_dir / "install.log"
        self.pid_file = self.root / f"{self.name}.pid"

    # --- what each service defines ---------------------------------------------------------------
    @property
    @abstractmethod
    def endpoint(self) -> str: ...

    @property
    @abstractmethod
    def ports(self) -> list[int]:
        """Ports the service binds on 127.0.0.1; they must be free before it starts."""

    @abstractmethod
    def install(self) -> None:
        """Installs or downloads whatever is missing (idempotent, fast when done)."""

    @abstractmethod
    def prepare(self) -> Launch:
        """Writes config files, formats storage; returns the command that runs the service."""

    @abstractmethod
    def probe(self, timeout: float) -> bool:
        """One real readiness request against the service."""

    # --- pid file --------------------------------------------------------------------------------
    def recorded(self) -> tuple[int, int | None] | None:
        try:
            data = json.loads(self.pid_file.read_text())
            return int(data["pid"]), (int(data["start"]) if data.get("start") is not None else None)
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def running_pid(self) -> int | None:
        """The pid `up` recorded, if that very process is still alive (guards against pid reuse)."""
        rec = self.recorded()
        if rec is None:
            return None
        pid, start = rec
        return pid if _alive(pid, start) else None

    def write_pid(self, pid: int) -> None:
        stat = _proc_stat(pid)
        record = {
            "pid": pid,
            "start": stat[2] if stat else None,
            "service": self.name,
            "log": str(self.log_file),
        }
        tmp = self.pid_file.with_suffix(".pid.tmp")
        tmp.write_text(json.dumps(record) + "\n")
        tmp.replace(self.pid_file)

    def lock(self) -> contextlib.AbstractContextManager[None]:
        return _file_lock(self.root / ".lock")

    def check_ports_free(self) -> None:
        busy = [port for port in self.ports if _port_open(port)]
        if busy:
            raise InfraError(
                f"{self.name}: port(s) {busy} on {HOST} are already in use by a process that `up` did not "
                f"start; stop it or choose other ports (SIMPLEMEM_*_PORT)"
            )

    def spawn(self, launch: Launch) -> int:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.log_file.exists() and self.log_file.stat().st_size > 0:
            self.log_file.replace(self.log_file.with_suffix(".log.1"))
        with self.log_file.open("ab") as out:
            out.write(f"# {time.strftime('%Y-%m-%dT%H:%M:%S')} $ {' '.join(launch.argv)}\n".encode())
            out.flush()
            proc = subprocess.Popen(
                launch.argv,
                cwd=launch.cwd,
                env=launch.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _CHILDREN[proc.pid] = proc
        self.write_pid(proc.pid)
        return proc.pid


def _kafka_uuid() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (as Uuid.randomUuid)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def kafka_metadata(port: int, timeout: float) -> tuple[list[tuple[int, str, int]], str | None, int]:
    """One Kafka Metadata request (v4, no topics): (brokers as (id, host, port), cluster id, controller id)."""

    def string(buf: bytes, pos: int) -> tuple[str | None, int]:
        (length,) = struct.unpack_from(">h", buf, pos)
        pos += 2
        if length < 0:
            return None, pos
        return buf[pos : pos + length].decode(), pos + length

    client_id = b"simplemem-infra"
    correlation = 7
    body = struct.pack(">hhih", 3, 4, correlation, len(client_id)) + client_id + struct.pack(">ib", 0, 0)
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(struct.pack(">i", len(body)) + body)
        head = b""
        while len(head) < 4:
            chunk = sock.recv(4 - len(head))
            if not chunk:
                raise ConnectionError("connection closed before a metadata response")
            head += chunk
        (size,) = struct.unpack(">i", head)
        buf = b""
        while len(buf) < size:
            chunk = sock.recv(size - len(buf))
            if not chunk:
                raise ConnectionError("connection closed in the middle of a metadata response")
            buf += chunk
    got_correlation, _throttle, count = struct.unpack_from(">iii", buf, 0)
    if got_correlation != correlation:
        raise ConnectionError(f"unexpected correlation id {got_correlation}")
    pos = 12
    brokers = []
    for _ in range(count):
        (node_id,) = struct.unpack_from(">i", buf, pos)
        host, pos = string(buf, pos + 4)
        (broker_port,) = struct.unpack_from(">i", buf, pos)
        _rack, pos = string(buf, pos + 4)
        brokers.append((node_id, host or "", broker_port))
    cluster_id, pos = string(buf, pos)
    (controller,) = struct.unpack_from(">i", buf, pos)
    return brokers, cluster_id, controller


class Kafka(Service):
    name = "kafka"
    POM = INFRA_SRC / "kafka" / "pom.xml"

    def __init__(self, settings: InfraSettings) -> None:
        super().__init__(settings)
        self.config_dir = self.root / "config"
        self.libs: Path | None = None

    @property
    def endpoint(self) -> str:
        return f"{HOST}:{self.settings.kafka_port}"

    @property
    def ports(self) -> list[int]:
        return [self.settings.kafka_port, self.settings.kafka_controller_port]

    def install(self) -> None:
        self.libs = _maven_libs(self.POM, "kafka", self.settings, self.install_log)

    def server_properties(self) -> str:
        s = self.settings
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{HOST}:{s.kafka_controller_port}",
            "listeners": f"PLAINTEXT://{HOST}:{s.kafka_port},CONTROLLER://{HOST}:{s.kafka_controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{s.kafka_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "auto.create.topics.enable": "false",  # topics come from streams/topics.py, configured
            # one broker: every internal topic has one replica and one (not 50) partition
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "log.retention.hours": "24",
            "log.segment.bytes": str(64 * 1024 * 1024),
            # retention is checked every 30 s (default 5 min): raw input expires close to its time
            "log.retention.check.interval.ms": "30000",
        }
        lines = ["# generated by infra/services.py; edits are overwritten on the next `up`"]
        lines += [f"{key}={value}" for key, value in props.items()]
        return "\n".join(lines) + "\n"

    LOG4J2 = "\n".join(
        [
            "# generated by infra/services.py: everything to stdout (the service log file), INFO",
            "status = warn",
            "appender.console.type = Console",
            "appender.console.name = STDOUT",
            "appender.console.layout.type = PatternLayout",
            "appender.console.layout.pattern = [%d] %p %m (%c)%n",
            "rootLogger.level = info",
            "rootLogger.appenderRef.stdout.ref = STDOUT",
            "logger.kafka.name = kafka",
            "logger.kafka.level = info",
            "logger.request.name = kafka.request.logger",
            "logger.request.level = warn",
            "logger.zookeeper.name = org.apache.zookeeper",
            "logger.zookeeper.level = warn",
            "",
        ]
    )

    def prepare(self) -> Launch:
        assert self.libs is not None, "install() first"
        self.config_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        props = self.config_dir / "server.properties"
        log4j = self.config_dir / "log4j2.properties"
        props.write_text(self.server_properties())
        log4j.write_text(self.LOG4J2)
        java = _ensure_java(self.install_log)
        classpath = f"{self.libs}/*"
        if not (self.data_dir / "meta.properties").exists():
            # first start (or a half-formatted dir): format with a fresh cluster id
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir.mkdir(parents=True)
            cluster_id = _kafka_uuid()
            log.info("kafka: formatting %s with cluster id %s", self.data_dir, cluster_id)
            _run_logged(
                [
                    java,
                    f"-Dlog4j2.configurationFile={log4j}",
                    "-cp",
                    classpath,
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    cluster_id,
                    "-c",
                    str(props),
                ],
                self.log_dir / "format.log",
                "kafka: storage format",
            )
        argv = [
            java,
            *self.settings.kafka_heap.split(),
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={self.log_dir}",
            "-cp",
            classpath,
            "kafka.Kafka",
            str(props),
        ]
        return Launch(argv, self.root)

    def probe(self, timeout: float) -> bool:
        try:
            brokers, _cluster, controller = kafka_metadata(self.settings.kafka_port, timeout)
        except (OSError, struct.error, ValueError):
            return False
        return bool(brokers) and controller >= 0


class OpenSearch(Service):
    name = "opensearch"
    POM = INFRA_SRC / "opensearch" / "pom.xml"
    MAIN = INFRA_SRC / "opensearch" / "OpenSearchNode.java"

    def __init__(self, settings: InfraSettings) -> None:
        super().__init__(settings)
        self.home = self.root / "home"
        self.libs: Path | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.settings.opensearch_port}"

    @property
    def ports(self) -> list[int]:
        return [self.settings.opensearch_port, self.settings.opensearch_transport_port]

    def install(self) -> None:
        _ensure_java(self.install_log, need_compiler=True)  # the single-file source launcher compiles
        self.libs = _maven_libs(self.POM, "opensearch", self.settings, self.install_log)

    def prepare(self) -> Launch:
        assert self.libs is not None, "install() first"
        for folder in (self.home, self.data_dir, self.log_dir):
            folder.mkdir(parents=True, exist_ok=True)
        tmp = self.root / "tmp"
        tmp.mkdir(exist_ok=True)
        s = self.settings
        argv = [
            _ensure_java(self.install_log, need_compiler=True),
            *s.opensearch_heap.split(),
            "-XX:+UseG1GC",
            "-XX:MaxDirectMemorySize=256m",
            "-Djava.awt.headless=true",
            "-Dfile.encoding=UTF-8",
            f"-Djava.io.tmpdir={tmp}",
            # as OpenSearch's own jvm.options
            "-Djava.locale.providers=SPI,COMPAT",
            "-Dlog4j.shutdownHookEnabled=false",
            "-Dlog4j2.disable.jmx=true",
            "-Dio.netty.noUnsafe=true",
            "-Dio.netty.noKeySetOptimization=true",
            "-Dio.netty.recycler.maxCapacityPerThread=0",
            "-Dopensearch.set.netty.runtime.available.processors=false",
            "-cp",
            f"{self.libs}/*",
            str(self.MAIN),
            f"path.home={self.home}",
            f"path.data={self.data_dir}",
            f"path.logs={self.log_dir}",
            "cluster.name=simplemem",
            "node.name=simplemem-node",
            "discovery.type=single-node",
            f"network.host={HOST}",
            f"http.port={s.opensearch_port}",
            f"transport.port={s.opensearch_transport_port}",
            "cluster.routing.allocation.disk.threshold_enabled=false",
        ]
        return Launch(argv, self.root)

    def probe(self, timeout: float) -> bool:
        url = f"{self.endpoint}/_cluster/health?wait_for_status=yellow&timeout={max(1, int(timeout))}s"
        try:
            with urllib.request.urlopen(url, timeout=timeout + 1) as resp:
                health = json.loads(resp.read())
        except (OSError, ValueError):  # URLError and HTTPError (408 while not yellow) are OSErrors
            return False
        return health.get("status") in ("yellow", "green")


class Milvus(Service):
    name = "milvus"
    RUNNER = INFRA_SRC / "milvus" / "server.py"

    def __init__(self, settings: InfraSettings) -> None:
        super().__init__(settings)
        self.python: str | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.settings.milvus_port}"

    @property
    def ports(self) -> list[int]:
        return [self.settings.milvus_port]

    @property
    def venv(self) -> Path:
        return self.settings.infra_cache_dir.expanduser().resolve() / "milvus-venv"

    def _has_milvus(self, python: str) -> bool:
        if python == sys.executable:
            return importlib.util.find_spec("milvus") is not None
        probe = [
            python,
            "-c",
            "import importlib.util, sys; sys.exit(importlib.util.find_spec('milvus') is None)",
        ]
        return subprocess.call(probe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0

    def install(self) -> None:
        """Picks the Python that runs the server, installing the `milvus` package where needed.

        Into the running (project) environment only when that adds `milvus` and changes no other
        package (a `uv pip install --dry-run` tells); otherwise into its own venv in the cache folder.
        """
        requirement = f"milvus=={self.settings.milvus_version}"
        own_venv = self.settings.milvus_own_venv
        if not own_venv and self._has_milvus(sys.executable):
            self.python = sys.executable
            return
        venv_python = self.venv / "bin" / "python"
        if venv_python.exists() and self._has_milvus(str(venv_python)):
            self.python = str(venv_python)
            return
        uv = _uv(self.install_log)
        with _file_lock(self.venv.with_name("milvus-venv.lock")):
            dry = subprocess.run(
                [*uv, "pip", "install", "--dry-run", "--python", sys.executable, requirement],
                capture_output=True,
                text=True,
                check=False,
            )
            changes = [
                line.strip()
                for line in (dry.stdout + dry.stderr).splitlines()
                if line.startswith((" + ", " - "))
            ]
            if not own_venv and dry.returncode == 0 and changes == [f"+ {requirement}"]:
                log.info(
                    "milvus: installing %s into %s (it changes no other package)", requirement, sys.prefix
                )
                _run_logged(
                    [*uv, "pip", "install", "--python", sys.executable, requirement],
                    self.install_log,
                    f"uv pip install {requirement}",
                )
                importlib.invalidate_caches()
                self.python = sys.executable
                return
            log.info(
                "milvus: installing %s into its own venv %s (in %s it would change: %s)",
                requirement,
                self.venv,
                sys.prefix,
                "forced by SIMPLEMEM_MILVUS_OWN_VENV" if own_venv else changes,
            )
            shutil.rmtree(self.venv, ignore_errors=True)
            self.venv.parent.mkdir(parents=True, exist_ok=True)
            _run_logged(
                [*uv, "venv", "--python", "3.11", str(self.venv)], self.install_log, "uv venv (milvus)"
            )
            _run_logged(
                [*uv, "pip", "install", "--python", str(venv_python), requirement],
                self.install_log,
                f"uv pip install {requirement} (milvus venv)",
            )
        self.python = str(venv_python)

    def other_services_ports(self) -> list[int]:
        s = self.settings
        return [
            s.kafka_port,
            s.kafka_controller_port,
            s.opensearch_port,
            s.opensearch_transport_port,
            s.redis_port,
        ]

    def prepare(self) -> Launch:
        assert self.python is not None, "install() first"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            self.python,
            "-u",
            str(self.RUNNER),
            "--data-dir",
            str(self.data_dir),
            "--port",
            str(self.settings.milvus_port),
            "--metrics-port",
            str(self.settings.milvus_metrics_port),
            "--avoid-ports",
            ",".join(str(p) for p in self.other_services_ports()),
            "--stop-grace",
            str(max(1.0, self.settings.infra_stop_grace - 5)),
        ]
        return Launch(argv, self.root)

    def probe(self, timeout: float) -> bool:
        if not _port_open(self.settings.milvus_port, timeout):
            return False  # cheap pre-check: pymilvus would spend its whole timeout on a closed port
        try:
            from pymilvus import MilvusClient

            client = MilvusClient(uri=self.endpoint, timeout=timeout)
            try:
                client.list_collections(timeout=timeout)
            finally:
                client.close()
        except Exception:  # pymilvus raises MilvusException, grpc errors, or its own timeouts
            return False
        return True


class Redis(Service):
    name = "redis"

    @property
    def endpoint(self) -> str:
        return f"redis://{HOST}:{self.settings.redis_port}/0"

    @property
    def ports(self) -> list[int]:
        return [self.settings.redis_port]

    @staticmethod
    def binary() -> str | None:
        return shutil.which("redis-server") or next(
            (p for p in ("/usr/bin/redis-server", "/usr/sbin/redis-server") if os.access(p, os.X_OK)), None
        )

    def install(self) -> None:
        if self.binary() is None:
            _apt_install(["redis-server"], self.install_log)
        if self.binary() is None:
            raise InfraError(f"redis: redis-server not found after installing it; see {self.install_log}")

    def prepare(self) -> Launch:
        binary = self.binary()
        assert binary is not None, "install() first"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            binary,
            "--daemonize",
            "no",
            "--bind",
            HOST,
            "--port",
            str(self.settings.redis_port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.data_dir),
            "--logfile",
            "",
        ]
        return Launch(argv, self.root)

    def probe(self, timeout: float) -> bool:
        try:
            with socket.create_connection((HOST, self.settings.redis_port), timeout=timeout) as sock:
                sock.settimeout(timeout)
                sock.sendall(b"*1\r\n$4\r\nPING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False


SERVICE_CLASSES: dict[str, type[Service]] = {cls.name: cls for cls in (Kafka, OpenSearch, Milvus, Redis)}


def _select(names: Sequence[str] | None, settings: InfraSettings) -> list[Service]:
    chosen = list(names) if names else list(SERVICE_NAMES)
    unknown = [n for n in chosen if n not in SERVICE_CLASSES]
    if unknown:
        raise InfraError(f"unknown service(s) {unknown}; known: {', '.join(SERVICE_NAMES)}")
    ordered = [n for n in SERVICE_NAMES if n in chosen]  # fixed order, no duplicates
    return [SERVICE_CLASSES[n](settings) for n in ordered]


# --------------------------------------------------------------------------------------------------
# the API
# --------------------------------------------------------------------------------------------------


@dataclass
class _Starting:
    svc: Service
    pid: int
    since: float
    launched_now: bool  # False: it was already running (maybe still starting) before this `up`


def up(names: list[str] | None = None, settings: InfraSettings | None = None) -> list[ServiceStatus]:
    """Starts the named services (default: all) and waits until each one answers a real request.

    A service that is already running (by its pid file) is left alone, only waited for. Each other one
    is installed if needed, launched as a detached process group and waited for, up to
    `infra_ready_timeout` seconds (the services start in parallel). Raises InfraError naming every
    service that failed and its log file; one that started but never became ready is stopped again.
    """
    settings = settings or InfraSettings()
    services = _select(names, settings)
    waiting: list[_Starting] = []
    errors: list[str] = []
    for svc in services:
        with svc.lock():
            pid = svc.running_pid()
            if pid is not None:
                log.info("%s: already running (pid %d) at %s", svc.name, pid, svc.endpoint)
                waiting.append(_Starting(svc, pid, time.monotonic(), launched_now=False))
                continue
            svc.pid_file.unlink(missing_ok=True)  # stale
            try:
                began = time.monotonic()
                svc.install()
                installed = time.monotonic()
                svc.check_ports_free()
                launch = svc.prepare()
                log.info(
                    "%s: install/check %.1f s, prepare %.1f s",
                    svc.name,
                    installed - began,
                    time.monotonic() - installed,
                )
                pid = svc.spawn(launch)
            except InfraError as exc:
                errors.append(str(exc))
                continue
            except OSError as exc:
                errors.append(f"{svc.name}: could not start ({exc}); see {svc.log_file}")
                continue
            waiting.append(_Starting(svc, pid, time.monotonic(), launched_now=True))
            log.info(
                "%s: started pid %d, waiting for %s (log: %s)", svc.name, pid, svc.endpoint, svc.log_file
            )

    while waiting:
        for item in list(waiting):
            svc = item.svc
            if svc.probe(timeout=2.0):
                waiting.remove(item)
                if item.launched_now:
                    log.info(
                        "%s: ready in %.1f s at %s", svc.name, time.monotonic() - item.since, svc.endpoint
                    )
            elif not _alive(item.pid):
                waiting.remove(item)
                svc.pid_file.unlink(missing_ok=True)
                errors.append(
                    f"{svc.name}: exited while starting; see {svc.log_file}:\n{_tail(svc.log_file)}"
                )
            elif time.monotonic() - item.since > settings.infra_ready_timeout:
                waiting.remove(item)
                if item.launched_now:
                    with svc.lock():
                        _terminate(item.pid, settings.infra_stop_grace)
                        svc.pid_file.unlink(missing_ok=True)
                errors.append(
                    f"{svc.name}: not ready after {settings.infra_ready_timeout:.0f} s"
                    f"{' (stopped it again)' if item.launched_now else f' (pid {item.pid} left running)'}; "
                    f"see {svc.log_file}:\n{_tail(svc.log_file)}"
                )
        if waiting:
            time.sleep(0.1)
    if errors:
        raise InfraError("\n".join(errors))
    return status(names, settings)


def down(names: list[str] | None = None, settings: InfraSettings | None = None) -> list[ServiceStatus]:
    """Stops what `up` started (by pid file): SIGTERM, then SIGKILL after `infra_stop_grace` seconds."""
    settings = settings or InfraSettings()
    for svc in reversed(_select(names, settings)):
        if not svc.root.exists():
            continue
        with svc.lock():
            pid = svc.running_pid()
            if pid is not None:
                log.info("%s: stopping pid %d", svc.name, pid)
                began = time.monotonic()
                _terminate(pid, settings.infra_stop_grace)
                log.info("%s: stopped in %.1f s", svc.name, time.monotonic() - began)
            svc.pid_file.unlink(missing_ok=True)
    return status(names, settings)


def status(names: list[str] | None = None, settings: InfraSettings | None = None) -> list[ServiceStatus]:
    """Each service: `running` (its process is alive and answers), `unhealthy` (alive, not answering)
    or `stopped` (no live process recorded by `up`)."""
    settings = settings or InfraSettings()
    result = []
    for svc in _select(names, settings):
        pid = svc.running_pid()
        state: State = "stopped" if pid is None else "running" if svc.probe(timeout=2.0) else "unhealthy"
        result.append(ServiceStatus(svc.name, svc.endpoint, pid, state))
    return result


# --------------------------------------------------------------------------------------------------
# command line: python -m infra.services up|down|status [SERVICE...] [--json]
# --------------------------------------------------------------------------------------------------


def _print_table(rows: list[ServiceStatus]) -> None:
    for row in rows:
        print(f"{row.name:<11} {row.state:<10} {row.pid if row.pid is not None else '-':>8}  {row.endpoint}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.services", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("up", "down", "status"))
    parser.add_argument("services", nargs="*", metavar="SERVICE", help=f"any of {', '.join(SERVICE_NAMES)}")
    parser.add_argument("--json", action="store_true", help="print the services' status as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors on stderr")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="%(asctime)s infra %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )
    names = args.services or None
    try:
        if args.command == "up":
            rows = up(names)
        elif args.command == "down":
            rows = down(names)
        else:
            rows = status(names)
    except InfraError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([row.to_dict() for row in rows], indent=2))
    else:
        _print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
