"""The query service under load: `/v1/query` latency and throughput at 1, 10 and 50 concurrent
clients, how p95 grows with the number of tenants, and `/v1/events` ingest into the streams.

    python -m bench.query_service [--locomo-tenants 10] [--concurrency 1,10,50] [--seconds 20]
                                  [--serve-workers 1] [--milvus-partitions 64]
                                  [--tenants 10,100,1000 --units 5000] [--events 2000]
                                  # the services must be up: simplemem infra up

Services mode, in a namespace of its own (index, collection, Redis prefix, topics), removed at the
end. The LoCoMo conversations (one tenant each) are ingested through the pipeline, then one
`simplemem serve` answers their questions; the load generator is a separate process (asyncio, one
connection per simulated client). `--tenants` fills fresh namespaces with generated units (random
unit vectors, templated statements about a few persons) and measures p95 at 10 clients for each size.
`--events` posts turns to `/v1/events` in batches of 100 with a stream worker running, and reports
the API's accepted turns/s and the turns/s until every turn is decided (the outcomes topic).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np

from bench.common import conversations, event_lines, parser
from bench.locomo_data import Conversation
from simplemem.processors.ingest.embedding import model_dimension
from simplemem.schemas.settings import Settings, settings_for
from tests.helpers.serving import ServeProcess
from tests.helpers.workers import WorkerProcess

ADMIN = f"bench-admin-{uuid.uuid4().hex}"
SCALE_CLIENTS = 10
WRITE_BATCH = 2000  # generated units per store write
WARM_QUERIES_PER_SECOND = 50  # a lower bound of the service's rate: the warm-up reaches every tenant
KEY_WRITERS = 16  # key creations in flight
WRITERS = 4  # store writes in flight while generating units
PERSONS = ("Maya", "Ravi", "Lena", "Tom", "Aiko", "Omar", "Sofia", "Jonas")
THINGS = ("the garden", "a guitar", "the marathon", "a pottery class", "the new job", "a trip to Kyoto")
VERBS = ("talked about", "started", "finished", "loved", "planned", "worried about")


def namespace(suffix: str, folder: Path, serve_workers: int = 1, partitions: int = 64) -> dict[str, str]:
    return {
        "SIMPLEMEM_API_WORKERS": str(serve_workers),
        "SIMPLEMEM_MILVUS_PARTITIONS": str(partitions),
        "SIMPLEMEM_MODE": "services",
        "SIMPLEMEM_TOPIC_PREFIX": f"bench{suffix}.",
        "SIMPLEMEM_STREAM_APP_ID": f"bench{suffix}",
        "SIMPLEMEM_OPENSEARCH_INDEX": f"simplemem-bench-{suffix}",
        "SIMPLEMEM_MILVUS_COLLECTION": f"simplemem_bench_{suffix}",
        "SIMPLEMEM_MILVUS_INDEX_TYPE": "HNSW",
        "SIMPLEMEM_REDIS_KEY_PREFIX": f"simplemem-bench-{suffix}",
        "SIMPLEMEM_STREAM_DATA_DIR": str(folder / "faust"),
        "SIMPLEMEM_STREAM_IDLE_SECONDS": "5",  # the last turns of a conversation are decided soon after
        "SIMPLEMEM_IDLE_CHECK_SECONDS": "1",
        "SIMPLEMEM_ADMIN_KEY": ADMIN,
        "SIMPLEMEM_API_QUERY_RATE": "10000000/minute",
        "SIMPLEMEM_API_INGEST_RATE": "10000000/minute",
        "SIMPLEMEM_API_INGEST_TEXT_RATE": "1000000000/minute",
    }


# --- the load generator (runs in its own process) ---------------------------------------------
def _load(
    url: str, requests: list[tuple[str, dict[str, Any]]], clients: int, seconds: float
) -> dict[str, Any]:
    return asyncio.run(_drive(url, requests, clients, seconds))


async def _drive(
    url: str, requests: list[tuple[str, dict[str, Any]]], clients: int, seconds: float
) -> dict[str, Any]:
    # plain httpx on purpose: the load counts each refused request, where simplemem.client would retry it
    import httpx

    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def client(n: int) -> None:
        nonlocal errors
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
            i = n
            while time.perf_counter() < deadline:
                key, body = requests[i % len(requests)]
                i += clients
                start = time.perf_counter()
                r = await http.post("/v1/query", json=body, headers={"Authorization": f"Bearer {key}"})
                latencies.append((time.perf_counter() - start) * 1000)
                errors += r.status_code != 200

    start = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    return {"latencies": latencies, "errors": errors, "elapsed": time.perf_counter() - start}


def load_in_process(
    url: str, requests: list[tuple[str, dict[str, Any]]], clients: int, seconds: float
) -> dict[str, Any]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        result: dict[str, Any] = pool.apply(_load, (url, requests, clients, seconds))
        return result


def report(label: str, result: dict[str, Any]) -> str:
    lat = np.array(result["latencies"])
    p50, p95, p99 = (np.percentile(lat, p) if len(lat) else float("nan") for p in (50, 95, 99))
    rps = len(lat) / result["elapsed"]
    return (
        f"{label:<28} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  p99 {p99:7.1f} ms  "
        f"{rps:7.1f} req/s  ({len(lat)} requests, {result['errors']} errors)"
    )


# --- setup --------------------------------------------------------------------------------------
@contextmanager
def serving(env: dict[str, str], logs: Path) -> Iterator[ServeProcess]:
    server = ServeProcess(env, logs / "serve.log").start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def make_keys(url: str, tenants: list[str]) -> dict[str, str]:
    """One key per tenant, ``KEY_WRITERS`` at a time: a key is written to the shared key store with
    a wait for its next refresh (about a second), so 1,000 tenants one by one took minutes."""
    from simplemem.client import Client

    with Client(url, ADMIN, timeout=60) as admin, ThreadPoolExecutor(KEY_WRITERS) as pool:
        keys = pool.map(lambda tenant: admin.create_key(tenant).key, tenants)
        return dict(zip(tenants, keys, strict=True))


def drop(settings: Settings) -> None:
    from tests.helpers.cleanup import drop_namespace

    drop_namespace(settings)
    asyncio.run(_drop_topics(settings))


async def _drop_topics(settings: Settings) -> None:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
    await admin.start()
    try:
        mine = [
            t
            for t in await admin.list_topics()
            if t.startswith((settings.topic_prefix, settings.stream_app_id))
        ]
        if mine:
            await admin.delete_topics(mine)
    finally:
        await admin.close()


def generated_units(settings: Settings, tenants: int, units: int, seed: int = 7) -> None:
    """Fill the namespace with ``units`` templated statements per tenant (random unit vectors).

    Batches are written ``WRITERS`` at a time: each OpenSearch bulk waits for the index's next
    refresh, so one writer at a time spends most of its time waiting (about 1,200 units/s)."""
    from simplemem.runtime import open_runtime

    rt = open_runtime(settings)
    dim = model_dimension(settings.embedding_model_dir)

    def write(rows: list[Any], vectors: np.ndarray) -> None:
        rt.vectors.upsert(rows, vectors)
        rt.lexical.upsert(rows)

    try:
        with ThreadPoolExecutor(WRITERS) as pool:
            pending: list[Future[None]] = []
            for rows, vectors in generated_batches(tenants, units, dim, seed):
                pending.append(pool.submit(write, rows, vectors))
                if len(pending) >= 2 * WRITERS:  # bounded: 5 million units do not fit in flight
                    pending.pop(0).result()
            for future in pending:
                future.result()
        rt.vectors.flush()
        wait_indexed(rt.vectors, tenants * units)
    finally:
        rt.close()


def generated_batches(
    tenants: int, units: int, dim: int, seed: int
) -> Iterator[tuple[list[Any], np.ndarray]]:
    """Per tenant ``gen0000``..., batches of templated units about a few persons with random unit vectors."""
    from simplemem.schemas.memory import MemoryKind, MemoryUnit

    rng = random.Random(seed)
    vec_rng = np.random.default_rng(seed)
    for t in range(tenants):
        tenant = f"gen{t:04d}"
        for start in range(0, units, WRITE_BATCH):
            rows = []
            for i in range(start, min(units, start + WRITE_BATCH)):
                person = rng.choice(PERSONS)
                rows.append(
                    MemoryUnit.build(
                        tenant_id=tenant,
                        text=f"{person} {rng.choice(VERBS)} {rng.choice(THINGS)} on day {i}.",
                        kind=MemoryKind.FACT,
                        source_ids=[f"g{i}"],
                        stated_at=f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00+00:00",
                        persons=[person],
                        speaker=person,
                        session_id=f"s{i // 50}",
                    )
                )
            vectors = vec_rng.normal(size=(len(rows), dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            yield rows, vectors


def wait_indexed(vectors: Any, rows: int, timeout: float = 3600.0) -> None:
    """Until Milvus holds all ``rows`` visibly and has built the vector index over every one: a
    search over rows not indexed yet is a brute-force scan, the build takes the CPU the queries
    would measure, and a Milvus 2.3 server under load shows a flushed segment to searches only once
    it is indexed (5 million rows written, a third of the tenants read as empty for a while)."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        info = vectors.client.describe_index(vectors.collection, "vector")
        built = int(info.get("pending_index_rows", 0)) == 0 and info.get("indexed_rows") == info.get(
            "total_rows"
        )
        if built and visible_rows(vectors) == rows:
            print(f"  vector index built over {rows} rows ({time.perf_counter() - start:.0f} s wait)")
            wait_sealed(vectors, rows)
            return
        time.sleep(5)
    print(
        f"  vector index still building after {timeout:.0f} s: {visible_rows(vectors)} of {rows} rows visible"
    )


