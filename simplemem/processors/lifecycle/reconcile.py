"""Reconciliation: the lexical store (the document store, which holds every unit's text) and the
vector store must hold the same units. They can drift apart behind the product's back: a vector
insert that returned without error and never became visible, rows restored from an older backup, a
store wiped and refilled. Per tenant, the ids of both are compared:

- a unit without its vector is searched by BM25 only: its vector is written again, from its text
  (a fact's vector was the mean of its sentences' vectors; its own text's vector is close to it and
  finds it again);
- a unit searched by its words only by design (``has_vector`` false) is not a drift;
- a vector without its unit (a unit that was deleted, or never written) is deleted: no search may
  return what the document store does not hold.

The lexical store is the reference: it is what forgetting, edits and consolidation keep exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from simplemem.processors.ingest.embedding import Embedder, embed_text
from simplemem.processors.stores.protocols import LexicalStore, VectorStore


@dataclass
class Drift:
    tenant_id: str
    units: int = 0
    vectors: int = 0
    missing_vectors: list[str] = field(default_factory=list)  # unit ids without a vector
    orphan_vectors: list[str] = field(default_factory=list)  # vector ids without a unit

    @property
    def drifted(self) -> bool:
        return bool(self.missing_vectors or self.orphan_vectors)


def find_drift(tenant_id: str, lexical: LexicalStore, vectors: VectorStore, batch: int) -> Drift:
    """The ids that one store has and the other has not (both read whole, ``batch`` at a time)."""
    units = [u for page in lexical.iter_units(tenant_id, batch) for u in page]
    unit_ids = {u.id for u in units}
    vector_ids = {i for page in vectors.ids(tenant_id, batch) for i in page}
    return Drift(
        tenant_id,
        units=len(unit_ids),
        vectors=len(vector_ids),
        missing_vectors=sorted({u.id for u in units if u.has_vector} - vector_ids),
        orphan_vectors=sorted(vector_ids - unit_ids),
    )


def repair(
    drift: Drift, lexical: LexicalStore, vectors: VectorStore, embedder: Callable[[], Embedder], batch: int
) -> None:
    """Write the missing vectors from their units' text, delete the orphans, then seal the writes.
    ``embedder`` is called only when a vector is missing (loading the model costs seconds)."""
    if drift.orphan_vectors:
        vectors.delete(drift.tenant_id, drift.orphan_vectors)
    for start in range(0, len(drift.missing_vectors), batch):
        units = lexical.get(drift.tenant_id, drift.missing_vectors[start : start + batch])
        if units:
            matrix = np.asarray(embedder().encode([embed_text(u) for u in units]), dtype=np.float32)
            vectors.upsert(units, matrix)
    vectors.flush()
