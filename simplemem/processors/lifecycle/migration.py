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
import uuid
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

import orjson

from simplemem.processors.stores.redis_keys import RedisKeys
from simplemem.schemas.keys import id_problem

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
    """Who imports which tenant. An in-progress claim is a lease: the importer renews it while it works,
    and a claim whose lease lapsed (its process died half way) is free to take again, so a crashed
    import is redone by a later query instead of staying "in progress" forever. Redoing it is safe:
    message ids are stable, so the pipeline rewrites the same memories."""

    def claim(self, tenant_id: str, lease_seconds: float) -> bool:
        """Record the tenant as in progress if it has no record or only a lapsed claim; True for the
        one caller that did."""
        ...

    def renew(self, tenant_id: str, lease_seconds: float) -> None: ...

    def state(self, tenant_id: str) -> MigrationState | None:
        """The recorded state; None when there is none or the in-progress lease lapsed."""
        ...

    def finish(self, tenant_id: str, state: MigrationState, detail: str) -> None: ...


class FileMigrationRegistry:
    """Embedded mode: one small file per tenant in the store. A first claim is an exclusive create; a
    lapsed claim is replaced atomically and kept only by the caller whose token reads back."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, tenant_id: str) -> Path:
        path = tenant_file(self.folder, tenant_id, ".json")
        if path is None:
            raise ValueError(f"not a tenant id: {tenant_id!r}")
        return path

    def _record(self, tenant_id: str) -> dict[str, Any] | None:
        try:
            record = orjson.loads(self._path(tenant_id).read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return None
        return record if isinstance(record, dict) else None

    @staticmethod
    def _claim_bytes(lease_seconds: float, token: str) -> bytes:
        state = MigrationState.IN_PROGRESS
        return orjson.dumps({"state": state, "lease_until": time.time() + lease_seconds, "token": token})

    def claim(self, tenant_id: str, lease_seconds: float) -> bool:
        self.folder.mkdir(parents=True, exist_ok=True)
        path, token = self._path(tenant_id), uuid.uuid4().hex
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            if self.state(tenant_id) is not None:
                return False
            spare = path.with_suffix(f".{token}.claim")
            spare.write_bytes(self._claim_bytes(lease_seconds, token))
            os.replace(spare, path)
            record = self._record(tenant_id)
            return record is not None and record.get("token") == token
        with os.fdopen(fd, "wb") as fh:
            fh.write(self._claim_bytes(lease_seconds, token))
        return True

    def renew(self, tenant_id: str, lease_seconds: float) -> None:
        record = self._record(tenant_id)
        if record is not None and record.get("state") == MigrationState.IN_PROGRESS:
            record["lease_until"] = time.time() + lease_seconds
            self._path(tenant_id).write_bytes(orjson.dumps(record))

    def state(self, tenant_id: str) -> MigrationState | None:
        record = self._record(tenant_id)
        if record is None:
            return None
        state = MigrationState(record["state"])
        lapsed = float(record.get("lease_until", 0)) < time.time()
        return None if state == MigrationState.IN_PROGRESS and lapsed else state

    def finish(self, tenant_id: str, state: MigrationState, detail: str) -> None:
        record = {"state": state, "detail": detail, "at": time.time()}
        self._path(tenant_id).write_bytes(orjson.dumps(record))


# A claim: the key set while it is absent or holds no state name. A key holding something else is a
# detail written under the old ``migration:<tenant>:detail`` key, which for tenant ``a`` was the state
# key of tenant ``a:detail`` (simplemem/processors/stores/redis_keys.py): not a claim to respect.
_CLAIM = """
local held = redis.call('GET', KEYS[1])
for i = 3, #ARGV do
    if held == ARGV[i] then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
_STATES = [s.value for s in MigrationState]


