"""LoCoMo before and after consolidation, in one run: answer recall per category, mean context
tokens, and the share of active memories archived.

    python -m bench.consolidation [--limit N] [--store DIR]

The conversations are ingested once; every question is asked, then each tenant is consolidated
(clusters into abstracts, then the knowledge-update rule: ``Runtime.consolidate``) and every
question is asked again. Consolidation must not lower answer recall in any category by more than
0.01 (the script says which, if any, did).
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import conversations, event_lines, parser, scratch_store
from bench.locomo import CATEGORIES
from bench.locomo_data import Conversation
from bench.metrics import answer_recall
from simplemem.schemas.memory import MemoryStatus
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.settings import Settings

MAX_RECALL_DROP = 0.01


def ask_all(rt: Any, convs: list[Conversation]) -> dict[str, dict[str, float]]:
    """Per category: mean answer recall and mean context tokens."""
    cells: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for conv in convs:
        for q in conv.questions:
            result = rt.retriever.query(QueryRequest(tenant_id=q.tenant_id, query=q.question, as_of=q.as_of))
            for cat in (CATEGORIES[q.category], "all"):
                cells[cat]["tokens"].append(result.context_tokens)
                if q.category != 5 and q.answer is not None:
                    cells[cat]["answer"].append(answer_recall(q.answer, result.context))
    return {cat: {k: sum(v) / len(v) for k, v in cell.items() if v} for cat, cell in cells.items()}


def shares(rt: Any, tenants: list[str]) -> tuple[int, int, int]:
    """(memories active before consolidation, archived now, abstracts now)."""
    active = archived = abstracts = 0
    for tenant in tenants:
        for page in rt.lexical.iter_units(tenant, 1000):
            for u in page:
                archived += u.status == MemoryStatus.ARCHIVED
                abstracts += u.kind == "abstract"
                active += u.status == MemoryStatus.ACTIVE and u.kind != "abstract"
    return active + archived, archived, abstracts


def main() -> None:
    ap = parser(__doc__, None)
    ap.add_argument("--store", type=Path, default=None, help="store folder (default: a fresh temporary one)")
    args = ap.parse_args()
    from simplemem.runtime import open_runtime

    convs = conversations(args)
    store = args.store or scratch_store("simplemem-consolidation-")
    rt = open_runtime(Settings(), store)
    try:
        rt.pipeline.ingest(event_lines(convs))
        before = ask_all(rt, convs)
        tenants = [c.tenant_id for c in convs]
        t0 = time.perf_counter()
        runs = [rt.consolidate(t) for t in tenants]
        seconds = time.perf_counter() - t0
        after = ask_all(rt, convs)
        total, archived, abstracts = shares(rt, tenants)
    finally:
        rt.close()
    updates = sum(len(r.updated) for r in runs)
    print(
        f"{len(convs)} conversations: {total} memories before; consolidation made {abstracts} abstracts, "
        f"archived {archived} ({archived / max(total, 1):.1%} of the active memories), set {updates} "
        f"supersession pointers, in {seconds:.1f} s"
    )
    print(f"{'category':<13}{'answer before':>14}{'after':>8}{'tokens before':>15}{'after':>8}")
    worse = []
    for cat in [*CATEGORIES.values(), "all"]:
        b, a = before.get(cat, {}), after.get(cat, {})
        if not b:
            continue
        ab, aa = b.get("answer"), a.get("answer")
        print(
            f"{cat:<13}{'-' if ab is None else f'{ab:.3f}':>14}{'-' if aa is None else f'{aa:.3f}':>8}"
            f"{b['tokens']:>15.0f}{a['tokens']:>8.0f}"
        )
        if ab is not None and aa is not None and ab - aa > MAX_RECALL_DROP:
            worse.append(f"{cat} ({ab:.3f} -> {aa:.3f})")
    print(f"answer recall lowered by more than {MAX_RECALL_DROP}: {', '.join(worse) or 'in no category'}")


if __name__ == "__main__":
    main()
