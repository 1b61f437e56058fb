"""Redis keys keep the formats data is stored under, and no two tenants or kinds share one."""

from __future__ import annotations

from simplemem.processors.lifecycle.migration import MigrationState, RedisMigrationRegistry
from simplemem.processors.stores.redis_keys import RedisKeys, quota_identifier


def test_the_stored_formats_are_unchanged() -> None:
    k = RedisKeys("pfx")
    assert k.buffer_turns("a:b", "c|d") == b'pfx:buf:["a:b","c|d"]:turns'
    assert k.buffer_order("a:b", "c|d") == b'pfx:buf:["a:b","c|d"]:order'
    assert k.buffer_sessions("a:b") == b'pfx:buf-sessions:["a:b"]'
    assert k.forgotten_tenants() == b"pfx:forgotten-tenants"
    assert k.forgotten_messages("a:b") == b'pfx:forgotten-messages:["a:b"]'
    assert k.deletion_records("a:b") == b'pfx:forgotten-records:["a:b"]'
    assert k.migration("a:b") == b"pfx:migration:a:b"
    assert k.feedback() == b"pfx:feedback"
    assert k.api_keys() == b"pfx:api_keys"
    assert k.api_keys_of("Zoë") == 'pfx:api_keys_of:["Zoë"]'.encode()
    assert k.mem0_scopes("a:b") == b'pfx:mem0_scopes:["a:b"]'
    assert k.quota_prefix() == "pfx:quota" and quota_identifier("a:b") == '["a:b"]'


class DictRedis:
    """GET and SET, all the registry's state and finish use."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}

    def get(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def set(self, key: bytes, value: str) -> None:
        self.data[key] = value.encode()


def test_a_finished_migrations_detail_is_not_another_tenants_state() -> None:
    """Once ``migration:<tenant>:detail``: tenant ``acme``'s detail was the state of ``acme:detail``."""
    registry = RedisMigrationRegistry("redis://localhost:1", "pfx")  # connects on first use only
    registry.redis = DictRedis()  # type: ignore[assignment]
    registry.finish("acme", MigrationState.IMPORTED, "3 events from acme.jsonl")
    assert registry.state("acme") == MigrationState.IMPORTED
    assert registry.state("acme:detail") is None
    registry.redis.data[b"pfx:migration:old:detail"] = b"2 events from old.jsonl"  # type: ignore[attr-defined]
    assert registry.state("old:detail") is None, "a detail key of the old format is no state"
