"""bench.locomo_ceiling's oracle: what it promotes, and that it reaches the retriever's selection."""

from __future__ import annotations

from bench.locomo_ceiling import answers, promote
from simplemem.processors.retrieval.gather import Candidates
from simplemem.processors.retrieval.plan import Plan
from simplemem.processors.retrieval.render import render
from simplemem.processors.retrieval.select import Selection, select
from simplemem.schemas.query import QueryResult
from tests.test_ranking import Units, planned, unit


def test_gold_within_the_depth_goes_to_the_top_in_its_order() -> None:
    ranked = [("a", 0.9), ("gold1", 0.8), ("b", 0.7), ("gold2", 0.6), ("gold3", 0.5)]
    promoted = promote(ranked, {"gold1", "gold2", "gold3"}, depth=4)
    assert [uid for uid, _ in promoted] == ["gold1", "gold2", "a", "b", "gold3"]
    assert dict(promoted)["a"] == 0.9 and dict(promoted)["gold3"] == 0.5  # the rest keep their scores


def test_gold_below_the_depth_is_left_where_it_is() -> None:
    ranked = [("a", 0.9), ("b", 0.8), ("gold", 0.7)]
    assert promote(ranked, {"gold"}, depth=2) == ranked


def test_the_oracle_wins_over_the_selection_boosts() -> None:
    """A dated memory lifted by the event-time boost still comes after the promoted gold one."""
    units = [unit(f"u{i}", text=f"a different statement number {i} about topic {i}") for i in range(5)]
    units.append(unit("dated", "2026-02-28", text="the boat trip happened on the last day of February"))
    units.append(unit("gold", text="the answer to the question, ranked low"))
    ranked = [(u.id, 1.0 - i * 0.01) for i, u in enumerate(units)]
    question = planned("When was the boat trip?", k_min=2, k_max=2, sibling_units=0, event_time_boost=0.2)
    retriever = Gathered(Units(units), Candidates(ranked))
    gold, own = answers(retriever, question, {"gold"}, [4.0, 0.0])  # type: ignore[arg-type]
    assert [m.id for m in gold.memories] == ["gold", "dated"]
    assert [m.id for m in own.memories] == ["dated", "u0"]  # depth 0: the retriever's own selection


class Gathered:
    """The retriever's steps around a plan and a ranking given in advance (no index, no model)."""

    def __init__(self, lexical: Units, found: Candidates) -> None:
        self.lexical, self.found = lexical, found

    def plan(self, request: Plan) -> Plan:
        return request

    def gather(self, planned: Plan) -> Candidates:
        return self.found

    def select(self, planned: Plan, found: Candidates) -> Selection:
        return select(self.lexical, planned, found)  # type: ignore[arg-type]

    def render(self, planned: Plan, selection: Selection) -> QueryResult:
        return render(planned, selection)
