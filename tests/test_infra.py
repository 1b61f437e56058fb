"""The local services of infra/services.py, for real.

The integration tests need the services up (``python -m infra.services up``). A service that does not
answer skips its test, unless ``SIMPLEMEM_INTEGRATION=1``: then it fails it. The other tests check the
launcher's own logic (status JSON, pid files, stopping) without any service.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from infra import services
from infra.settings import HOST, REPO_ROOT, InfraSettings

REQUIRED = os.environ.get("SIMPLEMEM_INTEGRATION") == "1"


@pytest.fixture(scope="module")
def infra_settings() -> InfraSettings:
    return InfraSettings()


def require(name: str, settings: InfraSettings) -> None:
    """Skips (or, with SIMPLEMEM_INTEGRATION=1, fails) when the service does not answer a real request."""
    svc = services.SERVICE_CLASSES[name](settings)
    if svc.probe(timeout=5.0):
        return
    message = f"{name} is not reachable at {svc.endpoint} (start it: python -m infra.services up {name})"
    if REQUIRED:
        pytest.fail(message)
    pytest.skip(message)


# --------------------------------------------------------------------------------------------------
# integration: the four services
# --------------------------------------------------------------------------------------------------


@pytest.mark.integration
def test_kafka_topic_produce_consume(infra_settings: InfraSettings) -> None:
    require("kafka", infra_settings)
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    bootstrap = f"{HOST}:{infra_settings.kafka_port}"
    topic = f"simplemem-test-{uuid.uuid4().hex[:8]}"
    payload = b'{"text": "hello kafka"}'

    async def scenario() -> tuple[bytes | None, bytes | None]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
            assert topic in await admin.list_topics()
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
            await producer.start()
            try:
                await producer.send_and_wait(topic, payload, key=b"tenant-1")
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(
                topic,
                bootstrap_servers=bootstrap,
                group_id=f"{topic}-group",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
            )
            await consumer.start()
            try:
                msg = await asyncio.wait_for(consumer.getone(), timeout=30)
                await consumer.commit()
            finally:
                await consumer.stop()
            return msg.key, msg.value
        finally:
            await admin.delete_topics([topic])
            await admin.close()

    key, value = asyncio.run(scenario())
    assert key == b"tenant-1"
    assert value == payload


@pytest.mark.integration
def test_opensearch_english_analyzer_search(infra_settings: InfraSettings) -> None:
    require("opensearch", infra_settings)
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[{"host": HOST, "port": infra_settings.opensearch_port}], timeout=30)
    index = f"simplemem-test-{uuid.uuid4().hex[:8]}"
    mappings = {
        "properties": {
            "tenant_id": {"type": "keyword"},
            "text": {"type": "text", "analyzer": "english"},
        }
    }
    client.indices.create(
        index=index, body={"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": mappings}
    )
    try:
        docs = [
            ("1", "t1", "Alice was running with her dogs in the park"),
            ("2", "t1", "Bob bought a new laptop"),
            ("3", "t2", "Carol runs every morning with a dog"),
        ]
        for doc_id, tenant, text in docs:
            client.index(index=index, id=doc_id, body={"tenant_id": tenant, "text": text})
        client.indices.refresh(index=index)
        # the english analyzer stems: "runs"/"running" -> "run", "dogs" -> "dog"
        tokens = client.indices.analyze(index=index, body={"field": "text", "text": "running dogs"})["tokens"]
        assert [t["token"] for t in tokens] == ["run", "dog"]
        query = {
            "query": {
                "bool": {
                    "must": {"match": {"text": "run dog"}},
                    "filter": {"term": {"tenant_id": "t1"}},
                }
            }
        }
        hits = client.search(index=index, body=query)["hits"]["hits"]
        assert [h["_id"] for h in hits] == ["1"]
    finally:
        client.indices.delete(index=index)
        client.close()


@pytest.mark.integration
def test_milvus_collection_insert_search(infra_settings: InfraSettings) -> None:
    require("milvus", infra_settings)
    from pymilvus import MilvusClient

    client = MilvusClient(uri=f"http://{HOST}:{infra_settings.milvus_port}", timeout=30)
    name = f"simplemem_test_{uuid.uuid4().hex[:8]}"
    dim = 8
    try:
        client.create_collection(name, dimension=dim, metric_type="COSINE")
        rows = [
            {"id": i, "vector": [1.0 if j == i else 0.0 for j in range(dim)], "tenant": f"t{i % 2}"}
            for i in range(dim)
        ]
        assert client.insert(name, rows)["insert_count"] == dim
        client.flush(name)
        query = [[0.0, 0.0, 0.0, 1.0, 0.1, 0.0, 0.0, 0.0]]
        result = client.search(name, data=query, limit=2, output_fields=["tenant"])
        assert [hit["id"] for hit in result[0]] == [3, 4]
        assert result[0][0]["entity"]["tenant"] == "t1"
        filtered = client.search(name, data=query, limit=2, filter='tenant == "t0"', output_fields=["tenant"])
        assert filtered[0][0]["id"] == 4
    finally:
        if name in client.list_collections():
            client.drop_collection(name)
        client.close()


@pytest.mark.integration
def test_redis_set_get(infra_settings: InfraSettings) -> None:
    require("redis", infra_settings)
    import redis

    client = redis.Redis(host=HOST, port=infra_settings.redis_port, socket_timeout=10)
    key = f"simplemem:test:{uuid.uuid4().hex[:8]}"
    try:
        assert client.set(key, "value-1", ex=60)
        assert client.get(key) == b"value-1"
    finally:
        client.delete(key)
        client.close()


@pytest.mark.integration
def test_status_reports_running_services(infra_settings: InfraSettings) -> None:
    """With SIMPLEMEM_INTEGRATION=1 every service must be up *and* recorded by `up` (its pid file)."""
    if not REQUIRED:
        pytest.skip("only with SIMPLEMEM_INTEGRATION=1")
    rows = services.status(None, infra_settings)
    assert {r.name: r.state for r in rows} == dict.fromkeys(services.SERVICE_NAMES, "running")
    assert all(r.pid is not None for r in rows)


# --------------------------------------------------------------------------------------------------
# the launcher's logic, without services
# --------------------------------------------------------------------------------------------------


def _isolated_env(tmp_path: Path) -> dict[str, str]:
    """Settings pointing at a scratch folder and at ports nothing listens on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMPLEMEM_")}
    env["SIMPLEMEM_INFRA_DIR"] = str(tmp_path / "infra")
    for key in ("KAFKA", "KAFKA_CONTROLLER", "OPENSEARCH", "OPENSEARCH_TRANSPORT", "MILVUS", "REDIS"):
        env[f"SIMPLEMEM_{key}_PORT"] = str(_free_port())
    return env


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def test_status_json_shape_when_stopped(tmp_path: Path) -> None:
    env = _isolated_env(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "infra.services", "status", "--json"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    rows = json.loads(out.stdout)
    assert [r["name"] for r in rows] == list(services.SERVICE_NAMES)
    for row in rows:
        assert set(row) == {"name", "endpoint", "pid", "state"}
        assert row["state"] == "stopped"
        assert row["pid"] is None
        assert HOST in row["endpoint"]
    ports = {r["name"]: r["endpoint"].rsplit(":", 1)[1].split("/")[0] for r in rows}
    assert ports["redis"] == env["SIMPLEMEM_REDIS_PORT"]
    assert ports["kafka"] == env["SIMPLEMEM_KAFKA_PORT"]


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SIMPLEMEM_REDIS_PORT", "16379")
    monkeypatch.setenv("SIMPLEMEM_INFRA_DIR", str(tmp_path))
    monkeypatch.setenv("SIMPLEMEM_INFRA_READY_TIMEOUT", "7")
    monkeypatch.delenv("SIMPLEMEM_KAFKA_PORT", raising=False)
    settings = InfraSettings()
    assert settings.redis_port == 16379
    assert settings.kafka_port == 9092
    assert settings.infra_ready_timeout == 7
    assert settings.service_dir("redis") == tmp_path.resolve() / "redis"


def test_pid_file_unhealthy_then_down(tmp_path: Path) -> None:
    """A recorded live process that does not answer is `unhealthy`; `down` stops its whole group."""
    env = _isolated_env(tmp_path)
    settings = InfraSettings(
        infra_dir=tmp_path / "infra", redis_port=int(env["SIMPLEMEM_REDIS_PORT"]), infra_stop_grace=1.0
    )
    svc = services.Redis(settings)
    # a stand-in for the server: a process group whose leader dies on SIGTERM but leaves a child behind,
    # so `down` must also SIGKILL the rest of the group after the grace period
    launch = services.Launch(["bash", "-c", "sleep 300 & wait"], tmp_path)
    svc.root.mkdir(parents=True)
    pid = svc.spawn(launch)
    try:
        record = json.loads(svc.pid_file.read_text())
        assert record["pid"] == pid
        assert svc.running_pid() == pid
        [row] = services.status(["redis"], settings)
        assert (row.state, row.pid) == ("unhealthy", pid)
        deadline = time.monotonic() + 5
        while len(services._group_members(pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(services._group_members(pid)) == 2
        [row] = services.down(["redis"], settings)
        assert (row.state, row.pid) == ("stopped", None)
        assert not svc.pid_file.exists()
        assert services._group_members(pid) == []
    finally:
        services._terminate(pid, 1.0)


def test_stale_or_reused_pid_is_not_ours(tmp_path: Path) -> None:
    settings = InfraSettings(infra_dir=tmp_path / "infra")
    svc = services.Redis(settings)
    svc.root.mkdir(parents=True)
    # a dead pid
    proc = subprocess.Popen(["true"])
    proc.wait()
    svc.pid_file.write_text(json.dumps({"pid": proc.pid, "start": 1}))
    assert svc.running_pid() is None
    # a live pid whose start time differs from the recorded one: a reused pid, not ours
    svc.pid_file.write_text(json.dumps({"pid": os.getpid(), "start": 1}))
    assert svc.running_pid() is None
    [row] = services.status(["redis"], settings)
    assert row.state == "stopped"
    services.down(["redis"], settings)  # must not signal this test process
    assert not svc.pid_file.exists()


def test_kafka_metadata_request_against_fake_broker() -> None:
    """The readiness probe parses a real Metadata v4 response (served here by a tiny fake broker)."""
    import socket
    import struct
    import threading

    def kstr(text: str | None) -> bytes:
        if text is None:
            return struct.pack(">h", -1)
        return struct.pack(">h", len(text)) + text.encode()

    server = socket.socket()
    server.bind((HOST, 0))
    server.listen(1)
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            (size,) = struct.unpack(">i", conn.recv(4))
            request = b""
            while len(request) < size:
                request += conn.recv(size - len(request))
            api_key, version, correlation = struct.unpack_from(">hhi", request)
            assert (api_key, version) == (3, 4)
            body = struct.pack(">iii", correlation, 0, 1) + struct.pack(">i", 1) + kstr(HOST)
            body += struct.pack(">i", port) + kstr(None) + kstr("cluster-x") + struct.pack(">i", 1)
            body += struct.pack(">i", 0)  # no topics
            conn.sendall(struct.pack(">i", len(body)) + body)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    brokers, cluster, controller = services.kafka_metadata(port, timeout=5)
    thread.join(5)
    server.close()
    assert brokers == [(1, HOST, port)]
    assert (cluster, controller) == ("cluster-x", 1)
