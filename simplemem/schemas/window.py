"""Messages after scrubbing and analysis, the windows they form, and the entropy decision on each.

Analysis (tokens, entities, embedding) is computed once per message and travels with it, so that
every later stage (entropy, decomposition, indexing) reuses the one spaCy and MiniLM pass.
Nothing here holds raw PII: these objects are what window state (and its changelog) persists.
"""

from __future__ import annotations

import base64
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from simplemem.schemas.events import Role
from simplemem.schemas.keys import SessionKey

_HALF = "h:"
# numpy is imported where a vector is converted, not here: the client reads these schemas (a
# deletion record cites this module) and must not load numpy (tests/test_client.py).


def _vector_to_text(vector: list[float], dtype: str = "<f4", prefix: str = "") -> str:
    import numpy as np

    return prefix + base64.b64encode(np.asarray(vector, dtype=dtype).tobytes()).decode("ascii")


def _half_to_text(vector: list[float]) -> str:
    return _vector_to_text(vector, "<f2", _HALF)


def _vector_from_any(value: Any) -> Any:
    if isinstance(value, str):
        import numpy as np

        if value.startswith(_HALF):
            return (
                np.frombuffer(base64.b64decode(value[len(_HALF) :]), dtype="<f2").astype(np.float32).tolist()
            )
        return np.frombuffer(base64.b64decode(value), dtype="<f4").tolist()
    return value


# A MiniLM vector: a list of floats in Python, base64 little-endian float32 in JSON (a quarter of the
# bytes of a float list, and exact), since state tables and topics carry many of them.
Vector = Annotated[
    list[float],
    BeforeValidator(_vector_from_any),
    PlainSerializer(_vector_to_text, return_type=str, when_used="json"),
]

# The same at half precision in JSON ("h:" + base64 float16; reads either form): for vectors only
# compared by cosine against a threshold, such as the entropy history that every window's state
# write carries (cosines move by about 1e-3).
HalfVector = Annotated[
    list[float],
    BeforeValidator(_vector_from_any),
    PlainSerializer(_half_to_text, return_type=str, when_used="json"),
]


class Token(NamedTuple):
    """One token as the analysis pass saw it (a JSON array on the topics: five strings)."""

    text: str
    ws: str  # the whitespace after it
    pos: str  # coarse part of speech (NOUN, VERB, ...)
    tag: str  # fine Penn Treebank tag (NNP, VBD, ...)
    ent: str  # entity label with its position: "B-PERSON", "I-GPE", or ""


class Sentence(BaseModel):
    text: str
    tokens: list[Token]
    informative: bool = Field(True, description="a statement worth a memory (not small talk, not a question)")
    embedding: Vector = Field(default_factory=list, description="MiniLM vector (informative sentences only)")
    line: int = Field(
        0, description="the line of the message it starts on (statements never span list items)"
    )
    part: str | None = Field(None, description="where it stood in a list: 'item 3 (third) of 5 of ...'")


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
    repetition_dropped: int = Field(
        0, ge=0, description="characters of degenerate repetition removed before analysis (counted, not kept)"
    )
    sentences: list[Sentence] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list, description="normalised entity strings, for novelty")
    embedding: Vector = Field(default_factory=list, description="mean of the informative sentences' vectors")
    ends_session: bool = Field(False, description="the event said its conversation ends here")
    ends_exchange: bool = Field(False, description="the event said its exchange is complete")

    @property
    def session_key(self) -> SessionKey:
        return SessionKey(self.tenant_id, self.session_id)


class CloseReason(StrEnum):
    FULL = "full"
    IDLE = "idle"
    END = "end"
    PAUSE = "pause"  # the undecided tail decided after a short silence or a complete exchange


class Window(BaseModel):
    """``messages[new_from:]`` are decided on by this window; the ones before are context only."""

    tenant_id: str
    session_id: str
    messages: list[AnalyzedMessage]
    new_from: int = 0
    reason: CloseReason = CloseReason.FULL
    known_names: list[str] = Field(
        default_factory=list,
        description="lower-cased names of persons the tenant's memory already holds that the window's "
        "words equal or abbreviate: coreference recognises them written in lower case in later sessions",
    )

    @property
    def new_messages(self) -> list[AnalyzedMessage]:
        return self.messages[self.new_from :]

    @property
    def session_key(self) -> SessionKey:
        return SessionKey(self.tenant_id, self.session_id)

    @property
    def window_id(self) -> tuple[str, str, str, str]:
        """For logs: tenant, session, and the first and last message decided on."""
        ids = self.new_messages
        return (self.tenant_id, self.session_id, ids[0].message_id, ids[-1].message_id)


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
    role: Role = Role.USER
    text: str
    ts: datetime
    vector: Vector = Field(default_factory=list)
