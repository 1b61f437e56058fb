"""The columns a BM25 search reads of a tenant's rows, kept in memory as arrays.

A search matches its terms in the FTS indexes (rowids only); what it needs of each match (the row's
length, status, dates, context) it reads here instead of joining the tables row by row: the join
cost a few microseconds a match, most of a search over a long history. The arrays are read once per
tenant and dropped at the tenant's next write (:meth:`ColumnCache.drop`, called by every write of
units) or at any commit of another connection to the file (``PRAGMA data_version``); the least
recently searched tenants leave first beyond :data:`CACHE_ROWS`. Queries also keep with a tenant's
columns what they read of its rows and would read again (``TenantColumns``: the units they decoded
without a context, each term's rows they walked), which go with them, within :data:`KEPT_UNITS`
and :data:`KEPT_ROWIDS` for all tenants together. Nothing here is stored: the file is the only copy,
so forgetting and replays have nothing more to reach.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from simplemem.processors.stores.protocols import SymbolicFilter
from simplemem.processors.stores.sqlite_bm25 import TermRows
from simplemem.processors.stores.time_columns import within_time
from simplemem.schemas.memory import DERIVED_KINDS, MemoryStatus, MemoryUnit

CACHE_ROWS = 1_000_000  # units and contexts kept as arrays: about 60 MB
# what queries read kept with the columns, all tenants together: decoded units (about 3.5 KB each: at
# most about 140 MB) and the rowids of term walks (8 bytes each: 32 MB). Beyond, nothing more is kept
# until a tenant's columns go.
KEPT_UNITS = 40_000
KEPT_ROWIDS = 4_000_000
NO_CONTEXT = -1
Walked = tuple[str, TermRows]  # a term's rows of an index (``units_fts``...), as a search walks them


class ByRowid:
    """Columns in ascending rowid order, looked up by rowid."""

    rowid: npt.NDArray[np.int64]

    def positions(self, rowids: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        """The positions of ``rowids`` (-1 for a rowid not the tenant's)."""
        return self.slots.positions(self.rowid, rowids)

    @cached_property
    def slots(self) -> Slots:
        """Made at the first lookup (the rowids never change)."""
        return Slots.made(self.rowid)


@dataclass(frozen=True)
class UnitColumns(ByRowid):
    """A tenant's units by rowid (ascending): each column an array in that order."""

    rowid: npt.NDArray[np.int64]
    key: list[bytes | str]  # the unit's id as stored: what a search's hits are named by
    words: npt.NDArray[np.float64]
    status: npt.NDArray[np.int16]  # the code of the status field (a derived line's kind), see ``codes``
    codes: dict[str, int]
    derived: npt.NDArray[np.bool_]  # a derived line (a layer of its own)
    event_start: npt.NDArray[np.int64]
    event_end: npt.NDArray[np.int64]
    stated_at: npt.NDArray[np.float64]
    context: npt.NDArray[np.int64]  # the context's rowid, NO_CONTEXT for none
    by_context: npt.NDArray[np.intp]  # the positions ordered by context (a context's units together)

    @classmethod
    def read(cls, db: sqlite3.Connection, number: int) -> UnitColumns:
        rows = db.execute(
            "SELECT rowid, words, COALESCE(status, ?), event_start, COALESCE(event_end, event_start), "
            "stated_at, COALESCE(context, ?), id FROM units WHERE tenant_id = ? ORDER BY rowid",
            (MemoryStatus.ACTIVE.value, NO_CONTEXT, number),
        ).fetchall()
        names = [r[2] for r in rows]
        codes = {name: i for i, name in enumerate(dict.fromkeys(names))}
        derived = {kind.value for kind in DERIVED_KINDS}
        context = np.array([r[6] for r in rows], dtype=np.int64)
        return cls(
            rowid=np.array([r[0] for r in rows], dtype=np.int64),
            key=[r[7] for r in rows],
            words=np.array([r[1] for r in rows], dtype=np.float64),
            status=np.array([codes[n] for n in names], dtype=np.int16),
            codes=codes,
            derived=np.array([n in derived for n in names], dtype=bool),
            event_start=np.array([r[3] for r in rows], dtype=np.int64),
            event_end=np.array([r[4] for r in rows], dtype=np.int64),
            stated_at=np.array([r[5] for r in rows], dtype=np.float64),
            context=context,
            by_context=np.argsort(context, kind="stable"),
        )

    def in_layer(self, rowids: npt.NDArray[np.int64], derived: bool) -> npt.NDArray[np.bool_]:
        """Which of ``rowids`` are the tenant's units of the layer (its derived lines or not)."""
        pos = self.positions(rowids)
        return (pos >= 0) & (self.derived[pos] == derived)

    def passing(self, pos: npt.NDArray[np.intp], flt: SymbolicFilter) -> npt.NDArray[np.bool_]:
        """Which of the units at ``pos`` meet the filter's status and time constraints (the SQL of
        :func:`~simplemem.processors.stores.sqlite_lexical.documents.within_filter`)."""
        codes = [self.codes[s] for s in flt.statuses() if s in self.codes]
        ok = np.isin(self.status[pos], codes)
        return ok & within_time(flt, self.event_start[pos], self.event_end[pos], self.stated_at[pos])

    @cached_property
    def ordered_contexts(self) -> npt.NDArray[np.int64]:
        """Each unit's context in :attr:`by_context` order (sorted), made at the first lookup."""
        return self.context[self.by_context]

    def of_contexts(
        self, contexts: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """The positions of the units of each of ``contexts`` (rowids), and for each which context
        (its index in ``contexts``) it came by."""
        ordered = self.ordered_contexts
        lo = np.searchsorted(ordered, contexts, side="left")
        hi = np.searchsorted(ordered, contexts, side="right")
        sizes = hi - lo
        which = np.repeat(np.arange(len(contexts)), sizes)
        starts = np.repeat(lo - np.cumsum(sizes) + sizes, sizes)
        return self.by_context[starts + np.arange(int(sizes.sum()))], which


@dataclass(frozen=True)
class ContextColumns(ByRowid):
    """A tenant's contexts by rowid (ascending) and their lengths."""

    rowid: npt.NDArray[np.int64]
    words: npt.NDArray[np.float64]

    @classmethod
    def read(cls, db: sqlite3.Connection, tenant_id: str) -> ContextColumns:
        rows = db.execute(
            "SELECT rowid, words FROM contexts WHERE tenant_id = ? ORDER BY rowid", (tenant_id,)
        ).fetchall()
        return cls(
            rowid=np.array([r[0] for r in rows], dtype=np.int64),
            words=np.array([r[1] for r in rows], dtype=np.float64),
        )


@dataclass(frozen=True)
class TenantColumns:
    """A tenant's columns, and what queries read of its rows since (kept by :class:`ColumnCache`):
    it goes with them, at the tenant's next write."""

    units: UnitColumns
    contexts: ContextColumns
    # the tenant's units without a context as queries decoded them, by id (the lexical store's
    # ``_read_by_ids``): its derived lines, which every order or summary question reads by the hundred
    lines: dict[str, MemoryUnit] = field(default_factory=dict, compare=False)
    # its statements as queries decoded them without their message: a question's selection reads a
    # hundred of them and their siblings, and each inflates its message
    statements: dict[str, MemoryUnit] = field(default_factory=dict, compare=False)
    # each term's rows of an index as a search walked them (:mod:`.search`): the same until a write
    walks: dict[Walked, npt.NDArray[np.int64]] = field(default_factory=dict, compare=False)
    # per layer searched (its token), each index's rows and mean length (BM25's N and average length)
    sizes: dict[str, dict[str, tuple[int, float]]] = field(default_factory=dict, compare=False)

    @property
    def rows(self) -> int:
        return len(self.units.rowid) + len(self.contexts.rowid)


# A tenant's rowids spanning at most this many times their count (a tenant alone in its file, or
# nearly) are looked up in a table of their span: a search of a long history looks up thousands of
# matches, and a binary search of each over the tenant's rows was a tenth of a query's time.
DENSE_SPAN = 4


@dataclass(frozen=True)
class Slots:
    """Each rowid's position among a tenant's sorted rowids, by a table from the first rowid on (-1:
    not the tenant's), where they are dense enough (:data:`DENSE_SPAN`); else none (a binary search)."""

    first: int
    table: npt.NDArray[np.intp] | None

    @classmethod
    def made(cls, rowids: npt.NDArray[np.int64]) -> Slots:
        if not len(rowids) or rowids[-1] - rowids[0] + 1 > DENSE_SPAN * len(rowids):
            return cls(0, None)
        first = int(rowids[0])
        table = np.full(int(rowids[-1]) - first + 1, -1, dtype=np.intp)
        table[rowids - first] = np.arange(len(rowids), dtype=np.intp)
        return cls(first, table)

    def positions(
        self, sorted_rowids: npt.NDArray[np.int64], rowids: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.intp]:
        """:func:`found_at`, by the table where there is one."""
        if self.table is None:
            return found_at(sorted_rowids, rowids)
        at = rowids - self.first
        inside = (at >= 0) & (at < len(self.table))
        out = np.full(len(rowids), -1, dtype=np.intp)
        out[inside] = self.table[at[inside]]
        return out


def found_at(sorted_rowids: npt.NDArray[np.int64], rowids: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    """The positions of ``rowids`` in ``sorted_rowids``, -1 where absent."""
    if not len(sorted_rowids):
        return np.full(len(rowids), -1, dtype=np.intp)
    pos = np.minimum(np.searchsorted(sorted_rowids, rowids), len(sorted_rowids) - 1)
    return np.where(sorted_rowids[pos] == rowids, pos, -1)


class ColumnCache:
    """The tenants' columns, read on a search and dropped on a write. Not locked: its store calls it
    under its own lock."""

    def __init__(
        self,
        db: sqlite3.Connection,
        cache_rows: int = CACHE_ROWS,
        kept_units: int = KEPT_UNITS,
        kept_rowids: int = KEPT_ROWIDS,
    ) -> None:
        self._db = db
        self.cache_rows, self.kept_units, self.kept_rowids = cache_rows, kept_units, kept_rowids
        self._cache: OrderedDict[str, TenantColumns] = OrderedDict()  # oldest first
        self._rows = 0  # the rows in ``_cache``, kept as it changes
        self._units = self._rowids = 0  # what ``_cache`` keeps of what queries read (:meth:`keep_unit`)
        self._file_rows: dict[str, int] | None = None  # per index, the rows of every tenant
        self._version = self._data_version()

    def _data_version(self) -> int:
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def get(self, tenant_id: str, number: int) -> TenantColumns:
        version = self._data_version()
        if version != self._version:  # another connection committed: any tenant may have changed
            self._cache.clear()
            self._rows = self._units = self._rowids = 0
            self._file_rows = None
            self._version = version
        found = self._cache.get(tenant_id)
        if found is not None:
            self._cache.move_to_end(tenant_id)  # now the most recent
            return found
        found = TenantColumns(UnitColumns.read(self._db, number), ContextColumns.read(self._db, tenant_id))
        self._cache[tenant_id] = found
        self._rows += found.rows
        while len(self._cache) > 1 and self._rows > self.cache_rows:
            self.drop(next(iter(self._cache)))
        return found

    def cached(self, tenant_id: str) -> TenantColumns | None:
        """The tenant's columns if they are read and current; None (nothing read) otherwise."""
        if self._data_version() != self._version:
            return None  # another connection committed: :meth:`get` reads them again
        return self._cache.get(tenant_id)

    def drop(self, tenant_id: str) -> TenantColumns | None:
        """Forget the tenant's columns (its rows are being written); they are returned."""
        self._file_rows = None
        found = self._cache.pop(tenant_id, None)
        if found is not None:
            self._rows -= found.rows
            self._units -= len(found.lines) + len(found.statements)
            self._rowids -= sum(len(rows) for rows in found.walks.values())
        return found

    def keep_unit(self, tenant_id: str, columns: TenantColumns, unit: MemoryUnit, *, line: bool) -> None:
        """Keep ``unit``, as a query decoded it without its context (``line``: it has none), with the
        tenant's ``columns`` while they are the tenant's and :data:`KEPT_UNITS` allows."""
        kept = columns.lines if line else columns.statements
        if unit.id in kept or self._cache.get(tenant_id) is not columns or self._units >= self.kept_units:
            return
        kept[unit.id] = unit
        self._units += 1

    def keep_walk(
        self, tenant_id: str, columns: TenantColumns, walked: Walked, rowids: npt.NDArray[np.int64]
    ) -> None:
        """Keep a term's rows as a search walked them with the tenant's ``columns`` (while they are
        the tenant's and :data:`KEPT_ROWIDS` allows)."""
        if walked in columns.walks or self._cache.get(tenant_id) is not columns:
            return
        if self._rowids + len(rowids) > self.kept_rowids:
            return
        columns.walks[walked] = rowids
        self._rowids += len(rowids)

    def file_rows(self, side: str) -> int:
        """The rows of the index of ``side`` (units, contexts) of all tenants (call after :meth:`get`)."""
        if self._file_rows is None:
            self._file_rows = dict(self._db.execute("SELECT side, sum(rows) FROM word_counts GROUP BY side"))
        return self._file_rows.get(side, 0)

    def __contains__(self, tenant_id: str) -> bool:
        return tenant_id in self._cache
