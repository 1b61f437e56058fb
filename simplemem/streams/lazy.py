"""Wires lazy migration to the deployment: services publish the legacy history to the turns topic
(the workers derive the memory), embedded mode ingests it into the local store."""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AbstractContextManager

from simplemem.processors.lifecycle.migration import (
    FileMigrationRegistry,
    LazyMigration,
    MigrationRegistry,
    RedisMigrationRegistry,
)
from simplemem.runtime import Runtime


def lazy_migration(rt: Runtime, lock: AbstractContextManager[object] | None = None) -> LazyMigration | None:
    """``lock``: held around the embedded import, when the process has other users of the pipeline
    (the query service's requests)."""
    s = rt.settings
    guard = lock if lock is not None else contextlib.nullcontext()
    if s.legacy_history_dir is None:
        return None
    registry: MigrationRegistry
    if s.mode == "services":
        from simplemem.streams.kafka_io import publish

        registry = RedisMigrationRegistry(s.redis_endpoint, s.redis_key_prefix)

        def sink(lines: list[bytes]) -> int:
            return asyncio.run(publish(s, lines)).published

    else:
        registry = FileMigrationRegistry(rt.store_dir / "migrations")

        def sink(lines: list[bytes]) -> int:
            with guard:
                report = rt.pipeline.ingest((f"legacy line {i}", raw) for i, raw in enumerate(lines, start=1))
            return report.accepted

    return LazyMigration(s.legacy_history_dir, registry, sink, s.migration_lease_seconds)
