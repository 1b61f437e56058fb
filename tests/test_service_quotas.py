"""Per-tenant quotas: one tenant's use does not touch another's; services mode shares the counters
between replicas through Redis (two limiters stand for two replicas)."""

from __future__ import annotations

import uuid

import pytest

from simplemem.api.quotas import Quota, Quotas
from simplemem.schemas.settings import Settings
from tests.services import require


def test_a_tenant_over_its_quota_is_told_when_to_retry_and_others_are_not_affected() -> None:
    quotas = Quotas(Settings(api_ingest_rate="10/minute"))
    assert quotas.take(Quota.INGEST, "noisy", 8).allowed
    refused = quotas.take(Quota.INGEST, "noisy", 3)
    assert not refused.allowed and 1 <= refused.retry_after <= 60
    assert quotas.take(Quota.INGEST, "quiet", 10).allowed
    assert quotas.take(Quota.QUERY, "noisy").allowed  # the query quota is its own


@pytest.mark.integration
def test_replicas_share_a_tenants_quota_through_redis() -> None:
    settings = Settings(
        mode="services", api_query_rate="5/minute", redis_key_prefix=f"simplemem-quota-{uuid.uuid4().hex[:8]}"
    )
    require(settings)
    first, second = Quotas(settings), Quotas(settings)
    tenant = "shared"
    assert all(first.take(Quota.QUERY, tenant).allowed for _ in range(3))
    assert all(second.take(Quota.QUERY, tenant).allowed for _ in range(2))
    assert not first.take(Quota.QUERY, tenant).allowed
    assert not second.take(Quota.QUERY, tenant).allowed
    assert second.take(Quota.QUERY, "another").allowed
    import redis

    r = redis.Redis.from_url(settings.redis_endpoint)
    for key in r.scan_iter(f"{settings.redis_key_prefix}:*"):
        r.delete(key)


def test_a_refused_request_draws_nothing_from_the_window() -> None:
    """A batch larger than what remains is refused and leaves the rest of the window usable."""
    quotas = Quotas(Settings(api_ingest_rate="10/minute"))
    assert quotas.take(Quota.INGEST, "t", 6).allowed
    assert not quotas.take(Quota.INGEST, "t", 5).allowed
    assert quotas.take(Quota.INGEST, "t", 4).allowed  # the refused 5 were not charged
    assert not quotas.take(Quota.INGEST, "t").allowed


def test_deletions_have_a_quota_of_their_own() -> None:
    quotas = Quotas(Settings(api_forget_rate="2/minute"))
    assert quotas.take(Quota.FORGET, "t").allowed and quotas.take(Quota.FORGET, "t").allowed
    assert not quotas.take(Quota.FORGET, "t").allowed
    assert quotas.take(Quota.QUERY, "t").allowed


def test_two_quotas_of_the_same_rate_keep_their_own_counters() -> None:
    """Reads must not use up deletions: a tenant that reads a lot can still ask to be forgotten."""
    quotas = Quotas(Settings(api_query_rate="3/minute", api_forget_rate="3/minute"))
    assert all(quotas.take(Quota.QUERY, "t").allowed for _ in range(3))
    assert not quotas.take(Quota.QUERY, "t").allowed
    assert quotas.take(Quota.FORGET, "t").allowed


def test_a_request_over_the_whole_quota_is_never_allowed_and_says_so() -> None:
    quotas = Quotas(Settings(api_ingest_rate="10/minute"))
    refused = quotas.take(Quota.INGEST, "t", 11)
    assert not refused.allowed and refused.never
    assert quotas.take(Quota.INGEST, "t", 10).allowed  # what fits the window still goes
    assert not quotas.take(Quota.INGEST, "t").never  # used up for now, not for ever


def test_ingestion_is_charged_by_its_text_and_a_refusal_of_either_quota_draws_from_neither() -> None:
    """Eight long events cost what their text costs (one event count would let one tenant hold the
    embedded store for seconds); refused for their text, they leave the event count untouched too."""
    quotas = Quotas(Settings(api_ingest_rate="100/minute", api_ingest_text_rate="1000/minute"))
    quota, verdict = quotas.take_all("t", {Quota.INGEST: 8, Quota.INGEST_TEXT: 900})
    assert quota is None and verdict.allowed
    quota, verdict = quotas.take_all("t", {Quota.INGEST: 8, Quota.INGEST_TEXT: 200})
    assert quota == Quota.INGEST_TEXT and not verdict.allowed and verdict.retry_after >= 1
    assert quotas.take(Quota.INGEST, "t", 92).allowed  # the refused request drew no events
    assert (
        quotas.take(Quota.INGEST_TEXT, "t", 100).allowed and not quotas.take(Quota.INGEST_TEXT, "t").allowed
    )
