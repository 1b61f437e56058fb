"""Store calls with bounded expressions: the terms and names of a long query reach a store in batches
of at most ``size`` (SQLite caps an expression's depth at 1000, OpenSearch a query's clauses at 1024).
A query within one batch makes exactly the calls it made before."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

from simplemem.processors.language.text import query_terms
from simplemem.processors.stores.protocols import Hit, LexicalStore, SymbolicFilter
from simplemem.schemas.memory import MemoryUnit

T = TypeVar("T")


def batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def known_names(store: LexicalStore, tenant_id: str, candidates: Sequence[str], size: int) -> list[str]:
    found = {name for part in batches(candidates, size) for name in store.known_names(tenant_id, part)}
    return sorted(found)


def ids_with_names(
    store: LexicalStore, tenant_id: str, ids: Sequence[str], names: Sequence[str], size: int
) -> set[str]:
    return {uid for part in batches(names, size) for uid in store.ids_with_names(tenant_id, ids, part)}


def search(
    store: LexicalStore,
    tenant_id: str,
    query: str,
    limit: int,
    flt: SymbolicFilter,
    size: int,
    *,
    read: bool = False,
) -> list[Hit]:
    """BM25 over the query's terms. A memory's BM25 score is the sum of its terms' scores, so the
    batches' scores add up; a memory outside a batch's top ``limit`` misses that batch's share."""
    terms = query_terms(query)
    if len(terms) <= size:
        return store.search(tenant_id, query, limit, flt, read=read)
    scores: dict[str, float] = {}
    units: dict[str, MemoryUnit] = {}
    for part in batches(terms, size):
        for hit in store.search(tenant_id, " ".join(part), limit, flt, read=read):
            scores[hit.id] = scores.get(hit.id, 0.0) + hit.score
            if hit.unit is not None:
                units[hit.id] = hit.unit
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return [Hit(uid, score, units.get(uid)) for uid, score in ranked]
