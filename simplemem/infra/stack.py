"""The project's four real services on 127.0.0.1, from registry packages only: which there are, and
``up``, ``down`` and ``status`` over any of them (``simplemem infra up|down|status`` calls these).

- Kafka 4 (KRaft, one node): the broker's jars from Maven Central (``kafka_service.py``).
- OpenSearch 2.19: a node started in-process from Maven Central jars (``opensearch_service.py``).
- Milvus standalone: the C++ server of the PyPI package ``milvus`` (``milvus_service.py``).
- Redis: Debian's ``redis-server`` (``redis_service.py``).

What is common to them (folders, pid files, starting and stopping one) is in ``daemon.py``, process
supervision in ``process.py``, installers in ``install.py``. Settings are fields of
:class:`simplemem.infra.settings.InfraSettings` (ports, ``infra_dir``, heaps, timeouts).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from simplemem.infra import process
from simplemem.infra.daemon import Service, ServiceStatus
from simplemem.infra.errors import InfraError, log_tail
from simplemem.infra.install import ensure_kcat
from simplemem.infra.kafka_service import Kafka, kafka_metadata
from simplemem.infra.milvus_service import Milvus
from simplemem.infra.opensearch_service import OpenSearch
from simplemem.infra.redis_service import Redis
from simplemem.infra.settings import InfraSettings

__all__ = [
    "SERVICE_CLASSES",
    "SERVICE_NAMES",
    "InfraError",
    "ServiceStatus",
    "down",
    "ensure_kcat",
    "kafka_metadata",
    "status",
    "up",
]

log = logging.getLogger("simplemem.infra.stack")

# in the order `up` starts them and `status` lists them (`down` goes the other way)
SERVICE_CLASSES: dict[str, type[Service]] = {cls.name: cls for cls in (Kafka, OpenSearch, Milvus, Redis)}
SERVICE_NAMES: tuple[str, ...] = tuple(SERVICE_CLASSES)


def select(names: Sequence[str] | None, settings: InfraSettings) -> list[Service]:
    """The named services (default: all) in the registry's order, each once; unknown names are an error."""
    chosen = list(names) if names else list(SERVICE_CLASSES)
    unknown = [n for n in chosen if n not in SERVICE_CLASSES]
    if unknown:
        raise InfraError(f"unknown service(s) {unknown}; known: {', '.join(SERVICE_CLASSES)}")
    return [cls(settings) for name, cls in SERVICE_CLASSES.items() if name in chosen]


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
    waiting: list[_Starting] = []
    errors: list[str] = []
    for svc in select(names, settings):
        began = time.monotonic()
        try:
            pid, launched_now = svc.start()
        except InfraError as exc:
            errors.append(str(exc))
            continue
        except OSError as exc:
            errors.append(f"{svc.name}: could not start ({exc}); see {svc.log_file}")
            continue
        waiting.append(_Starting(svc, pid, time.monotonic(), launched_now))
        if launched_now:
            took = time.monotonic() - began
            log.info("%s: started pid %d (install and prepare %.1f s), waiting for it", svc.name, pid, took)
            log.info("%s: endpoint %s, log %s", svc.name, svc.endpoint, svc.log_file)
        else:
            log.info("%s: already running (pid %d) at %s", svc.name, pid, svc.endpoint)
    while waiting:
        waiting = [item for item in waiting if not _finished(item, settings, errors)]
        if waiting:
            time.sleep(0.1)
    if errors:
        raise InfraError("\n".join(errors))
    return status(names, settings)


def _finished(item: _Starting, settings: InfraSettings, errors: list[str]) -> bool:
    """Whether a starting service is ready, or failed (what went wrong is added to `errors`)."""
    svc = item.svc
    if svc.probe(timeout=2.0):
        if item.launched_now:
            log.info("%s: ready in %.1f s at %s", svc.name, time.monotonic() - item.since, svc.endpoint)
        return True
    if not process.is_alive(item.pid):
        svc.pid_file.unlink(missing_ok=True)
        errors.append(f"{svc.name}: exited while starting; see {svc.log_file}:\n{log_tail(svc.log_file)}")
        return True
    if time.monotonic() - item.since <= settings.infra_ready_timeout:
        return False
    if item.launched_now:
        svc.stop()
    left = " (stopped it again)" if item.launched_now else f" (pid {item.pid} left running)"
    errors.append(
        f"{svc.name}: not ready after {settings.infra_ready_timeout:.0f} s{left}; "
        f"see {svc.log_file}:\n{log_tail(svc.log_file)}"
    )
    return True


def down(names: list[str] | None = None, settings: InfraSettings | None = None) -> list[ServiceStatus]:
    """Stops what `up` started (by pid file): SIGTERM, then SIGKILL after `infra_stop_grace` seconds."""
    settings = settings or InfraSettings()
    for svc in reversed(select(names, settings)):
        if svc.root.exists():
            began = time.monotonic()
            pid = svc.stop()
            if pid is not None:
                log.info("%s: stopped pid %d in %.1f s", svc.name, pid, time.monotonic() - began)
    return status(names, settings)


def status(names: list[str] | None = None, settings: InfraSettings | None = None) -> list[ServiceStatus]:
    """Each service: `running` (its process is alive and answers), `unhealthy` (alive, not answering)
    or `stopped` (no live process recorded by `up`)."""
    settings = settings or InfraSettings()
    return [svc.status() for svc in select(names, settings)]
