"""The persons the memories are about: the ``person_names`` keyword field, and a name written in a
memory's own text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simplemem.processors.stores.opensearch_lexical.base import MAX_KNOWN_NAMES, OpenSearchBase, _about
from simplemem.processors.stores.protocols import MIN_NAME_PREFIX, names_matching


class OpenSearchNames(OpenSearchBase):
    def known_names(self, tenant_id: str, candidates: Sequence[str]) -> list[str]:
        lowered = sorted({c.lower() for c in candidates if c.strip()})
        if not lowered:
            return []
        should: list[dict[str, Any]] = [{"terms": {"person_names": lowered}}]
        should += [{"prefix": {"person_names": c}} for c in lowered if len(c) >= MIN_NAME_PREFIX]
        body = {
            "size": 0,
            "query": {
                "bool": {"filter": self._filters(tenant_id), "should": should, "minimum_should_match": 1}
            },
            "aggs": {"names": {"terms": {"field": "person_names", "size": MAX_KNOWN_NAMES}}},
        }
        buckets = self._search(tenant_id, body)["aggregations"]["names"]["buckets"]
        return names_matching([b["key"] for b in buckets], lowered)

    def all_names(self, tenant_id: str, limit: int) -> list[str] | None:
        body = {
            "size": 0,
            "query": {"bool": {"filter": self._filters(tenant_id)}},
            "aggs": {"names": {"terms": {"field": "person_names", "size": limit + 1}}},
        }
        buckets = self._search(tenant_id, body)["aggregations"]["names"]["buckets"]
        return None if len(buckets) > limit else sorted(b["key"] for b in buckets)

    def ids_with_names(self, tenant_id: str, ids: Sequence[str], names: Sequence[str]) -> set[str]:
        if not ids or not names:
            return set()
        body = {
            "size": len(ids),
            "_source": False,
            "query": {
                "bool": {
                    "filter": [
                        *self._filters(tenant_id),
                        {"ids": {"values": list(ids)}},
                        _about(names),
                    ]
                }
            },
        }
        return {h["_id"] for h in self._search(tenant_id, body)["hits"]["hits"]}
