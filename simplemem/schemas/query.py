"""Query request and result: the contract of ``simplemem query --json`` (keep it stable)."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from simplemem.schemas.keys import TenantId, has_control_characters
from simplemem.schemas.memory import MemoryKind
from simplemem.schemas.settings import get_settings
from simplemem.schemas.timebounds import BoundedTime, whole_number, written


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    tenant_id: TenantId
    query: str = Field(min_length=1)
    as_of: BoundedTime | None = None
    include_archived: bool = Field(
        False, description="also search memories archived by consolidation (the originals behind abstracts)"
    )

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        limit = get_settings().max_query_chars
        if len(value) > limit:
            raise ValueError(
                f"{len(value)} characters, over the limit of {limit} (SIMPLEMEM_MAX_QUERY_CHARS)"
            )
        return value


MAX_K = 1000  # far above any k_max; a bound, so the contract can say it
Day = Annotated[date, BeforeValidator(written)]
Count = Annotated[int, Field(ge=1, le=MAX_K), BeforeValidator(whole_number)]
"""A number of memories a request asks for."""
PersonName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        json_schema_extra={"pattern": r"^[^\x00-\x1f\x7f]*[^\x00-\x1f\x7f\s][^\x00-\x1f\x7f]*$"},
    ),
]


class QueryFilters(BaseModel):
    """Optional narrowing of a query, on top of what its words say (the query service's filters)."""

    model_config = ConfigDict(extra="forbid")

    k: Count | None = Field(None, description="override the adaptive k (capped at k_max)")
    persons: list[PersonName] = Field(
        default_factory=list, max_length=50, description="only memories about these persons"
    )
    since: Day | None = Field(None, description="first day the memory's time may touch")
    until: Day | None = Field(None, description="last day the memory's time may touch")
    kinds: list[MemoryKind] = Field(default_factory=list, description="only memories of these kinds")
    include_archived: bool = Field(False, strict=True, description="also memories consolidation archived")
    sessions: list[str] = Field(default_factory=list, description="only memories stated in these sessions")

    @field_validator("persons")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name.strip() or len(name) > 200 or has_control_characters(name):
                raise ValueError("each name: 1 to 200 characters, no control characters")
        return value


class RetrievedMemory(BaseModel):
    id: str
    text: str
    kind: MemoryKind
    event_time: str | None
    stated_at: str
    source_ids: list[str]
    score: float


class QueryResult(BaseModel):
    id: str | None
    query: str
    complexity: float
    k: int
    memories: list[RetrievedMemory]
    context: str
    context_tokens: int
    migration: str | None = Field(
        None, description="set while the tenant's legacy history is being imported: the answer may be partial"
    )

    def to_json(self) -> dict[str, object]:
        """The JSON contract; ``migration`` appears only when there is one."""
        data = self.model_dump(mode="json")
        if data["migration"] is None:
            del data["migration"]
        return data
