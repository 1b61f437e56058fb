"""The embedded vector store's reads by id: from the tenant's arrays once a search has read them, the
same vectors the file holds, and never a vector a write has replaced."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simplemem.processors.stores.protocols import SymbolicFilter
from simplemem.processors.stores.sqlite_vectors import SqliteVectorStore
from simplemem.schemas.memory import MemoryKind, MemoryUnit

DIM = 8


def unit(tenant: str, text: str, kind: MemoryKind = MemoryKind.FACT) -> MemoryUnit:
    return MemoryUnit.build(
        tenant_id=tenant,
        text=text,
        kind=kind,
        source_ids=[f"{tenant}:{text}"],
        stated_at="2026-01-10T10:00:00+00:00",
    )


def test_vectors_by_id_after_a_search_are_the_files_and_follow_a_write(tmp_path: Path) -> None:
    store = SqliteVectorStore(tmp_path / "v.sqlite", DIM)
    rng = np.random.default_rng(7)
    units = [unit("t1", f"fact {i}") for i in range(5)] + [unit("t1", "line", MemoryKind.TIMELINE)]
    store.upsert(units, rng.normal(size=(len(units), DIM)).astype(np.float32))
    store.upsert([unit("t2", "fact 0")], rng.normal(size=(1, DIM)).astype(np.float32))
    ids = [u.id for u in reversed(units)] + ["missing"]
    from_file = store.vectors("t1", ids)
    store.search("t1", np.ones(DIM, dtype=np.float32), 3, SymbolicFilter())
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    cached = store.vectors("t1", ids)
    assert statements == []  # read from the arrays the search keeps
    assert cached.keys() == from_file.keys() == {u.id for u in units}
    assert all(np.array_equal(cached[k], from_file[k]) for k in cached)
    cached[units[0].id][:] = 0  # a caller's copy: the next search is not changed by it
    assert np.array_equal(store.vectors("t1", [units[0].id])[units[0].id], from_file[units[0].id])
    assert store.vectors("t2", [units[0].id]).keys() == set()  # another tenant's id with its text
    store._db.set_trace_callback(None)
    new = rng.normal(size=(1, DIM)).astype(np.float32)
    store.upsert([units[0]], new)
    after = store.vectors("t1", [units[0].id])[units[0].id]
    assert not np.array_equal(after, from_file[units[0].id])
    assert np.allclose(after, new[0] / np.linalg.norm(new[0]), atol=0.02)
    store.close()
