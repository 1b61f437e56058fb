"""The embedded lexical store's calls in one query's scope: its searches (a question searched whole
and by its aspects) walk each term's rows once, a unit read again is decoded once, and each call
returns what it returns apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from simplemem.processors.stores import sqlite_bm25
from simplemem.processors.stores.protocols import SymbolicFilter
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.processors.stores.sqlite_lexical import base as sqlite_base
from simplemem.processors.stores.sqlite_lexical import search as sqlite_search
from simplemem.schemas.memory import MemoryKind, MemoryUnit

TIMELINE = SymbolicFilter(derived=(MemoryKind.TIMELINE.value,))
INSTRUCTION = SymbolicFilter(derived=(MemoryKind.INSTRUCTION.value,))
QUERIES = [
    "the budget tracker features, the security review and the kayak trip",
    "the budget tracker features",
    "the security review",
    "the kayak trip",
]


def line(tenant: str, text: str, kind: MemoryKind = MemoryKind.TIMELINE, day: int = 10) -> MemoryUnit:
    return MemoryUnit.build(
        tenant_id=tenant,
        text=text,
        kind=kind,
        source_ids=[f"{tenant}:{text}"],
        stated_at=f"2026-01-{day:02d}T10:00:00+00:00",
    )


def filled(tmp_path: Path) -> SqliteLexicalStore:
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    texts = [
        "added budget tracker features: categories and monthly totals",
        "asked for a security review of the login",
        "planned a kayak trip with the club",
        "budget tracker security: hashed passwords",
        "the kayak trip moved to June",
        "tracker features for export",
    ]
    store.upsert([line("t1", text, day=10 + i) for i, text in enumerate(texts)])
    store.upsert([line("t1", "always review security changes twice", MemoryKind.INSTRUCTION)])
    store.upsert([line("t2", "a kayak trip and a budget tracker security review", day=12)])
    return store


def walks(store: SqliteLexicalStore) -> list[str]:
    """The FTS walks the store's connection runs from now on (their SQL)."""
    seen: list[str] = []
    store._db.set_trace_callback(lambda sql: seen.append(sql) if "group_concat" in sql else None)
    return seen


@pytest.mark.parametrize("common_rows", [sqlite_bm25.COMMON_ROWS, 2])  # a small layer; a large one (counts)
def test_a_question_and_its_aspects_walk_each_term_once_and_rank_as_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, common_rows: int
) -> None:
    monkeypatch.setattr(sqlite_search, "COMMON_ROWS", common_rows)
    store = filled(tmp_path)
    asked = [(q, flt) for flt in (TIMELINE, INSTRUCTION) for q in QUERIES]
    apart = [store.search("t1", q, 5, flt) for q, flt in asked]
    seen = walks(store)
    with store.one_query():
        together = [store.search("t1", q, 5, flt) for q, flt in asked]
    assert together == apart and any(apart)
    # the whole question walks every term; its aspects and the other kind of line, none again
    assert len(seen) == 1
    seen.clear()
    assert [store.search("t1", q, 5, flt) for q, flt in asked] == apart and len(seen) == len(asked)
    store.close()


def test_a_write_within_the_scope_is_seen_by_the_searches_after_it(tmp_path: Path) -> None:
    store = filled(tmp_path)
    with store.one_query():
        before = {h.id for h in store.search("t1", "kayak trip", 10, TIMELINE)}
        late = line("t1", "the kayak trip was cancelled", day=20)
        store.upsert([late])
        after = {h.id for h in store.search("t1", "kayak trip", 10, TIMELINE)}
    assert late.id not in before and after == before | {late.id}
    store.close()


def test_another_tenants_rows_are_never_shared(tmp_path: Path) -> None:
    store = filled(tmp_path)
    with store.one_query():
        mine = store.search("t1", "kayak trip", 10, TIMELINE)
        theirs = store.search("t2", "kayak trip", 10, TIMELINE)
    assert {h.id for h in theirs} == {
        line("t2", "a kayak trip and a budget tracker security review", day=12).id
    }
    assert not {h.id for h in mine} & {h.id for h in theirs}
    store.close()


