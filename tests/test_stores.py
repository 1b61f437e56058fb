"""The embedded stores for real (SQLite FTS5 file, SQLite vector file; the Milvus adapter on a Milvus Lite
file): idempotent, tenant-scoped."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pytest
from pymilvus import MilvusException

from simplemem.processors.stores.file_format import StoreFormatError, check_format
from simplemem.processors.stores.milvus_vectors import MilvusVectorStore
from simplemem.processors.stores.protocols import SymbolicFilter
from simplemem.processors.stores.sqlite_docs import (
    CONTEXT_DOC_2,
    DICT_DOC_2,
    StoredContext,
    doc_json,
    encode_doc,
    open_context,
)
from simplemem.processors.stores.sqlite_keys import unit_id
from simplemem.processors.stores.sqlite_lexical import FORMAT_VERSION as LEXICAL_FORMAT
from simplemem.processors.stores.sqlite_lexical import (
    SqliteLexicalStore,
    context_hash,
)
from simplemem.processors.stores.sqlite_lexical.schema import derived_token, tenant_token
from simplemem.processors.stores.sqlite_vectors import FORMAT_VERSION as VECTOR_FORMAT
from simplemem.processors.stores.sqlite_vectors import SqliteVectorStore
from simplemem.schemas.memory import MemoryKind, MemoryStatus, MemoryUnit
from tests.helpers import answer_units

pytestmark = pytest.mark.slow


def unit(
    tenant: str, text: str, event_time: str | None = None, persons: list[str] | None = None
) -> MemoryUnit:
    return MemoryUnit.build(
        tenant_id=tenant,
        text=text,
        kind=MemoryKind.FACT,
        source_ids=[f"{tenant}:{text}"],
        stated_at="2026-01-10T10:00:00+00:00",
        event_time=event_time,
        persons=persons or [],
    )


JAN_10 = SymbolicFilter(first_day=date(2026, 1, 10), last_day=date(2026, 1, 10))
SAID_JAN_10 = SymbolicFilter(first_day=date(2026, 1, 10), last_day=date(2026, 1, 10), or_stated=True)


def said_within(search: Callable[[SymbolicFilter], set[str]], undated: str, dated: str) -> None:
    """A range matches a memory's time (event time, else the day stated); with ``or_stated`` also the
    day it was stated: ``dated`` happened in February but was said on January 10."""
    assert search(JAN_10) == {undated}
    assert search(SAID_JAN_10) == {undated, dated}


def test_lexical_store_scoping_filters_and_idempotence(tmp_path: Path) -> None:
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    a = unit("t1", "Jordan plays tennis with Marco", persons=["Jordan", "Marco"])
    b = unit("t1", "Jordan went skiing in Aspen", "2026-02-15", persons=["Jordan"])
    c = unit("t2", "Jordan plays tennis on Sundays", persons=["Jordan"])
    store.upsert([a, b, c])
    store.upsert([a, b])
    assert store.count("t1") == 2 and store.count("t2") == 1
    assert {h.id for h in store.search("t1", "tennis", 10, SymbolicFilter())} == {a.id}
    assert {h.id for h in store.search("t2", "tennis", 10, SymbolicFilter())} == {c.id}
    assert store.search("t1", "tennis", 10, SymbolicFilter(names=("aspen",))) == []
    feb = SymbolicFilter(first_day=date(2026, 2, 1), last_day=date(2026, 2, 28))
    assert {h.id for h in store.search("t1", "Jordan", 10, feb)} == {b.id}
    said_within(lambda f: {h.id for h in store.search("t1", "Jordan", 10, f)}, a.id, b.id)
    assert store.known_names("t1", ["Marco", "Nobody"]) == ["marco"]
    assert store.get("t2", [a.id]) == []  # another tenant's id is invisible
    assert [u.id for u in store.units_from_sources("t1", a.source_ids)] == [a.id]
    assert store.sources_with_units("t1", [*a.source_ids, *c.source_ids, "none"]) == set(a.source_ids)
    store.delete("t1", [a.id])
    assert store.count("t1") == 1 and store.search("t1", "tennis", 10, SymbolicFilter()) == []
    store.close()
    reopened = SqliteLexicalStore(tmp_path / "lex.sqlite")
    assert reopened.count("t1") == 1
    reopened.close()


def test_person_filter_matches_names_written_in_the_memory(tmp_path: Path) -> None:
    """A memory whose person list misses a name (the NER model did not tag it in that sentence) still
    passes the person filter when its own text names the person; a name only in the searched
    context (the question answered) does not count, and another tenant's memory never does."""
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    tagged = unit("t1", "Sam's cousin Tomas is visiting from Lyon", persons=["Sam", "Tomas"])
    untagged = unit("t1", "Tomas landed at noon in Lyon", persons=["Sam"])
    asked = MemoryUnit.build(
        tenant_id="t1",
        text="Sam is picking someone up in Lyon",
        kind=MemoryKind.FACT,
        source_ids=["t1:asked"],
        stated_at="2026-01-10T10:00:00+00:00",
        persons=["Sam"],
        context="Tomas: who is picking me up?",
    )
    other = unit("t2", "Tomas landed at noon in Lyon", persons=["Kim"])
    store.upsert([tagged, untagged, asked, other])
    only_tomas = SymbolicFilter(names=("tomas",))
    assert {h.id for h in store.search("t1", "Lyon", 10, only_tomas)} == {tagged.id, untagged.id}
    ids = [tagged.id, untagged.id, asked.id, other.id]
    assert store.ids_with_names("t1", ids, ["tomas"]) == {tagged.id, untagged.id}
    assert store.ids_with_names("t2", ids, ["tomas"]) == {other.id}
    store.close()


