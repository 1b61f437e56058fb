"""The memory unit: the compact, self-contained statement that the stores index."""

from __future__ import annotations

import hashlib
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from simplemem.schemas.events import Role


class MemoryKind(StrEnum):
    FACT = "fact"
    CODE = "code"
    ABSTRACT = "abstract"
    # derived by consolidation from the units' messages, one short line each (docs/consolidation.md)
    TIMELINE = "timeline"  # a dated mention of what the user brought up
    PROFILE = "profile"  # a stable fact the user stated about themselves
    INSTRUCTION = "instruction"  # a standing instruction to the assistant ("always ...")
    PREFERENCE = "preference"  # a stated preference ("I prefer ...")


# Derived lines are searched apart from the units: a question asks for them by kind.
DERIVED_KINDS = frozenset(
    {MemoryKind.TIMELINE, MemoryKind.PROFILE, MemoryKind.INSTRUCTION, MemoryKind.PREFERENCE}
)


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"


MEMORY_ID_CHARS = 32  # hex digits of a memory id: 128 bits of SHA-256, no collision in any tenant's life


def memory_id(tenant_id: str, kind: MemoryKind | str, source_ids: list[str], text: str) -> str:
    """Deterministic id: the same tenant, sources and text give the same id, so replays upsert."""
    h = hashlib.sha256()
    for part in (tenant_id, str(kind), "\x1f".join(sorted(source_ids)), text):
        h.update(part.encode("utf-8"))
        h.update(b"\x1e")
    return h.hexdigest()[:MEMORY_ID_CHARS]


class UnitContent(BaseModel):
    """What a decomposer says about one statement (also the LLM decomposer's output contract)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)
    event_time: str | None = Field(None, description="ISO-8601 date/week/month/year the fact refers to")
    persons: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    topic: str | None = None
    location: str | None = None
    source_ids: list[str] = Field(min_length=1, description="the exact messages it came from")


class MemoryUnit(UnitContent):
    """One atomic memory, as stored. ``source_ids`` give provenance (and what to forget with a message)."""

    id: str
    tenant_id: str
    kind: MemoryKind = MemoryKind.FACT
    stated_at: str = Field(description="ISO-8601 time of the message that stated it")
    speaker: str | None = None
    role: Role = Field(
        Role.USER,
        description="the speaker's role: a question about the user's own life favours what the user said",
    )
    context: str | None = Field(
        None, description="the message around the statement (for code: its prose); searched, not returned"
    )
    session_id: str | None = None
    status: MemoryStatus = MemoryStatus.ACTIVE
    context_ids: list[str] = Field(
        default_factory=list,
        description="other messages whose words ``context`` quotes (the question a statement answers): "
        "forgetting one of them strips the context",
    )
    superseded_by: str | None = Field(
        None, description="the newer memory that changed this one's fact (knowledge update); still kept"
    )
    supersedes: list[str] = Field(
        default_factory=list, description="the older memories this one superseded (undone if it is forgotten)"
    )
    has_vector: bool = Field(
        True,
        description="in the vector store; False: searched by its words only (a long answer's later "
        "statements: its first carries the answer's vector)",
    )
    archived_in: str | None = Field(
        None, description="an archived memory: the abstract that consolidated it (provenance both ways)"
    )

    @classmethod
    def build(
        cls, *, tenant_id: str, text: str, kind: MemoryKind, source_ids: list[str], **fields: object
    ) -> MemoryUnit:
        """Create a unit with its deterministic id."""
        uid = memory_id(tenant_id, kind, source_ids, text)
        return cls(id=uid, tenant_id=tenant_id, text=text, kind=kind, source_ids=source_ids, **fields)
