"""The tombstone set's rule (ids, and a whole tenant up to the time it was forgotten) on its SQLite
form, and the in-process buffer forgetting turns whichever session holds them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from simplemem.processors.retrieval.buffer import InMemoryBuffer
from simplemem.processors.stores.tombstones import SqliteTombstones, forgotten_among
from simplemem.schemas.stream import DeletionRecord, DeletionRequest
from simplemem.schemas.window import BufferedTurn

T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_forgotten_ids_are_per_tenant_and_a_whole_tenant_is_cut_at_its_request(tmp_path: Path) -> None:
    stones = SqliteTombstones(tmp_path / "t.sqlite")
    stones.add(DeletionRequest(tenant_id="a", message_ids=["m1"], requested_at=T))
    stones.add(DeletionRequest(tenant_id="b", whole_tenant=True, requested_at=T))
    before, after = T - timedelta(days=1), T + timedelta(seconds=1)
    assert stones.forgotten("a", [("m1", after), ("m2", before)]) == {"m1"}
    assert stones.forgotten("c", [("m1", before)]) == set()  # the same id in another tenant
    assert stones.forgotten("b", [("x", before), ("y", T), ("z", after)]) == {"x", "y"}
    # an earlier whole-tenant request does not move the cut-off back
    stones.add(DeletionRequest(tenant_id="b", whole_tenant=True, requested_at=before))
    assert stones.forgotten("b", [("y", T)]) == {"y"}
    assert forgotten_among(stones, [("a", "m1", T), ("c", "m1", T), ("b", "q", before)]) == {
        ("a", "m1"),
        ("b", "q"),
    }
    stones.close()
    reopened = SqliteTombstones(tmp_path / "t.sqlite")  # durable: in the store folder
    assert reopened.forgotten("a", [("m1", T)]) == {"m1"}


def test_deletion_records_hold_ids_and_times_per_tenant(tmp_path: Path) -> None:
    stones = SqliteTombstones(tmp_path / "t.sqlite")
    request = DeletionRequest(tenant_id="a", message_ids=["m1"], requested_by="admin", requested_at=T)
    stones.record(DeletionRecord(request=request, completed_at=T + timedelta(seconds=2), units_deleted=3))
    [record] = stones.records("a")
    assert record.request == request and record.seconds == 2.0 and record.units_deleted == 3
    assert stones.records("b") == []


def turn(tenant: str, session: str, mid: str) -> BufferedTurn:
    return BufferedTurn(
        tenant_id=tenant, session_id=session, message_id=mid, speaker="A", text="t", ts=T, vector=[1.0]
    )


def test_the_buffer_forgets_turns_in_any_session_of_the_tenant_only() -> None:
    buf = InMemoryBuffer(turns=10, ttl_seconds=3600, max_sessions=100, clock=lambda: 0.0)
    buf.push([turn("a", "s1", "m1"), turn("a", "s2", "m2"), turn("a", "s2", "m3"), turn("b", "s1", "m1")])
    assert buf.forget("a", ["m1", "m2"]) == 2
    assert [t.message_id for t in buf.recent("a")] == ["m3"]
    assert [t.message_id for t in buf.recent("b")] == ["m1"]
    assert buf.forget("a", None) == 1
    assert buf.recent("a") == [] and len(buf.recent("b")) == 1


class FlakyRedis(ConnectionError):
    """What redis-py raises while the server is down (its class names the store)."""


FlakyRedis.__module__ = "redis.exceptions"


def test_stream_stages_wait_out_an_outage_of_the_tombstone_store(tmp_path: Path) -> None:
    """A look-up while Redis is down waits (the outage gauge names it) instead of failing the batch."""
    from simplemem.processors.stores.retry import StoreRetry
    from simplemem.processors.stores.tombstones import RetriedTombstones

    inner = SqliteTombstones(tmp_path / "t.sqlite")
    inner.add(DeletionRequest(tenant_id="a", message_ids=["m1"], requested_at=T))
    failures = iter([True, True, False])
    real = inner.forgotten

    def forgotten(tenant: str, messages: list[tuple[str, datetime]]) -> set[str]:
        if next(failures):
            raise FlakyRedis("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        return real(tenant, messages)

    inner.forgotten = forgotten  # type: ignore[method-assign]
    blocked: list[tuple[str, bool]] = []
    retry = StoreRetry(
        attempts=1,
        max_wait_seconds=0.01,
        on_outage=lambda s, b: blocked.append((s, b)),
        wait_multiplier=0.001,
    )
    assert RetriedTombstones(inner, retry).forgotten("a", [("m1", T)]) == {"m1"}
    assert ("redis", True) in blocked and blocked[-1] == ("redis", False)
