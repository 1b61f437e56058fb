"""The retrieval steps one by one, without a model: the config, the plan, gathering (with a source
plugged in beside the indexes) and the recent-turn source's filters."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from simplemem.processors.retrieval.config import PRESETS, RetrievalConfig
from simplemem.processors.retrieval.fanout import FanOut
from simplemem.processors.retrieval.gather import Candidates, Gatherer, Scored
from simplemem.processors.retrieval.plan import Plan, plan
from simplemem.processors.retrieval.question import QuestionKind
from simplemem.processors.retrieval.recent import RecentTurns
from simplemem.processors.retrieval.search import IndexSearch, with_aspect
from simplemem.schemas.events import Role
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.query import QueryFilters, QueryRequest
from simplemem.schemas.settings import Settings
from simplemem.schemas.window import BufferedTurn

AS_OF = datetime(2026, 3, 10, 12, tzinfo=UTC)


def planned(
    query: str, filters: QueryFilters | None = None, known: tuple[str, ...] = (), **config: Any
) -> Plan:
    request = QueryRequest(tenant_id="t", query=query, as_of=AS_OF)
    return plan(
        request,
        filters,
        RetrievalConfig().with_(**config),
        lambda words: [n for n in known if n.title() in words],
    )


def test_the_config_is_validated_and_takes_the_deployments_values() -> None:
    with pytest.raises(ValidationError):
        RetrievalConfig(k_min=5, k_max=4)
    with pytest.raises(ValidationError):
        RetrievalConfig().with_(k_min=30)  # above the default k_max
    with pytest.raises(ValidationError):
        RetrievalConfig().with_(no_such_knob=1)
    deployed = RetrievalConfig.from_settings(Settings(context_tokens=300, store_expression_terms=10))
    assert (deployed.context_tokens, deployed.store_expression_terms, deployed.k_max) == (300, 10, 20)
    assert PRESETS["strict-dates"].date_boost == 0 and PRESETS["default"] == RetrievalConfig()


def test_the_kind_of_question_decides_k_and_how_memories_are_shown() -> None:
    lookup = planned("Where does my brother work?")
    assert lookup.kind == QuestionKind.LOOKUP and 3 <= lookup.k < 20
    assert not lookup.gathers and lookup.per_message == 3 and lookup.unit_tokens == 120
    spread = planned("Which board games does Priya own?")
    assert spread.kind == QuestionKind.SPREAD and spread.k == 20 and spread.unit_tokens == 120
    gathering = planned("How many board games do I own?")
    assert gathering.gathers and gathering.k == 20
    assert gathering.per_message == 2 and gathering.unit_tokens == 60
    forced = planned("How many board games do I own?", QueryFilters(k=50))
    assert forced.k == 20 and forced.kind == QuestionKind.LOOKUP  # an explicit k, capped; shown whole


def test_known_names_widen_the_pool_and_leave_the_searched_text() -> None:
    plain = planned("What did Priya bake?")
    named = planned("What did Priya bake?", known=("priya",))  # the store's names are lower-cased
    assert plain.names == () and named.names == ("priya",)
    assert named.pool == 2 * plain.pool
    assert "Priya" not in named.search_text and "Priya" in plain.search_text
    assert named.within.names == ("priya",)
    assert named.boosts().speakers == frozenset({"priya"})


def test_a_question_date_gives_a_filter_and_its_fallback_an_api_range_only_a_filter() -> None:
    dated = planned("What did I cook on 2 March 2026?")
    assert dated.within.first_day == date(2026, 3, 2) and dated.within.or_stated
    assert dated.anyday is not None and dated.anyday.first_day is None
    undated = planned("What did I cook?")
    assert undated.within.first_day is None and undated.anyday is None
    ranged = planned("What did I cook on 2 March 2026?", QueryFilters(since=date(2026, 1, 1)))
    assert ranged.explicit_range and ranged.anyday is None and not ranged.within.or_stated
    assert (ranged.within.first_day, ranged.within.last_day) == (date(2026, 1, 1), date.max)


def test_the_boosts_follow_the_question() -> None:
    assert planned("When did I buy the kayak?").boosts().event == 0.2
    assert planned("What kayak did I buy?").boosts().event == 0.0
    recall = planned("Remind me of the third hotel you suggested")
    assert recall.asked == Role.ASSISTANT and recall.boosts().places == frozenset({"3"})
    assert planned("What was the third hotel I booked?").boosts().places == frozenset()  # the user's
    assert planned("Where did I park?").weight == 0.8 and planned("Where did Omar park?").weight == 0.5


def memory(uid: str, text: str = "a memory", session: str = "s") -> MemoryUnit:
    return MemoryUnit(
        id=uid,
        tenant_id="t",
        text=text,
        kind=MemoryKind.FACT,
        source_ids=[f"m-{uid}"],
        stated_at=AS_OF.isoformat(),
        session_id=session,
    )


class FixedIndexes(IndexSearch):
    """The indexes' answer given in advance."""

    def __init__(self, ranked: list[tuple[str, float]], best_cosine: float) -> None:
        super().__init__(None, None, FanOut())  # type: ignore[arg-type]
        self.answer = (ranked, best_cosine)

    def ranking(
        self, plan: Plan, qvec: Any, fetched: dict[str, MemoryUnit]
    ) -> tuple[list[tuple[str, float]], float]:
        fetched["a"] = memory("a")
        return self.answer


