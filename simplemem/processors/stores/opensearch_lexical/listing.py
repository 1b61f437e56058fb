"""The ``/ui/`` page's listing as OpenSearch queries: its filters are term and range filters on indexed
fields (session, kind, status, superseded, days), and its counts are aggregations; no unit is read
to filter or count it."""

from __future__ import annotations

from typing import Any

from simplemem.processors.stores.opensearch_lexical.base import MAX_RESULT_WINDOW, OpenSearchBase
from simplemem.processors.stores.protocols import DERIVED_STATUSES, Listing, ListingCounts
from simplemem.schemas.memory import MemoryStatus, MemoryUnit

_LIVE = [MemoryStatus.ACTIVE.value, *DERIVED_STATUSES]  # a derived line is active, its kind its status
_NOT_SUPERSEDED = {"bool": {"must_not": [{"term": {"superseded": True}}]}}
_STATES: dict[str, list[dict[str, Any]]] = {
    "active": [{"terms": {"status": _LIVE}}, _NOT_SUPERSEDED],
    "superseded": [{"terms": {"status": _LIVE}}, {"term": {"superseded": True}}],
    "archived": [{"term": {"status": MemoryStatus.ARCHIVED.value}}],
}
# sessions counted exactly up to this many distinct ones (OpenSearch's cardinality is approximate
# beyond its precision threshold, which is at most 40,000)
_SESSION_PRECISION = 40_000


def listing_filters(tenant_id: str, flt: Listing) -> list[dict[str, Any]]:
    """The listing's filters as OpenSearch filter clauses (the tenant's first)."""
    found: list[dict[str, Any]] = [{"term": {"tenant_id": tenant_id}}]
    if flt.session is not None:
        found.append({"term": {"session_id": flt.session}})
    if flt.kind is not None:
        found.append({"term": {"kind": flt.kind}})
    if flt.state is not None:
        found += _STATES[flt.state]
    if flt.first_day is not None:
        found.append({"range": {"event_end": {"gte": flt.first_day.isoformat()}}})
    if flt.last_day is not None:
        found.append({"range": {"event_start": {"lte": flt.last_day.isoformat()}}})
    return found


class OpenSearchListing(OpenSearchBase):
    def listing(self, tenant_id: str, flt: Listing, offset: int, limit: int) -> tuple[list[MemoryUnit], int]:
        """Pages end at OpenSearch's result window (10,000 units), as :meth:`page`'s do."""
        size = max(0, min(limit, MAX_RESULT_WINDOW - offset))
        body = {
            "from": min(offset, MAX_RESULT_WINDOW),
            "size": size,
            "_source": ["doc"],
            "sort": [{"stated_at": "asc"}, {"_id": "asc"}],
            "track_total_hits": True,
            "query": {"bool": {"filter": listing_filters(tenant_id, flt)}},
        }
        result = self._search(tenant_id, body)
        hits = result["hits"]["hits"]
        return self._with_contexts(tenant_id, hits, with_context=False), int(result["hits"]["total"]["value"])

    def listing_counts(self, tenant_id: str, flt: Listing, sessions: int) -> ListingCounts:
        states = {name: {"bool": {"filter": clauses}} for name, clauses in _STATES.items()}
        body = {
            "size": 0,
            "track_total_hits": True,
            "query": {"bool": {"filter": listing_filters(tenant_id, flt)}},
            "aggs": {
                "states": {"filters": {"filters": states}},
                "kinds": {"terms": {"field": "kind", "size": 100}},
                "sessions": {"terms": {"field": "session_id", "size": sessions, "missing": ""}},
                "distinct": {
                    "cardinality": {"field": "session_id", "precision_threshold": _SESSION_PRECISION}
                },
                "without": {"missing": {"field": "session_id"}},
            },
        }
        result = self._search(tenant_id, body)
        aggs = result["aggregations"]
        by_state = {k: int(b["doc_count"]) for k, b in aggs["states"]["buckets"].items() if b["doc_count"]}
        listed = {b["key"]: int(b["doc_count"]) for b in aggs["sessions"]["buckets"]}
        return ListingCounts(
            matching=int(result["hits"]["total"]["value"]),
            by_state=by_state,
            by_kind={b["key"]: int(b["doc_count"]) for b in aggs["kinds"]["buckets"]},
            sessions=listed,
            sessions_total=int(aggs["distinct"]["value"]) + (1 if aggs["without"]["doc_count"] else 0),
        )
