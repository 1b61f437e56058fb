"""The unmodified JavaScript clients from npm against a real `simplemem serve` (tests/clients/run.cjs
runs each scenario; tests/node_clients.py installs them from the lock): the TypeScript ``mem0ai``
2.4.6 (LangChain.js's) on its /v1 and /v2 routes, ``mem0ai`` 3.x, LangChain.js ``Mem0Memory``
saving and loading a conversation, and ``@mem0/vercel-ai-provider`` adding and retrieving. Each
checks that a user id narrows what is found and that another tenant's key finds nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from simplemem.client import Client
from tests.node_clients import run_scenario
from tests.service_server import ADMIN, ServeProcess

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def keys(embedded_service: ServeProcess) -> Iterator[tuple[str, str]]:
    tag = uuid.uuid4().hex[:8]
    with Client(embedded_service.url, ADMIN) as admin:
        yield admin.create_key(f"node-a-{tag}").key, admin.create_key(f"node-b-{tag}").key


def scenario(name: str, server: ServeProcess, keys: tuple[str, str]) -> dict[str, Any]:
    done = run_scenario(name, f"{server.url}/mem0", keys, uuid.uuid4().hex[:8])
    lines = done.stdout.decode().strip().splitlines()
    assert done.returncode == 0 and lines, done.stdout.decode() + done.stderr.decode()[-3000:]
    found: dict[str, Any] = orjson.loads(lines[-1])
    assert found["errors"] == [], found["errors"]  # the clients log failures instead of raising some
    return found


def texts(items: list[dict[str, Any]] | dict[str, Any]) -> str:
    listed = items["results"] if isinstance(items, dict) else items
    return " | ".join(m["memory"] for m in listed)


def test_mem0ai_ts_2_on_the_v1_and_v2_routes(embedded_service: ServeProcess, keys: tuple[str, str]) -> None:
    found = scenario("mem0-v2", embedded_service, keys)
    assert isinstance(found["added"], list) and found["added"][0]["event"] == "ADD"
    for route in ("search_v1", "search_v2", "list_v1", "list_v2"):
        assert isinstance(found[route], list), route  # 2.x expects bare arrays
        assert "peanuts" in texts(found[route]) and "penicillin" not in texts(found[route]), route
    assert "penicillin" in texts(found["search_tenant"]), "no user id: the whole tenant"
    assert found["list_paged"]["count"] == 1 and "peanuts" in texts(found["list_paged"])
    assert "peanuts" in found["get"]["memory"] and found["history"][0]["event"] == "ADD"
    for seen in ("other_search", "other_search_tenant", "other_list"):
        assert found[seen] == [], seen
    assert found["other_get"].startswith("MemoryNotFoundError")
    assert found["after"] is True, "delete and deleteAll forgot the user's memories"


def test_mem0ai_ts_3(embedded_service: ServeProcess, keys: tuple[str, str]) -> None:
    found = scenario("mem0-v3", embedded_service, keys)
    assert "Porto" in texts(found["search"]) and "Braga" not in texts(found["search"])
    assert "Porto" in texts(found["list"]) and "Porto" in found["get"]["memory"]
    assert found["other_search"]["results"] == [] and found["other_list"]["results"] == []
    assert found["other_get"].startswith("MemoryNotFoundError")
    assert found["after"] is True


def test_langchain_js_mem0_memory_saves_and_loads_a_conversation(
    embedded_service: ServeProcess, keys: tuple[str, str]
) -> None:
    found = scenario("langchain", embedded_service, keys)
    assert "Hana lives in Copenhagen" in found["searched"]
    assert "Hana lives in Copenhagen" in found["listed"]
    assert "Copenhagen" not in found["other_session"], "another sessionId of the same tenant"
    assert "Copenhagen" not in found["other_tenant"]


def test_the_vercel_ai_provider_adds_and_retrieves(
    embedded_service: ServeProcess, keys: tuple[str, str]
) -> None:
    found = scenario("vercel", embedded_service, keys)
    assert found["added"]["results"][0]["event"] == "ADD"
    assert "Miso" in found["retrieved"] and "Miso" in texts(found["memories"])
    assert found["other_user"] == "" and found["other_tenant"] == ""
