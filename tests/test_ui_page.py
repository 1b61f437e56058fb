"""The /ui/ page in a real browser (Debian's Chromium) against an embedded `simplemem serve`: sign-in,
the list with filters, provenance, ask, forget (gone from the API afterwards), stored markup rendered
as text, a second tenant's key seeing nothing of the first, the admin key; and /docs offline."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.service_server import ADMIN, ServeProcess
from tests.ui_browser import (
    accounted,
    auth,
    chromium,
    message,
    new_tenant_key,
    put_and_wait,
    rows,
    screenshot_dir,
    sign_in,
)

pytestmark = pytest.mark.slow

if False:
    from playwright.sync_api import Browser, Page

XSS_IMG = '<img src=x onerror="window.__xss=1">'
XSS_SCRIPT = "<script>window.__xss=2</script>"
FIRST = [
    message("u1", "home", "My sister Hana lives in Copenhagen. She teaches violin at the conservatory.", 0),
    message("u2", "home", "I adopted a grey cat called Miso from the Lisbon shelter.", 1),
    message("u3", "work", "I started a new job as a nurse at Santo António hospital in Porto.", 2),
    message(
        "u4", "work", f"My favourite HTML snippet is {XSS_IMG} and I also paste {XSS_SCRIPT} into tickets.", 3
    ),
]
SECOND = [message("z1", "farm", "Zed keeps four beehives on the roof of the Oslo flat.", 0, speaker="Zed")]


@pytest.fixture(scope="module")
def url(embedded_service: ServeProcess) -> str:
    return embedded_service.url


@pytest.fixture(scope="module")
def api(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=120) as client:
        yield client


@pytest.fixture(scope="module")
def first(api: httpx.Client) -> dict[str, Any]:
    tenant, key = new_tenant_key(api, ADMIN, "ui-first")
    memories = put_and_wait(api, key, FIRST)
    assert {s for m in memories for s in m["source_ids"]} >= {"u1", "u2", "u3", "u4"}, memories
    return {"tenant": tenant, "key": key, "memories": memories}


@pytest.fixture(scope="module")
def second(api: httpx.Client) -> dict[str, Any]:
    tenant, key = new_tenant_key(api, ADMIN, "ui-second")
    return {"tenant": tenant, "key": key, "memories": put_and_wait(api, key, SECOND)}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from chromium()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    yield context.new_page()
    context.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshot_dir(tmp_path_factory)


def test_a_wrong_or_revoked_key_gets_a_clear_message_and_goes_nowhere(
    page: Page, url: str, api: httpx.Client
) -> None:
    sign_in(page, url, "smk_0_not-a-key")
    error = page.get_by_test_id("error")
    error.wait_for()
    assert "not accepted" in error.inner_text()
    assert page.get_by_test_id("memory-row").count() == 0
    assert "smk_0" not in page.url and page.evaluate("document.cookie") == ""
    made = api.post("/v1/admin/keys", json={"tenant_id": "ui-revoked"}, headers=auth(ADMIN)).json()
    assert api.delete(f"/v1/admin/keys/{made['key_id']}", headers=auth(ADMIN)).status_code == 200
    page.reload()
    sign_in(page, url, made["key"])
    expect(error).to_contain_text("wrong or revoked")
    assert page.evaluate("sessionStorage.length") == 0  # a refused key is not kept


def test_sign_in_lists_the_tenants_memories_and_filters_them(
    page: Page, url: str, first: dict[str, Any], second: dict[str, Any], shots: Path
) -> None:
    sign_in(page, url, first["key"])
    page.get_by_test_id("memory-row").first.wait_for()
    listed = rows(page)
    assert set(listed) == {m["id"] for m in first["memories"]}
    assert page.get_by_test_id("counts").inner_text().startswith(f"{len(listed)} matching")
    # the key is kept for the tab only, never in the URL or a cookie
    assert first["key"] not in page.url and page.evaluate("document.cookie") == ""
    page.screenshot(path=str(shots / "ui-memories.png"))

    page.get_by_test_id("filter-session").fill("work")
    page.get_by_test_id("apply-filters").click()
    work = {m["id"] for m in first["memories"] if m["session_id"] == "work"}
    expect(page.get_by_test_id("memory-row")).to_have_count(len(work))
    assert set(rows(page)) == work

    page.get_by_test_id("filter-session").fill("")
    page.get_by_test_id("search").fill("Copenhagen")
    page.get_by_test_id("apply-filters").click()
    expect(page.get_by_test_id("memory-row")).to_have_count(1)
    assert "Copenhagen" in next(iter(rows(page).values()))


def test_provenance_shows_the_source_message(
    page: Page, url: str, first: dict[str, Any], shots: Path
) -> None:
    sign_in(page, url, first["key"])
    hana = next(m for m in first["memories"] if "Copenhagen" in m["text"])
    page.locator(f"[data-memory-id='{hana['id']}']").first.click()
    panel = page.get_by_test_id("provenance")
    panel.wait_for()
    source = panel.get_by_test_id("source-message").first
    assert source.get_attribute("data-message-id") == "u1"
    assert "Ana" in source.inner_text() and "Copenhagen" in source.inner_text()
    assert panel.get_by_test_id("forget-message").count() >= 1
    page.screenshot(path=str(shots / "ui-provenance.png"))


def test_ask_shows_the_context_an_agent_gets_and_why(
    page: Page, url: str, api: httpx.Client, first: dict[str, Any], shots: Path
) -> None:
    sign_in(page, url, first["key"])
    page.get_by_role("button", name="Ask").click()
    page.get_by_test_id("ask-input").fill("Where does my sister live?")
    page.get_by_test_id("ask-submit").click()
    context = page.get_by_test_id("context")
    context.wait_for()
    expect(context).not_to_be_empty()
    agent = api.post(
        "/v1/query", json={"query": "Where does my sister live?"}, headers=auth(first["key"])
    ).json()
    assert context.inner_text().strip() == agent["context"].strip() and "Copenhagen" in agent["context"]
    reasons = page.get_by_test_id("reason")
    assert reasons.count() == len(agent["memories"])
    assert f"of {550} tokens" in page.get_by_test_id("answer-meta").inner_text()
    page.screenshot(path=str(shots / "ui-ask.png"), full_page=True)


def test_stored_markup_is_shown_as_text_and_runs_nothing(page: Page, url: str, first: dict[str, Any]) -> None:
    hostile = [m for m in first["memories"] if "<img" in m["text"] or "<script" in m["text"]]
    assert hostile, "the scrubbed memory should keep the markup (else this test proves nothing)"
    sign_in(page, url, first["key"])
    page.get_by_test_id("memory-row").first.wait_for()
    row = page.locator(f"[data-memory-id='{hostile[0]['id']}']").first
    assert ("<img" in row.inner_text()) or ("<script" in row.inner_text())
    row.click()
    page.get_by_test_id("provenance").wait_for()
    page.get_by_role("button", name="Ask").click()
    page.get_by_test_id("ask-input").fill("What HTML snippet do I paste into tickets?")
    page.get_by_test_id("ask-submit").click()
    page.get_by_test_id("reason").first.wait_for()
    assert page.evaluate("window.__xss") is None
    assert page.locator("img").count() == 0 and page.locator("body script").count() == 0
    # and the page's policy forbids inline script outright
    blocked = page.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = 'window.__inline = 1';"
        " document.body.append(s); return window.__inline === undefined; }"
    )
    assert blocked


def test_the_page_sends_its_security_headers(api: httpx.Client) -> None:
    r = api.get("/ui/")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert r.headers["referrer-policy"] == "no-referrer"
    assert api.get("/ui").status_code in (307, 302) and api.get("/ui/ui.js").status_code == 200


def test_a_second_tenants_key_sees_nothing_of_the_first(
    page: Page, url: str, api: httpx.Client, first: dict[str, Any], second: dict[str, Any]
) -> None:
    sign_in(page, url, second["key"])
    page.get_by_test_id("memory-row").first.wait_for()
    assert set(rows(page)) == {m["id"] for m in second["memories"]}
    page.get_by_test_id("search").fill("Copenhagen")
    page.get_by_test_id("apply-filters").click()
    expect(page.get_by_test_id("memory-row")).to_have_count(0)
    theirs = first["memories"][0]["id"]
    assert api.get(f"/v1/browse/memories/{theirs}", headers=auth(second["key"])).status_code == 404
    named = {"tenant_id": first["tenant"]}
    assert api.get("/v1/browse", params=named, headers=auth(second["key"])).status_code == 403
    ask = {"query": "Where does Hana live?", "tenant_id": first["tenant"]}
    assert api.post("/v1/browse/ask", json=ask, headers=auth(second["key"])).status_code == 403
    forget = {"message_id": "u1", "tenant_id": first["tenant"]}
    assert api.post("/v1/browse/forget", json=forget, headers=auth(second["key"])).status_code == 403


def test_the_admin_key_picks_a_tenant(
    page: Page, url: str, first: dict[str, Any], second: dict[str, Any]
) -> None:
    sign_in(page, url, ADMIN)
    pick = page.get_by_test_id("tenant")
    pick.wait_for()
    options = pick.locator("option").all_inner_texts()
    assert first["tenant"] in options and second["tenant"] in options
    pick.select_option(second["tenant"])
    expect(page.get_by_test_id("memory-row")).to_have_count(len(second["memories"]))
    assert set(rows(page)) == {m["id"] for m in second["memories"]}


def test_forget_a_message_from_its_provenance(page: Page, url: str, api: httpx.Client, shots: Path) -> None:
    _, key = new_tenant_key(api, ADMIN, "ui-forget")
    events = [
        message("f1", "s", "My passport number is kept in the blue folder in the study.", 0),
        message("f2", "s", "I play padel every Thursday evening with Marco.", 1),
    ]
    memories = put_and_wait(api, key, events)
    gone = [m for m in memories if "f1" in m["source_ids"]]
    assert gone
    sign_in(page, url, key)
    page.locator(f"[data-memory-id='{gone[0]['id']}']").first.click()
    page.get_by_test_id("provenance").get_by_test_id("forget-message").first.click()
    dialog = page.locator("#confirm-dialog")
    dialog.wait_for()
    assert "f1" in dialog.inner_text() and "cannot be undone" in dialog.inner_text()
    page.screenshot(path=str(shots / "ui-forget.png"))
    page.get_by_test_id("confirm").click()
    expect(page.locator("#notice")).to_contain_text("memories removed", timeout=60_000)
    assert f"{len(gone)} memories removed" in page.locator("#notice").inner_text()
    left = api.get("/v1/memories", params={"limit": 500}, headers=auth(key)).json()["memories"]
    assert left and all("f1" not in m["source_ids"] for m in left)
    answer = api.post(
        "/v1/query", json={"query": "Where is my passport number kept?"}, headers=auth(key)
    ).json()
    assert all("f1" not in m["source_ids"] for m in answer["memories"])
    assert set(rows(page)) == {m["id"] for m in left}
    page.get_by_role("button", name="Activity").click()
    expect(page.locator("#deletions tr")).to_have_count(1)
    assert f"{len(gone)}" in page.locator("#deletions tr").inner_text()
    expect(page.locator("#activity")).to_contain_text("quota use")
    page.screenshot(path=str(shots / "ui-activity.png"))


def test_activity_shows_each_tenant_its_own_ingestion(
    page: Page, url: str, api: httpx.Client, first: dict[str, Any], second: dict[str, Any]
) -> None:
    """Accepted, indexed, filtered, failed, PII scrubbed and time to memory, counted per tenant: a
    tenant's key sees its own numbers (on the page and in the API), the admin picks a tenant."""
    mine = accounted(api, first["key"], len(FIRST))
    theirs = accounted(api, second["key"], len(SECOND))
    assert (mine["accepted"], theirs["accepted"]) == (len(FIRST), len(SECOND))
    assert mine["indexed"] + mine["filtered"] + mine["failed"] == len(FIRST)
    assert mine["time_to_memory"]["memories"] == mine["indexed"] >= 1
    assert mine["time_to_memory"]["p50_seconds"] is not None
    picked = api.get("/v1/browse/activity", params={"tenant_id": second["tenant"]}, headers=auth(ADMIN))
    assert picked.json()["ingestion"] == theirs
    refused = api.get(
        "/v1/browse/activity", params={"tenant_id": second["tenant"]}, headers=auth(first["key"])
    )
    assert refused.status_code == 403
    for who, numbers in ((first, mine), (second, theirs)):
        sign_in(page, url, who["key"])
        page.get_by_test_id("memory-row").first.wait_for()
        page.get_by_role("button", name="Activity").click()
        shown = page.get_by_test_id("ingestion")
        expect(shown.locator("[data-count='accepted']")).to_have_text(str(numbers["accepted"]))
        expect(shown.locator("[data-count='indexed']")).to_have_text(str(numbers["indexed"]))
        p50 = numbers["time_to_memory"]["p50_seconds"]
        expect(shown.locator("[data-count='time to memory p50']")).to_have_text(f"{p50} s" if p50 else "–")
        page.locator("#sign-out").click()


