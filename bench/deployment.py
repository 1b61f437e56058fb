"""A services-mode deployment for a bench: one worker and one `simplemem serve` on the local
services (`simplemem infra up`), in a namespace of their own (topics, index, collection, Redis
prefix) that is dropped at the end."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simplemem.schemas.settings import Settings, settings_for
from simplemem.streams.topics import ensure_topics
from tests.helpers.cleanup import drop_namespace
from tests.helpers.serving import ServeProcess
from tests.helpers.workers import WorkerProcess


def namespace_env(tag: str, data_dir: Path) -> dict[str, str]:
    """Services mode under names of its own, with the default pause and idle settings."""
    tag = f"{tag}{uuid.uuid4().hex[:8]}"
    return {
        "SIMPLEMEM_MODE": "services",
        "SIMPLEMEM_TOPIC_PREFIX": f"{tag}.",
        "SIMPLEMEM_STREAM_APP_ID": tag,
        "SIMPLEMEM_OPENSEARCH_INDEX": f"simplemem-{tag}",
        "SIMPLEMEM_MILVUS_COLLECTION": tag,
        "SIMPLEMEM_REDIS_KEY_PREFIX": tag,
        "SIMPLEMEM_STREAM_DATA_DIR": str(data_dir / "faust"),
    }


@contextmanager
def local_deployment(tag: str, data_dir: Path, admin_key: str) -> Iterator[tuple[Settings, str]]:
    """(settings, the service's URL), both processes ready; stopped and their data dropped after."""
    env = namespace_env(tag, data_dir)
    settings = settings_for(env)
    asyncio.run(ensure_topics(settings))
    worker = WorkerProcess(env, data_dir / "worker.log").start()
    serve = ServeProcess({**env, "SIMPLEMEM_ADMIN_KEY": admin_key}, data_dir / "serve.log").start()
    try:
        worker.wait_ready()
        serve.wait_ready()
        yield settings, serve.url
    finally:
        serve.stop()
        worker.stop()
        drop_namespace(settings)
