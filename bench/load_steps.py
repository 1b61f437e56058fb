"""Sustained multi-tenant load through Kafka, stepped up: the highest rate a number of workers keeps.

    python -m bench.load_steps [--workers 1] [--rates 10 20 30] [--step 60] [--tenants 20]
                               [--burst-rate R] [--burst 60] [--drain-timeout 300]

The services must be up (simplemem infra up). In fresh topics, index, collection and Redis prefix
(bench.stream.bench_env), ``--workers`` workers run while LoCoMo turns of ``--tenants`` tenants are
published round-robin at each of ``--rates`` turns/s for ``--step`` seconds (bench/fault_load.py's
steady publisher, no malformed events). Per step: the publish-to-searchable seconds (p50/p95/p99:
until the turn is in the Redis buffer or has an outcome; fact-bearing turns, as bench.stream) of the
turns published in it, the workers' lag at its end, and CPU-seconds per 1,000 turns of each process
(the workers, Kafka, OpenSearch, Milvus, Redis; from /proc, the services' idle CPU over the 10 s
before the first step subtracted). Stepping stops when a step's p95 passes ``--slo`` or its lag
grows past 10 s of input. Then ``--burst-rate``: every tenant at that rate while one more tenant
publishes at ten times a tenant's share for ``--burst`` seconds; the other tenants' p95 during the
burst against before it. Finally every published turn must have an outcome or a dead letter (lost:
0), or the drain times out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson

from bench import fault_audit as audit
from bench.common import conversations, event_lines, parser
from bench.fault_load import Publisher, Record, load
from bench.faults import BufferWatcher, Follower, LagMonitor, Workers, create_topics
from bench.stream import bench_env, fact_turns
from simplemem.schemas.settings import Settings, settings_for

SERVICES = {  # what a service's command line holds
    "kafka": "kafka.Kafka",
    "opensearch": "OpenSearchNode",
    "milvus": "milvus",
    "redis": "redis-server",
}
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` and its reaped children so far (/proc/PID/stat), 0 if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / TICK


def service_pids() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {name: [] for name in SERVICES}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        for name, mark in SERVICES.items():
            if mark in cmd and "load_steps" not in cmd:
                found[name].append(int(entry))
    return found


def process_tree(pid: int) -> list[int]:
    import psutil

    with contextlib.suppress(psutil.Error):
        return [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
    return [pid]


class CpuMeter:
    """CPU-seconds per process group between two readings."""

    def __init__(self, workers: Workers) -> None:
        self.workers = workers
        self.services = service_pids()

    def read(self) -> dict[str, float]:
        out = {name: sum(cpu_seconds(p) for p in pids) for name, pids in self.services.items() if pids}
        out["workers"] = sum(
            cpu_seconds(p) for w in self.workers.procs if w.proc for p in process_tree(w.proc.pid)
        )
        return out


def burst_source(records: Iterator[Record], tenant: str) -> Iterator[Record]:
    """The same LoCoMo turns as one more tenant (the noisy one)."""
    for r in records:
        event = orjson.loads(r.raw)
        if r.message_id is None:
            continue
        event["tenant_id"] = tenant
        event["session_id"] = f"{tenant}/{str(event['session_id']).split('/', 1)[1]}"
        raw = orjson.dumps(event)
        from simplemem.streams.kafka_io import record_key

        yield Record(raw, record_key(raw), tenant, str(event["session_id"]), r.message_id, r.fact)


def percentiles(
    records: list[Record], seen: dict[audit.Turn, float], t0: float, t1: float
) -> dict[str, float]:
    lat = [
        seen[r.turn] - r.sent_at
        for r in records
        if r.turn and r.fact and r.sent_at is not None and t0 <= r.sent_at < t1 and r.turn in seen
    ]
    missing = sum(
        1
        for r in records
        if r.turn and r.fact and r.sent_at is not None and t0 <= r.sent_at < t1 and r.turn not in seen
    )
    if not lat:
        return {"measured": 0, "not_yet": missing}
    p50, p95, p99 = (float(np.percentile(lat, q)) for q in (50, 95, 99))
    return {"measured": len(lat), "not_yet": missing, "p50": p50, "p95": p95, "p99": p99, "max": max(lat)}


async def stepped(
    args: argparse.Namespace,
    settings: Settings,
    workers: Workers,
    source: Iterator[Record],
    burst: Iterator[Record],
) -> None:
    seen: dict[audit.Turn, float] = {}
    follower = Follower(settings, seen)
    lag = LagMonitor(settings)
    stop_watch = asyncio.Event()
    everything: list[Record] = []
    meter = CpuMeter(workers)
    base = meter.read()
    await asyncio.sleep(10)
    idle = {k: (v - base.get(k, 0.0)) / 10 for k, v in meter.read().items()}  # CPU-s per second, idle
    holder = Publisher(settings, iter(()), 1.0)  # the buffer watcher reads its recent sessions
    watcher = BufferWatcher(settings, holder, seen)
    tasks = [
        asyncio.create_task(follower.run(stop_watch)),
        asyncio.create_task(lag.run(stop_watch)),
        asyncio.create_task(asyncio.to_thread(watcher.run)),
    ]
    for rate in args.rates:
        pub = Publisher(settings, source, rate)
        pub.recent_sessions = holder.recent_sessions
        before, t0 = meter.read(), time.perf_counter()
        stop = asyncio.Event()
        run = asyncio.create_task(pub.run(stop))
        await asyncio.sleep(args.step)
        stop.set()
        await run
        t1 = time.perf_counter()
        after = meter.read()
        everything += pub.records
        await asyncio.sleep(min(10.0, args.slo * 2))  # the step's last turns get their chance
        end_lag = lag.samples[-1][1] if lag.samples else None
        turns = sum(1 for r in pub.records if r.turn)
        cpu = {
            k: 1000 * (after[k] - before.get(k, 0.0) - idle.get(k, 0.0) * (t1 - t0)) / max(turns, 1)
            for k in after
        }
        p = percentiles(pub.records, seen, t0, t1)
        print(
            orjson.dumps(
                {
                    "workers": args.workers,
                    "rate": rate,
                    "turns": turns,
                    "latency_s": p,
                    "lag_after_step": end_lag,
                    "cpu_s_per_1000_turns": cpu,
                    "load": os.getloadavg()[0],
                },
                option=orjson.OPT_SERIALIZE_NUMPY,
            ).decode(),
            flush=True,
        )
        if p.get("p95", 0) > args.slo or (end_lag or 0) > 10 * rate:
            print(f"step {rate} turns/s is past the SLO or the lag grows: stepping stops", flush=True)
            break
    if args.burst_rate:
        await settled(lag, args.burst_rate, args.drain_timeout)  # a failed step's backlog first
        everything += await noisy(args, settings, source, burst, seen, holder)
    deadline = time.perf_counter() + args.drain_timeout
    turns_topic = settings.topic(settings.turns_topic)
    while time.perf_counter() < deadline:
        f = audit.fates(everything, follower.outcomes, follower.letters, turns_topic)
        if not f.lost:
            break
        await asyncio.sleep(5)
    f = audit.fates(everything, follower.outcomes, follower.letters, turns_topic)
    print(
        orjson.dumps(
            {
                "published": f.published,
                "outcomes": dict(f.outcomes),
                "dead": dict(f.valid_dead),
                "lost": len(f.lost),
                "unacknowledged": f.unacknowledged,
            }
        ).decode(),
        flush=True,
    )
    stop_watch.set()
    watcher.stop.set()
    await asyncio.gather(*tasks)


async def settled(lag: LagMonitor, rate: float, timeout: float) -> None:
    """Until the workers' lag is under a second of input (or ``timeout``)."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline and (not lag.samples or (lag.samples[-1][1] or 0) > rate):
        await asyncio.sleep(1.0)