def test_activity_counts_the_turns_pii_was_scrubbed_from(api: httpx.Client) -> None:
    _, key = new_tenant_key(api, ADMIN, "ui-pii")
    events = [
        message("p1", "s", "Write to me at ana.costa@example.com about the lease.", 0),
        message("p2", "s", "The lease for the flat ends in June.", 1),
    ]
    put_and_wait(api, key, events)
    found = accounted(api, key, 2)
    assert (found["accepted"], found["pii_scrubbed"]) == (2, 1)


def test_docs_render_their_operations_offline(page: Page, url: str) -> None:
    """/docs loads Swagger UI from the package: with every other origin refused, it still renders."""
    refused: list[str] = []

    def only_local(route: Any) -> None:
        if route.request.url.startswith(url):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    page.goto(f"{url}/docs")
    page.locator(".opblock").first.wait_for(timeout=30_000)
    assert page.locator(".opblock").count() > 10
    assert page.get_by_text("/v1/browse/ask").count() >= 1
    assert refused == []


def test_forget_a_session_and_the_admin_forgets_a_tenant(page: Page, url: str, api: httpx.Client) -> None:
    tenant, key = new_tenant_key(api, ADMIN, "ui-session")
    events = [
        message("p1", "trip", "I booked a night train from Vienna to Venice for the 14th of May.", 0),
        message("p2", "trip", "The hotel in Venice is near the Rialto bridge and costs 140 euros.", 1),
        message("p3", "garden", "I planted three lemon trees on the terrace this weekend.", 2),
    ]
    memories = put_and_wait(api, key, events)
    trip = next(m for m in memories if m["session_id"] == "trip")
    sign_in(page, url, key)
    page.locator(f"[data-memory-id='{trip['id']}']").first.click()
    page.get_by_test_id("forget-session").click()
    assert "whole session trip" in page.locator("#confirm-dialog").inner_text()
    page.get_by_test_id("confirm").click()
    expect(page.locator("#notice")).to_contain_text("memories removed", timeout=60_000)
    left = api.get("/v1/memories", params={"limit": 500}, headers=auth(key)).json()["memories"]
    assert left and {m["session_id"] for m in left} == {"garden"}
    expect(page.get_by_test_id("memory-row")).to_have_count(len(left))  # the list redrawn
    assert set(rows(page)) == {m["id"] for m in left}

    page.locator("#sign-out").click()
    sign_in(page, url, ADMIN)
    page.get_by_test_id("tenant").select_option(tenant)
    page.get_by_role("button", name="Activity").click()
    page.get_by_test_id("forget-tenant").click()
    assert f"whole tenant {tenant}" in page.locator("#confirm-dialog").inner_text()
    page.get_by_test_id("confirm").click()
    expect(page.locator("#notice")).to_contain_text("keys revoked", timeout=60_000)
    assert api.get("/v1/memories", headers=auth(key)).status_code == 401  # its key went with it
    listed = api.get("/v1/browse", params={"tenant_id": tenant}, headers=auth(ADMIN)).json()
    assert listed["memories"] == [] and listed["total"] == 0


