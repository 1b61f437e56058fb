"""Lazy migration: a tenant's legacy history is imported the first time the tenant is queried.

A legacy source is a folder of ``<tenant_id>.jsonl`` chat-event files (``legacy_history_dir``). On the
first query for a tenant that has such a file and no migration record, the query claims the tenant
(atomically: one importer even with many query processes), hands the history to the pipeline in the
background (services: published to the turns topic for the workers; embedded: ingested into the
store) and answers at once from what is already there, saying the migration is in progress.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Protocol

import orjson

from schemas.keys import id_problem

log = logging.getLogger(__name__)


def tenant_file(folder: Path, tenant_id: str, suffix: str) -> Path | None:
    """``folder/<tenant_id><suffix>``, or None when the tenant id is not a valid id or the path,
    resolved (links followed), does not lie directly in ``folder``: a tenant id is never a path."""
    if id_problem(tenant_id, tenant=True) is not None:
        return None
    base = folder.resolve()
    path = (base / f"{tenant_id}{suffix}").resolve()
    return path if path.parent == base else None


class MigrationState(StrEnum):
    IN_PROGRESS = "in_progress"  # claimed; the history is being handed to the pipeline
    IMPORTED = "imported"  # handed over: published to the turns topic, or ingested (embedded)
    FAILED = "failed"


class MigrationRegistry(Protocol):
    def claim(self, tenant_id: str) -> bool:
        """Record the tenant as in progress if it has no record; True for the one caller that did."""
        ...

    def state(self, tenant_id: str) -> MigrationState | None: ...

    def finish(self, tenant_id: str, state: MigrationState, detail: str) -> None: ...


class FileMigrationRegistry:
    """Embedded mode: one small file per tenant in the store (created exclusively, so claims are atomic)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, tenant_id: str) -> Path:
        path = tenant_file(self.folder, tenant_id, ".json")
        if path is None:
            raise ValueError(f"not a tenant id: {tenant_id!r}")
        return path

    def claim(self, tenant_id: str) -> bool:
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self._path(tenant_id), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps({"state": MigrationState.IN_PROGRESS, "since": time.time()}))
        return True

    def state(self, tenant_id: str) -> MigrationState | None:
        try:
            return MigrationState(orjson.loads(self._path(tenant_id).read_bytes())["state"])
        except (FileNotFoundError, orjson.JSONDecodeError):
            return None

    def finish(self, tenant_id: str, state: MigrationState, detail: str) -> None:
        record = {"state": state, "detail": detail, "at": time.time()}
        self._path(tenant_id).write_bytes(orjson.dumps(record))


class RedisMigrationRegistry:
    """Services mode: ``<prefix>:migration:<tenant>`` in Redis (SET NX claims)."""

    def __init__(self, url: str, prefix: str) -> None:
        import redis

        self.redis = redis.Redis.from_url(url)
        self.prefix = prefix

    def _key(self, tenant_id: str) -> str:
        return f"{self.prefix}:migration:{tenant_id}"

    def claim(self, tenant_id: str) -> bool:
        return bool(self.redis.set(self._key(tenant_id), MigrationState.IN_PROGRESS.value, nx=True))

    def state(self, tenant_id: str) -> MigrationState | None:
        raw = self.redis.get(self._key(tenant_id))
        return MigrationState(raw.decode()) if isinstance(raw, bytes) else None

    def finish(self, tenant_id: str, state: MigrationState, detail: str) -> None:
        self.redis.set(self._key(tenant_id), state.value)
        self.redis.set(f"{self._key(tenant_id)}:detail", detail)


class LazyMigration:
    """Starts a tenant's import on its first query; ``sink`` hands raw lines to the pipeline."""

    def __init__(
        self, history_dir: Path, registry: MigrationRegistry, sink: Callable[[list[bytes]], int]
    ) -> None:
        self.history_dir = history_dir
        self.registry = registry
        self.sink = sink
        self.threads: list[threading.Thread] = []

    def history(self, tenant_id: str) -> Path | None:
        path = tenant_file(self.history_dir, tenant_id, ".jsonl")
        return path if path is not None and path.is_file() else None

    def ensure(self, tenant_id: str) -> MigrationState | None:
        """The tenant's migration state, starting the import if this is its first query."""
        if id_problem(tenant_id, tenant=True) is not None:
            return None  # not a tenant id: no legacy file and no record can belong to it
        state = self.registry.state(tenant_id)
        if state is not None:
            return state
        path = self.history(tenant_id)
        if path is None:
            return None
        if self.registry.claim(tenant_id):
            thread = threading.Thread(target=self._run, args=(tenant_id, path), name=f"migrate-{tenant_id}")
            thread.start()
            self.threads.append(thread)
        return MigrationState.IN_PROGRESS

    def _run(self, tenant_id: str, path: Path) -> None:
        try:
            lines = [line for line in path.read_bytes().splitlines() if line.strip()]
            count = self.sink(lines)
        except Exception as exc:
            log.exception("lazy migration of %s failed", tenant_id)
            self.registry.finish(tenant_id, MigrationState.FAILED, f"{type(exc).__name__}: {exc}")
            return
        self.registry.finish(tenant_id, MigrationState.IMPORTED, f"{count} events from {path}")

    def wait(self, timeout: float | None = None) -> None:
        """Let background imports finish (a short-lived CLI process calls this before exiting)."""
        for thread in self.threads:
            thread.join(timeout)
