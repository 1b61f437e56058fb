"""The unmodified `mem0ai` client (pinned 2.2.1) against `simplemem serve`'s mem0-compatible routes:
add, search, get_all, get, history, update, delete, delete_all; scopes map onto sessions inside the
key's tenant, and another tenant's key sees nothing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.helpers.serving import ServeProcess
from tests.service_server import new_key

pytestmark = pytest.mark.slow

os.environ["MEM0_TELEMETRY"] = "False"  # the client would otherwise report to its vendor


@pytest.fixture(scope="module")
def keys(embedded_service: ServeProcess) -> Iterator[tuple[str, str]]:
    with httpx.Client(base_url=embedded_service.url, timeout=60) as api:
        yield new_key(api, "mem0-alpha"), new_key(api, "mem0-beta")


def client(server: ServeProcess, key: str) -> Any:
    from mem0 import MemoryClient

    return MemoryClient(api_key=key, host=f"{server.url}/mem0")


def eventually(check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.5)


def texts(results: list[dict[str, Any]]) -> str:
    return " ".join(r["memory"] for r in results).lower()


def test_add_and_search_within_a_user_and_another_tenant_sees_nothing(
    embedded_service: ServeProcess, keys: tuple[str, str]
) -> None:
    alpha, beta = client(embedded_service, keys[0]), client(embedded_service, keys[1])
    added = alpha.add([{"role": "user", "content": "I am allergic to peanuts."}], user_id="alice")
    assert added["results"][0]["event"] == "ADD"
    alpha.add([{"role": "user", "content": "I am allergic to penicillin."}], user_id="bob")
    found = eventually(
        lambda: (
            "peanuts"
            in texts(alpha.search("What am I allergic to?", filters={"user_id": "alice"})["results"])
        )
    )
    assert found
    alice = alpha.search("What am I allergic to?", filters={"user_id": "alice"})["results"]
    assert "penicillin" not in texts(alice)
    assert all(r["user_id"] == "alice" for r in alice)
    assert beta.search("What am I allergic to?", filters={"user_id": "alice"})["results"] == []
    assert beta.search("What am I allergic to?")["results"] == []
    assert beta.get_all(filters={"user_id": "alice"})["count"] == 0


def test_get_all_get_history_update_and_delete(embedded_service: ServeProcess, keys: tuple[str, str]) -> None:
    alpha, beta = client(embedded_service, keys[0]), client(embedded_service, keys[1])
    alpha.add(
        [{"role": "user", "content": "My sister Ana lives in Porto."}], user_id="carol", agent_id="helper"
    )
    listed = eventually(lambda: alpha.get_all(filters={"user_id": "carol"})["results"])
    assert listed and "porto" in texts(listed)
    memory = next(m for m in listed if "porto" in m["memory"].lower())
    assert (memory["user_id"], memory["agent_id"]) == ("carol", "helper")
    assert alpha.get(memory["id"])["memory"] == memory["memory"]
    assert [h["event"] for h in alpha.history(memory["id"])] == ["ADD"]
    with pytest.raises(Exception, match=r"404|not found|Not Found"):
        beta.get(memory["id"])
    alpha.update(memory["id"], text="My sister Ana lives in Braga.")
    moved = eventually(lambda: "braga" in texts(alpha.get_all(filters={"user_id": "carol"})["results"]))
    assert moved and "porto" not in texts(alpha.get_all(filters={"user_id": "carol"})["results"])
    current = next(
        m for m in alpha.get_all(filters={"user_id": "carol"})["results"] if "braga" in m["memory"].lower()
    )
    assert alpha.delete(current["id"])["message"]
    assert "braga" not in texts(alpha.get_all(filters={"user_id": "carol"})["results"])
    assert alpha.delete_all(user_id="carol")["message"]
    assert eventually(lambda: alpha.get_all(filters={"user_id": "carol"})["results"] == []), "all forgotten"


def test_what_add_returned_is_listed_fetched_and_deleted_at_once(
    embedded_service: ServeProcess, keys: tuple[str, str]
) -> None:
    """mem0's add is a complete exchange: listed when add returns (not after a pause or the idle
    time), and the id add returned (its message's) reaches the memories derived from it."""
    alpha = client(embedded_service, keys[0])
    added = alpha.add([{"role": "user", "content": "My bicycle is a green Brompton."}], user_id="dora")
    listed = alpha.get_all(filters={"user_id": "dora"})["results"]
    assert "brompton" in texts(listed), listed
    returned = added["results"][0]["id"]
    assert "brompton" in alpha.get(returned)["memory"].lower()
    assert alpha.delete(returned)["message"]
    assert "brompton" not in texts(alpha.get_all(filters={"user_id": "dora"})["results"])


def test_a_message_not_decided_yet_is_fetched_as_pending_and_deleted_before_it_is_indexed(
    embedded_service: ServeProcess, keys: tuple[str, str]
) -> None:
    """A turn sent without a marker waits for the pause: meanwhile mem0's get says PENDING (not
    404), and its delete forgets the message, so no memory is made of it after the pause."""
    from datetime import UTC, datetime

    alpha = client(embedded_service, keys[0])
    ids = {f"pending-{n}": f"My locker code word is {word}." for n, word in ((1, "walrus"), (2, "heron"))}
    headers = {"Authorization": f"Bearer {keys[0]}"}
    with httpx.Client(base_url=embedded_service.url, timeout=60) as api:
        for mid, text in ids.items():
            event = {
                "session_id": "pending-session",
                "message_id": mid,
                "speaker": "Dora",
                "role": "user",
                "text": text,
                "ts": datetime.now(UTC).isoformat(),
            }
            assert api.post("/v1/events", json=event, headers=headers).status_code == 202
        first = alpha.get("pending-1")
        assert first["status"] == "PENDING" and "walrus" in first["memory"], first
        assert alpha.history("pending-1")[0]["status"] == "PENDING"
        assert alpha.delete("pending-1")["message"]

        def memories() -> str:
            page = api.get("/v1/memories", params={"limit": 1000}, headers=headers).json()
            return " ".join(m["text"] for m in page["memories"]).lower()

        assert eventually(lambda: "heron" in memories()), "the other turn is decided after the pause"
        assert "walrus" not in memories(), "the deleted pending message was never indexed"
        assert "walrus" not in texts(alpha.search("locker code word", filters={})["results"])


def test_entity_ids_at_the_top_level_or_in_the_query_narrow_every_route(
    embedded_service: ServeProcess,
) -> None:
    """mem0's older clients and its v1/v2 API put user_id/agent_id/run_id/app_id at the top level of
    the body or in the query string, not under filters: there too they narrow the answer (one end
    user never sees another's memories), and two different values are refused."""
    with httpx.Client(base_url=embedded_service.url, timeout=60) as api:
        api.headers["Authorization"] = f"Bearer {new_key(api, 'mem0-scopes')}"
        for user, agent, text in (
            ("sam", "coach", "My gym locker is number 41."),
            ("kim", "tutor", "My gym locker is number 77."),
        ):
            body = {"messages": [{"role": "user", "content": text}], "user_id": user, "agent_id": agent}
            assert api.post("/mem0/v3/memories/add/", json=body).status_code == 200
        added = api.post(
            "/mem0/v3/memories/add/",
            json={
                "messages": [{"role": "user", "content": "My gym locker is number 93."}],
                "app_id": "gymapp",
            },
        )
        assert added.status_code == 200

        def listed(**ids: str) -> str:
            return texts(api.post("/mem0/v3/memories/", json=ids).json()["results"])

        assert eventually(lambda: "41" in listed(user_id="sam") and "93" in listed(app_id="gymapp"))
        for narrowed in (listed(user_id="sam"), listed(agent_id="coach")):
            assert "41" in narrowed and "77" not in narrowed and "93" not in narrowed, narrowed
        assert "93" in listed(app_id="gymapp") and "41" not in listed(app_id="gymapp")
        by_query = api.post("/mem0/v3/memories/", params={"user_id": "kim"}, json={}).json()["results"]
        assert "77" in texts(by_query) and "41" not in texts(by_query)
        found = api.post("/mem0/v3/memories/search/", json={"query": "gym locker number", "user_id": "sam"})
        assert "41" in texts(found.json()["results"]) and "77" not in texts(found.json()["results"])
        found = api.post(
            "/mem0/v3/memories/search/", params={"agent_id": "tutor"}, json={"query": "gym locker"}
        )
        assert "77" in texts(found.json()["results"]) and "41" not in texts(found.json()["results"])
        both = api.post(
            "/mem0/v3/memories/search/",
            json={"query": "gym", "user_id": "sam", "filters": {"user_id": "kim"}},
        )
        assert both.status_code == 409 and "user_id" in both.json()["detail"]
        kims = api.post("/mem0/v3/memories/", json={"user_id": "kim"}).json()["results"]
        assert api.get(f"/mem0/v1/memories/{kims[0]['id']}/", params={"user_id": "sam"}).status_code == 404
        assert api.delete(f"/mem0/v1/memories/{kims[0]['id']}/", params={"user_id": "sam"}).status_code == 404
        assert api.get(f"/mem0/v1/memories/{kims[0]['id']}/", params={"user_id": "kim"}).status_code == 200
        assert api.delete("/mem0/v1/memories/", params={"app_id": "gymapp"}).status_code == 200
        assert eventually(lambda: "93" not in listed()), "delete_all by app_id forgot the app's memories"
        assert "41" in listed() and "77" in listed()


def scope_rows(server: ServeProcess, tenant: str) -> int:
    import sqlite3

    with sqlite3.connect(f"{server.env['store']}/api_keys.sqlite") as db:
        (count,) = db.execute("SELECT count(*) FROM mem0_scopes WHERE tenant_id=?", (tenant,)).fetchone()
    return int(count)


def test_a_scope_is_bounded_and_recorded_only_once_its_request_is_accepted(
    embedded_service: ServeProcess,
) -> None:
    """Refused, empty or oversized adds store nothing (they grew the key store by megabytes)."""
    with httpx.Client(base_url=embedded_service.url, timeout=60) as api:
        api.headers["Authorization"] = f"Bearer {new_key(api, 'mem0-bounded')}"
        hello = [{"role": "user", "content": "Hello there."}]
        refused = [
            api.post("/mem0/v3/memories/add/", json={"messages": hello, "user_id": "u" * 1000}),
            api.post("/mem0/v3/memories/add/", json={"messages": hello, "agent_id": "a\x00b"}),
            api.post("/mem0/v3/memories/add/", json={"messages": [], "user_id": "empty"}),
            api.post(
                "/mem0/v3/memories/add/", json={"messages": [{"content": "w " * 35_000}], "run_id": "big"}
            ),
        ]
        assert [r.status_code for r in refused] == [422, 422, 422, 413], [r.text for r in refused]
        assert "user_id" in refused[0].text and "messages" in refused[2].text
        assert scope_rows(embedded_service, "mem0-bounded") == 0
        assert (
            api.post("/mem0/v3/memories/add/", json={"messages": hello, "user_id": "kept"}).status_code == 200
        )
        assert scope_rows(embedded_service, "mem0-bounded") == 1


def test_forgetting_an_end_user_or_a_tenant_removes_its_scopes_and_none_is_stored_in_clear(
    embedded_service: ServeProcess,
) -> None:
    from tests.service_server import admin

    store = embedded_service.env["store"]

    def on_disk(raw: bytes) -> bool:
        from pathlib import Path

        return any(raw in p.read_bytes() for p in Path(store).glob("api_keys.sqlite*"))

    with httpx.Client(base_url=embedded_service.url, timeout=60) as api:
        api.headers["Authorization"] = f"Bearer {new_key(api, 'mem0-frank')}"
        for user in ("frank.user@example.com", "gina.user@example.com"):
            body = {
                "messages": [{"content": "I take the 7:40 train."}],
                "user_id": user,
                "agent_id": "Dr Frank Nurse",
            }
            assert api.post("/mem0/v3/memories/add/", json=body).status_code == 200
        assert scope_rows(embedded_service, "mem0-frank") == 2
        assert not on_disk(b"frank.user@example.com")  # scrubbed as memory text is (names are kept there too)
        listed = api.post("/mem0/v3/memories/", json={"user_id": "frank.user@example.com"}).json()["results"]
        assert listed and all(
            m["user_id"] == "frank.user@example.com" for m in listed
        )  # as the request named it
        assert (
            api.delete("/mem0/v1/memories/", params={"user_id": "frank.user@example.com"}).status_code == 200
        )
        assert scope_rows(embedded_service, "mem0-frank") == 1
        assert api.delete("/v1/tenants/mem0-frank", headers=admin()).status_code == 202
        assert scope_rows(embedded_service, "mem0-frank") == 0