def test_milvus_lite_store_scoping_and_idempotence(tmp_path: Path) -> None:
    store = MilvusVectorStore(str(tmp_path / "vectors.db"), "units", 4)
    units = [unit("t1", "alpha"), unit("t1", "beta", "2026-03-01"), unit("t2", "gamma")]
    vectors = np.eye(4, dtype=np.float32)[:3]
    store.upsert(units, vectors)
    store.upsert(units, vectors)
    store.flush()
    assert store.count("t1") == 2 and store.count("t2") == 1
    hits = store.search("t1", vectors[2], 10, SymbolicFilter())
    assert {h.id for h in hits} == {units[0].id, units[1].id}
    march = SymbolicFilter(first_day=date(2026, 3, 1), last_day=date(2026, 3, 31))
    assert [h.id for h in store.search("t1", vectors[1], 10, march)] == [units[1].id]
    said_within(lambda f: {h.id for h in store.search("t1", vectors[1], 10, f)}, units[0].id, units[1].id)
    store.delete("t1", [units[0].id])
    store.flush()
    assert store.count("t1") == 1
    store.close()


def test_the_embedded_vector_store_is_exact_scoped_filtered_and_follows_each_write(tmp_path: Path) -> None:
    store = SqliteVectorStore(tmp_path / "vectors.sqlite", 4)
    units = [unit("t1", "alpha"), unit("t1", "beta", "2026-03-01"), unit("t2", "gamma")]
    vectors = np.eye(4, dtype=np.float32)[:3] * 3  # not unit length: scores are cosines all the same
    store.upsert(units, vectors)
    store.upsert(units, vectors)
    assert store.count("t1") == 2 and store.count("t2") == 1
    hits = store.search("t1", np.array([0.6, 0.8, 0, 0], dtype=np.float32), 10, SymbolicFilter())
    assert [(h.id, round(h.score, 3)) for h in hits] == [(units[1].id, 0.8), (units[0].id, 0.6)]
    march = SymbolicFilter(first_day=date(2026, 3, 1), last_day=date(2026, 3, 31))
    assert [h.id for h in store.search("t1", vectors[0], 10, march)] == [units[1].id]
    said_within(lambda f: {h.id for h in store.search("t1", vectors[0], 10, f)}, units[0].id, units[1].id)
    before = SymbolicFilter(stated_before=datetime(2026, 1, 1, tzinfo=UTC))
    assert store.search("t1", vectors[0], 10, before) == [], "stated after the question's date"
    archived = units[0].model_copy(update={"status": MemoryStatus.ARCHIVED})
    store.upsert([archived], vectors[:1])  # a write after a search: the next search sees it
    assert [h.id for h in store.search("t1", vectors[0], 10, SymbolicFilter())] == [units[1].id]
    assert len(store.search("t1", vectors[0], 10, SymbolicFilter(active_only=False))) == 2
    store.delete("t1", [units[1].id])
    assert store.search("t1", vectors[1], 10, SymbolicFilter()) == [] and store.count("t1") == 1
    assert sorted(store.vectors("t2", [units[2].id, units[0].id])) == [units[2].id], "another tenant's id"
    assert [i for page in store.ids("t1", 1) for i in page] == [units[0].id]
    store.delete_tenant("t2")
    assert store.count("t2") == 0
    store.close()


def test_a_flush_the_server_never_finishes_is_given_up_after_its_bound(tmp_path: Path) -> None:
    """pymilvus polls a flush's state until its timeout; a server that never reports it done must
    not hold the writer. (The server's never-finishing flush is simulated; the store is real.)"""
    store = MilvusVectorStore(str(tmp_path / "vectors.db"), "units", 4, flush_seconds=0.2)
    store.upsert([unit("t1", "alpha")], np.eye(4, dtype=np.float32)[:1])
    calls: list[float | None] = []

    def never_done(collection: str, timeout: float | None = None) -> None:
        calls.append(timeout)
        time.sleep(timeout or 0)
        raise MilvusException(message=f"wait for flush timeout, collection: {collection}")

    real_flush, store.client.flush = store.client.flush, never_done  # type: ignore[method-assign]
    store.flush()  # returns: the rows are inserted, only their sealing is late
    store.flush()  # still unsealed, so the next flush tries again
    assert calls == [0.2, 0.2]

    def refused(collection: str, timeout: float | None = None) -> None:
        raise MilvusException(message="collection not found")

    store.client.flush = refused  # type: ignore[method-assign]
    with pytest.raises(MilvusException):  # an error that is not the bound is the caller's to retry
        store.flush()
    store.client.flush = real_flush  # type: ignore[method-assign]
    store.close()


def test_known_names_match_whole_names_and_the_names_a_longer_candidate_begins(tmp_path: Path) -> None:
    """ "Mel" finds "melanie" (a nickname is usually a prefix); a 2-letter word only a name it is; the
    tenant's names only; LIKE's wildcards are letters here."""
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    store.upsert(
        [
            unit("t1", "Melanie paints", persons=["Melanie", "Jo"]),
            unit("t1", "Melvin Jones skis", persons=["Melvin Jones"]),
            unit("t1", "A_b met 50%er", persons=["A_b", "50%er"]),
            unit("t2", "Melissa runs", persons=["Melissa"]),
        ]
    )
    assert store.known_names("t1", ["Mel"]) == ["melanie", "melvin", "melvin jones"]
    assert store.known_names("t1", ["MELANIE", "jo"]) == ["jo", "melanie"]
    assert store.known_names("t1", ["me", "j"]) == []
    assert store.known_names("t1", ["a_b", "50%", "a%b", "5_%"]) == ["50%er", "a_b"]
    assert store.known_names("t2", ["Mel"]) == ["melissa"]
    store.close()


