"""The embedded vector store: each unit's vector in a SQLite file, searched exactly, one tenant at a time.

A search scores the tenant's rows that pass the filter (the constraints the Milvus expression carries)
with one matrix product, over arrays kept in memory until the tenant's next write: its cost follows
the tenant's memory, not the store's (Milvus Lite, the embedded store before, scanned every row of its
file for each search, whatever the tenant). An embedded store is one process's: no other writer to
miss. Vectors are stored as int8, each scaled by its largest component (a byte a dimension, half of
float16, for a direction kept to about four decimals of cosine), and scored in float32 after
normalising. Rows written as float16 before are told by their length and read as such. A row holds its
tenant's number and its id's bytes (:mod:`sqlite_keys`). The service mode keeps Milvus, which scales
across machines.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from simplemem.processors.stores.file_format import open_format
from simplemem.processors.stores.private import private_file
from simplemem.processors.stores.protocols import Hit, SymbolicFilter, day_range, search_status
from simplemem.processors.stores.sqlite_keys import (
    PAGE_SIZE,
    TENANTS_TABLE,
    TenantNumbers,
    null_if,
    unit_id,
    unit_key,
)
from simplemem.processors.stores.time_columns import within_time
from simplemem.schemas.memory import MemoryUnit

STORED = np.int8
OLDER = np.float16  # rows written before int8: twice the bytes of a dimension
CACHE_ROWS = 250_000  # rows kept in memory as arrays: about 390 MB of 384-d float32 vectors

FORMAT_VERSION = 2  # the file format this code reads and writes (``PRAGMA user_version``)
# Keyed by tenant then id: the key is the one index (a tenant's rows are found by its range), and an
# id another tenant also has is another row. A rowid table: rows arrive in no key order, and a table
# that is its own index (``WITHOUT ROWID``) leaves its pages emptier.
# An active status and a one-day span's end are NULL, no byte (as in the lexical file).
_VECTORS = """CREATE TABLE IF NOT EXISTS vectors (
    tenant_id INTEGER NOT NULL, id BLOB NOT NULL, status TEXT, event_start INTEGER NOT NULL,
    event_end INTEGER, stated_at REAL NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (tenant_id, id)
)"""
_COLUMNS = "(tenant_id, id, status, event_start, event_end, stated_at, vec)"


def encoded(vector: npt.ArrayLike) -> bytes:
    """A vector as stored: int8, scaled so that its largest component is 127 (its length is restored
    by normalising when it is read)."""
    v = np.asarray(vector, dtype=np.float32)
    peak = float(np.abs(v).max()) if v.size else 0.0
    return np.round(v * (127.0 / peak) if peak else v).astype(STORED).tobytes()


def decoded(blobs: Sequence[bytes], dim: int) -> npt.NDArray[np.float32]:
    """Stored vectors as unit-length float32 rows, int8 or (written before it) float16 alike."""
    if all(len(blob) == dim for blob in blobs):  # one conversion for the lot (no float16 rows)
        matrix = np.frombuffer(b"".join(blobs), dtype=STORED).reshape(len(blobs), dim).astype(np.float32)
    else:
        matrix = np.empty((len(blobs), dim), dtype=np.float32)
        for i, blob in enumerate(blobs):
            matrix[i] = np.frombuffer(blob, dtype=OLDER if len(blob) == 2 * dim else STORED)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return matrix


@dataclass(frozen=True)
class TenantRows:
    """One tenant's rows, columns as arrays; vectors unit length (float32: no conversion per search)."""

    ids: list[str]
    # the rows of each value of the status field (:func:`search_status`: a derived line's kind, else
    # the unit's status)
    by_status: dict[str, npt.NDArray[np.intp]]
    event_start: npt.NDArray[np.int64]
    event_end: npt.NDArray[np.int64]
    stated_at: npt.NDArray[np.float64]
    matrix: npt.NDArray[np.float32]

    @classmethod
    def of(cls, rows: Sequence[tuple[Any, ...]], dim: int) -> TenantRows:
        """The rows grouped by status (in their order within each): a search of one status (a layer)
        scores its block of the matrix in place, not a copy of its rows."""
        status = np.array([r[1] for r in rows], dtype=np.str_)
        order = np.argsort(status, kind="stable")
        rows = [rows[i] for i in order]
        status = status[order]
        matrix = decoded([r[5] for r in rows], dim)
        return cls(
            ids=[unit_id(r[0]) for r in rows],
            by_status={str(s): np.flatnonzero(status == s) for s in np.unique(status)},
            event_start=np.array([r[2] for r in rows], dtype=np.int64),
            event_end=np.array([r[3] for r in rows], dtype=np.int64),
            stated_at=np.array([r[4] for r in rows], dtype=np.float64),
            matrix=matrix,
        )

    @cached_property
    def row_of(self) -> dict[str, int]:
        """Each id's row (built at the first read by id)."""
        return {uid: i for i, uid in enumerate(self.ids)}

    def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The vectors of those of ``ids`` that are rows here (copies: the matrix is searched)."""
        found = [uid for uid in dict.fromkeys(ids) if uid in self.row_of]
        return dict(zip(found, self.matrix[[self.row_of[uid] for uid in found]], strict=True))

    def passing(self, flt: SymbolicFilter) -> npt.NDArray[np.intp]:
        """The rows that meet the filter's status, event-time and stated-time constraints, in row
        order. A status picks its rows by :attr:`by_status` (the derived lines are a few percent of a
        long history: a search of them touches only theirs)."""
        parts = [self.by_status[s] for s in flt.statuses() if s in self.by_status]
        if not parts:
            return np.empty(0, dtype=np.intp)
        rows = parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))
        if flt.first_day is None and flt.stated_before is None:
            return rows  # no time constraint: the status blocks as they are
        return rows[within_time(flt, self.event_start[rows], self.event_end[rows], self.stated_at[rows])]


class SqliteVectorStore:
    def __init__(self, path: Path, dim: int, cache_rows: int = CACHE_ROWS) -> None:
        private_file(path)
        self.dim = dim
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA secure_delete=ON")  # a forgotten unit's vector is zeroed on disk
        open_format(self._db, path, FORMAT_VERSION, f"{TENANTS_TABLE};\n{_VECTORS}")
        self._tenants = TenantNumbers(self._db)
        self._lock = threading.Lock()
        self.cache_rows = cache_rows
        self._cache: dict[str, TenantRows] = {}  # oldest first
        self._cached_rows = 0  # the rows in ``_cache``, kept as it changes (a search must not sum them)

    def _number(self, tenant_id: str) -> int:
        with self._lock:
            return self._tenants.number(tenant_id)

    def upsert(self, units: Sequence[MemoryUnit], vectors: npt.NDArray[np.float32]) -> None:
        rows = []
        for unit, vec in zip(units, vectors, strict=True):
            start, end = day_range(unit)
            stated = datetime.fromisoformat(unit.stated_at).timestamp()
            blob = encoded(vec)
            rows.append((unit.id, unit.tenant_id, search_status(unit), start, end, stated, blob))
        self._put(rows)

    def _put(self, rows: Sequence[tuple[object, ...]]) -> None:
        """Write rows of (id, tenant, status, event_start, event_end, stated_at, vector)."""
        with self._lock:
            tenants = {name: self._tenants.number(name, create=True) for name in {str(r[1]) for r in rows}}
            self._db.executemany(
                f"INSERT OR REPLACE INTO vectors {_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        tenants[str(r[1])],
                        unit_key(str(r[0])),
                        null_if(r[2], "active"),
                        r[3],
                        null_if(r[4], r[3]),
                        *r[5:],
                    )
                    for r in rows
                ],
            )
            for tenant in tenants:
                self._uncache(tenant)

    def search(
        self, tenant_id: str, vector: npt.NDArray[np.float32], limit: int, flt: SymbolicFilter
    ) -> list[Hit]:
        with self._lock:
            rows = self._tenant_rows(tenant_id)
        keep = rows.passing(flt)
        if limit <= 0 or not keep.size:
            return []
        query = np.asarray(vector, dtype=np.float32)
        query = query / max(float(np.linalg.norm(query)), 1e-12)
        # cosine, as Milvus's COSINE metric, over the span of the rows kept (a status's rows are one
        # block: :meth:`TenantRows.of`), scored in place
        first = int(keep[0])
        scores = (rows.matrix[first : int(keep[-1]) + 1] @ query)[keep - first]
        best = best_first(scores, limit)
        ids = rows.ids  # the hits' rows and scores as Python numbers at once, not one array item each
        return [
            Hit(ids[row], score)
            for row, score in zip(keep[best].tolist(), scores[best].tolist(), strict=True)
        ]

    def _tenant_rows(self, tenant_id: str) -> TenantRows:
        """The tenant's rows as arrays (read once, kept until the tenant's next write; the least
        recently searched tenants leave first beyond ``cache_rows``). Call with the lock held."""
        rows = self._uncache(tenant_id)
        if rows is None:
            found = self._db.execute(
                "SELECT id, COALESCE(status, 'active'), event_start, COALESCE(event_end, event_start), "
                "stated_at, vec FROM vectors WHERE tenant_id = ?",
                (self._tenants.number(tenant_id),),
            ).fetchall()
            rows = TenantRows.of(found, self.dim)
        self._cache[tenant_id] = rows  # now the most recent
        self._cached_rows += len(rows.ids)
        while self._cached_rows > self.cache_rows and len(self._cache) > 1:
            self._uncache(next(iter(self._cache)))
        return rows

    def _uncache(self, tenant_id: str) -> TenantRows | None:
        """Drop the tenant's arrays (its next search reads them again). Call with the lock held."""
        rows = self._cache.pop(tenant_id, None)
        if rows is not None:
            self._cached_rows -= len(rows.ids)
        return rows

    def delete(self, tenant_id: str, ids: Sequence[str]) -> None:
        with self._lock:
            number = self._tenants.number(tenant_id)
            self._db.executemany(
                "DELETE FROM vectors WHERE tenant_id = ? AND id = ?", [(number, unit_key(i)) for i in ids]
            )
            self._uncache(tenant_id)

    def vectors(self, tenant_id: str, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """By id; from the tenant's arrays when a search has read them (the derived lines' pool is
        read right after their search), else from the file."""
        if not ids:
            return {}
        with self._lock:
            cached = self._cache.get(tenant_id)
        if cached is not None:
            return cached.vectors(ids)
        marks = ",".join("?" * len(ids))
        number = self._number(tenant_id)
        with self._lock:
            rows = self._db.execute(
                f"SELECT id, vec FROM vectors WHERE tenant_id = ? AND id IN ({marks})",
                [number, *map(unit_key, ids)],
            ).fetchall()
        found = [unit_id(key) for key, _ in rows]
        return dict(zip(found, decoded([blob for _, blob in rows], self.dim), strict=True))

    def delete_tenant(self, tenant_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM vectors WHERE tenant_id = ?", (self._tenants.number(tenant_id),))
            self._uncache(tenant_id)

    def expunge(self) -> None:
        """Deleted rows are zeroed (``secure_delete``); move the WAL, which may still hold them, in."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def count(self, tenant_id: str) -> int:
        number = self._number(tenant_id)
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM vectors WHERE tenant_id = ?", (number,)).fetchone()
        return int(row[0])

    def ids(self, tenant_id: str, batch: int) -> Iterator[list[str]]:
        number = self._number(tenant_id)
        last: bytes | str = ""  # text sorts before blobs: a caller's ids come first, then the rest
        while True:
            with self._lock:
                rows = self._db.execute(
                    "SELECT id FROM vectors WHERE tenant_id = ? AND id > ? ORDER BY id LIMIT ?",
                    (number, last, batch),
                ).fetchall()
            if not rows:
                return
            yield [unit_id(r[0]) for r in rows]
            last = rows[-1][0]

    def flush(self) -> None:
        """Every write is committed when it returns."""

    def close(self) -> None:
        with self._lock:
            self._db.close()


def best_first(scores: npt.NDArray[np.floating[Any]], limit: int) -> npt.NDArray[np.intp]:
    """The positions of the ``limit`` highest scores, highest first, ties in position order (as a
    stable sort of all of them, without sorting all of them)."""
    if limit >= scores.size:
        return np.argsort(-scores, kind="stable")
    kth = np.partition(scores, scores.size - limit)[scores.size - limit]
    tied_or_above = np.flatnonzero(scores >= kth)
    return tied_or_above[np.argsort(-scores[tied_or_above], kind="stable")][:limit]
