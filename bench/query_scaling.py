"""Warm query latency against the size of the store (embedded): the same LongMemEval questions
answered from stores of different sizes, each filled by ``bench.longmemeval --store DIR``.

    python -m bench.query_scaling STORE [STORE ...] [--repeat 5]

Only the questions whose tenant is in every store are asked, so every store answers the same
questions; a store's size is its count of memory units (all tenants). Prints p50/p95 per store and
the ratio of the largest store's p95 to the smallest's.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

from bench.longmemeval import DEFAULT_FILE, prepared_questions, request
from bench.longmemeval_data import LmeQuestion
from simplemem.runtime import LEXICAL_FILE
from simplemem.schemas.settings import Settings


def units_in(store: Path) -> int:
    with sqlite3.connect(f"file:{store / LEXICAL_FILE}?mode=ro", uri=True) as db:
        return int(db.execute("SELECT count(*) FROM units").fetchone()[0])


def tenants_in(store: Path) -> set[str]:
    """The store's tenants, as the store names them (its file numbers them)."""
    from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore

    lexical = SqliteLexicalStore(store / LEXICAL_FILE)
    try:
        return set(lexical.tenants())
    finally:
        lexical.close()


def latencies_ms(store: Path, questions: list[LmeQuestion], repeat: int) -> list[float]:
    from simplemem.runtime import open_runtime

    rt = open_runtime(Settings(), store)
    try:
        for q in questions:  # warm: models, caches, the tenants' vector arrays
            rt.retriever.query(request(q))
        out = []
        for _ in range(repeat):
            for q in questions:
                start = time.perf_counter()
                rt.retriever.query(request(q))
                out.append((time.perf_counter() - start) * 1000)
        return out
    finally:
        rt.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stores", type=Path, nargs="+")
    ap.add_argument("--data", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    questions = prepared_questions(args.data)
    if questions is None:
        return
    common = set.intersection(*(tenants_in(s) for s in args.stores))
    asked = [q for q in questions if q.tenant_id in common]
    if not asked:
        sys.exit("no question's tenant is in every store")
    print(f"{len(asked)} questions whose tenant is in every store, each asked {args.repeat} times warm")
    rows = []
    for store in sorted(args.stores, key=units_in):
        lat = latencies_ms(store, asked, args.repeat)
        p50, p95 = float(np.percentile(lat, 50)), float(np.percentile(lat, 95))
        rows.append((units_in(store), p50, p95))
        print(f"{units_in(store):>8} units  p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  ({store})")
    print(f"p95 ratio, largest to smallest store: {rows[-1][2] / rows[0][2]:.2f}")


if __name__ == "__main__":
    main()
