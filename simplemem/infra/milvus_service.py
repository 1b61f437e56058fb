"""Milvus standalone: the C++ server shipped in the PyPI package ``milvus``, run by simplemem/infra/milvus/server.py.

``milvus`` 2.3.5 pins versions of packages the project also uses, so it goes into the project venv only
when a dry run shows it adds itself and changes nothing else; otherwise into a venv of its own in the
cache folder (``SIMPLEMEM_MILVUS_OWN_VENV=1`` forces that). The launcher script imports nothing from
this repository for that reason. Ready means pymilvus, the client the stores use, lists collections.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import shutil
import subprocess
import sys
from pathlib import Path

from simplemem.infra.daemon import Launch, Service, port_open
from simplemem.infra.install import file_lock, run_logged, uv_command
from simplemem.infra.settings import InfraSettings
from simplemem.schemas.settings import LOCAL_HOST

log = logging.getLogger("simplemem.infra.milvus")


def has_milvus(python: str) -> bool:
    """Whether that Python interpreter can import the ``milvus`` package."""
    if python == sys.executable:
        return importlib.util.find_spec("milvus") is not None
    check = "import importlib.util, sys; sys.exit(importlib.util.find_spec('milvus') is None)"
    return subprocess.call([python, "-c", check], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0


class Milvus(Service):
    name = "milvus"
    RUNNER = Path(__file__).resolve().parent / "milvus" / "server.py"

    def __init__(self, settings: InfraSettings) -> None:
        super().__init__(settings)
        self.python: str | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{LOCAL_HOST}:{self.settings.milvus_port}"

    @property
    def ports(self) -> list[int]:
        return [self.settings.milvus_port]

    @property
    def venv(self) -> Path:
        return self.settings.infra_cache_dir.expanduser().resolve() / "milvus-venv"

    def install(self) -> None:
        """Picks the Python that runs the server, installing the `milvus` package where needed."""
        requirement = f"milvus=={self.settings.milvus_version}"
        own_venv = self.settings.milvus_own_venv
        if not own_venv and has_milvus(sys.executable):
            self.python = sys.executable
            return
        venv_python = self.venv / "bin" / "python"
        if venv_python.exists() and has_milvus(str(venv_python)):
            self.python = str(venv_python)
            return
        uv = uv_command(self.install_log)
        with file_lock(self.venv.with_name("milvus-venv.lock")):
            dry = subprocess.run(
                [*uv, "pip", "install", "--dry-run", "--python", sys.executable, requirement],
                capture_output=True,
                text=True,
                check=False,
            )
            out = (dry.stdout + dry.stderr).splitlines()
            changes = [line.strip() for line in out if line.startswith((" + ", " - "))]
            if not own_venv and dry.returncode == 0 and changes == [f"+ {requirement}"]:
                log.info(
                    "milvus: installing %s into %s (it changes no other package)", requirement, sys.prefix
                )
                install = [*uv, "pip", "install", "--python", sys.executable, requirement]
                run_logged(install, self.install_log, f"uv pip install {requirement}")
                importlib.invalidate_caches()
                self.python = sys.executable
                return
            why = (
                "forced by SIMPLEMEM_MILVUS_OWN_VENV"
                if own_venv
                else f"in {sys.prefix} it would change {changes}"
            )
            log.info("milvus: installing %s into its own venv %s (%s)", requirement, self.venv, why)
            shutil.rmtree(self.venv, ignore_errors=True)
            self.venv.parent.mkdir(parents=True, exist_ok=True)
            run_logged(
                [*uv, "venv", "--python", "3.11", str(self.venv)], self.install_log, "uv venv (milvus)"
            )
            install = [*uv, "pip", "install", "--python", str(venv_python), requirement]
            run_logged(install, self.install_log, f"uv pip install {requirement} (milvus venv)")
        self.python = str(venv_python)

    def other_services_ports(self) -> list[int]:
        """Ports Milvus must not hand to one of its components (it takes the first free one from a default)."""
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
        argv = [self.python, "-u", str(self.RUNNER), "--data-dir", str(self.data_dir)]
        argv += [
            "--port",
            str(self.settings.milvus_port),
            "--metrics-port",
            str(self.settings.milvus_metrics_port),
        ]
        argv += ["--avoid-ports", ",".join(str(p) for p in self.other_services_ports())]
        argv += ["--stop-grace", str(max(1.0, self.settings.infra_stop_grace - 5))]
        return Launch(argv, self.root)

    def probe(self, timeout: float) -> bool:
        if not port_open(self.settings.milvus_port, timeout):
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
        return self._healthy(timeout)

    def _healthy(self, timeout: float) -> bool:
        """Milvus's own health check: its coordinator answers (above) some seconds before its query
        node has joined, and a collection loaded in between fails with "nodes not enough" (a worker
        started right after ``infra up`` on a busy machine exited that way)."""
        import httpx

        url = f"http://{LOCAL_HOST}:{self.settings.milvus_metrics_port}/healthz"
        try:
            resp = httpx.get(url, timeout=timeout + 1, trust_env=False)
        except httpx.HTTPError:
            return False
        return resp.status_code == 200 and resp.text.strip() == "OK"
