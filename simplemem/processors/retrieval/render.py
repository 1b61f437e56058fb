"""Step 4, render: the chosen memories that fit the token budget, as the context an agent reads.

One line per memory in time order, under one ``[YYYY-MM-DD]`` header per day (a date costs about
seven tokens, a header per line would cost that each time); a list's lead written once; a day's
timeline digests on one line; a memory whose fact changed marked outdated, its replacement current.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cache, partial

from simplemem.processors.language.structure import list_of, without_lead
from simplemem.processors.language.tokens import line_tokens
from simplemem.processors.lifecycle.derived import DIGEST_JOIN, DigestLine, digest_parts
from simplemem.processors.retrieval.budget import Budget, fit
from simplemem.processors.retrieval.plan import Plan
from simplemem.processors.retrieval.select import Chosen, Selection
from simplemem.processors.retrieval.updates import update_notes
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.query import QueryResult, RetrievedMemory


def render(plan: Plan, selection: Selection, derived: Chosen | None = None) -> QueryResult:
    """The chosen memories that fit the budget (a gathering question's memories get half the
    per-memory cap), and their context; the ``derived`` lines first, within their plan's share."""
    c = plan.config
    notes = update_notes([u for u, _ in selection.chosen], selection.replaced)
    # one count a text per query: a short memory's text is counted to decide whether it is cut, then
    # again as its line (and a line's count is remembered from query to query: :func:`line_tokens`)
    budget = Budget(
        c.context_tokens, plan.unit_tokens, cache(partial(line_tokens, encoding=c.tokenizer_encoding))
    )
    derived = derived or []
    joined = digests(derived)
    build = built(notes, joined)
    shown, chosen = fit_levels(plan, selection.chosen, derived, budget, build, joined)
    kept = {u.id for u in shown}
    memories = [
        RetrievedMemory(
            id=u.id,
            text=u.text,
            kind=u.kind,
            event_time=u.event_time,
            stated_at=u.stated_at,
            source_ids=u.source_ids,
            score=round(sc, 4),
        )
        for u, sc in chosen
        if u.id in kept
    ]
    context = build(shown)  # the whole context the fitting checked last
    return QueryResult(
        id=plan.request.id,
        query=plan.query,
        complexity=plan.complexity,
        k=plan.k,
        memories=memories,
        context=context,
        context_tokens=budget.count(context) if context else 0,
    )


def built(notes: dict[str, str], joined: frozenset[str]) -> Callable[[list[MemoryUnit]], str]:
    """:func:`build_context` for one query, each list of memories built once: fitting the budget
    renders the same lines several times (each level's, then the whole context), and counts them."""
    contexts: dict[tuple[tuple[str, str], ...], str] = {}

    def build(units: list[MemoryUnit]) -> str:
        shown = tuple((u.id, u.text) for u in units)
        if shown not in contexts:
            contexts[shown] = build_context(units, notes, joined)
        return contexts[shown]

    return build


def digests(derived: Chosen) -> frozenset[str]:
    """The ids of the derived lines shown as digests (a day's on one line)."""
    return frozenset(u.id for u, _ in derived if isinstance(u, DigestLine))


def fit_levels(
    plan: Plan,
    chosen: Chosen,
    derived: Chosen,
    budget: Budget,
    render: Callable[[list[MemoryUnit]], str],
    joined: frozenset[str] = frozenset(),
) -> tuple[list[MemoryUnit], Chosen]:
    """What fits: the derived lines first, within their plan's share of the budget (each under its
    own cap), then the statements in what is left; and every candidate, derived first."""
    lines: list[MemoryUnit] = []
    if derived and plan.derived is not None:
        share = replace(
            budget, total=int(budget.total * plan.derived.share), per_unit=plan.derived.line_tokens
        )
        lines = fit([u for u, _ in derived], plan.query, share, render, joined)
    rest = replace(budget, total=budget.total - (budget.count(render(lines)) if lines else 0))
    shown = fit([u for u, _ in chosen], plan.query, rest, render)
    while shown and budget.count(render([*lines, *shown])) > budget.total:
        shown.pop()  # a day's header both parts share is counted once, a new one may still overflow
    return [*lines, *shown], [*derived, *chosen]


def context_line(unit: MemoryUnit) -> str:
    if unit.kind == MemoryKind.CODE:
        return f"code shared by {unit.speaker or 'user'}:\n{unit.text}"
    return unit.text


def build_context(
    units: list[MemoryUnit], notes: dict[str, str] | None = None, joined: frozenset[str] = frozenset()
) -> str:
    """Memories in :func:`reading_order`, under one ``[YYYY-MM-DD]`` header per day they were stated;
    a memory with a note (knowledge updates: which one is current) ends with it. The digests in
    ``joined`` of one day (and speakers) are one line, where the day's first of them is, in time order
    (:func:`~simplemem.processors.lifecycle.derived.digest_parts`)."""
    lines: list[str] = []
    day = None
    named: set[str] = set()  # the lists whose lead a line above names
    runs: dict[tuple[str, str], int] = {}  # a day's line of digests (by head): its place in ``lines``
    placed = [(unit, list_of(unit.text)) for unit in units]
    for unit, place in sorted(placed, key=reading_order):
        if unit.stated_at[:10] != day:
            day = unit.stated_at[:10]
            lines.append(f"[{day}]")
        if unit.id in joined:
            head, item = digest_parts(unit)
            run = (unit.stated_at[:10], head)
            if run in runs:
                lines[runs[run]] += DIGEST_JOIN + item
            else:
                runs[run] = len(lines)
                lines.append(head + item)
            continue
        line = context_line(unit)
        if place is not None:
            line = without_lead(line) if place[0] in named else line
            named.add(place[0])
        note = (notes or {}).get(unit.id)
        lines.append(f"{line} {note}" if note else line)
    return "\n".join(lines)


def reading_order(placed: tuple[MemoryUnit, tuple[str, int] | None]) -> tuple[str, str, int, str]:
    """Time order; a message's statements (one time) with each list's items together, in order, so
    that a list's lead is written once, on its first item shown (a long lead is a tenth of a line).
    ``placed``: a unit and its :func:`list_of`."""
    unit, place = placed
    return (unit.stated_at, place[0] if place else "", place[1] if place else 0, unit.id)
