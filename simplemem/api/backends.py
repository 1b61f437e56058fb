"""The two ways the service reaches the memory, behind one small protocol.

Embedded: this process owns the store (an embedded store serves one process), runs the
pipeline on the events it receives and answers from the same runtime; one lock serialises the
store's users, and a timer closes the windows of sessions gone silent. Services: events and
deletions go to their topics (the workers derive the memory), queries go to OpenSearch, Milvus and
Redis through the same retriever; nothing is kept in the process, so replicas are interchangeable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Protocol, TypeVar

import anyio
import orjson

from simplemem.api.forgetting import Forgetter
from simplemem.processors.lifecycle.migration import LazyMigration, MigrationState
from simplemem.runtime import Runtime, freeze_heap
from simplemem.schemas.accounting import IngestReport
from simplemem.schemas.events import ChatEvent
from simplemem.schemas.keys import tenant_key
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.query import QueryFilters, QueryRequest, QueryResult
from simplemem.schemas.stream import DeletionRequest
from simplemem.schemas.window import BufferedTurn
from simplemem.streams.lazy import lazy_migration

log = logging.getLogger(__name__)

Health = dict[str, dict[str, str]]
T = TypeVar("T")


class MemoryBackend(Protocol):
    mode: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def ingest(self, events: list[ChatEvent]) -> None: ...

    async def forget(self, request: DeletionRequest) -> str: ...

    async def health(self) -> Health: ...

    def query(self, request: QueryRequest, filters: QueryFilters | None = None) -> QueryResult: ...

    def memories(self, tenant_id: str, offset: int, limit: int) -> tuple[list[MemoryUnit], int]: ...

    def units(self, tenant_id: str, ids: list[str]) -> list[MemoryUnit]: ...

    def units_of_messages(self, tenant_id: str, message_ids: list[str]) -> list[MemoryUnit]: ...

    def pending(self, tenant_id: str, message_id: str) -> BufferedTurn | None: ...

    def scrub(self, text: str) -> str: ...

    def read(self, fn: Callable[[Runtime], T]) -> T: ...


def _event_line(event: ChatEvent) -> bytes:
    return orjson.dumps(event.model_dump(mode="json", exclude_none=True))


# Text analysed between two visits to the store's lock: about one long answer, a fraction of a second.
INGEST_STEP_CHARS = 16_000


def _steps(events: list[ChatEvent], chars: int) -> Iterator[list[ChatEvent]]:
    """``events`` in order, in runs of at most ``chars`` characters of text (a longer event alone)."""
    step: list[ChatEvent] = []
    size = 0
    for event in events:
        if step and size + len(event.text) > chars:
            yield step
            step, size = [], 0
        step.append(event)
        size += len(event.text)
    if step:
        yield step


def _arrived(rt: Runtime, events: list[ChatEvent]) -> None:
    """When the service accepted these turns, for their time to memory (the per-tenant accounting).
    The accounting is a report: a failure here is logged, never the request's."""
    at = time.time()
    by_tenant: dict[str, list[str]] = {}
    for e in events:
        by_tenant.setdefault(e.tenant_id, []).append(e.message_id)
    try:
        for tenant, ids in by_tenant.items():
            rt.activity.arrived(tenant, ids, at)
    except Exception:
        log.warning("arrival times not kept", exc_info=True)


class _Held:
    """Several locks taken in order as one (the order every user of them keeps: ingestion, NLP, store)."""

    def __init__(self, *locks: threading.Lock | threading.RLock) -> None:
        self._locks = locks

    def __enter__(self) -> None:
        for lock in self._locks:
            lock.acquire()

    def __exit__(self, *exc: object) -> None:
        for lock in reversed(self._locks):
            lock.release()


