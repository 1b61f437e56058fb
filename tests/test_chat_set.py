"""The chat set (bench/data/chat): its files are valid input, its grader reads dates as dates, and the
embedded pipeline finds what it should and leaks nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.chat_data import DEFAULT_DIR, load_chat_set
from bench.metrics import contains
from simplemem.schemas.events import parse_event
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.settings import Settings

# Measured on 2026-11-30 (main at 0ccc04c), minus a small margin: a change that loses recall on this
# set fails here. Raise them as the pipeline improves (the target is 0.95 found).
FOUND_FLOOR = 0.90  # measured 128/139 = 0.921
ATTRIBUTED_FLOOR = 0.58  # measured 8/12 = 0.667; one question less is 0.583
ISO_DATE = re.compile(r"\d{4}-\d{2}(?:-\d{2})?")


def test_every_event_is_a_valid_chat_event() -> None:
    s = Settings()
    tenants = []
    for conv in load_chat_set():
        events = [
            parse_event(e, max_text_chars=s.max_text_chars, max_id_chars=s.max_id_chars) for e in conv.events
        ]
        assert {e.tenant_id for e in events} == {conv.tenant_id}, conv.name
        ids = [e.message_id for e in events]
        assert len(ids) == len(set(ids)), conv.name  # a repeated id would be read as an edit
        tenants.append(conv.tenant_id)
    assert len(tenants) == len(set(tenants))


def test_every_question_is_a_query_request_asked_after_the_history() -> None:
    for conv in load_chat_set():
        last = max(parse_event(e, max_text_chars=10**6, max_id_chars=256).ts for e in conv.events)
        ids = []
        for q in conv.queries:
            request = QueryRequest.model_validate(q)
            assert request.tenant_id == conv.tenant_id and request.as_of and request.as_of > last, q["id"]
            assert q.get("expected") or q.get("absent"), q["id"]
            ids.append(request.id)
        assert len(ids) == len(set(ids)), conv.name


def test_absent_strings_are_in_the_history_and_expected_from_none() -> None:
    """An absent string the history never says would make its leak check pass for nothing."""
    for conv in load_chat_set():
        history = "\n".join(e["text"] for e in conv.events)
        assert [a for a in conv.absent if a not in history] == [], conv.name
        expected = [e for q in conv.queries for e in q.get("expected", [])]
        assert [e for e in expected if any(a.lower() in e.lower() for a in conv.absent)] == [], conv.name


def test_expected_words_are_said_in_the_history() -> None:
    """Apart from dates (which the memory may have to work out), an answer is in what was said."""
    for conv in load_chat_set():
        history = "\n".join(e["text"] for e in conv.events)
        words = [e for q in conv.queries for e in q.get("expected", []) + q.get("together", [])]
        words = [w for w in words if not ISO_DATE.fullmatch(w)]
        assert [w for w in words if not contains(history, w)] == [], conv.name


def test_an_unknown_conversation_is_named() -> None:
    with pytest.raises(ValueError, match="no conversation nope"):
        load_chat_set(DEFAULT_DIR, ["nope"])


@pytest.mark.parametrize(
    ("context", "expected", "found"),
    [
        ("[2026-05-06]\nthe launch is on May 12th", "2026-05-12", True),
        ("[2026-05-06]\nthe launch is on 12 May", "2026-05-12", True),
        ("[2026-05-12]\nthe launch is soon", "2026-05-12", False),  # a header is when it was said
        ("[2026-05-06]\nno coffee until July (2026-07)", "2026-07", True),
        ("[2026-05-06]\nno coffee until July 2026", "2026-07", True),
        ("[2026-07-06]\nno coffee until July (2025-07)", "2026-07", False),
        ("[2026-03-23]\nthe launch moves to May 12 (2025-05-12)", "2026-05-12", False),
        ("[2026-03-23]\nthe launch moves to May 12 (2026-05-12)", "2026-05-12", True),
        ("[2026-07-06]\nsomething on 2026-07-14", "2026-07", False),
        ("the budget is now 1,100", "1100", True),
        ("Rosa Delgado runs the platform group", "rosa delgado", True),
        ("Rosa runs the platform group", "rosa delgado", False),
        ("I'm aiming for an A now", "an A", True),
        ("ask an assistant", "an A", False),  # whole words
        ("a wool flatweave in 160x230", "160", True),
        ("a budget of 1160", "160", False),
        ("the Hendersons pick up", "Henderson", False),
        ("query.offset((page - 1) * per_page)", "(page - 1) * per_page", True),
    ],
)
def test_expected_strings_are_matched_as_written_or_as_dates(
    context: str, expected: str, found: bool
) -> None:
    assert contains(context, expected) is found


@pytest.mark.slow
def test_the_chat_set_is_answered_without_leaks(settings: Settings, tmp_path: Path) -> None:
    """Every conversation through the embedded pipeline, as `python -m bench.chat` runs it: no absent
    string in any answer or store file, and at least FOUND_FLOOR of the expected strings found (measured
    on 2026-11-30: 128 of 139, 92.1%, 0 leaks; 8 of 12 pronoun facts attributed; mean context 342
    tokens against 2,149 of history; bench/data/chat/FINDINGS.md lists the misses)."""
    from bench.chat import attributed_share, found_share, run

    results = run(settings.model_copy(update={"mode": "embedded"}), tmp_path / "store", load_chat_set())
    leaks = [(q.id, a) for r in results for q in r.questions for a in q.leaked]
    leaks += [(r.name, f"{a} in {path}") for r in results for a, path in r.store_leaks]
    assert leaks == []
    misses = [(q.id, q.missing) for r in results for q in r.questions if q.missing]
    assert found_share(results) >= FOUND_FLOOR, misses
    unattributed = [(q.id, q.together) for r in results for q in r.questions if q.attributed is False]
    assert attributed_share(results) >= ATTRIBUTED_FLOOR, unattributed
