"""Lookaside buffer: a fact stated a moment ago is answerable before its window is indexed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from simplemem.processors.retrieval.buffer import InMemoryBuffer
from simplemem.schemas.accounting import IngestReport
from simplemem.schemas.events import ChatEvent
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.window import BufferedTurn

pytestmark = pytest.mark.slow


def turn(i: int, session: str = "s", tenant: str = "t") -> BufferedTurn:
    return BufferedTurn(
        tenant_id=tenant,
        session_id=session,
        message_id=f"m{i}",
        speaker="Ana",
        text=f"fact {i}",
        ts=datetime(2026, 1, 1, tzinfo=UTC),
        vector=[1.0],
    )


def test_in_memory_buffer_keeps_last_n_per_session_and_expires() -> None:
    now = [1000.0]
    buf = InMemoryBuffer(turns=2, ttl_seconds=60, max_sessions=100, clock=lambda: now[0])
    buf.push([turn(1), turn(2), turn(3), turn(4, session="other"), turn(5, tenant="t2")])
    assert sorted(t.message_id for t in buf.recent("t")) == ["m2", "m3", "m4"]
    assert [t.message_id for t in buf.recent("t2")] == ["m5"]
    now[0] += 61
    assert buf.recent("t") == []


def test_tenants_that_never_ask_again_do_not_stay_in_the_buffer() -> None:
    now = [1000.0]
    buf = InMemoryBuffer(turns=2, ttl_seconds=60, max_sessions=500, clock=lambda: now[0])
    buf.push([turn(i, tenant=f"t{i}") for i in range(1000)])
    assert len(buf) == 500, "bounded in sessions"
    now[0] += 61
    buf.push([turn(0, tenant="late")])
    assert len(buf) == 1, "the silent tenants' turns expired"


def test_fresh_fact_answered_from_buffer_then_from_memory(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime

    rt = open_runtime(settings, tmp_path)
    try:
        report = IngestReport()
        events = [
            ChatEvent(
                tenant_id="acme",
                session_id="s1",
                message_id=f"m{i}",
                speaker="Ana",
                role="user",
                text=text,
                ts=datetime(2026, 3, 1, 10, i, tzinfo=UTC),
            )
            for i, text in enumerate(
                ["Hi there!", "My locker room is B12 since yesterday, on the third floor.", "ok thanks"]
            )
        ]
        rt.pipeline.ingest(
            [(e.message_id, e.model_dump_json()) for e in events], report, close_sessions=False
        )
        assert report.windows == 0  # the window (10 messages) is still open: nothing is indexed yet
        request = QueryRequest(tenant_id="acme", query="Where is Ana's locker room?")
        before = rt.retriever.query(request)
        assert [m.id for m in before.memories] == ["buffer:m1"]
        assert "B12" in before.context
        assert "yesterday (2026-02-28)" in before.context  # a buffered turn is dated like a memory
        assert before.memories[0].event_time == "2026-02-28"
        assert (
            rt.retriever.query(QueryRequest(tenant_id="other", query="Where is the locker room?")).memories
            == []
        )
        rt.pipeline.flush(report)
        after = rt.retriever.query(request)
        assert "B12" in after.context
        assert all(not m.id.startswith("buffer:") for m in after.memories)
        assert after.memories[0].source_ids == ["m1"]
    finally:
        rt.close()


def said_by_ana(text: str) -> ChatEvent:
    """Message m1 of acme's session s1."""
    return ChatEvent(
        tenant_id="acme",
        session_id="s1",
        message_id="m1",
        speaker="Ana",
        role="user",
        text=text,
        ts=datetime(2026, 3, 1, 10, 0, tzinfo=UTC),
    )


def test_a_code_block_said_a_moment_ago_is_answered_from_the_buffer(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime

    rt = open_runtime(settings, tmp_path)
    try:
        script = "```bash\nrsync -a ~/photos /mnt/backup/photos\n```"
        event = said_by_ana(f"Here is my photo backup command: {script}")
        rt.pipeline.ingest(
            [(event.message_id, event.model_dump_json())], IngestReport(), close_sessions=False
        )
        answer = rt.retriever.query(QueryRequest(tenant_id="acme", query="Show me my photo backup command."))
        assert [m.id for m in answer.memories] == ["buffer:m1"]
        assert "rsync -a ~/photos /mnt/backup/photos" in answer.context
    finally:
        rt.close()


def test_a_turn_still_buffered_after_it_was_indexed_is_answered_from_memory_only(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    """A stream worker indexes a window before it discards the window's turns from the buffer: in
    between, the turn (two statements, so no near-duplicate of either memory) must not come back
    a second time, from the buffer."""
    from simplemem.runtime import open_runtime

    rt = open_runtime(settings, tmp_path)
    try:
        text = "My locker code room is B12 on the third floor. I also ride my bike to work every day."
        event = said_by_ana(text)
        rt.pipeline.ingest([(event.message_id, event.model_dump_json())])
        assert rt.buffer is not None and not rt.buffer.recent("acme")  # indexed, then discarded
        vector = rt.embedder.encode([text])[0].tolist()
        turn = BufferedTurn(
            tenant_id="acme",
            session_id="s1",
            message_id="m1",
            speaker="Ana",
            text=text,
            ts=event.ts,
            vector=vector,
        )
        rt.buffer.push([turn])  # as if the worker had not discarded it yet
        result = rt.retriever.query(
            QueryRequest(tenant_id="acme", query="Where is Ana's locker room and how does she get to work?")
        )
        assert result.memories and all(not m.id.startswith("buffer:") for m in result.memories)
    finally:
        rt.close()