def count_decoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the units the store decodes from now on, in order."""
    decoded: list[str] = []
    real = sqlite_base.read_unit

    def counted(uid: str, *args: object, **kwargs: object) -> MemoryUnit:
        decoded.append(uid)
        return real(uid, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite_base, "read_unit", counted)
    return decoded


def test_a_unit_read_again_within_the_scope_is_decoded_once_and_as_stored_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = filled(tmp_path)
    ids = [
        line("t1", "planned a kayak trip with the club", day=12).id,
        line("t1", "tracker features for export", day=15).id,
    ]
    apart = store.get("t1", ids, with_context=False)
    decoded = count_decoded(monkeypatch)
    with store.one_query():
        first = store.get("t1", ids, with_context=False)
        again = store.get("t1", list(reversed(ids)), with_context=False)
        assert first == apart and again == list(reversed(apart)) and decoded == ids
        edited = apart[0].model_copy(update={"persons": ["Ana"]})
        store.upsert([edited])
        assert store.get("t1", ids[:1], with_context=False) == [edited]
    assert decoded == [*ids, ids[0]]
    store.close()


def test_a_line_without_a_context_stays_decoded_for_the_next_query_until_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = filled(tmp_path)
    kayak = line("t1", "planned a kayak trip with the club", day=12)
    decoded = count_decoded(monkeypatch)
    store.get("t1", [kayak.id], with_context=False)  # outside a query: read as ever
    for _ in range(2):
        with store.one_query():
            store.search("t1", "kayak", 5, TIMELINE)  # a query searches first: the tenant's columns
            assert store.get("t1", [kayak.id], with_context=False) == [kayak]
    assert decoded == [kayak.id, kayak.id]  # the second query's read was the first's
    edited = kayak.model_copy(update={"persons": ["Ana"]})
    store.upsert([edited])
    with store.one_query():
        store.search("t1", "kayak", 5, TIMELINE)
        assert store.get("t1", [kayak.id], with_context=False) == [edited]
    store.upsert([line("t1", "an unrelated line", day=21)])  # any write of the tenant's drops them
    with store.one_query():
        store.search("t1", "kayak", 5, TIMELINE)
        assert store.get("t1", [kayak.id], with_context=False) == [edited]
    assert decoded == [kayak.id] * 4
    store.close()


def test_a_search_asked_again_within_the_scope_looks_up_no_row_again(tmp_path: Path) -> None:
    store = filled(tmp_path)
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    with store.one_query():
        first = store.search("t1", "kayak trip budget", 5, TIMELINE)
        seen.clear()
        assert store.search("t1", "kayak trip budget", 5, TIMELINE) == first and first
    assert not [sql for sql in seen if "group_concat" in sql or "SELECT rowid, id FROM units" in sql]
    store.close()


def test_a_line_a_query_decoded_is_not_read_from_the_file_again_until_any_connection_writes(
    tmp_path: Path,
) -> None:
    store = filled(tmp_path)
    kayak = line("t1", "planned a kayak trip with the club", day=12)
    club = line("t1", "tracker features for export", day=15)
    with store.one_query():
        store.search("t1", "kayak", 5, TIMELINE)
        assert store.get("t1", [kayak.id], with_context=False) == [kayak]
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    with store.one_query():
        store.search("t1", "kayak", 5, TIMELINE)
        # the line decoded before is not read again; the other one is, and only it
        assert store.get("t1", [club.id, kayak.id], with_context=False) == [club, kayak]
    reads = [sql for sql in seen if "FROM units u" in sql]
    assert len(reads) == 1 and club.id in reads[0] and kayak.id not in reads[0], reads
    other = SqliteLexicalStore(tmp_path / "lex.sqlite")  # another writer of the same file
    edited = kayak.model_copy(update={"persons": ["Ana"]})
    other.upsert([edited])
    other.close()
    with store.one_query():
        store.search("t1", "kayak", 5, TIMELINE)
        assert store.get("t1", [kayak.id], with_context=False) == [edited]
    store.close()


@pytest.mark.parametrize(
    ("common_rows", "term_rows"), [(sqlite_bm25.COMMON_ROWS, sqlite_bm25.TERM_ROWS), (2, 1)]
)
def test_a_derived_search_takes_a_terms_rows_from_the_statements_bare_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, common_rows: int, term_rows: int
) -> None:
    """A tenant alone in its file (nearly): its statements' search walks each term in every row of
    the file; a search of its derived lines within the same query takes the term's rows from that
    walk (the latest ``TERM_ROWS`` of its lines where the layer is large) instead of walking it again
    within the lines' token, and finds what it finds alone."""
    monkeypatch.setattr(sqlite_search, "COMMON_ROWS", common_rows)
    monkeypatch.setattr(sqlite_bm25, "TERM_ROWS", term_rows)
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    facts = [
        line("t1", f"the garden shed needs paint coat {i}", MemoryKind.FACT, day=1 + i) for i in range(11)
    ]
    facts.append(line("t1", "the kayak leans on the shed", MemoryKind.FACT, day=15))
    store.upsert(facts)
    store.upsert([line("t1", f"planned a kayak trip {i}", day=20 + i) for i in range(3)])
    store.upsert([line("t2", "a kayak trip with the club", day=12)])
    statements = SymbolicFilter()
    apart = [store.search("t1", "kayak trip", 5, flt) for flt in (statements, TIMELINE)]
    seen = walks(store)
    with store.one_query():
        together = [store.search("t1", "kayak trip", 5, statements)]
        assert seen and not [sql for sql in seen if " AND (" in sql]  # every term bare
        seen.clear()
        together.append(store.search("t1", "kayak trip", 5, TIMELINE))
    assert together == apart and len(apart[1]) == (3 if term_rows > 1 else 1)
    assert not seen  # no term walked again within the lines' token
    store.close()