def test_a_speakers_role_is_not_a_known_name(tmp_path: Path) -> None:
    """A frontend that sends no names has "user" and "assistant" as speakers: not names to match."""
    path = tmp_path / "lex.sqlite"
    store = SqliteLexicalStore(path)
    store.upsert(
        [
            unit("t1", "Kenji and I hiked", persons=["user", "Kenji"]),
            unit("t1", "Try Kyoto", persons=["Assistant"]),
        ]
    )
    assert store.known_names("t1", ["user", "assistant", "kenji"]) == ["kenji"]
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM names").fetchone()[0] == 1
    store.close()
    db.close()


def test_a_context_is_stored_once_searched_and_dropped_with_its_last_unit(tmp_path: Path) -> None:
    path = tmp_path / "lex.sqlite"
    store = SqliteLexicalStore(path)
    units = answer_units("t1", 3)
    other = answer_units("t2", 1)  # the same words in another tenant: a row of its own
    store.upsert([*units, *other])
    store.upsert(units)  # a replay
    db = sqlite3.connect(path)
    assert db.execute("SELECT tenant_id, count(*) FROM contexts GROUP BY tenant_id").fetchall() == [
        ("t1", 1),
        ("t2", 1),
    ]
    assert all(b"crampons" not in doc for (doc,) in db.execute("SELECT doc FROM units"))
    # a word found only in the context finds every unit of the message, in the tenant only
    assert {h.id for h in store.search("t1", "crampons", 10, SymbolicFilter())} == {u.id for u in units}
    assert [u.context for u in store.get("t1", [units[0].id])] == [units[0].context]
    # a query reads units without their message; the rest of the unit is the same
    bare = store.get("t1", [units[0].id], with_context=False)
    assert [u.context for u in bare] == [None]
    assert bare[0].model_copy(update={"context": units[0].context}) == store.get("t1", [units[0].id])[0]
    assert {u.context for u in store.units_from_sources("t1", units[0].source_ids, with_context=False)} == {
        None
    }
    assert store.page("t1", 0, 10)[0].context == units[0].context
    store.delete("t1", [units[0].id, units[1].id])
    assert db.execute("SELECT count(*) FROM contexts WHERE tenant_id='t1'").fetchone()[0] == 1
    store.delete("t1", [units[2].id])
    assert db.execute("SELECT count(*) FROM contexts WHERE tenant_id='t1'").fetchone()[0] == 0
    assert db.execute("SELECT sum(rows) FROM word_counts WHERE side = 'contexts'").fetchone()[0] == 1  # t2's
    assert store.search("t1", "crampons", 10, SymbolicFilter()) == []
    assert context_term_rows(db, "crampon") == 1, "the dropped context's terms left the index: t2's remain"
    db.close()
    store.close()


def test_a_unit_written_twice_in_one_batch_keeps_its_context(tmp_path: Path) -> None:
    """A batch may hold a unit and its next version: writing the second deletes the first, and with
    it the context no other unit names; the second must store the context again, not name the row
    just deleted."""
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    first = answer_units("t1", 1)[0]
    edited = first.model_copy(update={"superseded_by": "u-newer"})
    store.upsert([first, edited])
    assert store.get("t1", [first.id]) == [edited]
    assert [h.id for h in store.search("t1", "crampons", 10, SymbolicFilter())] == [first.id]
    store.delete("t1", [first.id])
    assert store.count("t1") == 0
    store.close()


def context_term_rows(db: sqlite3.Connection, term: str, index: str = "contexts_fts") -> int:
    """How many rows of an FTS index (the contexts' by default) hold ``term`` (its stemmed form)."""
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{index}_terms USING fts5vocab(main, {index}, row)")
    row = db.execute(f"SELECT doc FROM temp.{index}_terms WHERE term=?", (term,)).fetchone()
    return row[0] if row else 0


def test_a_units_words_leave_the_index_when_it_is_deleted_edited_or_archived(tmp_path: Path) -> None:
    """The units' FTS index keeps no copy of their text; what it indexed of a unit is removed with it."""
    path = tmp_path / "lex.sqlite"
    store = SqliteLexicalStore(path)
    gone = unit("t1", "Jordan bought a theremin", "2026-02-15", persons=["Jordan"])
    edited = unit("t1", "Jordan rents a harpsichord")
    archived = unit("t1", "Jordan tunes the glockenspiel")
    other = unit("t2", "Robin bought a theremin")
    store.upsert([gone, edited, archived, other])
    db = sqlite3.connect(path)
    assert "units_fts_content" not in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    assert context_term_rows(db, "theremin", "units_fts") == 2
    store.delete("t1", [gone.id])
    store.upsert([edited.model_copy(update={"text": "Jordan rents a clavichord"})])
    store.upsert([archived.model_copy(update={"status": MemoryStatus.ARCHIVED})])
    assert context_term_rows(db, "theremin", "units_fts") == 1  # t2's
    assert context_term_rows(db, "harpsichord", "units_fts") == 0
    assert context_term_rows(db, "glockenspiel", "units_fts") == 0
    assert context_term_rows(db, "clavichord", "units_fts") == 1
    assert [h.id for h in store.search("t1", "clavichord", 10, SymbolicFilter())] == [edited.id]
    # named in its own text (no persons): found by the index, which holds no archived unit
    assert store.ids_with_names("t1", [edited.id, archived.id], ["jordan"]) == {edited.id}
    db.execute("INSERT INTO units_fts (units_fts) VALUES ('integrity-check')")
    db.close()
    store.close()


def closed_store_with_an_answer(tmp_path: Path) -> tuple[Path, list[MemoryUnit]]:
    """A store file holding two statements of one answer, closed (to be edited as an older file)."""
    path = tmp_path / "lex.sqlite"
    store = SqliteLexicalStore(path)
    units = answer_units("t1", 2)
    store.upsert(units)
    store.close()
    return path, units


