"""What every concern of the SQLite lexical store shares: the connection and its lock, the tenants'
numbers, a unit's FTS row and word counts, and reading units back with their contexts."""

from __future__ import annotations

import threading
from collections import ChainMap
from collections.abc import Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from simplemem.processors.stores.protocols import Hit, SymbolicFilter
from simplemem.processors.stores.sqlite_bm25 import TermFrequencies
from simplemem.processors.stores.sqlite_docs import StoredContext, open_context, read_unit
from simplemem.processors.stores.sqlite_keys import TenantNumbers, unit_id, unit_key
from simplemem.processors.stores.sqlite_lexical.columns import ColumnCache, TenantColumns, Walked
from simplemem.processors.stores.sqlite_lexical.schema import (
    JOIN_CONTEXT,
    fts_values,
    open_lexical_file,
    tenant_token,
)
from simplemem.schemas.memory import MemoryUnit

# a stored row as a query read it: tenant, with its context or not, key, document, stored context
RowKey = tuple[object, ...]


@dataclass
class SearchedRows:
    """What one query's searches have read of the tenant's ``columns`` (search.py): each term's rows
    of an index (the same while the columns are the same: a write to the tenant drops them), those
    earlier queries walked (kept with the columns) included; and each search's hits, by what it asked
    (its text, limit and filter)."""

    columns: TenantColumns | None
    tenant: str = ""  # whose columns
    walks: MutableMapping[Walked, npt.NDArray[np.int64]] = field(init=False)
    found: dict[tuple[str, int, SymbolicFilter], list[Hit]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.walks = ChainMap({}, self.columns.walks if self.columns is not None else {})


class SqliteLexicalBase:
    """The file and the writes of its indexes; the concerns' classes add the protocol's methods."""

    def __init__(self, path: Path) -> None:
        self._db = open_lexical_file(path)
        self._lock = threading.Lock()
        self._tenants = TenantNumbers(self._db)
        self._frequencies = TermFrequencies()
        self._columns = ColumnCache(self._db)  # what a search reads of each row (dropped on writes)
        self._together = threading.local()  # what a thread's query has read (:meth:`one_query`)

    def _number(self, name: str) -> int:
        """The tenant's number in this file (:class:`TenantNumbers`), for a read: it takes the lock
        (a write holds it already and asks ``self._tenants``)."""
        with self._lock:
            return self._tenants.number(name)

    @contextmanager
    def one_query(self) -> Iterator[None]:
        """Within it, this thread's calls are one query's: a term's rows of an index are walked once
        (a question searched whole, by each of its aspects and for each kind of derived line walks
        the same terms: :meth:`~.search.SqliteSearch._pairs`), a search asked again is answered by
        the hits it found (a query may make its searches ahead, while its vectors are embedded), a
        stored unit read again is not decoded again (:meth:`_decoded`), and the memories about the
        question's persons are found once (:meth:`~.names.SqliteNames._named`). Each call returns
        what it returns alone; what was read is dropped at the end."""
        if getattr(self._together, "units", None) is not None:  # an outer scope's
            yield
            return
        self._together.rows, self._together.units, self._together.named = SearchedRows(None), {}, {}
        try:
            yield
        finally:
            self._together.rows = self._together.units = self._together.named = None

    def _decoded(
        self,
        rows: Sequence[tuple[bytes | str, bytes, bytes | str | None]],
        tenant_id: str,
        *,
        with_context: bool,
    ) -> list[MemoryUnit]:
        """:func:`read_units`; within :meth:`one_query`, a row decoded before in this query (the same
        key, document and context: what the file holds now) is not decoded again."""
        decoded: dict[RowKey, MemoryUnit] | None = getattr(self._together, "units", None)
        if decoded is None:
            return read_units(rows, tenant_id, with_context=with_context)
        keys: list[RowKey] = [(tenant_id, with_context, *row) for row in rows]
        new = {k: row for k, row in zip(keys, rows, strict=True) if k not in decoded}
        decoded.update(
            zip(new, read_units(list(new.values()), tenant_id, with_context=with_context), strict=True)
        )
        return [decoded[k] for k in keys]

    def _read_by_ids(self, tenant_id: str, ids: Sequence[str], *, with_context: bool) -> list[MemoryUnit]:
        """The units by id, in the order asked (those found). Within :meth:`one_query`, a unit that an
        earlier query decoded since the tenant's last write without a context (``TenantColumns``: its
        derived lines, which an order or a summary question reads by the hundred; its statements, read
        without their message) is not read from the file again."""
        if not ids:
            return []
        number = self._number(tenant_id)
        inside = getattr(self._together, "units", None) is not None
        with self._lock:
            # the columns as they are when the rows are read: a write after drops them, and what is
            # decoded here goes with them
            columns = self._columns.cached(tenant_id) if inside else None
            lines = {} if columns is None else columns.lines
            statements = {} if columns is None or with_context else columns.statements
            by_id = {i: lines[i] for i in ids if i in lines}
            by_id.update((i, statements[i]) for i in ids if i in statements)
            unread = [unit_key(i) for i in dict.fromkeys(ids) if i not in by_id]
            marks = ",".join("?" * len(unread))
            rows = (
                self._db.execute(
                    f"SELECT u.id, u.doc, c.text FROM units u {JOIN_CONTEXT} "
                    f"WHERE u.tenant_id=? AND u.id IN ({marks})",
                    [tenant_id, number, *unread],
                ).fetchall()
                if unread
                else []
            )
        decoded = self._decoded(rows, tenant_id, with_context=with_context)
        with self._lock:
            for row, unit in zip(rows, decoded, strict=True):
                by_id[unit.id] = unit
                if columns is not None and (row[2] is None or not with_context):
                    self._columns.keep_unit(tenant_id, columns, unit, line=row[2] is None)
        return [by_id[i] for i in ids if i in by_id]

    def _count_words(self, token: str, side: str, rows: int, words: int) -> None:
        """Add a row (or take one away: negative) to the counts of the tenant's ``token`` in an index;
        the counts of an index the tenant has no row in any more go (a forgotten tenant leaves nothing
        here)."""
        self._db.execute(
            "INSERT INTO word_counts VALUES (?,?,?,?) ON CONFLICT (tenant, side) DO UPDATE "
            "SET rows = rows + excluded.rows, words = words + excluded.words",
            (token, side, rows, words),
        )
        if rows < 0:
            self._db.execute("DELETE FROM word_counts WHERE tenant=? AND side=? AND rows <= 0", (token, side))

    def _index_context(
        self, rowid: int, tenant_id: str, body: str, words: int, *, delete: bool = False
    ) -> None:
        """Add a context's row to ``contexts_fts`` and its tenant's counts (or take it out);
        ``words`` is its ``words`` column."""
        self._index("contexts", rowid, tenant_token(tenant_id), body, words, delete=delete)

    def _index_unit(self, rowid: int | None, u: MemoryUnit, words: int, *, delete: bool = False) -> None:
        """Add an active unit's row to ``units_fts`` and its tenant's counts (or take it out), by
        :func:`fts_values`; ``words`` is its ``words`` column."""
        self._index("units", rowid, *fts_values(u), words, delete=delete)

    def _index(
        self, side: str, rowid: int | None, token: str, body: str, words: int, *, delete: bool
    ) -> None:
        """One row into the FTS index of ``side`` (units, contexts) and the counts of the tenant's
        ``token``, or out of both (FTS5's ``delete`` command, with the values it was indexed with)."""
        fts = f"{side}_fts"
        columns, values = (
            (f"{fts}, rowid, tenant, body", "'delete',?,?,?") if delete else ("rowid, tenant, body", "?,?,?")
        )
        self._db.execute(f"INSERT INTO {fts} ({columns}) VALUES ({values})", (rowid, token, body))
        sign = -1 if delete else 1
        self._count_words(token, side, sign, sign * words)


def read_units(
    rows: Sequence[tuple[bytes | str, bytes, bytes | str | None]],
    tenant_id: str,
    *,
    with_context: bool = True,
) -> list[MemoryUnit]:
    """Rows of (key, doc, stored context) as units; a context that several rows share (a message's
    statements) is inflated once."""
    opened: dict[bytes | str, StoredContext | None] = {}
    units = []
    for key, doc, stored in rows:
        if stored is not None and stored not in opened:
            opened[stored] = open_context(stored)
        context = None if stored is None else opened[stored]
        units.append(read_unit(unit_id(key), tenant_id, doc, context, with_context=with_context))
    return units