def wait_sealed(vectors: Any, rows: int, timeout: float = 120.0) -> None:
    """Until the query nodes serve all ``rows`` from sealed segments: some seconds after the index is
    built the server still answers from the growing ones it replaces (scanned), and a pass measured
    then measures that hand-off (seen in the loaded segments: no sealed one after a first pass of 312
    questions, all 21 after the second)."""
    from pymilvus.client.types import SegmentState

    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        loaded = vectors.client.list_loaded_segments(vectors.collection)
        sealed = sum(s.num_rows for s in loaded if s.state == SegmentState.Sealed)
        if sealed >= rows:
            print(f"  {rows} rows served from sealed segments ({time.perf_counter() - start:.0f} s wait)")
            return
        time.sleep(2)
    print(f"  {sealed} of {rows} rows in sealed segments after {timeout:.0f} s")


def visible_rows(vectors: Any) -> int:
    found = vectors.client.query(vectors.collection, filter="", output_fields=["count(*)"])
    return int(found[0]["count(*)"]) if found else 0


def tenants_of(convs: list[Conversation], count: int) -> list[Conversation]:
    """``count`` LoCoMo-sized tenants: the conversations, then copies of them under new tenant ids."""
    out = []
    for i in range(count):
        conv = convs[i % len(convs)]
        if i < len(convs):
            out.append(conv)
            continue
        tenant = f"{conv.tenant_id}-copy{i // len(convs)}"
        questions = [replace(q, tenant_id=tenant) for q in conv.questions]
        out.append(replace(conv, tenant_id=tenant, questions=questions))
    return out


