"""Small store protocols: the embedded stores and the service stores (OpenSearch, Milvus server) fit them."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from simplemem.schemas.events import Role
from simplemem.schemas.memory import DERIVED_KINDS, MemoryStatus, MemoryUnit

# A query word of at least this many letters matches a known name it begins ("Mel" for "Melanie").
MIN_NAME_PREFIX = 3


DERIVED_STATUSES = tuple(sorted(k.value for k in DERIVED_KINDS))


@dataclass(frozen=True)
class SymbolicFilter:
    """Constraints a memory must meet. Every search also carries its tenant. ``names``: the memory is
    about one of these persons (lower-cased): it lists them, or its own text names them. ``first_day``
    to ``last_day``: the memory's time (event time, else the day stated) overlaps them, or, with
    ``or_stated``, it was stated within them ("I mentioned it a couple of days ago")."""

    names: Sequence[str] = field(default_factory=tuple)
    first_day: date | None = None
    last_day: date | None = None
    stated_before: datetime | None = None
    active_only: bool = True
    or_stated: bool = False
    # non-empty: these derived kinds instead of the units (a search reads one layer: a listing that
    # shows both searches each and merges them, ``api/browse.py``)
    derived: tuple[str, ...] = ()

    def statuses(self) -> tuple[str, ...]:
        """The values of the stores' status field a match may have (:func:`search_status`)."""
        if self.derived:
            return self.derived
        if self.active_only:
            return (MemoryStatus.ACTIVE.value,)
        return (MemoryStatus.ACTIVE.value, MemoryStatus.ARCHIVED.value)

    def stated_bounds(self) -> tuple[float, float]:
        """The range as [start, end) POSIX seconds of its UTC days (the stores keep ``stated_at`` so)."""
        assert self.first_day is not None and self.last_day is not None
        start = datetime.combine(self.first_day, time(), UTC)
        return start.timestamp(), (
            datetime.combine(self.last_day, time(), UTC) + timedelta(days=1)
        ).timestamp()


def search_status(unit: MemoryUnit) -> str:
    """What the stores keep in their status field: the unit's status, or a derived line's kind. A
    search of the units asks for "active" (and "archived"), so the derived lines stay out of it without
    a field of their own in any store; a search of the derived layer asks for their kinds."""
    return unit.kind.value if unit.kind in DERIVED_KINDS else unit.status.value


class Hit(NamedTuple):
    """A search's match; ``unit`` is the memory itself (without its message) where the search was
    asked to ``read`` and its store returns documents with the matches. A tuple: a query makes a
    thousand or two of them (half the cost of a frozen dataclass's)."""

    id: str
    score: float
    unit: MemoryUnit | None = None


