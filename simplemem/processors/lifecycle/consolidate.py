"""Stage 2, consolidation: clusters of related memories become one ``abstract`` memory; the
originals are archived (out of active retrieval, kept, pointing at their abstract), and the abstract
carries the ``source_ids`` of every message behind it.

Affinity between two memories = beta * cosine + (1 - beta) * exp(-lambda * |days apart|). Memories
are taken in time order; each joins the cluster it has the highest affinity with (cosine to the
cluster's mean vector, time gap to its latest member) when that is at least ``consolidation_affinity``,
else starts one. Comparing with the mean, not any one member, keeps a cluster from drifting along a
chain of neighbours. Deterministic: the same memories give the same clusters and the same abstract
ids (an abstract's id is a hash of its sources and text).

Only facts are clustered, never code blocks (nor the prose of a message that carried one, which
stays beside its code); only within one tenant (every read and write names it);
a tenant is read a page at a time (``consolidation_batch_units``), at most
``consolidation_max_units`` per run. An abstract written while a run goes on comes back in a later
page, so clusters split by a page boundary meet again (recursive consolidation: an abstract that joins
a cluster is replaced by one over all their originals).

The offline summariser keeps the most typical statement (the member closest to the cluster's mean)
word for word and adds what it counted: how many memories, the days they span, and the terms most of
them share ("usually: latte 47/50"). It invents nothing. With ``SIMPLEMEM_SUMMARISER=llm`` the
statement is the model's, checked against the members (simplemem.processors.lifecycle.llm_summary); everything else
about the abstract, its id included, is the offline one's. Forgetting recomputes an abstract with the
offline summariser (a deletion must not wait for a model).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from simplemem.processors.lifecycle.forget import Rewrite, Stores, delete, save
from simplemem.processors.stores.protocols import LexicalStore, VectorStore
from simplemem.schemas.memory import MemoryKind, MemoryStatus, MemoryUnit
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import ConsolidationAction, ConsolidationDecision

Vector = npt.NDArray[np.float32]
SECONDS_PER_DAY = 86400.0
MAX_USUAL_TERMS = 3  # terms the summary counts ("usually: latte 40/47, cafe 47/47")


def _days(unit: MemoryUnit) -> float:
    return datetime.fromisoformat(unit.stated_at).timestamp() / SECONDS_PER_DAY


def _unit(v: Vector) -> Vector:
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


@dataclass(frozen=True)
class Abstract:
    """A summariser's answer: the abstract and its vector (the members' mean)."""

    unit: MemoryUnit
    vector: Vector
    fallback: bool = False  # an LLM summary was rejected and the offline one used


# Summarises one cluster's originals (facts, with their vectors in the same order).
Summariser = Callable[[str, Sequence[MemoryUnit], Vector], Abstract]


@dataclass
class Cluster:
    members: list[int] = field(default_factory=list)  # positions in the input
    total: Vector | None = None  # sum of the members' vectors
    last_day: float = 0.0
    scores: list[float] = field(default_factory=list)  # the affinity each later member joined with


def cluster(units: Sequence[MemoryUnit], vectors: Vector, settings: Settings) -> list[Cluster]:
    """Greedy, time-ordered clustering by affinity (pure: same input, same clusters)."""
    order = sorted(range(len(units)), key=lambda i: (datetime.fromisoformat(units[i].stated_at), units[i].id))
    clusters: list[Cluster] = []
    means = np.zeros((0, vectors.shape[1] if vectors.ndim == 2 else 0), dtype=np.float32)
    last = np.zeros(0, dtype=np.float64)
    beta, lam = settings.consolidation_beta, settings.consolidation_lambda
    for i in order:
        v, day = _unit(vectors[i]), _days(units[i])
        best, best_score = -1, settings.consolidation_affinity
        if clusters:
            scores = beta * (means @ v) + (1 - beta) * np.exp(-lam * np.abs(day - last))
            j = int(np.argmax(scores))  # the first of equal scores: deterministic
            if float(scores[j]) >= best_score:
                best, best_score = j, float(scores[j])
        if best < 0:
            clusters.append(Cluster([i], v.copy(), day))
            means = np.vstack([means, v[None, :]])
            last = np.append(last, day)
            continue
        c = clusters[best]
        c.members.append(i)
        c.scores.append(best_score)
        c.total = v if c.total is None else c.total + v
        c.last_day = max(c.last_day, day)
        means[best] = _unit(c.total)
        last[best] = c.last_day
    return clusters


def _span(units: Sequence[MemoryUnit]) -> tuple[str, str]:
    days = sorted(u.stated_at[:10] for u in units)
    return days[0], days[-1]


def summarise(tenant_id: str, originals: Sequence[MemoryUnit], vectors: Vector) -> tuple[MemoryUnit, Vector]:
    """The abstract of ``originals`` (facts, with their vectors in the same order) and its vector."""
    mean = _unit(vectors.sum(axis=0))
    order = sorted(range(len(originals)), key=lambda i: (-float(vectors[i] @ mean), originals[i].id))
    typical = originals[order[0]]
    n = len(originals)
    first, last = _span(originals)
    when = f"on {first}" if first == last else f"from {first} to {last}"
    terms = Counter(t for u in originals for t in {k.lower() for k in [*u.keywords, *u.entities]})
    usual = [(t, c) for t, c in sorted(terms.items(), key=lambda tc: (-tc[1], tc[0])) if 2 * c >= n]
    usual_text = ", ".join(f"{t} {c}/{n}" for t, c in usual[:MAX_USUAL_TERMS])
    text = f"{typical.text} ({n} similar memories {when}" + (
        f"; usually: {usual_text})" if usual_text else ")"
    )
    speakers = Counter(u.speaker for u in originals if u.speaker)
    persons = sorted({p for u in originals for p in u.persons})
    sources = sorted({s for u in originals for s in u.source_ids})
    latest = max(originals, key=lambda u: (datetime.fromisoformat(u.stated_at), u.id))
    unit = MemoryUnit.build(
        tenant_id=tenant_id,
        text=text,
        kind=MemoryKind.ABSTRACT,
        source_ids=sources,
        event_time=f"{first}/{last}",
        stated_at=latest.stated_at,
        speaker=min(speakers, key=lambda s: (-speakers[s], s)) if speakers else None,
        role=Counter(u.role for u in originals).most_common(1)[0][0],
        persons=persons,
        entities=sorted({e for u in originals for e in u.entities}),
        keywords=[t for t, _ in usual[:MAX_USUAL_TERMS]],
        topic=typical.topic,
        location=typical.location,
    )
    return unit, mean


def offline_summariser(tenant_id: str, originals: Sequence[MemoryUnit], vectors: Vector) -> Abstract:
    return Abstract(*summarise(tenant_id, originals, vectors))


def archived_members(
    tenant_id: str, abstract: MemoryUnit, lexical: LexicalStore, size: int
) -> list[MemoryUnit]:
    """The archived originals behind ``abstract`` (found through its sources, then its pointer)."""
    found: dict[str, MemoryUnit] = {}
    for start in range(0, len(abstract.source_ids), size):
        for u in lexical.units_from_sources(tenant_id, abstract.source_ids[start : start + size]):
            if u.archived_in == abstract.id:
                found[u.id] = u
    return sorted(found.values(), key=lambda u: u.id)


def _fetch_vectors(
    tenant_id: str, units: Sequence[MemoryUnit], vectors: VectorStore, size: int
) -> dict[str, Vector]:
    got: dict[str, Vector] = {}
    ids = [u.id for u in units]
    for start in range(0, len(ids), size):
        got.update(vectors.vectors(tenant_id, ids[start : start + size]))
    return got


def _abstract_of(
    tenant_id: str,
    originals: list[MemoryUnit],
    stored: dict[str, Vector],
    summariser: Summariser = offline_summariser,
) -> tuple[Abstract, list[MemoryUnit], Rewrite]:
    """The abstract over ``originals`` (those with a stored vector) and the rewrite that archives them."""
    with_vec = [u for u in originals if u.id in stored]
    made = summariser(tenant_id, with_vec, np.stack([stored[u.id] for u in with_vec]))
    abstract, vec = made.unit, made.vector
    archived = [
        u.model_copy(update={"status": MemoryStatus.ARCHIVED, "archived_in": abstract.id}) for u in with_vec
    ]
    vectors = {u.id: stored[u.id] for u in with_vec}
    vectors[abstract.id] = vec
    return made, archived, Rewrite(units=[*archived, abstract], vectors=vectors)


def reabstract_for(
    settings: Settings,
) -> Callable[[MemoryUnit, list[MemoryUnit], LexicalStore, VectorStore], Rewrite]:
    """What forgetting does to an abstract: made again from the members left (a new id, since its
    sources changed), or dissolved when fewer than ``consolidation_min_cluster`` remain."""

    def reabstract(
        abstract: MemoryUnit, members: list[MemoryUnit], lex: LexicalStore, vec: VectorStore
    ) -> Rewrite:
        stored = _fetch_vectors(abstract.tenant_id, members, vec, settings.store_expression_terms)
        decision = ConsolidationDecision(
            tenant_id=abstract.tenant_id,
            action=ConsolidationAction.DISSOLVED,
            replaces=[abstract.id],
            member_ids=sorted(m.id for m in members),
            decided_at=datetime.now(UTC),
        )
        if len([m for m in members if m.id in stored]) < settings.consolidation_min_cluster:
            restored = [
                m.model_copy(update={"status": MemoryStatus.ACTIVE, "archived_in": None}) for m in members
            ]
            return Rewrite(
                units=restored,
                vectors={m.id: stored[m.id] for m in members if m.id in stored},
                deleted=[abstract.id],
                decision=decision,
            )
        made, _, rewrite = _abstract_of(abstract.tenant_id, members, stored)
        new = made.unit
        rewrite.deleted = [abstract.id] if new.id != abstract.id else []
        rewrite.decision = decision.model_copy(
            update={
                "action": ConsolidationAction.RECOMPUTED,
                "abstract_id": new.id,
                "source_ids": new.source_ids,
            }
        )
        return rewrite

    return reabstract


@dataclass
class ConsolidationRun:
    decisions: list[ConsolidationDecision] = field(default_factory=list)
    written: list[MemoryUnit] = field(default_factory=list)  # abstracts and archived originals
    deleted: list[str] = field(default_factory=list)  # abstracts replaced by larger ones
    updated: list[MemoryUnit] = field(
        default_factory=list
    )  # supersession pointers set (simplemem.processors.lifecycle.updates)
    vectors: dict[str, Vector] = field(default_factory=dict)  # of ``written``: all a plan's apply needs
    read: int = 0
    summary_fallbacks: int = 0  # LLM summaries rejected (the offline one used instead)
    update_fallbacks: int = 0  # LLM update verdicts missing or malformed (the offline rule decided)


def consolidate_tenant(
    tenant_id: str,
    stores: Stores,
    settings: Settings,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    summariser: Summariser = offline_summariser,
    *,
    apply: bool = True,
) -> ConsolidationRun:
    """One consolidation run over a tenant's active facts and abstracts, a page at a time.

    ``apply=False`` only plans: the stores are read, not written, and :func:`apply_run` writes the
    plan later. The stream stage publishes a plan before applying it, so that a run cut short
    (a worker killed, a store outage mid-run) is never applied without being on the units topic."""
    run = ConsolidationRun()
    size = settings.store_expression_terms
    for page in stores.lexical.iter_units(tenant_id, settings.consolidation_batch_units):
        run.read += len(page)
        with_code = {s for u in page if u.kind == MemoryKind.CODE for s in u.source_ids}
        candidates = [
            u
            for u in page
            if u.status == MemoryStatus.ACTIVE
            and u.kind in (MemoryKind.FACT, MemoryKind.ABSTRACT)
            and not (u.kind == MemoryKind.FACT and with_code & set(u.source_ids))  # prose of a code block
        ]
        stored = _fetch_vectors(tenant_id, candidates, stores.vectors, size)
        candidates = [u for u in candidates if u.id in stored]
        if len(candidates) >= 2:
            matrix = np.stack([stored[u.id] for u in candidates])
            for c in cluster(candidates, matrix, settings):
                members = [candidates[i] for i in c.members]
                _consolidate_cluster(
                    tenant_id, members, c.scores, stores, settings, run, clock, summariser, apply
                )
        if run.read >= settings.consolidation_max_units:
            break
    return run


def apply_run(tenant_id: str, run: ConsolidationRun, stores: Stores, settings: Settings) -> None:
    """Write a planned run (``consolidate_tenant(apply=False)``): the replaced abstracts deleted,
    the new abstracts and archived originals saved. Idempotent: applying it twice changes nothing."""
    written = {u.id for u in run.written}
    gone = [uid for uid in run.deleted if uid not in written]
    delete(tenant_id, gone, stores, settings.store_expression_terms)
    save(tenant_id, run.written, run.vectors, stores)


def _consolidate_cluster(
    tenant_id: str,
    members: list[MemoryUnit],
    scores: list[float],
    stores: Stores,
    settings: Settings,
    run: ConsolidationRun,
    clock: Callable[[], datetime],
    summariser: Summariser,
    apply: bool,
) -> None:
    if len(members) < 2:
        return
    size = settings.store_expression_terms
    replaced = [m for m in members if m.kind == MemoryKind.ABSTRACT]
    originals = [m for m in members if m.kind == MemoryKind.FACT]
    for old in replaced:
        originals += archived_members(tenant_id, old, stores.lexical, size)
    if len(originals) < settings.consolidation_min_cluster:
        return
    stored = _fetch_vectors(tenant_id, originals, stores.vectors, size)
    made, archived, rewrite = _abstract_of(tenant_id, originals, stored, summariser)
    abstract = made.unit
    run.summary_fallbacks += made.fallback
    gone = [a.id for a in replaced if a.id != abstract.id]
    if apply:
        delete(tenant_id, gone, stores, size)
        save(tenant_id, rewrite.units, rewrite.vectors, stores)
    run.written += rewrite.units
    run.vectors.update(rewrite.vectors)
    run.deleted += gone
    run.decisions.append(
        ConsolidationDecision(
            tenant_id=tenant_id,
            action=ConsolidationAction.CREATED,
            abstract_id=abstract.id,
            replaces=gone,
            member_ids=sorted(u.id for u in archived),
            source_ids=abstract.source_ids,
            min_affinity=round(min(scores), 4) if scores else None,
            mean_affinity=round(sum(scores) / len(scores), 4) if scores else None,
            decided_at=clock(),
        )
    )
