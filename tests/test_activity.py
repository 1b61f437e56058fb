"""Per-tenant ingestion accounting (simplemem/processors/stores/activity.py): the time-to-memory
histogram, and the ledger in each mode's store (SQLite in the store folder, Redis in services mode),
each tenant counted apart."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from simplemem.processors.stores.activity import (
    TTM_RATIO,
    ActivityLedger,
    Arrival,
    RedisActivity,
    SqliteActivity,
    percentile,
    ttm_bound,
    ttm_bucket,
)
from simplemem.schemas.accounting import MessageOutcome, Outcome


def outcome(tenant: str, message: str, result: Outcome) -> MessageOutcome:
    return MessageOutcome(tenant_id=tenant, message_id=message, outcome=result)


def test_a_time_falls_in_the_bucket_whose_bound_is_just_above_it() -> None:
    for seconds in (0.001, 0.01, 0.5, 1.0, 2.37, 60.0, 3600.0):
        bucket = ttm_bucket(seconds)
        assert seconds <= ttm_bound(bucket) + 1e-9
        assert bucket == 0 or ttm_bound(bucket - 1) < seconds
    assert ttm_bucket(10**9) == ttm_bucket(10**10)  # the last bucket holds every slower one


def test_percentiles_are_upper_bounds_within_one_bucket() -> None:
    times = [0.2] * 50 + [1.0] * 45 + [30.0] * 5
    buckets: dict[int, int] = {}
    for t in times:
        buckets[ttm_bucket(t)] = buckets.get(ttm_bucket(t), 0) + 1
    p50, p95 = percentile(buckets, 0.5), percentile(buckets, 0.95)
    assert p50 is not None and 0.2 <= p50 <= 0.2 * TTM_RATIO
    assert p95 is not None and 1.0 <= p95 <= 1.0 * TTM_RATIO
    assert percentile({}, 0.5) is None


def each_tenant_counts_its_own(ledger: ActivityLedger) -> None:
    """Two tenants' turns through the ledger: each reads its own counts and times, nothing of the other."""
    a, b = f"acme-{uuid.uuid4().hex[:6]}", f"beta-{uuid.uuid4().hex[:6]}"
    t = time.time()
    ledger.took(
        [
            Arrival(a, "m1", True, t + 0.0),
            Arrival(a, "m2", False, t + 0.0),
            Arrival(a, "m3", False, t + 1.0),
            Arrival(a, "m4", False, t + 1.0),
            Arrival(b, "m1", False, t + 0.0),
        ]
    )
    ledger.decided(
        [
            outcome(a, "m1", Outcome.INDEXED),
            outcome(a, "m2", Outcome.FILTERED),
            outcome(b, "m1", Outcome.FAILED),
        ],
        t + 2.0,
    )
    ledger.decided([outcome(a, "m3", Outcome.INDEXED)], t + 31.0)
    mine = ledger.read(a)
    assert (mine.accepted, mine.indexed, mine.filtered, mine.failed, mine.pii_scrubbed, mine.undecided) == (
        4,
        2,
        1,
        0,
        1,
        1,
    )
    ttm = mine.time_to_memory
    assert ttm.memories == 2  # the indexed ones: 2 s and 30 s
    assert ttm.p50_seconds is not None and 2.0 <= ttm.p50_seconds <= 2.0 * TTM_RATIO
    assert ttm.p95_seconds is not None and 30.0 <= ttm.p95_seconds <= 30.0 * TTM_RATIO
    theirs = ledger.read(b)
    assert (theirs.accepted, theirs.indexed, theirs.failed, theirs.time_to_memory.memories) == (1, 0, 1, 0)
    # a turn decided again (a replay) counts its outcome, not a second time from its first arrival
    ledger.decided([outcome(a, "m1", Outcome.INDEXED)], t + 400.0)
    assert ledger.read(a).time_to_memory.memories == 2
    # the time the service accepted a turn stays when the pipeline takes it in later; an arrival
    # never decided goes after a day (what the ledger keeps of a tenant is bounded)
    c = f"gamma-{uuid.uuid4().hex[:6]}"
    ledger.arrived(c, ["m1"], t - 10.0)
    ledger.took([Arrival(c, "m1", False, t), Arrival(c, "old", False, t - 2 * 86_400)])
    ledger.decided([outcome(c, "m1", Outcome.INDEXED), outcome(c, "old", Outcome.INDEXED)], t)
    gamma = ledger.read(c)
    assert (gamma.accepted, gamma.indexed, gamma.time_to_memory.memories) == (2, 2, 1)
    assert gamma.time_to_memory.p50_seconds is not None and 10.0 <= gamma.time_to_memory.p50_seconds <= 12.0
    nobody = ledger.read(f"nobody-{uuid.uuid4().hex[:6]}")
    assert (nobody.accepted, nobody.time_to_memory.p50_seconds) == (0, None)


def test_the_embedded_ledger_keeps_each_tenants_counts_in_the_store_folder(tmp_path: Path) -> None:
    ledger = SqliteActivity(tmp_path / "activity.sqlite")
    each_tenant_counts_its_own(ledger)
    ledger.took([Arrival("kept", "m1", False, 1.0)])
    ledger.close()
    again = SqliteActivity(tmp_path / "activity.sqlite")  # a restart keeps them
    assert again.read("kept").accepted == 1
    again.close()


@pytest.mark.integration
def test_the_services_ledger_keeps_each_tenants_counts_in_redis() -> None:
    import os

    import redis

    from simplemem.schemas.settings import Settings

    url, prefix = Settings().redis_endpoint, f"simplemem-activity-{uuid.uuid4().hex[:8]}"
    try:
        redis.Redis.from_url(url).ping()
    except redis.ConnectionError as exc:
        if os.environ.get("SIMPLEMEM_INTEGRATION") == "1":
            pytest.fail(f"Redis not reachable: {exc}")
        pytest.skip(f"Redis not reachable: {exc}")
    ledger = RedisActivity(url, prefix)
    try:
        each_tenant_counts_its_own(ledger)
        ledger.took([Arrival("kept", "m1", False, time.time())])
        reader = RedisActivity(url, prefix)  # another process's view: the same numbers
        assert reader.read("kept").accepted == 1
        reader.close()
    finally:
        for key in ledger.r.scan_iter(match=f"{prefix}:*"):
            ledger.r.delete(key)
        ledger.close()
