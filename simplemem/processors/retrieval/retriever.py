"""A query as four named steps around one :class:`RetrievalConfig`:

1. **plan** (:mod:`.plan`, rules in :mod:`.question`): the question's kind (a lookup, an answer
   spread over sessions, a gathering of mentions), the persons it names that the tenant knows, its
   dates, whose statements it is about, and k;
2. **gather** (:mod:`.gather`): candidates from the indexes (:mod:`.search`: BM25 and vectors fused,
   persons and dates favoured; by each thing a question enumerates too) and from every other :class:`~.gather.CandidateSource` (recent turns
   not indexed yet: :mod:`.recent`); first, the derived lines the question's form reads (timeline,
   instructions, preferences, profile: :mod:`.derived`), coarse before fine;
3. **select** (:mod:`.select`): the top k of the ranking's head after the boosts (:mod:`.boosts`),
   current facts in place of changed ones (:mod:`.updates`), near-repeats absorbed (:mod:`.dedupe`),
   then the chosen memories' siblings (:mod:`.siblings`);
4. **render** (:mod:`.render`): what fits the token budget (:mod:`.budget`), as the context.

``Retriever.query`` runs them in order; each step is public, so a bench may run them itself and
look at (or change) what passes between them. Nothing stated after ``as_of`` is ever returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

import numpy as np

from simplemem.processors.ingest.embedding import Embedder
from simplemem.processors.retrieval.buffer import RecentTurnBuffer
from simplemem.processors.retrieval.config import RetrievalConfig
from simplemem.processors.retrieval.cores import SpareCore
from simplemem.processors.retrieval.derived import (
    Aspect,
    Searches,
    gather_derived,
    reads_one_subject,
)
from simplemem.processors.retrieval.derived import search_words as derived_words
from simplemem.processors.retrieval.fanout import FanOut
from simplemem.processors.retrieval.forms import aspects
from simplemem.processors.retrieval.gather import Candidates, CandidateSource, Gatherer, Parts
from simplemem.processors.retrieval.names import TenantNames
from simplemem.processors.retrieval.plan import Plan, plan
from simplemem.processors.retrieval.recent import RecentTurns
from simplemem.processors.retrieval.render import render
from simplemem.processors.retrieval.search import IndexSearch
from simplemem.processors.retrieval.select import Selection, select
from simplemem.processors.retrieval.threads import NO_THREADS, TenantThreads
from simplemem.processors.stores import batched
from simplemem.processors.stores.protocols import LexicalStore, VectorStore
from simplemem.schemas.events import Role
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.query import QueryFilters, QueryRequest, QueryResult

A = TypeVar("A")


@dataclass
class Retriever:
    config: RetrievalConfig
    lexical: LexicalStore
    vectors: VectorStore
    embedder: Embedder
    buffer: RecentTurnBuffer | None = None
    names: TenantNames | None = None  # a cache of the tenants' person names (services mode)
    fan_out: FanOut = field(default_factory=FanOut)  # independent store requests at once (services)
    sources: Sequence[CandidateSource] = ()  # candidate sources besides the indexes and the buffer
    # embedded mode: the question (and its aspects) embedded on it while the words are searched
    embed_pool: ThreadPoolExecutor | None = None
    spare_core: Callable[[], bool] = field(default_factory=SpareCore)  # whether to use it now
    threads: TenantThreads = field(init=False)  # each tenant's sessions by subject, kept a while

    def __post_init__(self) -> None:
        self.threads = TenantThreads(self.lexical, self.vectors)

    @property
    def search(self) -> IndexSearch:
        return IndexSearch(self.lexical, self.vectors, self.fan_out)

    @property
    def all_sources(self) -> list[CandidateSource]:
        """The recent-turn buffer (if any), then :attr:`sources`."""
        recent: list[CandidateSource] = [RecentTurns(self.buffer, self.lexical)] if self.buffer else []
        return [*recent, *self.sources]

    def query(
        self,
        request: QueryRequest,
        filters: QueryFilters | None = None,
        config: RetrievalConfig | None = None,
    ) -> QueryResult:
        """The memories and context for ``request``; ``filters`` narrow it further (the API's);
        ``config`` in place of the retriever's own for this query."""
        with self.lexical.one_query():  # its steps search the same words and read some units twice
            planned = self.plan(request, filters, config)
            texts = self.aspects(planned)
            # decided once: the question's vector, being embedded, would count as a thread at work
            spare = self.embed_pool is not None and self.spare_core()
            qvec = self.ahead(partial(self.vector, planned.search_text), spare)
            parts = self.ahead(partial(self.embedded, texts), spare) if texts else list
            if spare:  # the words are searched while the vectors are being embedded
                self.search_words(planned, texts)

            # the derived lines need nothing the statements' candidates do: searched at once (services);
            # embedded, one after the other, first the one that does not wait for the aspects' vectors:
            # the statements, unless they are searched by the aspects (:attr:`Plan.aspects`) and the
            # derived lines are not
            def statements() -> Selection:
                return self.select(planned, self.gather(planned, qvec, parts))

            def lines() -> list[tuple[MemoryUnit, float]]:
                return self.derived(planned, qvec(), parts)

            if planned.aspects and not self.reads_aspects(planned):
                derived, selection = self.fan_out.both(lines, statements)
            else:
                selection, derived = self.fan_out.both(statements, lines)
            return self.render(planned, selection, derived)

    @staticmethod
    def reads_aspects(planned: Plan) -> bool:
        """Whether the plan's derived lines are searched by the question's aspects too (a diverse
        level: :attr:`~.derived.Level.diverse`)."""
        return planned.derived is not None and any(level.diverse for level in planned.derived.levels)

    def ahead(self, call: Callable[[], A], spare: bool) -> Callable[[], A]:
        """``call`` started now: on :attr:`embed_pool` (embedded mode, more than one core, one of
        them ``spare``: :class:`~.cores.SpareCore`), on the fan-out's pool (services), else at the
        first wait for it."""
        if self.embed_pool is None or not spare:
            return self.fan_out.later(call)
        return self.embed_pool.submit(call).result

    def vector(self, text: str) -> np.ndarray:
        """The question's vector."""
        return self.embedder.encode([text])[0]

    def embedded(self, texts: list[str]) -> list[Aspect]:
        """Each of ``texts`` (a question's aspects) with its vector, embedded in one call."""
        return list(zip(texts, self.embedder.encode(texts), strict=True)) if texts else []

    def aspects(self, planned: Plan) -> list[str]:
        """The question's aspects a diverse level of its derived plan, or its statements
        (:attr:`Plan.aspects`), search one by one."""
        if not self.reads_aspects(planned):
            return list(planned.aspects)
        return aspects(planned.query)

    def plan(
        self,
        request: QueryRequest,
        filters: QueryFilters | None = None,
        config: RetrievalConfig | None = None,
    ) -> Plan:
        """Step 1: the question understood (see :mod:`.plan`)."""
        return plan(
            request, filters, config or self.config, lambda words: self.known_names(request.tenant_id, words)
        )

    def gather(
        self,
        planned: Plan,
        qvec: Callable[[], np.ndarray] | None = None,
        parts: Parts | None = None,
    ) -> Candidates:
        """Step 2: the ranked candidates of every source. The question is embedded while the BM25
        side already searches (services mode); so are its aspects (``parts``: each with its vector),
        when its statements are searched by them too and they are not given."""
        qvec = qvec or self.fan_out.later(partial(self.vector, planned.search_text))
        if parts is None and planned.aspects:
            parts = self.fan_out.later(partial(self.embedded, list(planned.aspects)))
        return Gatherer(self.search, self.all_sources, self.fan_out).gather(planned, qvec, parts)

    def derived(
        self,
        planned: Plan,
        qvec: np.ndarray,
        parts: Sequence[Aspect] | Callable[[], Sequence[Aspect]] | None = None,
    ) -> list[tuple[MemoryUnit, float]]:
        """Step 2, coarse level: the derived lines the question's form reads (:mod:`.derived`),
        searched as a whole and, for a question that enumerates, by each of its aspects (``parts``:
        each with its vector, embedded here if not given; or what gives them, asked once the
        question's own searches are done)."""
        if planned.derived is None:
            return []
        if parts is None:
            parts = self.embedded(self.aspects(planned))
        search = self.searches(planned, qvec, parts)
        # the question, its aspects and each level's kinds of line search the same words
        with self.lexical.one_query():
            return gather_derived(search, planned.derived, first_person=planned.asked == Role.USER)

    def searches(
        self,
        planned: Plan,
        qvec: np.ndarray,
        parts: Sequence[Aspect] | Callable[[], Sequence[Aspect]],
    ) -> Searches:
        """Where the plan's derived lines are searched, with the question's vector and its aspects
        (or what gives them)."""
        assert planned.derived is not None
        return Searches(
            self.lexical,
            self.vectors,
            planned.tenant,
            planned.as_of,
            self.config.store_expression_terms,
            planned.query,
            qvec,
            parts if callable(parts) else tuple(parts),
            self.threads.of(planned.tenant)
            if reads_one_subject(planned.query, planned.derived)
            else NO_THREADS,
        )

    def search_words(self, planned: Plan, aspects: list[str]) -> None:
        """Every BM25 search the query's steps make (of its statements, by the question whole and by
        each of its :attr:`~.plan.Plan.aspects`; of its derived lines), made now, within the lexical
        store's ``one_query``, which answers them again from what they found: an embedded query makes
        them while its vectors are being embedded on the spare core, instead of waiting for them."""
        for searched in (planned, *(replace(planned, search_text=text) for text in planned.aspects)):
            self.search.words(searched, searched.within)
        if planned.derived is not None:
            words_only = self.searches(planned, np.empty(0, dtype=np.float32), ())
            derived_words(words_only, planned.derived, planned.asked == Role.USER, aspects)

    def select(self, planned: Plan, found: Candidates) -> Selection:
        """Step 3: the memories chosen from the candidates (see :mod:`.select`)."""
        return select(self.lexical, planned, found)

    def render(
        self, planned: Plan, selection: Selection, derived: list[tuple[MemoryUnit, float]] | None = None
    ) -> QueryResult:
        """Step 4: what fits the budget, and the context (see :mod:`.render`)."""
        return render(planned, selection, derived or [])

    def known_names(self, tenant: str, words: list[str]) -> list[str]:
        """The person names among ``words`` (or that they abbreviate) in the tenant's memory."""
        if self.names is not None:
            return self.names.known(tenant, words)
        return batched.known_names(self.lexical, tenant, words, self.config.store_expression_terms)
