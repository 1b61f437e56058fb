"""The records on the internal and output topics (besides the chat event and the memory unit).

``simplemem.scrubbed`` carries :class:`ScrubbedRecord` (a scrubbed turn, or an idle check for a
session), ``simplemem.dlq`` carries :class:`DeadLetter`, ``simplemem.outcomes`` carries
:class:`simplemem.schemas.accounting.MessageOutcome`, ``simplemem.deletions`` carries :class:`DeletionRequest`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field, model_validator

from simplemem.schemas.keys import ItemId, SessionKey, TenantId
from simplemem.schemas.window import AnalyzedMessage


class SourceRef(BaseModel):
    """Where a record came from: a replayed record keeps the position of its original turn."""

    topic: str
    partition: int
    offset: int


class ScrubbedRecord(BaseModel):
    """One item for the memory stage, keyed by its session (:class:`SessionKey`) like its turn."""

    tenant_id: str
    session_id: str
    message: AnalyzedMessage | None = Field(None, description="a scrubbed, analysed turn (no vectors yet)")
    source: SourceRef | None = Field(None, description="the turn's position on the turns topic")
    idle_check_at: float | None = Field(
        None, description="wall-clock time of an idle check (then ``message`` is empty)"
    )
    scrubbed_at: float | None = Field(
        None,
        description="wall-clock time the scrub stage wrote the turn: the memory stage reads silences "
        "from the records' own times, so a replay cuts the same windows as the first run",
    )

    @property
    def at(self) -> float | None:
        """When this record happened (its turn was scrubbed, or its idle check was sent)."""
        return self.scrubbed_at if self.message is not None else self.idle_check_at

    @property
    def session_key(self) -> SessionKey:
        return SessionKey(self.tenant_id, self.session_id)

    @classmethod
    def turn(cls, message: AnalyzedMessage, source: SourceRef, at: float | None = None) -> ScrubbedRecord:
        return cls(
            tenant_id=message.tenant_id,
            session_id=message.session_id,
            message=message,
            source=source,
            scrubbed_at=at,
        )

    @classmethod
    def idle_check(cls, key: SessionKey, at: float) -> ScrubbedRecord:
        return cls(tenant_id=key.tenant_id, session_id=key.session_id, idle_check_at=at)


class FailurePoint(StrEnum):
    """Where a dead letter's record failed. On the wire and in ``simplemem dlq --stage`` it keeps its
    first name, ``stage``."""

    VALIDATE = "validate"
    ANALYZE = "analyze"
    MEMORIZE = "memorize"  # a record the memorize step could not read or process
    DECOMPOSE = "decompose"
    INDEX = "index"
    FORGET = "forget"  # a deletion request the forget agent could not read
    CONSOLIDATE = "consolidate"  # a consolidation request the agent could not read or carry out


class DeadLetter(BaseModel):
    """A turn that could not be processed: why, where it was, and (for bad input) its exact bytes."""

    stage: FailurePoint  # where it failed (the field's name is the wire format's)
    code: str = Field(description="reason class, for metrics and filters (invalid_json, store_error, ...)")
    reason: str
    source: SourceRef = Field(description="the turn's topic/partition/offset (re-read by `dlq replay`)")
    original: str | None = Field(
        None,
        description="the raw bytes as received (base64, at most ``dlq_original_bytes`` of them), for "
        "input that never became a turn",
    )
    original_size: int | None = Field(None, description="the size of the whole raw record, in bytes")
    truncated: bool = Field(False, description="``original`` holds only the first bytes of the record")
    tenant_id: str | None = None
    session_id: str | None = None
    message_id: str | None = None
    failed_at: datetime


class DeletionRequest(BaseModel):
    """Forget messages and everything derived from them, or a whole tenant (the forget path).

    Carries ids only, never content, so the deletions topic and the deletion log stay PII-free.
    """

    tenant_id: TenantId
    message_ids: list[ItemId] = Field(
        default_factory=list, description="messages to forget; empty with ``whole_tenant``"
    )
    whole_tenant: bool = Field(False, description="forget every message and memory of the tenant")
    requested_by: str = Field("unknown", description="who asked: an API key id, 'admin' or 'cli'")
    requested_at: datetime

    @model_validator(mode="after")
    def _one_scope(self) -> DeletionRequest:
        if self.whole_tenant == bool(self.message_ids):
            raise ValueError("name message_ids, or set whole_tenant without message_ids")
        return self


class DeletionRecord(BaseModel):
    """The record of one deletion: who asked, when, which ids, when it was done. No content."""

    request: DeletionRequest
    completed_at: datetime
    units_deleted: int = Field(0, description="memories removed from every store")
    units_rewritten: int = Field(
        0, description="memories kept but changed: a quote stripped, a supersession undone, an abstract"
    )
    buffer_turns_removed: int = 0

    @property
    def seconds(self) -> float:
        """From the request to gone from every store."""
        return (self.completed_at - self.request.requested_at).total_seconds()


class ConsolidationAction(StrEnum):
    CREATED = "created"  # a cluster became an abstract (possibly absorbing older abstracts)
    RECOMPUTED = "recomputed"  # a member was forgotten: the abstract made again from the rest
    DISSOLVED = "dissolved"  # too few members left: the abstract deleted, the rest active again


class ConsolidationDecision(BaseModel):
    """One consolidation decision, as published on the consolidation topic (ids and scores only),
    so it can be audited and replayed."""

    tenant_id: str
    action: ConsolidationAction
    abstract_id: str | None = Field(None, description="the abstract made (none when dissolved)")
    replaces: list[str] = Field(default_factory=list, description="abstracts it replaces (deleted)")
    member_ids: list[str] = Field(default_factory=list, description="the archived memories behind it")
    source_ids: list[str] = Field(default_factory=list, description="the messages behind it")
    min_affinity: float | None = Field(None, description="the lowest affinity with which a member joined")
    mean_affinity: float | None = None
    decided_at: datetime


class ConsolidationRequest(BaseModel):
    """Consolidate a tenant now (the workers' timer sends these, keyed by tenant, so one worker at a
    time consolidates a tenant)."""

    tenant_id: str
    reason: str = Field(description="interval, volume, or who asked")
    requested_at: datetime
