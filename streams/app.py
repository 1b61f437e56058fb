"""The Faust app: two agents, one table, one timer and ``/metrics``. Thin: the stages live in
:mod:`processors.streaming`; this module moves bytes between topics, the table and those stages.

``turns`` -> **scrub** (validate, PII scrub, spaCy, MiniLM, recent-turn buffer) -> ``scrubbed`` ->
**memorize** (windows, entropy, decomposition, indexing) -> stores, ``units``, ``outcomes``; bad input
and failed turns -> ``dlq``. Both agents take batches and run their stages on threads: scrub runs
spaCy on one batch while MiniLM (ONNX Runtime, which releases the GIL) embeds the batch before it,
and memorize's decomposition and store writes overlap both. Batches leave each agent in order. A
batch is acknowledged (its offsets may be committed) only after the agent finished it: its outputs
are acknowledged by Kafka and the stores, and the session state is written last.

The ``sessions`` table (changelog-backed) holds each session's open window and entropy history, keyed
``tenant_id|session_id`` and partitioned like ``scrubbed``, so a restarted or rebalanced worker resumes
where the last one stopped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any, TypeVar

import faust
from faust.types import TP, EventT
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from processors.retry import StoreRetry
from processors.runtime import Runtime, open_runtime
from processors.streaming import MemoryResult, MemoryStage, ScrubResult, ScrubStage, SessionState
from schemas.accounting import Outcome
from schemas.codec import dumps
from schemas.keys import SessionKey, message_key
from schemas.settings import Settings
from schemas.stream import SourceRef, StageRecord
from streams import metrics
from streams.gaps import GapGuard, Hole, Item
from streams.topics import MAX_RECORD_BYTES

log = logging.getLogger(__name__)

T = TypeVar("T")


class Worker:
    """One worker process's components: built on first use, so `--help` loads no model."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.scrub_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scrub")
        self.embed_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self.memory_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memorize")
        self.decided = {Outcome.INDEXED: 0, Outcome.FILTERED: 0}
        self.pending_since: dict[
            SessionKey, float
        ] = {}  # sessions with an open window -> last turn (wall clock)
        self.processed: dict[tuple[str, int], int] = {}  # (topic, partition) -> next offset to process

    @cached_property
    def runtime(self) -> Runtime:
        return open_runtime(self.settings)

    @cached_property
    def scrub_stage(self) -> ScrubStage:
        rt = self.runtime
        return ScrubStage(self.settings, rt.nlp_preparer, rt.pipeline.analyzer.embed, rt.buffer)

    @cached_property
    def memory_stage(self) -> MemoryStage:
        return MemoryStage(self.runtime.pipeline, time.time)

    @cached_property
    def retry(self) -> StoreRetry:
        s = self.settings
        return StoreRetry(
            s.stage_retry_attempts,
            s.stage_retry_max_seconds,
            lambda down: metrics.STORE_BLOCKED.set(int(down)),
        )

    def write(self, call: Callable[[], None]) -> None:
        """One store write, timed, retried through outages."""
        start = time.perf_counter()
        self.retry(call)
        metrics.STORE_WRITE_SECONDS.observe(time.perf_counter() - start)

    def warm_up(self) -> None:
        self.scrub_stage.run([])
        self.memory_stage.pipeline.warm_up()
        self.runtime.embedder.encode(["warm up"])

    def scrub(self, batch: list[tuple[SourceRef, bytes]]) -> ScrubResult:
        with metrics.STAGE_SECONDS.labels("scrub").time():
            return self.scrub_stage.prepare(batch)

    def embed(self, prepared: ScrubResult) -> ScrubResult:
        with metrics.STAGE_SECONDS.labels("embed").time():
            return self.scrub_stage.finish(prepared, self.write)

    def memorize(self, records: list[StageRecord], states: dict[SessionKey, SessionState]) -> MemoryResult:
        with metrics.STAGE_SECONDS.labels("memorize").time():
            return self.memory_stage.run(records, states, self.write)

    def count(self, result: MemoryResult) -> None:
        metrics.DUPLICATES.inc(result.duplicates)
        metrics.TURNS_WINDOWED.inc(result.turns - result.duplicates)
        for r in result.windows:
            metrics.WINDOWS.labels("kept" if r.kept else "filtered").inc()
        for o in result.outcomes:
            metrics.TURNS_OUT.labels(o.outcome.value).inc()
            if o.outcome in self.decided:
                self.decided[o.outcome] += 1
        for u in result.units:
            metrics.UNITS.labels(u.kind.value).inc()
        total = sum(self.decided.values())
        if total:
            metrics.DISCARD_RATE.set(self.decided[Outcome.FILTERED] / total)

    def mark_processed(self, items: list[Item]) -> None:
        for i in items:
            key = (i.source.topic, i.source.partition)
            self.processed[key] = max(self.processed.get(key, 0), i.source.offset + 1)


