"""Step 1, plan: what a question asks and how widely to look (kind, names, dates, k, filters).

Pure: the only outside knowledge is which capitalised words name persons the tenant's memory knows,
asked through ``known_names``. Everything later steps need is in the :class:`Plan`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime

from simplemem.processors.language.temporal import find_anchors
from simplemem.processors.retrieval.boosts import Boosts
from simplemem.processors.retrieval.config import RetrievalConfig
from simplemem.processors.retrieval.derived import PLANS, DerivedPlan
from simplemem.processors.retrieval.forms import aspects, question_form
from simplemem.processors.retrieval.question import (
    QuestionKind,
    asked_places,
    asked_role,
    complexity,
    is_past,
    is_temporal,
    k_for,
    name_candidates,
    question_kind,
    without_words,
)
from simplemem.processors.stores.protocols import SymbolicFilter
from simplemem.schemas.events import Role
from simplemem.schemas.query import QueryFilters, QueryRequest


@dataclass(frozen=True)
class Plan:
    """A question understood: what to search, how many memories to choose, how to show them."""

    request: QueryRequest
    filters: QueryFilters
    config: RetrievalConfig
    as_of: datetime
    names: tuple[str, ...]  # lower-cased persons the tenant knows that the question (or filter) names
    named: tuple[str, ...]  # the question's words that name them
    complexity: float
    kind: QuestionKind
    k: int
    temporal: bool  # a question about time: memories with an event time are favoured
    asked: Role | None  # whose statements the question is about
    within: SymbolicFilter  # the search's filter, with the question's dates if any
    anyday: SymbolicFilter | None  # the same without the question's dates (None: it named none)
    explicit_range: bool  # the API's since/until: they always restrict
    pool: int  # candidates read from each index
    search_text: str  # the question without the names the filter already holds
    derived: DerivedPlan | None = None  # the derived lines the question reads first (None: none)
    # the aspects of a question that enumerates several things, each of which its statements are
    # searched by too (:func:`statement_aspects`); () for one searched whole only
    aspects: tuple[str, ...] = ()

    @property
    def tenant(self) -> str:
        return self.request.tenant_id

    @property
    def query(self) -> str:
        return self.request.query

    @property
    def gathers(self) -> bool:
        return self.kind == QuestionKind.GATHER

    @property
    def weight(self) -> float:
        """The semantic share of the fused score: ``first_person_semantic_weight`` for a question about
        the user's own life (it rewords what they said), else ``semantic_weight``."""
        return fusion_weight(self.asked, self.config)

    @property
    def per_message(self) -> int:
        c = self.config
        return c.gather_units_per_message if self.gathers else c.units_per_message

    @property
    def unit_tokens(self) -> int:
        """The cap of one memory in the context: half for a gathering question (many short mentions)."""
        return self.config.context_unit_tokens // 2 if self.gathers else self.config.context_unit_tokens

    def boosts(self) -> Boosts:
        c = self.config
        return Boosts(
            event=c.event_time_boost if self.temporal else 0.0,
            speakers=frozenset(self.names),
            speaker=c.speaker_boost,
            asked=self.asked,
            role=c.role_boost,
            places=asked_places(self.query) if self.asked == Role.ASSISTANT else frozenset(),
            place=c.place_boost,
        )


def fusion_weight(asked: Role | None, config: RetrievalConfig) -> float:
    """See :attr:`Plan.weight`."""
    return config.first_person_semantic_weight if asked == Role.USER else config.semantic_weight


