"""Driving the /ui/ page in Debian's Chromium (Playwright's Python client, no browser download): the
browser, signing in, memories put in through the API and waited for, and the screenshots docs/ui.md
shows (written to ``SIMPLEMEM_UI_SCREENSHOTS`` when set, else to the test's own folder)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from simplemem.infra.install import ensure_chromium

if False:  # the types only (Playwright is imported where a browser is started)
    from playwright.sync_api import Browser, Page


def chromium() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    path = ensure_chromium()
    with sync_playwright() as driver:
        # as root (CI) Chromium runs only without its sandbox
        browser = driver.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("SIMPLEMEM_UI_SCREENSHOTS")
    return Path(chosen) if chosen else tmp_path_factory.mktemp("ui-shots")


def sign_in(page: Page, url: str, key: str) -> None:
    page.goto(f"{url}/ui/")
    page.get_by_test_id("key").fill(key)
    page.get_by_test_id("sign-in").click()


def rows(page: Page) -> dict[str, str]:
    """The listed memories: id -> the row's text, read at one moment (row by row, a list that the
    page redraws meanwhile loses the rows counted first)."""
    pairs = page.get_by_test_id("memory-row").evaluate_all(
        "rows => rows.map(row => [row.getAttribute('data-memory-id'), row.innerText])"
    )
    return {str(memory_id): str(text) for memory_id, text in pairs}


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def new_tenant_key(api: httpx.Client, admin_key: str, prefix: str) -> tuple[str, str]:
    tenant = f"{prefix}-{uuid.uuid4().hex[:6]}"
    r = api.post("/v1/admin/keys", json={"tenant_id": tenant}, headers=auth(admin_key))
    assert r.status_code == 201, r.text
    return tenant, str(r.json()["key"])


def message(mid: str, session: str, text: str, minute: int, speaker: str = "Ana") -> dict[str, Any]:
    return {
        "session_id": session,
        "message_id": mid,
        "speaker": speaker,
        "role": "user",
        "text": text,
        "ts": f"2026-03-02T09:{minute:02d}:00Z",
        "ends_exchange": True,
    }


def put_and_wait(
    api: httpx.Client, key: str, events: list[dict[str, Any]], timeout: float = 240
) -> list[Any]:
    """Send the events and wait until every message has a listed memory; the tenant's memories."""
    r = api.post("/v1/events", json=events, headers=auth(key))
    assert r.status_code == 202 and not r.json()["rejected"], r.text
    wanted = {e["message_id"] for e in events}
    deadline = time.monotonic() + timeout
    while True:
        memories = api.get("/v1/memories", params={"limit": 500}, headers=auth(key)).json()["memories"]
        if wanted <= {s for m in memories for s in m["source_ids"]} or time.monotonic() > deadline:
            return list(memories)
        time.sleep(1)


def accounted(
    api: httpx.Client, key: str, accepted: int, params: dict[str, str] | None = None
) -> dict[str, Any]:
    """The tenant's ingestion accounting (``/v1/browse/activity``) once ``accepted`` turns are in it
    and every one is decided (the counts are written just after a memory is indexed)."""
    deadline = time.monotonic() + 120
    while True:
        found: dict[str, Any] = api.get("/v1/browse/activity", params=params, headers=auth(key)).json()[
            "ingestion"
        ]
        if (found["accepted"] >= accepted and found["undecided"] == 0) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)
