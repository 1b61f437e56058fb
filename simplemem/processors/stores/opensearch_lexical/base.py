"""OpenSearch lexical + symbolic store (services mode), behind the same protocol as the SQLite one.

Tenant isolation: one shared index, every document routed by ``tenant_id`` (a tenant's memory lives
on one shard) and every request carries a mandatory ``tenant_id`` term filter plus that routing.
An index per tenant would give physical isolation but costs a shard set per tenant: past a few
hundred tenants the cluster state and heap grow with the tenant count. Routing keeps the shard
count fixed; its limit is a very large tenant, which would make its shard hot (then give that
tenant an index of its own, or use routing partitions: ``index.routing_partition_size``).

A unit's ``context`` (the message around it) is stored once per distinct text, in the index
``<index>-contexts`` (routed by tenant too); units carry its hash (``ctx``). A search asks the
contexts first, then ranks the units on their own score plus their context's in one search; reads
put the context back; a context no unit refers to any more is deleted with the last one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import date
from typing import Any

import orjson
from opensearchpy import JSONSerializer, OpenSearch, RequestError, helpers

from simplemem.processors.stores.protocols import (
    SymbolicFilter,
)
from simplemem.schemas.memory import MemoryUnit

REQUEST_TIMEOUT_SECONDS = 30  # a request slower than this is an outage (the stage waits it out)
MAX_KNOWN_NAMES = 1000  # person names matched per query: far more than any question names
MAX_TENANTS_LISTED = 10_000  # an operator's listing of tenants (one aggregation)
MAX_RESULT_WINDOW = 10_000  # OpenSearch's default index.max_result_window: one request's most hits
# Units a message usually yields: a lookup by message ids asks for this many per id first (a request
# sized for 10,000 hits costs OpenSearch that many queue slots, each time) and asks again when the
# count says there are more. Sized so that nearly every message of an assistant-style history (a
# long answer makes dozens of statements) fits the first request.
UNITS_PER_MESSAGE_GUESS = 24

MAPPING: dict[str, Any] = {
    "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0}},
    "mappings": {
        "dynamic": "strict",
        # Every field but these is indexed only: the unit is read back from ``doc`` (a second copy of
        # its fields in the source was a sixth of the index, and parsed at every read). An index
        # is therefore rebuilt from the units (``iter_units``), not with OpenSearch's _reindex.
        "_source": {"includes": ["doc", "ctx"]},
        "properties": {
            "tenant_id": {"type": "keyword"},
            "text": {"type": "text", "analyzer": "english"},
            "context": {"type": "text", "analyzer": "english"},
            "keywords": {"type": "text", "analyzer": "english"},
            "kind": {"type": "keyword"},
            "status": {"type": "keyword"},
            "session_id": {"type": "keyword"},
            "superseded": {"type": "boolean"},
            "persons": {"type": "keyword"},
            "person_names": {"type": "keyword"},
            "entities": {"type": "keyword"},
            "source_ids": {"type": "keyword"},
            "context_ids": {"type": "keyword"},
            "ctx": {"type": "keyword"},
            "event_time": {"type": "keyword"},
            "event_start": {"type": "date", "format": "strict_date"},
            "event_end": {"type": "date", "format": "strict_date"},
            "stated_at": {"type": "date"},
            "doc": {"type": "object", "enabled": False},
        },
    },
}


def _about(names: Sequence[str]) -> dict[str, Any]:
    """Memories about one of ``names``: in their persons, or named in their own text (where the NER
    model may not have tagged the name); the searched context (the question answered) does not count."""
    lowered = [n.lower() for n in names]
    should: list[dict[str, Any]] = [{"terms": {"person_names": lowered}}]
    should += [{"match_phrase": {"text": n}} for n in lowered]
    return {"bool": {"should": should, "minimum_should_match": 1}}


# Fields added after the first release: put into an existing index's mapping when it is opened.
NEW_FIELDS: dict[str, Any] = {
    "context_ids": {"type": "keyword"},
    "ctx": {"type": "keyword"},
    # the listing's (/ui/): units written before them are found by these filters once rewritten
    "session_id": {"type": "keyword"},
    "superseded": {"type": "boolean"},
}
CONTEXT_MAPPING: dict[str, Any] = {
    "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0}},
    "mappings": {
        "dynamic": "strict",
        "properties": {
            "tenant_id": {"type": "keyword"},
            "hash": {"type": "keyword"},
            "text": {"type": "text", "analyzer": "english"},
        },
    },
}


def context_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def _context_id(tenant_id: str, ctx: str) -> str:
    return hashlib.sha256(f"{tenant_id}\x1f{ctx}".encode()).hexdigest()[:32]


class OrjsonSerializer(JSONSerializer):
    """Responses parsed and requests written with orjson: a query reads up to a few hundred
    memories' documents, and the standard library's parser was a tenth of the query service's
    Python time."""

    def loads(self, s: str) -> Any:
        return orjson.loads(s)

    def dumps(self, data: Any) -> Any:
        if isinstance(data, str):  # as the standard serializer: a string is sent as it is
            return data
        options = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
        return orjson.dumps(data, default=self.default, option=options).decode()


# What a unit's ``doc`` leaves out: its message (in the contexts' index), and its id and tenant (the
# document's ``_id`` and ``tenant_id``: put back on reading; documents written before keep them).
_NOT_IN_DOC = {"context", "id", "tenant_id"}
# Responses without the hits' index, routing and shard counts: a query reads a few hundred hits.
_HITS = "hits.hits._id,hits.hits._score,hits.hits._source"
_HITS_AND_TOTAL = f"{_HITS},hits.total"
_SCORES_AND_VALUES = "hits.hits._score,hits.hits.fields"


def _hits(result: dict[str, Any]) -> list[dict[str, Any]]:
    """A filtered response's hits (``filter_path`` leaves out ``hits`` when there are none)."""
    hits: list[dict[str, Any]] = result.get("hits", {}).get("hits", [])
    return hits