async def noisy(
    args: argparse.Namespace,
    settings: Settings,
    source: Iterator[Record],
    burst: Iterator[Record],
    seen: dict[audit.Turn, float],
    holder: Publisher,
) -> list[Record]:
    """Every tenant at ``--burst-rate`` in all; one more tenant at ten times a tenant's share during
    the middle ``--burst`` seconds. Returns every record published."""
    share = args.burst_rate / args.tenants
    steady = Publisher(settings, source, args.burst_rate)
    loud = Publisher(settings, burst, 10 * share)
    steady.recent_sessions = loud.recent_sessions = holder.recent_sessions
    stop, stop_loud = asyncio.Event(), asyncio.Event()
    t0 = time.perf_counter()
    run = asyncio.create_task(steady.run(stop))
    await asyncio.sleep(args.burst)
    b0 = time.perf_counter()
    run_loud = asyncio.create_task(loud.run(stop_loud))
    await asyncio.sleep(args.burst)
    stop_loud.set()
    await run_loud
    b1 = time.perf_counter()
    await asyncio.sleep(args.burst / 2)
    stop.set()
    await run
    await asyncio.sleep(10)
    print(
        orjson.dumps(
            {
                "noisy_neighbour": {
                    "steady_rate": args.burst_rate,
                    "burst_tenant_rate": 10 * share,
                    "burst_s": args.burst,
                    "others_before": percentiles(steady.records, seen, t0, b0),
                    "others_during": percentiles(steady.records, seen, b0, b1),
                    "others_after": percentiles(steady.records, seen, b1, time.perf_counter()),
                    "burst_tenant": percentiles(loud.records, seen, b0, b1),
                }
            }
        ).decode(),
        flush=True,
    )
    return steady.records + loud.records


def main() -> None:
    ap = parser(__doc__, None)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--rates", type=float, nargs="+", default=[10.0, 20.0, 30.0])
    ap.add_argument("--step", type=float, default=60, help="seconds per rate")
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--slo", type=float, default=5.0, help="p95 publish-to-searchable seconds")
    ap.add_argument("--burst-rate", type=float, default=0, help="steady rate of the noisy-neighbour phase")
    ap.add_argument("--burst", type=float, default=60, help="seconds the noisy tenant bursts")
    ap.add_argument("--drain-timeout", type=float, default=300)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    convs = conversations(args)
    for name in ("aiokafka", "pymilvus"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    facts = fact_turns([raw for _, raw in event_lines(convs)])
    tag = f"steps-{uuid.uuid4().hex[:6]}"
    env = bench_env(tag)
    settings = settings_for(env)
    create_topics(settings)
    logs = Path(tempfile.mkdtemp(prefix="simplemem-bench-steps-"))
    print(
        f"run {tag}: {args.workers} worker(s), {args.tenants} tenants, rates {args.rates}; logs in {logs}",
        flush=True,
    )
    workers = Workers(env, logs, args.workers)
    source = load(convs, args.tenants, facts, settings, args.seed, 0.0)
    burst = burst_source(load(convs, 1, facts, settings, args.seed + 1, 0.0), f"{tag}-noisy")
    try:
        for w in workers.procs:
            w.wait_ready()
        asyncio.run(stepped(args, settings, workers, source, burst))
    finally:
        workers.stop()
        from bench.deployment import drop_namespace

        drop_namespace(settings)


if __name__ == "__main__":
    main()
