"""The ``/ui/`` page's listing in SQL: its filters are clauses on the units' own columns (session,
kind, superseded, status, days), answered from their indexes; a page decodes only the units it shows,
and the counts group those columns, reading no document."""

from __future__ import annotations

from collections import Counter

from simplemem.processors.stores.protocols import DERIVED_STATUSES, Listing, ListingCounts
from simplemem.processors.stores.sqlite_lexical.base import SqliteLexicalBase, read_units
from simplemem.processors.stores.sqlite_lexical.schema import EVENT_END_SQL, FACT_KIND, JOIN_CONTEXT
from simplemem.schemas.memory import MemoryStatus, MemoryUnit

# an active unit's status column is NULL; a derived line's holds its kind (it is active too)
_LIVE = "(u.status IS NULL OR u.status IN ({}))".format(",".join(f"'{s}'" for s in DERIVED_STATUSES))
_STATES = {
    "active": f"{_LIVE} AND u.superseded IS NULL",
    "superseded": f"{_LIVE} AND u.superseded IS NOT NULL",
    "archived": f"u.status = '{MemoryStatus.ARCHIVED.value}'",
}


def listing_where(flt: Listing, number: int) -> tuple[str, list[object]]:
    """The WHERE clause (on ``units u``) of a listing's filters, and its arguments."""
    sql = ["u.tenant_id = ?"]
    args: list[object] = [number]
    if flt.session is not None:
        sql.append("u.session = ?")
        args.append(flt.session)
    if flt.kind is not None:
        if flt.kind == FACT_KIND:
            sql.append("u.kind IS NULL")
        else:
            sql.append("u.kind = ?")
            args.append(flt.kind)
    if flt.state is not None:
        sql.append(f"({_STATES[flt.state]})")
    if flt.first_day is not None:
        sql.append(f"{EVENT_END_SQL} >= ?")
        args.append(flt.first_day.toordinal())
    if flt.last_day is not None:
        sql.append("u.event_start <= ?")
        args.append(flt.last_day.toordinal())
    return " AND ".join(sql), args


def _state(status: str | None, superseded: int | None) -> str:
    if status == MemoryStatus.ARCHIVED.value:
        return "archived"
    return "superseded" if superseded is not None else "active"


class SqliteListing(SqliteLexicalBase):
    def listing(self, tenant_id: str, flt: Listing, offset: int, limit: int) -> tuple[list[MemoryUnit], int]:
        number = self._number(tenant_id)
        where, args = listing_where(flt, number)
        with self._lock:
            rows = self._db.execute(
                f"SELECT u.id, u.doc, c.text FROM units u {JOIN_CONTEXT} WHERE {where} "
                "ORDER BY u.stated_at, u.rowid LIMIT ? OFFSET ?",
                [tenant_id, *args, limit, offset],
            ).fetchall()
            total = self._db.execute(f"SELECT COUNT(*) FROM units u WHERE {where}", args).fetchone()[0]
        return read_units(rows, tenant_id, with_context=False), int(total)

    def listing_counts(self, tenant_id: str, flt: Listing, sessions: int) -> ListingCounts:
        number = self._number(tenant_id)
        where, args = listing_where(flt, number)
        with self._lock:
            rows = self._db.execute(
                "SELECT u.status, u.superseded IS NOT NULL, u.kind, u.session, COUNT(*) FROM units u "
                f"WHERE {where} GROUP BY 1, 2, 3, 4",
                args,
            ).fetchall()
        states: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        by_session: Counter[str] = Counter()
        for status, superseded, kind, session, n in rows:
            states[_state(status, superseded or None)] += n
            kinds[kind or FACT_KIND] += n
            by_session[session or ""] += n
        return ListingCounts(
            matching=sum(states.values()),
            by_state=dict(states),
            by_kind=dict(kinds),
            sessions=dict(by_session.most_common(sessions)),
            sessions_total=len(by_session),
        )
