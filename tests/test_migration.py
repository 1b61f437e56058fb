"""Lazy migration: the first query of a tenant with a legacy file starts one import, and says so."""

from __future__ import annotations

import threading
from pathlib import Path

import orjson

from processors.migration import FileMigrationRegistry, LazyMigration, MigrationState


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

    migration = LazyMigration(legacy(tmp_path, "acme"), FileMigrationRegistry(tmp_path / "reg"), sink)
    assert migration.ensure("acme") == MigrationState.IN_PROGRESS
    assert migration.ensure("acme") == MigrationState.IN_PROGRESS, "still running: no second import"
    release.set()
    migration.wait(5)
    assert calls == [3]
    assert migration.ensure("acme") == MigrationState.IMPORTED


def test_no_legacy_file_means_no_migration(tmp_path: Path) -> None:
    migration = LazyMigration(
        legacy(tmp_path, "acme"), FileMigrationRegistry(tmp_path / "reg"), lambda lines: 0
    )
    assert migration.ensure("other") is None
    assert migration.ensure("../acme") is None, "a tenant id is never a path"


def test_a_claim_is_taken_once_across_processes_sharing_the_registry(tmp_path: Path) -> None:
    a, b = FileMigrationRegistry(tmp_path / "reg"), FileMigrationRegistry(tmp_path / "reg")
    assert a.claim("acme") is True
    assert b.claim("acme") is False
    assert b.state("acme") == MigrationState.IN_PROGRESS


def test_a_failed_import_is_recorded_with_its_reason(tmp_path: Path) -> None:
    def sink(lines: list[bytes]) -> int:
        raise ConnectionError("kafka down")

    registry = FileMigrationRegistry(tmp_path / "reg")
    migration = LazyMigration(legacy(tmp_path, "acme"), registry, sink)
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
    migration = LazyMigration(folder, registry, sink)
    for tenant in (str(outside / "secret"), "linked", "acme\n", "acme/../../outside/secret"):
        assert migration.ensure(tenant) is None, tenant
    migration.wait(5)
    assert imported == []
    assert migration.ensure("acme") == MigrationState.IN_PROGRESS, "a tenant id inside still migrates"
    migration.wait(5)
    assert imported == [3]
