"""Threads: a tenant's sessions grouped by what they are about, the coarsest level of its memory, and
which sessions hold a question's subject (:func:`focused_sessions`).

A long-lived tenant talks about several things over months (a budget app in spring, a job search in
summer). A question about the order or the course of one of them must read that one's sessions and
no other's, however many words the others share with it ("in what order did I ..." finds every
project's moments). Ranking lines does not tell projects apart: a session of another project holds
as many lines that match the question's words. So the sessions are grouped once per tenant:

- a session is the mean of its timeline lines' vectors, less the mean of all the tenant's lines (what
  every session shares: how requests and answers are worded, the tenant's usual domain);
- sessions join by average linkage while their cosine reaches :data:`THREAD_LINKAGE`.

A question reads one thread when that thread is its subject: nearer the question than the tenant's
lines taken together (:meth:`Threads.is_subject`). One long project's phases are threads too, and a
question about the project is as near all of its lines as it is near any phase.

Limits: the sessions of a tenant with one subject differ only by their sub-topics, which seldom reach
the linkage: each stays a thread of its own, and a thread of one session decides nothing (the usual
session rule of :mod:`.derived` does). Two projects on the same subject are one thread. A tenant's
threads are kept :data:`CACHE_SECONDS`; a session begun since is a thread of its own until then. A
store that lists at most so many lines (OpenSearch: its result window, 10,000) groups the sessions of
the lines it lists; the others are threads of their own.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt
from cachetools import TTLCache

from simplemem.processors.stores.protocols import LexicalStore, Listing, VectorStore
from simplemem.schemas.memory import MemoryKind, MemoryUnit

THREAD_LINKAGE = 0.4  # cosine of two sessions' centred means at which they are one thread
CACHE_SECONDS = 300.0
CACHE_TENANTS = 1000
PAGE = 2000  # timeline lines read per listing call


@dataclass(frozen=True)
class Threads:
    """A tenant's sessions by thread, each session's timeline lines (ids, in the order stated), and
    where each thread's lines point (the unit mean of their vectors) beside where all of them do."""

    thread_of: Mapping[str, int] = field(default_factory=dict)
    lines_of: Mapping[str, Sequence[str]] = field(default_factory=dict)
    centres: Mapping[int, npt.NDArray[np.float32]] = field(default_factory=dict)
    overall: npt.NDArray[np.float32] | None = None

    def sessions(self, thread: int) -> list[str]:
        return [s for s, t in self.thread_of.items() if t == thread]

    @cached_property
    def _sizes(self) -> Counter[int]:
        return Counter(self.thread_of.values())

    def size(self, session: str | None) -> int:
        """How many sessions the thread of ``session`` holds (1 for a session it does not know)."""
        thread = self.thread_of.get(session) if session is not None else None
        return 1 if thread is None else self._sizes[thread]

    def is_subject(self, thread: int, qvec: npt.NDArray[np.float32]) -> bool:
        """Whether a question (its vector) is about ``thread`` rather than about the tenant's whole
        history: nearer the thread's lines than all the lines by :data:`SUBJECT_FACTOR`. A tenant of
        one long project has its phases as threads, and a question about the project is as near the
        whole history as any phase; one of several projects stands out from the rest."""
        centre = self.centres.get(thread)
        if centre is None or self.overall is None:
            return False
        return float(qvec @ centre) > SUBJECT_FACTOR * max(float(qvec @ self.overall), 0.0)


NO_THREADS = Threads()  # a tenant's sessions not grouped: each its own thread


def session_threads(
    lines: Mapping[str, npt.NDArray[np.float32]], linkage: float = THREAD_LINKAGE
) -> dict[str, int]:
    """Each session's thread number, from its lines' vectors (rows): average linkage of the
    sessions' centred means (see the module). Deterministic: sessions are taken in sorted order and
    numbered by their first session."""
    names = sorted(s for s, rows in lines.items() if len(rows))
    if not names:
        return {}
    every = np.concatenate([lines[s] for s in names])
    means = np.stack([lines[s].mean(axis=0) for s in names]) - every.mean(axis=0)
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    means = means / np.where(norms == 0, 1, norms)
    members = average_linkage(means @ means.T, linkage)
    return {names[i]: number for number, group in enumerate(members) for i in group}


def thread_centres(
    lines: Mapping[str, npt.NDArray[np.float32]], thread_of: Mapping[str, int]
) -> tuple[dict[int, npt.NDArray[np.float32]], npt.NDArray[np.float32] | None]:
    """Each thread's direction (the unit mean of its sessions' line vectors, rows of ``lines``) and
    the direction of all of them."""
    sums: dict[int, npt.NDArray[np.float32]] = {}  # a mean's direction is its sum's
    for session, rows in lines.items():
        if session in thread_of and len(rows):
            thread = thread_of[session]
            sums[thread] = sums[thread] + rows.sum(axis=0) if thread in sums else rows.sum(axis=0)
    if not sums:
        return {}, None
    return {t: _unit(total) for t, total in sums.items()}, _unit(np.sum(list(sums.values()), axis=0))


