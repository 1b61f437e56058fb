"""Step 3, select: the plan's k memories from the head of the gathered ranking, then their siblings.

The selection reads the head of the ranking (``select_head_factor`` candidates per memory it
chooses), adds the plan's boosts, puts the current version of a changed fact in place of the old,
and takes memories in order while the filters admit them, skipping near-repeats and memories of a
message that already has its share. The budget is the render step's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simplemem.processors.retrieval.admission import admits, over_message_cap
from simplemem.processors.retrieval.dedupe import absorbed
from simplemem.processors.retrieval.gather import Candidates
from simplemem.processors.retrieval.plan import Plan
from simplemem.processors.retrieval.siblings import siblings
from simplemem.processors.retrieval.updates import current_versions, rank_current_first
from simplemem.processors.stores.protocols import LexicalStore
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.query import QueryFilters

Chosen = list[tuple[MemoryUnit, float]]


@dataclass
class Selection:
    """The chosen memories with their scores, best first (siblings after the top k), and the
    memories whose fact changed, by id, with the one current as of the question."""

    chosen: Chosen
    replaced: dict[str, MemoryUnit] = field(default_factory=dict)


def select(lexical: LexicalStore, plan: Plan, found: Candidates) -> Selection:
    """The plan's top k of ``found`` (see the module), then, unless the question gathers mentions,
    their siblings."""
    c = plan.config
    head = found.ranked[: plan.k * c.select_head_factor]
    units = read_head(lexical, plan.tenant, head, found.units)
    head = plan.boosts().apply(head, units)
    replaced = current_versions(lexical, plan.tenant, units, plan.as_of, c.max_update_hops)
    head = rank_current_first(head, units, replaced, c.superseded_weight)
    chosen = pick(head, units, plan.k, plan.per_message, plan.filters, c.dedupe_similarity)
    if not plan.gathers:
        chosen += siblings(lexical, plan, chosen)
    return Selection(chosen, replaced)


def read_head(
    lexical: LexicalStore, tenant: str, head: list[tuple[str, float]], known: dict[str, MemoryUnit]
) -> dict[str, MemoryUnit]:
    """The units of ``head``: those ``known`` (read while gathering) and the others, read now."""
    unread = [uid for uid, _ in head if uid not in known]
    units = {u.id: u for u in lexical.get(tenant, unread, with_context=False)}
    units.update(known)
    return units


def pick(
    head: list[tuple[str, float]],
    units: dict[str, MemoryUnit],
    k: int,
    per_message: int,
    filters: QueryFilters,
    dedupe: float,
) -> Chosen:
    """The first ``k`` of ``head`` that the filters admit, none a near-repeat of one taken before (it
    gives that one its messages instead) and at most ``per_message`` of a message."""
    chosen: Chosen = []
    taken: dict[str, int] = {}
    for uid, sc in head:
        unit = units.get(uid)
        if unit is None or not admits(filters, unit):
            continue
        if absorbed(unit, chosen, dedupe) or over_message_cap(unit, taken, per_message):
            continue
        chosen.append((unit, sc))
        if len(chosen) == k:
            break
    return chosen
