"""Warm query latency, embedded mode next to services mode (OpenSearch + Milvus server + Redis).

    python -m bench.query_latency [--limit N]        # the services must be up: simplemem infra up
    python -m bench.query_latency --longmemeval N    # N LongMemEval histories instead (each asked
                                                     # repeatedly: about 300 queries a pass)

Both modes ingest the same LoCoMo conversations, then answer every question of them; the services
mode writes into a fresh OpenSearch index and Milvus collection, removed at the end. CPU per query is
the whole machine's busy time while the questions are answered (this process, OpenSearch, Milvus,
Redis and anything else running: measure on an otherwise idle machine), divided by the queries.

Each mode also prints what the data takes on disk against the scrubbed input: the embedded SQLite
files; the services' OpenSearch indexes, Milvus binlogs and index files (:func:`services_bytes`).

Every question is asked ``--passes`` times (2) and each pass is printed: the first right after
ingestion (and, in services mode, once Milvus serves every row from sealed, indexed segments), the
later ones warmer. A fresh OpenSearch JVM compiles its hot paths over its first thousands of
requests: right after ``simplemem infra up`` the services' first pass is slower than those of a node
that has answered for a while (what a running service answers with).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import conversations, event_lines, parser, warm_latencies_ms
from bench.longmemeval import count_scrubbed, disk_bytes
from simplemem.infra.settings import InfraSettings
from simplemem.schemas.settings import Settings

WARM_UP = 10
LME_QUERIES = 300


def machine_busy_seconds() -> float:
    """CPU time every process of the machine has used since boot (Linux): user, nice, system, irq and
    softirq, not idle or iowait (guest time is already in user and nice)."""
    import psutil

    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + t.irq + t.softirq)


Workload = tuple[Callable[[], Iterable[Any]], list[Any]]


def locomo_workload(args: argparse.Namespace) -> Workload:
    convs = conversations(args)
    return (lambda: event_lines(convs)), [q for c in convs for q in c.questions]


def longmemeval_workload(n: int) -> Workload | None:
    """``n`` LongMemEval histories, their questions repeated to about ``LME_QUERIES`` a pass."""
    from bench.longmemeval import DEFAULT_FILE, event_lines, prepared_questions

    questions = prepared_questions(DEFAULT_FILE, n)
    if questions is None:
        return None
    return partial(event_lines, questions), questions * max(1, -(-LME_QUERIES // len(questions)))


def tree_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else 0


def milvus_index_dir() -> Path:
    """Where the Milvus server of ``simplemem infra up`` writes its index files (all collections')."""
    return InfraSettings().service_dir("milvus") / "data" / "data" / "index_files"


def services_bytes(rt: Any, settings: Settings, index_files_before: int) -> dict[str, int]:
    """What the run's data takes in the services: the OpenSearch units and contexts indexes (flushed),
    the collection's Milvus binlogs (the server's own metric, per collection) and the index files the
    server wrote meanwhile (the folder's growth: measured on an otherwise idle server). Milvus's
    message queue (rocksmq, kept for its retention time) is left out."""
    import re
    import urllib.request

    client = rt.lexical.client
    indexes = f"{settings.opensearch_index},{settings.opensearch_index}-contexts"
    client.indices.flush(index=indexes)
    stats = client.indices.stats(index=indexes, metric="store")["indices"]
    sizes = {name: int(v["primaries"]["store"]["size_in_bytes"]) for name, v in stats.items()}
    collection_id = rt.vectors.client.describe_collection(settings.milvus_collection)["collection_id"]
    url = f"http://127.0.0.1:{InfraSettings().milvus_metrics_port}/metrics"
    metrics = urllib.request.urlopen(url, timeout=30).read().decode()
    pattern = rf'^milvus_datacoord_stored_binlog_size{{collection_id="{collection_id}",[^}}]*}} (\S+)$'
    binlogs = sum(float(v) for v in re.findall(pattern, metrics, flags=re.M))
    return {
        "opensearch units": sizes.get(settings.opensearch_index, 0),
        "opensearch contexts": sizes.get(f"{settings.opensearch_index}-contexts", 0),
        "milvus binlogs": int(binlogs),
        "milvus index files": tree_bytes(milvus_index_dir()) - index_files_before,
    }


def print_bytes(name: str, parts: dict[str, int], scrubbed: int) -> None:
    total = sum(parts.values())
    detail = ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in parts.items())
    ratio = total / max(scrubbed, 1)
    print(
        f"{name:<9} on disk {total / 1e6:.1f} MB ({detail}): x{ratio:.1f} the {scrubbed / 1e6:.1f} MB scrubbed"
    )


