"""The real services for integration tests: reachability (fail in CI, skip elsewhere) and cleanup."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from simplemem.schemas.settings import Settings, settings_for
from tests.helpers.workers import WorkerProcess


def unreachable(settings: Settings, kafka: bool = False) -> str | None:
    import redis
    from opensearchpy import OpenSearch
    from pymilvus import MilvusClient

    try:
        OpenSearch(hosts=[settings.opensearch_endpoint], timeout=3).cluster.health()
        MilvusClient(settings.milvus_server_uri, timeout=3).list_collections()
        redis.Redis.from_url(settings.redis_endpoint, socket_timeout=3).ping()
        if kafka:
            from simplemem.infra.stack import kafka_metadata

            kafka_metadata(int(settings.kafka_endpoint.rsplit(":", 1)[1]), 3)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def require(settings: Settings, kafka: bool = False) -> None:
    """Skip without the services, unless SIMPLEMEM_INTEGRATION=1 (CI): then fail."""
    problem = unreachable(settings, kafka)
    if problem:
        if os.environ.get("SIMPLEMEM_INTEGRATION") == "1":
            pytest.fail(f"services not reachable: {problem}")
        pytest.skip(f"services not reachable: {problem}")


def drop_stores(settings: Settings) -> None:
    """Delete what a test wrote: its OpenSearch index, Milvus collection and Redis keys."""
    from tests.helpers.cleanup import drop_namespace

    drop_namespace(settings)


@contextmanager
def store_settings(name: str, **extra: object) -> Iterator[Settings]:
    """Services-mode settings with an index, collection and Redis prefix of this module's own,
    dropped afterwards; skips (or fails, under SIMPLEMEM_REQUIRE_SERVICES) when a store is down."""
    suffix = uuid.uuid4().hex[:8]
    settings = Settings(
        mode="services",
        opensearch_index=f"simplemem-{name}-{suffix}",
        milvus_collection=f"simplemem_{name}_{suffix}",
        redis_key_prefix=f"simplemem-{name}-{suffix}",
        **extra,  # type: ignore[arg-type]
    )
    require(settings)
    try:
        yield settings
    finally:
        drop_stores(settings)


def stream_env(name: str, data_dir: Path, partitions: int, idle_seconds: int, **extra: str) -> dict[str, str]:
    """A services-mode environment of its own for one test module: topics, consumer group, index,
    collection and Redis prefix named after ``name`` and a random suffix, so modules never share state."""
    suffix = uuid.uuid4().hex[:8]
    return {
        "SIMPLEMEM_MODE": "services",
        "SIMPLEMEM_TOPIC_PREFIX": f"{name}{suffix}.",
        "SIMPLEMEM_STREAM_APP_ID": f"{name}{suffix}",
        "SIMPLEMEM_TOPIC_PARTITIONS": str(partitions),
        "SIMPLEMEM_OPENSEARCH_INDEX": f"simplemem-{name}-{suffix}",
        "SIMPLEMEM_MILVUS_COLLECTION": f"simplemem_{name}_{suffix}",
        "SIMPLEMEM_REDIS_KEY_PREFIX": f"simplemem-{name}-{suffix}",
        "SIMPLEMEM_IDLE_CHECK_SECONDS": "1",
        "SIMPLEMEM_STREAM_IDLE_SECONDS": str(idle_seconds),
        "SIMPLEMEM_STREAM_DATA_DIR": str(data_dir),
        **extra,
    }


def drop_stream_env(settings: Settings) -> None:
    """Delete what a stream test module wrote: its stores and its topics (group internals included)."""
    drop_stores(settings)
    asyncio.run(delete_topics(settings))


async def delete_topics(settings: Settings) -> None:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
    await admin.start()
    try:
        prefixes = (settings.topic_prefix, settings.stream_app_id)
        mine = [t for t in await admin.list_topics() if t.startswith(prefixes)]
        if mine:
            await admin.delete_topics(mine)
    finally:
        await admin.close()


def running_worker(env: dict[str, str], log_dir: Path) -> Iterator[WorkerProcess]:
    """A stream worker (``bin/simplemem worker``) on the module's topics, made first, until the end."""
    from simplemem.streams.topics import ensure_topics

    asyncio.run(ensure_topics(settings_for(env)))
    worker = WorkerProcess(env, log_dir / "worker.log").start()
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()
