"""Query request and result: the contract of ``simplemem query --json`` (keep it stable)."""

from __future__ import annotations

from datetime import datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from schemas.keys import check_id
from schemas.memory import MemoryKind
from schemas.settings import get_settings
from schemas.timebounds import check_time


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    tenant_id: str = Field(min_length=1)
    query: str = Field(min_length=1)
    as_of: AwareDatetime | None = None
    include_archived: bool = Field(
        False, description="also search memories archived by consolidation (the originals behind abstracts)"
    )

    @field_validator("tenant_id")
    @classmethod
    def _tenant_id(cls, value: str) -> str:
        return check_id(value, tenant=True)

    @field_validator("as_of")
    @classmethod
    def _as_of(cls, value: datetime | None) -> datetime | None:
        return None if value is None else check_time(value)

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        limit = get_settings().max_query_chars
        if len(value) > limit:
            raise ValueError(
                f"{len(value)} characters, over the limit of {limit} (SIMPLEMEM_MAX_QUERY_CHARS)"
            )
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


class TimeRange(BaseModel):
    """A closed interval of days the query restricts ``event_time`` to."""

    start: datetime
    end: datetime
    phrase: str
