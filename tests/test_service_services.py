"""`simplemem serve` in services mode against the real Kafka, OpenSearch, Milvus and Redis, with a
stream worker: events reach the turns topic keyed as `simplemem publish` keys them, deletions the
deletions topic, keys and quotas are shared by two replicas, and `simplemem golden --url` passes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from simplemem.infra.errors import log_tail
from simplemem.schemas.keys import SessionKey, tenant_key
from simplemem.schemas.settings import REPO_ROOT, settings_for
from simplemem.schemas.stream import DeletionRequest
from tests.conftest import GOLDEN
from tests.helpers.serving import ServeProcess
from tests.helpers.workers import WorkerProcess
from tests.services import drop_stream_env, require, stream_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ADMIN = f"admin-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    values = stream_env(
        "svc",
        tmp_path_factory.mktemp("faust"),
        2,
        1800,  # the default idle time: the golden check must not wait for its sessions to go silent
        SIMPLEMEM_ADMIN_KEY=ADMIN,
        SIMPLEMEM_API_QUERY_RATE="100000/minute",
    )
    settings = settings_for(values)
    require(settings, kafka=True)
    yield values
    drop_stream_env(settings)


@pytest.fixture(scope="module")
def replicas(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ServeProcess]]:
    logs = tmp_path_factory.mktemp("svc-logs")
    # the second replica runs two processes (`serve --workers 2`): keys and quotas hold across them too
    envs = [env, {**env, "SIMPLEMEM_API_WORKERS": "2"}]
    servers = [ServeProcess(e, logs / f"serve{i}.log").start() for i, e in enumerate(envs)]
    try:
        for s in servers:
            s.wait_ready()
        yield servers
    finally:
        for s in servers:
            s.stop()


@pytest.fixture(scope="module")
def worker(
    env: dict[str, str], replicas: list[ServeProcess], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    w = WorkerProcess(
        env, tmp_path_factory.mktemp("svc-worker") / "worker.log"
    ).start()  # topics: made by serve
    w.wait_ready()
    yield w
    w.stop()


def admin() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}"}


def records(env: dict[str, str], name: str) -> list[tuple[bytes | None, bytes]]:
    from simplemem.streams.kafka_io import read_topic

    settings = settings_for(env)
    return [(r.key, r.value) for r in asyncio.run(read_topic(settings, settings.topic(name))) if r.value]


def test_health_names_every_store(replicas: list[ServeProcess]) -> None:
    health = httpx.get(f"{replicas[0].url}/healthz", timeout=30).json()
    assert health["mode"] == "services"
    assert {name: s["state"] for name, s in health["stores"].items()} == {
        "opensearch": "up",
        "milvus": "up",
        "redis": "up",
        "kafka": "up",
    }


def test_replicas_share_keys_and_quotas(replicas: list[ServeProcess]) -> None:
    one, two = (httpx.Client(base_url=r.url, timeout=60) for r in replicas)
    made = one.post("/v1/admin/keys", json={"tenant_id": "shared"}, headers=admin()).json()
    headers = {"Authorization": f"Bearer {made['key']}"}
    assert two.post("/v1/query", json={"query": "anything?"}, headers=headers).status_code == 200
    assert two.delete(f"/v1/admin/keys/{made['key_id']}", headers=admin()).status_code == 200
    assert one.post("/v1/query", json={"query": "anything?"}, headers=headers).status_code == 401


def test_events_go_to_the_turns_topic_keyed_by_session(
    env: dict[str, str], replicas: list[ServeProcess]
) -> None:
    api = httpx.Client(base_url=replicas[1].url, timeout=60)
    key = api.post("/v1/admin/keys", json={"tenant_id": "keyed"}, headers=admin()).json()["key"]
    events = [
        {
            "session_id": "a|b",
            "message_id": f"k{i}",
            "speaker": "Ann",
            "role": "user",
            "text": "Hi.",
            "ts": "2026-01-05T09:00:00Z",
        }
        for i in range(2)
    ]
    r = api.post("/v1/events", json=events, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 202 and r.json()["accepted"] == ["k0", "k1"]
    mine = [
        (k, orjson.loads(v)) for k, v in records(env, "turns") if orjson.loads(v).get("tenant_id") == "keyed"
    ]
    assert [v["message_id"] for _, v in mine] == ["k0", "k1"]
    assert {k for k, _ in mine} == {SessionKey("keyed", "a|b").encode()}


def test_deletions_go_to_the_deletions_topic(env: dict[str, str], replicas: list[ServeProcess]) -> None:
    api = httpx.Client(base_url=replicas[0].url, timeout=60)
    key = api.post("/v1/admin/keys", json={"tenant_id": "leaving"}, headers=admin()).json()["key"]
    assert api.delete("/v1/messages/x1", headers={"Authorization": f"Bearer {key}"}).status_code == 202
    assert api.delete("/v1/tenants/leaving", headers=admin()).status_code == 202
    found = [(k, DeletionRequest.model_validate_json(v)) for k, v in records(env, "deletions")]
    mine = [(k, r) for k, r in found if r.tenant_id == "leaving"]
    assert [(r.message_ids, r.whole_tenant) for _, r in mine] == [(["x1"], False), ([], True)]
    assert {k for k, _ in mine} == {tenant_key("leaving")}


def test_golden_check_passes_against_the_services(
    replicas: list[ServeProcess], worker: WorkerProcess
) -> None:
    done = subprocess.run(
        [
            str(REPO_ROOT / "bin" / "simplemem"),
            "golden",
            "--url",
            replicas[0].url,
            "--key",
            ADMIN,
            str(GOLDEN),
        ],
        capture_output=True,
        timeout=900,
        env={**os.environ, "SIMPLEMEM_GOLDEN_WAIT_SECONDS": "240"},
    )
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    assert "leaks 0" in out


def test_a_replica_started_before_its_stores_answer_waits_for_them(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A replica whose Milvus does not answer at start (compose starting both, a restart, a slow
    server) waits for it instead of exiting: it served nothing in CI once when Milvus was slow."""
    from simplemem.infra.stack import down, up

    late = ServeProcess(env, tmp_path / "late.log")
    down(["milvus"])
    try:
        late.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert late.proc is not None and late.proc.poll() is None, log_tail(late.log_path)
            assert not late.healthy()
            time.sleep(1)
    finally:
        up(["milvus"])
    try:
        late.wait_ready()
    finally:
        late.stop()
