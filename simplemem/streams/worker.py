"""A worker's components and its scrub and memorize steps as the agent runner drives them (the forget and
consolidate steps: :mod:`simplemem.streams.lifecycle_steps`).

:class:`ScrubStep` (turns -> scrubbed) and :class:`MemorizeStep` (scrubbed -> stores, units,
outcomes) turn records into outputs and a state write (:class:`simplemem.streams.runner.Handled`); the
logic itself is :mod:`simplemem.processors.ingest.streaming`. Heavy work runs on one thread pool per half, so spaCy,
MiniLM and the store writes overlap and the event loop stays free.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, TypeVar

import orjson
from pydantic import ValidationError

from simplemem.processors.ingest.admission import failed_outcome
from simplemem.processors.ingest.streaming import (
    MemoryResult,
    ScrubResult,
    SessionState,
    TurnMemorizer,
    TurnScrubber,
    raw_dead_letter,
)
from simplemem.processors.stores.activity import Arrival
from simplemem.processors.stores.retry import StoreRetry
from simplemem.processors.stores.tombstones import RetriedTombstones
from simplemem.runtime import Runtime, open_runtime
from simplemem.schemas.accounting import MessageOutcome, Outcome
from simplemem.schemas.codec import dumps
from simplemem.schemas.keys import SessionKey, check_id, message_key
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import (
    DeadLetter,
    FailurePoint,
    ScrubbedRecord,
    SourceRef,
)
from simplemem.streams import metrics
from simplemem.streams.erasure import turn_output, turn_tombstones
from simplemem.streams.gaps import Item
from simplemem.streams.runner import Handled, Output

T = TypeVar("T")


class Worker:
    """One worker process's components: built on first use, so `--help` loads no model."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.scrub_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scrub")
        self.embed_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self.memory_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memorize")
        # consolidation has a thread of its own: a large tenant's run (or a store slow to seal its
        # writes) must not hold the indexing of every other tenant's turns
        self.consolidate_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="consolidate")
        # held by a consolidation run and by forgetting: no abstract is made from units being forgotten
        self.consolidation_lock = threading.Lock()
        self.decided = {Outcome.INDEXED: 0, Outcome.FILTERED: 0}
        self.retry = StoreRetry(settings.stage_retry_attempts, settings.stage_retry_max_seconds, _blocked)
        # tenants this worker indexed for since their last consolidation: new units, since when
        self.unconsolidated: dict[str, tuple[int, float]] = {}

    @cached_property
    def runtime(self) -> Runtime:
        return open_runtime(self.settings)

    @cached_property
    def tombstones(self) -> RetriedTombstones:
        """The steps' tombstone look-ups wait out a Redis outage like their writes do."""
        return RetriedTombstones(self.runtime.tombstones, self.retry)

    @cached_property
    def turn_scrubber(self) -> TurnScrubber:
        rt = self.runtime
        return TurnScrubber(
            self.settings, rt.nlp_preparer, rt.pipeline.analyzer.embed, rt.buffer, self.tombstones
        )

    @cached_property
    def turn_memorizer(self) -> TurnMemorizer:
        pipeline = self.runtime.pipeline
        pipeline.tombstones = self.tombstones
        return TurnMemorizer(pipeline, time.time)

    def write(self, call: Callable[[], None]) -> None:
        """One store write, timed, retried through outages (cancelled at shutdown)."""
        start = time.perf_counter()
        self.retry(call)
        metrics.STORE_WRITE_SECONDS.observe(time.perf_counter() - start)

    def warm_up(self) -> None:
        self.turn_scrubber.run([])
        self.turn_memorizer.pipeline.warm_up()
        self.runtime.embedder.encode(["warm up"])

    def seed_tombstones(self) -> int:
        """Re-add every request of the deletions topic to the tombstone set (Redis may have
        restarted empty): no turn forgotten before this worker started is indexed by it."""
        from simplemem.streams.deletions import seed_tombstones

        return seed_tombstones(self.settings, self.runtime.tombstones)

    def store_drift(self) -> tuple[int, int]:
        """(units, tenants) by which the lexical and the vector store's per-tenant counts differ:
        a cheap check for drift (``simplemem reconcile`` finds the ids and repairs them)."""
        rt = self.runtime
        differences = [abs(rt.lexical.count(t) - rt.vectors.count(t)) for t in rt.lexical.tenants()]
        return sum(differences), sum(1 for d in differences if d)

    def due_for_consolidation(self, now: float) -> list[tuple[str, str]]:
        """(tenant, reason) for the tenants with ``consolidation_volume`` new memories, or with new
        memories for ``consolidation_interval_seconds``; each is forgotten here once returned."""
        s = self.settings
        due = []
        for tenant, (count, since) in list(self.unconsolidated.items()):
            if count >= s.consolidation_volume:
                due.append((tenant, "volume"))
            elif now - since >= s.consolidation_interval_seconds:
                due.append((tenant, "interval"))
            else:
                continue
            del self.unconsolidated[tenant]
        return due

    def shutdown(self) -> None:
        """Stop waiting for stores and let the threads go: unfinished batches are replayed."""
        self.retry.cancel()
        for pool in (self.scrub_pool, self.embed_pool, self.memory_pool, self.consolidate_pool):
            pool.shutdown(wait=False, cancel_futures=True)

    async def in_thread(self, pool: ThreadPoolExecutor, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)

    def count(self, result: MemoryResult) -> None:
        metrics.DUPLICATES.inc(result.duplicates)
        metrics.TURNS_FORGOTTEN.inc(result.forgotten)
        metrics.TURNS_WINDOWED.inc(result.turns - result.duplicates)
        for r in result.windows:
            metrics.WINDOWS.labels("kept" if r.kept else "filtered").inc()
        for o in result.outcomes:
            metrics.TURNS_OUT.labels(o.outcome.value).inc()
            if o.outcome in self.decided:
                self.decided[o.outcome] += 1
        now = time.time()
        for u in result.units:
            metrics.UNITS.labels(u.kind.value).inc()
            count, since = self.unconsolidated.get(u.tenant_id, (0, now))
            self.unconsolidated[u.tenant_id] = (count + 1, since)
        total = sum(self.decided.values())
        if total:
            metrics.DISCARD_RATE.set(self.decided[Outcome.FILTERED] / total)


