"""The person names of each tenant's memory, kept by a query process for a few seconds.

Every query first asks which of its capitalised words name persons the tenant's memory knows (the
person boost and the BM25 restriction follow from it). Against OpenSearch that is a round trip per
query; the list of a tenant's names changes only when memories are written, so a query replica keeps
it for ``SIMPLEMEM_NAMES_CACHE_SECONDS``. The price: a person first named within that time is not yet
recognised as one (the memory is still found by its words and meaning, without the boost). A tenant
with more names than ``SIMPLEMEM_NAMES_CACHE_MAX_NAMES`` is asked per query, as without the cache.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from cachetools import TTLCache

from simplemem.processors.stores import batched
from simplemem.processors.stores.protocols import LexicalStore, names_matching
from simplemem.schemas.settings import Settings

_MISSING = object()


class TenantNames:
    def __init__(
        self, lexical: LexicalStore, settings: Settings, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.lexical = lexical
        self.settings = settings
        self._names: TTLCache[str, tuple[str, ...] | None] = TTLCache(
            maxsize=settings.names_cache_tenants, ttl=settings.names_cache_seconds, timer=clock
        )
        self._lock = threading.Lock()

    def known(self, tenant_id: str, candidates: Sequence[str]) -> list[str]:
        """The names among ``candidates`` (or that they abbreviate) in the tenant's memory."""
        with self._lock:
            names = self._names.get(tenant_id, _MISSING)
        if names is _MISSING:
            listed = self.lexical.all_names(tenant_id, self.settings.names_cache_max_names)
            names = None if listed is None else tuple(listed)  # None: too many names to keep
            with self._lock:
                self._names[tenant_id] = names
        if names is None:
            size = self.settings.store_expression_terms
            return batched.known_names(self.lexical, tenant_id, candidates, size)
        assert isinstance(names, tuple)
        return names_matching(names, candidates)
