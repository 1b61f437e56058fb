"""The /ui/ page on a services deployment (Kafka, OpenSearch, Milvus, Redis and a stream worker), in
Debian's Chromium: sign-in, the list and a filter, provenance, ask, forget through the workers (the
page waits for the deletion log's record; the memory is gone from the API), another tenant's key, the
admin key."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from simplemem.schemas.settings import settings_for
from tests.helpers.serving import ServeProcess
from tests.helpers.workers import WorkerProcess
from tests.services import drop_stream_env, require, running_worker, stream_env
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

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ADMIN = f"admin-{uuid.uuid4().hex}"

if False:
    from playwright.sync_api import Browser, Page


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    values = stream_env(
        "uisvc",
        tmp_path_factory.mktemp("faust"),
        1,
        1800,
        SIMPLEMEM_ADMIN_KEY=ADMIN,
        SIMPLEMEM_API_QUERY_RATE="100000/minute",
    )
    settings = settings_for(values)
    require(settings, kafka=True)
    yield values
    drop_stream_env(settings)


@pytest.fixture(scope="module")
def worker(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    yield from running_worker(env, tmp_path_factory.mktemp("uisvc-worker"))


@pytest.fixture(scope="module")
def url(
    env: dict[str, str], worker: WorkerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    server = ServeProcess(env, tmp_path_factory.mktemp("uisvc-serve") / "serve.log").start()
    try:
        server.wait_ready()
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def api(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=120) as client:
        yield client


@pytest.fixture(scope="module")
def tenants(api: httpx.Client) -> dict[str, dict[str, Any]]:
    one, one_key = new_tenant_key(api, ADMIN, "svc-one")
    two, two_key = new_tenant_key(api, ADMIN, "svc-two")
    first = [
        message("a1", "home", "My brother Tiago lives in Montreal and restores old pianos.", 0),
        message("a2", "trip", "I booked a night train from Vienna to Venice for the 14th of May.", 1),
    ]
    second = [
        message("b1", "farm", "Zed keeps four beehives on the roof of the Oslo flat.", 0, speaker="Zed")
    ]
    return {
        "one": {"tenant": one, "key": one_key, "memories": put_and_wait(api, one_key, first)},
        "two": {"tenant": two, "key": two_key, "memories": put_and_wait(api, two_key, second)},
    }


@pytest.fixture(scope="module")
def browser(tenants: dict[str, dict[str, Any]]) -> Iterator[Browser]:
    """Started after the deployment: Playwright's client runs an event loop, and the deployment's
    setup and cleanup run their own (asyncio.run)."""
    yield from chromium()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    yield context.new_page()
    context.close()


def test_services_mode_list_filter_provenance_and_ask(
    page: Page, url: str, tenants: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    one = tenants["one"]
    assert {s for m in one["memories"] for s in m["source_ids"]} >= {"a1", "a2"}
    sign_in(page, url, one["key"])
    page.get_by_test_id("memory-row").first.wait_for()
    assert "services mode" in page.locator("#who-text").inner_text()
    assert set(rows(page)) == {m["id"] for m in one["memories"]}
    page.get_by_test_id("filter-session").fill("trip")
    page.get_by_test_id("apply-filters").click()
    trip = [m for m in one["memories"] if m["session_id"] == "trip"]
    expect(page.get_by_test_id("memory-row")).to_have_count(len(trip))
    page.get_by_test_id("memory-row").first.click()
    source = page.get_by_test_id("provenance").get_by_test_id("source-message").first
    source.wait_for()
    assert source.get_attribute("data-message-id") == "a2" and "Venice" in source.inner_text()
    page.screenshot(path=str(screenshot_dir(tmp_path_factory) / "ui-services.png"))
    page.get_by_role("button", name="Ask").click()
    page.get_by_test_id("ask-input").fill("Where does my brother live?")
    page.get_by_test_id("ask-submit").click()
    expect(page.get_by_test_id("context")).to_contain_text("Montreal", timeout=60_000)


def test_services_mode_tenants_and_admin(
    page: Page, url: str, api: httpx.Client, tenants: dict[str, dict[str, Any]]
) -> None:
    one, two = tenants["one"], tenants["two"]
    sign_in(page, url, two["key"])
    page.get_by_test_id("memory-row").first.wait_for()
    assert set(rows(page)) == {m["id"] for m in two["memories"]}
    assert (
        api.get(f"/v1/browse/memories/{one['memories'][0]['id']}", headers=auth(two["key"])).status_code
        == 404
    )
    page.get_by_test_id("search").fill("Montreal")
    page.get_by_test_id("apply-filters").click()
    expect(page.get_by_test_id("memory-row")).to_have_count(0)
    page.locator("#sign-out").click()
    sign_in(page, url, ADMIN)
    page.get_by_test_id("tenant").select_option(one["tenant"])
    expect(page.get_by_test_id("memory-row")).to_have_count(len(one["memories"]))


def test_services_mode_forget_goes_through_the_workers(
    page: Page, url: str, api: httpx.Client, tenants: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    one = tenants["one"]
    gone = [m for m in one["memories"] if "a1" in m["source_ids"]]
    sign_in(page, url, one["key"])
    page.locator(f"[data-memory-id='{gone[0]['id']}']").first.click()
    page.get_by_test_id("provenance").get_by_test_id("forget-message").first.click()
    page.get_by_test_id("confirm").click()
    expect(page.locator("#notice")).to_contain_text(f"{len(gone)} memories removed", timeout=90_000)
    left = api.get("/v1/memories", params={"limit": 500}, headers=auth(one["key"])).json()["memories"]
    assert all("a1" not in m["source_ids"] for m in left)
    answer = api.post(
        "/v1/query", json={"query": "Where does my brother live?"}, headers=auth(one["key"])
    ).json()
    assert all("a1" not in m["source_ids"] for m in answer["memories"])


def test_services_mode_activity_counts_dead_letters(
    env: dict[str, str], api: httpx.Client, tenants: dict[str, dict[str, Any]]
) -> None:
    """A line no event parses from goes to the dead letters without a tenant: the admin's activity
    counts it, a tenant's does not (it is nobody's)."""
    from tests.helpers.kcat import kcat_publish

    one = tenants["one"]
    kcat_publish(settings_for(env), [b'{"tenant_id": "' + one["tenant"].encode() + b'", "text": "no ids"}'])
    deadline = time.monotonic() + 120
    while True:
        admin = api.get(
            "/v1/browse/activity", params={"tenant_id": one["tenant"]}, headers=auth(ADMIN)
        ).json()
        letters = admin["sections"]["dead letters (every tenant)"]
        if letters.get("total", 0) >= 1 or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert letters["total"] >= 1 and any(k.startswith("validate / ") for k in letters), letters
    own = api.get("/v1/browse/activity", headers=auth(one["key"])).json()["sections"]
    assert own["dead letters"] == {"total": 0}
    assert own["quota use (this window)"]["query"].endswith("per 1 minute")
    assert own[f"tenant {one['tenant']}"]["memories"] == len(
        api.get("/v1/memories", params={"limit": 500}, headers=auth(one["key"])).json()["memories"]
    )


def test_services_mode_activity_counts_each_tenants_ingestion(
    page: Page, url: str, api: httpx.Client, tenants: dict[str, dict[str, Any]]
) -> None:
    """The workers count each tenant's turns in Redis; the query service reads them there (it holds
    none in its memory): a tenant's key sees its own, the admin picks a tenant."""
    one, two = tenants["one"], tenants["two"]
    mine, theirs = accounted(api, one["key"], 2), accounted(api, two["key"], 1)
    assert (mine["accepted"], theirs["accepted"]) == (2, 1)
    assert mine["indexed"] + mine["filtered"] + mine["failed"] == 2
    assert mine["time_to_memory"]["memories"] == mine["indexed"] >= 1
    assert mine["time_to_memory"]["p95_seconds"] is not None
    picked = api.get("/v1/browse/activity", params={"tenant_id": two["tenant"]}, headers=auth(ADMIN))
    assert picked.json()["ingestion"]["accepted"] == 1
    sign_in(page, url, two["key"])
    page.get_by_test_id("memory-row").first.wait_for()
    page.get_by_role("button", name="Activity").click()
    expect(page.get_by_test_id("ingestion").locator("[data-count='accepted']")).to_have_text("1")