# --- the measures ---------------------------------------------------------------------------------
def concurrency_run(args: Any, folder: Path) -> None:
    from simplemem.runtime import open_runtime

    convs = tenants_of(conversations(args), args.locomo_tenants)
    env = namespace(uuid.uuid4().hex[:8], folder, args.serve_workers, args.milvus_partitions)
    settings = settings_for(env)
    try:
        start = time.perf_counter()
        rt = open_runtime(settings)
        rt.pipeline.ingest(event_lines(convs))
        rt.close()
        print(f"ingested {len(convs)} LoCoMo tenants in {time.perf_counter() - start:.0f} s")
        with serving(env, folder) as server:
            keys = make_keys(server.url, [c.tenant_id for c in convs])
            requests = [
                (keys[q.tenant_id], {"query": q.question, "as_of": q.as_of.isoformat()})
                for c in convs
                for q in c.questions
            ]
            random.Random(3).shuffle(requests)
            load_in_process(server.url, requests, 1, 3.0)  # warm-up
            for clients in args.concurrency:
                result = load_in_process(server.url, requests, clients, args.seconds)
                print(report(f"/v1/query, {clients} clients", result))
            if args.events:
                events_run(args, env, server, convs, folder)
    finally:
        drop(settings)


def events_run(args: Any, env: dict[str, str], server: ServeProcess, convs: Any, folder: Path) -> None:
    import orjson

    from simplemem.client import Client

    worker = WorkerProcess(env, folder / "worker.log").start()
    try:
        worker.wait_ready()
        key = make_keys(server.url, ["ingest-bench"])["ingest-bench"]
        lines = [orjson.loads(raw) for _, raw in event_lines(convs)][: args.events]
        for e in lines:
            e["tenant_id"] = "ingest-bench"
        start = time.perf_counter()
        with Client(server.url, key, timeout=120, batch_size=100) as memory:
            rejected = memory.send(lines).rejected
        if rejected:
            raise RuntimeError(f"{len(rejected)} turns rejected: {rejected[0].reason}")
        accepted = time.perf_counter() - start
        print(
            f"/v1/events: {len(lines)} turns accepted in {accepted:.1f} s = {len(lines) / accepted:.0f} turns/s"
        )
        deadline = time.monotonic() + 900
        decided = 0.0
        while time.monotonic() < deadline and decided < len(lines):
            decided = worker.metric("simplemem_turns_out_total")
            time.sleep(1)
        total = time.perf_counter() - start
        print(
            f"  decided by the worker: {decided} turns in {total:.1f} s = {decided / total:.0f} turns/s (1 worker)"
        )
    finally:
        worker.stop()


