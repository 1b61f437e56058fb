"""BM25 search of the lexical file, scored by the store per tenant (:mod:`sqlite_bm25`): a unit's
score is its own words' plus its context's, under the symbolic filter.

The FTS indexes give each term's matching rowids; the rest is arithmetic over arrays: each row's
length, the filter's columns and the id a hit is named by come from the tenant's :mod:`.columns`,
read once, not from a join per match (a few microseconds each, thousands of matches a search in a
long history)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from simplemem.processors.language.text import query_terms
from simplemem.processors.stores.protocols import Hit, SymbolicFilter
from simplemem.processors.stores.sqlite_bm25 import (
    COMMON_ROWS,
    Matches,
    Walk,
    affordable,
    each_term,
    found_pairs,
    latest_of,
    numbered,
    saturation,
    summed,
    union,
    walk,
    weighed,
)
from simplemem.processors.stores.sqlite_keys import unit_id
from simplemem.processors.stores.sqlite_lexical.base import SearchedRows
from simplemem.processors.stores.sqlite_lexical.columns import TenantColumns, Walked, found_at
from simplemem.processors.stores.sqlite_lexical.names import SqliteNames
from simplemem.processors.stores.sqlite_lexical.schema import (
    layer_token,
    tenant_token,
)
from simplemem.processors.stores.sqlite_vectors import best_first

# The share of its context's BM25 score a unit gets (its own words count fully).
CONTEXT_WEIGHT = 1.0
# Matches each FTS side keeps per unit asked for, before the sum (a common word matches thousands of
# contexts, each shared by dozens of units). The unit side is filtered before its cut, so a date range
# or a person filter never empties it.
SEARCH_REACH = 4
# A layer holding at least this share of its index's rows (a tenant alone in its file, or nearly) is
# walked by its terms alone, its rows kept after (:meth:`SqliteSearch._matched`).
WHOLE_FILE_SHARE = 0.5

Scored = tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]  # positions and their scores


class SqliteSearch(SqliteNames):  # a person filter reads the names (:meth:`SqliteNames._named`)
    def search(
        self, tenant_id: str, query: str, limit: int, flt: SymbolicFilter, *, read: bool = False
    ) -> list[Hit]:
        """``read`` is not needed here: a unit is read in microseconds, and only those used are."""
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        reach = limit * SEARCH_REACH
        own_token = layer_token(tenant_id, bool(flt.derived))
        with self._lock:
            columns = self._columns.get(tenant_id, self._tenants.number(tenant_id))
            held = self._together_rows(columns, tenant_id)
            asked = (query, limit, flt)
            if held is not None and asked in held.found:
                return list(held.found[asked])
            sizes = columns.sizes.get(own_token)  # the tenant's counts: the same until a write
            if sizes is None:
                sizes = columns.sizes[own_token] = self._sizes(tenant_id, own_token)
            derived = bool(flt.derived)
            own = self._matched(
                "units", own_token, terms, sizes["units"][0], lambda r: columns.units.in_layer(r, derived)
            )
            # a derived line has no context: its own words are its score
            ctx = None
            if not derived:
                ctx = self._matched(
                    "contexts",
                    tenant_token(tenant_id),
                    terms,
                    sizes["contexts"][0],
                    lambda r: columns.contexts.positions(r) >= 0,
                )
            named = self._named(tenant_id, flt.names) if flt.names else None
        units = columns.units
        pos, score = summed_at(units.positions(own.rowid), own.weight, len(units.rowid))
        score *= saturation(units.words[pos], sizes["units"][1])
        pos, score = _kept(pos, score, limit if ctx is None else reach, passing(columns, pos, flt, named))
        if ctx is not None:
            around = _around(columns, ctx, sizes["contexts"][1], reach)
            reached, via = units.of_contexts(columns.contexts.rowid[around[0]])
            ok = passing(columns, reached, flt, named)
            pos, score = summed(
                np.concatenate([pos, reached[ok]]),
                np.concatenate([score, around[1][via[ok]] * CONTEXT_WEIGHT]),
                len(units.rowid),  # positions: thousands reached through common contexts are counted
            )
            pos, score = _kept(pos, score, limit)
        hits = [Hit(unit_id(units.key[p]), s) for p, s in zip(pos.tolist(), score.tolist(), strict=True)]
        if held is not None:
            held.found[asked] = hits
        return list(hits)

    def _matched(
        self,
        side: str,
        token: str,
        terms: list[str],
        rows: int,
        in_layer: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]],
    ) -> Matches:
        """The matches of the layer of ``token`` (``rows`` rows) in the index of ``side`` (units,
        contexts), each with its term's weight. A layer that holds most of the index's rows
        (:data:`WHOLE_FILE_SHARE`) is walked without its token and kept by ``in_layer`` (which rowids
        are its): intersecting every term with the token's rows cost more than the term's own."""
        fts = f"{side}_fts"
        whole = rows >= WHOLE_FILE_SHARE * self._columns.file_rows(side)
        how = self._walk(fts, token, terms, rows, whole=whole)
        pairs = self._pairs(how, in_layer)
        if whole:
            pairs = pairs[in_layer(pairs[:, 0])]
        return weighed(latest_of(pairs, how.latest), how.weights, rows)

    def _together_rows(
        self, columns: TenantColumns | None = None, tenant_id: str = ""
    ) -> SearchedRows | None:
        """What this thread's :meth:`one_query` has walked (None: outside one), and earlier queries
        since the tenant's last write, for the tenant's ``columns`` (other columns than the last
        search's: it is forgotten, since a write to the tenant drops its columns)."""
        held: SearchedRows | None = getattr(self._together, "rows", None)
        if held is None or columns is None or held.columns is columns:
            return held
        self._together.rows = SearchedRows(columns, tenant_id)
        return self._together.rows

    def _pairs(
        self, how: Walk, in_layer: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.bool_]]
    ) -> npt.NDArray[np.int64]:
        """The (rowid, term's number) matches of a walk; within :meth:`one_query`, a term's rows
        read before by this thread are not walked again: they are the same whatever else a search
        asks (:class:`TermRows`), so each search returns what it returns alone. A term walked within
        the tenant's token (``in_layer``: which rowids are the token's) whose every row in the file
        was walked before (a statements' search of a tenant alone in its file walks its terms bare)
        is taken from those rows: a derived line's search asks the same words."""
        held = self._together_rows()
        if held is None:
            return found_pairs(self._db.execute(how.match_sql, how.match_args).fetchone()[0], len(how.parts))
        read = held.walks
        unread = [part for part in dict.fromkeys(how.parts) if (how.fts, part) not in read]
        for part in unread:
            every = read.get((how.fts, part.unbounded)) if part.unbounded is not None else None
            if every is not None:
                self._walked(held, (how.fts, part), latest_rows(every[in_layer(every)], part.latest))
        unread = [part for part in unread if (how.fts, part) not in read]
        if unread:
            sql, args = union(how.fts, unread)
            found = each_term(self._db.execute(sql, args).fetchone()[0], len(unread))
            for part, rows in zip(unread, found, strict=True):
                self._walked(held, (how.fts, part), rows)
        return numbered([read[(how.fts, part)] for part in how.parts])

    def _walked(self, held: SearchedRows, walked: Walked, rows: npt.NDArray[np.int64]) -> None:
        """A term's rows as this query walked them, for its next searches, and for the next
        queries while the tenant's columns stand (:meth:`~.columns.ColumnCache.keep_walk`)."""
        held.walks[walked] = rows
        if held.columns is not None:
            self._columns.keep_walk(held.tenant, held.columns, walked, rows)

    def _walk(self, fts: str, token: str, terms: list[str], rows: int, *, whole: bool) -> Walk:
        """How this search reads an index (:func:`walk`; ``whole``: its terms without the layer's
        token where that costs less): in a layer too small for any term to be common, every term in
        every row; else the :func:`affordable` terms in their latest rows."""
        if rows <= COMMON_ROWS:
            return walk(fts, token, terms, rows, None, whole=whole)
        counts = self._frequencies.counts(self._db, fts, token, terms, rows)
        return walk(fts, token, affordable(terms, counts, rows), rows, counts, whole=whole)

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


