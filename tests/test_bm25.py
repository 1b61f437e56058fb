"""The embedded store's own BM25 pieces (pure logic; the store's searches are in test_stores.py)."""

from __future__ import annotations

from simplemem.processors.stores.sqlite_bm25 import fts_term, idf, matches, word_count


def test_a_query_term_is_asked_for_token_by_token_as_the_index_reads_it() -> None:
    assert fts_term("retry_policy") == '"retry" AND "policy"'
    assert fts_term("o'brien") == '"o" AND "brien"'
    assert fts_term("kayak") == '"kayak"'
    assert word_count("Ana set retry_policy to 3.") == 6


def test_a_rarer_term_weighs_more_and_none_weighs_less_than_nothing() -> None:
    assert idf(1, 1000) > idf(10, 1000) > idf(900, 1000) > 0
    assert idf(1000, 1000) > 0  # a word in every row still counts a little (FTS5's could go negative)


def test_each_term_is_matched_within_the_tenants_rows_and_numbered() -> None:
    sql, args = matches("units_fts", "tok", ["ski", "e-mail"])
    assert sql.count("MATCH ?") == 2 and "SELECT rowid, 1 FROM units_fts" in sql
    assert args == ['"tok" AND ("ski")', '"tok" AND ("e" AND "mail")']
