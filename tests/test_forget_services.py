"""The right to be forgotten in services mode, against the real OpenSearch, Milvus server and Redis:
every document, vector and buffered turn of a forgotten message goes, and a replay brings none back."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from simplemem.processors.ingest.admission import FORGOTTEN_REASON
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeletionRequest
from tests.helpers.forget_data import (
    COFFEE,
    FESTIVAL,
    KEPT,
    QUESTION_ID,
    coffee_ids,
    conversation,
    event,
    lines,
    stored_bytes,
)
from tests.services import store_settings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def services_settings() -> Iterator[Settings]:
    with store_settings("forget") as settings:
        yield settings


@pytest.fixture(scope="module")
def rt(services_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from simplemem.runtime import open_runtime

    runtime = open_runtime(services_settings, tmp_path_factory.mktemp("services"))
    yield runtime
    runtime.close()


def milvus_ids(rt: Any, tenant: str) -> set[str]:
    rows = rt.vectors.client.query(
        rt.vectors.collection, filter=f'tenant_id == "{tenant}"', output_fields=["id"], limit=10_000
    )
    return {str(r["id"]) for r in rows}


def test_forgotten_messages_leave_no_trace_in_any_service_store(rt: Any) -> None:
    tenant = "rtbf-services"
    mine = conversation(tenant)
    rt.pipeline.ingest(lines(mine))
    # a turn whose window is still open: only in the Redis recent-turn buffer
    recent = event(tenant, "coffee-now", 1, "Jordan", f"Another oat latte at {COFFEE[0]} right now.", 20_000)
    rt.pipeline.ingest(lines([recent]), close_sessions=False)
    assert COFFEE[1].encode() in stored_bytes(rt) and FESTIVAL[1].encode() in stored_bytes(rt)
    gone_ids = [*coffee_ids(), QUESTION_ID, recent["message_id"]]
    derived = {u.id for u in rt.lexical.units_from_sources(tenant, gone_ids)}
    assert derived and derived <= milvus_ids(rt, tenant)

    result = rt.forget(
        DeletionRequest(
            tenant_id=tenant, message_ids=gone_ids, requested_by="test", requested_at=datetime.now(UTC)
        )
    )

    assert result.record.buffer_turns_removed == 1
    stored = stored_bytes(rt)
    for word in (*COFFEE, *FESTIVAL):
        assert word.lower().encode() not in stored, word
    assert KEPT[1].encode() in stored  # the rest of the conversation stays
    assert not derived & milvus_ids(rt, tenant)
    assert set(result.deleted) >= derived
    assert milvus_ids(rt, tenant) == {u.id for page in rt.lexical.iter_units(tenant, 100) for u in page}

    replay = rt.pipeline.ingest(lines([*mine, recent]), close_sessions=False)
    assert {r.where for r in replay.rejected if r.reason == FORGOTTEN_REASON} == set(gone_ids)
    stored = stored_bytes(rt)
    for word in (*COFFEE, *FESTIVAL):
        assert word.lower().encode() not in stored, word


def test_a_forgotten_tenant_leaves_nothing_in_the_service_stores(rt: Any) -> None:
    tenant, other = "rtbf-services-all", "rtbf-services-kept"
    rt.pipeline.ingest(lines(conversation(tenant)))
    rt.pipeline.ingest(lines([event(other, "s", 1, "Ana", "My bike is a green Brompton.", 0)]))
    open_turn = event(tenant, "open", 1, "Jordan", "I am baking bread tonight.", 30_000)
    rt.pipeline.ingest(lines([open_turn]), close_sessions=False)
    kept = rt.lexical.count(other)
    assert rt.lexical.count(tenant) > 0 and rt.buffer.recent(tenant)

    rt.forget(DeletionRequest(tenant_id=tenant, whole_tenant=True, requested_at=datetime.now(UTC)))

    rt.lexical.client.indices.refresh(index=rt.lexical.index)
    assert rt.lexical.count(tenant) == 0 and milvus_ids(rt, tenant) == set()
    assert rt.buffer.recent(tenant) == []
    assert rt.lexical.count(other) == kept > 0
    rt.pipeline.ingest(lines(conversation(tenant)))
    assert rt.lexical.count(tenant) == 0


def test_consolidation_and_forgetting_its_sources_in_the_service_stores(rt: Any) -> None:
    """Orders become one abstract in OpenSearch and Milvus; forgetting one recomputes it, forgetting
    all removes it and every trace of the orders; a replay brings none back."""
    from simplemem.schemas.memory import MemoryKind, MemoryStatus
    from simplemem.schemas.stream import ConsolidationAction
    from tests.helpers.consolidation_data import CAFE, order_ids, stream

    tenant, orders = "consolidate-services", 12
    events = stream(tenant, orders)
    rt.pipeline.ingest(lines(events))
    run = rt.consolidate(tenant)
    [decision] = run.decisions
    assert set(decision.source_ids) == set(order_ids(orders))
    units = [u for page in rt.lexical.iter_units(tenant, 100) for u in page]
    [abstract] = [u for u in units if u.kind == MemoryKind.ABSTRACT]
    archived = {u.id for u in units if u.status == MemoryStatus.ARCHIVED}
    assert archived and all(u.archived_in == abstract.id for u in units if u.id in archived)
    assert milvus_ids(rt, tenant) == {u.id for u in units}

    first, *rest = order_ids(orders)
    done = rt.forget(DeletionRequest(tenant_id=tenant, message_ids=[first], requested_at=datetime.now(UTC)))
    assert [d.action for d in done.decisions] == [ConsolidationAction.RECOMPUTED]
    [again] = [
        u for page in rt.lexical.iter_units(tenant, 100) for u in page if u.kind == MemoryKind.ABSTRACT
    ]
    assert set(again.source_ids) == set(rest) and abstract.id in done.deleted

    rt.forget(DeletionRequest(tenant_id=tenant, message_ids=rest, requested_at=datetime.now(UTC)))
    left = [u for page in rt.lexical.iter_units(tenant, 100) for u in page]
    assert not [
        u for u in left if u.kind == MemoryKind.ABSTRACT or set(u.source_ids) & set(order_ids(orders))
    ]
    assert milvus_ids(rt, tenant) == {u.id for u in left}
    assert CAFE.lower().encode() not in stored_bytes(rt)
    rt.pipeline.ingest(lines(events))
    assert CAFE.lower().encode() not in stored_bytes(rt)