class VectorStore(Protocol):
    def upsert(self, units: Sequence[MemoryUnit], vectors: npt.NDArray[np.float32]) -> None: ...

    def search(
        self, tenant_id: str, vector: npt.NDArray[np.float32], limit: int, flt: SymbolicFilter
    ) -> list[Hit]: ...

    def delete(self, tenant_id: str, ids: Sequence[str]) -> None: ...

    def vectors(self, tenant_id: str, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors of these units (to rewrite a unit's row, or to average a cluster)."""
        ...

    def delete_tenant(self, tenant_id: str) -> None:
        """Every vector of the tenant (a whole-tenant deletion, after the units it knows of)."""
        ...

    def expunge(self) -> None:
        """Remove deleted rows from disk now (compaction), not when the store gets to it."""
        ...

    def count(self, tenant_id: str) -> int: ...

    def ids(self, tenant_id: str, batch: int) -> Iterator[list[str]]:
        """Every unit id with a vector in the tenant, ``batch`` at a time (reconciliation)."""
        ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


# The lexical store's operations, one small protocol per concern (as Graphiti splits its operation
# interfaces): a component asks for the concerns it uses, and each backend (SQLite, OpenSearch) keeps
# one module per concern. ``LexicalStore`` is all of them.


class LexicalSearch(Protocol):
    """BM25 text search under the symbolic filter."""

    def search(
        self, tenant_id: str, query: str, limit: int, flt: SymbolicFilter, *, read: bool = False
    ) -> list[Hit]:
        """BM25 matches, best first. ``read``: a store where a read is a round trip returns the
        matches' units in the same request (``Hit.unit``); one that reads locally may leave it out."""
        ...

    def one_query(self) -> AbstractContextManager[None]:
        """A scope of one query's calls from this thread, which may share what they read (a question
        searched whole, by its aspects and for several kinds of line; a unit read again): each still
        returns what it would alone."""
        ...


class UnitDocuments(Protocol):
    """The units themselves (the document store): written, read, deleted."""

    def upsert(self, units: Sequence[MemoryUnit]) -> None: ...

    def get(self, tenant_id: str, ids: Sequence[str], *, with_context: bool = True) -> list[MemoryUnit]:
        """The units by id, in the order asked; ``with_context=False`` leaves out their message
        (``MemoryUnit.context``): a query never shows it, and a long answer's is kilobytes."""
        ...

    def iter_units(
        self, tenant_id: str, batch: int, flt: SymbolicFilter | None = None
    ) -> Iterator[list[MemoryUnit]]:
        """All the tenant's units (active and archived), ``batch`` at a time: bounded memory. ``flt``:
        only those within its dates and status (its names are not applied)."""
        ...

    def page(self, tenant_id: str, offset: int, limit: int) -> list[MemoryUnit]:
        """The tenant's units (any status) in the order they were stated, ``limit`` from ``offset``."""
        ...

    def delete(self, tenant_id: str, ids: Sequence[str]) -> None: ...


class PersonNames(Protocol):
    """The persons the memories are about (the symbolic filter's names)."""

    def known_names(self, tenant_id: str, candidates: Sequence[str]) -> list[str]: ...

    def all_names(self, tenant_id: str, limit: int) -> list[str] | None:
        """Every person name of the tenant's memory (lower-cased), or None when it has more than
        ``limit``."""
        ...

    def ids_with_names(self, tenant_id: str, ids: Sequence[str], names: Sequence[str]) -> set[str]: ...


class Provenance(Protocol):
    """Which messages a unit comes from and quotes (siblings, forgetting)."""

    def units_from_sources(
        self, tenant_id: str, source_ids: Sequence[str], *, with_context: bool = True
    ) -> list[MemoryUnit]: ...

    def sources_with_units(self, tenant_id: str, source_ids: Sequence[str]) -> set[str]:
        """Which of these messages have memory units (any status): without reading the units."""
        ...

    def units_quoting(self, tenant_id: str, message_ids: Sequence[str]) -> list[MemoryUnit]:
        """Units whose context quotes one of these messages (``MemoryUnit.context_ids``)."""
        ...


class StoreAdmin(Protocol):
    """An operator's view of the store: tenants, sizes, compaction, closing."""

    def tenants(self) -> list[str]:
        """Every tenant with a memory (an operator's listing: ``simplemem consolidate``)."""
        ...

    def expunge(self) -> None:
        """Remove deleted documents from disk now (merges, zeroed pages), not eventually."""
        ...

    def count(self, tenant_id: str) -> int: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Listing:
    """A listing's filters (the ``/ui/`` page's), all optional, combined with AND; the stores apply
    them on indexed fields, so a filter whose matches are few or come last reads only its matches.
    ``state`` is what a person sees: active, superseded (a newer memory changed its fact) or
    archived; ``first_day`` to ``last_day``: the memory's time overlaps them."""

    session: str | None = None
    kind: str | None = None
    state: str | None = None
    first_day: date | None = None
    last_day: date | None = None


@dataclass
class ListingCounts:
    """How many memories a listing matches, by state, kind and session (the largest sessions)."""

    matching: int
    by_state: dict[str, int]
    by_kind: dict[str, int]
    sessions: dict[str, int]
    sessions_total: int


class UnitListing(Protocol):
    """The units a person browses: filtered and counted by the store, not by reading every unit."""

    def listing(self, tenant_id: str, flt: Listing, offset: int, limit: int) -> tuple[list[MemoryUnit], int]:
        """A page of the matching units in the order stated (without their message), and how many
        match."""
        ...

    def listing_counts(self, tenant_id: str, flt: Listing, sessions: int) -> ListingCounts:
        """The matching units counted by state, kind and session (the ``sessions`` largest named)."""
        ...


class LexicalStore(LexicalSearch, UnitDocuments, PersonNames, Provenance, StoreAdmin, UnitListing, Protocol):
    """BM25 text search plus the symbolic fields and the units themselves (the document store)."""


def names_matching(names: Sequence[str], candidates: Sequence[str]) -> list[str]:
    """The ``names`` (lower-cased) that a candidate equals or abbreviates ("Mel" -> "melanie"):
    nicknames are usually prefixes of at least ``MIN_NAME_PREFIX`` letters."""
    lowered = {c.lower() for c in candidates if c.strip()}
    prefixes = tuple(c for c in lowered if len(c) >= MIN_NAME_PREFIX)
    return sorted({n for n in names if n in lowered or (prefixes and n.startswith(prefixes))})


def about_any(unit: MemoryUnit, names: Sequence[str]) -> bool:
    """Whether ``unit`` is about one of ``names`` (lower-cased) as ``ids_with_names`` decides it: a
    person name (or part of one) it lists (:func:`index_names`), or a name its own text holds as a
    whole word. For units already read, where asking the store would be one more round trip
    (services mode)."""
    if not names:
        return False
    wanted = frozenset(names)
    return any(key in wanted for key in _name_keys(unit)) or names_in_text(unit.text, names)


def names_in_text(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` names one of ``names`` (lower-cased) as whole words."""
    return bool(names) and _names_pattern(frozenset(names)).search(text.lower()) is not None


@lru_cache(maxsize=256)
def _names_pattern(names: frozenset[str]) -> re.Pattern[str]:
    """One pattern for a query's names, as whole words (a query checks a hundred candidates)."""
    return re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")\b")


def day_range(unit: MemoryUnit) -> tuple[int, int]:
    """The unit's time as ordinal days: its ``event_time`` span, else the day it was stated."""
    from simplemem.processors.language.timespan import iso_span

    if unit.event_time:
        span = iso_span(unit.event_time)
        if span is not None:
            return span[0].toordinal(), span[1].toordinal()
    stated = datetime.fromisoformat(unit.stated_at).date().toordinal()
    return stated, stated


ROLE_WORDS = frozenset(r.value for r in Role)


def index_names(unit: MemoryUnit) -> list[str]:
    """Lower-cased person names (and their parts) that the query's person filter matches.

    Only persons: entity labels from a small NER model are too unstable ("LGBTQ" is an ORG in one
    sentence and nothing in the next) to be a hard constraint; entities still count through BM25.
    A speaker called by its role ("user", "assistant": a frontend that sends no name) is not a name:
    it is on nearly every unit of such a tenant, and the known names a window's lower-case words are matched against
    (``Pipeline.with_known_names``) took the word "user" for one.
    """
    return sorted(set(_name_keys(unit)))


def _name_keys(unit: MemoryUnit) -> Iterator[str]:
    """The unit's person names, lower-cased, and their parts of two letters or more (repeats left in)."""
    for value in unit.persons:
        low = value.lower().strip()
        if low and low not in ROLE_WORDS:
            yield low
            yield from (part for part in low.split() if len(part) > 1)
