"""The embedded stores for real (SQLite FTS5 file, Milvus Lite file): idempotent, tenant-scoped."""

from __future__ import annotations

import sqlite3
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from processors.stores.milvus_vectors import MilvusVectorStore
from processors.stores.protocols import SymbolicFilter
from processors.stores.sqlite_lexical import SqliteLexicalStore
from schemas.memory import MemoryKind, MemoryUnit

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
    assert store.known_names("t1", ["Marco", "Nobody"]) == ["marco"]
    assert store.get("t2", [a.id]) == []  # another tenant's id is invisible
    assert [u.id for u in store.units_from_sources("t1", a.source_ids)] == [a.id]
    store.delete("t1", [a.id])
    assert store.count("t1") == 1 and store.search("t1", "tennis", 10, SymbolicFilter()) == []
    store.close()
    reopened = SqliteLexicalStore(tmp_path / "lex.sqlite")
    assert reopened.count("t1") == 1
    reopened.close()


def test_lexical_store_relinks_a_version_1_file(tmp_path: Path) -> None:
    """Older files gave FTS rows their own rowids; opening one re-links them, so search and delete
    keep working (a delete must leave no orphan FTS row)."""
    path = tmp_path / "lex.sqlite"
    store = SqliteLexicalStore(path)
    a, b = unit("t1", "Jordan plays tennis"), unit("t1", "Jordan went skiing")
    store.upsert([a, b])
    store.close()
    db = sqlite3.connect(path)
    rows = db.execute("SELECT tenant, body, uid FROM units_fts ORDER BY rowid").fetchall()
    db.execute("DELETE FROM units_fts")
    db.executemany(
        "INSERT INTO units_fts (rowid, tenant, body, uid) VALUES (?,?,?,?)",
        [(100 + i, *r) for i, r in enumerate(rows)],
    )
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()
    reopened = SqliteLexicalStore(path)
    assert {h.id for h in reopened.search("t1", "tennis", 10, SymbolicFilter())} == {a.id}
    reopened.delete("t1", [a.id])
    assert reopened.search("t1", "tennis", 10, SymbolicFilter()) == []
    reopened.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM units_fts").fetchone()[0] == 1
    db.close()


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
    store.delete("t1", [units[0].id])
    store.flush()
    assert store.count("t1") == 1
    store.close()
