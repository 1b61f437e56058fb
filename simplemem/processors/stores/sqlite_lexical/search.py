"""BM25 search of the lexical file, scored by the store per tenant (:mod:`sqlite_bm25`): a unit's
score is its own words' plus its context's, under the symbolic filter."""

from __future__ import annotations

from simplemem.processors.language.text import query_terms
from simplemem.processors.stores.protocols import Hit, SymbolicFilter
from simplemem.processors.stores.sqlite_bm25 import COMMON_ROWS, Walk, affordable, saturation, walk
from simplemem.processors.stores.sqlite_keys import unit_id
from simplemem.processors.stores.sqlite_lexical.base import SqliteLexicalBase
from simplemem.processors.stores.sqlite_lexical.names import names_match
from simplemem.processors.stores.sqlite_lexical.schema import (
    ACTIVE_SQL,
    EVENT_END_SQL,
    layer_token,
    tenant_token,
)
from simplemem.schemas.memory import MemoryStatus

# The share of its context's BM25 score a unit gets (its own words count fully).
CONTEXT_WEIGHT = 1.0
# Matches each FTS side keeps per unit asked for, before filters and the sum (filters may drop some).
SEARCH_REACH = 4


class SqliteSearch(SqliteLexicalBase):
    def search(
        self, tenant_id: str, query: str, limit: int, flt: SymbolicFilter, *, read: bool = False
    ) -> list[Hit]:
        """``read`` is not needed here: a unit is read in microseconds, and only those used are."""
        terms = query_terms(query)
        if not terms:
            return []
        # The plan is pinned to the matches: each unit is reached from a match by its rowid or its
        # context (``+`` and ``INDEXED BY``). Left to choose, SQLite walked the tenant's time index
        # (for a date or ``stated_before`` filter), every unit of the tenant per search.
        # Each FTS side keeps its best matches only (a common word matches thousands of contexts, each
        # shared by dozens of units); the unit side is filtered before its cut, so a date range or a
        # person filter never empties it. Context matches add to the units they reach.
        reach = limit * SEARCH_REACH
        number = self._number(tenant_id)
        own_token = layer_token(tenant_id, bool(flt.derived))
        with self._lock:
            sizes = self._sizes(tenant_id, own_token)
            own = self._walk("units_fts", own_token, terms, sizes["units"][0])
            ctx = self._walk("contexts_fts", tenant_token(tenant_id), terms, sizes["contexts"][0])
        sql = [
            f"WITH own_m(r, t) AS ({own.match_sql}),",
            f"own_w(t, w) AS ({own.weight_sql.format('own_m')}),",
            f"own AS (SELECT u.rowid AS r, SUM(w.w) * {saturation('u')} AS s FROM own_m m",
            "JOIN own_w w ON w.t = m.t JOIN units u ON u.rowid = m.r WHERE +u.tenant_id = ?",
        ]
        args: list[object] = [*own.match_args, *own.weight_args, sizes["units"][1], number]
        where_filter(sql, args, flt, tenant_id)
        if flt.derived:  # a derived line has no context: its own words are its score
            sql += [
                "GROUP BY u.rowid ORDER BY s DESC LIMIT ?)",
                "SELECT u.id, o.s FROM own o JOIN units u ON u.rowid = o.r ORDER BY o.s DESC",
            ]
        else:
            sql += [
                "GROUP BY u.rowid ORDER BY s DESC LIMIT ?),",
                f"ctx_m(r, t) AS ({ctx.match_sql}),",
                f"ctx_w(t, w) AS ({ctx.weight_sql.format('ctx_m')}),",
                f"around AS (SELECT c.rowid AS context, SUM(w.w) * {saturation('c')} AS s FROM ctx_m m",
                "JOIN ctx_w w ON w.t = m.t JOIN contexts c ON c.rowid = m.r AND c.tenant_id = ?",
                "GROUP BY c.rowid ORDER BY s DESC LIMIT ?),",
                "scored AS (SELECT r, s FROM own UNION ALL",
                f"SELECT u.rowid, a.s * {CONTEXT_WEIGHT} FROM around a",
                "JOIN units u INDEXED BY units_by_context ON u.context = a.context",
                "WHERE u.tenant_id = ?",
            ]
            args += [reach, *ctx.match_args, *ctx.weight_args, sizes["contexts"][1], tenant_id, reach, number]
            where_filter(sql, args, flt, tenant_id)
            # summed and cut before the ids are read: a context shared by 40 statements adds 40 rows
            sql += [
                "), best AS (SELECT r, SUM(s) AS s FROM scored GROUP BY r ORDER BY s DESC LIMIT ?)",
                "SELECT u.id, b.s FROM best b JOIN units u ON u.rowid = b.r ORDER BY b.s DESC",
            ]
        args.append(limit)
        with self._lock:
            rows = self._db.execute(" ".join(sql), args).fetchall()
        return [Hit(unit_id(key), float(score)) for key, score in rows]

    def _walk(self, fts: str, token: str, terms: list[str], rows: int) -> Walk:
        """How this search reads an index (:func:`walk`): in a layer too small for any term to be
        common, every term in every row; else the :func:`affordable` terms in their latest rows."""
        if rows <= COMMON_ROWS:
            return walk(fts, token, terms, rows, None)
        counts = self._frequencies.counts(self._db, fts, token, terms, rows)
        return walk(fts, token, affordable(terms, counts, rows), rows, counts)

    def _sizes(self, tenant_id: str, own_token: str) -> dict[str, tuple[int, float]]:
        """Per index, the rows of the layer searched and their mean length (BM25's N and average
        length): the units' of ``own_token``, the tenant's contexts'."""
        sizes = {"units": (0, 1.0), "contexts": (0, 1.0)}
        wanted = {("units", own_token), ("contexts", tenant_token(tenant_id))}
        for token, side, rows, words in self._db.execute(
            "SELECT tenant, side, rows, words FROM word_counts WHERE tenant IN (?,?)",
            (own_token, tenant_token(tenant_id)),
        ):
            if (side, token) in wanted:
                sizes[side] = (rows, words / rows if rows > 0 else 1.0)
        return sizes


def where_filter(sql: list[str], args: list[object], flt: SymbolicFilter, tenant_id: str) -> None:
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
    if flt.names:
        marks = ",".join("?" * len(flt.names))
        sql.append(
            "AND (EXISTS (SELECT 1 FROM names n WHERE n.tenant_id = u.tenant_id AND n.id = u.id "
            f"AND n.name IN ({marks})) OR u.rowid IN (SELECT rowid FROM units_fts WHERE units_fts MATCH ?))"
        )
        args += [n.lower() for n in flt.names]
        args.append(names_match(tenant_id, flt.names))