def _unit(vec: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norm = float(np.linalg.norm(vec))
    return (vec / norm if norm else vec).astype(np.float32)


def average_linkage(similarity: npt.NDArray[np.float32], linkage: float) -> list[list[int]]:
    """Groups of row indexes, merged pairwise (the most similar pair first) while the mean
    similarity between two groups' members reaches ``linkage``; each group sorted, groups by their
    first member."""
    sim = similarity.astype(np.float64, copy=True)
    n = len(sim)
    np.fill_diagonal(sim, -np.inf)
    groups: dict[int, list[int]] = {i: [i] for i in range(n)}
    while len(groups) > 1:
        a, b = divmod(int(np.argmax(sim)), n)
        if sim[a, b] < linkage:
            break
        a, b = min(a, b), max(a, b)
        na, nb = len(groups[a]), len(groups[b])
        merged = (na * sim[a] + nb * sim[b]) / (na + nb)  # Lance-Williams, average linkage
        sim[a], sim[:, a] = merged, merged
        sim[a, a] = -np.inf
        sim[b], sim[:, b] = -np.inf, -np.inf
        groups[a] = sorted(groups[a] + groups.pop(b))
    return sorted(groups.values())


# A timeline spans the sessions where its subject was talked about: a session whose lines weigh less
# than this share of the heaviest session's is about something else (another project of the user's).
SESSION_FOCUS = 0.25
# A thread's weight for a question: the relevance of its best lines, this many (all of them would
# favour the thread with the most sessions)
THREAD_BEST_LINES = 15
# A thread is a question's subject when the question is nearer its lines than all the tenant's lines by
# this factor (cosines; :meth:`Threads.is_subject`)
SUBJECT_FACTOR = 1.1


def focused_sessions(
    pool: list[str],
    relevance: dict[str, float],
    units: dict[str, MemoryUnit],
    threads: Threads,
    qvec: npt.NDArray[np.float32],
) -> set[str | None]:
    """The sessions that hold the subject of ``pool`` (each line in ``units``) for the question of
    vector ``qvec``: the thread whose best lines weigh most (:data:`THREAD_BEST_LINES`), when it has
    more than one session and is the question's subject (:meth:`Threads.is_subject`); beside it,
    or alone, the sessions of no such thread whose lines weigh at least :data:`SESSION_FOCUS` of the
    heaviest session's. A long history holds many subjects, and an order or a summary of one must
    not list the others' moments because they share its words."""
    weight: dict[str | None, float] = {}
    by_thread: dict[int, list[float]] = {}
    for uid in pool:
        session = units[uid].session_id
        weight[session] = weight.get(session, 0.0) + relevance[uid]
        thread = threads.thread_of.get(session) if session is not None else None
        if thread is not None:
            by_thread.setdefault(thread, []).append(relevance[uid])
    heaviest = max(weight.values(), default=0.0)
    kept = {s for s in weight if weight[s] >= SESSION_FOCUS * heaviest}  # the session rule
    if not by_thread:
        return kept
    score = {t: sum(sorted(found, reverse=True)[:THREAD_BEST_LINES]) for t, found in by_thread.items()}
    top = max(sorted(score), key=score.__getitem__)
    subject = threads.sessions(top)
    if len(subject) < 2 or not threads.is_subject(top, qvec):
        return kept
    return {*subject, *(s for s in kept if threads.size(s) < 2)}


class TenantThreads:
    """Each tenant's :class:`Threads`, read from its timeline lines and kept for a while (see the
    module): they change only as sessions are added."""

    def __init__(
        self,
        lexical: LexicalStore,
        vectors: VectorStore,
        ttl: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lexical = lexical
        self.vectors = vectors
        self._kept: TTLCache[str, Threads] = TTLCache(maxsize=CACHE_TENANTS, ttl=ttl, timer=clock)
        self._lock = threading.Lock()

    def of(self, tenant_id: str) -> Threads:
        with self._lock:
            found = self._kept.get(tenant_id)
        if found is None:
            found = self.read(tenant_id)
            with self._lock:
                self._kept[tenant_id] = found
        return found

    def read(self, tenant_id: str) -> Threads:
        """The tenant's threads from every timeline line it holds, read a page at a time."""
        lines_of: dict[str, list[str]] = {}
        offset = 0
        while True:
            page, total = self.lexical.listing(
                tenant_id, Listing(kind=MemoryKind.TIMELINE.value), offset, PAGE
            )
            for unit in page:
                if unit.session_id is not None:
                    lines_of.setdefault(unit.session_id, []).append(unit.id)
            offset += len(page)
            if not page or offset >= total:
                break
        vectors = self.vectors.vectors(tenant_id, [uid for ids in lines_of.values() for uid in ids])
        rows = {
            session: np.stack([vectors[uid] for uid in ids if uid in vectors]).astype(np.float32)
            for session, ids in lines_of.items()
            if any(uid in vectors for uid in ids)
        }
        thread_of = session_threads(rows)
        return Threads(thread_of, lines_of, *thread_centres(rows, thread_of))