def test_bad_browse_input_is_a_422_naming_the_field(api: httpx.Client, first: dict[str, Any]) -> None:
    key = auth(first["key"])
    for params, field in [
        ({"since": "someday"}, "since"),
        ({"state": "deleted"}, "state"),
        ({"q": "x" * 501}, "q"),
        ({"offset": "-1"}, "offset"),
    ]:
        r = api.get("/v1/browse", params=params, headers=key)
        assert r.status_code == 422 and field in r.json()["detail"], (params, r.text)
    r = api.get("/v1/browse", headers=auth(ADMIN))
    assert r.status_code == 422 and "tenant_id" in r.json()["detail"]
    r = api.post("/v1/browse/forget", json={}, headers=key)
    assert r.status_code == 422 and "message_id" in r.json()["detail"]
    assert api.get("/v1/browse/memories/no such id", headers=key).status_code == 422


def test_browse_input_of_a_wrong_type_is_refused_as_the_contract_says(
    api: httpx.Client, first: dict[str, Any]
) -> None:
    """What the OpenAPI document refuses the routes refuse (and the reverse: the fuzz test), naming
    the field: a day that is a number or a time, a kind no memory has, a time that is a number, a
    null id."""
    key = auth(first["key"])
    for params, field in [
        ({"since": "0"}, "since"),
        ({"until": "2026-03-01T00:00:00Z"}, "until"),
        ({"kind": "facts"}, "kind"),
        ({"session": "two words"}, "session"),
    ]:
        r = api.get("/v1/browse/counts", params=params, headers=key)
        assert r.status_code == 422 and field in r.json()["detail"], (params, r.text)
    r = api.post("/v1/browse/ask", json={"query": "Where does my sister live?", "as_of": 0}, headers=key)
    assert r.status_code == 422 and "as_of" in r.json()["detail"], r.text
    r = api.post("/v1/browse/forget", json={"message_id": None, "session_id": "home"}, headers=key)
    assert r.status_code == 422 and "message_id" in r.json()["detail"], r.text
    derived = [
        m for m in first["memories"] if m["kind"] in ("timeline", "profile", "instruction", "preference")
    ]
    assert derived, "the tenant should have a derived line (else this proves nothing)"
    kind = derived[0]["kind"]  # a derived line is an active memory of its kind
    r = api.get("/v1/browse/counts", params={"kind": kind, "state": "active"}, headers=key)
    assert r.status_code == 200 and r.json()["matching"] == sum(m["kind"] == kind for m in derived), r.text