class Profile:
    """A source plugged in beside the indexes: one standing memory, scored against their best."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def fetch(self, plan: Plan) -> str:
        return f"profile of {plan.tenant}"

    def score(self, plan: Plan, fetched: str, qvec: np.ndarray, indexed: Candidates) -> Scored:
        self.seen.append((fetched, indexed.best_cosine, list(qvec)))
        return {"profile:t": (memory("profile:t", fetched), 0.85)}


def test_a_plugged_in_source_ranks_among_the_index_candidates() -> None:
    profile = Profile()
    gatherer = Gatherer(FixedIndexes([("a", 0.9), ("b", 0.8)], 0.6), [profile], FanOut())
    found = gatherer.gather(planned("Where do I live?"), lambda: np.ones(2, dtype=np.float32))
    assert found.ranked == [("a", 0.9), ("profile:t", 0.85), ("b", 0.8)]
    assert set(found.units) == {"a", "profile:t"} and found.best_cosine == 0.6
    assert profile.seen == [("profile of t", 0.6, [1.0, 1.0])]
    alone = Gatherer(FixedIndexes([("a", 0.9)], 0.6), [], FanOut()).gather(
        planned("Where?"), lambda: np.ones(2)
    )
    assert alone.ranked == [("a", 0.9)]


ENUMERATING = (
    "Considering my cover letter deadlines, the Zoom call with the creative director, and my interview "
    "clarity scores, how should I prioritize my preparation?"
)


def test_a_question_that_enumerates_three_things_has_its_statements_searched_by_each() -> None:
    assert planned(ENUMERATING).aspects == (
        "Considering my cover letter deadlines",
        "the Zoom call with the creative director",
        "my interview clarity scores",
        "how should I prioritize my preparation?",
    )
    # two parts are more often one subject split at "and"
    assert planned("How many days passed between my trip to Rome and my sister's wedding?").aspects == ()
    assert planned(ENUMERATING, statement_aspects=5).aspects == ()
    # an order's or a summary's timeline reads each aspect; its statements only fill what it leaves
    summary = "Summarize my cover letter deadlines, the Zoom call with the director, and my interview scores"
    assert planned(summary).derived is not None and planned(summary).aspects == ()


def test_an_aspects_best_match_ranks_at_its_share_beside_the_whole_questions() -> None:
    whole = [("a", 1.0), ("b", 0.7)]
    assert with_aspect(whole, [("c", 1.0), ("b", 0.5)], 0.8) == [("a", 1.0), ("c", 0.8), ("b", 0.7)]
    assert with_aspect(whole, [("b", 1.0)], 1.0) == [("a", 1.0), ("b", 1.0)]  # ties by id


class ByText(IndexSearch):
    """Indexes whose answer depends on the text searched (the question whole, or one aspect)."""

    def __init__(self, answers: dict[str, list[tuple[str, float]]]) -> None:
        super().__init__(None, None, FanOut())  # type: ignore[arg-type]
        self.answers = answers
        self.searched: list[tuple[str, list[float]]] = []

    def ranking(
        self, plan: Plan, qvec: Any, fetched: dict[str, MemoryUnit]
    ) -> tuple[list[tuple[str, float]], float]:
        self.searched.append((plan.search_text, list(qvec())))
        return self.answers.get(plan.search_text, []), 0.6


def test_gathering_searches_the_indexes_by_each_aspect_of_the_plan() -> None:
    question = planned(ENUMERATING)
    aspect = question.aspects[1]
    indexes = ByText({question.search_text: [("a", 1.0), ("b", 0.9)], aspect: [("call", 1.0)]})
    parts = [(text, np.full(2, i, dtype=np.float32)) for i, text in enumerate(question.aspects)]
    found = Gatherer(indexes, [], FanOut()).gather(question, lambda: np.ones(2), lambda: parts)
    assert found.ranked == [("a", 1.0), ("b", 0.9), ("call", 0.8)] and found.best_cosine == 0.6
    assert indexes.searched[0] == (question.search_text, [1.0, 1.0])
    assert indexes.searched[2] == (aspect, [1.0, 1.0])  # each aspect with its own vector
    assert [text for text, _ in indexes.searched[1:]] == list(question.aspects)
    # a question of one subject is searched whole, whatever vectors are at hand
    lookup = planned("Where does my brother work?")
    indexes.searched.clear()
    Gatherer(indexes, [], FanOut()).gather(lookup, lambda: np.ones(2), lambda: parts)
    assert [text for text, _ in indexes.searched] == [lookup.search_text]


class OneTurn:
    """A buffer holding one recent turn, and a store that indexed none of it."""

    def __init__(self, turn: BufferedTurn) -> None:
        self.turn = turn

    def recent(self, tenant_id: str) -> list[BufferedTurn]:
        return [self.turn]

    def sources_with_units(self, tenant_id: str, ids: list[str]) -> set[str]:
        return set()


def test_a_recent_turn_is_a_candidate_unless_the_filters_exclude_it() -> None:
    vector = [1.0, 0.0]
    turn = BufferedTurn(
        tenant_id="t",
        session_id="s",
        message_id="m9",
        speaker="user",
        role=Role.USER,
        text="I parked on level 3 yesterday",
        ts=AS_OF,
        vector=vector,
    )
    source = RecentTurns(OneTurn(turn), OneTurn(turn))  # type: ignore[arg-type]
    qvec = np.asarray(vector, dtype=np.float32)

    def hits(filters: QueryFilters | None = None) -> Scored:
        question = planned("Where did I park?", filters)
        return source.score(question, source.fetch(question), qvec, Candidates([], {}, 0.5))

    found = hits()
    assert list(found) == ["buffer:m9"]
    unit, score = found["buffer:m9"]
    assert "2026-03-09" in unit.text  # dated like a memory
    assert score == pytest.approx(0.8)  # its cosine is the best: the full semantic share
    assert hits(QueryFilters(sessions=["other"])) == {}
    assert hits(QueryFilters(kinds=[MemoryKind.CODE])) == {}
    assert hits(QueryFilters(since=date(2026, 1, 1))) == {}
    assert list(hits(QueryFilters(sessions=["s"]))) == ["buffer:m9"]
    question = planned("Where did I park?")
    late = source.fetch(
        plan(
            question.request.model_copy(update={"as_of": datetime(2026, 3, 1, tzinfo=UTC)}),
            None,
            question.config,
            lambda w: [],
        )
    )
    assert late == []  # said after the question's as_of