def _fields(with_context: bool) -> list[str]:
    """The source fields a read needs: the document, and the hash of its context if that is put back."""
    return ["doc", "ctx"] if with_context else ["doc"]


def _day(ordinal: int) -> str:
    return date.fromordinal(ordinal).isoformat()


class OpenSearchBase:
    """The client, the two indexes and what every concern shares: filters, routed searches, reading
    units back with their contexts."""

    def __init__(
        self,
        url: str,
        index: str,
        *,
        client: OpenSearch | None = None,
        refresh_interval: str = "1s",
        pool_connections: int | None = None,
    ) -> None:
        # urllib3 keeps one connection by default: concurrent queries (the query service's threads)
        # would open and drop a connection each.
        self.client = client or OpenSearch(
            hosts=[url],
            timeout=REQUEST_TIMEOUT_SECONDS,
            pool_maxsize=pool_connections,
            serializer=OrjsonSerializer(),
        )
        self.index = index
        if not self.client.indices.exists(index=index):
            body = {**MAPPING, "settings": {"index": {**MAPPING["settings"]["index"]}}}
            body["settings"]["index"]["refresh_interval"] = refresh_interval
            try:
                self.client.indices.create(index=index, body=body)
            except RequestError as exc:  # another worker created it between the check and here
                if exc.error != "resource_already_exists_exception":
                    raise
        else:  # an index made before a field was added to the mapping: add it (new fields only)
            self.client.indices.put_mapping(index=index, body={"properties": NEW_FIELDS})
        self.contexts = f"{index}-contexts"
        self._create_if_missing(self.contexts, CONTEXT_MAPPING, refresh_interval)

    def _create_if_missing(self, index: str, mapping: dict[str, Any], refresh_interval: str) -> None:
        if self.client.indices.exists(index=index):
            return
        body = {**mapping, "settings": {"index": {**mapping["settings"]["index"]}}}
        body["settings"]["index"]["refresh_interval"] = refresh_interval
        try:
            self.client.indices.create(index=index, body=body)
        except RequestError as exc:
            if exc.error != "resource_already_exists_exception":
                raise

    def _stored_contexts(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, str]]:
        """(tenant, unit id) -> (tenant, context hash) of the stored units that have a context."""
        if not keys:
            return {}
        docs = [{"_id": uid, "routing": tenant, "_source": ["ctx"]} for tenant, uid in keys]
        found = self.client.mget(index=self.index, body={"docs": docs})["docs"]
        return {
            (tenant, uid): (tenant, d["_source"]["ctx"])
            for (tenant, uid), d in zip(keys, found, strict=True)
            if d.get("found") and d["_source"].get("ctx")
        }

    def _drop_unused_contexts(self, pairs: set[tuple[str, str]]) -> None:
        """Delete the contexts that no unit of their tenant refers to any more. (Units of one message
        are written by its session's worker, so a context is not taken up again meanwhile.)"""
        by_tenant: dict[str, list[str]] = {}
        for tenant, ctx in pairs:
            by_tenant.setdefault(tenant, []).append(ctx)
        actions = []
        for tenant, hashes in by_tenant.items():
            body = {
                "size": 0,
                "query": {"bool": {"filter": [{"term": {"tenant_id": tenant}}, {"terms": {"ctx": hashes}}]}},
                "aggs": {"used": {"terms": {"field": "ctx", "size": len(hashes)}}},
            }
            used = {b["key"] for b in self._search(tenant, body)["aggregations"]["used"]["buckets"]}
            actions += [
                {
                    "_op_type": "delete",
                    "_index": self.contexts,
                    "_id": _context_id(tenant, c),
                    "_routing": tenant,
                }
                for c in hashes
                if c not in used
            ]
        if actions:
            helpers.bulk(self.client, actions, refresh="wait_for", raise_on_error=False)

    def _with_contexts(
        self, tenant_id: str, hits: list[dict[str, Any]], with_context: bool = True
    ) -> list[MemoryUnit]:
        """The units of these hits (``_source`` with ``doc`` and ``ctx``), their contexts put back
        unless ``with_context`` is false (validated once, the context in)."""
        hashes = {h["_source"]["ctx"] for h in hits if h["_source"].get("ctx")}
        texts = self._context_texts(tenant_id, sorted(hashes)) if with_context else {}
        units = []
        for h in hits:
            doc = {**h["_source"]["doc"], "id": h["_id"], "tenant_id": tenant_id}
            text = texts.get(h["_source"].get("ctx"))
            if text is not None:
                doc["context"] = text
            units.append(MemoryUnit.model_validate(doc))
        return units

    def _context_texts(self, tenant_id: str, hashes: list[str]) -> dict[str, str]:
        """Context hash -> its stored text, for the hashes found."""
        if not hashes:
            return {}
        docs = [{"_id": _context_id(tenant_id, c), "routing": tenant_id} for c in hashes]
        found = self.client.mget(index=self.contexts, body={"docs": docs})["docs"]
        return {c: d["_source"]["text"] for c, d in zip(hashes, found, strict=True) if d.get("found")}

    def _filters(self, tenant_id: str, flt: SymbolicFilter | None = None) -> list[dict[str, Any]]:
        filters: list[dict[str, Any]] = [{"term": {"tenant_id": tenant_id}}]
        if flt is None:
            return filters
        filters.append({"terms": {"status": list(flt.statuses())}})
        if flt.first_day is not None and flt.last_day is not None:
            event = [
                {"range": {"event_end": {"gte": flt.first_day.isoformat()}}},
                {"range": {"event_start": {"lte": flt.last_day.isoformat()}}},
            ]
            if not flt.or_stated:
                filters += event
            else:
                start, end = flt.stated_bounds()
                stated = {"range": {"stated_at": {"gte": int(start * 1000), "lt": int(end * 1000)}}}
                filters.append(
                    {"bool": {"should": [{"bool": {"filter": event}}, stated], "minimum_should_match": 1}}
                )
        if flt.stated_before is not None:
            filters.append({"range": {"stated_at": {"lte": flt.stated_before.isoformat()}}})
        if flt.names:
            filters.append(_about(flt.names))
        return filters

    def _search(
        self, tenant_id: str, body: dict[str, Any], index: str | None = None, filter_path: str | None = None
    ) -> dict[str, Any]:
        """A search of the units' index (or ``index``), routed to the tenant's shard."""
        result: dict[str, Any] = self.client.search(
            index=index or self.index, body=body, routing=tenant_id, filter_path=filter_path
        )
        return result
