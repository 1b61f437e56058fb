"""The older mem0 clients' routes (simplemem/api/mem0_legacy.py) over plain HTTP: entity ids at the
top level of a body or a query narrow the scope (never widen it to the tenant), an id given twice
with two values is a 409 naming it (simplemem.api.mem0_scope.requested_scope, as on every mem0
route), and another tenant's key finds nothing on any route."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.service_server import ServeProcess, key_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def seeded(
    embedded_service: ServeProcess,
) -> Iterator[tuple[httpx.Client, dict[str, str], dict[str, str], str]]:
    """A client, two tenants' headers, and a tag; the first tenant holds one fact for each of two users."""
    tag = uuid.uuid4().hex[:8]
    with httpx.Client(base_url=f"{embedded_service.url}/mem0", timeout=60) as api:
        admin_api = httpx.Client(base_url=embedded_service.url, timeout=60)
        mine, other = key_for(admin_api, f"legacy-a-{tag}"), key_for(admin_api, f"legacy-b-{tag}")
        admin_api.close()
        for user, fact in (("ana", "I play the cello."), ("ben", "I play the tuba.")):
            body = {"messages": [{"role": "user", "content": fact}], "user_id": f"{user}-{tag}"}
            added = api.post("/v1/memories/", json=body, headers=mine)
            assert added.status_code == 200 and isinstance(added.json(), list), added.text
        yield api, mine, other, tag


def texts(items: list[dict[str, Any]]) -> str:
    return " ".join(m["memory"] for m in items)


def test_a_top_level_user_id_narrows_every_route(
    seeded: tuple[httpx.Client, dict[str, str], dict[str, str], str],
) -> None:
    api, mine, _, tag = seeded
    ana = f"ana-{tag}"
    ask = {"query": "What instrument do I play?", "user_id": ana, "org_id": "x", "project_id": "y"}
    for route in ("/v1/memories/search/", "/v2/memories/search/"):
        found = api.post(route, json=ask, headers=mine).json()
        assert "cello" in texts(found) and "tuba" not in texts(found), route
    listed = api.get("/v1/memories/", params={"user_id": ana, "org_id": "x"}, headers=mine).json()
    assert "cello" in texts(listed) and "tuba" not in texts(listed)
    listed = api.post("/v2/memories/", json={"user_id": ana}, headers=mine).json()
    assert "cello" in texts(listed) and "tuba" not in texts(listed)
    paged = api.get("/v1/memories/", params={"user_id": ana, "page": 1, "page_size": 5}, headers=mine).json()
    assert paged["count"] == 1 and "cello" in texts(paged["results"])
    everyone = api.post("/v1/memories/search/", json={"query": "What instrument do I play?"}, headers=mine)
    assert {"cello", "tuba"} <= set(texts(everyone.json()).replace(".", "").split())


def test_top_level_and_filter_ids_combine_and_conflicts_are_refused(
    seeded: tuple[httpx.Client, dict[str, str], dict[str, str], str],
) -> None:
    api, mine, _, tag = seeded
    both = {"query": "instrument", "user_id": f"ana-{tag}", "filters": {"user_id": f"ben-{tag}"}}
    refused = api.post("/v2/memories/search/", json=both, headers=mine)
    assert refused.status_code == 409 and "user_id" in refused.json()["detail"]
    narrowed = {"query": "instrument", "agent_id": "nobody", "filters": {"user_id": f"ana-{tag}"}}
    assert api.post("/v2/memories/search/", json=narrowed, headers=mine).json() == []
    assert api.get("/v1/memories/", params={"app_id": "shop"}, headers=mine).json() == []  # an app narrows
    refused = api.get("/v1/memories/", params={"user_id": ""}, headers=mine)
    assert refused.status_code == 422 and "user_id" in refused.json()["detail"]
    empty = api.post("/v1/memories/", json={"messages": [], "app_id": "shop"}, headers=mine)
    assert empty.status_code == 422 and "messages" in empty.json()["detail"]


def test_another_tenants_key_finds_nothing(
    seeded: tuple[httpx.Client, dict[str, str], dict[str, str], str],
) -> None:
    api, _, other, tag = seeded
    for user in (f"ana-{tag}", None):
        scope = {"user_id": user} if user else {}
        ask = {"query": "What instrument do I play?", **scope}
        assert api.post("/v1/memories/search/", json=ask, headers=other).json() == []
        assert api.post("/v2/memories/search/", json=ask, headers=other).json() == []
        assert api.get("/v1/memories/", params=scope, headers=other).json() == []
        assert api.post("/v2/memories/", json=scope, headers=other).json() == []
    assert api.get("/v1/memories/", headers={"Authorization": "Token not-a-key"}).status_code == 401