def _check(name: str, probe: Callable[[], object]) -> dict[str, str]:
    try:
        probe()
    except Exception as exc:  # a health check reports, it does not fail
        return {"state": "down", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return {"state": "up"}


class _RuntimeReads:
    """Reads shared by both modes, straight from the runtime's stores."""

    rt: Runtime
    _lock: threading.RLock | contextlib.nullcontext[None]
    _nlp_lock: threading.RLock | contextlib.nullcontext[None]
    migration: LazyMigration | None = None

    def query(self, request: QueryRequest, filters: QueryFilters | None = None) -> QueryResult:
        """A tenant's first query starts its lazy migration (``SIMPLEMEM_LEGACY_HISTORY_DIR``), as the
        CLI's does: answered from what is there, marked ``migration: in_progress`` meanwhile."""
        state = self.migration.ensure(request.tenant_id) if self.migration is not None else None
        with self._lock:
            result = self.rt.retriever.query(request, filters)
        if state == MigrationState.IN_PROGRESS:
            result.migration = state.value
        return result

    async def _finish_migrations(self) -> None:
        """An import under way at shutdown finishes first (else its claim lapses and it starts over)."""
        if self.migration is not None:
            await anyio.to_thread.run_sync(self.migration.wait)

    def memories(self, tenant_id: str, offset: int, limit: int) -> tuple[list[MemoryUnit], int]:
        with self._lock:
            lexical = self.rt.lexical
            return lexical.page(tenant_id, offset, limit), lexical.count(tenant_id)

    def units(self, tenant_id: str, ids: list[str]) -> list[MemoryUnit]:
        with self._lock:
            return self.rt.lexical.get(tenant_id, ids)

    def units_of_messages(self, tenant_id: str, message_ids: list[str]) -> list[MemoryUnit]:
        """The memories derived from these messages (what a caller knows is the message id)."""
        with self._lock:
            return self.rt.lexical.units_from_sources(tenant_id, message_ids)

    def pending(self, tenant_id: str, message_id: str) -> BufferedTurn | None:
        """The message, scrubbed, if it is accepted and not decided yet (the recent-turn buffer holds
        exactly those: a decided turn leaves it)."""
        with self._lock:
            return next((t for t in self.rt.buffer.recent(tenant_id) if t.message_id == message_id), None)

    def read(self, fn: Callable[[Runtime], T]) -> T:
        """``fn`` on the runtime's stores, as the reads above are (the browsing routes)."""
        with self._lock:
            return fn(self.rt)

    def scrub(self, text: str) -> str:
        """PII-free text for durable logs (spaCy and Presidio load on the first call)."""
        with self._nlp_lock:
            return self.rt.nlp_preparer.scrubber.scrub(text).text


class EmbeddedBackend(_RuntimeReads):
    mode = "embedded"

    def __init__(self, rt: Runtime, forgetter: Forgetter) -> None:
        self.rt = rt
        self.forgetter = forgetter
        self._lock = threading.RLock()  # the stores: every read and write
        self._nlp_lock = threading.RLock()  # spaCy and Presidio, taken before the stores' lock
        self._ingest_lock = threading.Lock()  # one ingestion at a time: a session's messages in order
        self._closer: asyncio.Task[None] | None = None
        # a history import runs the whole pipeline: it excludes ingestion, analysis and the stores
        self.migration = lazy_migration(rt, _Held(self._ingest_lock, self._nlp_lock, self._lock))

    async def start(self) -> None:
        await anyio.to_thread.run_sync(self._warm_up)
        self._closer = asyncio.create_task(self._close_idle_sessions())

    def _warm_up(self) -> None:
        with self._nlp_lock, self._lock:
            self.rt.retriever  # noqa: B018  (loads MiniLM)
            self.rt.pipeline.warm_up()
        freeze_heap()

    async def stop(self) -> None:
        if self._closer is not None:
            self._closer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._closer
        await self._finish_migrations()
        await anyio.to_thread.run_sync(self._close_all)

    async def ingest(self, events: list[ChatEvent]) -> None:
        await anyio.to_thread.run_sync(self._ingest, events)

    def _ingest(self, events: list[ChatEvent]) -> None:
        """A step of text at a time: its analysis (most of the work: spaCy, Presidio, MiniLM) outside
        the store's lock, its windows and index writes under it, so another tenant's query waits at
        most for one step's writes, never for a whole batch. One ingestion at a time keeps a
        session's messages in order. More of the same conversations will come: open windows wait
        for them, their turns answerable from the recent-turn buffer meanwhile."""
        pipeline = self.rt.pipeline
        _arrived(self.rt, events)
        with self._ingest_lock:
            for step in _steps(events, INGEST_STEP_CHARS):
                report = IngestReport()
                with self._nlp_lock:
                    with self._lock:
                        kept = pipeline.drop_forgotten(step, report)
                    results = pipeline.analyse_events(kept)
                    pipeline.write_analysed(kept, results, report, self._store_guard)

    async def _close_idle_sessions(self) -> None:
        every = self.rt.settings.api_idle_check_seconds
        while True:
            await asyncio.sleep(every)
            try:
                await anyio.to_thread.run_sync(self.close_idle, time.time())
            except Exception:
                log.exception("closing idle sessions failed")

    def close_idle(self, now: float) -> int:
        """One tick of the timer: :meth:`Pipeline.close_silent`, each store access under the store's
        lock (a query waits for one window's writes at most, not for every silent session's)."""
        with self._nlp_lock:
            return self.rt.pipeline.close_silent(now, self._store_guard)

    def _store_guard(self) -> contextlib.AbstractContextManager[object]:
        return self._lock

    def _close_all(self) -> None:
        with self._nlp_lock, self._lock:
            if "pipeline" in self.rt.__dict__:
                self.rt.pipeline.flush(IngestReport())

    async def forget(self, request: DeletionRequest) -> str:
        def run() -> str:
            with self._lock:
                return self.forgetter.forget(request)

        return await anyio.to_thread.run_sync(run)

    async def health(self) -> Health:
        def probe() -> Health:
            with self._lock:
                return {
                    "lexical": _check("lexical", lambda: self.rt.lexical.count("healthz")),
                    "vectors": _check("vectors", lambda: self.rt.vectors.count("healthz")),
                }

        return await anyio.to_thread.run_sync(probe)


class ServicesBackend(_RuntimeReads):
    mode = "services"

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._lock = contextlib.nullcontext()  # the store clients are safe to share between threads
        self._nlp_lock = threading.RLock()  # spaCy and Presidio (the feedback log's scrubbing)
        self._producer: object | None = None
        self.migration = lazy_migration(rt)  # publishes the history; the workers derive the memory

    async def start(self) -> None:
        from simplemem.streams.kafka_io import producer
        from simplemem.streams.topics import ensure_topics

        s = self.rt.settings
        await ensure_topics(s)
        prod = producer(s)
        await prod.start()
        self._producer = prod
        await anyio.to_thread.run_sync(lambda: self.rt.retriever)  # loads MiniLM, connects the stores
        freeze_heap()

    async def stop(self) -> None:
        await self._finish_migrations()
        if self._producer is not None:
            await self._producer.stop()  # type: ignore[attr-defined]

    async def _send(self, topic: str, pairs: list[tuple[bytes | None, bytes]]) -> None:
        prod = self._producer
        assert prod is not None, "the backend is not started"
        futures = [await prod.send(topic, value, key=key) for key, value in pairs]  # type: ignore[attr-defined]
        await asyncio.gather(*futures)

    async def ingest(self, events: list[ChatEvent]) -> None:
        from simplemem.streams.kafka_io import record_key

        s = self.rt.settings
        lines = [_event_line(e) for e in events]
        # Keyed exactly as `simplemem publish` keys a line: the session's byte key.
        # the arrival first: a worker may decide a turn before a write after the publish would land
        await anyio.to_thread.run_sync(_arrived, self.rt, events)
        await self._send(s.topic(s.turns_topic), [(record_key(raw), raw) for raw in lines])

    async def forget(self, request: DeletionRequest) -> str:
        s = self.rt.settings
        value = request.model_dump_json().encode()
        await self._send(s.topic(s.deletions_topic), [(tenant_key(request.tenant_id), value)])
        return "published"

    async def health(self) -> Health:
        s = self.rt.settings

        def probe() -> Health:
            from simplemem.processors.stores.milvus_vectors import MilvusVectorStore
            from simplemem.processors.stores.opensearch_lexical import OpenSearchLexicalStore

            lexical, vectors, buffer = self.rt.lexical, self.rt.vectors, self.rt.buffer
            assert isinstance(lexical, OpenSearchLexicalStore) and isinstance(vectors, MilvusVectorStore)
            return {
                "opensearch": _check("opensearch", lexical.client.cluster.health),
                "milvus": _check("milvus", vectors.client.list_collections),
                "redis": _check("redis", lambda: buffer.recent("healthz")),
            }

        found = await anyio.to_thread.run_sync(probe)
        found["kafka"] = await _async_check(self._kafka_probe(s.topic(s.turns_topic)))
        return found

    async def _kafka_probe(self, topic: str) -> None:
        prod = self._producer
        assert prod is not None
        partitions = await asyncio.wait_for(prod.partitions_for(topic), timeout=5)  # type: ignore[attr-defined]
        if not partitions:
            raise RuntimeError(f"no partitions for {topic}")


async def _async_check(probe: Awaitable[None]) -> dict[str, str]:
    try:
        await probe
    except Exception as exc:
        return {"state": "down", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return {"state": "up"}
