"""The units themselves in the units' index, their messages in the contexts' index (stored once per
distinct text, deleted with the last unit that refers to them)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from opensearchpy import helpers

from simplemem.processors.stores.opensearch_lexical.base import (
    _HITS,
    _NOT_IN_DOC,
    MAX_RESULT_WINDOW,
    OpenSearchBase,
    _context_id,
    _day,
    _fields,
    _hits,
    context_hash,
)
from simplemem.processors.stores.protocols import SymbolicFilter, day_range, index_names, search_status
from simplemem.schemas.memory import MemoryUnit


class OpenSearchDocuments(OpenSearchBase):
    def upsert(self, units: Sequence[MemoryUnit]) -> None:
        if not units:
            return
        before = self._stored_contexts([(u.tenant_id, u.id) for u in units])
        contexts = {(u.tenant_id, context_hash(u.context)): u.context for u in units if u.context}
        actions = [
            {
                "_op_type": "index",
                "_index": self.contexts,
                "_id": _context_id(tenant, ctx),
                "_routing": tenant,
                "_source": {"tenant_id": tenant, "hash": ctx, "text": text},
            }
            for (tenant, ctx), text in contexts.items()
        ]
        actions += [self._unit_action(u) for u in units]
        # refresh=wait_for: a write is visible to the next query, without forcing a refresh per call;
        # it returns at the index's next scheduled refresh (``refresh_interval``).
        helpers.bulk(self.client, actions, refresh="wait_for")
        self._drop_unused_contexts(set(before.values()) - set(contexts))

    def _unit_action(self, u: MemoryUnit) -> dict[str, Any]:
        start, end = day_range(u)
        return {
            "_op_type": "index",
            "_index": self.index,
            "_id": u.id,
            "_routing": u.tenant_id,
            "_source": {
                "tenant_id": u.tenant_id,
                "text": u.text,
                "keywords": " ".join(u.keywords),
                "kind": u.kind.value,
                "status": search_status(u),
                "session_id": u.session_id,
                "superseded": u.superseded_by is not None,
                "persons": u.persons,
                "person_names": index_names(u),
                "entities": u.entities,
                "source_ids": u.source_ids,
                "context_ids": u.context_ids,
                "ctx": context_hash(u.context) if u.context else None,
                "event_time": u.event_time,
                "event_start": _day(start),
                "event_end": _day(end),
                "stated_at": u.stated_at,
                # its id and tenant are the document's own; fields at their defaults are left out
                "doc": u.model_dump(mode="json", exclude=_NOT_IN_DOC, exclude_defaults=True),
            },
        }

    def delete(self, tenant_id: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        before = self._stored_contexts([(tenant_id, i) for i in ids])
        actions = [{"_op_type": "delete", "_index": self.index, "_id": i, "_routing": tenant_id} for i in ids]
        helpers.bulk(self.client, actions, refresh="wait_for", raise_on_error=False)
        self._drop_unused_contexts(set(before.values()))

    def get(self, tenant_id: str, ids: Sequence[str], *, with_context: bool = True) -> list[MemoryUnit]:
        if not ids:
            return []
        body = {
            "size": len(ids),
            "_source": _fields(with_context),
            "query": {"bool": {"filter": [*self._filters(tenant_id), {"ids": {"values": list(ids)}}]}},
        }
        hits = _hits(self._search(tenant_id, body, filter_path=_HITS))
        found = {u.id: u for u in self._with_contexts(tenant_id, hits, with_context)}
        return [found[i] for i in ids if i in found]

    def page(self, tenant_id: str, offset: int, limit: int) -> list[MemoryUnit]:
        """A page of the tenant's units; pages end at OpenSearch's result window (10,000 units)."""
        size = max(0, min(limit, MAX_RESULT_WINDOW - offset))
        if size == 0:
            return []
        body = {
            "from": offset,
            "size": size,
            "_source": ["doc", "ctx"],
            "sort": [{"stated_at": "asc"}, {"_id": "asc"}],
            "query": {"bool": {"filter": self._filters(tenant_id)}},
        }
        return self._with_contexts(tenant_id, self._search(tenant_id, body)["hits"]["hits"])

    def iter_units(
        self, tenant_id: str, batch: int, flt: SymbolicFilter | None = None
    ) -> Iterator[list[MemoryUnit]]:
        """A scroll over the tenant's documents (a consistent snapshot, ``batch`` per page); ``flt``'s
        dates and status (not its names) applied in the query."""
        where = self._filters(tenant_id, replace(flt, names=()) if flt is not None else None)
        hits = helpers.scan(
            self.client,
            index=self.index,
            query={"query": {"bool": {"filter": where}}, "_source": ["doc", "ctx"]},
            routing=tenant_id,
            size=batch,
        )
        page: list[dict[str, Any]] = []
        for h in hits:
            page.append(h)
            if len(page) == batch:
                yield self._with_contexts(tenant_id, page)
                page = []
        if page:
            yield self._with_contexts(tenant_id, page)
