"""The query words every lexical search and term overlap share (processors/language/text.py)."""

from __future__ import annotations

from simplemem.processors.language import text
from simplemem.processors.language.text import REMEMBERED_CHARS, query_terms


def test_the_words_are_distinct_in_order_without_stopwords_or_possessives() -> None:
    assert query_terms("What is Riley's allergy? Riley's ALLERGY to shellfish -- and 'nuts'") == [
        "riley",
        "allergy",
        "shellfish",
        "nuts",
    ]


def test_a_texts_words_are_remembered_and_each_caller_gets_its_own_list() -> None:
    first = query_terms("the kayak trip moved to June")
    first.append("changed")  # a caller's list is its own
    hits = text._remembered.cache_info().hits
    assert query_terms("the kayak trip moved to June") == ["kayak", "trip", "moved", "june"]
    assert text._remembered.cache_info().hits == hits + 1


def test_a_whole_message_is_split_each_time_not_kept() -> None:
    long = "shellfish allergy noted " * (REMEMBERED_CHARS // 10)
    kept = text._remembered.cache_info().currsize
    assert query_terms(long) == ["shellfish", "allergy", "noted"]
    assert text._remembered.cache_info().currsize == kept