def test_contexts_are_stored_compressed(tmp_path: Path) -> None:
    path, units = closed_store_with_an_answer(tmp_path)
    db = sqlite3.connect(path)
    [(kind, size)] = db.execute("SELECT typeof(text), length(text) FROM contexts").fetchall()
    assert kind == "blob" and size < len(units[0].context or "")
    reopened = SqliteLexicalStore(path)
    assert [u.context for u in reopened.get("t1", [units[1].id])] == [units[1].context]
    reopened.delete("t1", [u.id for u in units])
    assert context_term_rows(db, "crampon") == 0
    assert db.execute("SELECT count(*) FROM contexts").fetchone()[0] == 0
    reopened.close()
    db.close()


def links_per_tenant(db: sqlite3.Connection, table: str) -> list[tuple[str, int]]:
    """The link rows of ``table`` (sources, quotes) per tenant: a unit's own and its context's."""
    return db.execute(
        f"SELECT t.name, count(*) FROM (SELECT tenant_id FROM {table} UNION ALL "
        f"SELECT tenant_id FROM context_{table}) l JOIN tenants t ON t.id = l.tenant_id GROUP BY t.name"
    ).fetchall()


def closed_store_with_links(tmp_path: Path) -> tuple[Path, list[MemoryUnit], MemoryUnit]:
    """A closed store whose units link to messages both ways: two statements of t1's answer, a reply
    quoting t1's question, one statement of t2's answer (its units, and the quoting one)."""
    path = tmp_path / "lex.sqlite"
    store = SqliteLexicalStore(path)
    quoting = MemoryUnit.build(
        tenant_id="t1",
        text="Jordan booked the Cedar trail",
        kind=MemoryKind.FACT,
        source_ids=["t1:reply"],
        stated_at="2026-01-10T10:00:00+00:00",
        context="user: Which trail should I book?",
        context_ids=["t1:question"],
    )
    units = [*answer_units("t1", 2), quoting, *answer_units("t2", 1)]
    store.upsert(units)
    store.close()
    return path, units, quoting


def test_a_tenants_first_write_rolled_back_gives_its_number_to_no_one_else(tmp_path: Path) -> None:
    """A new tenant's first write fails and rolls back, taking its new number with it; its next
    write and another new tenant's must not end up with the same number (each would read the
    other's memories)."""
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    mine = unit("t1", "Jordan plays tennis")
    broken = unit("t1", "Jordan went skiing").model_copy(update={"stated_at": "not a date"})
    with pytest.raises(ValueError):
        store.upsert([mine, broken])
    store.upsert([mine])
    theirs = unit("t2", "Ana plays tennis")
    store.upsert([theirs])
    assert [h.id for h in store.search("t1", "tennis", 10, SymbolicFilter())] == [mine.id]
    assert [h.id for h in store.search("t2", "tennis", 10, SymbolicFilter())] == [theirs.id]
    assert sorted(store.tenants()) == ["t1", "t2"]
    store.close()


def test_rows_hold_the_tenants_number_and_the_ids_bytes(tmp_path: Path) -> None:
    """Every unit, name and link row holds the tenant's number and a 32-digit id's 16 bytes (an id
    of another shape stays text), and every read, lookup and delete finds the same units per tenant."""
    path, units, quoting = closed_store_with_links(tmp_path)
    caller = unit("t2", "Jordan rents a kayak").model_copy(update={"id": "mem0-kayak"}, deep=True)
    reopened = SqliteLexicalStore(path)
    reopened.upsert([caller])
    db = sqlite3.connect(path)
    assert dict(db.execute("SELECT name, id FROM tenants").fetchall()).keys() == {"t1", "t2"}
    assert {(type(key), unit_id(key) == caller.id) for (key,) in db.execute("SELECT id FROM units")} == {
        (bytes, False),
        (str, True),
    }
    for table in ("units", "names", "sources", "quotes"):
        assert {t for (t,) in db.execute(f"SELECT DISTINCT typeof(tenant_id) FROM {table}")} <= {"integer"}
    assert {h.id for h in reopened.search("t1", "crampons", 10, SymbolicFilter())} == {
        u.id for u in units[:2]
    }
    assert {h.id for h in reopened.search("t2", "kayak", 10, SymbolicFilter())} == {caller.id}
    assert reopened.search("t1", "kayak", 10, SymbolicFilter()) == []
    assert [u.context for u in reopened.get("t1", [quoting.id])] == [quoting.context]
    assert reopened.get("t2", [quoting.id, caller.id]) == [caller]
    assert reopened.ids_with_names("t2", [caller.id, units[0].id], ["jordan"]) == {caller.id}
    assert {u.id for u in reopened.units_from_sources("t1", ["t1:answer"])} == {u.id for u in units[:2]}
    assert [u.id for u in reopened.units_quoting("t1", ["t1:question"])] == [quoting.id]
    assert sorted(reopened.tenants()) == ["t1", "t2"] and reopened.count("t2") == 2
    assert reopened.count("never-wrote") == 0 and reopened.page("never-wrote", 0, 10) == []
    reopened.delete("t1", [u.id for u in units[:3]])
    reopened.delete("t2", [caller.id])
    assert reopened.tenants() == ["t2"] and [u.id for u in reopened.page("t2", 0, 10)] == [units[3].id]
    assert db.execute("SELECT count(*) FROM names WHERE typeof(id) = 'text'").fetchone()[0] == 0
    reopened.close()
    db.close()


