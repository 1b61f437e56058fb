"""Names the tenant's memory already holds resolve pronouns in later sessions, where the window
alone has no sign that a lower-case word is a name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from simplemem.processors.language.coref import PeopleTracker
from tests.test_coref import tokens

pytestmark = pytest.mark.slow
START = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)

FIRST_SESSION = [
    "My friend Kenji lives in Osaka and runs a tiny okonomiyaki place near the station.",
    "We met him at a ramen bar in Dotonbori three years ago.",
    "He recommended the Kuromon market for breakfast.",
]
# A week later: "kenji" in lower case, after a verb, with no relation word: only the memory says it
# is a name.
LATER = "we should take kenji out for dinner, he earned it"


def line(i: int, session: str, text: str, day: int, tenant: str = "names") -> tuple[str, bytes]:
    event = {
        "tenant_id": tenant,
        "session_id": session,
        "message_id": f"m{i}",
        "speaker": "Noor",
        "role": "user",
        "text": text,
        "ts": (START + timedelta(days=day, minutes=i)).isoformat(),
    }
    return f"line {i}", orjson.dumps(event)


def test_a_name_from_an_earlier_session_is_a_referent_in_lower_case(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime

    rt = open_runtime(settings, tmp_path)
    try:
        assert_a_later_session_knows_kenji(rt, "names")
    finally:
        rt.close()


def assert_a_later_session_knows_kenji(rt: Any, tenant: str) -> None:
    rt.pipeline.ingest([line(i, "s1", t, 0, tenant) for i, t in enumerate(FIRST_SESSION)])
    rt.pipeline.ingest([line(10, "s2", LATER, 7, tenant)])
    texts = [u.text for page in rt.lexical.iter_units(tenant, 100) for u in page]
    assert any("kenji earned it" in t for t in texts), texts


def test_only_lower_case_content_words_outside_a_determiner_are_taken_from_the_memory() -> None:
    tracker = PeopleTracker(tenant_names=frozenset({"kenji", "support", "aww", "will", "her"}))
    _, found = tracker.observe(tokens("we/PRP", "owe/VBP", "kenji/NN", "a/DT", "dinner/NN"))
    assert [(m.name, m.listed) for m in found] == [("kenji", False)]
    assert tracker.observe(tokens("the/DT", "support/NN", "team/NN", "called/VBD"))[1] == []
    assert tracker.observe(tokens("Aww/UH", ",/,", "Aww/NNP", "that/DT"))[1] == []
    assert tracker.observe(tokens("i/PRP", "will/MD", "ask/VB", "her/PRP"))[1] == []
