"""How the embedded lexical store scores BM25 over FTS5 indexes that keep no positions.

Since lexical file version 15 both FTS indexes keep which rows hold a term, not where or how often
(``detail=none``, no row sizes): FTS5's ``bm25()`` needs what they no longer keep. The store scores
BM25 itself, in the SQL of its search, per tenant: a term counts once a row (a statement rarely holds
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

from cachetools import LRUCache

BM25_K1, BM25_B = 1.2, 0.75  # FTS5's bm25() defaults, used before version 15
_TOKEN = re.compile(r"[^\W_]+")  # FTS5's unicode61 tokens: letters and digits (an underscore splits)
# A term's BM25 weight from the rows that hold it (``{}``: the CTE of matches) and the tenant's rows
# (the one argument), by :func:`idf`.
IDF_SQL = "SELECT t, idf(count(*), ?) FROM {} GROUP BY t"
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
    could be, for a word in most rows). Registered as the SQL function ``idf``: SQLite's ``ln`` is not
    in every build."""
    return math.log(1 + (rows - holding + 0.5) / (holding + 0.5))


def matches(fts: str, token: str, terms: Sequence[str], latest: int = 0) -> tuple[str, list[str]]:
    """A SELECT of (rowid, term's number) for each row of ``fts`` that holds the tenant's ``token``
    and a term (with ``latest``, a term's latest rows only), with its arguments."""
    if latest:
        inner = f"SELECT rowid FROM {fts} WHERE {fts} MATCH ? ORDER BY rowid DESC LIMIT {latest}"
        parts = [f"SELECT rowid, {i} FROM ({inner})" for i in range(len(terms))]
    else:
        parts = [f"SELECT rowid, {i} FROM {fts} WHERE {fts} MATCH ?" for i in range(len(terms))]
    return " UNION ALL ".join(parts), [term_match(token, t) for t in terms]


def term_match(token: str, term: str) -> str:
    """The FTS5 query of the rows of the tenant's ``token`` that hold ``term``."""
    return f"{quote(token)} AND ({fts_term(term)})"


@dataclass(frozen=True)
class Walk:
    """What a search reads of one FTS index: its matches (``match_sql``: a SELECT of (rowid, term's
    number)) and each term's BM25 weight (``weight_sql``, over the CTE ``{}`` of the matches), with
    their arguments."""

    match_sql: str
    match_args: list[str]
    weight_sql: str
    weight_args: list[object]


def walk(fts: str, token: str, terms: Sequence[str], rows: int, counts: dict[str, int] | None) -> Walk:
    """The walk of ``terms`` in a layer of ``rows`` rows. With their ``counts`` (a large layer), each
    term is walked in its latest :data:`TERM_ROWS` rows only, weighed by its count in all of them: a
    search costs the same in a year's history as in a month's. Without, every row is walked and the
    weights are counted on the way."""
    if counts is None:
        match_sql, match_args = matches(fts, token, terms)
        return Walk(match_sql, match_args, IDF_SQL, [rows])
    match_sql, match_args = matches(fts, token, terms, latest=TERM_ROWS)
    values = ", ".join("(?, ?)" for _ in terms)
    weights: list[object] = [x for i, t in enumerate(terms) for x in (i, idf(counts[t], rows))]
    return Walk(match_sql, match_args, f"VALUES {values}", weights)


def saturation(alias: str) -> str:
    """BM25's factor for a term found once in a row of ``alias`` (its ``words``), the tenant's mean
    length the one argument."""
    return f"{BM25_K1 + 1} / (1 + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * {alias}.words / ?))"


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
