"""The memory unit: the compact, self-contained statement that the stores index."""

from __future__ import annotations

import hashlib
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class MemoryKind(StrEnum):
    FACT = "fact"
    CODE = "code"
    ABSTRACT = "abstract"


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"


def memory_id(tenant_id: str, kind: MemoryKind | str, source_ids: list[str], text: str) -> str:
    """Deterministic id: the same tenant, sources and text give the same id, so replays upsert."""
    h = hashlib.sha256()
    for part in (tenant_id, str(kind), "\x1f".join(sorted(source_ids)), text):
        h.update(part.encode("utf-8"))
        h.update(b"\x1e")
    return h.hexdigest()[:32]


class MemoryUnit(BaseModel):
    """One atomic memory. ``source_ids`` are the exact messages it came from (provenance, forgetting)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tenant_id: str
    text: str
    kind: MemoryKind = MemoryKind.FACT
    event_time: str | None = Field(None, description="ISO-8601 date/week/month/year the fact refers to")
    stated_at: str = Field(description="ISO-8601 time of the message that stated it")
    speaker: str | None = None
    persons: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    topic: str | None = None
    location: str | None = None
    source_ids: list[str] = Field(default_factory=list)
    context: str | None = Field(None, description="for code: the prose around it, searched but not returned")
    session_id: str | None = None
    status: MemoryStatus = MemoryStatus.ACTIVE

    @classmethod
    def build(
        cls, *, tenant_id: str, text: str, kind: MemoryKind, source_ids: list[str], **fields: object
    ) -> MemoryUnit:
        """Create a unit with its deterministic id."""
        uid = memory_id(tenant_id, kind, source_ids, text)
        return cls(id=uid, tenant_id=tenant_id, text=text, kind=kind, source_ids=source_ids, **fields)
