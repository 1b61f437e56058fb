"""End-to-end through Kafka: throughput with 1 and 2 worker processes, and publish-to-queryable latency.

    python -m bench.stream [--limit N] [--workers 1 2]    # the services must be up: simplemem infra up

For each worker count, in fresh topics, index, collection and Redis prefix:

1. throughput: publish every LoCoMo turn at once, time until all are windowed (analysed, scrubbed,
   in the recent-turn buffer: queryable) and until all are decided (indexed or filtered; the last
   windows of each session close on the idle timer, so that time includes one idle period);
2. latency: publish the same turns again (as other tenants) at half the measured rate and record, per
   turn, the time from its publication until it is queryable: in the Redis buffer, or decided.
   The target is about facts, so the percentiles are over the turns that state one (a sentence the
   decomposer would keep; the same test that decides what enters the buffer). Turns with none (small
   talk, questions) are only ever "decided", when their window closes; their p99 is reported apart.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bench.common import conversations, event_lines, parser
from simplemem.schemas.settings import Settings, settings_for
from tests.helpers.workers import WorkerProcess


def bench_env(tag: str) -> dict[str, str]:
    return {
        "SIMPLEMEM_MODE": "services",
        "SIMPLEMEM_TOPIC_PREFIX": f"{tag}.",
        "SIMPLEMEM_STREAM_APP_ID": tag,
        "SIMPLEMEM_OPENSEARCH_INDEX": f"simplemem-{tag}",
        "SIMPLEMEM_MILVUS_COLLECTION": tag.replace("-", "_"),
        "SIMPLEMEM_MILVUS_INDEX_TYPE": "HNSW",
        "SIMPLEMEM_REDIS_KEY_PREFIX": tag,
        "SIMPLEMEM_STREAM_IDLE_SECONDS": "3",
        "SIMPLEMEM_IDLE_CHECK_SECONDS": "1",
        "SIMPLEMEM_STREAM_DATA_DIR": tempfile.mkdtemp(prefix=f"{tag}-faust-"),
    }


def as_tenant(lines: list[bytes], suffix: str) -> list[bytes]:
    out = []
    for raw in lines:
        e = orjson.loads(raw)
        e["tenant_id"] = f"{e['tenant_id']}{suffix}"
        out.append(orjson.dumps(e))
    return out


def total(workers: list[WorkerProcess], metric: str) -> float:
    return sum(w.metric(metric) for w in workers)


def wait_metric(workers: list[WorkerProcess], metric: str, target: float, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if total(workers, metric) >= target:
            return time.perf_counter()
        time.sleep(0.2)
    raise TimeoutError(f"{metric} stayed below {target} (now {total(workers, metric)})")


class Queryable:
    """Watches when turns become queryable: seen in the Redis buffer, or with an outcome."""

    def __init__(self, settings: Settings, tenants: set[str]) -> None:
        from simplemem.processors.retrieval.buffer import RedisBuffer

        self.settings = settings
        self.tenants = tenants
        self.buffer = RedisBuffer(
            settings.redis_endpoint,
            settings.buffer_turns,
            settings.buffer_ttl_seconds,
            prefix=settings.redis_key_prefix,
        )
        self.seen: dict[tuple[str, str], float] = {}
        self.stop = threading.Event()

    def poll_buffer(self) -> None:
        while not self.stop.is_set():
            now = time.perf_counter()
            for tenant in self.tenants:
                for t in self.buffer.recent(tenant):
                    self.seen.setdefault((tenant, t.message_id), now)
            time.sleep(0.05)

    async def follow_outcomes(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        from simplemem.streams.kafka_io import partitions_of

        topic = self.settings.topic(self.settings.outcomes_topic)
        tps = [TopicPartition(topic, p) for p in await partitions_of(self.settings, topic)]
        consumer = AIOKafkaConsumer(bootstrap_servers=self.settings.kafka_endpoint, enable_auto_commit=False)
        await consumer.start()
        await asyncio.sleep(0)
        try:
            consumer.assign(tps)
            await consumer.seek_to_end(*tps)
            while not self.stop.is_set():
                batch = await consumer.getmany(*tps, timeout_ms=100)
                now = time.perf_counter()
                for msgs in batch.values():
                    for m in msgs:
                        o = orjson.loads(m.value or b"{}")
                        if o.get("tenant_id") in self.tenants:
                            self.seen.setdefault((o["tenant_id"], o["message_id"]), now)
        finally:
            await consumer.stop()


async def publish_paced(settings: Settings, lines: list[bytes], rate: float) -> dict[tuple[str, str], float]:
    from simplemem.streams.kafka_io import producer, record_key

    sent: dict[tuple[str, str], float] = {}
    prod = producer(settings)
    await prod.start()
    try:
        start = time.perf_counter()
        for i, raw in enumerate(lines):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            e = orjson.loads(raw)
            sent[(e["tenant_id"], e["message_id"])] = time.perf_counter()
            await prod.send(settings.topic(settings.turns_topic), raw, key=record_key(raw))
        await prod.flush()
    finally:
        await prod.stop()
    return sent


def fact_turns(lines: list[bytes]) -> set[tuple[str, str]]:
    """(tenant, message id) of the turns with at least one informative sentence."""
    from simplemem.runtime import open_runtime
    from simplemem.schemas.events import ChatEvent

    events = [ChatEvent.model_validate_json(raw) for raw in lines]
    prepared = open_runtime(Settings(), Path(tempfile.mkdtemp())).nlp_preparer.prepare(events)
    return {(p.tenant_id, p.message_id) for p in prepared if any(s.informative for s in p.sentences)}


def percentiles(values: list[float], prefix: str) -> dict[str, float]:
    return {
        f"{prefix}_p50_s": round(float(np.percentile(values, 50)), 3),
        f"{prefix}_p90_s": round(float(np.percentile(values, 90)), 3),
        f"{prefix}_p99_s": round(float(np.percentile(values, 99)), 3),
        f"{prefix}_max_s": round(float(max(values)), 3),
    }


def run(n_workers: int, lines: list[bytes], logs: Path, facts: set[tuple[str, str]]) -> dict[str, Any]:
    from simplemem.streams.kafka_io import publish
    from simplemem.streams.topics import ensure_topics

    tag = f"bench-{n_workers}w-{uuid.uuid4().hex[:6]}"
    env = bench_env(tag)
    settings = settings_for(env)
    asyncio.run(ensure_topics(settings))
    workers = [WorkerProcess(env, logs / f"{tag}-{i}.log").start() for i in range(n_workers)]
    try:
        for w in workers:
            w.wait_ready()
        warm = as_tenant(lines[:40], "-warm")
        asyncio.run(publish(settings, warm))
        wait_metric(workers, "simplemem_turns_windowed_total", len(warm), 300)
        time.sleep(2 * settings.stream_session_timeout_seconds)  # the group settles after the workers joined
        base = total(workers, "simplemem_turns_windowed_total")

        t0 = time.perf_counter()
        asyncio.run(publish(settings, lines))
        t_windowed = wait_metric(workers, "simplemem_turns_windowed_total", base + len(lines), 1800)
        base_out = total(workers, "simplemem_turns_out_total")
        t_decided = wait_metric(workers, "simplemem_turns_out_total", len(warm) + len(lines), 600)
        rate = len(lines) / (t_windowed - t0)

        paced = as_tenant(lines, "-latency")
        watcher = Queryable(settings, {orjson.loads(x)["tenant_id"] for x in paced})
        poller = threading.Thread(target=watcher.poll_buffer, daemon=True)
        poller.start()

        async def latency_phase() -> dict[tuple[str, str], float]:
            follow = asyncio.create_task(watcher.follow_outcomes())
            await asyncio.sleep(1.0)
            sent = await publish_paced(settings, paced, rate / 2)
            deadline = time.perf_counter() + 120
            while time.perf_counter() < deadline and not set(sent) <= set(watcher.seen):
                await asyncio.sleep(0.5)
            watcher.stop.set()
            await follow
            return sent

        sent = asyncio.run(latency_phase())
        poller.join()
        lat = {k: watcher.seen[k] - t for k, t in sent.items() if k in watcher.seen}
        fact_lat = [x for (tenant, mid), x in lat.items() if (tenant.removesuffix("-latency"), mid) in facts]
        other_lat = [
            x for (tenant, mid), x in lat.items() if (tenant.removesuffix("-latency"), mid) not in facts
        ]
        order = sorted(
            (t, lat[k])
            for k, t in sent.items()
            if k in lat and (k[0].removesuffix("-latency"), k[1]) in facts
        )
        tenth = max(1, len(order) // 10)
        p99_by_tenth = [
            round(float(np.percentile([x for _, x in order[i : i + tenth]], 99)), 2)
            for i in range(0, len(order), tenth)
        ]
        return {
            "workers": n_workers,
            "turns": len(lines),
            "throughput_turns_s": round(rate, 1),
            "all_decided_s": round(t_decided - t0, 1),
            "decided_before_windowed_done": base_out,
            "latency_rate_turns_s": round(rate / 2, 1),
            "latency_measured": len(lat),
            "latency_missing": len(sent) - len(lat),
            "fact_turns": len(fact_lat),
            **percentiles(fact_lat, "fact_queryable"),
            "fact_queryable_p99_by_tenth_of_run_s": p99_by_tenth,
            "factless_turns": len(other_lat),
            **percentiles(other_lat, "factless_decided"),
            "discard_rate": round(total(workers, "simplemem_discard_rate") / n_workers, 3),
        }
    finally:
        for w in workers:
            w.stop()
        from tests.helpers.cleanup import drop_namespace

        drop_namespace(settings)


def main() -> None:
    ap = parser(__doc__, 5)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    lines = [raw for _, raw in event_lines(conversations(args))]
    logs = Path(tempfile.mkdtemp(prefix="simplemem-bench-stream-"))
    facts = fact_turns(lines)
    print(f"{len(lines)} turns, {len(facts)} state a fact; worker logs in {logs}")
    for n in args.workers:
        result = run(n, lines, logs, facts)
        print(orjson.dumps(result).decode(), flush=True)


if __name__ == "__main__":
    main()
