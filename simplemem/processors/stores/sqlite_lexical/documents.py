"""The units themselves (the document store, :mod:`sqlite_docs`): a write puts a unit's row, its
shared context, its FTS row, its person names and its links in one transaction; a delete takes all of
them out, its context with its last unit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime

from simplemem.processors.stores.protocols import SymbolicFilter, day_range, index_names, search_status
from simplemem.processors.stores.sqlite_bm25 import word_count
from simplemem.processors.stores.sqlite_docs import (
    HEADER_MIN_UNITS,
    StoredContext,
    context_text,
    encode_doc,
    open_context,
    read_unit,
    shared_header,
    stored_context,
    stored_header,
)
from simplemem.processors.stores.sqlite_keys import null_if, unit_key
from simplemem.processors.stores.sqlite_lexical.base import SqliteLexicalBase, read_units
from simplemem.processors.stores.sqlite_lexical.provenance import link, unlink_context, unlink_own
from simplemem.processors.stores.sqlite_lexical.schema import (
    ACTIVE_SQL,
    EVENT_END_SQL,
    FACT_KIND,
    JOIN_CONTEXT,
    body,
    context_hash,
)
from simplemem.schemas.memory import MemoryStatus, MemoryUnit

# a unit's context as one write put it: its rowid and its stored form (none for a unit without one)
_PutContext = tuple[int | None, StoredContext | None]


class SqliteDocuments(SqliteLexicalBase):
    def upsert(self, units: Sequence[MemoryUnit]) -> None:
        if not units:
            return
        with self._lock:
            for tenant in {u.tenant_id for u in units}:
                self._columns.drop(tenant)
            db = self._db
            db.execute("BEGIN")
            put: dict[tuple[str, str], _PutContext] = {}
            sharing = Counter((u.tenant_id, u.context) for u in units if u.context)
            try:
                for u in units:
                    number = self._tenants.number(u.tenant_id, create=True)
                    dropped = self._delete_one(u.tenant_id, u.id)
                    if dropped is not None:  # the same unit twice in one batch: its context is gone
                        put = {key: done for key, done in put.items() if done[0] != dropped}
                    headed = sharing[(u.tenant_id, u.context or "")] >= HEADER_MIN_UNITS
                    self._insert(u, number, self._put_context(u, put, headed=headed))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _insert(self, u: MemoryUnit, number: int, put: _PutContext) -> None:
        """Write a unit's row, its FTS row (when active), its names and its links; ``number`` is
        its tenant's."""
        unit = unit_key(u.id)
        start, end = day_range(u)
        context, stored = put
        words = word_count(body(u))
        cursor = self._db.execute(
            "INSERT INTO units (id, tenant_id, doc, status, event_start, event_end, stated_at,"
            " context, words, session, kind, superseded) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                unit,
                number,
                encode_doc(u, stored),
                null_if(search_status(u), MemoryStatus.ACTIVE.value),
                start,
                null_if(end, start),
                datetime.fromisoformat(u.stated_at).timestamp(),
                context,
                words,
                u.session_id,
                null_if(u.kind.value, FACT_KIND),
                1 if u.superseded_by else None,
            ),
        )
        row = cursor.lastrowid
        if u.status == MemoryStatus.ACTIVE:
            self._index_unit(row, u, words)
        self._db.executemany("INSERT INTO names VALUES (?,?,?)", [(number, n, unit) for n in index_names(u)])
        link(self._db, u, number, row, context)

    def _put_context(
        self, unit: MemoryUnit, put: dict[tuple[str, str], _PutContext] | None = None, *, headed: bool = False
    ) -> _PutContext:
        """The rowid of the unit's context and the context as stored, stored (and indexed) if no unit
        of the tenant has it yet; stored ``headed``, with this unit's :func:`shared_header`. ``put``
        holds the contexts one upsert has put already (a long answer's statements share one: hashed,
        compressed and headed once)."""
        if not unit.context:
            return None, None
        key = (unit.tenant_id, unit.context)
        if put is not None and key in put:
            return put[key]
        header = shared_header(unit) if headed else b""
        ctx = context_hash(unit.context)
        words = word_count(unit.context)
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO contexts (tenant_id, hash, text, words) VALUES (?,?,?,?)",
            (unit.tenant_id, ctx, stored_context(unit.context, header), words),
        )
        if cursor.rowcount:
            rowid = int(cursor.lastrowid or 0)
            self._index_context(rowid, unit.tenant_id, unit.context, words)
        else:
            found = self._db.execute(
                "SELECT rowid, text FROM contexts WHERE tenant_id=? AND hash=?", (unit.tenant_id, ctx)
            ).fetchone()
            rowid, header = int(found[0]), stored_header(found[1])
        result = rowid, StoredContext(unit.context, header)
        if put is not None:
            put[key] = result
        return result

    def _drop_context_if_unused(self, tenant_id: str, context: int | None) -> int | None:
        """Delete the context if no unit names it any more; return its rowid if it was deleted."""
        if context is None:
            return None
        db = self._db
        if db.execute("SELECT 1 FROM units WHERE context=? LIMIT 1", (context,)).fetchone():
            return None
        row = db.execute(
            "SELECT rowid, text, words FROM contexts WHERE tenant_id=? AND rowid=?", (tenant_id, context)
        ).fetchone()
        if row is None:
            return None
        self._index_context(row[0], tenant_id, context_text(row[1]) or "", row[2], delete=True)
        db.execute("DELETE FROM contexts WHERE rowid=?", (row[0],))
        return int(row[0])

    def _delete_one(self, tenant_id: str, uid: str) -> int | None:
        """Delete a unit and all it indexed; return the rowid of its context if that went with it."""
        db = self._db
        number, unit = self._tenants.number(tenant_id), unit_key(uid)
        row = db.execute(
            f"SELECT u.rowid, u.context, u.doc, u.status, c.text, u.words FROM units u {JOIN_CONTEXT} "
            "WHERE u.tenant_id=? AND u.id=?",
            (tenant_id, number, unit),
        ).fetchone()
        if row is None:
            return None
        opened = open_context(row[4])
        stored = read_unit(uid, tenant_id, row[2], opened)
        if row[3] != MemoryStatus.ARCHIVED.value:  # an archived unit is not indexed (derived lines are)
            self._index_unit(row[0], stored, row[5], delete=True)
        db.execute("DELETE FROM units WHERE rowid=?", (row[0],))
        dropped = self._drop_context_if_unused(tenant_id, row[1])
        db.execute("DELETE FROM names WHERE tenant_id=? AND id=?", (number, unit))
        if row[1] is None:
            unlink_own(db, stored, number, row[0])
        else:
            unlink_context(db, stored, number, row[1], opened, dropped=dropped is not None)
        return dropped

    def delete(self, tenant_id: str, ids: Sequence[str]) -> None:
        with self._lock:
            self._columns.drop(tenant_id)
            self._db.execute("BEGIN")
            for uid in ids:
                self._delete_one(tenant_id, uid)
            self._db.execute("COMMIT")

    def get(self, tenant_id: str, ids: Sequence[str], *, with_context: bool = True) -> list[MemoryUnit]:
        return self._read_by_ids(tenant_id, ids, with_context=with_context)

    def iter_units(
        self, tenant_id: str, batch: int, flt: SymbolicFilter | None = None
    ) -> Iterator[list[MemoryUnit]]:
        """In the order stated, each batch from where the last ended (``units_by_time``); a unit
        outside ``flt`` is skipped before its document is read."""
        last: tuple[float, int] = (float("-inf"), -1)
        number = self._number(tenant_id)
        while True:
            sql = [
                f"SELECT u.stated_at, u.rowid, u.id, u.doc, c.text FROM units u {JOIN_CONTEXT}",
                "WHERE u.tenant_id=? AND (u.stated_at, u.rowid) > (?, ?)",
            ]
            args: list[object] = [tenant_id, number, *last]
            if flt is not None:
                within_filter(sql, args, flt)
            sql.append("ORDER BY u.stated_at, u.rowid LIMIT ?")
            args.append(batch)
            with self._lock:
                rows = self._db.execute(" ".join(sql), args).fetchall()
            if not rows:
                return
            last = (rows[-1][0], rows[-1][1])
            yield read_units([row[2:] for row in rows], tenant_id)

    def page(self, tenant_id: str, offset: int, limit: int) -> list[MemoryUnit]:
        number = self._number(tenant_id)
        with self._lock:
            rows = self._db.execute(
                f"SELECT u.id, u.doc, c.text FROM units u {JOIN_CONTEXT} "
                "WHERE u.tenant_id=? ORDER BY u.stated_at, u.id LIMIT ? OFFSET ?",
                (tenant_id, number, limit, offset),
            ).fetchall()
        return read_units(rows, tenant_id)


def within_filter(sql: list[str], args: list[object], flt: SymbolicFilter) -> None:
    """The filter's status and time constraints as SQL on ``units u`` (its names are not applied: the
    search takes them from the names table, :meth:`SqliteNames._named`)."""
    statuses = flt.statuses()
    if statuses == (MemoryStatus.ACTIVE.value,):
        sql.append(f"AND {ACTIVE_SQL}")
    else:  # the status column holds NULL for an active unit
        marks = ",".join("?" * len(statuses))
        sql.append(f"AND COALESCE(u.status, 'active') IN ({marks})")
        args += list(statuses)
    if flt.first_day is not None and flt.last_day is not None:
        stated = " OR (u.stated_at >= ? AND u.stated_at < ?)" if flt.or_stated else ""
        sql.append(f"AND (({EVENT_END_SQL} >= ? AND u.event_start <= ?){stated})")
        args += [flt.first_day.toordinal(), flt.last_day.toordinal()]
        if flt.or_stated:
            args += list(flt.stated_bounds())
    if flt.stated_before is not None:
        sql.append("AND u.stated_at <= ?")
        args.append(flt.stated_before.timestamp())
