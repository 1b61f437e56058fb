"""A candidate source: recent turns from the lookaside buffer that no memory comes from yet.

A fact said a moment ago is answerable before its window is decided and indexed. Such a turn is
scored like a memory (cosine as its share of the best, the indexes' best included, and the share of
the question's terms it holds) and dated like one ("yesterday" said a moment ago is a day).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simplemem.processors.language.temporal import anchor_text
from simplemem.processors.language.text import query_terms
from simplemem.processors.retrieval.boosts import share
from simplemem.processors.retrieval.buffer import RecentTurnBuffer
from simplemem.processors.retrieval.gather import Candidates, Scored
from simplemem.processors.retrieval.plan import Plan
from simplemem.processors.retrieval.question import is_past
from simplemem.processors.stores.protocols import LexicalStore, names_in_text
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.window import BufferedTurn


@dataclass
class RecentTurns:
    buffer: RecentTurnBuffer
    lexical: LexicalStore

    def fetch(self, plan: Plan) -> list[BufferedTurn]:
        """The buffered turns said by the plan's ``as_of`` that no memory unit comes from yet."""
        turns = [t for t in self.buffer.recent(plan.tenant) if t.vector and t.ts <= plan.as_of]
        if not turns:
            return []
        indexed = self.lexical.sources_with_units(plan.tenant, [t.message_id for t in turns])
        return [t for t in turns if t.message_id not in indexed]

    def score(self, plan: Plan, fetched: list[BufferedTurn], qvec: np.ndarray, indexed: Candidates) -> Scored:
        """The turns that match, as memories with their scores. None under the API's date range (a
        recent turn has no event time yet) or a kind filter without facts (a turn is a statement)."""
        filters = plan.filters
        hits = score_turns(plan, fetched, qvec, indexed.best_cosine)
        if plan.explicit_range or (filters.kinds and MemoryKind.FACT not in filters.kinds):
            return {}
        if filters.sessions:
            return {uid: hit for uid, hit in hits.items() if hit[0].session_id in filters.sessions}
        return hits


def score_turns(plan: Plan, fresh: list[BufferedTurn], qvec: np.ndarray, best_cosine: float) -> Scored:
    """Each turn scored by its cosine (as its share of the best, ``best_cosine`` included) and the share
    of the question's terms it holds; a turn whose score by its raw cosine is below
    ``buffer_min_score`` is not a match at all."""
    if not fresh:
        return {}
    c, w, names = plan.config, plan.weight, list(plan.names)
    terms = set(query_terms(plan.query))
    cosines = [float(np.dot(qvec, np.asarray(t.vector, dtype=np.float32))) for t in fresh]
    top = max([best_cosine, *cosines])
    hits: Scored = {}
    for t, cosine in zip(fresh, cosines, strict=True):
        text = f"{t.speaker}: {t.text}"
        overlap = len(terms & set(query_terms(text))) / len(terms) if terms else 0.0
        if w * max(cosine, 0.0) + (1 - w) * overlap >= c.buffer_min_score:
            score = w * share(cosine, top) + (1 - w) * overlap
            if names and names_in_text(text, names):
                score += c.person_boost
            unit = as_memory(plan.tenant, t, text)
            hits[unit.id] = (unit, score)
    return hits


def as_memory(tenant: str, turn: BufferedTurn, text: str) -> MemoryUnit:
    """A buffered turn as a memory, its relative dates anchored to the day it was said."""
    dated, anchors = anchor_text(text, turn.ts, past=is_past(text))
    return MemoryUnit(
        id=f"buffer:{turn.message_id}",
        tenant_id=tenant,
        text=dated,
        source_ids=[turn.message_id],
        stated_at=turn.ts.isoformat(),
        event_time=anchors[0].value if anchors else None,
        speaker=turn.speaker,
        role=turn.role,
        session_id=turn.session_id,
    )
