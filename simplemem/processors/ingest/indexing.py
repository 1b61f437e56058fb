"""Writing units to both stores, a slice at a time, each store call through a caller's wrapper.

The streams wrap each call in their retry through a store outage; the query service's embedded
backend in its store lock, so a query waits for one slice's writes, never for a whole window's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from functools import partial

import numpy as np

from simplemem.processors.ingest.decompose import DraftUnit
from simplemem.processors.ingest.embedding import Embedder, embed_text
from simplemem.processors.stores.protocols import LexicalStore, VectorStore

Guard = Callable[[], AbstractContextManager[object]]
"""What a caller wraps store accesses in (the query service: its store lock); nothing by default."""
Write = Callable[[Callable[[], None]], None]
"""Runs one store call (the streams retry it through an outage; the query service takes its lock)."""
INDEX_SLICE_UNITS = 256  # units written per store call: a fraction of a second on SQLite


def call_now(call: Callable[[], None]) -> None:
    call()


def guarded(guard: Guard) -> Write:
    """A :data:`Write` running each store call inside ``guard``."""

    def write(call: Callable[[], None]) -> None:
        with guard():
            call()

    return write


class Indexer:
    """Writes units to both stores; embeds only the units that came without a vector."""

    def __init__(self, embedder: Embedder, lexical: LexicalStore, vectors: VectorStore) -> None:
        self.embedder = embedder
        self.lexical = lexical
        self.vectors = vectors

    def index(
        self, drafts: Sequence[DraftUnit], decided: Sequence[tuple[str, str]] = (), write: Write | None = None
    ) -> list[tuple[str, str]]:
        """Write ``drafts``. ``decided`` are the (tenant, message id) of every message decided now:
        the units an earlier version of one of them left (a frontend edits a message by sending its
        id again with new text) are deleted first. Returns the (tenant, unit id) deleted. Two drafts
        with one id (a message saying the same sentence twice) are one unit: the last is written.
        ``write`` wraps each store call: the removal, then each slice of ``INDEX_SLICE_UNITS`` units
        (a long answer's window makes thousands; the query service lets queries in between)."""
        write = write or call_now
        drafts = list({d.unit.id: d for d in drafts}.values())
        removed: list[tuple[str, str]] = []
        write(lambda: removed.extend(self._remove_replaced(drafts, decided)))
        for start in range(0, len(drafts), INDEX_SLICE_UNITS):
            write(partial(self._write, drafts[start : start + INDEX_SLICE_UNITS]))
        return removed

    def _remove_replaced(
        self, drafts: Sequence[DraftUnit], decided: Sequence[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        keep = {d.unit.id for d in drafts}
        by_tenant: dict[str, list[str]] = {}
        for tenant, message_id in decided:
            by_tenant.setdefault(tenant, []).append(message_id)
        removed: list[tuple[str, str]] = []
        for tenant, message_ids in by_tenant.items():
            stale = [u.id for u in self.lexical.units_from_sources(tenant, message_ids) if u.id not in keep]
            if stale:
                self.vectors.delete(tenant, stale)
                self.lexical.delete(tenant, stale)
                removed += [(tenant, uid) for uid in stale]
        return removed

    def _write(self, drafts: Sequence[DraftUnit]) -> None:
        embedded = [d for d in drafts if d.unit.has_vector]
        missing = [i for i, d in enumerate(embedded) if d.vector is None]
        fresh = self.embedder.encode([embed_text(embedded[i].unit) for i in missing])
        matrix = np.zeros((len(embedded), self.embedder.dim), dtype=np.float32)
        for row, i in enumerate(missing):
            matrix[i] = fresh[row]
        for i, d in enumerate(embedded):
            if d.vector is not None:
                matrix[i] = np.asarray(d.vector, dtype=np.float32)
        if embedded:
            self.vectors.upsert([d.unit for d in embedded], matrix)
        self.lexical.upsert([d.unit for d in drafts])
