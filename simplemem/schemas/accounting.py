"""What happened to every message: rejected at the door, or accepted and then indexed/filtered/failed."""

from __future__ import annotations

from collections import Counter
from enum import StrEnum

from pydantic import BaseModel, Field


class Outcome(StrEnum):
    INDEXED = "indexed"
    FILTERED = "filtered"
    FAILED = "failed"


class MessageOutcome(BaseModel):
    tenant_id: str
    session_id: str | None = None
    message_id: str
    outcome: Outcome
    units: int = 0
    score: float | None = Field(None, description="the window's information score")
    reason: str | None = None


class Rejection(BaseModel):
    where: str = Field(description="line number, offset or message id of the raw input")
    reason: str


class IngestReport(BaseModel):
    """Totals for one ingestion run; ``accepted == indexed + filtered + failed`` once flushed."""

    read: int = 0
    rejected: list[Rejection] = Field(default_factory=list)
    accepted: int = 0
    windows: int = 0
    windows_filtered: int = 0
    units: int = 0
    derived: int = Field(0, description="derived lines (timeline, profile, instruction, preference) written")
    code_blocks: int = 0
    pii_scrubbed: int = 0
    repetition_dropped_chars: int = Field(
        0, description="characters of degenerate repetition (a line or cell looped) removed from messages"
    )
    llm_fallbacks: int = 0
    outcomes: Counter[str] = Field(default_factory=Counter)
    filtered_scores: list[float] = Field(default_factory=list)
    failures: list[MessageOutcome] = Field(default_factory=list)
    replaced: list[tuple[str, str]] = Field(
        default_factory=list, description="(tenant, unit id) deleted because their message was edited"
    )

    @property
    def discard_rate(self) -> float:
        decided = self.outcomes[Outcome.INDEXED] + self.outcomes[Outcome.FILTERED]
        return self.outcomes[Outcome.FILTERED] / decided if decided else 0.0

    def merge(self, other: IngestReport) -> None:
        """Add ``other``'s counts and lists to these (a part of the run counted on another thread)."""
        for name, value in other:
            mine = getattr(self, name)
            if isinstance(mine, Counter):
                mine.update(value)
            elif isinstance(mine, list):
                mine.extend(value)
            else:
                setattr(self, name, mine + value)

    def record(self, outcome: MessageOutcome) -> None:
        self.outcomes[outcome.outcome] += 1
        if outcome.outcome == Outcome.FAILED:
            self.failures.append(outcome)
