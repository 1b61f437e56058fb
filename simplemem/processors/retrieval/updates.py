"""Knowledge updates in a query: a memory whose fact changed gives its place to the current one."""

from __future__ import annotations

from datetime import datetime

from simplemem.processors.retrieval.boosts import by_score
from simplemem.processors.stores.protocols import LexicalStore
from simplemem.schemas.memory import MemoryStatus, MemoryUnit


def current_versions(
    lexical: LexicalStore, tenant: str, units: dict[str, MemoryUnit], as_of: datetime, hops: int
) -> dict[str, MemoryUnit]:
    """Superseded memory id -> the memory current as of ``as_of`` (the end of its chain of updates,
    each stated by then, followed ``hops`` steps at most); memories not superseded by then are left out."""
    known = dict(units)
    current: dict[str, MemoryUnit] = {}
    frontier = {uid: u for uid, u in units.items() if u.superseded_by}
    for _ in range(hops):
        missing = [u.superseded_by for u in frontier.values() if u.superseded_by not in known]
        known.update((u.id, u) for u in lexical.get(tenant, [m for m in missing if m], with_context=False))
        step: dict[str, MemoryUnit] = {}
        for old_id, at in frontier.items():
            newer = known.get(at.superseded_by or "")
            if newer is None or newer.status != MemoryStatus.ACTIVE:
                continue
            if datetime.fromisoformat(newer.stated_at) > as_of:
                continue  # not changed yet at the time of the question
            current[old_id] = newer
            if newer.superseded_by:
                step[old_id] = newer
        frontier = step
        if not frontier:
            break
    return current


def rank_current_first(
    head: list[tuple[str, float]],
    units: dict[str, MemoryUnit],
    replaced: dict[str, MemoryUnit],
    weight: float,
) -> list[tuple[str, float]]:
    """A superseded memory gives its place to the current one (added to ``units``) and drops to
    ``weight`` of its score (still there: the history may be the question)."""
    if not replaced:
        return head
    best: dict[str, float] = {}
    for uid, sc in head:
        newer = replaced.get(uid)
        if newer is not None:
            units.setdefault(newer.id, newer)
            best[newer.id] = max(best.get(newer.id, 0.0), sc)
            sc *= weight
        best[uid] = max(best.get(uid, 0.0), sc)
    return by_score(list(best.items()))


def update_notes(chosen: list[MemoryUnit], replaced: dict[str, MemoryUnit]) -> dict[str, str]:
    """What the context says about changed facts: the older memory is outdated (with the day its
    fact changed), the one that replaced it is current."""
    ids = {u.id for u in chosen}
    notes: dict[str, str] = {}
    for old_id, newer in replaced.items():
        if old_id in ids:
            notes[old_id] = f"(outdated: changed {newer.stated_at[:10]})"
            if newer.id in ids:
                notes[newer.id] = "(current)"
    return notes
