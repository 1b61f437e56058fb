"""Per-tenant ingestion accounting: turns accepted, their outcomes (indexed, filtered, failed), those
with PII scrubbed, and time to memory, kept where every process of a deployment writes and reads
the same numbers: a SQLite file in the embedded store, Redis in services mode (the workers count,
the query service reads).

Time to memory runs from a turn's arrival (the query service accepted it; a turn published to the
topic by another producer: a worker scrubbed it) to its memory indexed. Arrival times wait in the ledger until their
turn is decided (a day at most); the decided times go into a fixed histogram per tenant (buckets
growing by ``TTM_RATIO``), so a tenant costs a bounded number of counters however much it sends, and
a percentile is read as its bucket's upper bound (at most ``TTM_RATIO`` above the true value).

Only counts, message ids and times are kept: no content.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from simplemem.processors.stores.private import private_file
from simplemem.processors.stores.redis_keys import RedisKeys
from simplemem.schemas.accounting import MessageOutcome, Outcome
from simplemem.schemas.browse import IngestionActivity, TimeToMemory

ACTIVITY_FILE = "activity.sqlite"  # in an embedded store folder
TTM_FIRST = 0.01  # seconds: the first bucket's upper bound
TTM_RATIO = 1.2  # each bucket's bound over the one before
TTM_BUCKETS = 90  # 0.01 s to about 31 hours; slower ones count in the last
ARRIVAL_TTL_SECONDS = 86_400  # an arrival never decided (its turn forgotten in flight, a lost worker) goes
ACCEPTED, PII = "accepted", "pii_scrubbed"
_TTM = "ttm:"


class Arrival(NamedTuple):
    """A turn the pipeline took in: its tenant, its message, whether PII was scrubbed from it, when."""

    tenant_id: str
    message_id: str
    pii: bool
    at: float


def ttm_bucket(seconds: float) -> int:
    """The histogram bucket of a time to memory (the first whose bound is at least ``seconds``)."""
    if seconds <= TTM_FIRST:
        return 0
    return min(TTM_BUCKETS - 1, math.ceil(math.log(seconds / TTM_FIRST, TTM_RATIO) - 1e-9))


def ttm_bound(bucket: int) -> float:
    return TTM_FIRST * TTM_RATIO**bucket


def percentile(buckets: Mapping[int, int], q: float) -> float | None:
    """The ``q`` quantile (0-1) of a histogram, as the upper bound of the bucket it falls in."""
    total = sum(buckets.values())
    if not total:
        return None
    rank, seen = q * total, 0
    for bucket in sorted(buckets):
        seen += buckets[bucket]
        if seen >= rank:
            return round(ttm_bound(bucket), 3)
    return round(ttm_bound(max(buckets)), 3)


def activity_of(tenant_id: str, counts: Mapping[str, int]) -> IngestionActivity:
    """A tenant's stored counters (``accepted``, the outcomes, ``pii_scrubbed``, ``ttm:<bucket>``) as
    its accounting."""
    buckets = {int(k[len(_TTM) :]): v for k, v in counts.items() if k.startswith(_TTM) and v > 0}
    decided = sum(counts.get(o.value, 0) for o in Outcome)
    accepted = counts.get(ACCEPTED, 0)
    return IngestionActivity(
        tenant_id=tenant_id,
        accepted=accepted,
        indexed=counts.get(Outcome.INDEXED.value, 0),
        filtered=counts.get(Outcome.FILTERED.value, 0),
        failed=counts.get(Outcome.FAILED.value, 0),
        pii_scrubbed=counts.get(PII, 0),
        undecided=max(0, accepted - decided),
        time_to_memory=TimeToMemory(
            memories=sum(buckets.values()),
            p50_seconds=percentile(buckets, 0.50),
            p95_seconds=percentile(buckets, 0.95),
        ),
    )


def took_counts(arrivals: Iterable[Arrival]) -> dict[str, Counter[str]]:
    """The counters a batch of arrivals adds, per tenant."""
    added: dict[str, Counter[str]] = {}
    for a in arrivals:
        mine = added.setdefault(a.tenant_id, Counter())
        mine[ACCEPTED] += 1
        mine[PII] += int(a.pii)
    return added


def decided_counts(
    outcomes: Iterable[MessageOutcome], arrived: Mapping[tuple[str, str], float], at: float
) -> dict[str, Counter[str]]:
    """The counters a batch of outcomes adds, per tenant: each outcome, and for an indexed turn whose
    arrival is known its time to memory."""
    added: dict[str, Counter[str]] = {}
    for o in outcomes:
        mine = added.setdefault(o.tenant_id, Counter())
        mine[o.outcome.value] += 1
        since = arrived.get((o.tenant_id, o.message_id))
        if o.outcome == Outcome.INDEXED and since is not None:
            mine[f"{_TTM}{ttm_bucket(max(0.0, at - since))}"] += 1
    return added


class ActivityLedger(Protocol):
    def arrived(self, tenant_id: str, message_ids: Sequence[str], at: float) -> None:
        """Keep the time the service accepted these turns (before their analysis), counting nothing:
        :meth:`took` counts them once the pipeline takes them in."""
        ...

    def took(self, arrivals: Sequence[Arrival]) -> None:
        """Count turns accepted into the pipeline and keep their arrival times (an earlier one,
        from :meth:`arrived`, stays)."""
        ...

    def decided(self, outcomes: Sequence[MessageOutcome], at: float) -> None:
        """Count the outcomes of turns decided at ``at`` (and an indexed turn's time to memory)."""
        ...

    def read(self, tenant_id: str) -> IngestionActivity: ...

    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS counts (
    tenant_id TEXT NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY (tenant_id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS arrivals (
    tenant_id TEXT NOT NULL, message_id TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (tenant_id, message_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS arrivals_by_time ON arrivals (at);
"""


class SqliteActivity:
    """Embedded mode: a SQLite file in the store folder (the store's one process writes it)."""

    def __init__(self, path: Path) -> None:
        private_file(path)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def _add(self, added: dict[str, Counter[str]]) -> None:
        self._db.executemany(
            "INSERT INTO counts VALUES (?,?,?) ON CONFLICT (tenant_id, name) DO UPDATE "
            "SET value = value + excluded.value",
            [(t, name, n) for t, c in added.items() for name, n in c.items() if n],
        )

    def arrived(self, tenant_id: str, message_ids: Sequence[str], at: float) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR IGNORE INTO arrivals VALUES (?,?,?)", [(tenant_id, m, at) for m in message_ids]
            )

    def took(self, arrivals: Sequence[Arrival]) -> None:
        if not arrivals:
            return
        with self._lock:
            self._db.execute("BEGIN")
            self._add(took_counts(arrivals))
            self._db.executemany(
                "INSERT OR IGNORE INTO arrivals VALUES (?,?,?)",
                [(a.tenant_id, a.message_id, a.at) for a in arrivals],
            )
            self._db.execute("DELETE FROM arrivals WHERE at < ?", (time.time() - ARRIVAL_TTL_SECONDS,))
            self._db.execute("COMMIT")

    def decided(self, outcomes: Sequence[MessageOutcome], at: float) -> None:
        if not outcomes:
            return
        keys = [(o.tenant_id, o.message_id) for o in outcomes]
        with self._lock:
            self._db.execute("BEGIN")
            arrived: dict[tuple[str, str], float] = {}
            for tenant, message in keys:
                row = self._db.execute(
                    "DELETE FROM arrivals WHERE tenant_id=? AND message_id=? RETURNING at", (tenant, message)
                ).fetchone()
                if row is not None:
                    arrived[(tenant, message)] = float(row[0])
            self._add(decided_counts(outcomes, arrived, at))
            self._db.execute("COMMIT")

    def read(self, tenant_id: str) -> IngestionActivity:
        with self._lock:
            rows = self._db.execute("SELECT name, value FROM counts WHERE tenant_id=?", (tenant_id,))
            return activity_of(tenant_id, dict(rows.fetchall()))

    def close(self) -> None:
        with self._lock:
            self._db.close()


class RedisActivity:
    """Services mode: per tenant a hash of counters and a sorted set of arrival times (keys:
    simplemem/processors/stores/redis_keys.py), written by the workers, read by the query service."""

    def __init__(self, url: str, prefix: str) -> None:
        import redis

        self.r = redis.Redis.from_url(url)
        self.keys = RedisKeys(prefix)

    def _add(self, pipe: object, added: dict[str, Counter[str]]) -> None:
        for tenant, counts in added.items():
            for name, n in counts.items():
                if n:
                    pipe.hincrby(self.keys.activity(tenant), name, n)  # type: ignore[attr-defined]

    def _keep_arrivals(self, pipe: object, arrivals: Iterable[Arrival]) -> None:
        """Each turn's arrival time unless it has one (ZADD NX); those older than a day go (never
        decided), and an idle tenant's whole set a day after its last write."""
        keys = set()
        for a in arrivals:
            key = self.keys.activity_arrivals(a.tenant_id)
            pipe.zadd(key, {a.message_id: a.at}, nx=True)  # type: ignore[attr-defined]
            keys.add(key)
        for key in keys:
            pipe.zremrangebyscore(key, "-inf", time.time() - ARRIVAL_TTL_SECONDS)  # type: ignore[attr-defined]
            pipe.expire(key, ARRIVAL_TTL_SECONDS)  # type: ignore[attr-defined]

    def arrived(self, tenant_id: str, message_ids: Sequence[str], at: float) -> None:
        pipe = self.r.pipeline(transaction=False)
        self._keep_arrivals(pipe, (Arrival(tenant_id, m, False, at) for m in message_ids))
        pipe.execute()

    def took(self, arrivals: Sequence[Arrival]) -> None:
        if not arrivals:
            return
        pipe = self.r.pipeline(transaction=False)
        self._add(pipe, took_counts(arrivals))
        self._keep_arrivals(pipe, arrivals)
        pipe.execute()

    def decided(self, outcomes: Sequence[MessageOutcome], at: float) -> None:
        if not outcomes:
            return
        by_tenant: dict[str, list[str]] = {}
        for o in outcomes:
            by_tenant.setdefault(o.tenant_id, []).append(o.message_id)
        pipe = self.r.pipeline(transaction=False)
        for tenant, ids in by_tenant.items():
            pipe.zmscore(self.keys.activity_arrivals(tenant), ids)
        found = pipe.execute()
        arrived = {
            (tenant, mid): float(t)
            for (tenant, ids), times in zip(by_tenant.items(), found, strict=True)
            for mid, t in zip(ids, times, strict=True)
            if t is not None
        }
        pipe = self.r.pipeline(transaction=False)
        for tenant, ids in by_tenant.items():
            pipe.zrem(self.keys.activity_arrivals(tenant), *ids)
        self._add(pipe, decided_counts(outcomes, arrived, at))
        pipe.execute()

    def read(self, tenant_id: str) -> IngestionActivity:
        raw: dict[bytes, bytes] = self.r.hgetall(self.keys.activity(tenant_id))  # type: ignore[assignment]
        return activity_of(tenant_id, {k.decode(): int(v) for k, v in raw.items()})

    def close(self) -> None:
        self.r.close()
