"""Which messages a unit comes from (``source_ids``) and which its context quotes (``context_ids``):
keyword fields of the units' index, read by message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simplemem.processors.stores.opensearch_lexical.base import (
    _HITS_AND_TOTAL,
    MAX_RESULT_WINDOW,
    UNITS_PER_MESSAGE_GUESS,
    OpenSearchBase,
    _fields,
    _hits,
)
from simplemem.schemas.memory import MemoryUnit


class OpenSearchProvenance(OpenSearchBase):
    def units_from_sources(
        self, tenant_id: str, source_ids: Sequence[str], *, with_context: bool = True
    ) -> list[MemoryUnit]:
        if not source_ids:
            return []
        query = {"bool": {"filter": [*self._filters(tenant_id), {"terms": {"source_ids": list(source_ids)}}]}}
        return self._all_units(tenant_id, query, len(source_ids) * UNITS_PER_MESSAGE_GUESS, with_context)

    def sources_with_units(self, tenant_id: str, source_ids: Sequence[str]) -> set[str]:
        """One aggregation over the messages' ids: no document is read."""
        ids = sorted(set(source_ids))
        if not ids:
            return set()
        body = {
            "size": 0,
            "query": {"bool": {"filter": [*self._filters(tenant_id), {"terms": {"source_ids": ids}}]}},
            "aggs": {"sources": {"terms": {"field": "source_ids", "include": ids, "size": len(ids)}}},
        }
        buckets = self._search(tenant_id, body)["aggregations"]["sources"]["buckets"]
        return {b["key"] for b in buckets}

    def units_quoting(self, tenant_id: str, message_ids: Sequence[str]) -> list[MemoryUnit]:
        if not message_ids:
            return []
        query = {
            "bool": {"filter": [*self._filters(tenant_id), {"terms": {"context_ids": list(message_ids)}}]}
        }
        return self._all_units(tenant_id, query, len(message_ids) * UNITS_PER_MESSAGE_GUESS)

    def _all_units(
        self, tenant_id: str, query: dict[str, Any], guess: int, with_context: bool = True
    ) -> list[MemoryUnit]:
        """Every unit matching ``query`` (up to the result window), asking for ``guess`` first."""
        size = max(1, min(guess, MAX_RESULT_WINDOW))
        while True:
            body = {
                "size": size,
                "_source": _fields(with_context),
                "track_total_hits": MAX_RESULT_WINDOW,
                "query": query,
            }
            result = self._search(tenant_id, body, filter_path=_HITS_AND_TOTAL)
            hits, total = _hits(result), int(result["hits"]["total"]["value"])
            if len(hits) >= total or size == MAX_RESULT_WINDOW:
                return self._with_contexts(tenant_id, hits, with_context)
            size = min(total, MAX_RESULT_WINDOW)
