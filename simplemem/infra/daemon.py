"""What every local service has in common: its folder, pid file and lock, and starting, stopping and
reporting one service. Each service module (``kafka_service`` ...) only says how to install, configure
and launch its server and how to ask it whether it is ready.

State lives in ``<infra_dir>/<service>/``: ``data/``, ``logs/<service>.log`` (the process's stdout and
stderr; the previous run's in ``<service>.log.1``), ``logs/install.log``, and ``<service>.pid``. The
pid file is what makes ``up`` idempotent and lets ``down`` stop only what ``up`` started: a service
counts as ours only while the process it records (pid and creation time) is alive.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from simplemem.infra import process
from simplemem.infra.errors import InfraError
from simplemem.infra.install import file_lock
from simplemem.infra.settings import InfraSettings
from simplemem.schemas.settings import LOCAL_HOST

State = Literal["running", "stopped", "unhealthy"]


@dataclass(frozen=True)
class ServiceStatus:
    """One row of ``simplemem infra status``: `unhealthy` is a recorded live process not answering."""

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


def port_open(port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts connections on the loopback port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        return sock.connect_ex((LOCAL_HOST, port)) == 0


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
        """One real request through the client the project uses: True when the service serves."""

    # --- pid file --------------------------------------------------------------------------------
    def recorded(self) -> tuple[int, float | None, int | None] | None:
        """(pid, creation time, start in clock ticks) from the pid file, or None when there is no
        readable one. Files of the launcher before psutil hold the ticks only."""
        try:
            data = json.loads(self.pid_file.read_text())
            created, ticks = data.get("created"), data.get("start")
            return (
                int(data["pid"]),
                None if created is None else float(created),
                None if ticks is None else int(ticks),
            )
        except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def running_pid(self) -> int | None:
        """The pid `up` recorded, if that very process is still alive (not a reused pid)."""
        rec = self.recorded()
        if rec is None:
            return None
        pid, created, ticks = rec
        return pid if process.is_alive(pid, created, ticks) else None

    def write_pid(self, pid: int) -> None:
        record = {
            "pid": pid,
            "created": process.create_time(pid),
            "start": process.start_ticks(pid),
            "service": self.name,
            "log": str(self.log_file),
        }
        tmp = self.pid_file.with_suffix(".pid.tmp")
        tmp.write_text(json.dumps(record) + "\n")
        tmp.replace(self.pid_file)

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """Serialises `up` and `down` of this service between processes (two `up`s start one server)."""
        return file_lock(self.root / ".lock")

    # --- one service's up, down, status ---------------------------------------------------------
    def check_ports_free(self) -> None:
        busy = [port for port in self.ports if port_open(port)]
        if busy:
            raise InfraError(
                f"{self.name}: port(s) {busy} on {LOCAL_HOST} are already in use by a process that `up` did "
                f"not start; stop it or choose other ports (SIMPLEMEM_*_PORT)"
            )

    def spawn(self, launch: Launch) -> int:
        """Runs the service as a detached process group, output to its log file; records its pid."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.log_file.exists() and self.log_file.stat().st_size > 0:
            self.log_file.replace(self.log_file.with_suffix(".log.1"))
        with self.log_file.open("ab") as out:
            out.write(f"# {time.strftime('%Y-%m-%dT%H:%M:%S')} $ {' '.join(launch.argv)}\n".encode())
            out.flush()
            pid = process.spawn(launch.argv, launch.cwd, launch.env, out)
        self.write_pid(pid)
        return pid

    def start(self) -> tuple[int, bool]:
        """(pid, launched now): the recorded process when it runs, else a new one (not yet ready)."""
        with self.lock():
            pid = self.running_pid()
            if pid is not None:
                return pid, False
            self.pid_file.unlink(missing_ok=True)  # stale: a dead or reused pid
            self.install()
            self.check_ports_free()
            return self.spawn(self.prepare()), True

    def stop(self) -> int | None:
        """Stops the recorded process group (SIGTERM, SIGKILL after the grace period) if it runs; its pid.

        A process the pid file does not record (another copy on the same ports, a reused pid) is never
        signalled: `down` stops only what `up` started."""
        with self.lock():
            pid = self.running_pid()
            if pid is not None:
                survivors = process.terminate_group(pid, self.settings.infra_stop_grace)
                if survivors:
                    raise InfraError(f"{self.name}: process group {pid} survived SIGKILL: {survivors}")
            self.pid_file.unlink(missing_ok=True)
            return pid

    def status(self) -> ServiceStatus:
        pid = self.running_pid()
        state: State = "stopped" if pid is None else "running" if self.probe(timeout=2.0) else "unhealthy"
        return ServiceStatus(self.name, self.endpoint, pid, state)
