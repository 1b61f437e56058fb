"""What a perfect reranker would give on LoCoMo: the ceiling of reordering the retriever's candidates.

    python -m bench.locomo_ceiling --store DIR [--depth 1.5 --depth 4] [--out FILE]

``DIR`` is a store that ``python -m bench.locomo --store DIR`` filled (it is only read here). Every
question of categories 1-4 is answered once as the retriever answers it, then once per ``--depth D``
with an oracle in place of a reranker: the memories of the question's gold evidence messages ranked
within the first ``D * k`` candidates go to the top of the ranking the selection reads (ahead of every
boost), in their own order; everything else (k, siblings, near-duplicates, the context) is the
retriever's own. It prints answer recall, evidence recall and mean context tokens per category and
depth, as ``bench.locomo`` does ("all" here is categories 1-4 for every measure: ``bench.locomo``'s
token mean also counts category 5).

A reranker scores ``query, memory`` pairs, so its cost grows with the candidates it reads: the depth
is its candidate count in units of k. A reranker of the first ``D * k`` candidates can at most reach
the row of depth ``D``; a real one reaches a part of the way from the retriever's row to it.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from statistics import mean

import orjson

from bench.common import conversations, parser
from bench.locomo import CATEGORIES
from bench.metrics import answer_recall, evidence_recall
from simplemem.processors.retrieval.retriever import Retriever
from simplemem.schemas.memory import MemoryStatus
from simplemem.schemas.query import QueryRequest, QueryResult
from simplemem.schemas.settings import Settings

# Above any fused score plus every boost (each of those is at most 1): a promoted memory stays ahead
# through the selection's re-sorting.
ORACLE_LIFT = 100.0


def promote(ranked: list[tuple[str, float]], wanted: set[str], depth: int) -> list[tuple[str, float]]:
    """``ranked`` with the ids in ``wanted`` among its first ``depth`` entries lifted to the top (in
    their order, by ``ORACLE_LIFT``); the others keep their places and scores."""
    lifted = [(uid, sc + ORACLE_LIFT) for uid, sc in ranked[:depth] if uid in wanted]
    ids = {uid for uid, _ in lifted}
    return lifted + [(uid, sc) for uid, sc in ranked if uid not in ids]


def answers(
    retriever: Retriever, request: QueryRequest, wanted: set[str], depths: list[float]
) -> list[QueryResult]:
    """``request`` answered once per depth from one plan and one gathering: at depth ``D`` (> 0) the
    ``wanted`` memories ranked within ``D * k`` are promoted before the selection reads the ranking
    (ahead of every boost); at depth 0 the retriever's own answer."""
    plan = retriever.plan(request)
    found = retriever.gather(plan)
    results = []
    for depth in depths:
        ranked = promote(found.ranked, wanted, round(depth * plan.k)) if depth and wanted else found.ranked
        results.append(retriever.render(plan, retriever.select(plan, replace(found, ranked=ranked))))
    return results


def main() -> None:
    ap: argparse.ArgumentParser = parser(__doc__, None)
    ap.add_argument("--store", type=Path, required=True, help="a store bench.locomo --store filled")
    ap.add_argument(
        "--depth", type=float, action="append", default=None, help="candidates reranked, in units of k"
    )
    ap.add_argument("--out", type=Path, default=None, help="the table as JSON")
    args = ap.parse_args()
    from simplemem.runtime import open_runtime, store_exists

    if not store_exists(args.store):
        ap.error(f"no store in {args.store}: fill it with python -m bench.locomo --store {args.store}")
    depths = [0.0, *(args.depth or [1.5, 2.0, 4.0])]
    convs = conversations(args)
    rt = open_runtime(Settings(), args.store)
    retriever = rt.retriever
    # depth -> category -> measure -> values
    sums: dict[float, dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for conv in convs:
        for q in conv.questions:
            if q.category not in (1, 2, 3, 4) or q.answer is None:
                continue
            units = retriever.lexical.units_from_sources(q.tenant_id, q.evidence)
            wanted = {u.id for u in units if u.status == MemoryStatus.ACTIVE}
            request = QueryRequest(id=q.qid, tenant_id=q.tenant_id, query=q.question, as_of=q.as_of)
            for depth, result in zip(depths, answers(retriever, request, wanted, depths), strict=True):
                cited = {s for m in result.memories for s in m.source_ids}
                cell = sums[depth][CATEGORIES[q.category]]
                cell["answer"].append(answer_recall(q.answer, result.context))
                cell["evidence"].append(evidence_recall(q.evidence, cited))
                cell["tokens"].append(result.context_tokens)
    rt.close()
    cats = [CATEGORIES[c] for c in (1, 2, 3, 4)]
    table: dict[str, dict[str, dict[str, float]]] = {}
    for measure in ("answer", "evidence", "tokens"):
        print(f"\n{measure} {'recall' if measure != 'tokens' else '(mean cl100k context tokens)'}")
        print(f"{'reranked':<14}" + "".join(f"{c:>13}" for c in [*cats, "all"]))
        for depth in depths:
            by_cat = sums[depth]
            values = [mean(by_cat[c][measure]) for c in cats]
            every = [v for c in cats for v in by_cat[c][measure]]
            row = [*values, mean(every)]
            label = "none (as is)" if not depth else f"first {depth:g}k"
            fmt = "{:>13.0f}" if measure == "tokens" else "{:>13.3f}"
            print(f"{label:<14}" + "".join(fmt.format(v) for v in row))
            table.setdefault(label, {})[measure] = dict(zip([*cats, "all"], row, strict=True))
    if args.out is not None:
        args.out.write_bytes(orjson.dumps(table, option=orjson.OPT_INDENT_2))
        print(f"written {args.out}")


if __name__ == "__main__":
    main()
