"""The question rules (simplemem/processors/retrieval/question.py) on phrasings written for these
tests, with the limits each rule's comment states."""

from __future__ import annotations

import pytest

from simplemem.processors.retrieval.config import ComplexityWeights, Saturation
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
from simplemem.schemas.events import Role


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("How many pottery classes have I signed up for?", QuestionKind.GATHER),
        ("What's the number of plants on my balcony?", QuestionKind.GATHER),
        ("Which came earlier, the move or the wedding?", QuestionKind.GATHER),
        ("Please list the recipes we went through", QuestionKind.GATHER),
        ("How much did I spend on bike parts in total?", QuestionKind.GATHER),
        ("Which board games does Priya own?", QuestionKind.SPREAD),
        ("What languages has Omar studied?", QuestionKind.SPREAD),
        ("Could you recommend a podcast for my commute?", QuestionKind.SPREAD),
        ("Any suggestions for a rainy Sunday?", QuestionKind.SPREAD),
        ("Where does my brother work?", QuestionKind.LOOKUP),
        ("What was my first car?", QuestionKind.LOOKUP),  # an ordinal, no "or": not an order
        ("Where is the milk on the shopping list?", QuestionKind.LOOKUP),  # "list" as a noun
    ],
)
def test_the_kind_of_a_question(query: str, kind: QuestionKind) -> None:
    assert question_kind(query) == kind


@pytest.mark.parametrize(
    "query",
    [
        "What's the tally of my runs this month?",  # counts without the cue words: a lookup
        "Name the films Omar watched",  # a list asked without an auxiliary
        "I need a gift idea for Priya",  # advice without its forms
        "Which concert did I attend earlier?",  # the order word more than two words after "which"
    ],
)
def test_the_stated_limits_of_the_kind_rules(query: str) -> None:
    assert question_kind(query) == QuestionKind.LOOKUP


def test_a_cue_word_used_for_one_thing_still_gathers() -> None:
    """The stated limit of GATHER_CUES: "all the way" reads as gathering."""
    assert question_kind("Did I drive all the way to Lyon?") == QuestionKind.GATHER


@pytest.mark.parametrize(
    ("query", "temporal"),
    [
        ("When did Omar start at the bakery?", True),
        ("How long ago was the wedding?", True),
        ("Which year did I move?", True),
        ("What colour is my bike?", False),
        ("Who baked the cake?", False),
    ],
)
def test_questions_about_time(query: str, temporal: bool) -> None:
    assert is_temporal(query) == temporal


def test_past_tense_cues() -> None:
    assert is_past("We went hiking on Saturday")
    assert not is_past("We go hiking on Saturday")


@pytest.mark.parametrize(
    ("query", "role"),
    [
        ("Where did I leave my passport?", Role.USER),
        ("What did you suggest for the sauce?", Role.ASSISTANT),
        ("Remind me of that stretching routine", Role.ASSISTANT),
        ("We talked about budgeting apps, which one was free?", Role.ASSISTANT),
        ("Where does Priya live?", None),
        ("What was that hotel?", None),  # no person at all
    ],
)
def test_whose_statements_a_question_is_about(query: str, role: Role | None) -> None:
    assert asked_role(query) == role


def test_list_places_named_by_a_question() -> None:
    assert asked_places("What was the fourth book you listed?") == frozenset({"4"})
    assert asked_places("And your 2nd pick?") == frozenset({"2"})
    assert asked_places("Tell me number 5 again") == frozenset({"5"})
    assert asked_places("What was that last tip?") == frozenset({"last"})
    assert asked_places("What was my second choice?") == frozenset()  # "my": the stated limit


def test_name_candidates_are_capitalised_runs_and_their_words() -> None:
    """Stop words leave a run ("Did"); a sentence's first word is a candidate otherwise (the
    tenant's known names decide later)."""
    assert name_candidates("Maybe Omar knows?") == ["Maybe Omar", "Maybe", "Omar"]
    assert name_candidates("Did Ana Lima's band play in Porto?") == ["Ana Lima", "Ana", "Lima", "Porto"]
    assert name_candidates("what did ana say?") == []  # lower case: not a candidate


def test_names_are_blanked_with_their_possessive() -> None:
    assert without_words("What is Ana's dog called, Ana?", ["Ana"]).split() == [
        "What",
        "is",
        "dog",
        "called,",
        "?",
    ]
    assert without_words("unchanged", []) == "unchanged"


def test_complexity_grows_with_length_names_and_cues_and_saturates() -> None:
    short = complexity("Where is my bike?", 0)
    named = complexity("Where is my bike?", 1)
    assert 0 < short < named
    assert complexity("When and why did we all compare every plan together since last year " * 3, 3) == 1.0
    only_length = ComplexityWeights(
        length=Saturation(weight=1.0, at=4.0),
        entities=Saturation(weight=0.0, at=1.0),
        temporal=Saturation(weight=0.0, at=1.0),
        aggregation=Saturation(weight=0.0, at=1.0),
    )
    assert complexity("one two", 5, only_length) == 0.5


def test_k_follows_the_square_root_of_complexity() -> None:
    assert k_for(0.0, 3, 20) == 3
    assert k_for(1.0, 3, 20) == 20
    assert k_for(0.25, 3, 20) == 3 + 9  # sqrt(0.25) * 17 = 8.5, rounded up