def test_the_vector_arrays_kept_in_memory_stay_within_their_bound(tmp_path: Path) -> None:
    store = SqliteVectorStore(tmp_path / "vectors.sqlite", 4, cache_rows=2)
    units = [unit(t, "alpha") for t in ("t1", "t2", "t3")]
    store.upsert(units, np.eye(4, dtype=np.float32)[:3])
    for u in units:
        assert [
            h.id for h in store.search(u.tenant_id, np.ones(4, dtype=np.float32), 5, SymbolicFilter())
        ] == [u.id]
    assert list(store._cache) == ["t2", "t3"] and store._cached_rows == 2, "the oldest tenant left first"
    store.delete("t3", [units[2].id])
    assert store._cached_rows == 1
    store.close()


def test_the_lexical_columns_kept_in_memory_stay_within_their_bound(tmp_path: Path) -> None:
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    store._columns.cache_rows = 2
    units = [unit(t, "alpha") for t in ("t1", "t2", "t3")]
    store.upsert(units)
    for u in units:
        assert [h.id for h in store.search(u.tenant_id, "alpha", 5, SymbolicFilter())] == [u.id]
    assert "t1" not in store._columns and "t2" in store._columns and "t3" in store._columns
    store.delete("t3", [units[2].id])
    assert "t3" not in store._columns
    store.close()


def test_a_messages_statements_are_deflated_with_the_header_their_context_keeps(tmp_path: Path) -> None:
    """Three statements of one message written together: their context keeps a header of what they
    share (the date, the messages they come from, the session), their documents are deflated with
    it (smaller than with the context alone) and read back whole; a statement of the same message
    written later, and an older context without a header, read as well; the last delete takes the
    header with the context."""
    path = tmp_path / "lex.sqlite"
    store = SqliteLexicalStore(path)
    units = [
        u.model_copy(update={"session_id": "trip-planning-2026", "persons": ["Jordan"]})
        for u in answer_units("t1", 4)
    ]
    older = answer_units("t2", 3)
    store.upsert(units[:3])
    store.upsert(units[3:])
    store.upsert(older[:1])  # alone in its write: no header
    store.upsert(older[1:])  # later, with the context already stored without one
    db = sqlite3.connect(path)
    stored = {t: open_context(text) for t, text in db.execute("SELECT tenant_id, text FROM contexts")}
    header = stored["t1"].header if stored["t1"] else b""
    assert b'"trip-planning-2026"' in header and b'"2026-01-10T10:00:00+00:00"' in header
    assert b"option" not in header, "a statement's own text is not shared"
    assert stored["t2"] is not None and stored["t2"].header == b""
    docs = [bytes.fromhex(u.id) for u in units]
    sizes = [db.execute("SELECT length(doc) FROM units WHERE id=?", (d,)).fetchone()[0] for d in docs]
    alone = [len(encode_doc(u)) for u in units]
    assert all(s < a for s, a in zip(sizes, alone, strict=True)), (sizes, alone)
    assert store.get("t1", [u.id for u in units]) == units
    assert store.get("t2", [u.id for u in older]) == older
    assert [u.id for page in store.iter_units("t1", 2) for u in page] == [u.id for u in units]
    store.delete("t1", [u.id for u in units])
    assert db.execute("SELECT count(*) FROM contexts WHERE tenant_id='t1'").fetchone()[0] == 0
    store.close()
    db.close()


def test_a_unit_document_is_stored_compressed_and_read_back_whole_as_are_older_ones(
    tmp_path: Path,
) -> None:
    """Documents are deflated with their context and the store's second dictionary (the dictionary
    alone without a context), without the id and tenant their columns hold; documents written before
    it (with the first dictionary, with or without their context), zlib-compressed or plain JSON with
    those fields, still read."""
    import zlib

    import orjson

    path = tmp_path / "lex.sqlite"
    store = SqliteLexicalStore(path)
    fresh, plain, zipped, first, first_bare = answer_units("t1", 5)
    fresh = fresh.model_copy(update={"superseded_by": "u-newer", "keywords": ["crampons", "ridge"]})
    bare = unit("t1", "Jordan plays tennis")
    first_bare = first_bare.model_copy(update={"context": None})
    store.upsert([fresh, plain, zipped, bare, first, first_bare])
    store.close()
    db = sqlite3.connect(path)
    stored = db.execute("SELECT doc FROM units WHERE id=?", (bytes.fromhex(fresh.id),)).fetchone()[0]
    [context] = [open_context(text) for (text,) in db.execute("SELECT text FROM contexts")]
    assert context is not None and context.text == fresh.context and b'"stated_at"' in context.header
    assert stored[:1] == CONTEXT_DOC_2 and fresh.id.encode() not in doc_json(stored, context)
    with pytest.raises(ValueError, match="its text is needed"):
        doc_json(stored)
    assert (
        db.execute("SELECT substr(doc, 1, 1) FROM units WHERE id=?", (bytes.fromhex(bare.id),)).fetchone()[0]
        == DICT_DOC_2
    )
    as_first = [
        (encode_doc(first, StoredContext(context.text, context.header), edition=1), first.id),
        (encode_doc(first_bare, edition=1), first_bare.id),
    ]
    db.executemany("UPDATE units SET doc=? WHERE id=?", [(doc, bytes.fromhex(uid)) for doc, uid in as_first])
    older = {u.id: orjson.dumps(u.model_dump(mode="json", exclude={"context"})) for u in (plain, zipped)}
    db.execute(
        "UPDATE units SET doc=? WHERE id=?", (older[plain.id], bytes.fromhex(plain.id))
    )  # before compression
    db.execute(
        "UPDATE units SET doc=? WHERE id=?", (zlib.compress(older[zipped.id]), bytes.fromhex(zipped.id))
    )
    db.commit()
    db.close()
    assert len(stored) < len(zlib.compress(orjson.dumps(fresh.model_dump(mode="json", exclude={"context"}))))
    reopened = SqliteLexicalStore(path)
    ids = [fresh.id, plain.id, zipped.id, bare.id, first.id, first_bare.id]
    assert {u.id: u for u in reopened.get("t1", ids)} == {
        fresh.id: fresh,
        plain.id: plain,
        zipped.id: zipped,
        bare.id: bare,
        first.id: first,
        first_bare.id: first_bare,
    }
    assert reopened.get("t1", [fresh.id], with_context=False) == [fresh.model_copy(update={"context": None})]
    assert {u.id for page in reopened.iter_units("t1", 10) for u in page} == set(ids)
    reopened.close()


