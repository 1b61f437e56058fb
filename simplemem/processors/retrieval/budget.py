"""The context's token budget: what an agent receives never exceeds ``context_tokens``.

Memories are taken in rank order while they fit; a memory longer than ``context_unit_tokens``
contributes only its parts (sentences, list items, lines) that share the most words with the
question, in their own order, joined by " … ". A code block is verbatim or absent: it is never cut,
only skipped when it does not fit (unless it is the best match and nothing else is in the context
yet: then its first lines, marked as cut). Dates are headers, one per day, and are counted too.
The final string is counted exactly, and the lowest-ranked memories leave until it fits.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from simplemem.processors.language.structure import list_of, without_lead
from simplemem.processors.language.text import query_terms
from simplemem.processors.lifecycle.derived import DIGEST_JOIN, digest_parts
from simplemem.schemas.memory import MemoryKind, MemoryUnit

# sentence ends, and the starts of list items and lines: where a long memory may be cut
_PARTS = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+|(?<=[:;])\s+(?=\d+[.)]\s)")
ELLIPSIS = " … "
CUT_CODE = "\n… (code cut to fit the context)"


@dataclass(frozen=True)
class Budget:
    total: int
    per_unit: int
    count: Callable[[str], int]


def parts_of(text: str) -> list[str]:
    return [p.strip() for p in _PARTS.split(text) if p and p.strip()]


def matching_part(text: str, query: str, budget: Budget) -> str:
    """The parts of ``text`` that match ``query`` best, in text order, within ``budget.per_unit``."""
    parts = parts_of(text)
    if len(parts) <= 1:
        return _cut_words(text, budget)
    terms = set(query_terms(query))
    scored = sorted(
        range(len(parts)), key=lambda i: (-len(terms & set(query_terms(parts[i]))), i)
    )  # ties keep the earlier part: a statement's subject is usually stated first
    keep: list[int] = []
    used = 0
    for i in scored:
        cost = budget.count(parts[i]) + 1
        if used + cost > budget.per_unit:
            continue
        keep.append(i)
        used += cost
    if not keep:
        return _cut_words(parts[scored[0]], budget)
    return ELLIPSIS.join(parts[i] for i in sorted(keep))


def _cut_words(text: str, budget: Budget) -> str:
    """A single part over the cap: its first words that fit."""
    words = text.split()
    low, high = 1, len(words)
    while low < high:  # the longest prefix within the cap
        mid = (low + high + 1) // 2
        if budget.count(" ".join(words[:mid]) + ELLIPSIS) <= budget.per_unit:
            low = mid
        else:
            high = mid - 1
    return " ".join(words[:low]) + (ELLIPSIS.rstrip() if low < len(words) else "")


def _cut_code(code: str, room: int, count: Callable[[str], int]) -> str | None:
    lines = code.splitlines()
    for n in range(len(lines) - 1, 0, -1):
        text = "\n".join(lines[:n]) + CUT_CODE
        if count(text) <= room:
            return text
    return None


def within(text: str, tokens: int, count: Callable[[str], int]) -> bool:
    """Whether ``text`` counts at most ``tokens``: a token is at least one byte of the text's UTF-8,
    so a text of no more bytes is not counted (an order question's hundred short lines each were)."""
    return len(text.encode("utf-8")) <= tokens or count(text) <= tokens


def shown_text(unit: MemoryUnit, query: str, budget: Budget) -> str:
    """What ``unit`` contributes to the context: all of it, or its matching part if it is long."""
    if unit.kind == MemoryKind.CODE or within(unit.text, budget.per_unit, budget.count):
        return unit.text
    return matching_part(unit.text, query, budget)


def fit(
    ranked: list[MemoryUnit],
    query: str,
    budget: Budget,
    render: Callable[[list[MemoryUnit]], str],
    joined: frozenset[str] = frozenset(),
) -> list[MemoryUnit]:
    """The memories (their shown text in place of the full one) whose rendered context fits the
    budget: greedily in rank order on each line's count and its day's header (counting the whole
    context again for every candidate was a tenth of a query's time), then checked on the exact
    string, the lowest-ranked leaving until it fits. The digests in ``joined`` are items of their
    day's one line (``build_context``): each after the first costs its item alone."""
    chosen: list[MemoryUnit] = []
    days: set[str] = set()
    lists: set[str] = set()  # a list's lead is written once (``build_context``)
    runs: set[tuple[str, str]] = set()  # the days (and heads) that have a line of digests
    used = 0
    for unit in ranked:
        text = shown_text(unit, query, budget)
        # whole, the memory is shown as it is (a copy of each of a hundred lines was a cost)
        shown = unit if text is unit.text else unit.model_copy(update={"text": text})
        day = unit.stated_at[:10]
        place = list_of(shown.text)
        line = without_lead(shown.text) if place is not None and place[0] in lists else shown.text
        run = None
        if unit.id in joined:
            head, item = digest_parts(shown)
            run = (day, head)
            line = DIGEST_JOIN + item if run in runs else head + item
        # a line's end merges with its last token (".\n" is one), a header's with its bracket
        cost = budget.count(line) + (0 if day in days else budget.count(f"[{day}]\n"))
        if used + cost <= budget.total:
            chosen.append(shown)
            days.add(day)
            if place is not None:
                lists.add(place[0])
            if run is not None:
                runs.add(run)
            used += cost
        elif not chosen and unit.kind == MemoryKind.CODE:
            cut = _cut_code(unit.text, budget.total - budget.count(render([])) - 16, budget.count)
            if cut is not None:  # the rare path: counted exactly, so smaller memories may still follow
                chosen = [unit.model_copy(update={"text": cut})]
                days.add(day)
                used = budget.count(render(chosen))
    while chosen and budget.count(render(chosen)) > budget.total:
        chosen.pop()
    return chosen
