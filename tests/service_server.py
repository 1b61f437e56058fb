"""The embedded query service the service tests share: one `simplemem serve` process on a fresh
store (loading the models once), with an admin key and small limits the tests reach."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import orjson
import pytest

from tests.helpers.serving import ServeProcess

ADMIN = f"admin-{uuid.uuid4().hex}"
INGEST_RATE = 150  # events per minute and tenant
MAX_BATCH = 120
MAX_BODY = 256 * 1024
MAX_BATCH_CHARS = 60_000
LEGACY_TENANT = "legacy-acme"  # the one tenant with a history to import lazily
LEGACY_LINE = orjson.dumps(
    {
        "tenant_id": LEGACY_TENANT,
        "session_id": "old",
        "message_id": "old1",
        "speaker": "Dana",
        "role": "user",
        "text": "I work as a pilot for Skyline Air.",
        "ts": "2025-06-01T10:00:00Z",
    }
)


def start_embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    store = tmp_path_factory.mktemp("serve-store")
    legacy = tmp_path_factory.mktemp("legacy")
    (legacy / f"{LEGACY_TENANT}.jsonl").write_bytes(LEGACY_LINE + b"\n")
    env = {
        "SIMPLEMEM_LEGACY_HISTORY_DIR": str(legacy),
        "SIMPLEMEM_MODE": "embedded",
        "SIMPLEMEM_STORE": str(store),
        "SIMPLEMEM_ADMIN_KEY": ADMIN,
        "SIMPLEMEM_STREAM_IDLE_SECONDS": "2",
        "SIMPLEMEM_API_IDLE_CHECK_SECONDS": "0.5",
        "SIMPLEMEM_API_INGEST_RATE": f"{INGEST_RATE}/minute",
        "SIMPLEMEM_API_MAX_BATCH_EVENTS": str(MAX_BATCH),
        "SIMPLEMEM_API_MAX_BODY_BYTES": str(MAX_BODY),
        "SIMPLEMEM_API_MAX_BATCH_CHARS": str(MAX_BATCH_CHARS),
    }
    proc = ServeProcess(env, tmp_path_factory.mktemp("logs") / "serve.log").start()
    proc.env["store"] = str(store)
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


def admin() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}"}


def new_key(api: httpx.Client, tenant: str) -> str:
    r = api.post("/v1/admin/keys", json={"tenant_id": tenant}, headers=admin())
    assert r.status_code == 201, r.text
    key: str = r.json()["key"]
    return key


def key_for(api: httpx.Client, tenant: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {new_key(api, tenant)}"}
