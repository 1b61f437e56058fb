"""The Faust app: four agents, one table, five timers and ``/metrics``. Only wiring lives here.

``turns`` -> **scrub** (validate, PII scrub, spaCy, MiniLM, recent-turn buffer) -> ``scrubbed`` ->
**memorize** (windows, entropy, decomposition, indexing) -> stores, ``units``, ``outcomes``; bad input
and failed turns -> ``dlq``. ``deletions`` -> **forget** (the right to be forgotten: every store,
tombstones on ``units`` and ``outcomes``). ``consolidate`` -> **consolidate** (stage 2 per tenant:
its decisions to ``consolidation`` and ``units``, then the stores). The timers: consolidation requests,
idle sessions, segment rolls for the erasure deadline, the store drift gauges, and the consumer lag
(with the stall check).
The parts: :mod:`simplemem.streams.batching` (batches the agent acknowledges),
:mod:`simplemem.streams.gaps` (records Faust skipped, one guard per agent), :mod:`simplemem.streams.runner` (the order:
outputs acknowledged, then state, then the batch; poison records become dead letters) and
:mod:`simplemem.streams.worker` and :mod:`simplemem.streams.lifecycle_steps` (the four steps and the sessions
table).

The ``sessions`` table (changelog-backed) holds each session's open window and entropy history, keyed
by the session's encoded :class:`simplemem.schemas.keys.SessionKey` and partitioned like ``scrubbed``, so a
restarted or rebalanced worker resumes where the last one stopped. A closed session's state is
removed after a grace period (``SessionTable.expire``): state does not grow with the sessions seen.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import faust
from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, NodeNotReadyError, RequestTimedOutError
from faust.types import TP
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from simplemem.processors.stores.retry import WriteCancelled
from simplemem.schemas.codec import dumps
from simplemem.schemas.keys import SessionKey, tenant_key
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import ConsolidationRequest, ScrubbedRecord
from simplemem.streams import diagnostics, metrics
from simplemem.streams.backlog import ScrubBacklog
from simplemem.streams.batching import Batcher
from simplemem.streams.changelog import AcknowledgedWrites
from simplemem.streams.erasure import roll_markers
from simplemem.streams.gaps import GapGuard, Hole
from simplemem.streams.kafka_io import committed_offsets, end_offsets, session_partition
from simplemem.streams.lifecycle_steps import ConsolidateStep, ForgetStep
from simplemem.streams.ownership import Ownership
from simplemem.streams.runner import AgentRunner, Output
from simplemem.streams.stall import StallWatch
from simplemem.streams.topics import MAX_RECORD_BYTES, compacted
from simplemem.streams.worker import (
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
    """The wiring: the app and the components its agents share, then each agent, timer and page,
    declared in the order Faust starts them."""
    app = _faust_app(settings)
    parts = Parts(
        app=app,
        settings=settings,
        worker=Worker(settings),
        topics=_topics(app, settings),
        sessions=_sessions_table(app, settings),
        ownership=Ownership(lambda: bool(app.rebalancing), generation=lambda: app.consumer_generation_id),
    )
    _track_ownership(parts)
    _scrub_agent(parts)
    _memorize_agent(parts)
    _forget_agent(parts)
    _consolidate_agent(parts)
    _consolidation_timer(parts)
    _reseed_on_rebalance(parts)
    _idle_sessions_timer(parts)
    _erasure_timer(parts)
    _lag_timer(parts)
    _drift_timer(parts)
    _stack_dump_task(app)
    _metrics_page(app)
    _stop_on_shutdown(parts)
    app.worker_context = parts.worker  # type: ignore[attr-defined]  # for tests and the CLI
    return app


def _faust_app(settings: Settings) -> faust.App:
    """At-least-once, our own serializers and record size; the reasons for the settings that are
    not Faust's defaults are beside them."""
    return faust.App(
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


def _topics(app: faust.App, settings: Settings) -> dict[str, faust.TopicT]:
    """Every topic the agents read or write, by short name; raw bytes (our JSON, not Faust's models)."""
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
    return {
        short: app.topic(settings.topic(name), key_serializer="raw", value_serializer="raw")
        for short, name in names.items()
    }


def _sessions_table(app: faust.App, settings: Settings) -> SessionTable:
    """The ``sessions`` table (see the module's docstring), co-partitioned with ``scrubbed``."""
    table = app.Table(
        "sessions",
        partitions=settings.topic_partitions,
        use_partitioner=True,  # same key, same partitioner as `scrubbed`: co-partitioned
        key_type=bytes,  # bytes in and out: the state is our own JSON (schemas), not Faust's models
        value_type=bytes,
        # a closed session's state drops its window's turns; the older values go within the deadline
        extra_topic_configs={"max.message.bytes": str(MAX_RECORD_BYTES), **compacted(settings)},
    )
    # a batch's states are in the changelog before the batch is acknowledged (streams/changelog.py)
    return SessionTable(
        table, AcknowledgedWrites(table, _KAFKA_UNAVAILABLE, settings.stage_retry_max_seconds)
    )


@dataclass
class Parts:
    """What the agents, timers and signal handlers share: the app and its components, and what the
    agents do the same way (deliver, batch, run, stop the worker on a failure)."""

    app: faust.App
    settings: Settings
    worker: Worker
    topics: dict[str, faust.TopicT]
    sessions: SessionTable
    ownership: Ownership
    guards: list[GapGuard] = field(default_factory=list)  # one per agent, reset at each rebalance
    backlog: ScrubBacklog = field(default_factory=ScrubBacklog)  # the idle timer's view of the scrub step
    readers: dict[str, tuple[AgentRunner[Any], Batcher]] = field(default_factory=dict)  # by source topic
    seeded: bool = False  # the table's sessions known to the idle timer since the last rebalance

    async def deliver(self, records: Sequence[Output]) -> None:
        """Send now and wait until Kafka acknowledged every record, through a broker outage.
        (``force``: Faust would otherwise hold a record sent from an agent until the source offset
        commits, after our state write.)"""
        delay = 0.5
        while True:
            try:
                pending = [
                    await self.topics[t].send(key=k, value=v, partition=p[0] if p else None, force=True)
                    for t, k, v, *p in records
                ]
                await asyncio.gather(*pending)
                return
            except _KAFKA_UNAVAILABLE as exc:
                log.warning("Kafka unavailable while delivering %d records (%s); retrying", len(records), exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.settings.stage_retry_max_seconds)

    async def mark_gap(self, hole: Hole) -> None:
        topic_name, partition, first, last = hole
        # Faust's own record of log holes: lets its commit pass the records we re-read
        await self.app.consumer._add_gap(TP(topic_name, partition), first, last)  # type: ignore[attr-defined]

    def batcher(self) -> Batcher:
        """An agent's batches, with a gap guard of its own."""
        settings = self.settings
        guard = GapGuard.for_group(settings, settings.stream_app_id)
        self.guards.append(guard)
        size, linger = settings.stream_batch_messages, settings.stream_linger_seconds
        return Batcher(size, linger, guard, self.mark_gap, self.ownership)

    async def run(self, runner: AgentRunner[Any], batches: Batcher, stream: faust.StreamT) -> None:
        """An agent's body: its runner on its batches; a failure that is no record's stops the worker."""
        try:
            await runner.run(batches.batches(stream.noack()))  # type: ignore[attr-defined]
        except WriteCancelled:  # shutting down while a store was unreachable: replayed by the next owner
            log.warning("agent stopped while waiting for a store; its batch stays unacknowledged")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # not a record's fault (those are dead letters): stop the worker
            log.exception("agent failed; stopping the worker so that its supervisor restarts it")
            await self.app.crash(exc)
            raise


def _track_ownership(parts: Parts) -> None:
    """The partitions this worker owns, for the batchers' fence (:mod:`simplemem.streams.ownership`)."""

    @parts.app.on_partitions_revoked.connect
    def partitions_revoked(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        revoked: set[TP] = args[0]
        parts.ownership.revoked((tp.topic, tp.partition) for tp in revoked)

    @parts.app.on_partitions_assigned.connect
    def partitions_assigned(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        assigned: set[TP] = args[0]
        parts.ownership.assigned((tp.topic, tp.partition) for tp in assigned)


def _scrub_agent(parts: Parts) -> None:
    """``turns`` -> ``scrubbed``."""
    step, done = ScrubStep(parts.worker), parts.backlog.done
    runner, batches = AgentRunner(step, parts.deliver, overlap=True, done=done), parts.batcher()
    parts.readers[parts.topics["turns"].get_topic_name()] = (runner, batches)

    @parts.app.agent(parts.topics["turns"], name="scrub")
    async def scrub(stream: faust.StreamT) -> None:
        """spaCy on batch N+1 while batch N is embedded and delivered; N is finished first (order)."""
        await parts.run(runner, batches, stream)


def _memorize_agent(parts: Parts) -> None:
    """``scrubbed`` -> the stores, ``units`` and ``outcomes``; the session states in the table."""
    runner, batches = AgentRunner(MemorizeStep(parts.worker, parts.sessions), parts.deliver), parts.batcher()
    parts.readers[parts.topics["scrubbed"].get_topic_name()] = (runner, batches)

    @parts.app.agent(parts.topics["scrubbed"], name="memorize")
    async def memorize(stream: faust.StreamT) -> None:
        await parts.run(runner, batches, stream)


def _forget_agent(parts: Parts) -> None:
    """``deletions`` -> every store; tombstones."""
    runner, batches = AgentRunner(ForgetStep(parts.worker), parts.deliver), parts.batcher()

    @parts.app.agent(parts.topics["deletions"], name="forget")
    async def forget(stream: faust.StreamT) -> None:
        """Deletion requests (from the query service or ``simplemem forget``), carried out on every
        store; the units topic gets the tombstones."""
        await parts.run(runner, batches, stream)


def _consolidate_agent(parts: Parts) -> None:
    """``consolidate`` -> ``consolidation``, ``units`` and the stores."""
    step = ConsolidateStep(parts.worker, parts.deliver)
    runner, batches = AgentRunner(step, parts.deliver), parts.batcher()

    @parts.app.agent(parts.topics["consolidate"], name="consolidate")
    async def consolidate(stream: faust.StreamT) -> None:
        """Stage 2 per tenant, one worker at a time per tenant (requests are keyed by tenant)."""
        await parts.run(runner, batches, stream)


def _consolidation_timer(parts: Parts) -> None:
    """Feeds the consolidate agent."""

    @parts.app.timer(parts.settings.idle_check_seconds)
    async def consolidation_due() -> None:
        """Request the consolidation of the tenants this worker indexed for: after
        ``consolidation_interval_seconds`` or ``consolidation_volume`` new memories."""
        now = time.time()
        for tenant, reason in parts.worker.due_for_consolidation(now):
            request = ConsolidationRequest(tenant_id=tenant, reason=reason, requested_at=datetime.now(UTC))
            await parts.topics["consolidate"].send(key=tenant_key(tenant), value=dumps(request), force=True)


def _reseed_on_rebalance(parts: Parts) -> None:
    """What a rebalance invalidates: the idle timer's view of the table and the gap guards' offsets."""

    @parts.app.on_rebalance_complete.connect
    def reseed(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        """After a restart or a rebalance the table holds sessions this process never saw, and
        every partition resumes from its committed offset."""
        parts.seeded = False
        parts.backlog.reset()
        for guard in parts.guards:
            guard.reset()


def _idle_sessions_timer(parts: Parts) -> None:
    """Closes silent sessions' windows and bounds the table."""
    settings, sessions = parts.settings, parts.sessions

    @parts.app.timer(settings.idle_check_seconds)
    async def idle_sessions() -> None:
        """Ask the memorize agent (through its own partition) to close the windows of silent
        sessions; remove the states of sessions closed longer than the grace period."""
        if not parts.seeded:
            parts.seeded = True
            sessions.seed()
        now = time.time()
        due = sessions.idle(now, settings.pause_seconds, settings.wall_clock_idle_seconds, _scrubbing(parts))
        for key in due:
            record = ScrubbedRecord.idle_check(key, now)
            await parts.topics["scrubbed"].send(key=key.encode(), value=dumps(record), force=True)
        removed = sessions.expire(now, settings.session_state_grace_seconds, _owned_here(parts))
        metrics.SESSIONS_REMOVED.inc(removed)
        metrics.SESSIONS.set(len(sessions))


def _owned_here(parts: Parts) -> Callable[[SessionKey], bool]:
    """Whether a session's partition of the scrubbed topic is this worker's now."""
    topic, partitions = parts.topics["scrubbed"].get_topic_name(), parts.settings.topic_partitions
    return lambda key: (topic, session_partition(key, partitions)) in parts.ownership.owned


def _scrubbing(parts: Parts) -> Callable[[SessionKey], bool]:
    """Whether turns wait to be scrubbed on a session's partition of the turns topic
    (:mod:`simplemem.streams.backlog`): its pause check waits for them."""
    topic, partitions = parts.topics["turns"].get_topic_name(), parts.settings.topic_partitions

    def behind(key: SessionKey) -> bool:
        p = session_partition(key, partitions)
        try:
            end = parts.app.consumer.highwater(TP(topic, p))
        except Exception:  # not assigned here (a rebalance under way): not this timer's to hold
            return False
        return parts.backlog.behind(p, end)

    return behind


def _erasure_timer(parts: Parts) -> None:
    """Keeps the erasure deadline on quiet partitions."""

    @parts.app.timer(parts.settings.erasure_deadline_seconds / 2)
    async def roll_compacted_segments() -> None:
        """Forgotten records are erased within the deadline even on a partition with no traffic
        (:data:`simplemem.streams.erasure.ROLL_KEY`)."""
        await parts.deliver(roll_markers(parts.settings))


def _drift_timer(parts: Parts) -> None:
    """The store drift gauges, every ``drift_check_seconds`` (0: never)."""
    if not parts.settings.drift_check_seconds:
        return

    @parts.app.timer(parts.settings.drift_check_seconds)
    async def store_drift() -> None:
        """Per-tenant unit counts of the two stores, compared off the event loop."""
        try:
            units, tenants = await asyncio.to_thread(parts.worker.store_drift)
        except Exception as exc:  # a store outage: the steps' retries report it
            log.warning("store drift not checked: %s", exc)
            return
        metrics.STORE_DRIFT_UNITS.set(units)
        metrics.STORE_DRIFT_TENANTS.set(tenants)


def _lag_timer(parts: Parts) -> None:
    """The ``simplemem_consumer_lag`` gauge, and the stall check that reads it."""
    app, settings, topics = parts.app, parts.settings, parts.topics
    stall, skipped = StallWatch(settings.stream_stall_seconds), StallWatch(settings.stream_resync_seconds)

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
        by_design = _waiting_by_design(parts)
        if settings.stream_resync_seconds:
            await _reread_if_skipped(parts, skipped, committed, ends, time.monotonic(), by_design)
        if settings.stream_stall_seconds:
            await _stop_if_stalled(parts, stall, committed, ends, by_design)


def _waiting_by_design(parts: Parts) -> bool:
    """A store outage or a table restore: records wait on purpose."""
    recovery = parts.app.tables.recovery  # type: ignore[attr-defined]  # the TableManager has it, its type not
    return outage_in_progress() or (recovery.in_recovery and recovery.need_recovery())


async def _reread_if_skipped(
    parts: Parts,
    watch: StallWatch,
    committed: dict[tuple[str, int], int],
    ends: dict[tuple[str, int], int],
    now: float,
    by_design: bool,
) -> None:
    """Records waiting on a partition whose agent has been idle for ``stream_resync_seconds``, nothing
    buffered for it: Faust dropped them (:mod:`simplemem.streams.gaps` re-reads a hole only once a
    later record comes, and a tail has none). Seeking the partition back to its committed offset
    fetches them again; a record that was only late comes twice, which replays tolerate."""
    idle = {
        topic
        for topic, (runner, batcher) in parts.readers.items()
        if not runner.in_flight and not batcher.queued()
    }
    waiting = {tp: end for tp, end in ends.items() if tp[0] in idle}
    for tp in watch.observe(now, committed, waiting, by_design):
        offset = committed.get(tp, 0)
        log.warning(
            "%s/%d: %d records waited %.0f s with its agent idle; reading them again from offset %d",
            *tp,
            waiting[tp] - offset,
            parts.settings.stream_resync_seconds,
            offset,
        )
        metrics.RESYNCS.inc()
        await parts.app.consumer.seek(TP(*tp), offset)
        watch.forget(tp)


async def _stop_if_stalled(
    parts: Parts,
    stall: StallWatch,
    committed: dict[tuple[str, int], int],
    ends: dict[tuple[str, int], int],
    by_design: bool,
) -> None:
    """(:mod:`simplemem.streams.stall`) Waiting out a store outage or restoring the table is by design."""
    app = parts.app
    stalled = stall.observe(time.monotonic(), committed, ends, by_design)
    if not stalled:
        return
    log.error(
        "no progress for %.0f s on %s with records waiting (no store outage, no restore in progress): "
        "stopping so that the supervisor starts a new worker",
        parts.settings.stream_stall_seconds,
        ", ".join(f"{t}/{p}" for t, p in stalled),
    )
    log.error("consumer partitions: %s", diagnostics.partition_states(app.consumer))
    diagnostics.dump_tasks()
    await app.crash(RuntimeError("stream worker stalled"))


def _stack_dump_task(app: faust.App) -> None:
    """Installs the stack dump on the worker's own loop, once it runs."""

    @app.task
    async def stack_dump_signal() -> None:
        """``kill -USR2`` logs every task's await chain (:mod:`simplemem.streams.diagnostics`)."""
        diagnostics.install(asyncio.get_running_loop())


def _metrics_page(app: faust.App) -> None:
    """The worker's Prometheus metrics on its web port."""

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        # aiohttp takes the charset separately from the content type
        return web.bytes(
            generate_latest(), content_type=CONTENT_TYPE_LATEST.split(";")[0] + "; version=0.0.4"
        )


def _stop_on_shutdown(parts: Parts) -> None:
    """Shutdown does not wait out a store outage: the retries stop, unfinished batches are replayed."""
    worker = parts.worker

    @parts.app.on_before_shutdown.connect
    async def stop_waiting(sender: Any, /, *args: Any, **kwargs: Any) -> None:
        worker.shutdown()
