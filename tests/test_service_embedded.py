"""`simplemem serve` in embedded mode, as a real server process on a fresh store: keys, events,
queries (the `simplemem query --json` contract), limits and quotas, memories, deletions, feedback,
health, metrics, and `simplemem golden --url` against it."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from simplemem.schemas.settings import REPO_ROOT
from tests.conftest import GOLDEN
from tests.helpers.serving import ServeProcess
from tests.service_server import ADMIN, LEGACY_TENANT, admin, key_for

pytestmark = pytest.mark.slow

CONTRACT = {"id", "query", "complexity", "k", "memories", "context", "context_tokens"}


@pytest.fixture(scope="module")
def server(embedded_service: ServeProcess) -> ServeProcess:
    return embedded_service


@pytest.fixture(scope="module")
def api(server: ServeProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=120) as client:
        yield client


def event(i: int, text: str, session: str = "s1", **extra: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "message_id": f"m{i}",
        "speaker": "Jordan",
        "role": "user",
        "text": text,
        "ts": f"2026-01-05T09:{i % 60:02d}:00Z",
        **extra,
    }


def wait_until(check: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.5)


def test_keys_decide_the_tenant_and_other_tenants_are_forbidden(api: httpx.Client) -> None:
    acme = key_for(api, "acme")
    assert api.post("/v1/query", json={"query": "anything"}).status_code == 401
    assert (
        api.post("/v1/query", json={"query": "x"}, headers={"Authorization": "Bearer smk_0_x"}).status_code
        == 401
    )
    assert api.post("/v1/query", json={"query": "x", "tenant_id": "beta"}, headers=acme).status_code == 403
    r = api.post("/v1/events", json=event(1, "hello", tenant_id="beta"), headers=acme)
    assert r.status_code == 403
    assert api.post("/v1/query", json={"query": "x"}, headers=admin()).status_code == 403  # admin: no tenant
    assert api.post("/v1/admin/keys", json={"tenant_id": "acme"}, headers=acme).status_code == 403
    assert api.delete("/v1/tenants/beta", headers=acme).status_code == 403


def test_a_batch_keeps_its_good_events_and_names_each_bad_one(api: httpx.Client) -> None:
    headers = key_for(api, "batch")
    bad = event(2, "no time")
    del bad["ts"]
    r = api.post(
        "/v1/events",
        json={"events": [event(1, "I live in Lisbon."), bad, "oops", event(3, "Hi.")]},
        headers=headers,
    )
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["accepted"] == ["m1", "m3"]
    assert [(e["index"], e["message_id"]) for e in body["rejected"]] == [(1, "m2"), (2, None)]
    assert "ts" in body["rejected"][0]["reason"]


def test_metadata_nested_too_deep_rejects_its_event_and_keeps_the_batch(api: httpx.Client) -> None:
    headers = key_for(api, "deep")
    deep = orjson.dumps(event(2, "Deep."))[:-1] + b', "metadata": ' + b'{"a":' * 299 + b"{}" + b"}" * 300
    body = b'{"events": [' + orjson.dumps(event(1, "I live in Lisbon.")) + b", " + deep + b"]}"
    r = api.post("/v1/events", content=body, headers={**headers, "Content-Type": "application/json"})
    assert r.status_code == 202, r.text
    assert r.json()["accepted"] == ["m1"]
    [rejected] = r.json()["rejected"]
    assert rejected["index"] == 1 and "metadata" in rejected["reason"], rejected


def test_no_shape_of_batch_item_writes_into_another_tenants_memory(api: httpx.Client) -> None:
    """An item naming another tenant is refused whatever its shape (an object, a JSON string, under
    ``events``): it may neither add to, edit nor erase that tenant's memory."""
    mallory, victim = key_for(api, "mallory"), key_for(api, "victim")
    own = event(1, "My favourite fruit is mango.", session="v1", ends_session=True)
    assert api.post("/v1/events", json=own, headers=victim).status_code == 202
    question = {"query": "What is my favourite fruit?", "as_of": "2026-02-01T00:00:00Z"}
    assert wait_until(
        lambda: "mango" in api.post("/v1/query", json=question, headers=victim).json()["context"]
    )
    for text in ("My favourite fruit is durian.", "ok"):  # an edit of the victim's m1, or its erasure
        forged = {**own, "tenant_id": "victim", "text": text}
        line = orjson.dumps(forged).decode()
        for payload in ([line], {"events": [line]}, [forged], {"events": [event(9, "fine"), line]}):
            r = api.post("/v1/events", json=payload, headers=mallory)
            assert r.status_code == 403, (payload, r.text)
        assert api.post("/v1/events", json=line, headers=mallory).status_code == 422
    unnamed = orjson.dumps(event(2, "My bike is green.", session="m1", ends_session=True)).decode()
    r = api.post("/v1/events", json=[unnamed], headers=mallory)
    assert r.status_code == 202 and r.json()["accepted"] == ["m2"]  # a string item is the caller's own
    time.sleep(3)
    context = api.post("/v1/query", json=question, headers=victim).json()["context"]
    assert "mango" in context and "durian" not in context
    bike = {"query": "What colour is my bike?", "as_of": "2026-02-01T00:00:00Z"}
    assert "green" not in api.post("/v1/query", json=bike, headers=victim).json()["context"]


