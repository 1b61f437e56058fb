"""Why each memory of an answer was chosen: its semantic, lexical and symbolic parts.

Recomputed after the answer, from the same stores and rules as :class:`Retriever` (the retriever keeps
no trace of a query: a trace on every query would cost the agents' path). The cosine is the memory's
own vector against the question's, the BM25 share its place among the candidates the lexical index
returns for the question, and the symbolic parts the boosts and filters the retriever applies (persons
the question names, its date, a question about time, whose words it asks about). A memory neither index
returned came with a chosen memory of its message (a sibling) or from the recent-turn buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simplemem.processors.retrieval.boosts import share
from simplemem.processors.retrieval.question import is_temporal
from simplemem.processors.retrieval.retriever import Retriever
from simplemem.processors.stores import batched
from simplemem.processors.stores.protocols import SymbolicFilter, about_any, day_range
from simplemem.schemas.browse import Reason
from simplemem.schemas.memory import DERIVED_KINDS, MemoryUnit
from simplemem.schemas.query import QueryRequest, QueryResult


@dataclass
class Explanation:
    reasons: list[Reason]
    weight: float
    names: list[str]
    date_range: list[str] | None


def explain(retriever: Retriever, request: QueryRequest, result: QueryResult) -> Explanation:
    """Each memory of ``result`` with its parts, from the question planned as the retriever plans it."""
    planned = retriever.plan(request)
    tenant, names, weight, asked = planned.tenant, list(planned.names), planned.weight, planned.asked
    within = planned.within
    days = (within.first_day, within.last_day) if within.first_day and within.last_day else None
    flt = SymbolicFilter(stated_before=planned.as_of, active_only=not request.include_archived)
    terms = planned.config.store_expression_terms
    lexical = batched.search(retriever.lexical, tenant, planned.search_text, planned.pool, flt, terms)
    qvec = np.asarray(retriever.embedder.encode([planned.search_text])[0], dtype=np.float32)
    semantic = retriever.vectors.search(tenant, qvec, planned.pool, flt)
    ids = [m.id for m in result.memories]
    units = {u.id: u for u in retriever.lexical.get(tenant, ids, with_context=False)}
    vectors = retriever.vectors.vectors(tenant, ids)
    top_bm25 = max((h.score for h in lexical), default=0.0)
    top_cosine = max((h.score for h in semantic), default=0.0)
    bm25 = {h.id: (rank, h.score) for rank, h in enumerate(lexical, 1)}
    found_by_vector = {h.id for h in semantic}
    reasons = []
    for memory in result.memories:
        cosine = _cosine(qvec, vectors.get(memory.id))
        rank, score = bm25.get(memory.id, (None, 0.0))
        unit = units.get(memory.id)
        reasons.append(
            Reason(
                id=memory.id,
                score=memory.score,
                semantic=round(weight * share(cosine or 0.0, top_cosine), 4),
                lexical=round((1 - weight) * share(score, top_bm25), 4),
                cosine=None if cosine is None else round(cosine, 4),
                bm25_rank=rank,
                symbolic=_symbolic(unit, names, days, request.query, asked) if unit else ["recent turn"],
                sibling=rank is None
                and memory.id not in found_by_vector
                and memory.kind not in DERIVED_KINDS,
            )
        )
    date_range = [days[0].isoformat(), days[1].isoformat()] if days else None
    return Explanation(reasons, weight, names, date_range)


def _cosine(query: np.ndarray, vector: np.ndarray | None) -> float | None:
    if vector is None:
        return None
    v = np.asarray(vector, dtype=np.float32)
    norms = float(np.linalg.norm(query) * np.linalg.norm(v))
    return float(np.dot(query, v) / norms) if norms > 0 else 0.0


def _symbolic(
    unit: MemoryUnit, names: list[str], days: tuple[object, object] | None, query: str, asked: object
) -> list[str]:
    """The boosts the retriever gives this memory for this question, in words."""
    found = []
    if unit.kind in DERIVED_KINDS:
        found.append(f"derived {unit.kind.value} line: read before the statements for this form of question")
    if names and about_any(unit, names):
        found.append("about " + ", ".join(n for n in names if about_any(unit, [n])))
        if unit.speaker and unit.speaker.lower() in names:
            found.append(f"said by {unit.speaker}")
    if days is not None:
        first, last = day_range(unit)
        lo, hi = (d.toordinal() for d in days)  # type: ignore[attr-defined]
        if last >= lo and first <= hi:
            found.append("within the question's dates")
    if is_temporal(query) and unit.event_time:
        found.append(f"carries its event time ({unit.event_time})")
    if asked is not None and unit.role == asked:
        found.append(f"said by the {unit.role} the question asks about")
    if unit.superseded_by:
        found.append("superseded (kept, ranked lower)")
    return found
