"""How the embedded lexical store scores BM25 over FTS5 indexes that keep no positions.

Since lexical file version 15 both FTS indexes keep which rows hold a term, not where or how often
(``detail=none``, no row sizes): FTS5's ``bm25()`` needs what they no longer keep. The store scores
BM25 itself, per tenant, over the rowids its FTS match returns (each row's length and filters read
from arrays kept in memory: :mod:`.sqlite_lexical.columns`): a term counts once a row (a statement rarely holds
a word twice; a long message's repeats no longer outweigh its length), a row's length is its
``words`` column (:func:`word_count`), the tenant's row count and mean length are in ``word_counts``
(a word common in one tenant's history is not made rare by the others'). k1 and b are FTS5's and
Lucene's defaults, the idf Lucene's. Such an index answers no phrase and no column filter: a query
word FTS5 reads as two tokens asks for both (:func:`fts_term`).
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from cachetools import LRUCache

BM25_K1, BM25_B = 1.2, 0.75  # FTS5's bm25() defaults, used before version 15
_TOKEN = re.compile(r"[^\W_]+")  # FTS5's unicode61 tokens: letters and digits (an underscore splits)
# A search walks every row holding a term, so a term held by more than this share of a layer's rows
# and more than ``COMMON_ROWS`` of them costs far more than it tells (its idf is low): it is left out
# of the search, unless the query has fewer than ``MIN_TERMS`` rarer ones. A tenant with fewer rows
# than ``COMMON_ROWS`` is searched on every term.
COMMON_SHARE = 0.05
COMMON_ROWS = 1000
MIN_TERMS = 3
# A term is walked in at most this many of a large layer's rows, its latest (a long-lived tenant's
# history grows; what a search costs must not).
TERM_ROWS = 2000
# A remembered count is used until the layer's rows have changed by more than this share since.
STALE_SHARE = 0.1


def quote(term: str) -> str:
    """A string as an FTS5 query reads it literally."""
    return '"' + term.replace('"', '""') + '"'


def word_count(text: str) -> int:
    """A row's length for BM25 (FTS5's tokens, near enough: :data:`_TOKEN`)."""
    return len(_TOKEN.findall(text))


def fts_term(term: str) -> str:
    """A query term as an index without positions reads it: its tokens, all of them (no phrase)."""
    tokens = _TOKEN.findall(term) or [term]
    return " AND ".join(quote(t) for t in tokens)


def idf(holding: int, rows: int) -> float:
    """Lucene's BM25 idf of a term that ``holding`` of ``rows`` rows hold: never negative (FTS5's
    could be, for a word in most rows)."""
    return math.log(1 + (rows - holding + 0.5) / (holding + 0.5))


@dataclass(frozen=True)
class TermRows:
    """One term's part of a walk: its FTS query (``match``) and which of its rows are read: every row
    of the file that holds it (``bare``), else the tenant's, their ``latest`` only (0: all). The
    same part reads the same rows whatever the other terms of the walk. ``alone``: the term's own
    FTS query (a part that is not bare is the term's rows within the tenant's token)."""

    match: str
    bare: bool = False
    latest: int = 0
    alone: str = ""

    @property
    def unbounded(self) -> TermRows | None:
        """The bare part of the same term (every row of the file that holds it), of which this
        one's rows are those of the tenant's token, the latest ``latest``; None for a bare part."""
        return None if self.bare else TermRows(self.alone, True)

    def select(self, fts: str, n: int, i: int) -> str:
        """Its rows as ``rowid * n + i`` (``i``: its number of ``n`` terms)."""
        if self.bare:
            return f"SELECT rowid * {n} + {i} AS m FROM {fts} WHERE {fts} MATCH ?"
        limit = f" ORDER BY rowid DESC LIMIT {self.latest}" if self.latest else ""
        return f"SELECT rowid * {n} + {i} AS m FROM (SELECT rowid FROM {fts} WHERE {fts} MATCH ?{limit})"


def term_rows(token: str, terms: Sequence[str], latest: int = 0, bare: Sequence[bool] = ()) -> list[TermRows]:
    """Each term's part of a walk of the tenant's ``token`` (a term ``bare``, by number, is matched
    without the token, in every row of the file that holds it: the caller keeps its tenant's)."""
    return [
        TermRows(fts_term(term), True)
        if i < len(bare) and bare[i]
        else TermRows(term_match(token, term), latest=latest, alone=fts_term(term))
        for i, term in enumerate(terms)
    ]


def union(fts: str, parts: Sequence[TermRows]) -> tuple[str, list[str]]:
    """A SELECT of one text: the rows of every part as ``rowid * len(parts) + part's number``, joined
    by commas (:func:`found_pairs` reads it: one value, not a Python tuple a match), with its
    arguments."""
    n = len(parts)
    selects = " UNION ALL ".join(part.select(fts, n, i) for i, part in enumerate(parts))
    return f"SELECT group_concat(m) FROM ({selects})", [part.match for part in parts]


def matches(
    fts: str, token: str, terms: Sequence[str], latest: int = 0, bare: Sequence[bool] = ()
) -> tuple[str, list[str]]:
    """:func:`union` of :func:`term_rows`: each row of ``fts`` that holds the tenant's ``token`` and
    a term (with ``latest``, a term's latest rows only), numbered by term."""
    return union(fts, term_rows(token, terms, latest, bare))


def term_match(token: str, term: str) -> str:
    """The FTS5 query of the rows of the tenant's ``token`` that hold ``term``."""
    return f"{quote(token)} AND ({fts_term(term)})"


@dataclass(frozen=True)
class Walk:
    """What a search reads of one FTS index (``fts``): each term's rows (``parts``, :class:`TermRows`,
    read by :attr:`match_sql`), each term's BM25 weight (``weights``, by number; None: counted from
    the matches, :func:`weighed`) and how many of a term's latest matches count (0: all)."""

    fts: str
    parts: tuple[TermRows, ...]
    weights: list[float] | None
    latest: int = 0

    @property
    def match_sql(self) -> str:
        return union(self.fts, self.parts)[0]

    @property
    def match_args(self) -> list[str]:
        return [part.match for part in self.parts]


def walk(
    fts: str,
    token: str,
    terms: Sequence[str],
    rows: int,
    counts: dict[str, int] | None,
    *,
    whole: bool = False,
) -> Walk:
    """The walk of ``terms`` in a layer of ``rows`` rows. With their ``counts`` (a large layer), each
    term counts in its latest :data:`TERM_ROWS` rows only, weighed by its count in all of them: a
    search costs the same in a year's history as in a month's. Without, every row counts and the
    weights are counted from the matches. ``whole`` (a layer that is most of its file): a term is
    matched without the layer's token (:func:`term_rows`, ``bare``), unless it is held by more than
    :data:`TERM_ROWS` rows, which the token and the limit keep to its latest."""
    if counts is None:
        return Walk(fts, tuple(term_rows(token, terms, bare=[whole] * len(terms))), None)
    bare = [whole and counts[t] <= TERM_ROWS for t in terms]
    parts = term_rows(token, terms, latest=TERM_ROWS, bare=bare)
    return Walk(fts, tuple(parts), [idf(counts[t], rows) for t in terms], TERM_ROWS)


@dataclass(frozen=True)
class Matches:
    """A walk's matches: each one's rowid and its term's BM25 weight (a row holding two terms is
    two matches)."""

    rowid: npt.NDArray[np.int64]
    weight: npt.NDArray[np.float64]


def found_pairs(found: str | None, terms: int) -> npt.NDArray[np.int64]:
    """The matches a walk's SELECT returned (:func:`matches`, over ``terms`` terms) as rows of
    (rowid, term's number)."""
    coded = np.fromstring(found or "", dtype=np.int64, sep=",")
    return np.stack([coded // max(terms, 1), coded % max(terms, 1)], axis=1)


def each_term(found: str | None, terms: int) -> list[npt.NDArray[np.int64]]:
    """The rowids of each of a walk's ``terms`` terms (in the order the walk returned them) from what
    its SELECT returned: :func:`found_pairs` grouped by term at once (a mask per term read every
    match once a term, and a walk of the statements has a dozen terms and thousands of matches)."""
    n = max(terms, 1)
    coded = np.fromstring(found or "", dtype=np.int64, sep=",")
    term = coded % n
    order = np.argsort(term, kind="stable")  # within a term, the walk's order
    ends = np.cumsum(np.bincount(term, minlength=n))[:terms]
    return np.split(coded[order] // n, ends[:-1]) if terms else []


def numbered(rows: Sequence[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    """Each term's rows in turn as (rowid, term's number) pairs: what :func:`found_pairs` reads of
    their walk in one SELECT."""
    if not rows:
        return np.zeros((0, 2), dtype=np.int64)
    return np.concatenate(
        [np.stack([found, np.full(len(found), i, dtype=np.int64)], axis=1) for i, found in enumerate(rows)]
    )


def latest_of(pairs: npt.NDArray[np.int64], latest: int) -> npt.NDArray[np.int64]:
    """Of the (rowid, term's number) ``pairs``, each term's ``latest`` (highest rowids) only."""
    terms = pairs[:, 1]
    if not latest or not len(terms) or np.bincount(terms).max() <= latest:
        return pairs
    order = np.lexsort((-pairs[:, 0], terms))
    grouped = terms[order]
    first = np.searchsorted(grouped, grouped, side="left")
    return pairs[order[np.arange(len(order)) - first < latest]]


def weighed(pairs: npt.NDArray[np.int64], weights: list[float] | None, rows: int) -> Matches:
    """The matches of (rowid, term's number) ``pairs``, each with its term's weight: the walk's,
    or (None) its :func:`idf` by how many of the matches hold it."""
    terms = pairs[:, 1]
    if weights is None:
        table = np.array([idf(int(held), rows) for held in np.bincount(terms)], dtype=np.float64)
    else:
        table = np.array(weights, dtype=np.float64)
    return Matches(pairs[:, 0], table[terms] if len(terms) else np.empty(0))


def saturation(words: npt.NDArray[np.float64], mean: float) -> npt.NDArray[np.float64]:
    """BM25's factor for a term found once in rows of these lengths, the layer's ``mean`` length."""
    return (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * words / mean))


# keys a sum counts into an array of their range rather than sorts: at least 1/DENSE_KEYS of it
DENSE_KEYS = 32


def summed(
    keys: npt.NDArray[np.intp], values: npt.NDArray[np.float64], size: int = 0
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The distinct ``keys`` (ascending) and the sum of their ``values``, each added in their order.
    Keys known to lie in ``range(size)`` and many for it (a long history's statement search has
    thousands of matches) are counted into an array of that range instead of sorted."""
    if size and len(keys) * DENSE_KEYS >= size:
        present = np.zeros(size, dtype=np.bool_)  # a byte a key: a third of the time of counts
        present[keys] = True
        distinct = np.flatnonzero(present)
        return distinct, np.bincount(keys, weights=values, minlength=size)[distinct].astype(np.float64)
    distinct, which = np.unique(keys, return_inverse=True)
    return distinct, np.bincount(which, weights=values, minlength=len(distinct)).astype(np.float64)


class TermFrequencies:
    """How many of a layer's rows hold each term, remembered per (index, token, term): counting is a
    walk of the term's rows, and :func:`affordable` needs the counts before the search."""

    def __init__(self, size: int = 100_000) -> None:
        self._counts: LRUCache[tuple[str, str, str], tuple[int, int]] = LRUCache(maxsize=size)

    def counts(
        self, db: sqlite3.Connection, fts: str, token: str, terms: Sequence[str], rows: int
    ) -> dict[str, int]:
        out = {}
        for term in terms:
            key = (fts, token, term)
            known = self._counts.get(key)
            if known is None or abs(rows - known[1]) > STALE_SHARE * known[1]:
                held = db.execute(
                    f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ?", (term_match(token, term),)
                ).fetchone()[0]
                known = (int(held), rows)
                self._counts[key] = known
            out[term] = known[0]
        return out


def affordable(terms: Sequence[str], counts: dict[str, int], rows: int) -> list[str]:
    """The terms worth a search of a layer of ``rows`` rows (:data:`COMMON_SHARE`), in their order."""
    common = max(COMMON_SHARE * rows, COMMON_ROWS)
    rare = [t for t in terms if counts[t] <= common]
    if len(rare) >= MIN_TERMS:
        return rare
    rarest = set(sorted(terms, key=lambda t: counts[t])[:MIN_TERMS])
    return [t for t in terms if t in rarest]
