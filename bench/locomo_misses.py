"""Why the pipeline misses LoCoMo evidence: each gold message of each question, put in one bucket.

    python -m bench.locomo_misses --store DIR [--category multi-hop --category temporal] [--out FILE]

``DIR`` is a store that ``python -m bench.locomo --store DIR`` filled (it is only read here). Every
question of the categories asked (default 1-4) is answered again, with the retriever's ranking
recorded (the retriever's steps run one by one); each gold evidence message then falls in the first bucket that fits:

- ``not stored``: no active memory comes from the message (its window was filtered, or it gave no
  statement);
- ``cited``: a memory from it is in the context (chosen, or a sibling of a chosen one);
- ``time filtered``: the query's date restricted the search (``date_boost`` 0) or
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

import orjson

from bench.common import conversations, parser
from bench.locomo import CATEGORIES
from bench.metrics import answer_recall
from simplemem.processors.retrieval.dedupe import near_duplicate
from simplemem.processors.retrieval.retriever import Retriever
from simplemem.schemas.memory import MemoryStatus
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.settings import Settings

BUCKETS = ("not stored", "cited", "time filtered", "not in pool", "near duplicate", "below k")


class Trace:
    """One question answered step by step, keeping what passed between the steps: the plan (its
    filter, with the question's date if it named one) and the ranking the selection read."""

    def __init__(self, retriever: Retriever, request: QueryRequest) -> None:
        self.retriever = retriever
        self.plan = retriever.plan(request)
        self.found = retriever.gather(self.plan)
        self.result = retriever.render(self.plan, retriever.select(self.plan, self.found))

    @property
    def ranked(self) -> list[tuple[str, float]]:
        return self.found.ranked

    def search_any_day(self) -> set[str]:
        """The ids one search without the question's date finds."""
        plan, embedder = self.plan, self.retriever.embedder
        wide = replace(plan.within, first_day=None, last_day=None)
        ranked, _ = self.retriever.search.search(
            plan, lambda: embedder.encode([plan.search_text])[0], wide, {}
        )
        return {uid for uid, _ in ranked}


def bucket(trace: Trace, tenant: str, dia: str, cited: set[str], chosen: list[str]) -> tuple[str, int | None]:
    retriever, plan = trace.retriever, trace.plan
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
        if plan.within.first_day is not None and ids & trace.search_any_day():
            return "time filtered", None
        return "not in pool", None
    rank = ranks[0]
    if rank < plan.k * plan.config.select_head_factor:
        by_id = {u.id: u for u in units}
        unit = by_id[trace.ranked[rank][0]]
        chosen_units = retriever.lexical.get(tenant, chosen)
        threshold = plan.config.dedupe_similarity
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
            trace = Trace(retriever, QueryRequest(tenant_id=q.tenant_id, query=q.question, as_of=q.as_of))
            result = trace.result
            recall = answer_recall(q.answer, result.context)
            cited = {s for m in result.memories for s in m.source_ids}
            chosen = [m.id for m in result.memories[: result.k]]
            found = []
            for dia in q.evidence:
                name, rank = bucket(trace, q.tenant_id, dia, cited, chosen)
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
