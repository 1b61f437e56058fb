"""mem0's scopes (``user_id``, ``agent_id``, ``run_id``, ``app_id``) as sessions inside the key's tenant.

A scope is kept as its three fields, never joined into one string: the session id is the SHA-256 of
the scope's JSON array (an id every store accepts), and the directory maps it back to the fields, so
a search for one ``user_id`` finds the sessions of every agent and run of that user. Embedded mode
keeps the directory in the keys' SQLite file, services mode in Redis (shared by the replicas).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import orjson
from pydantic import BaseModel

from simplemem.api.keys import KEYS_FILE
from simplemem.processors.stores.private import private_file
from simplemem.processors.stores.redis_keys import RedisKeys
from simplemem.schemas.settings import Settings

if TYPE_CHECKING:
    import redis

SESSION_PREFIX = "mem0-"
SCOPE_FIELDS = ("user_id", "agent_id", "run_id", "app_id")


class Scope(BaseModel):
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    app_id: str | None = None

    def session_id(self) -> str:
        fields: list[str | None] = [self.user_id, self.agent_id, self.run_id]
        if self.app_id is not None:  # a scope without an app keeps the session it had before apps
            fields.append(self.app_id)
        return SESSION_PREFIX + hashlib.sha256(orjson.dumps(fields)).hexdigest()[:32]

    def matches(self, wanted: Scope) -> bool:
        """Whether this scope lies within ``wanted`` (its unset fields match anything)."""
        return all(getattr(wanted, f) in (None, getattr(self, f)) for f in SCOPE_FIELDS)

    @property
    def empty(self) -> bool:
        return all(getattr(self, f) is None for f in SCOPE_FIELDS)


class SessionDirectory(Protocol):
    def record(self, tenant_id: str, scope: Scope) -> str: ...

    def sessions(self, tenant_id: str, wanted: Scope) -> dict[str, Scope]: ...


class SqliteDirectory:
    def __init__(self, path: Path) -> None:
        private_file(path)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS mem0_scopes (tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, "
            "scope TEXT NOT NULL, PRIMARY KEY (tenant_id, session_id))"
        )
        self._lock = threading.Lock()

    def record(self, tenant_id: str, scope: Scope) -> str:
        sid = scope.session_id()
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO mem0_scopes VALUES (?, ?, ?)",
                (tenant_id, sid, scope.model_dump_json()),
            )
        return sid

    def sessions(self, tenant_id: str, wanted: Scope) -> dict[str, Scope]:
        with self._lock:
            rows = self._db.execute(
                "SELECT session_id, scope FROM mem0_scopes WHERE tenant_id=?", (tenant_id,)
            ).fetchall()
        found = {sid: Scope.model_validate_json(raw) for sid, raw in rows}
        return {sid: s for sid, s in found.items() if s.matches(wanted)}


class RedisDirectory:
    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self._r = client
        self._keys = RedisKeys(prefix)

    def _key(self, tenant_id: str) -> bytes:
        return self._keys.mem0_scopes(tenant_id)

    def record(self, tenant_id: str, scope: Scope) -> str:
        sid = scope.session_id()
        self._r.hsetnx(self._key(tenant_id), sid, scope.model_dump_json())
        return sid

    def sessions(self, tenant_id: str, wanted: Scope) -> dict[str, Scope]:
        raw: dict[bytes, bytes] = self._r.hgetall(self._key(tenant_id))  # type: ignore[assignment]
        found = {k.decode(): Scope.model_validate_json(v) for k, v in raw.items()}
        return {sid: s for sid, s in found.items() if s.matches(wanted)}


def open_directory(settings: Settings, store_dir: Path) -> SessionDirectory:
    if settings.mode == "services":
        import redis

        return RedisDirectory(redis.Redis.from_url(settings.redis_endpoint), settings.redis_key_prefix)
    return SqliteDirectory(store_dir / KEYS_FILE)
