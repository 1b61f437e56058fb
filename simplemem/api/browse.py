"""The reads behind the ``/ui/`` page, over a tenant's lexical store (the document store of both modes):
a filtered listing, its counts, and one memory's provenance.

The stores index a memory's words, time and status, not its session or kind, so a listing filtered on
those reads the tenant's memories in the store's order and stops as soon as its page is full (the first
rows come early even on a large tenant); counting them is a separate, full read the page asks for
after.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date

from simplemem.processors.stores.protocols import LexicalStore, SymbolicFilter, day_range
from simplemem.schemas.browse import (
    BrowseCounts,
    BrowseFilter,
    BrowsePage,
    MemoryRow,
    Provenance,
    SourceMessage,
    state_of,
)
from simplemem.schemas.memory import MemoryUnit

SCAN_BATCH = 1000  # units a filtered listing reads at a time
SEARCH_LIMIT = 500  # a text search ranks this many matches at most (pages run within them)
SESSIONS_LISTED = 200  # the counts name this many sessions (the largest first)


@dataclass(frozen=True)
class Matcher:
    """A filter's tests on a unit that the store does not index (session, kind, state, time)."""

    flt: BrowseFilter

    def __call__(self, unit: MemoryUnit) -> bool:
        f = self.flt
        if f.session is not None and unit.session_id != f.session:
            return False
        if f.kind is not None and str(unit.kind) != f.kind:
            return False
        if f.state is not None and state_of(unit) != f.state:
            return False
        if f.since is not None or f.until is not None:
            first, last = day_range(unit)
            if f.since is not None and last < f.since.toordinal():
                return False
            if f.until is not None and first > f.until.toordinal():
                return False
        return True


def list_units(lexical: LexicalStore, tenant: str, flt: BrowseFilter, offset: int, limit: int) -> BrowsePage:
    """One page of the listing (see the module's note on the order and the total)."""
    if flt.q is not None:
        return _searched(lexical, tenant, flt, offset, limit)
    if flt.empty:
        units = lexical.page(tenant, offset, limit)
        total = lexical.count(tenant)
        following = offset + len(units)
        return BrowsePage(
            tenant_id=tenant,
            memories=[MemoryRow.of(u) for u in units],
            offset=offset,
            next_offset=following if units and following < total else None,
            total=total,
        )
    found: list[MemoryUnit] = []
    seen = 0  # matches read so far
    more = False
    for unit in _matching(lexical, tenant, Matcher(flt)):
        if len(found) == limit:
            more = True
            break
        seen += 1
        if seen > offset:
            found.append(unit)
    return BrowsePage(
        tenant_id=tenant,
        memories=[MemoryRow.of(u) for u in found],
        offset=offset,
        next_offset=offset + len(found) if more else None,
        total=None if more else seen,  # read to the end: every match counted
    )


def _searched(lexical: LexicalStore, tenant: str, flt: BrowseFilter, offset: int, limit: int) -> BrowsePage:
    """A text search: BM25 over the memories of every state, best first, the other filters applied
    to its matches."""
    assert flt.q is not None
    window = SymbolicFilter(active_only=False, with_derived=True)
    hits = lexical.search(tenant, flt.q, SEARCH_LIMIT, window)
    units = lexical.get(tenant, [h.id for h in hits], with_context=False)
    matching = [u for u in units if Matcher(flt)(u)]
    shown = matching[offset : offset + limit]
    following = offset + len(shown)
    return BrowsePage(
        tenant_id=tenant,
        memories=[MemoryRow.of(u) for u in shown],
        offset=offset,
        next_offset=following if following < len(matching) else None,
        total=len(matching),
    )


def _matching(lexical: LexicalStore, tenant: str, test: Matcher) -> Iterator[MemoryUnit]:
    """The tenant's units that pass ``test``; the store skips those outside its dates (and, for
    ``active``, the archived) without reading them."""
    for batch in lexical.iter_units(tenant, SCAN_BATCH, _in_store(test.flt)):
        yield from (u for u in batch if test(u))


def _in_store(flt: BrowseFilter) -> SymbolicFilter:
    """The part of a filter the stores apply themselves: a date range on the memory's time, and an
    active state (not archived; superseded is not a stored status). The derived lines (timeline,
    profile, ...) are active memories of their own kind: the stores keep them apart from the units
    (their status field holds their kind), and a listing includes them."""
    ranged = flt.since is not None or flt.until is not None
    return SymbolicFilter(
        first_day=(flt.since or date.min) if ranged else None,
        last_day=(flt.until or date.max) if ranged else None,
        active_only=flt.state == "active",
        with_derived=True,
    )