def plan(
    request: QueryRequest,
    filters: QueryFilters | None,
    config: RetrievalConfig,
    known_names: Callable[[list[str]], list[str]],
) -> Plan:
    """The plan of ``request`` narrowed by ``filters`` (the API's); ``known_names`` picks, of the
    question's capitalised words, the person names the tenant's memory knows."""
    filters = filters or QueryFilters()
    if request.include_archived:  # the CLI's flag; the API passes it in the filters
        filters = filters.model_copy(update={"include_archived": True})
    query = request.query
    as_of = request.as_of or datetime.now(UTC)
    candidates = name_candidates(query)
    names = sorted({*known_names(candidates), *(p.lower() for p in filters.persons if p.strip())})
    named = [c for c in candidates if " " not in c and any(n.startswith(c.lower()) for n in names)]
    score = complexity(query, len(named), config.complexity)
    kind = question_kind(query)
    k = k_of(kind, score, filters, config)
    if filters.k and kind == QuestionKind.GATHER:
        kind = QuestionKind.LOOKUP  # an explicit k: its memories are shown as a lookup's
    first_day, last_day, explicit = days_asked(query, as_of, filters, config)
    within = SymbolicFilter(
        names=tuple(names),
        first_day=first_day,
        last_day=last_day,
        stated_before=as_of,
        active_only=not filters.include_archived,
        # a date in the question may be when it was said ("what did I tell you last week"); the
        # API's since/until are event time only
        or_stated=not explicit,
    )
    anyday = (
        replace(within, first_day=None, last_day=None) if first_day is not None and not explicit else None
    )
    # the API's kinds or dates narrow to the statements they name
    derived = None if filters.kinds or explicit else PLANS.get(question_form(query))
    return Plan(
        request=request,
        filters=filters,
        config=config,
        as_of=as_of,
        names=tuple(names),
        named=tuple(named),
        complexity=score,
        kind=kind,
        k=k,
        temporal=is_temporal(query),
        asked=asked_role(query),
        within=within,
        anyday=anyday,
        explicit_range=explicit,
        # with a person filter part of the semantic pool is filtered out afterwards: fetch more
        pool=max(config.candidate_pool, k * 3) * (2 if names else 1),
        # a memory's vector comes from its sentence as said, without the speaker's name, and the
        # filter already holds the names: the question is searched without them too
        search_text=without_words(query, named),
        derived=derived,
        aspects=statement_aspects(query, derived, config),
    )


def statement_aspects(query: str, derived: DerivedPlan | None, config: RetrievalConfig) -> tuple[str, ...]:
    """The aspects its statements are searched by too: those of a question that enumerates at least
    ``statement_aspects`` things ("Considering my cover letter deadlines, the call with the director
    and my interview scores, how should I ..."), whose answer draws on each. Searched whole, such a
    question ranks the statements of its most-worded aspect first, and the others' are below the
    budget. Not for an order or a summary: its timeline reads each aspect, its statements only fill
    what the timeline leaves. Limits: the aspects are the parts between commas and "and"
    (:func:`~.forms.aspects`): a list of single words is one aspect, a long question that merely
    has commas gets searches it does not need."""
    if derived is not None and any(level.whole_sessions for level in derived.levels):
        return ()
    parts = aspects(query)
    return tuple(parts) if len(parts) >= config.statement_aspects else ()


def k_of(kind: QuestionKind, score: float, filters: QueryFilters, config: RetrievalConfig) -> int:
    """The API's k (at most ``k_max``); ``k_max`` for an answer spread over sessions; else by complexity."""
    if filters.k:
        return min(filters.k, config.k_max)
    if kind != QuestionKind.LOOKUP:
        return config.k_max
    return k_for(score, config.k_min, config.k_max)


def days_asked(
    query: str, as_of: datetime, filters: QueryFilters, config: RetrievalConfig
) -> tuple[date | None, date | None, bool]:
    """The first and last day the question's dates span (or the API's since/until), and whether the
    range is the API's (explicit: it restricts, by event time only)."""
    anchors = find_anchors(query, as_of, past=is_past(query), loose=True)
    first_day = min((a.first_day for a in anchors), default=None)
    last_day = max((a.last_day for a in anchors), default=None)
    explicit = filters.since is not None or filters.until is not None
    if explicit:
        first_day = filters.since or date(config.earliest_year, 1, 1)
        last_day = filters.until or date.max
    return first_day, last_day, explicit
