"""Store drift made behind the product's back, and the checks that reconciliation repaired it (shared
by the embedded and the services tests)."""

from __future__ import annotations

from typing import Any

import numpy as np

from simplemem.processors.lifecycle.reconcile import find_drift, repair
from simplemem.processors.stores.protocols import SymbolicFilter
from simplemem.schemas.memory import MemoryKind, MemoryUnit


def make_drift(rt: Any, tenant: str) -> tuple[MemoryUnit, MemoryUnit]:
    """Delete one unit's vector and add a vector whose unit does not exist; returns both."""
    [victim, *_] = [u for page in rt.lexical.iter_units(tenant, 100) for u in page]
    rt.vectors.delete(tenant, [victim.id])
    ghost = MemoryUnit.build(
        tenant_id=tenant,
        text="a memory nobody stored",
        kind=MemoryKind.FACT,
        source_ids=["ghost"],
        stated_at="2026-01-01T00:00:00+00:00",
    )
    rt.vectors.upsert([ghost], np.ones((1, rt.vectors.dim), dtype=np.float32) / np.sqrt(rt.vectors.dim))
    rt.vectors.flush()
    return victim, ghost


def assert_repaired(rt: Any, tenant: str, victim: MemoryUnit, ghost: MemoryUnit) -> None:
    drift = find_drift(tenant, rt.lexical, rt.vectors, 100)
    assert not drift.drifted, drift
    vector = rt.embedder.encode([victim.text])[0]
    hits = rt.vectors.search(tenant, vector, 5, SymbolicFilter(active_only=False))
    assert victim.id in {h.id for h in hits}  # found by its meaning again
    assert ghost.id not in {i for page in rt.vectors.ids(tenant, 100) for i in page}


def reconcile_in_process(rt: Any, tenant: str) -> None:
    victim, ghost = make_drift(rt, tenant)
    drift = find_drift(tenant, rt.lexical, rt.vectors, 100)
    assert drift.missing_vectors == [victim.id] and drift.orphan_vectors == [ghost.id]
    repair(drift, rt.lexical, rt.vectors, lambda: rt.embedder, 100)
    assert_repaired(rt, tenant, victim, ghost)