def test_vectors_are_stored_in_a_byte_a_dimension_close_to_their_direction_beside_older_float16_rows(
    tmp_path: Path,
) -> None:
    path, dim = tmp_path / "vectors.sqlite", 384
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(3, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    units = [unit("t1", "alpha"), unit("t1", "beta"), unit("t1", "gamma")]
    store = SqliteVectorStore(path, dim)
    store.upsert(units[:2], vectors[:2])
    store.close()
    db = sqlite3.connect(path)
    assert {len(r[0]) for r in db.execute("SELECT vec FROM vectors")} == {dim}
    db.execute(  # a row as written before int8: float16
        "INSERT INTO vectors (id, tenant_id, status, event_start, event_end, stated_at, vec) VALUES (?,?,?,?,?,?,?)",
        (bytes.fromhex(units[2].id), 1, "active", 0, 0, 0.0, vectors[2].astype(np.float16).tobytes()),
    )
    db.commit()
    db.close()
    reopened = SqliteVectorStore(path, dim)
    read = reopened.vectors("t1", [u.id for u in units])
    for u, v in zip(units, vectors, strict=True):
        assert float(read[u.id] @ v) > 0.9995 and abs(float(np.linalg.norm(read[u.id])) - 1) < 1e-5
    hits = reopened.search("t1", vectors[2], 3, SymbolicFilter())
    assert hits[0].id == units[2].id and hits[0].score > 0.9995
    reopened.close()


def test_one_unit_id_in_two_tenants_is_two_vectors(tmp_path: Path) -> None:
    """A vector row is keyed by tenant and id: an id that two tenants both use never replaces the
    other tenant's vector (the ids the pipeline makes hash the tenant in; the key does not rely on it)."""
    store = SqliteVectorStore(tmp_path / "vectors.sqlite", 4)
    eye = np.eye(4, dtype=np.float32)
    mine, theirs = (unit(t, "alpha").model_copy(update={"id": "mem0-shared"}) for t in ("t1", "t2"))
    store.upsert([mine], eye[:1])
    store.upsert([theirs], eye[1:2])
    assert [h.id for h in store.search("t1", eye[0], 5, SymbolicFilter())] == ["mem0-shared"]
    assert float(store.vectors("t1", ["mem0-shared"])["mem0-shared"] @ eye[0]) > 0.999
    assert float(store.vectors("t2", ["mem0-shared"])["mem0-shared"] @ eye[1]) > 0.999
    store.close()


def test_vector_rows_hold_the_tenants_number_the_ids_bytes_and_null_common_values(tmp_path: Path) -> None:
    """A vector row holds the tenant's number and a 32-digit id's 16 bytes (a caller's id stays text),
    NULL for an active status and a one-day span's end, and every read, search and delete finds the
    same rows per tenant."""
    path = tmp_path / "vectors.sqlite"
    units = [
        unit("t1", "alpha"),
        unit("t2", "beta"),
        unit("t2", "gamma").model_copy(update={"id": "mem0-gamma"}),
    ]
    eye = np.eye(4, dtype=np.float32)
    store = SqliteVectorStore(path, 4)
    store.upsert(units, eye[:3])
    db = sqlite3.connect(path)
    assert db.execute("SELECT DISTINCT status, event_end FROM vectors").fetchall() == [(None, None)]
    assert sorted(db.execute("SELECT typeof(id), typeof(tenant_id) FROM vectors")) == [
        ("blob", "integer"),
        ("blob", "integer"),
        ("text", "integer"),
    ]
    assert [h.id for h in store.search("t1", eye[0], 5, SymbolicFilter())] == [units[0].id]
    assert [h.id for h in store.search("t2", eye[2], 1, SymbolicFilter())] == [units[2].id]
    assert set(store.vectors("t2", [u.id for u in units])) == {units[1].id, units[2].id}
    assert sorted(i for batch in store.ids("t2", 1) for i in batch) == sorted([units[1].id, units[2].id])
    assert (store.count("t1"), store.count("t2"), store.count("never-wrote")) == (1, 2, 0)
    store.delete("t2", [units[0].id, units[2].id])  # t1's id asked as t2's: not deleted
    assert (store.count("t1"), store.count("t2")) == (1, 1)
    store.close()
    db.close()


def set_version(path: Path, version: int) -> None:
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={version}")
    db.commit()
    db.close()


@pytest.mark.parametrize("kind", ["lexical", "vectors"])
@pytest.mark.parametrize("offset", [-1, 1])
def test_a_file_of_another_format_is_refused_with_how_to_rebuild_it(
    tmp_path: Path, kind: str, offset: int
) -> None:
    """A file written in an older (or newer) format is refused on open, unchanged, with a message
    that says how to rebuild the store; a new file is made in this format and opens again."""

    def open_store(path: Path) -> SqliteLexicalStore | SqliteVectorStore:
        return SqliteLexicalStore(path) if kind == "lexical" else SqliteVectorStore(path, 4)

    version = LEXICAL_FORMAT if kind == "lexical" else VECTOR_FORMAT
    path = tmp_path / f"{kind}.sqlite"
    open_store(path).close()
    open_store(path).close()  # this format: opens again
    set_version(path, version + offset)
    before = path.read_bytes()
    with pytest.raises(StoreFormatError) as refused:
        open_store(path)
    message = str(refused.value)
    assert str(path) in message and f"format {version + offset}" in message
    assert "simplemem ingest" in message and "simplemem replay" in message
    assert path.read_bytes() == before
    with pytest.raises(StoreFormatError):  # the check a command makes before it loads a model
        check_format(path, version)


def test_about_any_decides_as_the_stores_name_index() -> None:
    """A unit read already is about a name when it lists the person (or a part of the name) or names it
    in its own words as a whole word; a role is not a name."""
    from simplemem.processors.stores.protocols import about_any

    assert about_any(unit("t", "She went camping.", persons=["Melanie Smith"]), ["smith"])
    assert about_any(unit("t", "She went camping.", persons=["Melanie"]), ["melanie"])
    assert about_any(unit("t", "Melanie's kids love camping."), ["melanie"])
    assert not about_any(unit("t", "Melanies2go is a shop."), ["melanie"])
    assert not about_any(unit("t", "I went camping.", persons=["user"]), ["user"])
    assert not about_any(unit("t", "Caroline went camping.", persons=["Caroline"]), ["melanie"])
    assert not about_any(unit("t", "Melanie went camping.", persons=["Melanie"]), [])


def test_a_milvus_load_waits_for_a_missing_index_or_a_query_node_rejoining() -> None:
    """Loads that a moment fixes are retried; anything else fails at once."""
    from simplemem.processors.stores.milvus_vectors import load_may_succeed_later

    assert load_may_succeed_later(MilvusException(message="index not found[collection=memory]"))
    assert load_may_succeed_later(
        MilvusException(message="failed to spawn replica for collection: nodes not enough")
    )
    assert not load_may_succeed_later(MilvusException(message="collection not found[collection=memory]"))
    assert not load_may_succeed_later(ValueError("dim mismatch"))


def test_a_messages_statements_are_linked_once_through_their_context(tmp_path: Path) -> None:
    """The statements of one answer share its context and one link row to the message; the row stays
    while a statement of it is left, and goes with the last, as do the tenant's word counts."""
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    units = answer_units("t1", 3)
    store.upsert(units)
    db = sqlite3.connect(tmp_path / "lex.sqlite")
    assert links_per_tenant(db, "sources") == [("t1", 1)]
    assert [u.id for u in store.units_from_sources("t1", ["t1:answer"])] == [u.id for u in units]
    store.delete("t1", [u.id for u in units[:2]])
    assert store.sources_with_units("t1", ["t1:answer"]) == {"t1:answer"}
    assert [u.id for u in store.units_from_sources("t1", ["t1:answer"])] == [units[2].id]
    assert db.execute("SELECT side, rows FROM word_counts ORDER BY side").fetchall() == [
        ("contexts", 1),
        ("units", 1),
    ]
    store.delete("t1", [units[2].id])
    assert store.sources_with_units("t1", ["t1:answer"]) == set()
    assert (
        links_per_tenant(db, "sources") == []
        and db.execute("SELECT count(*) FROM contexts").fetchone()[0] == 0
    )
    assert db.execute("SELECT count(*) FROM word_counts").fetchone()[0] == 0  # nothing of the tenant left
    store.close()
    db.close()


def test_two_messages_of_the_same_text_share_a_context_not_their_links(tmp_path: Path) -> None:
    """Two answers of the same words (the same question asked twice) keep one context; each message
    finds its own statements only, and forgetting one leaves the other's links whole."""
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    first = answer_units("t1", 2)
    again = [
        u.model_copy(update={"id": f"again-{i}", "source_ids": ["t1:again"], "context_ids": ["t1:asked"]})
        for i, u in enumerate(answer_units("t1", 2))
    ]
    store.upsert(first)
    store.upsert(again)
    db = sqlite3.connect(tmp_path / "lex.sqlite")
    assert db.execute("SELECT count(*) FROM contexts").fetchone()[0] == 1
    assert [u.id for u in store.units_from_sources("t1", ["t1:answer"])] == [u.id for u in first]
    assert [u.id for u in store.units_from_sources("t1", ["t1:again"])] == [u.id for u in again]
    assert [u.id for u in store.units_quoting("t1", ["t1:asked"])] == [u.id for u in again]
    store.delete("t1", [u.id for u in first])
    assert store.sources_with_units("t1", ["t1:answer", "t1:again"]) == {"t1:again"}
    assert [u.id for u in store.units_from_sources("t1", ["t1:again"])] == [u.id for u in again]
    store.delete("t1", [again[0].id])
    assert [u.id for u in store.units_quoting("t1", ["t1:asked"])] == [again[1].id]
    store.close()
    db.close()


@pytest.mark.parametrize("topic", ["trail", None, "boots"])
def test_a_documents_keywords_are_kept_as_the_places_of_their_words(
    tmp_path: Path, topic: str | None
) -> None:
    """A keyword that is a word of the unit's text is stored as that word's place, one that is not as
    itself; the topic is read back as it was written, the first keyword or not, or none."""
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    written = unit("t1", "Jordan booked the Cedar trail for the C++ meetup").model_copy(
        update={"keywords": ["trail", "cedar", "c++", "meetup"], "topic": topic}
    )
    store.upsert([written])
    db = sqlite3.connect(tmp_path / "lex.sqlite")
    (doc,) = db.execute("SELECT doc FROM units").fetchone()
    assert b'"keywords":[4,3,"c++",8]' in doc_json(doc)
    assert store.get("t1", [written.id]) == [written]
    store.close()
    db.close()


def test_a_query_word_the_index_splits_in_two_finds_both_halves(tmp_path: Path) -> None:
    """An index without positions answers no phrase: a query word FTS5 reads as two tokens
    ("retry_policy": an underscore splits) asks for both, never for the phrase (an error)."""
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    both, one = unit("t1", "Ana set retry_policy to three"), unit("t1", "Ana wrote a policy")
    store.upsert([both, one])
    assert [h.id for h in store.search("t1", "retry_policy", 10, SymbolicFilter())] == [both.id]
    store.close()


def test_the_values_nearly_every_unit_holds_are_stored_as_null(tmp_path: Path) -> None:
    """An active status and a one-day span's end are NULL (no byte), another status or span is
    written, the filters read both alike, and a context is found again by its hash."""
    path = tmp_path / "lex.sqlite"
    store = SqliteLexicalStore(path)
    today = unit("t1", "Ana plays tennis")
    week = unit("t1", "Ana hikes the ridge", event_time="2026-01-05/2026-01-11")
    gone = unit("t1", "Ana plays squash").model_copy(update={"status": MemoryStatus.ARCHIVED})
    said = answer_units("t1", 2)
    store.upsert([today, week, gone, *said])
    store.close()
    db = sqlite3.connect(path)
    reopened = SqliteLexicalStore(path)
    rows = {unit_id(k): (s, e) for k, s, e in db.execute("SELECT id, status, event_end FROM units")}
    assert rows == {
        **{u.id: (None, None) for u in said},
        today.id: (None, None),
        week.id: (None, date(2026, 1, 11).toordinal()),
        gone.id: ("archived", None),
    }
    ridge = SymbolicFilter(first_day=date(2026, 1, 9), last_day=date(2026, 1, 9))
    assert [h.id for h in reopened.search("t1", "ana", 10, ridge)] == [week.id]
    assert {h.id for h in reopened.search("t1", "ana", 10, SymbolicFilter())} == {today.id, week.id}
    assert reopened.get("t1", [gone.id])[0].status == MemoryStatus.ARCHIVED
    assert db.execute("SELECT hash FROM contexts").fetchall() == [(context_hash(said[0].context),)]
    reopened.upsert(answer_units("t1", 3)[2:])  # one more statement of that answer: the same context
    assert db.execute("SELECT count(*) FROM contexts").fetchone()[0] == 1
    reopened.close()
    db.close()


def test_a_search_reads_no_unit_row_per_match_and_sees_every_write(tmp_path: Path) -> None:
    """A BM25 search reads the tenant's columns once (what it needs of each match: length, status,
    dates, context, and the id its hit is named by) and then no unit row: a long history's thousands
    of matches are not joined row by row. A write, by this store or by another connection to the
    file, is seen by the next search."""
    path = tmp_path / "lex.sqlite"
    store = SqliteLexicalStore(path)
    store.upsert([unit("t1", f"note {i} about the garden shed") for i in range(30)])
    before = SymbolicFilter(stated_before=datetime(2026, 2, 1, tzinfo=UTC))
    assert len(store.search("t1", "garden shed", 5, before)) == 5
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    assert len(store.search("t1", "garden shed", 5, before)) == 5
    store._db.set_trace_callback(None)
    assert not [s for s in statements if "JOIN units" in s]  # no join of a match to its row
    assert not [s for s in statements if "FROM units " in s]  # the hits' ids are in the columns
    store.upsert([unit("t1", "the garden shed door sticks")])
    assert {h.id for h in store.search("t1", "door", 5, before)} == {
        unit("t1", "the garden shed door sticks").id
    }
    other = SqliteLexicalStore(path)  # another writer of the same file
    other.upsert([unit("t1", "a kayak leans on the garden shed")])
    other.delete("t1", [unit("t1", "the garden shed door sticks").id])
    other.close()
    assert [h.id for h in store.search("t1", "kayak", 5, before)] == [
        unit("t1", "a kayak leans on the garden shed").id
    ]
    assert store.search("t1", "door", 5, before) == []
    store.close()


def test_a_derived_search_reads_the_derived_lines_only(tmp_path: Path) -> None:
    """The derived lines are a layer of their own: a search of them finds none of the statements (and
    a statements' search none of them), whether it walks the layer's own token (a layer that is a
    small share of the file) or the terms alone (a tenant alone in its file), and each layer's BM25
    counts its own rows."""
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    facts = [unit("t1", f"the garden shed roof leaks {i}") for i in range(12)]
    line = MemoryUnit.build(
        tenant_id="t1",
        text="asked how to fix the garden shed roof",
        kind=MemoryKind.TIMELINE,
        source_ids=["t1:m1"],
        stated_at="2026-01-10T10:00:00+00:00",
    )
    store.upsert([*facts, line, unit("t2", "the garden shed roof of another tenant")])
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    derived = SymbolicFilter(derived=(MemoryKind.TIMELINE.value,))
    assert [h.id for h in store.search("t1", "garden shed roof", 5, derived)] == [line.id]
    store._db.set_trace_callback(None)
    assert any(derived_token("t1") in s for s in statements)  # the layer's token: 1 of 14 rows
    statements.clear()
    store._db.set_trace_callback(statements.append)
    found = store.search("t1", "garden shed roof", 20, SymbolicFilter())
    store._db.set_trace_callback(None)
    assert {h.id for h in found} == {f.id for f in facts}
    # 12 of the file's 14 rows: walked by its terms alone, not each intersected with the tenant's rows
    assert not any(tenant_token("t1") in s for s in statements if "units_fts MATCH" in s)
    assert store.search("t2", "garden shed roof", 20, derived) == []
    store.close()
