"""Ranking rules of ``processors/retrieval.py`` as pure functions (no store, no model)."""

from __future__ import annotations

from datetime import UTC, datetime

from processors.retrieval import boost_events
from schemas.memory import MemoryKind, MemoryUnit


def unit(uid: str, event_time: str | None = None) -> MemoryUnit:
    return MemoryUnit(
        id=uid,
        tenant_id="t",
        text=f"memory {uid}",
        kind=MemoryKind.FACT,
        source_ids=[f"m-{uid}"],
        stated_at=datetime(2026, 3, 1, tzinfo=UTC).isoformat(),
        event_time=event_time,
    )


def test_a_memory_with_its_event_time_is_lifted_for_a_question_about_time() -> None:
    units = {u.id: u for u in (unit("said"), unit("dated", "2026-02-28"), unit("far", "2026-01"))}
    ranked = [("said", 0.9), ("dated", 0.8), ("far", 0.5), ("unread", 0.4)]
    boosted = boost_events(ranked, units, 0.2)
    assert [uid for uid, _ in boosted] == ["dated", "said", "far", "unread"]
    assert dict(boosted)["far"] == 0.7 and dict(boosted)["unread"] == 0.4  # not read: not boosted


def test_no_boost_keeps_the_order() -> None:
    units = {u.id: u for u in (unit("said"), unit("dated", "2026-02-28"))}
    ranked = [("said", 0.9), ("dated", 0.8)]
    assert boost_events(ranked, units, 0.0) == ranked