def count_units(lexical: LexicalStore, tenant: str, flt: BrowseFilter) -> BrowseCounts:
    """How many memories match, by state, kind and session: one read of the tenant (or of a text
    search's matches)."""
    if flt.q is not None:
        window = SymbolicFilter(active_only=False, with_derived=True)
        hits = lexical.search(tenant, flt.q, SEARCH_LIMIT, window)
        units: Iterable[MemoryUnit] = lexical.get(tenant, [h.id for h in hits], with_context=False)
        units = [u for u in units if Matcher(flt)(u)]
    else:
        units = _matching(lexical, tenant, Matcher(flt))
    states: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    sessions: Counter[str] = Counter()
    for unit in units:
        states[state_of(unit)] += 1
        kinds[str(unit.kind)] += 1
        sessions[unit.session_id or ""] += 1
    listed = dict(sessions.most_common(SESSIONS_LISTED))
    return BrowseCounts(
        tenant_id=tenant,
        total=lexical.count(tenant),
        matching=sum(states.values()),
        by_state=dict(states),
        by_kind=dict(kinds),
        sessions=listed,
        sessions_left_out=len(sessions) - len(listed),
    )


def provenance(lexical: LexicalStore, tenant: str, memory_id: str) -> Provenance | None:
    """A memory, the messages it cites (scrubbed, as kept), the other memories of those messages,
    its supersessions and its abstract's links; None when the tenant has no such memory."""
    found = lexical.get(tenant, [memory_id])
    if not found:
        return None
    unit = found[0]
    derived = lexical.units_from_sources(tenant, unit.source_ids) if unit.source_ids else []
    sources = [_message(mid, unit, derived) for mid in unit.source_ids]
    linked = [*unit.supersedes, *([unit.superseded_by] if unit.superseded_by else [])]
    if unit.archived_in:
        linked.append(unit.archived_in)
    others = {u.id: u for u in lexical.get(tenant, linked, with_context=False)} if linked else {}
    members = [u for u in derived if u.archived_in == unit.id]
    siblings = [u for u in derived if u.id != unit.id and u.archived_in != unit.id]
    return Provenance(
        memory=MemoryRow.of(unit),
        sources=sources,
        siblings=[MemoryRow.of(u) for u in siblings],
        superseded_by=_row(others.get(unit.superseded_by or "")),
        supersedes=[MemoryRow.of(others[i]) for i in unit.supersedes if i in others],
        archived_in=_row(others.get(unit.archived_in or "")),
        summarises=[MemoryRow.of(u) for u in members],
    )


def _row(unit: MemoryUnit | None) -> MemoryRow | None:
    return MemoryRow.of(unit) if unit is not None else None


def _message(message_id: str, unit: MemoryUnit, derived: list[MemoryUnit]) -> SourceMessage:
    """A cited message as its memories keep it: a statement's context is its message's scrubbed text
    (kept once a message has several statements); a statement whose first source is the message was
    said in it (speaker, time, session)."""
    own = [u for u in derived if u.source_ids[:1] == [message_id] and str(u.kind) != "abstract"]
    if not own and unit.source_ids[:1] == [message_id]:
        own = [unit]
    if not own:
        return SourceMessage(
            message_id=message_id,
            speaker=None,
            role=None,
            stated_at=None,
            session_id=None,
            text=None,
            verbatim=False,
        )
    said = own[0]
    prose = next((u for u in own if u.context and not u.context_ids), None)
    text = "\n".join(u.text for u in own)
    if prose is not None and prose.context is not None:
        said = prose
        # a code block's context is "speaker: prose"; a statement's, its message's prose
        text = (
            prose.context.removeprefix(f"{prose.speaker}: ") if str(prose.kind) == "code" else prose.context
        )
    quoting = next((u for u in own if u.context and u.context_ids), None)
    return SourceMessage(
        message_id=message_id,
        speaker=said.speaker,
        role=str(said.role),
        stated_at=said.stated_at,
        session_id=said.session_id,
        text=text,
        verbatim=prose is not None,
        answering=quoting.context if quoting is not None else None,
    )


def session_messages(lexical: LexicalStore, tenant: str, session_id: str) -> list[str]:
    """Every message a session's memories cite (what forgetting the session forgets)."""
    test = Matcher(BrowseFilter(session=session_id))
    ids: dict[str, None] = {}
    for unit in _matching(lexical, tenant, test):
        ids.update(dict.fromkeys(unit.source_ids))
    return list(ids)
