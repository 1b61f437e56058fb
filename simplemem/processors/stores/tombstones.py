"""The tombstone set: which messages (or whole tenants) were forgotten, and the deletion records.

Ingestion consults it before a turn reaches a window, so replaying the turns or scrubbed topics (or
re-ingesting a file) cannot bring a forgotten message back. It lives where every writer of a
deployment looks: a SQLite file in the embedded store (next to the memory it guards), Redis in
services mode (shared by the workers, the query service and the CLI). The ``deletions`` topic keeps
every request as well, so ``replay`` into a new store rebuilds the set from it first.

Only ids and times are kept (message ids, tenant ids, who asked, when): no content.

A whole tenant is forgotten up to the time of the request: its turns stamped at or before that time
are not accepted again; turns stamped later (the tenant starting over) are.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import orjson

from simplemem.processors.stores.private import private_file
from simplemem.processors.stores.redis_keys import RedisKeys
from simplemem.processors.stores.retry import StoreRetry
from simplemem.schemas.stream import DeletionRecord, DeletionRequest

TOMBSTONE_FILE = "forgotten.sqlite"  # in an embedded store folder


class Tombstones(Protocol):
    def add(self, request: DeletionRequest) -> None:
        """Remember what ``request`` forgets (before any store is touched)."""
        ...

    def forgotten(self, tenant_id: str, messages: Sequence[tuple[str, datetime]]) -> set[str]:
        """The ids among ``messages`` (message id, its time) that were forgotten."""
        ...

    def record(self, record: DeletionRecord) -> None: ...

    def records(self, tenant_id: str) -> list[DeletionRecord]: ...

    def close(self) -> None: ...


def _forgotten(
    messages: Sequence[tuple[str, datetime]], ids: set[str], tenant_until: datetime | None
) -> set[str]:
    return {mid for mid, ts in messages if mid in ids or (tenant_until is not None and ts <= tenant_until)}


_SCHEMA = """
CREATE TABLE IF NOT EXISTS forgotten_messages (
    tenant_id TEXT NOT NULL, message_id TEXT NOT NULL, PRIMARY KEY (tenant_id, message_id)
);
CREATE TABLE IF NOT EXISTS forgotten_tenants (tenant_id TEXT PRIMARY KEY, until REAL NOT NULL);
CREATE TABLE IF NOT EXISTS deletions (tenant_id TEXT NOT NULL, completed_at REAL NOT NULL, record BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS deletions_by_tenant ON deletions (tenant_id, completed_at);
"""


class SqliteTombstones:
    """Embedded mode: a SQLite file in the store folder."""

    def __init__(self, path: Path) -> None:
        private_file(path)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def add(self, request: DeletionRequest) -> None:
        with self._lock:
            if request.whole_tenant:
                self._db.execute(
                    "INSERT INTO forgotten_tenants VALUES (?, ?) ON CONFLICT(tenant_id) "
                    "DO UPDATE SET until = max(until, excluded.until)",
                    (request.tenant_id, request.requested_at.timestamp()),
                )
            self._db.executemany(
                "INSERT OR IGNORE INTO forgotten_messages VALUES (?, ?)",
                [(request.tenant_id, mid) for mid in request.message_ids],
            )

    def forgotten(self, tenant_id: str, messages: Sequence[tuple[str, datetime]]) -> set[str]:
        if not messages:
            return set()
        ids = sorted({mid for mid, _ in messages})
        with self._lock:
            row = self._db.execute(
                "SELECT until FROM forgotten_tenants WHERE tenant_id=?", (tenant_id,)
            ).fetchone()
            found: set[str] = set()
            for start in range(0, len(ids), 500):  # SQLite's variable limit
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                found.update(
                    r[0]
                    for r in self._db.execute(
                        f"SELECT message_id FROM forgotten_messages WHERE tenant_id=? AND message_id IN ({marks})",
                        [tenant_id, *part],
                    )
                )
        until = datetime.fromtimestamp(row[0], UTC) if row else None
        return _forgotten(messages, found, until)

    def record(self, record: DeletionRecord) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO deletions VALUES (?, ?, ?)",
                (
                    record.request.tenant_id,
                    record.completed_at.timestamp(),
                    orjson.dumps(record.model_dump(mode="json")),
                ),
            )

    def records(self, tenant_id: str) -> list[DeletionRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT record FROM deletions WHERE tenant_id=? ORDER BY completed_at", (tenant_id,)
            ).fetchall()
        return [DeletionRecord.model_validate(orjson.loads(r[0])) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class RedisTombstones:
    """Services mode: per tenant a set of forgotten message ids and a list of deletion records (keys:
    simplemem/processors/stores/redis_keys.py), and one sorted set of whole-tenant
    cut-off times. No TTL. Redis may run without persistence: workers re-add every request of the
    ``deletions`` topic at start (:func:`simplemem.streams.deletions.seed_tombstones`)."""

    def __init__(self, url: str, prefix: str) -> None:
        import redis

        self.r = redis.Redis.from_url(url)
        self.keys = RedisKeys(prefix)
        self._tenants = self.keys.forgotten_tenants()

    def add(self, request: DeletionRequest) -> None:
        pipe = self.r.pipeline(transaction=False)
        if request.whole_tenant:  # the latest cut-off wins (GT): a later request covers an earlier one
            pipe.zadd(self._tenants, {request.tenant_id: request.requested_at.timestamp()}, gt=True)
        if request.message_ids:
            pipe.sadd(self.keys.forgotten_messages(request.tenant_id), *request.message_ids)
        pipe.execute()

    def forgotten(self, tenant_id: str, messages: Sequence[tuple[str, datetime]]) -> set[str]:
        if not messages:
            return set()
        ids = [mid for mid, _ in messages]
        pipe = self.r.pipeline(transaction=False)
        pipe.zscore(self._tenants, tenant_id)
        pipe.smismember(self.keys.forgotten_messages(tenant_id), ids)
        until_ts, member = pipe.execute()
        found = {mid for mid, hit in zip(ids, member, strict=True) if hit}
        until = datetime.fromtimestamp(float(until_ts), UTC) if until_ts is not None else None
        return _forgotten(messages, found, until)

    def record(self, record: DeletionRecord) -> None:
        self.r.rpush(
            self.keys.deletion_records(record.request.tenant_id), orjson.dumps(record.model_dump(mode="json"))
        )

    def records(self, tenant_id: str) -> list[DeletionRecord]:
        rows = self.r.lrange(self.keys.deletion_records(tenant_id), 0, -1)
        return [DeletionRecord.model_validate(orjson.loads(raw)) for raw in rows]

    def close(self) -> None:
        self.r.close()


def forgotten_among(
    tombstones: Tombstones, messages: Iterable[tuple[str, str, datetime]]
) -> set[tuple[str, str]]:
    """The (tenant, message id) among ``messages`` (tenant, message id, time) that were forgotten:
    one look-up per tenant."""
    by_tenant: dict[str, list[tuple[str, datetime]]] = {}
    for tenant, mid, ts in messages:
        by_tenant.setdefault(tenant, []).append((mid, ts))
    return {(t, mid) for t, items in by_tenant.items() for mid in tombstones.forgotten(t, items)}


class RetriedTombstones:
    """A tombstone set read and written through a store retry (streams: a Redis outage is waited
    out like any store write, so turns are never judged without their tombstones)."""

    def __init__(self, inner: Tombstones, retry: StoreRetry) -> None:
        self.inner = inner
        self.retry = retry

    def add(self, request: DeletionRequest) -> None:
        self.retry(lambda: self.inner.add(request))

    def forgotten(self, tenant_id: str, messages: Sequence[tuple[str, datetime]]) -> set[str]:
        return self.retry(lambda: self.inner.forgotten(tenant_id, messages))

    def record(self, record: DeletionRecord) -> None:
        self.retry(lambda: self.inner.record(record))

    def records(self, tenant_id: str) -> list[DeletionRecord]:
        return self.retry(lambda: self.inner.records(tenant_id))

    def close(self) -> None:
        self.inner.close()
