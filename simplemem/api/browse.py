"""The reads behind the ``/ui/`` page, over a tenant's lexical store (the document store of both modes):
a filtered listing, its counts, and one memory's provenance.

The stores apply a listing's filters (session, kind, state, dates) on fields they index and count the
matches by state, kind and session themselves (:class:`~simplemem.processors.stores.protocols.UnitListing`):
a page reads only the memories it shows, in the order stated, whatever the filter; a text search ranks
its matches (BM25, at most ``SEARCH_LIMIT``) and the other filters are applied to those.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from simplemem.processors.stores.protocols import (
    DERIVED_STATUSES,
    LexicalStore,
    Listing,
    SymbolicFilter,
    day_range,
)
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

SCAN_BATCH = 1000  # units a session's forgetting reads at a time
SEARCH_LIMIT = 500  # a text search ranks this many matches at most (pages run within them)
SESSIONS_LISTED = 200  # the counts name this many sessions (the largest first)


@dataclass(frozen=True)
class Matcher:
    """A filter's tests on a unit, for a text search's matches (the stores apply the others)."""

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
    """One page of the listing, with how many match (see the module's note on the order)."""
    if flt.q is not None:
        return _searched(lexical, tenant, flt, offset, limit)
    if flt.empty:
        units = lexical.page(tenant, offset, limit)
        total = lexical.count(tenant)
    else:
        units, total = lexical.listing(tenant, listing_of(flt), offset, limit)
    following = offset + len(units)
    return BrowsePage(
        tenant_id=tenant,
        memories=[MemoryRow.of(u) for u in units],
        offset=offset,
        next_offset=following if units and following < total else None,
        total=total,
    )


def listing_of(flt: BrowseFilter) -> Listing:
    """The filters the stores apply (all but the text search)."""
    return Listing(
        session=flt.session,
        kind=str(flt.kind) if flt.kind is not None else None,
        state=flt.state,
        first_day=flt.since,
        last_day=flt.until,
    )


def _searched(lexical: LexicalStore, tenant: str, flt: BrowseFilter, offset: int, limit: int) -> BrowsePage:
    """A text search: BM25 over the memories of every state, best first, the other filters applied
    to its matches."""
    assert flt.q is not None
    matching = _text_matches(lexical, tenant, flt)
    shown = matching[offset : offset + limit]
    following = offset + len(shown)
    return BrowsePage(
        tenant_id=tenant,
        memories=[MemoryRow.of(u) for u in shown],
        offset=offset,
        next_offset=following if following < len(matching) else None,
        total=len(matching),
    )


def _text_matches(lexical: LexicalStore, tenant: str, flt: BrowseFilter) -> list[MemoryUnit]:
    """A text search's matches that pass the other filters, best first: the memories of every state
    and the derived lines, each layer searched on its own (the stores index them apart) and merged by
    score."""
    assert flt.q is not None
    units = lexical.search(tenant, flt.q, SEARCH_LIMIT, SymbolicFilter(active_only=False))
    lines = lexical.search(tenant, flt.q, SEARCH_LIMIT, SymbolicFilter(derived=DERIVED_STATUSES))
    hits = sorted([*units, *lines], key=lambda h: -h.score)[:SEARCH_LIMIT]
    return [u for u in lexical.get(tenant, [h.id for h in hits], with_context=False) if Matcher(flt)(u)]


def count_units(lexical: LexicalStore, tenant: str, flt: BrowseFilter) -> BrowseCounts:
    """How many memories match, by state, kind and session: counted by the store (or, for a text
    search, over its matches)."""
    if flt.q is None:
        found = lexical.listing_counts(tenant, listing_of(flt), SESSIONS_LISTED)
        return BrowseCounts(
            tenant_id=tenant,
            total=lexical.count(tenant),
            matching=found.matching,
            by_state=found.by_state,
            by_kind=found.by_kind,
            sessions=found.sessions,
            sessions_left_out=found.sessions_total - len(found.sessions),
        )
    units = _text_matches(lexical, tenant, flt)
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
        matching=len(units),
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
    """Every message a session's memories cite (what forgetting the session forgets): the store's
    listing of the session, page by page; read in full only where the listing ends before its total
    (OpenSearch's result window)."""
    ids: dict[str, None] = {}
    only = Listing(session=session_id)
    offset, total = 0, None
    while total is None or offset < total:
        units, total = lexical.listing(tenant, only, offset, SCAN_BATCH)
        if not units:
            break
        offset += len(units)
        for unit in units:
            ids.update(dict.fromkeys(unit.source_ids))
    if offset < total:
        test = Matcher(BrowseFilter(session=session_id))
        for batch in lexical.iter_units(tenant, SCAN_BATCH):
            for unit in filter(test, batch):
                ids.update(dict.fromkeys(unit.source_ids))
    return list(ids)
