"""Lazy migration: the first query of a tenant with a legacy file starts one import, and says so."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from simplemem.processors.lifecycle.migration import (
    FileMigrationRegistry,
    LazyMigration,
    MigrationRegistry,
    MigrationState,
    RedisMigrationRegistry,
)
from simplemem.schemas.settings import Settings
from tests.services import require

LEASE = 60.0


def legacy(tmp_path: Path, tenant: str, n: int = 3) -> Path:
    folder = tmp_path / "legacy"
    folder.mkdir(exist_ok=True)
    lines = [orjson.dumps({"tenant_id": tenant, "message_id": f"m{i}"}) for i in range(n)]
    (folder / f"{tenant}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return folder


def test_first_query_starts_one_import_and_later_ones_see_it_done(tmp_path: Path) -> None:
    release = threading.Event()
    calls: list[int] = []

    def sink(lines: list[bytes]) -> int:
        release.wait(5)
        calls.append(len(lines))
        return len(lines)

    migration = LazyMigration(legacy(tmp_path, "acme"), FileMigrationRegistry(tmp_path / "reg"), sink, LEASE)
    assert migration.ensure("acme") == MigrationState.IN_PROGRESS
    assert migration.ensure("acme") == MigrationState.IN_PROGRESS, "still running: no second import"
    release.set()
    migration.wait(5)
    assert calls == [3]
    assert migration.ensure("acme") == MigrationState.IMPORTED


def test_no_legacy_file_means_no_migration(tmp_path: Path) -> None:
    migration = LazyMigration(
        legacy(tmp_path, "acme"), FileMigrationRegistry(tmp_path / "reg"), lambda lines: 0, LEASE
    )
    assert migration.ensure("other") is None
    assert migration.ensure("../acme") is None, "a tenant id is never a path"


def test_a_claim_is_taken_once_across_processes_sharing_the_registry(tmp_path: Path) -> None:
    a, b = FileMigrationRegistry(tmp_path / "reg"), FileMigrationRegistry(tmp_path / "reg")
    assert a.claim("acme", LEASE) is True
    assert b.claim("acme", LEASE) is False
    assert b.state("acme") == MigrationState.IN_PROGRESS


def test_a_failed_import_is_recorded_with_its_reason(tmp_path: Path) -> None:
    def sink(lines: list[bytes]) -> int:
        raise ConnectionError("kafka down")

    registry = FileMigrationRegistry(tmp_path / "reg")
    migration = LazyMigration(legacy(tmp_path, "acme"), registry, sink, LEASE)
    migration.ensure("acme")
    migration.wait(5)
    assert registry.state("acme") == MigrationState.FAILED
    assert b"kafka down" in (tmp_path / "reg" / "acme.json").read_bytes()


def test_a_tenant_id_never_reaches_outside_the_legacy_folder(tmp_path: Path) -> None:
    """An absolute path as tenant id read ``<path>.jsonl`` (and its record ``<path>.json``) before the id
    was checked; a link inside the folder that leads out of it is not followed either."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_bytes(orjson.dumps({"tenant_id": "secret"}) + b"\n")
    (outside / "secret.json").write_bytes(orjson.dumps({"state": MigrationState.IMPORTED}))
    folder = legacy(tmp_path, "acme")
    (folder / "linked.jsonl").symlink_to(outside / "secret.jsonl")
    imported: list[int] = []

    def sink(lines: list[bytes]) -> int:
        imported.append(len(lines))
        return len(lines)

    registry = FileMigrationRegistry(tmp_path / "reg")
    migration = LazyMigration(folder, registry, sink, LEASE)
    for tenant in (str(outside / "secret"), "linked", "acme\n", "acme/../../outside/secret"):
        assert migration.ensure(tenant) is None, tenant
    migration.wait(5)
    assert imported == []
    assert migration.ensure("acme") == MigrationState.IN_PROGRESS, "a tenant id inside still migrates"
    migration.wait(5)
    assert imported == [3]


def counting_sink(calls: list[int], hold: float = 0.0) -> Callable[[list[bytes]], int]:
    def sink(lines: list[bytes]) -> int:
        time.sleep(hold)
        calls.append(len(lines))
        return len(lines)

    return sink


@pytest.fixture(params=["file", "redis"])
def registry(
    request: pytest.FixtureRequest, tmp_path: Path, settings: Settings
) -> Iterator[MigrationRegistry]:
    """Each registry: the embedded one (files) and the services one (the real Redis)."""
    if request.param == "file":
        yield FileMigrationRegistry(tmp_path / "reg")
        return
    require(settings)
    redis_registry = RedisMigrationRegistry(settings.redis_endpoint, f"test-migration-{uuid.uuid4().hex[:8]}")
    yield redis_registry
    keys = list(redis_registry.redis.scan_iter(f"{redis_registry.prefix}:*"))
    if keys:
        redis_registry.redis.delete(*keys)


def test_an_import_that_died_half_way_is_taken_again_after_its_lease(
    tmp_path: Path, registry: MigrationRegistry
) -> None:
    """The importing process died after its claim (no finish): once the lease lapses, the next query
    claims the tenant again and imports, instead of reporting "in progress" forever."""
    assert registry.claim("acme", 0.5), "the claim of the process that then dies"
    calls: list[int] = []
    migration = LazyMigration(legacy(tmp_path, "acme"), registry, counting_sink(calls), 0.5)
    assert migration.ensure("acme") == MigrationState.IN_PROGRESS
    migration.wait(5)
    assert calls == [], "the lease still held: nobody else imports"
    time.sleep(0.8)
    assert migration.ensure("acme") == MigrationState.IN_PROGRESS
    migration.wait(5)
    assert calls == [3]
    assert registry.state("acme") == MigrationState.IMPORTED


def test_a_running_import_keeps_its_claim_past_the_lease(tmp_path: Path, registry: MigrationRegistry) -> None:
    """An import that takes longer than one lease renews it: a second process's query meanwhile sees
    it in progress and does not start a second import."""
    folder = legacy(tmp_path, "acme")
    first_calls: list[int] = []
    second_calls: list[int] = []
    first = LazyMigration(folder, registry, counting_sink(first_calls, hold=2.0), 0.6)
    second = LazyMigration(folder, registry, counting_sink(second_calls), 0.6)
    assert first.ensure("acme") == MigrationState.IN_PROGRESS
    time.sleep(1.5)
    assert second.ensure("acme") == MigrationState.IN_PROGRESS
    first.wait(10)
    second.wait(10)
    assert first_calls == [3] and second_calls == []
    assert registry.state("acme") == MigrationState.IMPORTED
