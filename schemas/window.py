"""Messages after scrubbing and analysis, the windows they form, and the entropy decision on each.

Analysis (tokens, entities, embedding) is computed once per message and travels with it, so that
every later stage (entropy, decomposition, indexing) reuses the one spaCy and MiniLM pass.
Nothing here holds raw PII: these objects are what window state (and its changelog) persists.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from schemas.events import Role

# One token: (text, trailing whitespace, coarse POS, fine tag, entity label as "B-PERSON"/"I-GPE"/"")
Token = tuple[str, str, str, str, str]


class Sentence(BaseModel):
    text: str
    tokens: list[Token]
    informative: bool = Field(True, description="a statement worth a memory (not small talk, not a question)")
    embedding: list[float] = Field(
        default_factory=list, description="MiniLM vector (informative sentences only)"
    )


class AnalyzedMessage(BaseModel):
    """A chat message after PII scrubbing, code extraction and one NLP + embedding pass."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: str
    session_id: str
    message_id: str
    speaker: str
    role: Role
    ts: datetime
    text: str = Field(description="the scrubbed text (placeholders like <PHONE_NUMBER>)")
    pii_types: list[str] = Field(default_factory=list, description="types scrubbed, never the values")
    code_blocks: list[str] = Field(default_factory=list, description="verbatim code found in the message")
    prose: str = Field("", description="the scrubbed text without its code blocks")
    sentences: list[Sentence] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list, description="normalised entity strings, for novelty")
    embedding: list[float] = Field(
        default_factory=list, description="mean of the informative sentences' vectors"
    )

    @property
    def session_key(self) -> str:
        return f"{self.tenant_id}|{self.session_id}"


class CloseReason(StrEnum):
    FULL = "full"
    IDLE = "idle"
    END = "end"


class Window(BaseModel):
    """``messages[new_from:]`` are decided on by this window; the ones before are context only."""

    tenant_id: str
    session_id: str
    messages: list[AnalyzedMessage]
    new_from: int = 0
    reason: CloseReason = CloseReason.FULL

    @property
    def new_messages(self) -> list[AnalyzedMessage]:
        return self.messages[self.new_from :]

    @property
    def window_id(self) -> str:
        ids = self.new_messages
        return f"{self.tenant_id}|{self.session_id}|{ids[0].message_id}..{ids[-1].message_id}"


class EntropyScore(BaseModel):
    score: float
    novelty: float
    divergence: float
    kept: bool


class BufferedTurn(BaseModel):
    """A recent turn in the lookaside buffer: scrubbed, with its vector, queryable before indexing."""

    tenant_id: str
    session_id: str
    message_id: str
    speaker: str
    text: str
    ts: datetime
    vector: list[float] = Field(default_factory=list)
