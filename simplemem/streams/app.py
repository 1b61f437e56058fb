"""The Faust app: three agents, one table, three timers and ``/metrics``. Only wiring lives here.

``turns`` -> **scrub** (validate, PII scrub, spaCy, MiniLM, recent-turn buffer) -> ``scrubbed`` ->
**memorize** (windows, entropy, decomposition, indexing) -> stores, ``units``, ``outcomes``; bad input
and failed turns -> ``dlq``. ``deletions`` -> **forget** (the right to be forgotten: every store,
tombstones on ``units`` and ``outcomes``). The parts: :mod:`simplemem.streams.batching` (batches the agent acknowledges),
:mod:`simplemem.streams.gaps` (records Faust skipped, one guard per agent), :mod:`simplemem.streams.runner` (the order:
outputs acknowledged, then state, then the batch; poison records become dead letters) and
:mod:`simplemem.streams.worker` (the two stages and the sessions table).

The ``sessions`` table (changelog-backed) holds each session's open window and entropy history, keyed
by the session's encoded :class:`simplemem.schemas.keys.SessionKey` and partitioned like ``scrubbed``, so a
restarted or rebalanced worker resumes where the last one stopped. A closed session's state is
removed after a grace period (``SessionTable.expire``): state does not grow with the sessions seen.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import faust
from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError, RequestTimedOutError
from faust.types import TP
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from simplemem.processors.stores.retry import WriteCancelled
from simplemem.schemas.codec import dumps
from simplemem.schemas.keys import tenant_key
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import ConsolidationRequest, StageRecord
from simplemem.streams import diagnostics, metrics
from simplemem.streams.batching import Batcher
from simplemem.streams.erasure import roll_markers
from simplemem.streams.gaps import GapGuard, Hole
from simplemem.streams.kafka_io import committed_offsets, end_offsets
from simplemem.streams.ownership import Ownership
from simplemem.streams.runner import AgentRunner, Output
from simplemem.streams.stall import StallWatch
from simplemem.streams.topics import MAX_RECORD_BYTES, compacted
from simplemem.streams.worker import (
    ConsolidateStep,
    ForgetStep,
    MemorizeStep,
    ScrubStep,
    SessionTable,
    Worker,
    outage_in_progress,
)

log = logging.getLogger(__name__)

# Kafka errors that mean "the broker cannot be reached now": a delivery waits them out.
_KAFKA_UNAVAILABLE = (KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError, RequestTimedOutError)
LAG_SECONDS = 5.0  # how often the lag gauge is refreshed from the group's committed offsets


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
        # Faust would wait, at shutdown and at each rebalance, until every record it handed out is
        # acknowledged; ours are acknowledged only once stored, so during a store outage it would
        # wait for the outage. Unacknowledged records are replayed by the partition's next owner.
        stream_wait_empty=False,
        producer_max_request_size=MAX_RECORD_BYTES,
        web_port=settings.worker_web_port,
        web_host="0.0.0.0",
    )
    worker = Worker(settings)
    names = {
        "turns": settings.turns_topic,
        "scrubbed": settings.scrubbed_topic,
        "units": settings.units_topic,
        "outcomes": settings.outcomes_topic,
        "dlq": settings.dlq_topic,
        "deletions": settings.deletions_topic,
        "consolidation": settings.consolidation_topic,
        "consolidate": settings.consolidate_topic,
    }
    topics = {
        short: app.topic(settings.topic(name), key_serializer="raw", value_serializer="raw")
        for short, name in names.items()
    }
    table = app.Table(
        "sessions",
        partitions=settings.topic_partitions,
        use_partitioner=True,  # same key, same partitioner as `scrubbed`: co-partitioned
        key_type=bytes,  # bytes in and out: the state is our own JSON (schemas), not Faust's models
        value_type=bytes,
        # a closed session's state drops its window's turns; the older values go within the deadline
        extra_topic_configs={"max.message.bytes": str(MAX_RECORD_BYTES), **compacted(settings)},
    )
    sessions = SessionTable(table)

    async def deliver(records: Sequence[Output]) -> None:
        """Send now and wait until Kafka acknowledged every record, through a broker outage.
        (``force``: Faust would otherwise hold a record sent from an agent until the source offset
        commits, after our state write.)"""
        delay = 0.5
        while True:
            try:
                pending = [
                    await topics[t].send(key=k, value=v, partition=p[0] if p else None, force=True)
                    for t, k, v, *p in records
                ]
                await asyncio.gather(*pending)
                return
            except _KAFKA_UNAVAILABLE as exc:
                log.warning("Kafka unavailable while delivering %d records (%s); retrying", len(records), exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, settings.stage_retry_max_seconds)

    async def mark_gap(hole: Hole) -> None:
        topic_name, partition, first, last = hole
        # Faust's own record of log holes: lets its commit pass the records we re-read
        await app.consumer._add_gap(TP(topic_name, partition), first, last)  # type: ignore[attr-defined]

    ownership = Ownership(lambda: bool(app.rebalancing))

    @app.on_partitions_revoked.connect
    def partitions_revoked(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        revoked: set[TP] = args[0]
        ownership.revoked((tp.topic, tp.partition) for tp in revoked)

    @app.on_partitions_assigned.connect
    def partitions_assigned(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        assigned: set[TP] = args[0]
        ownership.assigned((tp.topic, tp.partition) for tp in assigned)

    def batcher() -> Batcher:
        guard = GapGuard.for_group(settings, settings.stream_app_id)
        guards.append(guard)
        return Batcher(
            settings.stream_batch_messages, settings.stream_linger_seconds, guard, mark_gap, ownership
        )

    guards: list[GapGuard] = []
    scrub_runner = AgentRunner(ScrubStep(worker), deliver, overlap=True)
    memorize_runner = AgentRunner(MemorizeStep(worker, sessions), deliver)
    forget_runner = AgentRunner(ForgetStep(worker), deliver)
    consolidate_runner = AgentRunner(ConsolidateStep(worker, deliver), deliver)
    scrub_batches, memorize_batches, forget_batches = batcher(), batcher(), batcher()
    consolidate_batches = batcher()

    async def run(runner: AgentRunner[Any], batches: Batcher, stream: faust.StreamT) -> None:
        try:
            await runner.run(batches.batches(stream.noack()))  # type: ignore[attr-defined]
        except WriteCancelled:  # shutting down while a store was unreachable: replayed by the next owner
            log.warning("agent stopped while waiting for a store; its batch stays unacknowledged")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # not a record's fault (those are dead letters): stop the worker
            log.exception("agent failed; stopping the worker so that its supervisor restarts it")
            await app.crash(exc)
            raise

    @app.agent(topics["turns"], name="scrub")
    async def scrub(stream: faust.StreamT) -> None:
        """spaCy on batch N+1 while batch N is embedded and delivered; N is finished first (order)."""
        await run(scrub_runner, scrub_batches, stream)

    @app.agent(topics["scrubbed"], name="memorize")
    async def memorize(stream: faust.StreamT) -> None:
        await run(memorize_runner, memorize_batches, stream)

    @app.agent(topics["deletions"], name="forget")
    async def forget(stream: faust.StreamT) -> None:
        """Deletion requests (from the query service or ``simplemem forget``), carried out on every
        store; the units topic gets the tombstones."""
        await run(forget_runner, forget_batches, stream)

    @app.agent(topics["consolidate"], name="consolidate")
    async def consolidate(stream: faust.StreamT) -> None:
        """Stage 2 per tenant, one worker at a time per tenant (requests are keyed by tenant)."""
        await run(consolidate_runner, consolidate_batches, stream)

    @app.timer(settings.idle_check_seconds)
    async def consolidation_due() -> None:
        """Request the consolidation of the tenants this worker indexed for: after
        ``consolidation_interval_seconds`` or ``consolidation_volume`` new memories."""
        now = time.time()
        for tenant, reason in worker.due_for_consolidation(now):
            request = ConsolidationRequest(tenant_id=tenant, reason=reason, requested_at=datetime.now(UTC))
            await topics["consolidate"].send(key=tenant_key(tenant), value=dumps(request), force=True)

    seeded = False

    @app.on_rebalance_complete.connect
    def reseed(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        """After a restart or a rebalance the table holds sessions this process never saw, and
        every partition resumes from its committed offset."""
        nonlocal seeded
        seeded = False
        for guard in guards:
            guard.reset()

    @app.timer(settings.idle_check_seconds)
    async def idle_sessions() -> None:
        """Ask the memorize agent (through its own partition) to close the windows of silent
        sessions; remove the states of sessions closed longer than the grace period."""
        nonlocal seeded
        if not seeded:
            seeded = True
            sessions.seed()
        now = time.time()
        for key in sessions.idle(now, settings.pause_seconds, settings.wall_clock_idle_seconds):
            record = StageRecord.idle_check(key, now)
            await topics["scrubbed"].send(key=key.encode(), value=dumps(record), force=True)
        metrics.SESSIONS_REMOVED.inc(sessions.expire(now, settings.session_state_grace_seconds))
        metrics.SESSIONS.set(len(sessions))

    @app.timer(settings.erasure_deadline_seconds / 2)
    async def roll_compacted_segments() -> None:
        """Forgotten records are erased within the deadline even on a partition with no traffic
        (:data:`simplemem.streams.erasure.ROLL_KEY`)."""
        await deliver(roll_markers(settings))

    stall = StallWatch(settings.stream_stall_seconds)

    @app.timer(LAG_SECONDS)
    async def consumer_lag() -> None:
        """Lag from the group's committed offsets: an agent that stopped acknowledging shows here."""
        sources = {topics["turns"].get_topic_name(), topics["scrubbed"].get_topic_name()}
        assigned = [(tp.topic, tp.partition) for tp in app.consumer.assignment() if tp.topic in sources]
        try:
            committed = await committed_offsets(settings, settings.stream_app_id)
            ends = await end_offsets(settings, assigned)
        except _KAFKA_UNAVAILABLE as exc:
            log.warning("consumer lag not refreshed: %s", exc)
            stall.reset()
            return
        metrics.CONSUMER_LAG.clear()  # partitions a rebalance took away are another worker's to report
        for tp, end in ends.items():
            metrics.CONSUMER_LAG.labels(*map(str, tp)).set(max(0, end - committed.get(tp, 0)))
        if settings.stream_stall_seconds:
            await stop_if_stalled(committed, ends)

    async def stop_if_stalled(
        committed: dict[tuple[str, int], int], ends: dict[tuple[str, int], int]
    ) -> None:
        """(:mod:`simplemem.streams.stall`) Waiting out a store outage or restoring the table is by design."""
        recovery = app.tables.recovery  # type: ignore[attr-defined]  # the TableManager has it, its type not
        restoring = recovery.in_recovery and recovery.need_recovery()
        stalled = stall.observe(time.monotonic(), committed, ends, outage_in_progress() or restoring)
        if not stalled:
            return
        log.error(
            "no progress for %.0f s on %s with records waiting (no store outage, no restore in progress): "
            "stopping so that the supervisor starts a new worker",
            settings.stream_stall_seconds,
            ", ".join(f"{t}/{p}" for t, p in stalled),
        )
        log.error("consumer partitions: %s", diagnostics.partition_states(app.consumer))
        diagnostics.dump_tasks()
        await app.crash(RuntimeError("stream worker stalled"))

    @app.task
    async def stack_dump_signal() -> None:
        """``kill -USR2`` logs every task's await chain (:mod:`simplemem.streams.diagnostics`)."""
        diagnostics.install(asyncio.get_running_loop())

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        # aiohttp takes the charset separately from the content type
        return web.bytes(
            generate_latest(), content_type=CONTENT_TYPE_LATEST.split(";")[0] + "; version=0.0.4"
        )

    @app.on_before_shutdown.connect
    async def stop_waiting(sender: Any, /, *args: Any, **kwargs: Any) -> None:
        worker.shutdown()

    app.worker_context = worker  # type: ignore[attr-defined]  # for tests and the CLI
    return app
