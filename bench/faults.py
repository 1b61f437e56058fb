"""Faults under a sustained stream: nothing lost, nothing stored twice, bad input dead-lettered.

    python -m bench.faults [--duration 600] [--rate 120] [--tenants 20] [--seed 7]

The services must be up (simplemem infra up) and are stopped and started through simplemem.infra.stack, so
the SIMPLEMEM_* ports and SIMPLEMEM_INFRA_DIR of this process choose which ones. Two workers run in
fresh topics, index, collection and Redis prefix (bench.stream.bench_env) while LoCoMo turns from
``--tenants`` tenants are published at ``--rate`` turns/s with 1% malformed events
(bench/fault_load.py). Meanwhile, at random moments of a seeded schedule with quiet periods between
them: a worker is SIGKILLed ``--kills`` times (a replacement starts at once, as a supervisor would),
OpenSearch and Milvus are each stopped for ``--outage`` seconds, Kafka is restarted once. Workers that
exit by themselves are restarted too, and counted.

Then, once every acknowledged record has an outcome or a dead letter (or ``--drain-timeout``), it
reports (bench/fault_audit.py): turns published, indexed, filtered, dead-lettered, lost; duplicate
memories (units topic, OpenSearch, Milvus); malformed events found in the DLQ; per fault, the time from
its end until the workers' lag (committed offsets of the group on the turns and scrubbed topics vs
their end offsets) is under ``--lag-bound`` and stays there ``--hold`` seconds; the publish-to-queryable
latency (Redis buffer or outcome; fact-bearing turns, as bench.stream) of the turns published outside
the fault windows (a fault's start to its recovery). Exit status 1 if a turn is lost, a memory is
stored twice, or a malformed event is missing from the DLQ.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import random
import re
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from bench import fault_audit as audit
from bench.common import conversations, event_lines, parser
from bench.fault_load import MALFORMED_KINDS, Publisher, load
from bench.stream import bench_env, fact_turns
from simplemem.infra import stack
from simplemem.infra.settings import InfraSettings
from simplemem.schemas.settings import REPO_ROOT, Settings, settings_for
from tests.helpers.workers import WorkerProcess

SERVICE_FAULTS = ("opensearch", "milvus", "kafka")


def say(t0: float, message: str) -> None:
    """Progress, with the seconds since the stream started."""
    print(f"[{time.perf_counter() - t0:7.1f}s] {message}", flush=True)


class Follower:
    """Reads the outcomes and DLQ topics from their start for the whole run (a plain consumer, no
    group): each turn's latest outcome and when it first had one, and every dead letter."""

    def __init__(self, settings: Settings, seen: dict[audit.Turn, float]) -> None:
        self.settings = settings
        self.outcomes: dict[audit.Turn, str] = {}
        self.letters: list[audit.Letter] = []
        self.seen = seen
        self.last_at = 0.0  # when the latest outcome arrived

    async def run(self, stop: asyncio.Event) -> None:
        s = self.settings
        outcomes_topic = s.topic(s.outcomes_topic)
        topics = [outcomes_topic, s.topic(s.dlq_topic)]
        tps = [TopicPartition(t, p) for t in topics for p in range(s.topic_partitions)]
        consumer = AIOKafkaConsumer(bootstrap_servers=s.kafka_endpoint, enable_auto_commit=False)
        await consumer.start()
        await asyncio.sleep(0)  # see simplemem.streams.kafka_io._started_consumer
        try:
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            while not stop.is_set():
                batch = await consumer.getmany(timeout_ms=200)
                now = time.perf_counter()
                for tp, msgs in batch.items():
                    for m in msgs:
                        if not m.value:
                            continue
                        if tp.topic == outcomes_topic:
                            o = orjson.loads(m.value)
                            turn = (o["tenant_id"], o["message_id"])
                            self.outcomes[turn] = o["outcome"]
                            self.seen.setdefault(turn, now)
                            self.last_at = now
                        else:
                            self.letters.append(audit.Letter.parse(m.value))
        finally:
            await consumer.stop()


