"""Step 2a, gather from the indexes: BM25 and vector candidates under the plan's filter, fused.

score = w * cosine share + (1 - w) * BM25 share (each as its share of the query's best), plus
``person_boost`` for a memory about a person the question names. A date in the question favours
(``date_boost``) or restricts to (``date_boost`` 0) the memories in it; a date that matches almost
nothing is dropped rather than obeyed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from simplemem.processors.retrieval.boosts import by_score, share
from simplemem.processors.retrieval.fanout import FanOut
from simplemem.processors.retrieval.plan import Plan
from simplemem.processors.stores import batched
from simplemem.processors.stores.protocols import Hit, LexicalStore, SymbolicFilter, VectorStore, about_any
from simplemem.schemas.memory import MemoryUnit

Ranked = list[tuple[str, float]]


def fuse(
    semantic: list[Hit], lexical: list[Hit], words_only: set[str], w: float, words_only_factor: float
) -> dict[str, float]:
    """Weighted sum (``w`` the semantic share) of cosine and BM25, each as its share of the best
    of this query. Both are shares: a raw cosine, low for every memory of a vague question, let the
    BM25 side, whose best is always 1, decide it on the common words the question happened to share
    ("lately", "weekend", "tips"). A memory in ``words_only`` (no vector) is ranked on its words
    alone: the cosine share it cannot have is taken as ``words_only_factor`` of its BM25 share.
    Otherwise the statements of a long answer, which are found by their words, could never outrank
    a memory that merely resembles the question; taken whole, a full BM25 share would count as the
    best meaning too, and an answer's keyword-rich statements would bury what the user said
    ("What book am I currently reading?" under book-tracking apps)."""
    top_bm25 = max((h.score for h in lexical), default=0.0)
    top_cosine = max((h.score for h in semantic), default=0.0)
    scores: dict[str, float] = {}
    for h in semantic:
        scores[h.id] = w * share(h.score, top_cosine)
    for h in lexical:
        norm = share(h.score, top_bm25)
        stand_in = w * norm * words_only_factor if h.id in words_only else 0.0
        scores[h.id] = scores.get(h.id, 0.0) + (1 - w) * norm + stand_in
    return scores


def with_aspect(ranked: Ranked, aspect: Ranked, share: float) -> Ranked:
    """One ranking from the question's (``ranked``) and one aspect's: a memory scores the better of
    its score for the question and ``share`` of its score for the aspect (each a share of its own
    search's best), so the best matches of every aspect rank beside those of the whole question."""
    best = dict(ranked)
    for uid, sc in aspect:
        best[uid] = max(best.get(uid, 0.0), share * sc)
    return by_score(list(best.items()))


def favour_within(wide: Ranked, within: Ranked, boost: float) -> Ranked:
    """One ranking from a search without the query's date (``wide``) and one within it (``within``):
    a memory found within the date gets ``boost`` on top of its better score of the two."""
    best = dict(wide)
    for uid, sc in within:
        best[uid] = max(best.get(uid, 0.0), sc) + boost
    return by_score(list(best.items()))


@dataclass
class IndexSearch:
    """The lexical and vector indexes searched for one plan."""

    lexical: LexicalStore
    vectors: VectorStore
    fan_out: FanOut

    def words(self, plan: Plan, flt: SymbolicFilter) -> list[Hit]:
        """The BM25 hits for the plan's search text under ``flt``, its persons aside (they are a boost:
        :meth:`search`)."""
        size, parallel = plan.config.store_expression_terms, self.fan_out.parallel
        anyone = replace(flt, names=())
        return batched.search(
            self.lexical, plan.tenant, plan.search_text, plan.pool, anyone, size, read=parallel
        )

    def ranking(
        self, plan: Plan, qvec: Callable[[], np.ndarray], fetched: dict[str, MemoryUnit]
    ) -> tuple[Ranked, float]:
        """The ranked candidates and the best cosine among them (units read on the way go into
        ``fetched``). A date that matches (almost) nothing was misremembered or refers to when something
        was said rather than when it happened, and an answer without the date beats an empty one: with
        ``date_boost`` both searches run (at once) and the date is a boost, without it the wider search
        runs only when the dated one finds fewer than ``k_min``."""
        c = plan.config

        def within() -> tuple[Ranked, float]:
            return self.search(plan, qvec, plan.within, fetched)

        def anyday() -> tuple[Ranked, float]:
            assert plan.anyday is not None
            return self.search(plan, qvec, plan.anyday, fetched)

        if plan.anyday is None:
            return within()
        if c.date_boost:
            (ranked, cosine), (wide, wide_cosine) = self.fan_out.both(within, anyday)
            return favour_within(wide, ranked, c.date_boost), max(cosine, wide_cosine)
        ranked, cosine = within()
        if len(ranked) >= c.k_min:
            return ranked, cosine
        wide, wide_cosine = anyday()
        return wide, max(cosine, wide_cosine)

    def search(
        self, plan: Plan, qvec: Callable[[], np.ndarray], flt: SymbolicFilter, fetched: dict[str, MemoryUnit]
    ) -> tuple[Ranked, float]:
        """Candidates from both indexes under ``flt``, fused with the plan's weight and ranked (every
        candidate's unit is read on the way, into ``fetched``), and the best cosine among them."""
        tenant, c = plan.tenant, plan.config
        size = c.store_expression_terms
        # Both indexes search every memory; those about the question's persons are boosted after (a
        # BM25 search restricted to them loses every statement that names them otherwise).
        anyone = replace(flt, names=())
        # Fusion needs to know which of the lexical hits the vectors did not find have no vector. Where
        # a read is a round trip (services), every candidate is read now: the BM25 search returns its
        # hits' documents, and the vector hits are read while it still runs; which have a vector and
        # which are about the question's persons is then decided on them. Embedded, the vector store's
        # arrays, which its search has just read, say which have a vector, and the lexical store's
        # name index decides the persons: a unit is read only if it is chosen from (a statement's
        # read inflates its message, tens of microseconds).
        parallel = self.fan_out.parallel

        def semantic_search() -> list[Hit]:
            hits = self.vectors.search(tenant, qvec(), plan.pool, anyone)
            if parallel:
                self.read(tenant, [h.id for h in hits], fetched)
            return hits

        # the words first: the question's vector may still be on its way (:class:`~.retriever.Retriever`)
        lexical, semantic = self.fan_out.both(lambda: self.words(plan, flt), semantic_search)
        fetched.update((h.id, h.unit) for h in lexical if h.unit is not None)
        ids = list(dict.fromkeys([*(h.id for h in semantic), *(h.id for h in lexical)]))
        seen = {h.id for h in semantic}
        unseen = [h.id for h in lexical if h.id not in seen]
        if parallel:
            about_ids = {uid for uid in ids if uid in fetched and about_any(fetched[uid], flt.names)}
            words_only = {uid for uid in unseen if uid in fetched and not fetched[uid].has_vector}
        else:
            about_ids = (
                batched.ids_with_names(self.lexical, tenant, ids, list(flt.names), size)
                if flt.names
                else set()
            )
            words_only = set(unseen) - self.vectors.vectors(tenant, unseen).keys()
        best_cosine = max((h.score for h in semantic), default=0.0)
        fused = fuse(semantic, lexical, words_only, plan.weight, c.words_only_cosine_factor)
        for uid in about_ids & fused.keys():
            fused[uid] += c.person_boost
        return by_score(list(fused.items())), best_cosine

    def read(self, tenant: str, ids: list[str], fetched: dict[str, MemoryUnit]) -> None:
        """The units of these ids not read yet, into ``fetched`` (without their message)."""
        unread = [uid for uid in ids if uid not in fetched]
        fetched.update((u.id, u) for u in self.lexical.get(tenant, unread, with_context=False))
