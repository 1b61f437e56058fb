"""An edited message (its id sent again with new text) replaces the old version everywhere."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest

from simplemem.processors.ingest.sessions import LocalSessions
from simplemem.processors.ingest.windowing import Windower
from simplemem.schemas.query import QueryRequest
from tests.helpers import message

FILLER = [
    "We should plan the garden for spring.",
    "The tomatoes did well last year on the south wall.",
    "Maybe add some basil near them this time.",
    "I read that marigolds keep the pests away.",
    "The shed door needs a new hinge as well.",
    "My neighbour Paula lent me her ladder for the gutters.",
    "The gutter on the east side is full of leaves.",
    "I finally fixed the leaking tap in the kitchen.",
    "The plumber charged far too much last time.",
    "Next weekend I want to repaint the fence.",
    "The fence paint is a dark green colour.",
    "I bought two brushes at the hardware store.",
]


def event(i: int, text: str, message_id: str | None = None) -> dict[str, str]:
    return {
        "tenant_id": "edits",
        "session_id": "s1",
        "message_id": message_id or f"m{i}",
        "speaker": "Sam",
        "role": "user",
        "text": text,
        "ts": (datetime(2026, 4, 1, 9, 0, tzinfo=UTC) + timedelta(minutes=i)).isoformat(),
    }


def lines(events: list[dict[str, str]]) -> list[tuple[str, bytes]]:
    return [(f"line {i}", orjson.dumps(e)) for i, e in enumerate(events)]


def test_an_edit_of_an_undecided_message_replaces_it_in_the_window() -> None:
    w = LocalSessions(Windower(window_size=4, stride=2, idle_seconds=3600))
    w.add(message(0))
    w.add(message(1))
    edited = message(1).model_copy(update={"text": "edited"})
    assert w.add(edited) == []
    closed = w.add(message(2)) + w.add(message(3))
    assert [m.text for m in closed[0].messages] == ["message 0", "edited", "message 2", "message 3"]


ORIGINAL = "I drive a green Volvo that I bought from my uncle."
EDITED = "I drive a red Tesla that I bought from my uncle."
QUESTION = QueryRequest(tenant_id="edits", query="What car do I drive?", as_of="2026-05-01T00:00:00Z")


def assert_only_the_edit_is_remembered(rt) -> None:  # type: ignore[no-untyped-def]
    context = rt.retriever.query(QUESTION).context
    assert "red Tesla" in context and "Volvo" not in context, context
    units = rt.lexical.units_from_sources("edits", ["m1"])
    assert units and all("Volvo" not in u.text for u in units)
    assert rt.vectors.count("edits") == rt.lexical.count("edits")


@pytest.mark.slow
def test_an_edit_sent_later_replaces_the_memories_of_the_old_version(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime

    first = [event(0, "Hello!"), event(1, ORIGINAL), *[event(i + 2, t) for i, t in enumerate(FILLER)]]
    rt = open_runtime(settings, tmp_path)
    try:
        rt.pipeline.ingest(lines(first))
        assert "Volvo" in rt.retriever.query(QUESTION).context
        report = rt.pipeline.ingest(lines([event(len(first) + 5, EDITED, message_id="m1")]))
        assert report.replaced, "the old version's units were deleted"
        assert_only_the_edit_is_remembered(rt)
    finally:
        rt.close()


@pytest.mark.slow
def test_an_edit_in_the_same_input_keeps_only_the_last_version(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime

    events = [event(0, "Hello!"), event(1, ORIGINAL), event(2, FILLER[0]), event(3, EDITED, message_id="m1")]
    events += [event(i + 4, t) for i, t in enumerate(FILLER[1:])]
    events.append(event(30, ORIGINAL.replace("green Volvo", "blue Fiat"), message_id="m1"))
    events.append(event(31, EDITED, message_id="m1"))
    rt = open_runtime(settings, tmp_path)
    try:
        rt.pipeline.ingest(lines(events))
        assert_only_the_edit_is_remembered(rt)
        assert "Fiat" not in rt.retriever.query(QUESTION).context
    finally:
        rt.close()


@pytest.mark.slow
def test_an_edit_decided_in_the_same_batch_as_its_original_keeps_only_the_edit(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    """The original's window and the edit's window close in one batch: nothing is in the stores
    yet to replace, so the batch itself must drop the original's units."""
    from simplemem.runtime import open_runtime

    events = [event(0, "Hello!"), event(1, ORIGINAL), *[event(i + 2, t) for i, t in enumerate(FILLER[:10])]]
    events += [event(12, EDITED, message_id="m1"), *[event(i + 13, t) for i, t in enumerate(FILLER)]]
    assert len(events) < settings.ingest_batch_messages
    rt = open_runtime(settings, tmp_path)
    try:
        rt.pipeline.ingest(lines(events))
        assert_only_the_edit_is_remembered(rt)
    finally:
        rt.close()
