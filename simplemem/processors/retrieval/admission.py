"""Which memories a query may show: the API's filters, and the cap of memories a message."""

from __future__ import annotations

from simplemem.processors.stores.protocols import names_in_text
from simplemem.schemas.memory import MemoryStatus, MemoryUnit
from simplemem.schemas.query import QueryFilters


def about_any(unit: MemoryUnit, names: list[str]) -> bool:
    """Whether ``unit`` is about one of ``names`` (lower-cased): in its persons or named in its text."""
    return bool({p.lower() for p in unit.persons} & set(names)) or names_in_text(unit.text, names)


def admits(filters: QueryFilters, unit: MemoryUnit) -> bool:
    """Whether the filters' kinds, sessions, persons and archive choice admit ``unit``."""
    if filters.kinds and unit.kind not in filters.kinds:
        return False
    if filters.sessions and unit.session_id not in filters.sessions:
        return False
    if filters.persons and not about_any(unit, [p.lower() for p in filters.persons if p.strip()]):
        return False  # an explicit filter restricts; names found in the question's words only boost
    return filters.include_archived or unit.status == MemoryStatus.ACTIVE


def over_message_cap(unit: MemoryUnit, taken: dict[str, int], cap: int) -> bool:
    """Whether the context already holds ``cap`` memories of this unit's message (a long answer
    would otherwise fill it with its own statements, and crowd out the other sessions); counts it
    in ``taken`` if not."""
    source = unit.source_ids[0] if unit.source_ids else unit.id
    if taken.get(source, 0) >= cap:
        return True
    taken[source] = taken.get(source, 0) + 1
    return False
