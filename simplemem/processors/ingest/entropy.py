"""Entropy-aware filter: information score = alpha * entity novelty + (1 - alpha) * semantic divergence.

Entity novelty is the share of a message's named things not seen in the session's recent history, of
the window's most novel message;
semantic divergence is how far the window's most novel statement is from its nearest statement in
the recent messages (1 - cosine, MiniLM vectors computed once per sentence). A session's first
window (nothing said before it) scores 1, whatever it names. Windows below the threshold are dropped, and counted with their scores. History is per
(tenant, session): it lives where the session's partition is processed.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, model_validator

from simplemem.processors.language.polarity import denies_of_self
from simplemem.schemas.events import Role
from simplemem.schemas.window import AnalyzedMessage, CloseReason, EntropyScore, HalfVector, Vector, Window


class SessionHistory(BaseModel):
    """The recent messages' statement vectors and entities (bounded), as plain data for a state table."""

    vectors: list[list[HalfVector]] = Field(default_factory=list, description="per message, its statements'")
    entities: list[list[str]] = Field(default_factory=list)
    message_ids: list[str] = Field(
        default_factory=list, description="per message (empty in state written before edits were handled)"
    )

    def without(self, message_ids: set[str]) -> SessionHistory:
        """The history without earlier versions of these messages: an edit is judged against what
        was said around it, not against the words it replaces."""
        if not message_ids or len(self.message_ids) != len(self.vectors):
            return self
        keep = [i for i, mid in enumerate(self.message_ids) if mid not in message_ids]
        if len(keep) == len(self.message_ids):
            return self
        return SessionHistory(
            vectors=[self.vectors[i] for i in keep],
            entities=[self.entities[i] for i in keep],
            message_ids=[self.message_ids[i] for i in keep],
        )

    @model_validator(mode="before")
    @classmethod
    def _one_vector_per_message(cls, data: Any) -> Any:
        """State written before statement vectors held one (mean) vector per message."""
        vectors = data.get("vectors") if isinstance(data, dict) else None
        if vectors and any(_is_vector(v) for v in vectors):
            data = {**data, "vectors": [[v] if len(v) else [] for v in vectors]}
        return data


def _is_vector(value: Any) -> bool:
    """One vector: base64 text (JSON state) or a list of numbers."""
    return isinstance(value, str) or (
        isinstance(value, list) and bool(value) and not isinstance(value[0], list | str)
    )


# A name in code that is no English word: snake_case, camelCase, CONSTANT_CASE or with digits
# (fetch_event, STRIPE_API_KEY, parseInt, s3_bucket). Plain words in code ("requests", "client",
# "return") are not counted: they are as common as prose.
_CODE_NAME = re.compile(
    r"(?<![\w.])(?:[A-Za-z]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z]{2,}\d*[A-Z]*|[A-Za-z]+\d\w*)(?!\w)"
)


def named_things(message: AnalyzedMessage) -> list[str]:
    """What entity novelty counts: the named entities of the message's prose, and the names its code
    defines or uses (the NER model tags no identifiers, so a window that only shares code would
    otherwise earn no novelty however new its code: a rewritten function and the settings it reads
    were dropped that way)."""
    names = {n for block in message.code_blocks for n in _CODE_NAME.findall(block)}
    return [*message.entities, *sorted(names - set(message.entities))]


def statement_vectors(message: AnalyzedMessage) -> list[Vector]:
    """A message's informative sentences' vectors (its mean vector if it carries only that)."""
    vectors = [s.embedding for s in message.sentences if len(s.embedding)]
    return vectors or ([message.embedding] if len(message.embedding) else [])


def most_divergent(new: list[Vector], past: list[Vector]) -> float:
    """1 - cosine of the new statement farthest from everything recent (each compared with its
    nearest recent statement). Means blur one new fact among the chatter around it: consecutive
    windows of a conversation share a topic centroid, and a message's mean vector mixes its fact
    with its "Thanks, Mel!"."""
    sims = np.asarray(new, dtype=np.float32) @ np.asarray(past, dtype=np.float32).T
    return float(np.clip(1.0 - sims.max(axis=1), 0.0, 1.0).max())


def share_unseen(names: list[str], seen: set[str]) -> float:
    """The share of ``names`` not in ``seen`` (0 for none). A window is as novel as its most novel
    message, as it diverges as far as its most novel statement: a user's new date or number is not
    averaged away by the dozens of names an answer's headings repeat beside it."""
    distinct = set(names)
    return len(distinct - seen) / len(distinct) if distinct else 0.0


def denial(message: AnalyzedMessage) -> bool:
    """Whether a person (not the assistant) denies something of themself in ``message``: the statement
    diverges fully whatever its vector says (:mod:`~simplemem.processors.language.polarity`), so a
    window that contradicts or corrects what the user said before is never dropped as redundant."""
    return message.role != Role.ASSISTANT and any(denies_of_self(s.text) for s in message.sentences)


class EntropyFilter:
    def __init__(
        self, threshold: float, alpha: float, history_messages: int, judged_messages: int = 1
    ) -> None:
        self.threshold = threshold
        self.alpha = alpha
        self.history_messages = history_messages
        self.judged_messages = judged_messages

    def score(self, window: Window, history: SessionHistory) -> EntropyScore:
        """Score a window against a history (pure: does not update it)."""
        judged = self.judged(window)
        history = history.without({m.message_id for m in judged})
        # Only the new messages are judged (the context part is already in the history), but at least
        # ``judged_messages`` of the window's last ones: a window a pause or a complete exchange cut
        # short (one turn) is judged on the same stretch of conversation as a full one. Judged alone,
        # one turn that names nothing new scores below the threshold more often than not, and most
        # turns would be filtered.
        seen = {e for ents in history.entities for e in ents}
        novelty = max((share_unseen(named_things(m), seen) for m in judged), default=0.0)
        new = [v for m in judged for v in statement_vectors(m)]
        past = [v for message in history.vectors for v in message]
        if not past:  # nothing said before (a session's first window): nothing in it is redundant
            divergence, novelty = 1.0, 1.0
        elif not new:
            divergence = 0.0
        elif any(denial(m) for m in judged):
            divergence = 1.0
        else:
            divergence = most_divergent(new, past)
        score = self.alpha * novelty + (1 - self.alpha) * divergence
        return EntropyScore(
            score=round(score, 4),
            novelty=round(novelty, 4),
            divergence=round(divergence, 4),
            kept=score >= self.threshold,
        )

    def judged(self, window: Window) -> list[AnalyzedMessage]:
        """The window's new messages, or, for a window a pause cut short, its last
        ``judged_messages``. (A session's last window keeps its own: it follows a full one, whose
        messages the history holds already.)"""
        new = window.new_messages
        if window.reason != CloseReason.PAUSE or len(new) >= self.judged_messages:
            return new
        return window.messages[max(0, len(window.messages) - self.judged_messages) :]

    def remember(self, history: SessionHistory, messages: list[AnalyzedMessage]) -> SessionHistory:
        """The history after ``messages`` were seen (kept or not: history is what was said); an
        edited message's earlier version leaves it."""
        history = history.without({m.message_id for m in messages})
        ids = (
            history.message_ids
            if len(history.message_ids) == len(history.vectors)
            else [""] * len(history.vectors)
        )
        n = self.history_messages
        return SessionHistory(
            vectors=(history.vectors + [statement_vectors(m) for m in messages])[-n:],
            entities=(history.entities + [named_things(m) for m in messages])[-n:],
            message_ids=(ids + [m.message_id for m in messages])[-n:],
        )
