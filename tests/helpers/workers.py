"""Local stream workers as child processes (tests, benchmarks): start, wait for /metrics, kill.

Production runs `simplemem worker` under its own supervisor (compose, systemd, Kubernetes); this is
the same command, started from Python with a given environment.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from simplemem.infra.errors import log_tail
from simplemem.schemas.settings import REPO_ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_ready(
    proc: subprocess.Popen[bytes] | None, ready: Callable[[], bool], what: str, log_path: Path, timeout: float
) -> None:
    """Until ``ready()`` or the child process died; either failure quotes the end of its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(
                f"{what} exited with {proc.returncode}; see {log_path}:\n" + log_tail(log_path, 40)
            )
        if ready():
            return
        time.sleep(0.5)
    raise TimeoutError(f"{what} not ready after {timeout}s; see {log_path}:\n" + log_tail(log_path, 40))


@dataclass
class WorkerProcess:
    env: dict[str, str]
    log_path: Path
    web_port: int = field(default_factory=free_port)
    cwd: Path = REPO_ROOT  # a user may start it from any directory
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> WorkerProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env, "SIMPLEMEM_WORKER_WEB_PORT": str(self.web_port)}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(REPO_ROOT / "bin" / "simplemem"), "worker"],  # the command as a user runs it
                cwd=self.cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def metrics(self) -> str | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/metrics", timeout=2) as r:
                text: str = r.read().decode()
                return text
        except OSError:
            return None

    def metric(self, name: str) -> float:
        """Sum of a metric's samples (all labels), 0 if absent."""
        total = 0.0
        for line in (self.metrics() or "").splitlines():
            if line.startswith(name) and line[len(name) : len(name) + 1] in (" ", "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def wait_ready(self, timeout: float = 180.0) -> None:
        """Until its /metrics answers (models loaded, Faust started) or it died."""
        wait_ready(self.proc, lambda: self.metrics() is not None, "worker", self.log_path, timeout)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        """A clean shutdown (SIGTERM: Faust commits what it finished), SIGKILL after a grace period."""
        self.kill(signal.SIGTERM)
