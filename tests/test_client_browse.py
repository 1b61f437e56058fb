"""The client's browsing methods against a real `simplemem serve`: the filtered, paged listing and its
counts, one memory's provenance and forgetting a session, on both clients; a second tenant's key
reaches none of the first tenant's memories through them, and the admin names the tenant."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from simplemem.client import (
    AsyncClient,
    BrowseFilter,
    Client,
    Conversation,
    Forbidden,
    InvalidRequest,
    NotFound,
    Turn,
)
from tests.service_server import ADMIN, ServeProcess

pytestmark = pytest.mark.slow


@dataclass
class Tenants:
    url: str
    alpha: Client
    beta: Client
    alpha_key: str
    alpha_tenant: str
    hana: Turn
    miso: Turn


def eventually(check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return value


@pytest.fixture(scope="module")
def tenants(embedded_service: ServeProcess) -> Iterator[Tenants]:
    """Two tenants; the first remembers two sessions (trip, pets), the second nothing."""
    tag = uuid.uuid4().hex[:8]
    with Client(embedded_service.url, ADMIN) as admin:
        alpha, beta = admin.create_key(f"browse-a-{tag}"), admin.create_key(f"browse-b-{tag}")
    with Client(embedded_service.url, alpha.key) as one, Client(embedded_service.url, beta.key) as two:
        trip, pets = Conversation("trip", user="Riley"), Conversation("pets", user="Riley")
        hana = trip.said("My sister Hana lives in Copenhagen.", ends_exchange=True)
        miso = pets.said("My cat is called Miso.", ends_exchange=True)
        assert len(one.send(hana, miso).accepted) == 2
        assert eventually(lambda: one.browse_counts().sessions.keys() >= {"trip", "pets"})
        yield Tenants(embedded_service.url, one, two, alpha.key, alpha.tenant_id, hana, miso)


def test_the_listing_filters_and_pages_the_tenants_memories(tenants: Tenants) -> None:
    alpha = tenants.alpha
    everything = alpha.browse()
    assert everything.tenant_id == tenants.alpha_tenant and everything.total == len(everything.memories)
    pets = alpha.browse(BrowseFilter(session="pets"))
    assert pets.memories and {m.session_id for m in pets.memories} == {"pets"}
    assert any("Miso" in m.text for m in pets.memories)
    assert all(tenants.miso.message_id in m.source_ids for m in pets.memories)
    found = alpha.browse(BrowseFilter(q="Copenhagen"))
    assert "Copenhagen" in found.memories[0].text
    assert alpha.browse(BrowseFilter(state="archived")).memories == []

    first = alpha.browse(limit=1)
    assert len(first.memories) == 1 and first.next_offset == 1
    second = alpha.browse(offset=1, limit=1)
    assert second.offset == 1 and second.memories[0].id != first.memories[0].id

    counts = alpha.browse_counts()
    assert counts.total == counts.matching == everything.total
    assert counts.by_state == {"active": counts.total}
    only_pets = alpha.browse_counts(BrowseFilter(session="pets"))
    assert only_pets.sessions == {"pets": len(pets.memories)} and only_pets.total == counts.total
    with pytest.raises(InvalidRequest, match="offset"):
        alpha.browse(offset=-1)


def test_provenance_names_the_message_a_memory_came_from(tenants: Tenants) -> None:
    row = tenants.alpha.browse(BrowseFilter(session="trip")).memories[0]
    found = tenants.alpha.provenance(row.id)
    assert found.memory.id == row.id and "Copenhagen" in found.memory.text
    assert [s.message_id for s in found.sources] == [tenants.hana.message_id]
    assert found.sources[0].session_id == "trip"
    with pytest.raises(NotFound, match="no such memory"):
        tenants.alpha.provenance("no-such-memory")


def test_another_tenants_key_reaches_nothing_of_the_first(tenants: Tenants) -> None:
    alpha, beta = tenants.alpha, tenants.beta
    row = alpha.browse(BrowseFilter(session="pets")).memories[0]
    listed = beta.browse()
    assert listed.memories == [] and listed.total == 0
    assert beta.browse(BrowseFilter(q="Miso")).memories == []
    counts = beta.browse_counts()
    assert counts.total == 0 and counts.sessions == {}
    with pytest.raises(NotFound):
        beta.provenance(row.id)
    with pytest.raises(NotFound, match="session_id"):
        beta.forget_session("pets")
    for reach in (
        lambda: beta.browse(tenant_id=tenants.alpha_tenant),
        lambda: beta.browse_counts(tenant_id=tenants.alpha_tenant),
        lambda: beta.provenance(row.id, tenant_id=tenants.alpha_tenant),
        lambda: beta.forget_session("pets", tenant_id=tenants.alpha_tenant),
    ):
        with pytest.raises(Forbidden):
            reach()
    assert alpha.provenance(row.id).memory.id == row.id, "the first tenant's memory is untouched"
    with Client(tenants.url, ADMIN) as admin:
        assert row.id in {m.id for m in admin.browse(tenant_id=tenants.alpha_tenant).memories}
        with pytest.raises(InvalidRequest, match="tenant_id"):
            admin.browse()


def remembered(memory: Client, session: str, text: str) -> Turn:
    """A session of its own for a test that forgets it (the other tests keep theirs)."""
    said = Conversation(session, user="Riley").said(text, ends_exchange=True)
    assert memory.send(said).accepted
    assert eventually(lambda: memory.browse(BrowseFilter(session=session)).memories)
    return said


def test_forgetting_a_session_leaves_the_others(tenants: Tenants) -> None:
    alpha = tenants.alpha
    said = remembered(alpha, "locker", "My locker code word is walrus.")
    forgotten = alpha.forget_session("locker")
    assert forgotten.tenant_id == tenants.alpha_tenant and forgotten.message_ids == [said.message_id]
    assert forgotten.routed == "forgotten" and forgotten.record is not None
    assert forgotten.record.units_deleted >= 1
    assert alpha.browse(BrowseFilter(session="locker")).memories == []
    assert alpha.browse(BrowseFilter(q="walrus")).memories == []
    assert alpha.browse(BrowseFilter(session="trip")).memories, "other sessions stay"
    with pytest.raises(NotFound, match="session_id"):
        alpha.forget_session("locker")


def test_the_async_client_lists_and_forgets_a_session(tenants: Tenants) -> None:
    said = remembered(tenants.alpha, "garden", "I planted tulips in the garden.")

    async def run() -> None:
        async with AsyncClient(tenants.url, tenants.alpha_key) as memory:
            rows = (await memory.browse(BrowseFilter(session="garden"))).memories
            assert [s.message_id for s in (await memory.provenance(rows[0].id)).sources] == [said.message_id]
            assert (await memory.browse_counts(BrowseFilter(session="garden"))).matching == len(rows)
            forgotten = await memory.forget_session("garden")
            assert forgotten.message_ids == [said.message_id] and forgotten.record is not None
            assert forgotten.record.units_deleted == len(rows)
            assert (await memory.browse(BrowseFilter(session="garden"))).memories == []
            with pytest.raises(NotFound):
                await memory.provenance(rows[0].id)

    asyncio.run(run())
    assert "garden" not in tenants.alpha.browse_counts().sessions
