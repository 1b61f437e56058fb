"""The other statements of the chosen memories' messages: a message's statements are each other's
context ("It's a mix of drama and romance!" beside "my first screenplay")."""

from __future__ import annotations

from simplemem.processors.language.text import query_terms
from simplemem.processors.retrieval.admission import admits
from simplemem.processors.retrieval.dedupe import absorbed
from simplemem.processors.retrieval.plan import Plan
from simplemem.processors.stores.protocols import LexicalStore
from simplemem.schemas.memory import DERIVED_KINDS, MemoryUnit

Chosen = list[tuple[MemoryUnit, float]]


def siblings(lexical: LexicalStore, plan: Plan, chosen: Chosen) -> Chosen:
    """Up to ``sibling_units`` other active statements of the chosen memories' own messages, each with
    the score of the memory that brought it, near-repeats absorbed (:func:`sibling_order` decides
    which of a message's statements come)."""
    c = plan.config
    if not c.sibling_units or not chosen:
        return []
    have = {u.id for u, _ in chosen}
    sources = list(dict.fromkeys(u.source_ids[0] for u, _ in chosen))  # a unit's own message
    by_source: dict[str, list[MemoryUnit]] = {}
    for unit in lexical.units_from_sources(plan.tenant, sources, with_context=False):
        if unit.id not in have and unit.kind not in DERIVED_KINDS and admits(plan.filters, unit):
            by_source.setdefault(unit.source_ids[0], []).append(unit)
    terms = set(query_terms(plan.query))
    added: Chosen = []
    for parent, score in chosen:
        for unit in sibling_order(by_source.pop(parent.source_ids[0], []), terms, c.short_message_statements):
            if absorbed(unit, chosen, c.dedupe_similarity) or absorbed(unit, added, c.dedupe_similarity):
                continue
            added.append((unit, score))
            if len(added) == c.sibling_units:
                return added
    return added


def sibling_order(units: list[MemoryUnit], terms: set[str], short: int) -> list[MemoryUnit]:
    """A short message's statements (fewer than ``short``) in their order: each other's context. A long
    message's (a list, a plan) only those that share a question word, the most shared first: the rest
    is another topic."""
    if len(units) < short:
        return sorted(units, key=lambda u: u.id)
    shared = [(len(terms & set(query_terms(u.text))), u.id, u) for u in units]
    return [u for n, _, u in sorted(shared, key=lambda x: (-x[0], x[1])) if n > 0]
