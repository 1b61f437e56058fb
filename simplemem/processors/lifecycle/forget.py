"""The right to be forgotten: a message (or a whole tenant) and everything derived from it, gone
from every store.

Order: the tombstones first (so ingestion running meanwhile, and any later replay, drops the
message), then the memories: every unit made from a forgotten message is deleted from the vector and
the lexical store; a unit that only quotes one in its context (the question it answers) loses the
quote; a supersession made by a deleted unit is undone; an abstract that summarised one is
recomputed from its remaining members (:data:`Reabstract`). Then the recent-turn buffer, then the
stores are made to drop deleted bytes from disk (``forget_expunge``). The deletion record (who, when,
which ids, counts; no content) is written last, with the time it completed.

The caller publishes :attr:`ForgetResult.deleted` as tombstones and :attr:`ForgetResult.written`
as new records on the compacted units topic (simplemem/streams/), when there is one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from simplemem.processors.retrieval.buffer import RecentTurnBuffer
from simplemem.processors.stores.batched import batches
from simplemem.processors.stores.protocols import LexicalStore, VectorStore
from simplemem.processors.stores.tombstones import Tombstones
from simplemem.schemas.memory import MemoryKind, MemoryStatus, MemoryUnit
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import ConsolidationDecision, DeletionRecord, DeletionRequest

log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]


@dataclass
class Rewrite:
    """Units to write in place of others: ``vectors`` for the new ones (the rest keep theirs)."""

    units: list[MemoryUnit] = field(default_factory=list)
    vectors: dict[str, Vector] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    decision: ConsolidationDecision | None = None  # what became of an abstract (the audit trail)


# What becomes of an abstract when some of its members are forgotten: given the abstract and its
# remaining (archived) members, the units to write and the ids to delete. The consolidation stage
# supplies one that recomputes the abstract; the default dissolves it.
Reabstract = Callable[[MemoryUnit, list[MemoryUnit], LexicalStore, VectorStore], Rewrite]


def dissolve(
    abstract: MemoryUnit, members: list[MemoryUnit], _lex: LexicalStore, _vec: VectorStore
) -> Rewrite:
    """Delete the abstract and restore its remaining members to active retrieval."""
    restored = [m.model_copy(update={"status": MemoryStatus.ACTIVE, "archived_in": None}) for m in members]
    return Rewrite(units=restored, deleted=[abstract.id])


@dataclass
class Stores:
    lexical: LexicalStore
    vectors: VectorStore
    buffer: RecentTurnBuffer | None = None


@dataclass
class ForgetResult:
    record: DeletionRecord
    deleted: list[str] = field(default_factory=list)  # unit ids removed from every store
    written: list[MemoryUnit] = field(default_factory=list)  # units rewritten (quote stripped, ...)
    decisions: list[ConsolidationDecision] = field(default_factory=list)  # abstracts recomputed


def forget(
    request: DeletionRequest,
    stores: Stores,
    tombstones: Tombstones,
    settings: Settings,
    *,
    reabstract: Reabstract = dissolve,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> ForgetResult:
    """Carry out ``request`` on every store; returns what changed and the deletion record."""
    tombstones.add(request)
    tenant = request.tenant_id
    written: list[MemoryUnit] = []
    decisions: list[ConsolidationDecision] = []
    if request.whole_tenant:
        deleted = _forget_tenant(tenant, stores, settings.forget_batch_units)
        buffered = stores.buffer.forget(tenant, None) if stores.buffer else 0
    else:
        ids = list(dict.fromkeys(request.message_ids))
        deleted, written, decisions = _forget_messages(tenant, ids, stores, settings, reabstract)
        buffered = stores.buffer.forget(tenant, ids) if stores.buffer else 0
    stores.vectors.flush()
    if settings.forget_expunge:
        stores.lexical.expunge()
        stores.vectors.expunge()
    record = DeletionRecord(
        request=request,
        completed_at=clock(),
        units_deleted=len(deleted),
        units_rewritten=len(written),
        buffer_turns_removed=buffered,
    )
    tombstones.record(record)
    log.info(
        "forgot %s of tenant %s: %d units deleted, %d rewritten, %d buffered turns, %.3f s",
        "everything" if request.whole_tenant else f"{len(request.message_ids)} messages",
        tenant,
        record.units_deleted,
        record.units_rewritten,
        buffered,
        record.seconds,
    )
    return ForgetResult(record, deleted, written, decisions)


def _forget_tenant(tenant: str, stores: Stores, batch: int) -> list[str]:
    ids = [u.id for page in stores.lexical.iter_units(tenant, batch) for u in page]
    delete(tenant, ids, stores, batch)
    stores.vectors.delete_tenant(tenant)  # any vector whose document never got written
    return ids


def _lookup(
    fetch: Callable[[str, Sequence[str]], list[MemoryUnit]], tenant: str, ids: list[str], size: int
) -> list[MemoryUnit]:
    found: dict[str, MemoryUnit] = {}
    for part in batches(ids, size):
        found.update((u.id, u) for u in fetch(tenant, part))
    return list(found.values())


def _forget_messages(
    tenant: str, ids: list[str], stores: Stores, settings: Settings, reabstract: Reabstract
) -> tuple[list[str], list[MemoryUnit], list[ConsolidationDecision]]:
    lex, size = stores.lexical, settings.store_expression_terms
    decisions: list[ConsolidationDecision] = []
    forgotten = set(ids)
    derived = _lookup(lex.units_from_sources, tenant, ids, size)
    doomed = {u.id: u for u in derived if u.kind != MemoryKind.ABSTRACT}
    changed: dict[str, MemoryUnit] = {}
    new_vectors: dict[str, Vector] = {}

    # an abstract is recomputed from its members that remain
    for abstract in (u for u in derived if u.kind == MemoryKind.ABSTRACT):
        members = [
            m
            for m in _lookup(lex.units_from_sources, tenant, abstract.source_ids, size)
            if m.archived_in == abstract.id and m.id not in doomed and not forgotten & set(m.source_ids)
        ]
        rewrite = reabstract(abstract, members, lex, stores.vectors)
        for uid in rewrite.deleted:
            doomed.setdefault(uid, abstract)
        changed.update((u.id, u) for u in rewrite.units)
        new_vectors.update(rewrite.vectors)
        if rewrite.decision is not None:
            decisions.append(rewrite.decision)

    # quotes of a forgotten message in the context of a unit that stays
    for unit in _lookup(lex.units_quoting, tenant, ids, size):
        if unit.id not in doomed:
            base = changed.get(unit.id, unit)
            changed[unit.id] = base.model_copy(update={"context": None, "context_ids": []})

    # supersessions that pointed at a deleted unit
    _undo_supersessions(tenant, doomed.values(), set(doomed), changed, lex, size)

    deleted = list(doomed)
    delete(tenant, deleted, stores, settings.forget_batch_units)
    written = [u for uid, u in changed.items() if uid not in doomed]
    save(tenant, written, new_vectors, stores)
    return deleted, written, decisions


def _undo_supersessions(
    tenant: str,
    deleted_units: Iterable[MemoryUnit],
    deleted: set[str],
    changed: dict[str, MemoryUnit],
    lex: LexicalStore,
    size: int,
) -> None:
    """An older memory superseded by a deleted one is current again; a newer one forgets the
    pointer to a deleted older one."""
    related = {
        r for u in deleted_units for r in [*u.supersedes, *([u.superseded_by] if u.superseded_by else [])]
    }
    related -= deleted
    for unit in _lookup(lex.get, tenant, sorted(related), size):
        base = changed.get(unit.id, unit)
        update: dict[str, object] = {"supersedes": [s for s in base.supersedes if s not in deleted]}
        if base.superseded_by in deleted:
            update["superseded_by"] = None
        changed[unit.id] = base.model_copy(update=update)


def delete(tenant: str, ids: Sequence[str], stores: Stores, size: int) -> None:
    """Delete units from both stores, ``size`` ids a call."""
    for part in batches(ids, size):
        stores.vectors.delete(tenant, part)
        stores.lexical.delete(tenant, part)


def save(tenant: str, units: Sequence[MemoryUnit], new_vectors: dict[str, Vector], stores: Stores) -> None:
    """Write ``units`` to both stores; a unit without a new vector keeps the one stored for it."""
    if not units:
        return
    kept = stores.vectors.vectors(tenant, [u.id for u in units if u.id not in new_vectors])
    rows = [(u, new_vectors.get(u.id, kept.get(u.id))) for u in units]
    missing = [u.id for u, v in rows if v is None and u.has_vector]
    if missing:  # never written to the vector store (a failed write): lexical only
        log.warning("%d units have no stored vector; rewritten in the lexical store only", len(missing))
    with_vectors = [(u, v) for u, v in rows if v is not None]
    if with_vectors:
        stores.vectors.upsert([u for u, _ in with_vectors], np.stack([v for _, v in with_vectors]))
    stores.lexical.upsert(list(units))
