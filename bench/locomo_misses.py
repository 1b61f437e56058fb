"""Why the pipeline misses LoCoMo evidence: each gold message of each question, put in one bucket.

    python -m bench.locomo_misses --store DIR [--category multi-hop --category temporal] [--out FILE]

``DIR`` is a store that ``python -m bench.locomo --store DIR`` filled (it is only read here). Every
question of the categories asked (default 1-4) is answered again, with the retriever's ranking
recorded; each gold evidence message then falls in the first bucket that fits:

- ``not stored``: no active memory comes from the message (its window was filtered, or it gave no
  statement);
- ``cited``: a memory from it is in the context (chosen, or a sibling of a chosen one);
- ``time filtered``: the query's date restricted the search (``SIMPLEMEM_DATE_BOOST=0``) or
  favoured others, and no memory of the message is in the ranking; one search without the date finds it;
- ``not in pool``: neither index returned a memory of the message among its candidates;
- ``near duplicate``: ranked within the head the selection reads, dropped as a near-duplicate;
- ``below k``: ranked, but below the memories chosen (the rank of its best memory is kept).

Questions whose gold answer is only partly in the context are counted apart when all their evidence
was cited (``cited, answer worded otherwise``): the memory is there, its words are not the answer's.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from bench.common import conversations, parser
from bench.locomo import CATEGORIES
from bench.metrics import answer_recall
from simplemem.processors.retrieval.retriever import SELECT_HEAD_FACTOR, Retriever, near_duplicate
from simplemem.processors.stores.protocols import SymbolicFilter
from simplemem.schemas.memory import MemoryStatus
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.settings import Settings

BUCKETS = ("not stored", "cited", "time filtered", "not in pool", "near duplicate", "below k")


class Trace:
    """The ranking the selection read (after the date boost, if any) and the filter of the first
    search of the last query (its date, if the query named one)."""

    def __init__(self, retriever: Retriever) -> None:
        self.ranked: list[tuple[str, float]] = []
        self.flt: SymbolicFilter | None = None
        self.weight = 0.0
        search, select = retriever._search, retriever._select

        def traced(
            tenant: str,
            query: str,
            qvec: Any,
            pool: int,
            flt: SymbolicFilter,
            fetched: dict[str, Any],
            weight: float,
        ) -> tuple[list[tuple[str, float]], float]:
            if self.flt is None:
                self.flt, self.args, self.weight = flt, (tenant, query, qvec, pool), weight
            return search(tenant, query, qvec, pool, flt, fetched, weight)

        def selected(tenant: str, ranked: list[tuple[str, float]], *args: Any) -> Any:
            self.ranked = ranked
            return select(tenant, ranked, *args)

        retriever._search = traced  # type: ignore[method-assign]
        retriever._select = selected  # type: ignore[method-assign,assignment]
        self.search = search

    def reset(self) -> None:
        self.ranked, self.flt = [], None


def bucket(
    retriever: Retriever, trace: Trace, tenant: str, dia: str, cited: set[str], k: int, chosen: list[str]
) -> tuple[str, int | None]:
    units = [
        u for u in retriever.lexical.units_from_sources(tenant, [dia]) if u.status == MemoryStatus.ACTIVE
    ]
    if not units:
        return "not stored", None
    if dia in cited:
        return "cited", None
    ids = {u.id for u in units}
    ranks = [i for i, (uid, _) in enumerate(trace.ranked) if uid in ids]
    if not ranks:
        flt = trace.flt
        if flt is not None and flt.first_day is not None:
            wide = replace(flt, first_day=None, last_day=None)
            unfiltered, _ = trace.search(*trace.args, wide, {}, trace.weight)
            if ids & {uid for uid, _ in unfiltered}:
                return "time filtered", None
        return "not in pool", None
    rank = ranks[0]
    if rank < k * SELECT_HEAD_FACTOR:
        by_id = {u.id: u for u in units}
        unit = by_id[trace.ranked[rank][0]]
        chosen_units = retriever.lexical.get(tenant, chosen)
        threshold = retriever.settings.dedupe_similarity
        if any(near_duplicate(unit.text, c.text, threshold) for c in chosen_units):
            return "near duplicate", rank
    return "below k", rank


def main() -> None:
    ap: argparse.ArgumentParser = parser(__doc__, None)
    ap.add_argument("--store", type=Path, required=True, help="a store bench.locomo --store filled")
    ap.add_argument("--category", action="append", default=None, choices=list(CATEGORIES.values())[:4])
    ap.add_argument("--out", type=Path, default=None, help="one JSON line per missed gold message")
    args = ap.parse_args()
    from simplemem.runtime import open_runtime, store_exists

    if not store_exists(args.store):
        ap.error(f"no store in {args.store}: fill it with python -m bench.locomo --store {args.store}")
    wanted = set(args.category or list(CATEGORIES.values())[:4])
    convs = conversations(args)
    rt = open_runtime(Settings(), args.store)
    retriever = rt.retriever
    trace = Trace(retriever)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    worded: Counter[str] = Counter()
    partial: Counter[str] = Counter()
    ranks: dict[str, list[tuple[int, int]]] = defaultdict(list)  # (rank, k) of evidence ranked too low
    rows = []
    for conv in convs:
        for q in conv.questions:
            cat = CATEGORIES[q.category]
            if cat not in wanted or q.answer is None:
                continue
            trace.reset()
            result = retriever.query(QueryRequest(tenant_id=q.tenant_id, query=q.question, as_of=q.as_of))
            recall = answer_recall(q.answer, result.context)
            cited = {s for m in result.memories for s in m.source_ids}
            chosen = [m.id for m in result.memories[: result.k]]
            found = []
            for dia in q.evidence:
                name, rank = bucket(retriever, trace, q.tenant_id, dia, cited, result.k, chosen)
                counts[cat][name] += 1
                found.append(name)
                if name == "below k" and rank is not None:
                    ranks[cat].append((rank, result.k))
                if name != "cited":
                    rows.append(
                        {
                            "qid": q.qid,
                            "category": cat,
                            "question": q.question,
                            "dia": dia,
                            "bucket": name,
                            "rank": rank,
                            "k": result.k,
                        }
                    )
            if recall < 1.0:
                partial[cat] += 1
                if all(b == "cited" for b in found):
                    worded[cat] += 1
    rt.close()
    print(
        f"{'category':<12}"
        + "".join(f"{b:>15}" for b in BUCKETS)
        + f"{'partial ans.':>14}{'of which cited':>16}"
    )
    for cat in [c for c in CATEGORIES.values() if c in counts]:
        print(
            f"{cat:<12}"
            + "".join(f"{counts[cat][b]:>15}" for b in BUCKETS)
            + f"{partial[cat]:>14}{worded[cat]:>16}"
        )
    for cat, rs in ranks.items():
        within = [sum(1 for r, k in rs if r < f * k) for f in (1.5, 2, 3)]
        print(
            f"{cat}: {len(rs)} below k, ranked within 1.5k / 2k / 3k: {within[0]} / {within[1]} / {within[2]}"
        )
    if args.out is not None:
        args.out.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
        print(f"written {args.out}")


if __name__ == "__main__":
    main()
