"""BM25 search of the units' index: a unit's own words plus its context's score (the contexts' index
searched first), under the symbolic filter."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from simplemem.processors.language.text import query_terms
from simplemem.processors.stores.opensearch_lexical.base import (
    _HITS,
    _SCORES_AND_VALUES,
    OpenSearchBase,
    _fields,
    _hits,
)
from simplemem.processors.stores.protocols import Hit, SymbolicFilter


class OpenSearchSearch(OpenSearchBase):
    def search(
        self, tenant_id: str, query: str, limit: int, flt: SymbolicFilter, *, read: bool = False
    ) -> list[Hit]:
        """A unit's BM25 score over its own words plus its context's (the message it is part of): the
        contexts are searched first, then the units ranked on both in one search, so that only the
        best ``limit`` come back (the statements of the matching long answers were hundreds a query,
        each returned to be added up here). ``read``: that search returns their documents too."""
        terms = query_terms(query)
        if not terms:
            return []
        # the hash from doc values, no stored field read: fetching each hit's source would decompress
        # its whole message, most of this search's time
        around = {
            "size": limit,
            "_source": False,
            "stored_fields": "_none_",
            "docvalue_fields": ["hash"],
            "query": {
                "bool": {
                    "must": {"match": {"text": " ".join(terms)}},
                    "filter": [{"term": {"tenant_id": tenant_id}}],
                }
            },
        }
        context_hits = _hits(
            self._search(tenant_id, around, index=self.contexts, filter_path=_SCORES_AND_VALUES)
        )
        own = {
            "multi_match": {
                "query": " ".join(terms),
                "fields": ["text", "context", "keywords"],
                "type": "most_fields",
                "operator": "or",
            }
        }
        # a unit's context adds its score as a constant: a bool query sums the clauses that match
        by_context = [
            {
                "constant_score": {
                    "filter": {"term": {"ctx": h["fields"]["hash"][0]}},
                    "boost": float(h["_score"]),
                }
            }
            for h in context_hits
        ]
        body = {
            "size": limit,
            "_source": _fields(False) if read else False,
            "query": {
                "bool": {
                    "should": [own, *by_context],
                    "minimum_should_match": 1,
                    "filter": self._filters(tenant_id, flt),
                }
            },
        }
        hits = _hits(self._search(tenant_id, body, filter_path=_HITS))
        units = {u.id: u for u in self._with_contexts(tenant_id, hits, with_context=False)} if read else {}
        ranked = [Hit(h["_id"], float(h["_score"]), units.get(h["_id"])) for h in hits]
        return sorted(ranked, key=lambda hit: (-hit.score, hit.id))

    def one_query(self) -> AbstractContextManager[None]:
        """Each search and read is its own request here: nothing is shared."""
        return nullcontext()
