"""The real services for integration tests: reachability (fail in CI, skip elsewhere) and cleanup."""

from __future__ import annotations

import os

import pytest

from schemas.settings import Settings


def unreachable(settings: Settings, kafka: bool = False) -> str | None:
    import redis
    from opensearchpy import OpenSearch
    from pymilvus import MilvusClient

    try:
        OpenSearch(hosts=[settings.opensearch_endpoint], timeout=3).cluster.health()
        MilvusClient(settings.milvus_server_uri, timeout=3).list_collections()
        redis.Redis.from_url(settings.redis_endpoint, socket_timeout=3).ping()
        if kafka:
            from infra.services import kafka_metadata

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
    from processors.stores.cleanup import drop_namespace

    drop_namespace(settings)