def test_items_that_are_not_objects_are_rejected_and_the_rest_is_kept(api: httpx.Client) -> None:
    headers = key_for(api, "shapes")
    r = api.post(
        "/v1/events", json=[event(1, "I play the cello."), 42, None, True, [1], "{"], headers=headers
    )
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["accepted"] == ["m1"]
    reasons = {e["index"]: e["reason"] for e in body["rejected"]}
    assert set(reasons) == {1, 2, 3, 4, 5}
    assert "JSON object, got number" in reasons[1] and "got null" in reasons[2] and "got array" in reasons[4]


def test_a_posted_fact_is_answered_with_the_query_contract_and_no_other_tenant_sees_it(
    api: httpx.Client,
) -> None:
    mine, theirs = key_for(api, "facts"), key_for(api, "stranger")
    r = api.post("/v1/events", json=event(1, "My favorite color is teal."), headers=mine)
    assert r.status_code == 202 and r.json()["accepted"] == ["m1"]
    question = {"id": "q1", "query": "What is my favorite color?", "as_of": "2026-02-01T00:00:00Z"}
    answer = wait_until(
        lambda: (a := api.post("/v1/query", json=question, headers=mine).json())["memories"] and a
    )
    assert set(answer) == CONTRACT and answer["id"] == "q1"
    assert "teal" in answer["context"].lower()
    assert any("m1" in m["source_ids"] for m in answer["memories"])
    other = api.post("/v1/query", json=question, headers=theirs).json()
    assert other["memories"] == [] and other["context"] == ""
    early = api.post("/v1/query", json={**question, "as_of": "2026-01-01T00:00:00Z"}, headers=mine).json()
    assert "teal" not in early["context"].lower()
    code_only = api.post("/v1/query", json={**question, "kinds": ["code"]}, headers=mine).json()
    assert code_only["memories"] == []


def test_oversized_requests_are_refused_with_the_reason(api: httpx.Client) -> None:
    headers = key_for(api, "limits")
    r = api.post("/v1/query", json={"query": "x" * 2001}, headers=headers)
    assert r.status_code == 422 and "SIMPLEMEM_MAX_QUERY_CHARS" in r.text
    r = api.post("/v1/events", json={"events": [event(i, "hi") for i in range(121)]}, headers=headers)
    assert r.status_code == 413 and "SIMPLEMEM_API_MAX_BATCH_EVENTS" in r.text
    r = api.post("/v1/events", json=event(1, "y" * 300_000), headers=headers)
    assert r.status_code == 413 and "SIMPLEMEM_API_MAX_BODY_BYTES" in r.text
    r = api.post("/v1/events", json=[event(1, "z " * 17_500), event(2, "z " * 17_500)], headers=headers)
    assert r.status_code == 413 and "SIMPLEMEM_API_MAX_BATCH_CHARS" in r.text  # the text, not the count


def test_a_noisy_tenant_gets_429_with_retry_after_and_a_quiet_one_goes_on(api: httpx.Client) -> None:
    noisy, quiet = key_for(api, "noisy"), key_for(api, "quiet")
    batch = {"events": [event(i, f"Note {i}.", session="n") for i in range(100)]}  # 2 x 100 > INGEST_RATE
    assert api.post("/v1/events", json=batch, headers=noisy).status_code == 202
    refused = api.post("/v1/events", json=batch, headers=noisy)
    assert refused.status_code == 429
    # The minute's window opened at the first batch, seconds ago: come back when it closes, not "1".
    assert 40 <= int(refused.headers["Retry-After"]) <= 60
    assert api.post("/v1/events", json=event(1, "Quiet."), headers=quiet).status_code == 202


