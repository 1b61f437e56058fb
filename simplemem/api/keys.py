"""Per-tenant API keys, stored as SHA-256 hashes of high-entropy secrets (never the secret itself).

A key reads ``smk_<key id>_<secret>``: the id finds the record, the secret is compared by hash in
constant time. The secret has 256 random bits, so a plain hash is as good as a slow one: nobody can
guess their way back to it. Embedded mode keeps the records in ``<store>/api_keys.sqlite`` (the CLI
may add keys while the server runs); services mode in Redis, shared by every service replica.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from simplemem.processors.stores.private import private_file
from simplemem.processors.stores.redis_keys import RedisKeys
from simplemem.schemas.api import ApiKeyRecord
from simplemem.schemas.settings import Settings

if TYPE_CHECKING:
    import redis

KEY_PREFIX = "smk"
KEY_ID_BYTES = 8  # 16 hex digits: unique among a deployment's keys
SECRET_BYTES = 32
KEYS_FILE = "api_keys.sqlite"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_key(tenant_id: str) -> tuple[str, ApiKeyRecord]:
    """A fresh key (shown once) and the record that is stored for it."""
    key_id = secrets.token_hex(KEY_ID_BYTES)
    secret = secrets.token_urlsafe(SECRET_BYTES)
    record = ApiKeyRecord(
        key_id=key_id, tenant_id=tenant_id, secret_sha256=_digest(secret), created_at=datetime.now(UTC)
    )
    return f"{KEY_PREFIX}_{key_id}_{secret}", record


def split_key(key: str) -> tuple[str, str] | None:
    """(key id, secret) of a well-formed key, else None."""
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


class KeyStore(Protocol):
    def add(self, record: ApiKeyRecord) -> None: ...

    def get(self, key_id: str) -> ApiKeyRecord | None: ...

    def list(self, tenant_id: str | None = None) -> list[ApiKeyRecord]: ...

    def revoke(self, key_id: str) -> bool: ...

    def close(self) -> None: ...


def authenticate(store: KeyStore, key: str) -> ApiKeyRecord | None:
    """The live record of ``key``, or None (unknown, malformed, revoked or wrong secret)."""
    parts = split_key(key)
    if parts is None:
        return None
    record = store.get(parts[0])
    if record is None or record.revoked:
        return None
    if not hmac.compare_digest(record.secret_sha256, _digest(parts[1])):
        return None
    return record


class SqliteKeyStore:
    """Embedded mode: a small SQLite file beside the store (not under its lock: the CLI adds keys to a
    store that a running server holds)."""

    def __init__(self, path: Path) -> None:
        private_file(path)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS api_keys (key_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, doc TEXT NOT NULL)"
        )
        self._lock = threading.Lock()

    def add(self, record: ApiKeyRecord) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO api_keys VALUES (?, ?, ?)",
                (record.key_id, record.tenant_id, record.model_dump_json()),
            )

    def get(self, key_id: str) -> ApiKeyRecord | None:
        with self._lock:
            row = self._db.execute("SELECT doc FROM api_keys WHERE key_id=?", (key_id,)).fetchone()
        return None if row is None else ApiKeyRecord.model_validate_json(row[0])

    def list(self, tenant_id: str | None = None) -> list[ApiKeyRecord]:
        with self._lock:
            if tenant_id is None:
                rows = self._db.execute("SELECT doc FROM api_keys ORDER BY key_id").fetchall()
            else:
                rows = self._db.execute(
                    "SELECT doc FROM api_keys WHERE tenant_id=? ORDER BY key_id", (tenant_id,)
                ).fetchall()
        return [ApiKeyRecord.model_validate_json(r[0]) for r in rows]

    def revoke(self, key_id: str) -> bool:
        record = self.get(key_id)
        if record is None:
            return False
        record.revoked = True
        with self._lock:
            self._db.execute("UPDATE api_keys SET doc=? WHERE key_id=?", (record.model_dump_json(), key_id))
        return True

    def close(self) -> None:
        with self._lock:
            self._db.close()


class RedisKeyStore:
    """Services mode: one hash of records in Redis, which every replica reads (no local state)."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self._r = client
        self._keys = RedisKeys(prefix)
        self._records = self._keys.api_keys()

    def _by_tenant(self, tenant_id: str) -> bytes:
        return self._keys.api_keys_of(tenant_id)

    def add(self, record: ApiKeyRecord) -> None:
        pipe = self._r.pipeline()
        pipe.hset(self._records, record.key_id, record.model_dump_json())
        pipe.sadd(self._by_tenant(record.tenant_id), record.key_id)
        pipe.execute()

    def get(self, key_id: str) -> ApiKeyRecord | None:
        raw = self._r.hget(self._records, key_id)
        return None if raw is None else ApiKeyRecord.model_validate_json(raw)

    def list(self, tenant_id: str | None = None) -> list[ApiKeyRecord]:
        if tenant_id is None:
            raws = list(self._r.hgetall(self._records).values())
        else:
            ids = sorted(_text(m) for m in self._r.smembers(self._by_tenant(tenant_id)))
            raws = [r for r in self._r.hmget(self._records, ids) if r is not None] if ids else []
        return sorted((ApiKeyRecord.model_validate_json(r) for r in raws), key=lambda k: k.key_id)

    def revoke(self, key_id: str) -> bool:
        record = self.get(key_id)
        if record is None:
            return False
        record.revoked = True
        self._r.hset(self._records, key_id, record.model_dump_json())
        return True

    def close(self) -> None:
        self._r.close()


def open_key_store(settings: Settings, store_dir: Path) -> KeyStore:
    """The key store of the configured mode."""
    if settings.mode == "services":
        import redis

        return RedisKeyStore(redis.Redis.from_url(settings.redis_endpoint), settings.redis_key_prefix)
    return SqliteKeyStore(store_dir / KEYS_FILE)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
