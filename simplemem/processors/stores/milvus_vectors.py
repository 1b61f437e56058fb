"""Vector store on pymilvus ``MilvusClient``: a Milvus Lite file in embedded mode, a server by URI.

The tenant is the collection's partition key and every search and delete carries a tenant filter.
Time and status constraints are pushed into the Milvus filter expression; the name filter is applied
by the retriever on the fused candidates (Milvus Lite evaluates array filters slowly).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from functools import partial
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from pymilvus import DataType, MilvusClient, MilvusException
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_fixed

from simplemem.processors.stores.protocols import Hit, SymbolicFilter, day_range, search_status
from simplemem.schemas.keys import MAX_ID_CHARS
from simplemem.schemas.memory import MEMORY_ID_CHARS, MemoryKind, MemoryStatus, MemoryUnit

log = logging.getLogger(__name__)
T = TypeVar("T")


# HNSW graph degree and build-time beam: Milvus's documented middle ground for 384-d vectors at
# 10^4..10^6 rows per partition (recall above 0.98 at a few ms per filtered search here).
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 200
# A collection another process made is loadable once that process has created its index: a moment.
INDEX_WAIT_SECONDS, INDEX_POLL_SECONDS = 60.0, 0.5


# Why a load fails for a moment: a collection another process (a second worker, a query replica
# started at the same moment) has just made has no index yet ("index not found"; a worker that gave up
# there exited at its first start); a restarted Milvus has dropped its old query node and its new one
# has not joined yet, though its health check already answers ("nodes not enough"; the first test to
# open a store after the suite's services started failed so).
LOAD_WAITS_FOR = ("index not found", "nodes not enough")


def load_may_succeed_later(exc: BaseException) -> bool:
    return any(reason in str(exc) for reason in LOAD_WAITS_FOR)


def _lit(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class MilvusVectorStore:
    def __init__(
        self,
        uri: str,
        collection: str,
        dim: int,
        *,
        index_type: str = "AUTOINDEX",
        flush_seconds: float = 60.0,
        partitions: int = 64,
    ) -> None:
        self.client = MilvusClient(uri)
        self.flush_seconds = flush_seconds
        self.server = uri.startswith(("http://", "https://", "tcp://"))  # else a Milvus Lite file
        self.collection = collection
        self.dim = dim
        # Milvus Lite (an embedded local server behind one file) takes one call at a time; a server's
        # gRPC client is safe to share, and serialising there made every query replica one search
        # at a time. ``_dirty`` only decides whether a flush is worth doing: a lost update is harmless.
        self._lock: AbstractContextManager[object] = (
            contextlib.nullcontext() if self.server else threading.Lock()
        )
        self._dirty = False
        if not self.client.has_collection(collection):
            try:
                self._create(index_type, partitions)
            except MilvusException:
                if not self.client.has_collection(collection):  # else: another worker won the race
                    raise
        self._load_once_indexed()

    def _load_once_indexed(self) -> None:
        """Load the collection, waiting (within ``INDEX_WAIT_SECONDS``) while it cannot be loaded
        yet: :func:`load_may_succeed_later`."""
        for attempt in Retrying(
            retry=retry_if_exception(load_may_succeed_later),
            stop=stop_after_delay(INDEX_WAIT_SECONDS),
            wait=wait_fixed(INDEX_POLL_SECONDS),
            reraise=True,
        ):
            with attempt:
                self.client.load_collection(self.collection)

    def _create(self, index_type: str, partitions: int) -> None:
        schema = MilvusClient.create_schema(
            auto_id=False, enable_dynamic_field=False, partition_key_field="tenant_id"
        )
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=MEMORY_ID_CHARS)
        schema.add_field("tenant_id", DataType.VARCHAR, max_length=MAX_ID_CHARS)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
        schema.add_field(
            "status", DataType.VARCHAR, max_length=max(len(s.value) for s in (*MemoryStatus, *MemoryKind))
        )
        schema.add_field("event_start", DataType.INT64)
        schema.add_field("event_end", DataType.INT64)
        schema.add_field("stated_at", DataType.DOUBLE)
        params = self.client.prepare_index_params()
        extra = {"M": HNSW_M, "efConstruction": HNSW_EF_CONSTRUCTION} if index_type == "HNSW" else {}
        params.add_index("vector", metric_type="COSINE", index_type=index_type, params=extra)
        self.client.create_collection(
            self.collection, schema=schema, index_params=params, num_partitions=partitions
        )

    def upsert(self, units: Sequence[MemoryUnit], vectors: npt.NDArray[np.float32]) -> None:
        if not units:
            return
        rows = []
        for unit, vec in zip(units, vectors, strict=True):
            start, end = day_range(unit)
            rows.append(
                {
                    "id": unit.id,
                    "tenant_id": unit.tenant_id,
                    "vector": np.asarray(vec, dtype=np.float32).tolist(),
                    "status": search_status(unit),
                    "event_start": start,
                    "event_end": end,
                    "stated_at": datetime.fromisoformat(unit.stated_at).timestamp(),
                }
            )
        # Delete-then-insert rather than upsert: against a Milvus 2.3 server, upsert into a collection
        # with a partition key reports success and stores nothing. Ids are deterministic, so a replay
        # rewrites the same rows: idempotent either way. The delete is by primary key alone: Milvus
        # applies it directly, where an expression that also names the tenant costs a strongly
        # consistent query first, far slower on the server. It stays tenant-scoped: a
        # unit's id is a hash that includes its tenant id (simplemem.schemas.memory.memory_id).
        with self._lock:
            self._loaded(lambda: self.client.delete(self.collection, ids=[unit.id for unit in units]))
            self._loaded(lambda: self.client.insert(self.collection, rows))
            self._dirty = True

    def _loaded(self, call: Callable[[], T]) -> T:
        """``call``, loading the collection first if the server says it is not loaded: a Milvus server
        that restarted does not always load its collections again, and every read and write then
        fails ("collection not loaded") until someone does; retries alone would wait forever."""
        try:
            return call()
        except MilvusException as exc:
            if "not loaded" not in str(exc):
                raise
            log.warning("collection %s not loaded (server restarted?): loading it", self.collection)
            self.client.load_collection(self.collection)
            return call()

    def flush(self) -> None:
        """Seal written data: Milvus Lite searches flushed segments much faster than growing ones, and
        a server's next read sees every row sealed before it.

        Bounded by ``flush_seconds``: a server that restarted can leave a flush unfinished for good
        (pymilvus then polls forever), and that held a worker's memorize thread. The rows are durable
        once inserted, so past the bound the writer goes on and the next flush tries again."""
        with self._lock:
            if not self._dirty:
                return
            start = time.monotonic()
            try:
                self.client.flush(self.collection, timeout=self.flush_seconds)
            except MilvusException as exc:
                if time.monotonic() - start < self.flush_seconds:
                    raise  # refused or unreachable: the caller's retry decides
                log.warning(
                    "flush of %s not done in %.0f s; going on: %s", self.collection, self.flush_seconds, exc
                )
                return
            self._dirty = False

    def search(
        self, tenant_id: str, vector: npt.NDArray[np.float32], limit: int, flt: SymbolicFilter
    ) -> list[Hit]:
        expr = [f"tenant_id == {_lit(tenant_id)}"]
        expr.append(f"status in {list(flt.statuses())!r}".replace("'", '"'))
        if flt.first_day is not None and flt.last_day is not None:
            event = f"event_end >= {flt.first_day.toordinal()} and event_start <= {flt.last_day.toordinal()}"
            if flt.or_stated:
                start, end = flt.stated_bounds()
                event = f"(({event}) or (stated_at >= {start} and stated_at < {end}))"
            expr.append(event)
        if flt.stated_before is not None:
            expr.append(f"stated_at <= {flt.stated_before.timestamp()}")
        with self._lock:
            result = self._loaded(
                lambda: self.client.search(
                    self.collection,
                    data=[np.asarray(vector, dtype=np.float32).tolist()],
                    limit=limit,
                    filter=" and ".join(expr),
                    output_fields=["id"],
                )
            )
        return [Hit(str(r["id"]), float(r["distance"])) for r in result[0]]

    def delete(self, tenant_id: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        id_list = ",".join(_lit(i) for i in ids)
        flt = f"tenant_id == {_lit(tenant_id)} and id in [{id_list}]"
        with self._lock:
            self._loaded(lambda: self.client.delete(self.collection, filter=flt))
            self._dirty = True

    def vectors(self, tenant_id: str, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        if not ids:
            return {}
        id_list = ",".join(_lit(i) for i in ids)
        with self._lock:
            rows = self._loaded(
                lambda: self.client.query(
                    self.collection,
                    filter=f"tenant_id == {_lit(tenant_id)} and id in [{id_list}]",
                    output_fields=["id", "vector"],
                )
            )
        return {str(r["id"]): np.asarray(r["vector"], dtype=np.float32) for r in rows}

    def delete_tenant(self, tenant_id: str) -> None:
        with self._lock:
            self._loaded(
                lambda: self.client.delete(self.collection, filter=f"tenant_id == {_lit(tenant_id)}")
            )
            self._dirty = True

    def expunge(self) -> None:
        """Seal, then compact: Milvus drops deleted rows from its segments at compaction. (No text
        is stored here, only ids, tenant, times and vectors.) Milvus Lite has no compaction."""
        self.flush()
        if not self.server:
            return
        with self._lock:
            try:
                self.client.compact(self.collection)
            except MilvusException as exc:
                log.warning("compaction of %s not started: %s", self.collection, exc)

    def count(self, tenant_id: str) -> int:
        with self._lock:
            rows = self._loaded(
                lambda: self.client.query(
                    self.collection,
                    filter=f"tenant_id == {_lit(tenant_id)}",
                    output_fields=["count(*)"],
                    consistency_level="Strong",  # drift checks compare it with the lexical store's count
                )
            )
        return int(rows[0]["count(*)"]) if rows else 0

    def ids(self, tenant_id: str, batch: int) -> Iterator[list[str]]:
        """Pages of the tenant's ids in primary-key order (a range on ``id``: Milvus caps offsets)."""
        last = ""
        while True:
            expr = f"tenant_id == {_lit(tenant_id)} and id > {_lit(last)}"
            with self._lock:
                rows = self._loaded(
                    partial(
                        self.client.query, self.collection, filter=expr, output_fields=["id"], limit=batch
                    )
                )
            page = sorted(str(r["id"]) for r in rows)
            if not page:
                return
            yield page
            if len(page) < batch:
                return
            last = page[-1]

    def close(self) -> None:
        self.flush()
        self.client.close()