def test_memories_are_listed_in_pages_with_provenance(api: httpx.Client) -> None:
    headers = key_for(api, "pages")
    facts = ["I adopted a cat named Miso.", "My brother lives in Oslo.", "I work as a nurse."]
    events = [event(i, text, session="p") for i, text in enumerate(facts)]
    assert api.post("/v1/events", json=events, headers=headers).status_code == 202
    first = wait_until(
        lambda: (p := api.get("/v1/memories?limit=1", headers=headers).json())["total"] >= 3 and p
    )
    assert first and len(first["memories"]) == 1 and first["next_offset"] == 1
    unit = first["memories"][0]
    assert unit["tenant_id"] == "pages" and unit["session_id"] == "p" and unit["source_ids"]
    rest = api.get(f"/v1/memories?offset=1&limit={first['total']}", headers=headers).json()
    assert rest["next_offset"] is None
    texts = " ".join(m["text"] for m in [unit, *rest["memories"]])
    assert "Miso" in texts and "Oslo" in texts


def test_a_deleted_message_and_a_deleted_tenant_are_forgotten(api: httpx.Client) -> None:
    """DELETE of a message runs the forget cascade in the serving process: its memories are gone from
    the tenant's listing and answers, the tenant's other memories stay; deleting the tenant (admin)
    forgets the rest and revokes its keys."""
    headers = key_for(api, "forgetful")
    said = [event(7, "My locker at the climbing gym is number 41."), event(8, "My cat Miso likes tuna.")]
    assert api.post("/v1/events", json={"events": said}, headers=headers).status_code == 202

    def sources() -> set[str]:
        listed = api.get("/v1/memories?limit=100", headers=headers).json()["memories"]
        return {s for m in listed for s in m["source_ids"]}

    assert wait_until(lambda: {"m7", "m8"} <= sources())
    r = api.delete("/v1/messages/m7", headers=headers)
    assert r.status_code == 202 and r.json()["detail"]["message_ids"] == ["m7"]
    assert sources() == {"m8"}
    question = {"query": "Which locker number is mine?", "as_of": "2026-02-01T00:00:00Z"}
    assert "41" not in api.post("/v1/query", json=question, headers=headers).json()["context"]
    r = api.delete("/v1/tenants/forgetful", headers=admin())
    assert r.status_code == 202 and r.json()["detail"]["revoked_keys"] == 1
    assert api.post("/v1/query", json={"query": "x"}, headers=headers).status_code == 401
    again = key_for(api, "forgetful")
    assert api.get("/v1/memories?limit=100", headers=again).json()["memories"] == []


def test_feedback_logs_a_scrubbed_miss_and_answers_again_at_k_max(
    api: httpx.Client, server: ServeProcess
) -> None:
    headers = key_for(api, "critic")
    body = {"query": "Who did I call at 415-555-0132?", "complexity": 0.1, "k": 3}
    r = api.post("/v1/feedback", json=body, headers=headers)
    assert r.status_code == 200, r.text
    assert r.json()["retry"]["k"] == 20
    exported = subprocess.run(
        [str(REPO_ROOT / "bin" / "simplemem"), "feedback", "export", "--store", server.env["store"]],
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    records = [orjson.loads(line) for line in exported.splitlines()]
    mine = [r for r in records if r["tenant_id"] == "critic"]
    assert len(mine) == 1 and (mine[0]["complexity"], mine[0]["k"], mine[0]["retried_k"]) == (0.1, 3, 20)
    assert "415-555-0132" not in exported.decode() and "<PHONE_NUMBER>" in mine[0]["query"]


def test_a_key_made_with_the_cli_works_until_it_is_revoked(api: httpx.Client, server: ServeProcess) -> None:
    cli = [str(REPO_ROOT / "bin" / "simplemem"), "keys"]
    store = ["--store", server.env["store"]]
    made = subprocess.run(
        [*cli, "create", "--tenant", "clitenant", *store], capture_output=True, check=True, timeout=120
    )
    key = made.stdout.decode().split()[-1]
    headers = {"X-API-Key": key}
    assert api.post("/v1/query", json={"query": "hello?"}, headers=headers).status_code == 200
    listed = subprocess.run(
        [*cli, "list", *store], capture_output=True, check=True, timeout=120
    ).stdout.decode()
    assert key not in listed and "clitenant" in listed
    key_id = key.split("_")[1]
    subprocess.run([*cli, "revoke", key_id, *store], check=True, timeout=120, capture_output=True)
    assert api.post("/v1/query", json={"query": "hello?"}, headers=headers).status_code == 401


def test_health_and_metrics(api: httpx.Client) -> None:
    health = api.get("/healthz").json()
    assert health["status"] == "ok" and health["mode"] == "embedded"
    assert {s["state"] for s in health["stores"].values()} == {"up"} and len(health["stores"]) == 2
    api.post("/v1/query", json={"query": "x"})  # a 401
    text = api.get("/metrics").text
    assert 'simplemem_api_request_seconds_count{method="POST",route="/v1/query",status="401"}' in text
    assert 'simplemem_api_errors_total{route="/v1/query",status="401"}' in text
    assert api.get("/openapi.json").json()["paths"]["/v1/query"]


def run_golden(server: ServeProcess, key: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(REPO_ROOT / "bin" / "simplemem"), "golden", "--url", server.url, "--key", key, str(GOLDEN)],
        capture_output=True,
        timeout=900,
        env={**os.environ, "SIMPLEMEM_GOLDEN_WAIT_SECONDS": "120"},
    )


