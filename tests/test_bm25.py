"""The embedded store's own BM25 pieces (pure logic; the store's searches are in test_stores.py)."""

from __future__ import annotations

import numpy as np

from simplemem.processors.stores.sqlite_bm25 import (
    COMMON_ROWS,
    TERM_ROWS,
    affordable,
    each_term,
    found_pairs,
    fts_term,
    idf,
    latest_of,
    matches,
    summed,
    walk,
    weighed,
    word_count,
)
from simplemem.processors.stores.sqlite_lexical.columns import DENSE_SPAN, Slots, found_at
from simplemem.processors.stores.sqlite_vectors import best_first


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
    assert sql.count("MATCH ?") == 2 and "SELECT rowid * 2 + 1 AS m FROM (SELECT rowid FROM units_fts" in sql
    assert args == ['"tok" AND ("ski")', '"tok" AND ("e" AND "mail")']
    # read back as (rowid, term's number)
    assert found_pairs("14,15,21", 2).tolist() == [[7, 0], [7, 1], [10, 1]]
    assert found_pairs(None, 2).shape == (0, 2)


def test_a_walks_rows_are_read_back_term_by_term_in_the_order_returned() -> None:
    # rowids 7, 3 for term 0 and 10, 7 for term 1 (of 3 terms), interleaved; term 2 has none
    found = ",".join(str(rowid * 3 + term) for rowid, term in [(7, 0), (10, 1), (3, 0), (7, 1)])
    assert [rows.tolist() for rows in each_term(found, 3)] == [[7, 3], [10, 7], []]
    assert [rows.tolist() for rows in each_term(None, 2)] == [[], []]
    # the same as reading the pairs and keeping each term's
    pairs = found_pairs(found, 3)
    assert all((rows == pairs[pairs[:, 1] == i, 0]).all() for i, rows in enumerate(each_term(found, 3)))


def test_a_term_too_common_to_pay_for_is_left_out_of_a_large_layers_search() -> None:
    rows = 40 * COMMON_ROWS
    counts = {"project": rows // 4, "kayak": 12, "rapids": 30, "paddle": 80}
    assert affordable(["project", "kayak", "rapids", "paddle"], counts, rows) == ["kayak", "rapids", "paddle"]


def test_a_query_of_common_terms_keeps_its_rarest_ones() -> None:
    rows = 40 * COMMON_ROWS
    counts = {"use": rows // 2, "project": rows // 4, "plan": rows // 5, "kayak": 12}
    assert affordable(["use", "project", "plan", "kayak"], counts, rows) == ["project", "plan", "kayak"]


def test_a_small_layer_keeps_a_term_that_most_of_its_rows_hold() -> None:
    counts = {"kayak": 600, "rapids": 3, "paddle": 5}
    assert affordable(["kayak", "rapids", "paddle"], counts, 700) == ["kayak", "rapids", "paddle"]


def test_the_best_scores_come_first_and_ties_in_row_order() -> None:
    scores = np.array([0.2, 0.9, 0.5, 0.9, 0.1, 0.5], dtype=np.float32)
    assert list(best_first(scores, 3)) == [1, 3, 2]
    assert list(best_first(scores, 4)) == [1, 3, 2, 5]
    assert list(best_first(scores, 10)) == [1, 3, 2, 5, 0, 4]


def test_a_large_layer_walks_each_term_in_its_latest_rows_weighed_by_its_count_in_all() -> None:
    rows = 50 * COMMON_ROWS
    large = walk("units_fts", "tok", ["kayak", "rapids"], rows, {"kayak": 12, "rapids": 3 * TERM_ROWS})
    assert large.match_sql.count(f"ORDER BY rowid DESC LIMIT {TERM_ROWS}") == 2
    assert large.weights == [idf(12, rows), idf(3 * TERM_ROWS, rows)] and large.latest == TERM_ROWS
    small = walk("units_fts", "tok", ["kayak"], 700, None)
    assert "LIMIT" not in small.match_sql and small.weights is None and small.latest == 0
    # a layer that is most of its file: a term walked without the token (the whole file's rows, the
    # layer's kept and cut to the latest after), unless more rows hold it than the limit
    whole = walk(
        "units_fts", "tok", ["kayak", "rapids"], rows, {"kayak": 12, "rapids": 3 * TERM_ROWS}, whole=True
    )
    assert whole.match_sql.count(f"LIMIT {TERM_ROWS}") == 1 and whole.latest == TERM_ROWS
    assert whole.match_args == ['"kayak"', '"tok" AND ("rapids")']


def test_a_terms_latest_matches_are_its_highest_rowids_and_the_others_terms_are_kept() -> None:
    pairs = np.array([[5, 0], [9, 1], [7, 0], [3, 0], [8, 1], [4, 2]], dtype=np.int64)
    kept = latest_of(pairs, 2)
    assert sorted(map(tuple, kept.tolist())) == [(4, 2), (5, 0), (7, 0), (8, 1), (9, 1)]
    assert latest_of(pairs, 3) is pairs  # no term has more


def test_matches_are_weighed_by_their_terms_idf_counted_among_them_or_given() -> None:
    pairs = np.array([[5, 0], [9, 1], [7, 0], [3, 0]], dtype=np.int64)
    counted = weighed(pairs, None, 100)
    assert counted.rowid.tolist() == [5, 9, 7, 3]
    assert np.allclose(counted.weight, [idf(3, 100), idf(1, 100), idf(3, 100), idf(3, 100)])
    given = weighed(pairs, [1.5, 2.5], 100)
    assert given.weight.tolist() == [1.5, 2.5, 1.5, 1.5]
    rows, sums = summed(given.rowid, given.weight)
    assert rows.tolist() == [3, 5, 7, 9] and sums.tolist() == [1.5, 1.5, 1.5, 2.5]
    assert summed(np.empty(0, dtype=np.intp), np.empty(0))[1].dtype == np.float64


def test_a_tenants_rows_are_found_by_a_table_where_dense_and_by_a_search_where_not() -> None:
    asked = np.array([2, 3, 4, 9, 10, 11, 40, 1000, -1], dtype=np.int64)
    dense = np.array([3, 4, 5, 9, 10], dtype=np.int64)
    slots = Slots.made(dense)
    assert slots.table is not None
    assert slots.positions(dense, asked).tolist() == [-1, 0, 1, 3, 4, -1, -1, -1, -1]
    assert (slots.positions(dense, asked) == found_at(dense, asked)).all()
    sparse = np.array([3, 3 + 5 * DENSE_SPAN * 2], dtype=np.int64)
    assert Slots.made(sparse).table is None
    assert Slots.made(sparse).positions(sparse, asked).tolist() == found_at(sparse, asked).tolist()
    assert (
        Slots.made(np.zeros(0, dtype=np.int64)).positions(np.zeros(0, dtype=np.int64), asked).tolist()
        == [-1] * 9
    )


def test_a_sum_over_many_keys_counts_them_into_their_range_as_a_sort_would() -> None:
    keys = np.array([5, 1, 5, 0, 1, 5], dtype=np.intp)
    values = np.array([0.1, 0.2, 0.3, 0.0, 0.4, 0.5])
    dense, sorted_ = summed(keys, values, 8), summed(keys, values)
    assert dense[0].tolist() == sorted_[0].tolist() == [0, 1, 5]
    assert dense[1].tolist() == sorted_[1].tolist()  # the same sums, added in the same order
