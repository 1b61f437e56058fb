"""Ingestion throughput, warm query latency and peak RSS of the embedded mode.

    python -m bench.ingest [--data ../shared/data/locomo] [--limit N] [--queries 200]

Turns/s counts the whole pipeline (validation, spaCy, PII, MiniLM, windows, entropy, decomposition,
both stores) after the models are loaded; latency is measured on warm queries (after 10 warm-ups).
"""

from __future__ import annotations

import time

import numpy as np
import psutil

from bench.common import conversations, event_lines, parser, scratch_store, warm_latencies_ms
from simplemem.schemas.settings import Settings


def main() -> None:
    ap = parser(__doc__, None)
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args()
    convs = conversations(args)
    from simplemem.runtime import open_runtime

    rt = open_runtime(Settings(), scratch_store("simplemem-bench-"))
    t = time.perf_counter()
    pipeline = rt.pipeline
    pipeline.warm_up()
    load_s = time.perf_counter() - t
    lines = event_lines(convs)
    t = time.perf_counter()
    report = pipeline.ingest(lines)
    ingest_s = time.perf_counter() - t
    questions = [q for c in convs for q in c.questions][: args.queries]
    lat = warm_latencies_ms(rt.retriever, questions)
    rss = psutil.Process().memory_info()
    peak_mb = getattr(rss, "peak_wset", None) or _peak_rss_mb()
    print(f"models loaded in {load_s:.1f}s")
    print(
        f"ingestion: {report.accepted} turns in {ingest_s:.1f}s = {report.accepted / ingest_s:.0f} turns/s "
        f"({report.units} units, discard rate {report.discard_rate:.1%})"
    )
    print(
        f"query latency (warm, {len(lat)} queries): p50 {np.percentile(lat, 50):.1f} ms, "
        f"p95 {np.percentile(lat, 95):.1f} ms"
    )
    print(f"peak RSS: {peak_mb:.0f} MB")
    rt.close()


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
