"""A local query service (`simplemem serve`) as a child process, for tests and benchmarks.

Production runs the same command under its own supervisor (compose, systemd, Kubernetes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from simplemem.schemas.settings import REPO_ROOT
from tests.helpers.workers import free_port, wait_ready


@dataclass
class ServeProcess:
    env: dict[str, str]
    log_path: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServeProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    str(REPO_ROOT / "bin" / "simplemem"),
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                cwd=REPO_ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=5) as r:
                return bool(r.status == 200)
        except (OSError, urllib.error.HTTPError):
            return False

    def wait_ready(self, timeout: float = 180.0) -> None:
        """Until /healthz answers 200 (models loaded, stores reachable) or the process died."""
        wait_ready(self.proc, self.healthy, "serve", self.log_path, timeout)

    def stop(self, grace: float = 30.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
