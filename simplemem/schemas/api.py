"""The query service's HTTP contract (``simplemem serve``): keys, requests and answers.

Query answers are :class:`simplemem.schemas.query.QueryResult` as they are: the same contract as
``simplemem query --json``. The tenant of every request is the tenant of its key, never the body's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from simplemem.schemas.keys import MAX_ID_CHARS, TenantId
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.query import Count, QueryFilters, QueryResult
from simplemem.schemas.timebounds import TextTime


class ApiKeyRecord(BaseModel):
    """A tenant's key as stored: its id and the SHA-256 of its secret (the secret itself never is)."""

    key_id: str
    tenant_id: str
    secret_sha256: str
    created_at: datetime
    revoked: bool = False

    def public(self) -> dict[str, object]:
        """What listing a key shows: everything but the hash."""
        return self.model_dump(mode="json", exclude={"secret_sha256"})


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant_id: TenantId


class KeyCreated(KeyCreate):
    """``POST /v1/admin/keys``: the new key, shown only in this answer."""

    model_config = ConfigDict(extra="ignore")

    key_id: str
    key: str


class EventsAccepted(BaseModel):
    """The answer to ``POST /v1/events``: each event accepted or rejected, in request order."""

    accepted: list[str] = Field(default_factory=list, description="message ids accepted")
    rejected: list[EventError] = Field(default_factory=list)


class EventError(BaseModel):
    index: int = Field(description="the event's position in the request")
    message_id: str | None = None
    reason: str


class QueryBody(QueryFilters):
    """``POST /v1/query``: the question, ``as_of`` and filters; the tenant comes from the key."""

    id: str | None = Field(None, max_length=MAX_ID_CHARS, description="echoed in the answer")
    query: str = Field(min_length=1)
    as_of: TextTime | None = None
    tenant_id: str | None = Field(None, description="optional; must be the key's tenant")


class FeedbackBody(BaseModel):
    """``POST /v1/feedback``: an answer was wrong (a classifier miss, kept for tuning)."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    as_of: TextTime | None = None
    complexity: float | None = Field(
        None, ge=0.0, le=1.0, strict=True, description="as the wrong answer reported it"
    )
    k: Count | None = Field(None, description="as the wrong answer reported it")
    note: str | None = Field(None, max_length=500)


class FeedbackAnswer(BaseModel):
    """``POST /v1/feedback``: the miss is logged, and the question answered again at ``k_max``."""

    logged: bool
    retry: QueryResult


class FeedbackRecord(BaseModel):
    """One logged miss (scrubbed query text only: the log is durable)."""

    tenant_id: str
    query: str
    as_of: datetime | None
    complexity: float
    k: int
    retried_k: int
    note: str | None = None
    logged_at: datetime


MAX_PAGE_OFFSET = 2**53 - 1  # exact in every JSON reader, and far inside SQLite's 64-bit integers


class MemoryPage(BaseModel):
    """``GET /v1/memories``: what the tenant's memory holds, with provenance, a page at a time."""

    memories: list[MemoryUnit]
    offset: int
    next_offset: int | None = Field(None, description="pass as ?offset= for the next page; null at the end")
    total: int


class Accepted(BaseModel):
    """A request taken in for asynchronous work (a deletion routed to the forget path)."""

    status: str = "accepted"
    detail: dict[str, Any] = Field(default_factory=dict)


EventsAccepted.model_rebuild()