def outage_in_progress() -> bool:
    """Whether a store write is waiting for an unreachable store now."""
    return any(s.value > 0 for m in metrics.STORE_BLOCKED.collect() for s in m.samples)


def _blocked(store: str, down: bool) -> None:
    """The outage gauge counts, per store, the writes waiting for it."""
    gauge = metrics.STORE_BLOCKED.labels(store)
    gauge.inc() if down else gauge.dec()


def dead_letter_outputs(dead: list[DeadLetter], failed: list[MessageOutcome]) -> list[Output]:
    """Dead letters and failed outcomes as records (each keyed by its tenant and message)."""
    out: list[Output] = []
    for letter in dead:
        metrics.DEAD_LETTERS.labels(letter.stage.value, letter.code).inc()
        key = (
            message_key(letter.tenant_id, letter.message_id)
            if letter.tenant_id and letter.message_id
            else None
        )
        out.append(("dlq", key, dumps(letter)))
    for outcome in failed:
        metrics.TURNS_OUT.labels(outcome.outcome.value).inc()
        out.append(("outcomes", message_key(outcome.tenant_id, outcome.message_id), dumps(outcome)))
    return out


def _ids_of(raw: bytes) -> tuple[str, str | None, str] | None:
    """(tenant, session, message) of a raw turn or scrubbed record, when it names valid ones."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if isinstance(data, dict) and isinstance(data.get("message"), dict):
        data = data["message"]  # a scrubbed record: its turn
    if not isinstance(data, dict):
        return None
    tenant, session, message = data.get("tenant_id"), data.get("session_id"), data.get("message_id")
    if not (isinstance(tenant, str) and isinstance(message, str)):
        return None
    try:
        check_id(tenant, tenant=True)
        check_id(message)
    except ValueError:
        return None
    return tenant, session if isinstance(session, str) else None, message


def poison_outputs(
    item: Item,
    point: FailurePoint,
    error: BaseException,
    settings: Settings,
    source: SourceRef | None = None,
) -> list[Output]:
    """A record a step cannot process: its dead letter and, when it names its turn, that turn's
    failed outcome (every accepted turn is accounted for). Raw input (no ``source`` given: the
    record is the turn) is quoted, capped; a scrubbed record is not: ``source`` points at its turn."""
    reason = f"{type(error).__name__}: {error}"
    if source is None:
        letter = raw_dead_letter(point, "internal_error", reason, item.source, item.value, settings)
    else:
        letter = DeadLetter(
            stage=point,
            code="internal_error",
            reason=reason[: settings.dlq_reason_chars],
            source=source,
            failed_at=datetime.now(UTC),
        )
    ids = _ids_of(item.value)
    failed = []
    if ids is not None:
        tenant, session, message = ids
        letter = letter.model_copy(update={"tenant_id": tenant, "session_id": session, "message_id": message})
        failed.append(failed_outcome(tenant, session, message, reason[: settings.dlq_reason_chars]))
    return dead_letter_outputs([letter], failed)


class ScrubStep:
    """turns -> scrubbed: validate, scrub, spaCy (prepare); MiniLM and the buffer (finish)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    async def prepare(self, items: list[Item]) -> ScrubResult:
        metrics.TURNS_IN.inc(len(items))
        metrics.STAGE_RECORDS.labels("scrub").inc(len(items))
        raw = [(i.source, i.value) for i in items]
        return await self.worker.in_thread(self.worker.scrub_pool, self._scrub, raw)

    def _scrub(self, raw: list[Any]) -> ScrubResult:
        with metrics.STAGE_SECONDS.labels("scrub").time():
            return self.worker.turn_scrubber.prepare(raw)

    async def finish(self, prepared: ScrubResult) -> Handled:
        result = await self.worker.in_thread(self.worker.embed_pool, self._embed, prepared)
        await self.worker.in_thread(self.worker.embed_pool, self._account, result)
        records = [turn_output(r, self.worker.settings) for r in result.records]
        metrics.TURNS_FORGOTTEN.inc(result.forgotten)
        return Handled([*records, *dead_letter_outputs(result.dead, result.failed)])

    def _account(self, result: ScrubResult) -> None:
        """The tenants' accounting (Redis): the turns taken in, with their arrival; those that failed
        their analysis, decided as failed (the memorize step's commit counts the rest)."""
        activity, now = self.worker.runtime.activity, time.time()
        took = [
            Arrival(r.tenant_id, r.message.message_id, bool(r.message.pii_types), r.scrubbed_at or now)
            for r in result.records
            if r.message is not None
        ]
        took += [Arrival(o.tenant_id, o.message_id, False, now) for o in result.failed]
        self.worker.write(lambda: activity.took(took))
        if result.failed:
            self.worker.write(lambda: activity.decided(result.failed, now))

    def _embed(self, prepared: ScrubResult) -> ScrubResult:
        with metrics.STAGE_SECONDS.labels("embed").time():
            return self.worker.turn_scrubber.finish(prepared, self.worker.write)

    def poison(self, item: Item, error: BaseException) -> list[Output]:
        return poison_outputs(item, FailurePoint.ANALYZE, error, self.worker.settings)


