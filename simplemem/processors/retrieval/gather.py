"""Step 2, gather: the candidates of a plan, from the indexes and from every other source.

The indexes (:mod:`~simplemem.processors.retrieval.search`) give the fused ranking. Any number of
further :class:`CandidateSource` values (the recent-turn buffer is one) add scored memories of their
own; their candidates join the ranking on the same scale, and the selection treats them all alike.

To add a source: implement :class:`CandidateSource` (``fetch`` does the I/O and may run while the
indexes are searched; ``score`` turns what it fetched into ``{id: (unit, score)}``, comparing against
the indexes' best cosine if it scores by meaning), then pass it in ``Retriever.sources``. Its units
need ids no other source uses, and the plan's filters (kinds, sessions, dates) are its to honour.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from simplemem.processors.retrieval.boosts import by_score
from simplemem.processors.retrieval.derived import Aspect
from simplemem.processors.retrieval.fanout import FanOut
from simplemem.processors.retrieval.plan import Plan
from simplemem.processors.retrieval.search import IndexSearch, Ranked, with_aspect
from simplemem.schemas.memory import MemoryUnit

Scored = dict[str, tuple[MemoryUnit, float]]
Parts = Callable[[], Sequence[Aspect]]  # what gives the question's aspects, each with its vector


@dataclass
class Candidates:
    """The ranking the selection reads (ids, best first), the units already read for it (not read
    again), and the best cosine of the indexes' candidates (what a cosine is a share of)."""

    ranked: Ranked
    units: dict[str, MemoryUnit] = field(default_factory=dict)
    best_cosine: float = 0.0

    def merged(self, scored: Scored) -> Candidates:
        """These candidates with ``scored`` ones ranked among them."""
        if not scored:
            return self
        ranked = by_score([*self.ranked, *((uid, sc) for uid, (_, sc) in scored.items())])
        units = {**self.units, **{uid: u for uid, (u, _) in scored.items()}}
        return Candidates(ranked, units, self.best_cosine)


class CandidateSource(Protocol):
    """A source of memories beside the indexes (recent turns, derived memory...)."""

    def fetch(self, plan: Plan) -> Any:
        """What the source needs read for this plan (runs beside the index search)."""
        ...

    def score(self, plan: Plan, fetched: Any, qvec: np.ndarray, indexed: Candidates) -> Scored:
        """The source's candidates for ``plan`` with their scores, on the fused scale."""
        ...


@dataclass
class Gatherer:
    search: IndexSearch
    sources: Sequence[CandidateSource]
    fan_out: FanOut

    def gather(self, plan: Plan, qvec: Callable[[], np.ndarray], parts: Parts | None = None) -> Candidates:
        """The indexes' ranking with every source's candidates merged in, in the sources' order; for a
        question with :attr:`~.plan.Plan.aspects`, the indexes are searched by each of ``parts`` too
        (:func:`~.search.with_aspect`)."""
        fetched: dict[str, MemoryUnit] = {}  # units read while ranking, not read again to select

        def indexed() -> tuple[Ranked, float]:
            ranked, best_cosine = self.search.ranking(plan, qvec, fetched)
            for text, vec in parts() if parts is not None and plan.aspects else []:
                aspect, _ = self.search.ranking(replace(plan, search_text=text), constant(vec), fetched)
                ranked = with_aspect(ranked, aspect, plan.config.aspect_share)
            return ranked, best_cosine

        def prefetched() -> list[Any]:
            return [source.fetch(plan) for source in self.sources]

        (ranked, best_cosine), prepared = self.fan_out.both(indexed, prefetched)
        found = Candidates(ranked, fetched, best_cosine)
        scored: Scored = {}
        for source, what in zip(self.sources, prepared, strict=True):
            scored.update(source.score(plan, what, qvec(), found))
        return found.merged(scored)


def constant(vec: np.ndarray) -> Callable[[], np.ndarray]:
    """A vector already at hand, as the search asks for the question's (which may be on its way)."""
    return lambda: vec
