"""The HTTP contract of the browsing routes (``/v1/browse/...``) the ``/ui/`` page reads: a filtered
listing of a tenant's memories with counts, one memory's provenance, an answer with why each memory
was chosen, forgetting a message or a session. The tenant is the key's (the admin key names one).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from simplemem.schemas.keys import ItemId
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.query import QueryResult
from simplemem.schemas.stream import DeletionRecord
from simplemem.schemas.timebounds import TextDay, TextTime

# What a memory's ``state`` is: archived (consolidated into an abstract), superseded (a newer memory
# changed its fact; kept), else active.
STATES = ("active", "superseded", "archived")


def state_of(unit: MemoryUnit) -> str:
    """The state a person sees: archived, superseded (a newer memory changed its fact) or active."""
    if unit.status.value != "active":
        return unit.status.value
    return "superseded" if unit.superseded_by else "active"


class BrowseFilter(BaseModel):
    """The listing's filters; all optional, combined with AND."""

    model_config = ConfigDict(extra="forbid")

    session: ItemId | None = Field(None, description="only memories stated in this session")
    kind: MemoryKind | None = Field(
        None, description="only memories of this kind (fact, abstract, code, or a derived one: timeline, ...)"
    )
    state: Literal["active", "superseded", "archived"] | None = Field(
        None, description="a derived line (timeline, profile, ...) is active"
    )
    since: TextDay | None = Field(
        None, description="first day the memory's time (event, else stated) may touch"
    )
    until: TextDay | None = Field(None, description="last day the memory's time may touch")
    q: str | None = Field(None, min_length=1, max_length=500, description="text search (BM25, best first)")

    @property
    def empty(self) -> bool:
        return all(getattr(self, name) is None for name in type(self).model_fields)


class MemoryRow(BaseModel):
    """One memory as the listing shows it (its message's text is left out: provenance has it)."""

    id: str
    text: str
    kind: str = Field(description="whatever kind the memory has (fact, abstract, code, or a derived one)")
    state: str
    event_time: str | None
    stated_at: str
    session_id: str | None
    speaker: str | None
    source_ids: list[str]

    @classmethod
    def of(cls, unit: MemoryUnit) -> MemoryRow:
        return cls(
            id=unit.id,
            text=unit.text,
            kind=str(unit.kind),
            state=state_of(unit),
            event_time=unit.event_time,
            stated_at=unit.stated_at,
            session_id=unit.session_id,
            speaker=unit.speaker,
            source_ids=unit.source_ids,
        )


class BrowsePage(BaseModel):
    """``GET /v1/browse``: a page of the listing, in the order stated (a text search: best match
    first), with how many match (``total``)."""

    tenant_id: str
    memories: list[MemoryRow]
    offset: int
    next_offset: int | None = Field(None, description="pass as ?offset= for the next page; null at the end")
    total: int | None = Field(None, description="memories matching (a text search: within its best 500)")


class BrowseCounts(BaseModel):
    """``GET /v1/browse/counts``: how many memories match the filters, by state, kind and session."""

    tenant_id: str
    total: int = Field(description="the tenant's memories, any state")
    matching: int
    by_state: dict[str, int]
    by_kind: dict[str, int]
    sessions: dict[str, int] = Field(description="the sessions of the matching memories (the largest first)")
    sessions_left_out: int = Field(0, description="sessions beyond the ones listed")


class TimeToMemory(BaseModel):
    """From a turn's arrival to its memory indexed, over the tenant's indexed turns: a fixed histogram,
    each percentile its bucket's upper bound (at most 20% above the true value)."""

    memories: int = Field(description="indexed turns whose time was measured")
    p50_seconds: float | None
    p95_seconds: float | None


class IngestionActivity(BaseModel):
    """A tenant's ingestion accounting since its store began: every accepted turn ends indexed,
    filtered or failed (``undecided`` meanwhile)."""

    tenant_id: str
    accepted: int
    indexed: int
    filtered: int = Field(description="judged uninformative by the entropy filter")
    failed: int
    pii_scrubbed: int = Field(description="accepted turns PII was scrubbed from")
    undecided: int = Field(description="accepted, not decided yet (an open window)")
    time_to_memory: TimeToMemory


class SourceMessage(BaseModel):
    """A message a memory cites, as the store keeps it: scrubbed (PII replaced), never the raw text."""

    message_id: str
    speaker: str | None
    role: str | None
    stated_at: str | None
    session_id: str | None
    text: str | None = Field(
        description="the message's scrubbed text as kept with its memories; where the store keeps no copy "
        "(a message of one statement) its memories' texts, in order"
    )
    verbatim: bool = Field(description="``text`` is the message's kept text, not its memories' texts")
    answering: str | None = Field(
        None, description="the earlier message it answers, as its memories quote it (scrubbed)"
    )


class Provenance(BaseModel):
    """``GET /v1/browse/memories/{id}``: a memory and where it comes from."""

    memory: MemoryRow
    sources: list[SourceMessage]
    siblings: list[MemoryRow] = Field(description="the other memories derived from the same messages")
    superseded_by: MemoryRow | None = None
    supersedes: list[MemoryRow] = Field(default_factory=list)
    archived_in: MemoryRow | None = Field(None, description="the abstract that consolidated this memory")
    summarises: list[MemoryRow] = Field(default_factory=list, description="for an abstract: its members")


class AskBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    as_of: TextTime | None = None
    tenant_id: str | None = Field(None, description="the admin's choice of tenant; a tenant key's own")


class Reason(BaseModel):
    """Why a memory is in the context: the parts of its score."""

    id: str
    score: float = Field(description="its score in the ranking (fused plus boosts)")
    semantic: float = Field(description="weight x its cosine as a share of the best candidate's")
    lexical: float = Field(description="(1 - weight) x its BM25 as a share of the best candidate's")
    cosine: float | None = Field(None, description="raw cosine to the question (no vector: null)")
    bm25_rank: int | None = Field(None, description="its place among the BM25 candidates (1 = best)")
    symbolic: list[str] = Field(default_factory=list, description="the boosts and filters that favoured it")
    sibling: bool = Field(False, description="found by neither index: it came with its message's memory")


class Explained(BaseModel):
    """``POST /v1/browse/ask``: the answer an agent gets (the ``/v1/query`` contract) and why."""

    tenant_id: str
    result: QueryResult
    budget_tokens: int = Field(description="SIMPLEMEM_CONTEXT_TOKENS: the context never exceeds it")
    semantic_weight: float
    reasons: list[Reason]
    names: list[str] = Field(description="persons the question names that the memory knows")
    date_range: list[str] | None = Field(None, description="the days the question's date covers")


class ForgetBody(BaseModel):
    """``POST /v1/browse/forget``: a message or a whole session (every message of its memories and
    its turns not decided yet)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"oneOf": [{"required": ["message_id"]}, {"required": ["session_id"]}]},
    )

    # one of the two, never null: the contract's ``oneOf`` says so
    message_id: ItemId | SkipJsonSchema[None] = None
    session_id: ItemId | SkipJsonSchema[None] = None

    @field_validator("message_id", "session_id", mode="before")
    @classmethod
    def _given(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("name it, or leave it out")
        return value

    tenant_id: str | None = Field(None, description="the admin's choice of tenant; a tenant key's own")


class Forgotten(BaseModel):
    tenant_id: str
    message_ids: list[str]
    routed: str = Field(description="forgotten (embedded: done) or published (services: the workers)")
    requested_at: str
    record: DeletionRecord | None = Field(None, description="the deletion log's record, once done")