def statement(text: str, message: str, day: int = 10) -> MemoryUnit:
    return MemoryUnit.build(
        tenant_id="t1",
        text=text,
        kind=MemoryKind.FACT,
        source_ids=[f"t1:{message}"],
        stated_at=f"2026-01-{day:02d}T10:00:00+00:00",
        context=f"user: {message}. {text}",
    )


def test_a_statement_read_without_its_message_stays_decoded_for_the_next_query_until_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query's selection reads a hundred statements without their message: the next query takes
    them as decoded; one read with its message is read from the file, and a write drops them."""
    store = filled(tmp_path)
    kayak = statement("the kayak trip is in June", "trip plans")
    store.upsert([kayak])
    bare = kayak.model_copy(update={"context": None})
    decoded = count_decoded(monkeypatch)
    for _ in range(2):
        with store.one_query():
            store.search("t1", "kayak", 5, SymbolicFilter())
            assert store.get("t1", [kayak.id], with_context=False) == [bare]
    assert decoded == [kayak.id]
    with store.one_query():
        store.search("t1", "kayak", 5, SymbolicFilter())
        assert store.get("t1", [kayak.id]) == [kayak]  # with its message: from the file
        assert store.units_from_sources("t1", kayak.source_ids, with_context=False) == [bare]
    assert decoded == [kayak.id, kayak.id]
    edited = kayak.model_copy(update={"persons": ["Ana"]})
    store.upsert([edited])
    with store.one_query():
        store.search("t1", "kayak", 5, SymbolicFilter())
        assert store.get("t1", [kayak.id], with_context=False) == [
            edited.model_copy(update={"context": None})
        ]
    store.close()


def test_a_terms_walk_is_not_walked_again_by_the_next_query_until_a_write(tmp_path: Path) -> None:
    store = filled(tmp_path)
    asked = [("kayak trip budget", TIMELINE), ("kayak trip", SymbolicFilter()), ("kayak trip", INSTRUCTION)]
    apart = [store.search("t1", q, 5, flt) for q, flt in asked]
    seen = walks(store)
    with store.one_query():
        assert [store.search("t1", q, 5, flt) for q, flt in asked] == apart
    assert seen
    seen.clear()
    with store.one_query():
        assert [store.search("t1", q, 5, flt) for q, flt in asked] == apart
        assert store.search("t2", "kayak trip", 5, TIMELINE)  # another tenant's: its own walk
    assert len(seen) == 1
    late = line("t1", "the kayak trip was cancelled", day=20)
    store.upsert([late])
    seen.clear()
    with store.one_query():
        assert late.id in {h.id for h in store.search("t1", "kayak trip", 5, TIMELINE)}
    assert seen  # walked again after the write
    store.close()


def test_beyond_its_bounds_nothing_more_is_kept_until_a_tenants_columns_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = filled(tmp_path)
    facts = [statement(f"the kayak trip note {i}", f"note {i}") for i in range(3)]
    store.upsert(facts)
    store._columns.kept_units, store._columns.kept_rowids = 2, 0
    decoded = count_decoded(monkeypatch)
    seen = walks(store)
    ids = [u.id for u in facts]
    for _ in range(2):
        with store.one_query():
            first = store.search("t1", "kayak trip", 5, TIMELINE)
            assert store.search("t1", "kayak trip", 5, TIMELINE) == first  # within the query: once
            store.get("t1", ids, with_context=False)
    assert len(decoded) == 4 and set(decoded) == set(ids) and len(seen) == 2  # two units kept, no walk
    store.upsert([line("t1", "an unrelated line", day=21)])  # the columns go, and what they kept
    with store.one_query():
        store.search("t1", "kayak trip", 5, TIMELINE)
        store.get("t1", ids[2:], with_context=False)
    with store.one_query():
        store.search("t1", "kayak trip", 5, TIMELINE)
        store.get("t1", ids[2:], with_context=False)
    assert len(decoded) == 5 and decoded[-1] == ids[2]  # the count was freed with the columns
    store.close()


def test_the_memories_naming_a_person_are_matched_once_and_each_check_answers_as_apart(
    tmp_path: Path,
) -> None:
    store = filled(tmp_path)
    tagged = line("t1", "Ana booked the kayak trip", MemoryKind.FACT)
    named = line("t1", "the budget went to Ana for review", MemoryKind.FACT)
    other = line("t1", "the kayak club meets on Fridays", MemoryKind.FACT)
    store.upsert([tagged.model_copy(update={"persons": ["Ana"]}), named, other])
    store.upsert([line("t2", "Ana reviewed the budget", MemoryKind.FACT)])
    ids = [tagged.id, named.id, other.id]
    apart = store.ids_with_names("t1", ids, ["ana"])
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    with store.one_query():
        checks = [store.ids_with_names("t1", ids[::step], ["ana"]) for step in (1, -1)]
        theirs = store.ids_with_names("t2", ids, ["ana"])
    assert apart == {tagged.id, named.id} and checks == [apart, apart] and theirs == set()
    # once for t1 (its two checks), once for t2
    assert len([sql for sql in seen if "MATCH" in sql]) == 2
    store.close()


def test_a_layers_counts_are_read_once_until_a_write_and_score_as_read_afresh(tmp_path: Path) -> None:
    """BM25's row count and mean length of a layer are kept with the tenant's columns."""
    store = filled(tmp_path)
    counts: list[str] = []
    store._db.set_trace_callback(lambda sql: counts.append(sql) if "FROM word_counts WHERE" in sql else None)
    before = [store.search("t1", q, 5, TIMELINE) for q in QUERIES]
    assert len(counts) == 1
    store.upsert(
        [line("t1", "the budget tracker review ran long over many more words than any line", day=22)]
    )
    after = [store.search("t1", q, 5, TIMELINE) for q in QUERIES]
    assert len(counts) == 2  # read again after the write, once
    fresh = SqliteLexicalStore(tmp_path / "lex.sqlite")
    assert after == [fresh.search("t1", q, 5, TIMELINE) for q in QUERIES] and after != before
    fresh.close()
    store.close()