@dataclass
class Batch:
    items: list[Item]
    ack: Callable[[], Awaitable[None]]


def _item(event: EventT) -> Item:
    m = event.message
    return Item(SourceRef(topic=m.topic, partition=m.partition, offset=m.offset), m.key, m.value or b"")


def create_app(settings: Settings) -> faust.App:
    app = faust.App(
        settings.stream_app_id,
        broker=f"kafka://{settings.kafka_endpoint}",
        store="memory://",
        datadir=str(settings.stream_data_dir),
        autodiscover=False,
        topic_partitions=settings.topic_partitions,
        topic_replication_factor=settings.topic_replication,
        processing_guarantee="at_least_once",
        broker_commit_interval=settings.stream_commit_seconds,
        broker_session_timeout=settings.stream_session_timeout_seconds,
        broker_heartbeat_interval=settings.stream_session_timeout_seconds / 3,
        consumer_auto_offset_reset="earliest",
        producer_max_request_size=MAX_RECORD_BYTES,
        web_port=settings.worker_web_port,
        web_host="0.0.0.0",
    )
    worker = Worker(settings)

    def topic(name: str) -> faust.TopicT:
        return app.topic(settings.topic(name), key_serializer="raw", value_serializer="raw")

    turns, scrubbed = topic(settings.turns_topic), topic(settings.scrubbed_topic)
    units, outcomes, dlq = (
        topic(settings.units_topic),
        topic(settings.outcomes_topic),
        topic(settings.dlq_topic),
    )
    sessions = app.Table(
        "sessions",
        partitions=settings.topic_partitions,
        use_partitioner=True,  # same key, same partitioner as `scrubbed`: co-partitioned
        key_type=bytes,  # bytes in and out: the state is our own JSON (schemas), not Faust's models
        value_type=bytes,
        extra_topic_configs={"max.message.bytes": str(MAX_RECORD_BYTES)},
    )

    async def in_thread(pool: ThreadPoolExecutor, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)

    guard = GapGuard(settings, settings.stream_app_id)

    async def batches(stream: faust.StreamT) -> AsyncIterator[Batch]:
        """Records in batches (what is buffered, up to ``stream_batch_messages``), each acknowledged
        by the agent once it finished it (``Batch.ack``): its offsets can then be committed. (Faust's
        ``take`` acks a batch even when its body fails, and can ack events that arrive while a batch is
        processed.)"""
        manual = stream.noack()  # type: ignore[attr-defined]  # (not in the StreamT protocol)
        buffered = manual.channel.queue
        loop = asyncio.get_running_loop()
        batch: list[EventT] = []
        started = 0.0
        async for event in manual.events():
            if not batch:
                started = loop.time()
            batch.append(event)
            if len(batch) < settings.stream_batch_messages:
                # a small batch waits a moment for more: spaCy and MiniLM work better on batches
                while buffered.empty() and loop.time() - started < settings.stream_linger_seconds:
                    await asyncio.sleep(0.005)
                if not buffered.empty():
                    continue
            items = await guard.complete([_item(e) for e in batch])
            metrics.REFETCHED.set(guard.refetched)
            yield Batch(items, partial(acknowledge, manual, batch, guard.filled()))
            batch = []

    async def acknowledge(manual: faust.StreamT, events: list[EventT], holes: list[Hole]) -> None:
        for topic_name, partition, first, last in holes:
            # Faust's own record of log holes: lets its commit pass the records we re-read
            await app.consumer._add_gap(TP(topic_name, partition), first, last)  # type: ignore[attr-defined]
        for done in events:
            await manual.ack(done)

    async def deliver(records: list[tuple[faust.TopicT, bytes | None, bytes]]) -> None:
        """Send now and wait until Kafka acknowledged every record. (``force``: Faust would otherwise
        hold a record sent from an agent until the source offset commits, after our state write.)"""
        pending = [await topic.send(key=key, value=value, force=True) for topic, key, value in records]
        await asyncio.gather(*pending)

    def outputs(result: ScrubResult | MemoryResult) -> list[tuple[faust.TopicT, bytes | None, bytes]]:
        out: list[tuple[faust.TopicT, bytes | None, bytes]] = []
        for dead in result.dead:
            metrics.DEAD_LETTERS.labels(dead.stage.value, dead.code).inc()
            key = message_key(dead.tenant_id, dead.message_id) if dead.tenant_id and dead.message_id else None
            out.append((dlq, key, dumps(dead)))
        for outcome in result.failed if isinstance(result, ScrubResult) else result.outcomes:
            out.append((outcomes, message_key(outcome.tenant_id, outcome.message_id), dumps(outcome)))
        return out

    async def embed_and_deliver(batch: Batch, prepared: ScrubResult) -> None:
        result = await in_thread(worker.embed_pool, worker.embed, prepared)
        records = [(scrubbed, r.session_key.encode(), dumps(r)) for r in result.records]
        await deliver([*records, *outputs(result)])
        for outcome in result.failed:
            metrics.TURNS_OUT.labels(outcome.outcome.value).inc()
        worker.mark_processed(batch.items)
        await batch.ack()

    @app.agent(turns, name="scrub")
    async def scrub(stream: faust.StreamT) -> None:
        """spaCy on batch N+1 while batch N is embedded and delivered; N is finished first (order)."""
        previous: asyncio.Future[None] | None = None
        try:
            async for batch in batches(stream):
                metrics.TURNS_IN.inc(len(batch.items))
                metrics.STAGE_RECORDS.labels("scrub").inc(len(batch.items))
                raw = [(i.source, i.value) for i in batch.items]
                prepared = await in_thread(worker.scrub_pool, worker.scrub, raw)
                if previous is not None:
                    await previous
                previous = asyncio.ensure_future(embed_and_deliver(batch, prepared))
        finally:
            if previous is not None and not previous.done():
                previous.cancel()  # shutting down: left unacknowledged, so it is replayed

    @app.agent(scrubbed, name="memorize")
    async def memorize(stream: faust.StreamT) -> None:
        async for batch in batches(stream):
            events = batch.items
            metrics.STAGE_RECORDS.labels("memorize").inc(len(events))
            records = [StageRecord.model_validate_json(i.value or b"{}") for i in events]
            states: dict[SessionKey, SessionState] = {}
            for key in {r.session_key for r in records}:
                raw = sessions.get(key.encode())
                if raw is not None:
                    states[key] = SessionState.model_validate_json(raw)
            result = await in_thread(worker.memory_pool, worker.memorize, records, states)
            # Outputs first, acknowledged; the sessions' new state last: a state that says "applied"
            # is only ever written after everything derived from the batch is in Kafka and the stores.
            units_out = [(units, u.id.encode(), dumps(u)) for u in result.units]
            await deliver([*units_out, *outputs(result)])
            for key, state in result.states.items():
                if state is not states.get(key):
                    sessions[key.encode()] = dumps(state)
                if state.buffer is not None and state.buffer.pending:
                    worker.pending_since[key] = state.buffer.last_seen
                else:
                    worker.pending_since.pop(key, None)
            worker.count(result)
            worker.mark_processed(events)
            await batch.ack()

    seeded = False

    @app.on_rebalance_complete.connect
    def reseed(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        """After a restart or a rebalance the table holds open windows this process never saw, and
        every partition resumes from its committed offset."""
        nonlocal seeded
        seeded = False
        guard.reset()

    @app.timer(settings.idle_check_seconds)
    async def idle_sessions() -> None:
        """Ask the memorize agent (through its own partition) to close the windows of silent sessions."""
        nonlocal seeded
        if not seeded:
            seeded = True
            for key, raw in list(sessions.items()):
                state = SessionState.model_validate_json(raw)
                if state.buffer is not None and state.buffer.pending:
                    worker.pending_since.setdefault(SessionKey.decode(key), state.buffer.last_seen)
        now = time.time()
        for key, last in list(worker.pending_since.items()):
            if now - last >= settings.wall_clock_idle_seconds:
                worker.pending_since.pop(key, None)
                record = StageRecord.idle_check(key, now)
                await scrubbed.send(key=key.encode(), value=dumps(record), force=True)

    @app.timer(5.0)
    async def consumer_lag() -> None:
        consumer = app.consumer
        for tp in consumer.assignment():
            done = worker.processed.get((tp.topic, tp.partition))
            if done is not None:
                lag = max(0, consumer.highwater(tp) - done)
                metrics.CONSUMER_LAG.labels(tp.topic, str(tp.partition)).set(lag)

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        # aiohttp takes the charset separately from the content type
        return web.bytes(
            generate_latest(), content_type=CONTENT_TYPE_LATEST.split(";")[0] + "; version=0.0.4"
        )

    app.worker_context = worker  # type: ignore[attr-defined]  # for tests and the CLI
    return app