class BufferWatcher:
    """When turns enter the Redis buffer (a thread polling every 0.1 s). It reads only the buffered
    message ids (HKEYS, the keys RedisBuffer writes) of the sessions published to in the last minute:
    ``RedisBuffer.recent`` would decode every buffered vector of every tenant ten times a second."""

    def __init__(self, settings: Settings, publisher: Publisher, seen: dict[audit.Turn, float]) -> None:
        from simplemem.processors.retrieval.buffer import RedisBuffer

        self.buffer = RedisBuffer(
            settings.redis_endpoint,
            settings.buffer_turns,
            settings.buffer_ttl_seconds,
            prefix=settings.redis_key_prefix,
        )
        self.publisher = publisher
        self.seen = seen
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            now = time.perf_counter()
            recent = self.publisher.recent_sessions.copy()
            sessions = [k for k, t in recent.items() if now - t < 60]
            pipe = self.buffer.r.pipeline(transaction=False)
            for tenant, session in sessions:
                pipe.hkeys(self.buffer.keys.buffer_turns(tenant, session))
            rows = pipe.execute()
            now = time.perf_counter()
            for (tenant, _), mids in zip(sessions, rows, strict=True):
                for mid in mids:
                    self.seen.setdefault((tenant, mid.decode()), now)
            time.sleep(0.1)