class RedisMigrationRegistry:
    """Services mode: the tenant's state in Redis (``<prefix>:migration:<tenant>``); a claim is set
    with an expiry (the lease), renewed by the importer and made permanent when it finishes."""

    def __init__(self, url: str, prefix: str) -> None:
        import redis

        self.redis = redis.Redis.from_url(url)
        self.prefix = prefix
        self.keys = RedisKeys(prefix)

    def claim(self, tenant_id: str, lease_seconds: float) -> bool:
        lease_ms = max(1, int(lease_seconds * 1000))
        key = self.keys.migration(tenant_id)
        return bool(self.redis.eval(_CLAIM, 1, key, MigrationState.IN_PROGRESS.value, lease_ms, *_STATES))

    def renew(self, tenant_id: str, lease_seconds: float) -> None:
        self.redis.pexpire(self.keys.migration(tenant_id), max(1, int(lease_seconds * 1000)))

    def state(self, tenant_id: str) -> MigrationState | None:
        raw = self.redis.get(self.keys.migration(tenant_id))
        held = raw.decode() if isinstance(raw, bytes) else None
        # None also for an old detail key of another tenant (see _CLAIM)
        return MigrationState(held) if held in _STATES else None

    def finish(self, tenant_id: str, state: MigrationState, detail: str) -> None:
        self.redis.set(self.keys.migration(tenant_id), state.value)
        self.redis.set(self.keys.migration_detail(tenant_id), detail)


class LazyMigration:
    """Starts a tenant's import on its first query; ``sink`` hands raw lines to the pipeline."""

    def __init__(
        self,
        history_dir: Path,
        registry: MigrationRegistry,
        sink: Callable[[list[bytes]], int],
        lease_seconds: float,
    ) -> None:
        self.history_dir = history_dir
        self.registry = registry
        self.sink = sink
        self.lease_seconds = lease_seconds
        self.threads: list[threading.Thread] = []

    def history(self, tenant_id: str) -> Path | None:
        path = tenant_file(self.history_dir, tenant_id, ".jsonl")
        return path if path is not None and path.is_file() else None

    def ensure(self, tenant_id: str) -> MigrationState | None:
        """The tenant's migration state, starting the import if this is its first query (or the import
        that claimed it died without finishing)."""
        if id_problem(tenant_id, tenant=True) is not None:
            return None  # not a tenant id: no legacy file and no record can belong to it
        state = self.registry.state(tenant_id)
        if state is not None:
            return state
        path = self.history(tenant_id)
        if path is None:
            return None
        if self.registry.claim(tenant_id, self.lease_seconds):
            thread = threading.Thread(target=self._run, args=(tenant_id, path), name=f"migrate-{tenant_id}")
            thread.start()
            self.threads.append(thread)
        return MigrationState.IN_PROGRESS

    def _run(self, tenant_id: str, path: Path) -> None:
        done = threading.Event()
        heartbeat = threading.Thread(
            target=self._renew_until, args=(tenant_id, done), name=f"migrate-lease-{tenant_id}", daemon=True
        )
        heartbeat.start()
        try:
            lines = [line for line in path.read_bytes().splitlines() if line.strip()]
            count = self.sink(lines)
        except Exception as exc:
            log.exception("lazy migration of %s failed", tenant_id)
            outcome, detail = MigrationState.FAILED, f"{type(exc).__name__}: {exc}"
        else:
            outcome, detail = MigrationState.IMPORTED, f"{count} events from {path}"
        finally:
            done.set()
            heartbeat.join()
        self.registry.finish(tenant_id, outcome, detail)

    def _renew_until(self, tenant_id: str, done: threading.Event) -> None:
        """Keep the claim's lease alive while the import runs (three renewals per lease)."""
        while not done.wait(self.lease_seconds / 3):
            try:
                self.registry.renew(tenant_id, self.lease_seconds)
            except Exception:
                log.warning("could not renew the migration lease of %s", tenant_id, exc_info=True)

    def wait(self, timeout: float | None = None) -> None:
        """Let background imports finish (a short-lived CLI process calls this before exiting)."""
        for thread in self.threads:
            thread.join(timeout)
