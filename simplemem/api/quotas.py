"""Per-tenant rate limits on ingestion and queries, so one noisy tenant cannot starve the others.

The ``limits`` library counts in fixed windows; services mode keeps the counters in Redis, so every
replica draws on the same quota; embedded mode (one process) in memory. An event costs one unit of
the ingestion quota and its text's characters of the ingestion text quota (the work of ingestion
grows with the text, not with the number of events), a query, search or page of a listing one unit
of the query quota, a deletion one unit of the forget quota.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from limits import RateLimitItem, parse
from limits.storage import Storage, storage_from_string
from limits.strategies import FixedWindowRateLimiter

from simplemem.processors.stores.redis_keys import RedisKeys, quota_identifier
from simplemem.schemas.settings import Settings


class Quota(StrEnum):
    INGEST = "ingest"  # events
    INGEST_TEXT = "ingest_text"  # characters of text: what ingestion's work grows with
    QUERY = "query"  # queries, searches and listings: every read
    FORGET = "forget"  # deletions: each runs the forget cascade over every store


SETTING = {
    Quota.INGEST: "SIMPLEMEM_API_INGEST_RATE",
    Quota.INGEST_TEXT: "SIMPLEMEM_API_INGEST_TEXT_RATE",
    Quota.QUERY: "SIMPLEMEM_API_QUERY_RATE",
    Quota.FORGET: "SIMPLEMEM_API_FORGET_RATE",
}


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after: int = 0  # seconds until the tenant's window resets (Retry-After)
    never: bool = False  # more than the whole window holds: no retry would ever be allowed


def _identifiers(quota: Quota, tenant_id: str) -> tuple[str, str]:
    """A counter's identifiers: the quota's name (two quotas of the same rate keep two counters) and
    the tenant's byte key (a JSON array), never ids joined with a delimiter."""
    return quota.value, quota_identifier(tenant_id)


class Quotas:
    def __init__(self, settings: Settings, storage: Storage | None = None) -> None:
        if storage is None:
            uri = settings.redis_endpoint if settings.mode == "services" else "memory://"
            options = (
                {"key_prefix": RedisKeys(settings.redis_key_prefix).quota_prefix()}
                if settings.mode == "services"
                else {}
            )
            found = storage_from_string(uri, **options)
            assert isinstance(found, Storage)  # the synchronous kind, for a synchronous limiter
            storage = found
        self._limiter = FixedWindowRateLimiter(storage)
        self._items: dict[Quota, RateLimitItem] = {
            Quota.INGEST: parse(settings.api_ingest_rate),
            Quota.INGEST_TEXT: parse(settings.api_ingest_text_rate),
            Quota.QUERY: parse(settings.api_query_rate),
            Quota.FORGET: parse(settings.api_forget_rate),
        }

    def take(self, quota: Quota, tenant_id: str, cost: int = 1) -> Verdict:
        """Draw ``cost`` units of ``tenant_id``'s quota, or say when to come back."""
        return self.take_all(tenant_id, {quota: cost})[1]

    def take_all(self, tenant_id: str, costs: Mapping[Quota, int]) -> tuple[Quota | None, Verdict]:
        """Draw every cost from its quota, or none: the refused quota and when to come back. A
        refused request draws nothing: every window is compared before any is charged (replicas
        racing between the two can overdraw by at most one request each, never refuse what fits)."""
        for quota, cost in costs.items():
            item, ident = self._items[quota], _identifiers(quota, tenant_id)
            if cost > item.amount:
                return quota, Verdict(False, never=True)
            if not self._limiter.test(item, *ident, cost=cost):
                return quota, self._refusal(item, ident)
        for quota, cost in costs.items():
            item, ident = self._items[quota], _identifiers(quota, tenant_id)
            if not self._limiter.hit(item, *ident, cost=cost):
                return quota, self._refusal(item, ident)
        return None, Verdict(True)

    def _refusal(self, item: RateLimitItem, ident: tuple[str, str]) -> Verdict:
        stats = self._limiter.get_window_stats(item, *ident)
        return Verdict(False, max(1, math.ceil(stats.reset_time - time.time())))

    def limit(self, quota: Quota) -> str:
        """The quota as configured, for a refusal's reason (``6000 per 1 minute``)."""
        return str(self._items[quota])

    def use(self, quota: Quota, tenant_id: str) -> tuple[int, int, str]:
        """What ``tenant_id`` has left of ``quota`` in its current window, of how many, per what."""
        item = self._items[quota]
        stats = self._limiter.get_window_stats(item, *_identifiers(quota, tenant_id))
        return stats.remaining, item.amount, str(item)