class LagMonitor:
    """The workers' lag once a second: the group's committed offsets on the turns and scrubbed
    topics against their end offsets (None while Kafka does not answer)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        s = settings
        self.tps = [
            TopicPartition(s.topic(t), p)
            for t in (s.turns_topic, s.scrubbed_topic)
            for p in range(s.topic_partitions)
        ]
        self.samples: list[tuple[float, int | None]] = []

    async def _sample(self, admin: AIOKafkaAdminClient, consumer: AIOKafkaConsumer) -> int:
        committed = await admin.list_consumer_group_offsets(self.settings.stream_app_id)
        ends = await consumer.end_offsets(self.tps)
        done = {tp: max(0, committed[tp].offset) if tp in committed else 0 for tp in self.tps}
        return sum(max(0, ends[tp] - done[tp]) for tp in self.tps)

    async def run(self, stop: asyncio.Event) -> None:
        endpoint = self.settings.kafka_endpoint
        while not stop.is_set():
            admin = AIOKafkaAdminClient(bootstrap_servers=endpoint, request_timeout_ms=5000)
            consumer = AIOKafkaConsumer(bootstrap_servers=endpoint, enable_auto_commit=False)
            try:
                await asyncio.wait_for(admin.start(), 10)
                await asyncio.wait_for(consumer.start(), 10)
                await asyncio.sleep(0)
                while not stop.is_set():
                    lag = await asyncio.wait_for(self._sample(admin, consumer), 5)
                    self.samples.append((time.perf_counter(), lag))
                    await asyncio.sleep(1.0)
            except Exception:  # Kafka away: note the gap, reconnect with new clients
                self.samples.append((time.perf_counter(), None))
                await asyncio.sleep(1.0)
            finally:
                for close in (admin.close, consumer.stop):
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(close(), 10)

    def values(self, start: float, end: float) -> list[int]:
        return [lag for t, lag in self.samples if start <= t <= end and lag is not None]

    def peak(self, start: float, end: float) -> int | None:
        return max(self.values(start, end), default=None)

    async def recovered(self, since: float, bound: int, hold: float, timeout: float) -> float | None:
        """The first moment after ``since`` from which the lag stayed at most ``bound`` for ``hold``
        seconds (None after ``timeout``): a dip during a rebalance does not count as recovered."""
        deadline = since + timeout
        while time.perf_counter() < deadline:
            start: float | None = None
            for t, lag in list(self.samples):
                if t < since:
                    continue
                if lag is None or lag > bound:
                    start = None
                elif start is None:
                    start = t
            if start is not None and self.samples[-1][0] - start >= hold:
                return start
            await asyncio.sleep(1.0)
        return None


class Workers:
    """The worker processes, supervised: a killed worker is replaced at once, and one that exits by
    itself (a defect) is restarted and recorded."""

    def __init__(self, env: dict[str, str], logs: Path, count: int) -> None:
        self.env, self.logs = env, logs
        self.started = 0
        self.exits: list[str] = []
        self.procs = [self._spawn(slot) for slot in range(count)]

    def _spawn(self, slot: int) -> WorkerProcess:
        self.started += 1
        return WorkerProcess(self.env, self.logs / f"worker{slot}-{self.started}.log").start()

    def kill(self, slot: int) -> WorkerProcess:
        self.procs[slot].kill(signal.SIGKILL)
        self.procs[slot] = self._spawn(slot)
        return self.procs[slot]

    def supervise(self) -> list[str]:
        """Restart the workers that exited; returns what happened."""
        events = []
        for slot, w in enumerate(self.procs):
            code = w.proc.poll() if w.proc else None
            if code is not None:
                events.append(f"worker {slot} exited with {code} ({w.log_path}); restarted")
                self.procs[slot] = self._spawn(slot)
        self.exits += events
        return events

    def dump_stacks(self) -> None:
        """Every live worker writes its threads' and tasks' stacks to its log (SIGUSR1: the Faust
        worker's handler, from mode)."""
        for w in self.procs:
            if w.proc is not None and w.proc.poll() is None:
                os.killpg(w.proc.pid, signal.SIGUSR1)
        time.sleep(1)

    def stop(self) -> None:
        for w in self.procs:
            w.stop()


@dataclass
class Fault:
    kind: str  # kill, opensearch, milvus, kafka
    planned: float  # seconds after the stream started
    start: float | None = None
    end: float | None = None  # service up again / replacement worker ready
    recovered: float | None = None
    note: str = ""

    def window(self, timeout: float) -> tuple[float, float] | None:
        """From the fault's start to its recovery (or the recovery timeout, if it never recovered)."""
        if self.start is None:
            return None
        end = self.recovered or ((self.end or self.start) + timeout)
        return (self.start, end)


def schedule(args: argparse.Namespace, rng: random.Random) -> list[Fault]:
    """The faults in a random order, each at a random moment in the first half of its own slot of
    the run (after the warm-up, before the tail): spread out, with quiet time between them."""
    order = ["kill"] * args.kills + list(args.services)
    rng.shuffle(order)
    duration, warmup, tail = args.duration, args.warmup, args.tail
    slot = max(1.0, (duration - warmup - tail) / max(1, len(order)))
    return [Fault(k, warmup + i * slot + rng.uniform(0, slot / 2)) for i, k in enumerate(order)]


@dataclass
class Context:
    t0: float
    settings: Settings
    infra: InfraSettings
    workers: Workers
    lag: LagMonitor
    rng: random.Random
    outage: float
    bound: int
    hold: float
    recover_timeout: float
    drain: str = ""
    committed: dict[int, int] = field(default_factory=dict)


async def inject(fault: Fault, ctx: Context) -> None:
    """Cause one fault, wait for its end, then for the lag to recover."""
    fault.start = time.perf_counter()
    if fault.kind == "kill":
        slot = ctx.rng.randrange(len(ctx.workers.procs))
        replacement = ctx.workers.kill(slot)
        say(ctx.t0, f"SIGKILL worker {slot}; replacement started ({replacement.log_path.name})")
        try:
            await asyncio.to_thread(replacement.wait_ready, 300)
            fault.note = f"worker {slot}; replacement ready after {time.perf_counter() - fault.start:.0f}s"
        except (RuntimeError, TimeoutError) as exc:
            fault.note = f"worker {slot}; replacement not ready: {exc}"
    else:
        try:
            await asyncio.to_thread(stack.down, [fault.kind], ctx.infra)
            say(ctx.t0, f"{fault.kind} stopped")
            if fault.kind != "kafka":
                await asyncio.sleep(ctx.outage)
        finally:
            fault.note = await restart(fault.kind, ctx)
        fault.note += f", down {time.perf_counter() - fault.start:.0f}s in all"
    fault.end = time.perf_counter()
    say(ctx.t0, f"{fault.kind} fault over ({fault.note}); waiting for the lag to recover")
    fault.recovered = await ctx.lag.recovered(fault.end, ctx.bound, ctx.hold, ctx.recover_timeout)
    if fault.recovered is None:
        say(ctx.t0, f"lag not recovered {ctx.recover_timeout:.0f}s after the {fault.kind} fault")
    else:
        say(ctx.t0, f"lag recovered {fault.recovered - fault.end:.1f}s after the {fault.kind} fault")


async def restart(name: str, ctx: Context, attempts: int = 3) -> str:
    """Start a stopped service again; a start that times out (a loaded machine) is tried again."""
    for attempt in range(1, attempts + 1):
        try:
            await asyncio.to_thread(stack.up, [name], ctx.infra)
            return f"up at attempt {attempt}"
        except stack.InfraError as exc:
            say(ctx.t0, f"{name} did not start (attempt {attempt}): {str(exc).splitlines()[0]}")
    raise RuntimeError(f"{name} did not start after {attempts} attempts; the run cannot go on")


async def sleep_until(moment: float, workers: Workers, t0: float) -> None:
    """Wait, restarting workers that exit meanwhile."""
    while (left := moment - time.perf_counter()) > 0:
        for event in workers.supervise():
            say(t0, event)
        await asyncio.sleep(min(1.0, left))


async def stream_with_faults(
    args: argparse.Namespace, ctx: Context, publisher: Publisher, faults: list[Fault]
) -> Follower:
    """Publish, inject the faults, stop publishing after the tail, drain; returns the follower."""
    seen: dict[audit.Turn, float] = {}
    follower = Follower(ctx.settings, seen)
    watcher = BufferWatcher(ctx.settings, publisher, seen)
    stop_publishing, stop_watching = asyncio.Event(), asyncio.Event()
    tasks = [
        asyncio.create_task(follower.run(stop_watching)),
        asyncio.create_task(ctx.lag.run(stop_watching)),
        asyncio.create_task(asyncio.to_thread(watcher.run)),
    ]
    publishing = asyncio.create_task(publisher.run(stop_publishing))
    after = ctx.t0
    for fault in faults:
        await sleep_until(max(ctx.t0 + fault.planned, after + args.quiet), ctx.workers, ctx.t0)
        await inject(fault, ctx)
        after = fault.recovered or time.perf_counter()
    await sleep_until(max(ctx.t0 + args.duration, after + args.tail), ctx.workers, ctx.t0)
    stop_publishing.set()
    await publishing
    say(ctx.t0, f"published {publisher.acknowledged} records; draining")
    ctx.drain = await drain(args, ctx, publisher, follower)
    say(ctx.t0, f"drain {ctx.drain}")
    ctx.committed = await committed_offsets(ctx.settings, ctx.settings.topic(ctx.settings.turns_topic))
    await asyncio.sleep(3)  # the last outcomes' units reach their topic
    stop_watching.set()
    watcher.stop.set()
    await asyncio.gather(*tasks)
    return follower


async def drain(args: argparse.Namespace, ctx: Context, publisher: Publisher, follower: Follower) -> str:
    """Wait until every acknowledged record has a fate (an outcome or a dead letter); stop early when
    nothing changed for two minutes (what is missing then will not come). Returns how it ended."""
    turns_topic = ctx.settings.topic(ctx.settings.turns_topic)
    start = changed = time.perf_counter()
    last = -1
    while True:
        f = audit.fates(publisher.records, follower.outcomes, follower.letters, turns_topic)
        unresolved = len(f.lost) + len(f.malformed_missing)
        now = time.perf_counter()
        lag = ctx.lag.samples[-1][1] if ctx.lag.samples else None
        if unresolved == 0:
            return f"complete {now - start:.0f}s after publishing ended"
        if unresolved != last:
            last, changed = unresolved, now
        elif now - changed > 120:
            ctx.workers.dump_stacks()  # into their logs: where the stalled stages wait
            return f"stopped: {unresolved} records without a fate, none for 120s (lag {lag})"
        if now - start > args.drain_timeout:
            return f"timed out after {now - start:.0f}s: {unresolved} records without a fate, lag {lag}"
        await sleep_until(now + 5, ctx.workers, ctx.t0)


async def committed_offsets(settings: Settings, topic: str) -> dict[int, int]:
    """Partition -> the worker group's committed offset on ``topic``."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
    await admin.start()
    try:
        committed = await admin.list_consumer_group_offsets(settings.stream_app_id)
    finally:
        await admin.close()
    return {tp.partition: meta.offset for tp, meta in committed.items() if tp.topic == topic}


def worker_errors(logs: Path) -> Counter[str]:
    """Agent crashes and errors in the worker logs, by message (for the defect report)."""
    found: Counter[str] = Counter()
    for log in sorted(logs.glob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if "Crashed reason=" in line or "[ERROR]" in line or "[CRITICAL]" in line:
                found[re.sub(r"^\[[^]]*\] \[\d+\] ", "", line)[:160]] += 1
    return found


def print_report(
    args: argparse.Namespace,
    ctx: Context,
    publisher: Publisher,
    follower: Follower,
    faults: list[Fault],
) -> int:
    """Print every number; returns the exit status."""
    from simplemem.streams.kafka_io import read_topic

    s = ctx.settings
    f = audit.fates(publisher.records, follower.outcomes, follower.letters, s.topic(s.turns_topic))
    units = audit.units_on_topic((m.key, m.value) for m in asyncio.run(read_topic(s, s.topic(s.units_topic))))
    tenants = {r.tenant for r in publisher.records}
    stores = {
        "units topic": audit.topic_duplicates(units),
        "opensearch": audit.opensearch_rows(s, units),
        "milvus": audit.milvus_rows(s, units, tenants),
    }
    windows = [w for fault in faults if (w := fault.window(args.recover_timeout))]
    lat = audit.latency(publisher.records, follower.seen, windows)
    found, total = f.malformed_found
    duplicates = sum(st.duplicates for st in stores.values())
    sent = [r.sent_at for r in publisher.records if r.sent_at is not None]
    positions = {r.turn: r.position for r in publisher.records if r.turn and r.position}
    consumed = sum(positions[t][1] < ctx.committed.get(positions[t][0], 0) for t in f.lost)
    first_fault = min((x.start for x in faults if x.start), default=time.perf_counter())
    base = ctx.lag.values(ctx.t0 + args.warmup / 2, first_fault)
    rows: list[tuple[str, object]] = [
        ("tenants / target rate", f"{len(tenants)} / {args.rate:g} turns/s"),
        ("records published (acknowledged)", f"{f.published} in {max(sent) - min(sent):.0f}s"),
        (
            "  valid turns / malformed events",
            f"{f.valid} / {total} ({100 * total / max(1, f.published):.2f}%)",
        ),
        ("  unacknowledged / sent more than once", f"{f.unacknowledged} / {f.republished}"),
        ("  publisher backlog (max records queued)", publisher.backlog_max),
        ("drain", ctx.drain),
        (
            "decided turns per second (whole run)",
            f"{sum(f.outcomes.values()) / max(1e-9, follower.last_at - ctx.t0):.1f}",
        ),
        ("lag before the first fault p50 / max", f"{_pct(base, 50)} / {max(base, default='-')}"),
        ("valid turns indexed", f.outcomes["indexed"]),
        ("valid turns filtered", f.outcomes["filtered"]),
        ("valid turns failed (outcome)", f.outcomes["failed"]),
        ("valid turns dead-lettered", f"{sum(f.valid_dead.values())} {dict(f.valid_dead)}"),
        ("valid turns LOST (no outcome, no dead letter)", len(f.lost)),
        ("  of which consumed by the group (offset committed)", consumed),
        ("dead letters by stage/code", dict(sorted(f.letters_by_code.items()))),
        ("dead letters for a record already dead-lettered", f.duplicate_letters),
        ("dead letters matching no published record", f.unmatched_letters),
        ("malformed in DLQ by kind (found/published)", {k: f"{v[1]}/{v[0]}" for k, v in f.malformed.items()}),
        ("malformed kind -> DLQ code", dict(sorted(f.malformed_codes.items()))),
    ]
    for name, st in stores.items():
        counts = f"{st.rows} / {st.distinct_ids} / {st.distinct_contents} / {st.missing} / {st.unlisted}"
        rows.append((f"{name}: rows / ids / contents / missing / unlisted", counts))
        rows.append((f"{name}: DUPLICATE memories", st.duplicates))
    rows += [
        ("fact turns outside fault windows: measured", lat["measured"]),
        (
            "  never queryable / excluded (in fault windows)",
            f"{lat['never_queryable']} / {lat['in_fault_windows']}",
        ),
        ("  publish-to-queryable p50 / p99 / max (s)", _seconds(lat)),
        ("worker exits not caused by the bench", len(ctx.workers.exits)),
    ]
    save(args.out, ctx, faults, publisher, follower.seen, rows)
    width = max(len(name) for name, _ in rows)
    print("\n== results")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print_faults(ctx, faults)
    details = [*ctx.workers.exits, *(f"malformed not in the DLQ: {m}" for m in f.malformed_missing[:10])]
    details += [f"lost: {t} at {positions.get(t)}" for t in f.lost[:10]]
    details += [f"{n} x {line}" for line, n in worker_errors(ctx.workers.logs).most_common(10)]
    for line in details:
        print(f"   {line}")
    print(f"\nfaults: lost={len(f.lost)} duplicates={duplicates} malformed_in_dlq={found}/{total}")
    return 1 if f.lost or duplicates or found < total else 0


def save(
    path: Path,
    ctx: Context,
    faults: list[Fault],
    publisher: Publisher,
    seen: dict[audit.Turn, float],
    rows: list[tuple[str, object]],
) -> None:
    """The run's raw timings for a closer look (seconds since the stream started): the faults, the
    lag samples, and each fact-bearing turn's publication and first queryable moment."""

    def rel(t: float | None) -> float | None:
        return None if t is None else round(t - ctx.t0, 3)

    data = {
        "results": {name.strip(): str(value) for name, value in rows},
        "faults": [
            {
                "kind": f.kind,
                "start": rel(f.start),
                "end": rel(f.end),
                "recovered": rel(f.recovered),
                "note": f.note,
            }
            for f in faults
        ],
        "lag": [(rel(t), lag) for t, lag in ctx.lag.samples],
        "fact_turns": [
            (r.tenant, r.message_id, rel(r.sent_at), rel(seen.get(r.turn)))
            for r in publisher.records
            if r.fact and r.turn and r.position
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(data))
    print(f"raw timings in {path}")


def print_faults(ctx: Context, faults: list[Fault]) -> None:
    print(
        f"\n== faults (seconds since the stream started; recovered: lag <= {ctx.bound} records for {ctx.hold:g}s)"
    )
    print(
        f"{'#':>2} {'fault':<10} {'start':>7} {'end':>7} {'recovered':>9} {'recover_s':>9} {'peak_lag':>8}  note"
    )
    for i, fault in enumerate(faults, 1):
        if fault.start is None:
            print(f"{i:>2} {fault.kind:<10} not injected (planned at {fault.planned:.0f}s)")
            continue
        end = fault.end or fault.start
        rec = "-" if fault.recovered is None else f"{fault.recovered - ctx.t0:.1f}"
        took = "NEVER" if fault.recovered is None else f"{fault.recovered - end:.1f}"
        peak = ctx.lag.peak(fault.start, fault.recovered or time.perf_counter())
        print(
            f"{i:>2} {fault.kind:<10} {fault.start - ctx.t0:>7.1f} {end - ctx.t0:>7.1f} {rec:>9} {took:>9}"
            f" {peak!s:>8}  {fault.note}"
        )


def _pct(values: list[int], q: float) -> str:
    return "-" if not values else f"{np.percentile(values, q):.0f}"


def _seconds(lat: dict[str, float]) -> str:
    if "p50" not in lat:
        return "-"
    return f"{lat['p50']:.2f} / {lat['p99']:.2f} / {lat['max']:.2f}"


def create_topics(settings: Settings) -> None:
    """The run's topics. Verified again after a moment if their configuration cannot be read yet:
    right after creation the broker may not describe a new topic (ensure_topics then raises)."""
    from simplemem.streams.topics import TopicMismatch, ensure_topics

    for attempt in range(10):
        try:
            asyncio.run(ensure_topics(settings))
            return
        except TopicMismatch:
            if attempt == 9:
                raise
            time.sleep(1.0)


def main() -> None:
    ap = parser(__doc__, None)
    ap.add_argument("--duration", type=float, default=600, help="seconds of publishing, at least")
    ap.add_argument("--rate", type=float, default=120, help="turns per second")
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--kills", type=int, default=5, help="worker SIGKILLs")
    ap.add_argument("--services", nargs="*", default=list(SERVICE_FAULTS), choices=SERVICE_FAULTS)
    ap.add_argument("--outage", type=float, default=30, help="seconds OpenSearch and Milvus stay down")
    ap.add_argument("--malformed", type=float, default=0.01, help="share of malformed events")
    ap.add_argument("--kinds", nargs="+", default=list(MALFORMED_KINDS), choices=list(MALFORMED_KINDS))
    ap.add_argument("--lag-bound", type=int, default=None, help="records; default 10 s of input")
    ap.add_argument("--hold", type=float, default=10, help="seconds the lag must stay under the bound")
    ap.add_argument("--warmup", type=float, default=60, help="seconds before the first fault")
    ap.add_argument("--tail", type=float, default=60, help="quiet seconds after the last recovery")
    ap.add_argument("--quiet", type=float, default=20, help="quiet seconds between faults, at least")
    ap.add_argument("--recover-timeout", type=float, default=300)
    ap.add_argument("--drain-timeout", type=float, default=600)
    ap.add_argument("--keep", action="store_true", help="keep the run's index, collection, Redis keys")
    ap.add_argument("--out", type=Path, help="raw timings (JSON); default bench/results/<run>.json")
    args = ap.parse_args()
    convs = conversations(args)
    import pymilvus  # noqa: F401  (configures its loggers on import: quieted after it)

    # Kafka's restart and Milvus's outage are expected: their clients' reconnection errors are noise
    for name in ("aiokafka", "pymilvus"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    facts = fact_turns([raw for _, raw in event_lines(convs)])

    tag = f"faults-{uuid.uuid4().hex[:6]}"
    env = bench_env(tag)
    args.out = args.out or REPO_ROOT / "bench" / "results" / f"{tag}.json"
    settings = settings_for(env)
    infra = InfraSettings()  # this process's SIMPLEMEM_* ports and infra dir: the services to stop
    for st in stack.status(None, infra):
        if st.state != "running":
            sys.exit(f"{st.name} is {st.state} at {st.endpoint}: start the services first")
    create_topics(settings)
    logs = Path(tempfile.mkdtemp(prefix="simplemem-bench-faults-"))
    print(f"run {tag}: services {', '.join(st.endpoint for st in stack.status(None, infra))}")
    print(f"worker logs in {logs}", flush=True)
    workers = Workers(env, logs, args.workers)
    try:
        for w in workers.procs:
            w.wait_ready()
        rng = random.Random(args.seed)
        faults = schedule(args, rng)
        ctx = Context(
            t0=time.perf_counter(),
            settings=settings,
            infra=infra,
            workers=workers,
            lag=LagMonitor(settings),
            rng=rng,
            outage=args.outage,
            bound=args.lag_bound or int(10 * args.rate),
            hold=args.hold,
            recover_timeout=args.recover_timeout,
        )
        print("plan: " + ", ".join(f"{f.kind}@{f.planned:.0f}s" for f in faults), flush=True)
        publisher = Publisher(
            settings,
            load(convs, args.tenants, facts, settings, args.seed, args.malformed, args.kinds),
            args.rate,
        )
        follower = asyncio.run(stream_with_faults(args, ctx, publisher, faults))
    finally:
        workers.stop()
    try:
        status = print_report(args, ctx, publisher, follower, faults)
    finally:
        if not args.keep:
            from tests.helpers.cleanup import drop_namespace

            drop_namespace(settings)
    sys.exit(status)


if __name__ == "__main__":
    main()
