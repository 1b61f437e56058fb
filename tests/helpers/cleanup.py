"""Remove everything a deployment namespace wrote to the service stores (tests and benchmarks use
their own index, collection and Redis prefix, and drop them at the end)."""

from __future__ import annotations

from simplemem.schemas.settings import Settings


def drop_namespace(settings: Settings) -> None:
    """Delete the OpenSearch indexes (units, contexts), the Milvus collection and the Redis keys named by ``settings``."""
    import redis
    from opensearchpy import OpenSearch
    from pymilvus import MilvusClient

    client = OpenSearch(hosts=[settings.opensearch_endpoint])
    for index in (settings.opensearch_index, f"{settings.opensearch_index}-contexts"):
        client.indices.delete(index=index, ignore=[404])
    MilvusClient(settings.milvus_server_uri).drop_collection(settings.milvus_collection)
    r = redis.Redis.from_url(settings.redis_endpoint)
    for key in r.scan_iter(f"{settings.redis_key_prefix}:*"):
        r.delete(key)