# Writes session states (encoded key -> JSON, None removes) durably, then into the table's copy.
StateWrite = Callable[[Mapping[bytes, bytes | None]], Awaitable[None]]


class SessionTable:
    """The sessions table (bytes -> bytes) as session states, and what the timers need of it.
    ``write``: how a batch's states reach the table (:mod:`simplemem.streams.changelog` in a worker:
    acknowledged by Kafka first); without it, straight into ``table``."""

    def __init__(self, table: MutableMapping[bytes, bytes], write: StateWrite | None = None) -> None:
        self.table = table
        self.write = write
        self.pending_since: dict[SessionKey, float] = {}  # an open window -> its last turn (wall clock)
        self.settled_since: dict[SessionKey, float] = {}  # open, nothing undecided -> its last turn
        self.closed_since: dict[SessionKey, float] = {}  # a closed session -> when it was closed

    def get(self, key: SessionKey) -> SessionState | None:
        raw = self.table.get(key.encode())
        return None if raw is None else SessionState.model_validate_json(raw)

    def put(self, key: SessionKey, state: SessionState) -> None:
        self.table[key.encode()] = dumps(state)
        self.track(key, state)

    async def put_all(self, states: Mapping[SessionKey, SessionState]) -> None:
        """A batch's states, durable before this returns (the batch is acknowledged after it)."""
        if self.write is None:
            for key, state in states.items():
                self.put(key, state)
            return
        await self.write({key.encode(): dumps(state) for key, state in states.items()})
        for key, state in states.items():
            self.track(key, state)

    def track(self, key: SessionKey, state: SessionState) -> None:
        if state.buffer is not None and state.buffer.pending:
            self.pending_since[key] = state.buffer.last_seen
        else:
            self.pending_since.pop(key, None)
        if state.buffer is not None and not state.buffer.pending:
            self.settled_since[key] = state.buffer.last_seen
        else:
            self.settled_since.pop(key, None)
        if state.closed_at is not None:
            self.closed_since[key] = state.closed_at
        else:
            self.closed_since.pop(key, None)

    def seed(self) -> None:
        """After a restart or a rebalance: learn the open and closed sessions this process now owns."""
        self.pending_since.clear()
        self.settled_since.clear()
        self.closed_since.clear()
        for raw_key, raw in list(self.table.items()):
            self.track(SessionKey.decode(raw_key), SessionState.model_validate_json(raw))

    def idle(
        self,
        now: float,
        pause_seconds: float,
        idle_seconds: float,
        held: Callable[[SessionKey], bool] = lambda key: False,
    ) -> list[SessionKey]:
        """Sessions due a silence check (each returned once): undecided messages that waited
        ``pause_seconds`` (unless ``held``: turns still to scrub; asked again next time), or an open
        session with nothing undecided silent for ``idle_seconds``."""
        due = [k for k, last in self.pending_since.items() if now - last >= pause_seconds and not held(k)]
        for key in due:
            del self.pending_since[key]
        quiet = [k for k, last in self.settled_since.items() if now - last >= idle_seconds]
        for key in quiet:
            del self.settled_since[key]
        return due + quiet

    def expire(
        self, now: float, grace_seconds: float, mine: Callable[[SessionKey], bool] = lambda key: True
    ) -> int:
        """Remove the states of sessions closed longer than ``grace_seconds`` ago; returns how many.
        Only ``mine``: the table also holds standby copies of other workers' sessions, possibly
        behind their owner's (a session reopened there); their removal is the owner's."""
        removed = 0
        for key, closed in list(self.closed_since.items()):
            if now - closed < grace_seconds:
                continue
            del self.closed_since[key]
            if not mine(key):
                continue
            state = self.get(key)
            if state is not None and state.closed_at is not None:  # not reopened since
                del self.table[key.encode()]
                removed += 1
        return removed

    def __len__(self) -> int:
        return len(self.table)


