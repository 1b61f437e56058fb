"""Near-repeats in a context: a statement that nearly repeats a chosen memory is dropped, and gives
that memory its messages (a fact said twice was said in both, and the memory shown cites both)."""

from __future__ import annotations

from functools import lru_cache

from simplemem.processors.language.text import query_terms
from simplemem.schemas.memory import MemoryUnit

TOKEN_SET_CACHE = 8192  # memory texts whose word sets a process keeps


@lru_cache(maxsize=TOKEN_SET_CACHE)
def _token_set(text: str) -> frozenset[str]:
    """Cached: a query compares each candidate with every memory already chosen."""
    return frozenset(query_terms(text))


def near_duplicate(a: str, b: str, threshold: float) -> bool:
    """Whether the word sets of ``a`` and ``b`` overlap (Jaccard) by ``threshold`` or more."""
    sa, sb = _token_set(a), _token_set(b)
    if not sa or not sb:
        return a.strip() == b.strip()
    shared = len(sa & sb)  # Jaccard, without building the union: every pair of a query is compared
    return shared / (len(sa) + len(sb) - shared) >= threshold


def with_sources(unit: MemoryUnit, more: list[str]) -> MemoryUnit:
    """``unit`` citing ``more`` messages after its own (its first stays the message it came from)."""
    extra = [s for s in more if s not in unit.source_ids]
    return unit.model_copy(update={"source_ids": [*unit.source_ids, *extra]}) if extra else unit


def absorbed(unit: MemoryUnit, kept: list[tuple[MemoryUnit, float]], threshold: float) -> bool:
    """Whether ``unit`` nearly repeats a memory in ``kept``, which then takes its messages (replaced
    in ``kept``)."""
    for i, (chosen, score) in enumerate(kept):
        if near_duplicate(unit.text, chosen.text, threshold):
            kept[i] = (with_sources(chosen, unit.source_ids), score)
            return True
    return False
