"""Entropy-aware filter: information score = alpha * entity novelty + (1 - alpha) * semantic divergence.

Entity novelty is the share of the window's named things not seen in the session's recent history;
semantic divergence is how far the window's most novel message is from its nearest recent message
(1 - cosine, MiniLM vectors computed once per message). A session's first window has no history and
scores 1. Windows below the threshold are dropped, and counted with their scores. History is per
(tenant, session): it lives where the session's partition is processed.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

from schemas.window import AnalyzedMessage, EntropyScore, Vector, Window


class SessionHistory(BaseModel):
    """The recent messages' vectors and entities (bounded), as plain data for a state table."""

    vectors: list[Vector] = Field(default_factory=list)
    entities: list[list[str]] = Field(default_factory=list)


def most_divergent(new: list[Vector], past: list[Vector]) -> float:
    """1 - cosine of the new message farthest from everything recent (each compared with its
    nearest recent message). Comparing the window's mean with the history's mean blurs one new fact
    among the window's chatter: consecutive windows of a conversation share a topic centroid."""
    sims = np.asarray(new, dtype=np.float32) @ np.asarray(past, dtype=np.float32).T
    return float(np.clip(1.0 - sims.max(axis=1), 0.0, 1.0).max())


class EntropyFilter:
    def __init__(self, threshold: float, alpha: float, history_messages: int) -> None:
        self.threshold = threshold
        self.alpha = alpha
        self.history_messages = history_messages
        self.histories: dict[str, SessionHistory] = {}

    def score(self, window: Window, history: SessionHistory) -> EntropyScore:
        """Score a window against a history (pure: does not update it)."""
        # Only the new messages are judged: the context part is already in the history.
        window_entities = {e for m in window.new_messages for e in m.entities}
        seen = {e for ents in history.entities for e in ents}
        novelty = len(window_entities - seen) / len(window_entities) if window_entities else 0.0
        new = [m.embedding for m in window.new_messages if len(m.embedding)]
        past = [v for v in history.vectors if len(v)]
        if not past:
            divergence, novelty = 1.0, 1.0 if window_entities else novelty
        elif not new:
            divergence = 0.0
        else:
            divergence = most_divergent(new, past)
        score = self.alpha * novelty + (1 - self.alpha) * divergence
        return EntropyScore(
            score=round(score, 4),
            novelty=round(novelty, 4),
            divergence=round(divergence, 4),
            kept=score >= self.threshold,
        )

    def remember(self, history: SessionHistory, messages: list[AnalyzedMessage]) -> SessionHistory:
        """The history after ``messages`` were seen (kept or not: history is what was said)."""
        vectors = (history.vectors + [m.embedding for m in messages])[-self.history_messages :]
        entities = (history.entities + [m.entities for m in messages])[-self.history_messages :]
        return SessionHistory(vectors=vectors, entities=entities)

    def decide(self, window: Window) -> EntropyScore:
        """Score against this process's history for the session, then advance that history."""
        key = f"{window.tenant_id}|{window.session_id}"
        history = self.histories.get(key, SessionHistory())
        result = self.score(window, history)
        self.histories[key] = self.remember(history, window.new_messages)
        return result
