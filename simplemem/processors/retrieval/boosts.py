"""What the selection adds to the fused scores of the memories it reads, from what the plan found."""

from __future__ import annotations

from dataclasses import dataclass

from simplemem.processors.retrieval.question import at_place
from simplemem.schemas.events import Role
from simplemem.schemas.memory import MemoryUnit


def share(score: float, best: float) -> float:
    """``score`` as its share of this query's ``best`` (0 when nothing scored above 0)."""
    return max(score, 0.0) / best if best > 0 else 0.0


def by_score(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Best first; ties by id, so that a ranking never depends on the order it was built in."""
    return sorted(ranked, key=lambda kv: (-kv[1], kv[0]))


@dataclass(frozen=True)
class Boosts:
    """Bonuses on the head of the ranking (one ranked below the head is not lifted into it).

    ``event``: for a question about time, a memory with an ``event_time`` (one anchored wrongly at
    ingestion is favoured all the same); ``speaker``: a memory said by one of ``speakers`` (the
    lower-cased persons the query names); ``role``: a memory said in the role ``asked`` (the one the
    question is about), in proportion to its score's share of the head's best: every line the user
    wrote is in their role, and added in full it would lift their unrelated lines ("account number
    ...") above the assistant's reply that answers the question; scaled, it reorders memories of like
    relevance. ``place``: a statement at one of the list ``places`` the question names."""

    event: float = 0.0
    speakers: frozenset[str] = frozenset()
    speaker: float = 0.0
    asked: Role | None = None
    role: float = 0.0
    places: frozenset[str] = frozenset()
    place: float = 0.0

    def of(self, unit: MemoryUnit, relevance: float = 1.0) -> float:
        """The bonus of ``unit``; ``relevance`` (its score's share of the head's best) scales the role's."""
        bonus = self.event if unit.event_time else 0.0
        if unit.speaker and unit.speaker.lower() in self.speakers:
            bonus += self.speaker
        if self.asked is not None and unit.role == self.asked:
            bonus += self.role * relevance
        if self.places and at_place(unit.text, self.places):
            bonus += self.place
        return bonus

    def apply(self, ranked: list[tuple[str, float]], units: dict[str, MemoryUnit]) -> list[tuple[str, float]]:
        if not (self.event or (self.speaker and self.speakers) or (self.role and self.asked) or self.places):
            return ranked
        best = max((sc for _, sc in ranked), default=0.0)
        return by_score(
            [(uid, sc + self.of(units[uid], share(sc, best)) if uid in units else sc) for uid, sc in ranked]
        )