def main() -> None:
    ap = parser(__doc__, 2)
    ap.add_argument("--passes", type=int, default=2, help="times every question is asked (each printed)")
    ap.add_argument("--longmemeval", type=int, default=None, metavar="N", help="N LongMemEval histories")
    args = ap.parse_args()
    from simplemem.runtime import freeze_heap, open_runtime

    workload = longmemeval_workload(args.longmemeval) if args.longmemeval else locomo_workload(args)
    if workload is None:
        return
    lines, questions = workload
    suffix = uuid.uuid4().hex[:8]
    modes = {
        "embedded": Settings(),
        "services": Settings(
            mode="services",
            opensearch_index=f"simplemem-bench-{suffix}",
            milvus_collection=f"simplemem_bench_{suffix}",
            milvus_index_type="HNSW",
            redis_key_prefix=f"simplemem-bench-{suffix}",
        ),
    }
    for name, settings in modes.items():
        folder = tempfile.TemporaryDirectory(prefix=f"simplemem-{name}-")  # removed after: hundreds of MB
        rt = open_runtime(settings, Path(folder.name))
        services = name == "services"
        try:
            rt.pipeline.warm_up()
            scrubbed: list[int] = []
            count_scrubbed(rt.pipeline, scrubbed)
            index_files = tree_bytes(milvus_index_dir()) if services else 0  # before, to subtract
            t = time.perf_counter()
            report = rt.pipeline.ingest(lines())
            ingest_s = time.perf_counter() - t
            if services:  # searches over rows not indexed yet scan, and the build takes CPU
                from bench.query_service import visible_rows, wait_indexed

                rt.vectors.flush()
                wait_indexed(rt.vectors, visible_rows(rt.vectors))
                print_bytes(name, services_bytes(rt, settings, index_files), sum(scrubbed))
            else:
                print_bytes(name, disk_bytes(Path(folder.name)), sum(scrubbed))
            rt.retriever  # noqa: B018
            freeze_heap()  # as the query service does once started
            for n in range(1, args.passes + 1):
                label = f"pass {n}"
                busy = machine_busy_seconds()
                lat = warm_latencies_ms(rt.retriever, questions, warm_up=WARM_UP)
                cpu_ms = (machine_busy_seconds() - busy) * 1000 / (len(lat) + WARM_UP)
                print(
                    f"{name:<9} {label:<10} ingest {report.accepted / ingest_s:5.0f} turns/s   "
                    f"query p50 {np.percentile(lat, 50):5.1f} ms   p95 {np.percentile(lat, 95):5.1f} ms   "
                    f"CPU {cpu_ms:5.1f} ms/query, all processes   ({len(lat)} queries, {report.units} units)"
                )
        finally:
            if services:
                for index in (settings.opensearch_index, f"{settings.opensearch_index}-contexts"):
                    rt.lexical.client.indices.delete(index=index, ignore=[404])  # type: ignore[attr-defined]
                rt.vectors.client.drop_collection(settings.milvus_collection)  # type: ignore[attr-defined]
                for key in rt.buffer.r.scan_iter(f"{settings.redis_key_prefix}:*"):  # type: ignore[attr-defined]
                    rt.buffer.r.delete(key)  # type: ignore[attr-defined]
            rt.close()
            folder.cleanup()


if __name__ == "__main__":
    main()
