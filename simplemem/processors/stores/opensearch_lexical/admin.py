"""An operator's view of the indexes: tenants, a tenant's size, merging deletions away, closing."""

from __future__ import annotations

from simplemem.processors.stores.opensearch_lexical.base import MAX_TENANTS_LISTED, OpenSearchBase


class OpenSearchAdmin(OpenSearchBase):
    def tenants(self) -> list[str]:
        body = {"size": 0, "aggs": {"tenants": {"terms": {"field": "tenant_id", "size": MAX_TENANTS_LISTED}}}}
        result = self.client.search(index=self.index, body=body)
        return sorted(b["key"] for b in result["aggregations"]["tenants"]["buckets"])

    def expunge(self) -> None:
        """Deleted documents stay in Lucene segments until merged: merge them away now."""
        self.client.indices.forcemerge(index=f"{self.index},{self.contexts}", only_expunge_deletes=True)

    def count(self, tenant_id: str) -> int:
        body = {"query": {"bool": {"filter": self._filters(tenant_id)}}}
        return int(self.client.count(index=self.index, body=body, routing=tenant_id)["count"])

    def close(self) -> None:
        self.client.close()
