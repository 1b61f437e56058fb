"""Long queries reach the stores in bounded expressions, or are rejected at the edge with the limit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from simplemem.processors.retrieval.config import RetrievalConfig
from simplemem.processors.retrieval.retriever import Retriever
from simplemem.processors.stores.protocols import Hit, SymbolicFilter
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.settings import Settings, get_settings

# About 1,000 capitalised words: each is a name candidate and a search term (issue 15).
LONG_QUERY = " ".join(f"Visitor{i} Sparrow{i}" for i in range(500)) + " Dana pilot?"


class NoVectors:
    """The vector side is not what this is about: it finds nothing."""

    def search(self, tenant_id: str, vector: object, limit: int, flt: SymbolicFilter) -> list[Hit]:
        return []

    def vectors(self, tenant_id: str, ids: list[str]) -> dict[str, np.ndarray]:
        return {}


class ZeroEmbedder:
    dim = 4

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), self.dim), dtype=np.float32)


@pytest.fixture
def long_queries(monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("SIMPLEMEM_MAX_QUERY_CHARS", str(len(LONG_QUERY)))
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


def test_a_query_over_the_limit_is_rejected_naming_it() -> None:
    limit = get_settings().max_query_chars
    with pytest.raises(ValidationError) as info:
        QueryRequest(tenant_id="acme", query="x" * (limit + 1))
    assert f"over the limit of {limit}" in str(info.value)


def test_a_long_query_is_answered_from_bounded_store_expressions(
    tmp_path: Path, long_queries: Settings
) -> None:
    lexical = SqliteLexicalStore(tmp_path / "lexical.sqlite")
    try:
        lexical.upsert(
            [
                MemoryUnit.build(
                    tenant_id="acme",
                    text="Dana works as a pilot for Skyline Air.",
                    kind=MemoryKind.FACT,
                    source_ids=["m1"],
                    stated_at="2026-02-01T10:00:00+00:00",
                    persons=["Dana"],
                )
            ]
        )
        config = RetrievalConfig.from_settings(long_queries)
        retriever = Retriever(config, lexical, NoVectors(), ZeroEmbedder())  # type: ignore[arg-type]
        result = retriever.query(QueryRequest(tenant_id="acme", query=LONG_QUERY))
    finally:
        lexical.close()
    assert [m.source_ids for m in result.memories] == [["m1"]]


@pytest.mark.parametrize("as_of", ["0001-01-01T00:00:00+00:00", "9999-12-31T00:00:00+00:00"])
def test_an_as_of_out_of_bounds_is_rejected_naming_the_field(as_of: str) -> None:
    with pytest.raises(ValidationError) as info:
        QueryRequest(tenant_id="acme", query="What happened last week?", as_of=as_of)
    assert info.value.errors()[0]["loc"] == ("as_of",)