def scale_run(args: Any, folder: Path) -> None:
    for tenants in args.tenants:
        env = namespace(uuid.uuid4().hex[:8], folder, args.serve_workers, args.milvus_partitions)
        settings = settings_for(env)
        try:
            start = time.perf_counter()
            generated_units(settings, tenants, args.units)
            print(
                f"{tenants} tenants x {args.units} generated units written in {time.perf_counter() - start:.0f} s"
            )
            with serving(env, folder) as server:
                names = [f"gen{t:04d}" for t in range(tenants)]
                keys = make_keys(server.url, names)
                rng = random.Random(5)
                requests = [
                    (
                        keys[rng.choice(names)],
                        {"query": f"What did {rng.choice(PERSONS)} do about {rng.choice(THINGS)}?"},
                    )
                    for _ in range(2000)
                ]
                # Warm-up: every tenant's first query fills the service's per-tenant caches (its names).
                warm = [(keys[n], {"query": f"What did {PERSONS[0]} do?"}) for n in names]
                load_in_process(server.url, warm, SCALE_CLIENTS, 3.0 + len(names) / WARM_QUERIES_PER_SECOND)
                result = load_in_process(server.url, requests, SCALE_CLIENTS, args.seconds)
                print(report(f"{tenants} tenants, {SCALE_CLIENTS} clients", result))
        finally:
            drop(settings)


def main() -> None:
    ap = parser(__doc__, 10)
    ap.add_argument(
        "--locomo-tenants", type=int, default=10, help="LoCoMo-sized tenants (copies past the data's)"
    )
    ap.add_argument("--concurrency", default="1,10,50", help="concurrent clients, comma-separated")
    ap.add_argument("--seconds", type=float, default=20.0, help="load duration per measure")
    ap.add_argument("--tenants", default="", help="tenant counts for the growth measure, e.g. 10,100,1000")
    ap.add_argument("--units", type=int, default=5000, help="generated units per tenant (growth measure)")
    ap.add_argument("--events", type=int, default=0, help="turns posted to /v1/events (0: skip)")
    ap.add_argument("--serve-workers", type=int, default=1, help="`simplemem serve --workers` (processes)")
    ap.add_argument(
        "--milvus-partitions",
        type=int,
        default=64,
        help="SIMPLEMEM_MILVUS_PARTITIONS of the bench's collection",
    )
    ap.add_argument("--skip-locomo", action="store_true", help="only the growth measure")
    args = ap.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",") if c]
    args.tenants = [int(t) for t in args.tenants.split(",") if t]
    with TemporaryDirectory(prefix="bench-query-service-") as tmp:
        folder = Path(tmp)
        if not args.skip_locomo:
            concurrency_run(args, folder)
        if args.tenants:
            scale_run(args, folder)


if __name__ == "__main__":
    main()