def latest_rows(rowids: npt.NDArray[np.int64], latest: int) -> npt.NDArray[np.int64]:
    """The ``latest`` highest of ``rowids`` (0: all), highest first (what ``ORDER BY rowid DESC
    LIMIT`` returns)."""
    if not latest:
        return rowids
    return np.sort(rowids)[::-1][:latest]


def summed_at(pos: npt.NDArray[np.intp], weight: npt.NDArray[np.float64], rows: int) -> Scored:
    """The distinct positions found (-1: not a row of the tenant's ``rows``) and the sum of their
    weights."""
    found = pos >= 0
    return summed(pos[found], weight[found], rows)


def passing(
    columns: TenantColumns,
    pos: npt.NDArray[np.intp],
    flt: SymbolicFilter,
    named: npt.NDArray[np.int64] | None,
) -> npt.NDArray[np.bool_]:
    """Which units at ``pos`` meet the filter (``named``: the rowids of the units about its persons)."""
    ok = columns.units.passing(pos, flt)
    if named is not None:
        ok &= found_at(named, columns.units.rowid[pos]) >= 0
    return ok


def _kept(
    pos: npt.NDArray[np.intp],
    score: npt.NDArray[np.float64],
    limit: int,
    ok: npt.NDArray[np.bool_] | None = None,
) -> Scored:
    """The ``limit`` best of the scored positions (those that are ``ok``), best first."""
    if ok is not None:
        pos, score = pos[ok], score[ok]
    best = latest_best(score, limit)
    return pos[best], score[best]


def _around(columns: TenantColumns, ctx: Matches, mean: float, reach: int) -> Scored:
    """The ``reach`` best contexts of the matches (their positions) with their BM25 scores."""
    contexts = columns.contexts
    pos, score = summed_at(contexts.positions(ctx.rowid), ctx.weight, len(contexts.rowid))
    score *= saturation(contexts.words[pos], mean)
    return _kept(pos, score, reach)


def latest_best(score: npt.NDArray[np.float64], limit: int) -> npt.NDArray[np.intp]:
    """The indexes of the ``limit`` best of ``score`` (in row order), best first; of equal scores the
    later row first (what is said last is likelier to hold now)."""
    last = len(score) - 1
    return last - best_first(score[::-1], limit)