def test_golden_check_passes_against_the_embedded_service(server: ServeProcess) -> None:
    done = run_golden(server, ADMIN)
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    assert "leaks 0" in out and "found " in out
    refused = run_golden(server, "not-the-admin-key")
    assert refused.returncode == 1 and b"401" in refused.stderr + refused.stdout


def test_a_tenants_first_query_starts_its_lazy_migration(api: httpx.Client) -> None:
    """As with `simplemem query`: the first query through the API imports the tenant's legacy history
    (answered meanwhile, marked in progress), later ones answer from it; other tenants have none."""
    legacy, other = key_for(api, LEGACY_TENANT), key_for(api, "no-legacy")
    body = {"query": "Where does Dana work?"}
    first = api.post("/v1/query", json=body, headers=legacy).json()
    assert first["migration"] == "in_progress"
    later = wait_until(
        lambda: (
            (r := api.post("/v1/query", json=body, headers=legacy).json()).get("migration") is None
            and "Skyline Air" in r["context"]
        )
    )
    assert later, "the imported history answers"
    assert "migration" not in api.post("/v1/query", json=body, headers=other).json()


BAD_REQUESTS: list[tuple[str, str, Any, str]] = [
    ("POST", "/v1/feedback", {"query": "x", "as_of": "0001-01-01T00:00:00Z"}, "as_of"),
    ("POST", "/v1/feedback", {"query": "x", "as_of": "9999-12-31T23:59:59Z"}, "as_of"),
    ("POST", "/mem0/v3/memories/search/", {"query": ""}, "query"),
    ("POST", "/mem0/v3/memories/search/", {"query": "x", "top_k": -5}, "top_k"),
    ("POST", "/v1/query", {"query": "x", "k": True}, "k"),  # a boolean is no number
    ("POST", "/v1/query", {"query": "x", "as_of": 0}, "as_of"),  # nor a time
    ("POST", "/v1/feedback", {"query": "x", "complexity": False}, "complexity"),
    ("POST", "/mem0/v3/memories/search/", {"query": "x", "threshold": False}, "threshold"),
    ("POST", "/mem0/v3/memories/add/", {"messages": [{"content": "x"}], "timestamp": "1"}, "timestamp"),
    ("POST", "/v1/query", b"\xff\xfe{", "body"),  # not UTF-8
    ("POST", "/v1/query", b'{"query": ' + b"1" * 5000 + b"}", "body"),  # past Python's digits
    ("POST", "/v1/feedback", b"[" * 100_000 + b"]" * 100_000, "body"),  # past the parser's depth
    (
        "POST",
        "/mem0/v3/memories/add/",
        {"messages": [{"role": "user", "content": "x"}], "timestamp": -1e12},
        "timestamp",
    ),
    ("POST", "/mem0/v3/memories/add/", {"messages": [{"role": ["user"], "content": "x"}]}, "role"),
    ("GET", "/v1/memories?offset=100000000000000000000", None, "offset"),
    ("POST", "/v1/query", {"query": "x", "persons": ["\u0000"]}, "persons"),
    ("POST", "/v1/query", '{"query": "x \\ud800 y"}', "query"),
    ("POST", "/v1/feedback", '{"query": "x \\ud800 y"}', "query"),
    ("POST", "/mem0/v3/memories/search/", '{"query": "x \\ud800 y"}', "query"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), BAD_REQUESTS)
def test_bad_input_is_a_4xx_naming_the_field(
    api: httpx.Client, method: str, path: str, body: Any, field: str
) -> None:
    headers = key_for(api, "badinput")
    if isinstance(body, bytes | None):
        content = body
    else:
        content = body.encode() if isinstance(body, str) else orjson.dumps(body)
    r = api.request(method, path, content=content, headers={**headers, "Content-Type": "application/json"})
    assert 400 <= r.status_code < 500, r.text
    assert field in r.text


def test_path_ids_are_bounded_and_listing_and_deleting_draw_on_quotas(api: httpx.Client) -> None:
    headers = key_for(api, "paths")
    r = api.delete(f"/v1/messages/{'m' * 10_000}", headers=headers)
    assert r.status_code == 422 and "over 256 characters" in r.text
    r = api.delete(f"/mem0/v1/memories/{'u' * 10_000}/", headers=headers)
    assert r.status_code == 422 and "memory_id" in r.text
