"""Ranking rules of ``processors/retrieval.py`` as pure functions (no store, no model)."""

from __future__ import annotations

from datetime import UTC, datetime

from processors.retrieval import boost_events, favour_within
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


def test_a_memory_within_the_date_is_favoured_and_one_outside_still_competes() -> None:
    wide = [("outside-strong", 1.0), ("inside", 0.5), ("outside-weak", 0.3)]
    within = [("inside", 0.55), ("inside-only", 0.2)]
    ranked = favour_within(wide, within, 0.4)
    assert [uid for uid, _ in ranked] == ["outside-strong", "inside", "inside-only", "outside-weak"]
    assert dict(ranked)["inside"] == 0.55 + 0.4  # its better score of the two searches, boosted
