"""bench.locomo_ceiling's oracle: what it promotes, and that it reaches the retriever's selection."""

from __future__ import annotations

from bench.locomo_ceiling import Oracle, promote
from simplemem.processors.retrieval.retriever import Boosts, Retriever
from simplemem.schemas.settings import Settings
from tests.test_ranking import Units, unit


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
    retriever = Retriever(Settings(), Units(units), None, None)  # type: ignore[arg-type]
    oracle = Oracle(retriever)
    oracle.wanted, oracle.factor = {"gold"}, 4.0
    chosen = retriever._select("t", ranked, 2, boosts=Boosts(event=0.2))
    assert [u.id for u, _ in chosen] == ["gold", "dated"]
    oracle.factor = 0.0  # off: the retriever's own selection
    chosen = retriever._select("t", ranked, 2, boosts=Boosts(event=0.2))
    assert [u.id for u, _ in chosen] == ["dated", "u0"]