class MemorizeStep:
    """scrubbed -> stores: windows, entropy, decomposition, indexing; the session states last."""

    def __init__(self, worker: Worker, sessions: SessionTable) -> None:
        self.worker = worker
        self.sessions = sessions

    async def prepare(self, items: list[Item]) -> list[ScrubbedRecord]:
        metrics.STAGE_RECORDS.labels("memorize").inc(len(items))
        # A tombstone (a forgotten turn's erasure) is for Kafka's cleaner, not for this step.
        live = [i for i in items if i.value]  # (an Item's value is b"" for a tombstone)
        return [ScrubbedRecord.model_validate_json(i.value) for i in live]  # a bad one: found one by one

    async def finish(self, records: list[ScrubbedRecord]) -> Handled:
        states = {}
        for key in {r.session_key for r in records}:
            state = self.sessions.get(key)
            if state is not None:
                states[key] = state
        result = await self.worker.in_thread(self.worker.memory_pool, self._memorize, records, states)
        units: list[Output] = [("units", u.id.encode(), dumps(u)) for u in result.units]
        units += [("units", uid.encode(), None) for _, uid in result.report.replaced]  # edited away
        outcomes = dead_letter_outputs(result.dead, [])
        outcomes += [("outcomes", message_key(o.tenant_id, o.message_id), dumps(o)) for o in result.outcomes]
        outcomes += turn_tombstones(result.forgotten_records, self.worker.settings)

        async def commit() -> None:
            changed = {key: state for key, state in result.states.items() if state is not states.get(key)}
            await self.sessions.put_all(changed)
            self.worker.count(result)

        return Handled([*units, *outcomes], commit)

    def _memorize(
        self, records: list[ScrubbedRecord], states: dict[SessionKey, SessionState]
    ) -> MemoryResult:
        with metrics.STAGE_SECONDS.labels("memorize").time():
            return self.worker.turn_memorizer.run(records, states, self.worker.write)

    def poison(self, item: Item, error: BaseException) -> list[Output]:
        """A scrubbed record holds no raw input: its dead letter points at its turn, when it names one
        (``dlq replay`` re-reads the turn there), and quotes nothing."""
        try:
            source = ScrubbedRecord.model_validate_json(item.value).source or item.source
        except ValidationError:
            source = item.source
        return poison_outputs(item, FailurePoint.MEMORIZE, error, self.worker.settings, source)
