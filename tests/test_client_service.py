"""The Python client against a real `simplemem serve`: a conversation sent turn by turn and in a
batch is remembered and answered, each tenant's key sees only its own memory, refusals arrive as
exceptions with the service's reason, forgetting works, and the asynchronous client agrees."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from simplemem.client import (
    AsyncClient,
    Client,
    Conversation,
    FeedbackBody,
    Forbidden,
    InvalidRequest,
    NotFound,
    QueryFilters,
    Unauthorized,
)
from simplemem.schemas.settings import REPO_ROOT
from tests.service_server import ADMIN, MAX_BATCH, ServeProcess

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tenants(embedded_service: ServeProcess) -> Iterator[tuple[Client, Client, str]]:
    """Two tenants' clients and the first one's tenant id."""
    tag = uuid.uuid4().hex[:8]
    with Client(embedded_service.url, ADMIN) as admin:
        alpha, beta = admin.create_key(f"client-a-{tag}"), admin.create_key(f"client-b-{tag}")
    with Client(embedded_service.url, alpha.key) as one, Client(embedded_service.url, beta.key) as two:
        yield one, two, alpha.tenant_id


def eventually(check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return value


def test_turn_by_turn_and_batched_turns_are_remembered_for_their_tenant_only(
    tenants: tuple[Client, Client, str],
) -> None:
    alpha, beta, _ = tenants
    chat = Conversation("trip", user="Riley", assistant="Guide")
    assert alpha.send(chat.said("My sister Hana lives in Copenhagen.")).accepted
    assert alpha.send(chat.answered("Noted: Hana is in Copenhagen.")).rejected == []
    later = Conversation("pets", user="Riley")
    answer = alpha.send([later.said("My cat is called Miso."), later.answered("A lovely name!")])
    assert len(answer.accepted) == 2

    found = eventually(lambda: "Copenhagen" in alpha.query("Where does Hana live?").context)
    assert found
    result = alpha.query("What is my cat called?", filters=QueryFilters(sessions=["pets"]))
    assert "Miso" in result.context and all(m.source_ids for m in result.memories)
    assert "Copenhagen" not in result.context, "filtered to the pets session"
    assert beta.query("Where does Hana live?").memories == []
    assert [m.text for m in beta.iter_memories()] == []
    assert any("Copenhagen" in m.text for m in alpha.iter_memories(page_size=1))


def test_refusals_carry_the_services_reason(
    embedded_service: ServeProcess, tenants: tuple[Client, Client, str]
) -> None:
    alpha, _, tenant = tenants
    bad = alpha.send({"session_id": "s", "message_id": "m", "speaker": "R", "role": "user", "text": "x"})
    assert bad.accepted == [] and "ts" in bad.rejected[0].reason
    with pytest.raises(Forbidden, match="403"):
        alpha.forget_tenant(tenant)
    alpha.batch_size = MAX_BATCH + 1  # over the service's limit: refused whole, with the reason
    try:
        with pytest.raises(InvalidRequest) as raised:
            alpha.send([{"not": "an event"}] * (MAX_BATCH + 1))
    finally:
        alpha.batch_size = 100
    assert raised.value.status == 413 and "SIMPLEMEM_API_MAX_BATCH_EVENTS" in raised.value.reason
    with pytest.raises(Unauthorized), Client(embedded_service.url, "no-such-key") as stranger:
        stranger.query("anything")
    with pytest.raises(NotFound, match="no such key"), Client(embedded_service.url, ADMIN) as admin:
        admin.revoke_key("no-such-key-id")


def test_feedback_and_forgetting_through_the_client(tenants: tuple[Client, Client, str]) -> None:
    alpha, _, _ = tenants
    chat = Conversation("locker")
    said = chat.said("My locker code word is walrus.", ends_exchange=True)
    alpha.send(said)
    assert eventually(lambda: "walrus" in alpha.query("locker code word").context)
    retry = alpha.feedback(FeedbackBody(query="What is my locker code word?", note="missed it")).retry
    assert retry.k >= 1
    assert alpha.forget_message(said.message_id).status == "accepted"
    assert eventually(lambda: "walrus" not in alpha.query("locker code word").context)


def test_the_async_client_reads_what_the_sync_one_wrote(
    embedded_service: ServeProcess, tenants: tuple[Client, Client, str]
) -> None:
    alpha, _, tenant = tenants

    async def run() -> tuple[str, int]:
        with Client(embedded_service.url, ADMIN) as admin:
            key = admin.create_key(tenant).key
        async with AsyncClient(embedded_service.url, key) as memory:
            context = (await memory.query("Where does Hana live?")).context
            listed = [m async for m in memory.iter_memories()]
            return context, len(listed)

    assert eventually(lambda: "Copenhagen" in alpha.query("Where does Hana live?").context)
    context, listed = asyncio.run(run())
    assert "Copenhagen" in context and listed >= 1


def test_the_example_in_docs_api_md_runs(embedded_service: ServeProcess) -> None:
    text = (REPO_ROOT / "docs" / "api.md").read_text()
    section = text[text.index("## The Python client") :]
    example = re.search(r"```python\n(.*?)```", section, re.S)
    assert example is not None
    with Client(embedded_service.url, ADMIN) as admin:
        key = admin.create_key(f"docs-{uuid.uuid4().hex[:8]}").key
    code = example.group(1).replace("http://127.0.0.1:8080", embedded_service.url)
    env = {**os.environ, "KEY": key, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert "Hana lives in Copenhagen" in done.stdout.decode()
