"""Golden-query check (the project's golden set, simplemem/cli/data/golden.json): expected strings in the context, PII nowhere, code verbatim."""

from __future__ import annotations

import calendar
import re
from datetime import date
from pathlib import Path

import orjson
import pytest

from simplemem.schemas.query import QueryRequest
from tests.helpers import store_bytes

pytestmark = pytest.mark.slow


def date_spellings(iso_day: str) -> re.Pattern[str]:
    """The ways a context may write a day ("2026-01-11", "January 11", "Jan 11th", "11 January
    2026"). Written here, not taken from simplemem.processors.language.temporal: the grader is not the code it grades."""
    day = date.fromisoformat(iso_day)
    months = f"(?:{calendar.month_name[day.month]}|{calendar.month_abbr[day.month]}\\.?)"
    d = f"0?{day.day}(?:st|nd|rd|th)?"
    return re.compile(rf"{re.escape(iso_day)}|\b{months}\s+{d}\b|\b{d}\s+(?:of\s+)?{months}\b", re.IGNORECASE)


def contains(context: str, expected: str) -> bool:
    """Case-insensitive; an expected ISO day matches any spelling of that day."""
    if expected.lower() in context.lower():
        return True
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", expected)) and bool(
        date_spellings(expected).search(context)
    )


def run(rt, q):  # type: ignore[no-untyped-def]
    return rt.retriever.query(
        QueryRequest(id=q["id"], tenant_id=q["tenant_id"], query=q["query"], as_of=q["as_of"])
    )


def test_every_accepted_event_is_accounted_for(golden_runtime, golden) -> None:  # type: ignore[no-untyped-def]
    report = golden_runtime.report
    assert report.accepted == len(golden["events"])
    assert sum(report.outcomes.values()) == report.accepted
    assert report.code_blocks == 1
    assert report.pii_scrubbed == 3


def test_expected_strings_are_in_the_context(golden_runtime, golden) -> None:  # type: ignore[no-untyped-def]
    misses = []
    for q in golden["queries"]:
        result = run(golden_runtime, q)
        misses += [(q["query"], e) for e in q.get("expected", []) if not contains(result.context, e)]
    assert misses == []


def test_absent_strings_appear_in_no_output_and_no_store_file(golden_runtime, golden) -> None:  # type: ignore[no-untyped-def]
    absent = [a for q in golden["queries"] for a in q.get("absent", [])]
    assert absent
    outputs = [
        orjson.dumps(run(golden_runtime, q).model_dump(mode="json")).decode() for q in golden["queries"]
    ]
    for secret in absent:
        assert not any(secret in o for o in outputs)
    golden_runtime.vectors.flush()
    store = Path(golden_runtime.store_dir)
    stored = store_bytes(store)  # the files, and the unit documents decompressed
    assert b"SQLite format 3" in stored
    for secret in absent:
        assert secret.encode() not in stored, f"{secret!r} found in {store}"


def test_code_block_comes_back_verbatim(golden_runtime, golden) -> None:  # type: ignore[no-untyped-def]
    source = next(e["text"] for e in golden["events"] if "```" in e["text"])
    block = source[source.index("```") :]
    q = next(q for q in golden["queries"] if "backup script" in q["query"])
    result = run(golden_runtime, q)
    assert block in [m.text for m in result.memories]
    assert block in result.context


def test_other_tenants_see_nothing(golden_runtime, golden) -> None:  # type: ignore[no-untyped-def]
    q = dict(golden["queries"][0], tenant_id="someone-else")
    result = run(golden_runtime, q)
    assert result.memories == [] and result.context == ""


def test_replay_is_idempotent(golden_runtime, golden) -> None:  # type: ignore[no-untyped-def]
    from simplemem.processors.ingest.pipeline import Pipeline

    before = golden_runtime.lexical.count("golden"), golden_runtime.vectors.count("golden")
    fresh = Pipeline(
        golden_runtime.settings,
        golden_runtime.pipeline.analyzer,
        golden_runtime.decomposer,
        golden_runtime.pipeline.indexer,
    )
    fresh.ingest([(str(i), orjson.dumps(e)) for i, e in enumerate(golden["events"])])
    after = golden_runtime.lexical.count("golden"), golden_runtime.vectors.count("golden")
    assert before == after
    assert (
        before[0] == golden_runtime.report.units + golden_runtime.report.derived
    )  # statements and derived lines


def test_as_of_hides_later_memories(golden_runtime, golden) -> None:  # type: ignore[no-untyped-def]
    q = next(q for q in golden["queries"] if q["query"] == "What book am I reading?")
    early = run(golden_runtime, dict(q, as_of="2026-04-01T00:00:00+00:00")).context
    assert "Piranesi" in early and "Klara" not in early  # the later book was not said yet
    assert "Klara" in run(golden_runtime, q).context
